"""The reports of real benchmark runs: the plugin in subprocesses (CPU mode), as people run it.

One run with two xdist workers writes every report (results file, Allure, W&B offline); two
more run its shards; one more replays recorded answers of a model, one of them broken, so
that a failure goes through the reports too. Every test here reads those runs.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest
from filelock import FileLock

from kernelgen.cli import main
from kernelgen.model.generation import GenerationCache, make_record, task_request
from kernelgen.lang.parse import kernel_to_json
from kernelgen.model.providers.base import Completion, Sampling
from kernelgen.report.allure import categories, parse_properties
from kernelgen.report.merge import merge_results
from kernelgen.report.store import load_artifacts, read_run
from kernelgen.report.wandb_run import TABLE_COLUMNS
from kernelgen.task.spec import get_task

REPO = Path(__file__).resolve().parents[1]
SELECTION = ["bench/easy", "-k", "relu or silu"]
TASKS = {"relu", "silu", "leaky_relu", "bias_relu"}
ATTACHMENTS = {"prompt", "answer (the model's raw text)", "AST", "TTIR", "PTX", "timings"}
TIMEOUT_S = 600


@dataclass
class Runs:
    folder: Path
    results: Path
    alluredir: Path
    wandb_dir: Path  # WANDB_DIR: W&B writes its runs under wandb/ in it
    shards: list[Path]
    replayed: Path
    replayed_allure: Path
    output: str


def _environment(folder: Path) -> dict[str, str]:
    """The runs' environment: W&B kept in ``folder`` and offline, no trace of the outer pytest."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTEST_", "WANDB_")) and key != "CUDA_VISIBLE_DEVICES"}
    for name in ("DIR", "CACHE_DIR", "CONFIG_DIR", "DATA_DIR"):
        env[f"WANDB_{name}"] = str(folder / "wandb-home" if name != "DIR" else folder)
    return env


BROKEN_ANSWER = '{"name": "relu", "inputs": [{"name": "x"'  # cut off mid-object: a schema error


def record_answers(directory: Path) -> None:
    """Recorded answers of a model for relu (broken) and silu (its golden AST), as the harness
    asks for them with its default sampling."""
    cache = GenerationCache(directory)
    for task_id, text in (("relu", BROKEN_ANSWER), ("silu", kernel_to_json(get_task("silu").golden))):
        request = task_request(get_task(task_id), Sampling(temperature=0.0, max_tokens=4096, seed=0), 0)
        cache.store(make_record(request, Completion(text=text, provider="recorded", model="some-model",
                                                    latency_s=1.5, tokens_in=900, tokens_out=40,
                                                    token_source="server", constrained="response_format")))


def make_runs(folder: Path) -> None:
    """The four runs, side by side; each one's output in ``folder/NAME.out``."""
    env = _environment(folder)
    pytest_run = [sys.executable, "-m", "pytest", *SELECTION, "-p", "no:cacheprovider", "-q"]
    record_answers(folder / "recorded")
    commands = {
        "main": [*pytest_run, "-n", "2", "--alluredir", str(folder / "allure"), "--wandb", "offline",
                 "--kg-results", str(folder / "run.jsonl")],
        **{f"shard{i}": [*pytest_run, "--shard", f"{i}/2", "--wandb", "off", "--kg-results",
                         str(folder / f"shard{i}.jsonl")] for i in (1, 2)},
        "replayed": [sys.executable, "-m", "pytest", "bench/easy/test_easy.py::test_pipeline[relu]",
                     "bench/easy/test_easy.py::test_pipeline[silu]", "-p", "no:cacheprovider", "-q",
                     f"--llm=replay:{folder / 'recorded'}", "--wandb", "off",
                     "--kg-results", str(folder / "replayed.jsonl"), "--alluredir", str(folder / "replayed-allure")],
    }
    processes = {name: subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True) for name, command in commands.items()}
    for name, process in processes.items():
        output = process.communicate(timeout=TIMEOUT_S)[0]
        (folder / f"{name}.out").write_text(output)
        expected = pytest.ExitCode.TESTS_FAILED if name == "replayed" else pytest.ExitCode.OK
        assert process.returncode == expected, output


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """The runs, made once per session: under xdist the first worker to get here makes them in
    the session's shared temporary folder and the others wait for it (a file lock)."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        folder = tmp_path_factory.mktemp("runs")
        make_runs(folder)
    else:
        folder = tmp_path_factory.getbasetemp().parent / "report-runs"
        with FileLock(f"{folder}.lock"):
            if not (folder / "done").exists():
                shutil.rmtree(folder, ignore_errors=True)  # an earlier worker's attempt that failed
                folder.mkdir()
                make_runs(folder)
                (folder / "done").touch()
    return Runs(folder, folder / "run.jsonl", folder / "allure", folder,
                [folder / "shard1.jsonl", folder / "shard2.jsonl"], folder / "replayed.jsonl",
                folder / "replayed-allure", (folder / "main.out").read_text())


def test_the_controller_writes_each_case_once_with_its_artifacts(runs: Runs) -> None:
    cases = read_run(runs.results)
    assert sorted(c.task for c in cases) == sorted(TASKS)
    assert {(c.outcome.value, c.mode, c.provider, c.model) for c in cases} == {("ok", "cpu", "reference", "golden")}
    for c in cases:
        artifacts = load_artifacts(runs.results, c)
        assert set(artifacts) >= {"prompt", "answer", "ast", "ttir", "ptx"}
        assert json.loads(artifacts["ast"]) == json.loads(artifacts["answer"])  # the golden AST, re-printed
        assert ".entry" in artifacts["ptx"] and "tt.func" in artifacts["ttir"]
    assert f"results: {runs.results} (4 cases)" in runs.output
    assert "4 passed" in runs.output


def test_merged_shards_equal_the_unsharded_run(runs: Runs, tmp_path: Path) -> None:
    shard_tasks = [{c.task for c in read_run(shard)} for shard in runs.shards]
    assert all(shard_tasks) and shard_tasks[0].isdisjoint(shard_tasks[1])
    merged = merge_results(runs.shards, tmp_path / "merged.jsonl")
    whole = {c.task: c for c in read_run(runs.results)}
    assert sorted(c.task for c in merged) == sorted(whole)
    same = {"outcome", "stage", "diagnostics", "sizes_checked", "target", "mode", "artifact_files", "sample"}
    for c in merged:
        assert c.model_dump(include=same) == whole[c.task].model_dump(include=same)
        assert load_artifacts(tmp_path / "merged.jsonl", c) == load_artifacts(runs.results, whole[c.task])


def test_a_merged_run_compares_like_a_single_one(runs: Runs, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    merged = tmp_path / "merged-for-compare.jsonl"
    merge_results(runs.shards, merged)
    assert main(["report", "compare", str(runs.results), str(merged)]) == 0
    out = capsys.readouterr().out
    assert "no task changed outcome" in out
    assert re.search(r"^easy\s+run\s+4\s+100\.0%", out, re.MULTILINE)
    assert re.search(r"^easy\s+merged-for-compare\s+4\s+100\.0%", out, re.MULTILINE)


def test_a_models_failure_is_recorded_compared_and_categorized(runs: Runs,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    replayed = {c.task: c for c in read_run(runs.replayed)}
    assert (replayed["relu"].outcome.value, replayed["relu"].stage) == ("schema_error", "parse")
    assert replayed["relu"].diagnostics and replayed["silu"].ok
    assert replayed["relu"].generation.tokens_in == 900 and replayed["relu"].generation.latency_s == 1.5
    assert load_artifacts(runs.replayed, replayed["relu"])["answer"] == BROKEN_ANSWER

    assert main(["report", "compare", str(runs.results), str(runs.replayed)]) == 0
    changed = capsys.readouterr().out.split("== per task")[1]
    assert re.search(r"easy/relu\s+ok\s+schema_error", changed) and "easy/silu" not in changed

    results = {r["name"]: r for r in _allure_results(runs.replayed_allure)}
    relu = results["relu"]
    assert relu["status"] == "failed" and results["silu"]["status"] == "passed"
    message = relu["statusDetails"]["message"]
    first_category = next(c["name"] for c in categories() if "messageRegex" in c and re.search(c["messageRegex"], message))
    assert first_category == "Schema errors: the answer is not a kernel AST"
    labels = {(label["name"], label["value"]) for label in relu["labels"]}
    assert {("stage", "parse"), ("tag", "schema_error")} <= labels
    attachments = {a["name"]: runs.replayed_allure / a["source"] for a in relu["attachments"]}
    assert set(attachments) == {"prompt", "answer (the model's raw text)", "diagnostics", "timings"}
    diagnostics = json.loads(attachments["diagnostics"].read_text())
    assert diagnostics["outcome"] == "schema_error" and diagnostics["diagnostics"] == replayed["relu"].diagnostics


def _allure_results(alluredir: Path) -> list[dict]:
    return [json.loads(path.read_text()) for path in sorted(alluredir.glob("*-result.json"))]


def test_allure_results_hold_the_attachments_and_labels(runs: Runs) -> None:
    results = _allure_results(runs.alluredir)
    assert sorted(r["name"] for r in results) == sorted(TASKS)
    stored = {c.task: c for c in read_run(runs.results)}
    for result in results:
        labels = {(label["name"], label["value"]) for label in result["labels"]}
        task = result["name"]
        assert {("parentSuite", "easy"), ("feature", "easy"), ("story", task), ("suite", "pipeline"),
                ("provider", "reference"), ("model", "golden"), ("stage", "done"), ("tag", "ok"),
                ("tag", "cpu"), ("tag", "sm_90")} <= labels
        assert result["status"] == "passed"
        attachments = {a["name"]: runs.alluredir / a["source"] for a in result["attachments"]}
        assert set(attachments) == ATTACHMENTS
        ptx = load_artifacts(runs.results, stored[task])["ptx"]
        assert attachments["PTX"].read_text() == ptx
        assert json.loads(attachments["timings"].read_text())["sizes_checked"] == stored[task].sizes_checked


def test_allure_session_files_describe_the_run(runs: Runs) -> None:
    assert json.loads((runs.alluredir / "categories.json").read_text()) == categories()
    environment = parse_properties((runs.alluredir / "environment.properties").read_text())
    assert {"gpu", "driver", "cuda", "torch", "triton", "kernelgen"} <= set(environment)
    assert (environment["provider"], environment["model"], environment["target"], environment["mode"]) == \
        ("reference", "golden", "sm_90", "cpu")


def test_wandb_offline_run_holds_the_table_the_scores_and_the_kernels(runs: Runs) -> None:
    run_dirs = list((runs.wandb_dir / "wandb").glob("offline-run-*"))
    assert len(run_dirs) == 1, "the controller alone starts a W&B run"
    run_dir = run_dirs[0]
    tables = list((run_dir / "files" / "media" / "table").glob("cases_*.table.json"))
    assert len(tables) == 1
    table = json.loads(tables[0].read_text())
    assert table["columns"] == TABLE_COLUMNS
    task_column, outcome_column = TABLE_COLUMNS.index("task"), TABLE_COLUMNS.index("outcome")
    assert sorted(row[task_column] for row in table["data"]) == sorted(TASKS)
    assert {row[outcome_column] for row in table["data"]} == {"ok"}
    for c in read_run(runs.results):
        artifacts = load_artifacts(runs.results, c)
        kernel = run_dir / "kernels" / "easy" / c.task
        assert (kernel / "ast.json").read_text() == artifacts["ast"]
        assert (kernel / "kernel.ttir").read_text() == artifacts["ttir"]
        assert (kernel / "kernel.ptx").read_text() == artifacts["ptx"]
    # The run's record log (protobuf, its strings verbatim) holds the summary and the artifact.
    records = next(run_dir.glob("run-*.wandb")).read_bytes()
    assert b"easy/pass_rate" in records and b"all/pass@1" in records
    assert b"kernels-" in records and b"easy/relu/kernel.ptx" in records


# -- the HTML report, rendered by a real browser -------------------------------------------


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip("Chromium is not installed (apt-get install -y chromium)")


@pytest.fixture(scope="module")
def served_report(runs: Runs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The HTML report, served over http on 127.0.0.1: its pages fetch data, which browsers
    refuse over file://."""
    from kernelgen.report.html import ReportError, find_allure

    try:
        find_allure()
    except ReportError as error:
        pytest.skip(str(error))
    out = tmp_path_factory.mktemp("html")
    assert main(["report", "html", str(runs.alluredir), "-o", str(out)]) == 0
    assert (out / "index.html").is_file()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/index.html", out
    server.shutdown()
    server.server_close()


def _rendered_text(chromium: str, urls: list[str], profiles: Path) -> list[str]:
    """The visible text of each page after headless Chromium rendered it (run side by side)."""
    processes = []
    for i, url in enumerate(urls):
        processes.append(subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profiles / str(i)}",
             "--virtual-time-budget=30000", "--dump-dom", url],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
    texts = []
    for process in processes:
        dom = process.communicate(timeout=180)[0]
        body = re.sub(r"<(script|style)[\s\S]*?</\1>", " ", dom[dom.find("<body"):])
        texts.append(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)))
    return texts


def test_html_report_shows_every_case_in_chromium(served_report: tuple[str, Path],
                                                  tmp_path: Path) -> None:
    chromium = _chromium()
    url, out = served_report
    ids = {entry["name"]: case_id for case_id, entry in json.loads((out / "test-results.json").read_text())["byId"].items()}
    assert set(ids) == TASKS
    names = sorted(TASKS)
    overview, *pages = _rendered_text(chromium, [url, *(f"{url}#{ids[name]}" for name in names)], tmp_path)
    assert "kernelgen" in overview and "easy" in overview  # the report's name, the tier's group
    assert "torch" in overview and "triton" in overview  # environment.properties
    for name, page in zip(names, pages):
        assert f" {name} " in page and "Passed" in page
        assert all(attachment in page for attachment in ("prompt", "AST", "TTIR", "PTX", "timings")), page[:500]
