"""The results store, run comparison, merging and plotting, over synthetic runs with known numbers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import example, given, settings, strategies as st

from kernelgen.cli import main
from kernelgen.errors import Outcome
from kernelgen.task.metrics import (fast_p, fast_vs_best, fast_vs_compiled, geomean_speedup, geomean_vs_best,
                                    geomean_vs_compiled, mean_pass_at_k, pass_at_k, score)
from kernelgen.report.allure import categories, failure_message_regex, format_properties, parse_properties
from kernelgen.report.compare import Run, compare_lines, load_runs, score_table, task_changes
from kernelgen.report.merge import MergeError, merge_allure, merge_results
from kernelgen.report.store import RunWriter, StoreError, artifacts_dir, load_artifacts, read_run
from kernelgen.task.results import CaseResult, Timing


def case(task: str, outcome: str = "ok", speedup: float | None = None, *, tier: str = "easy", sample: int = 0,
         model: str = "m", track: str = "pipeline", compiled_ms: float | None = None) -> CaseResult:
    timing = None
    if speedup is not None:
        kernel_ms = 1.0 / speedup
        timing = Timing(sizes={"N": 1024}, kernel_ms=kernel_ms, eager_ms=1.0, speedup=speedup, gbps=100.0,
                        tflops=0.1, roofline_fraction=0.5, compiled_ms=compiled_ms,
                        speedup_vs_compiled=compiled_ms / kernel_ms if compiled_ms else None)
    diagnostics = [] if outcome == "ok" else [{"path": "/body/0", "code": "x", "message": "wrong"}]
    return CaseResult(task=task, tier=tier, track=track, provider="p", model=model, sample=sample,
                      outcome=Outcome(outcome),
                      stage=None if outcome == "ok" else "verify", diagnostics=diagnostics, mode="gpu",
                      target="sm_90", timing=timing,
                      artifacts={"ast": json.dumps({"name": task}), "ptx": f"// ptx of {task}\n",
                                 "prompt": "write a kernel"})


# Run A: easy a (2.0x), b (0.5x), c (wrong), d (1.2x); hard e: 3 samples, 2 correct.
RUN_A = [case("a", speedup=2.0), case("b", speedup=0.5), case("c", "wrong_result"), case("d", speedup=1.2),
         case("e", speedup=1.5, tier="hard"), case("e", speedup=1.5, tier="hard", sample=1),
         case("e", "compile_error", tier="hard", sample=2)]
# Run B: c now correct, a much faster, b within 10% of A, the rest as in A.
RUN_B = [case("a", speedup=3.0), case("b", speedup=0.52), case("c", speedup=1.0), case("d", speedup=1.2),
         *RUN_A[4:]]


def write_run(path: Path, results: list[CaseResult]) -> Path:
    writer = RunWriter(path)
    for result in results:
        writer.add(result)
    writer.close()
    return path


# -- metrics -------------------------------------------------------------------------------


def test_scores_of_a_known_run() -> None:
    easy = RUN_A[:4]
    assert fast_p(easy, 0.0) == 3 / 4
    assert fast_p(easy, 1.0) == 2 / 4  # 2.0x and 1.2x; the wrong result stays in the denominator
    assert fast_p(easy, 1.5) == 1 / 4
    geomean, count = geomean_speedup(easy)
    assert count == 3 and geomean == pytest.approx((2.0 * 0.5 * 1.2) ** (1 / 3))
    # pass@1 over 5 tasks: a, b, d pass, c fails, e passes 2 of 3 samples.
    assert mean_pass_at_k(RUN_A, 1) == (pytest.approx((3 + 2 / 3) / 5), 5)
    assert mean_pass_at_k(RUN_A, 3) == (1.0, 1)  # only e has 3 samples, and one of them passes
    scores = score(RUN_A, ks=(1, 3))
    assert (scores.cases, scores.passed) == (7, 5)
    assert scores.outcomes == {"ok": 5, "wrong_result": 1, "compile_error": 1}


def test_scores_against_torch_compile_and_the_faster_baseline() -> None:
    """Against torch.compile: the cases it was timed for, failures kept; against the faster of
    eager and torch.compile: eager where torch.compile has no time."""
    run = [case("a", speedup=2.0, compiled_ms=0.25),  # 0.5 ms kernel: 0.5x torch.compile, 0.5x the best
           case("b", speedup=4.0, compiled_ms=0.5),   # 0.25 ms: 2x torch.compile, 2x the best
           case("c", speedup=2.0),                    # torch.compile failed: 2x eager is 2x the best
           case("d", "wrong_result")]
    assert fast_vs_compiled(run, 1.0) == 1 / 3  # a, b and d: only b is faster
    assert geomean_vs_compiled(run) == (pytest.approx(1.0), 2)
    assert fast_vs_best(run, 1.0) == 2 / 4
    assert geomean_vs_best(run) == (pytest.approx((0.5 * 2.0 * 2.0) ** (1 / 3)), 3)
    assert fast_vs_compiled(RUN_A, 1.0) is None and fast_vs_best([case("x")], 1.0) is None


def test_fast_p_is_undefined_without_timings() -> None:
    untimed = [case("a"), case("b", "wrong_result")]
    assert fast_p(untimed, 1.0) is None and geomean_speedup(untimed) is None


@given(st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_matches_its_definition(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    expected = 1 - math.comb(n - c, k) / math.comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(expected)


# -- the store -----------------------------------------------------------------------------


def test_store_round_trip_keeps_every_field_and_artifact(tmp_path: Path) -> None:
    path = write_run(tmp_path / "run.jsonl", RUN_A)
    stored = read_run(path)
    assert [s.model_dump(exclude={"artifacts", "artifact_files"}) for s in stored] == \
        [r.model_dump(exclude={"artifacts"}) for r in RUN_A]
    assert [load_artifacts(path, s) for s in stored] == [r.artifacts for r in RUN_A]
    # Stored once per content: the three samples of e share their AST, PTX and prompt.
    distinct = {text for r in RUN_A for text in r.artifacts.values()}
    assert len(list(artifacts_dir(path).iterdir())) == len(distinct)
    assert all('"artifacts"' not in line for line in path.read_text().splitlines())


def test_a_bad_results_line_names_the_line_and_field(tmp_path: Path) -> None:
    path = write_run(tmp_path / "run.jsonl", RUN_A[:2])
    lines = path.read_text().splitlines()
    lines[1] = lines[1].replace('"outcome":"ok"', '"outcome":"great"')
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(StoreError) as error:
        read_run(path)
    assert error.value.path == "/outcome" and error.value.code == "bad_result_line"
    assert "line 2" in str(error.value)


def test_a_missing_results_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "compare", str(tmp_path / "nope.jsonl")]) == 1
    assert "nope.jsonl: no such results file" in capsys.readouterr().err


# -- compare -------------------------------------------------------------------------------


def test_score_table_has_the_known_numbers(tmp_path: Path) -> None:
    runs = load_runs([write_run(tmp_path / "A.jsonl", RUN_A), write_run(tmp_path / "B.jsonl", RUN_B)])
    table = score_table(runs)
    header = table[0].split()
    assert header == ["tier", "run", "cases", "pass", "pass@1", "pass@3", "fast_0", "fast_1", "fast_1.5", "geomean",
                      "timed", "fast_1_compiled", "vs_compiled", "fast_1_best", "vs_best"]
    rows = {(cells[0], cells[1]): dict(zip(header, cells)) for cells in (line.split() for line in table[1:])}
    easy_a = rows[("easy", "A")]
    assert (easy_a["cases"], easy_a["pass"], easy_a["fast_0"], easy_a["fast_1"], easy_a["fast_1.5"]) == \
        ("4", "75.0%", "75.0%", "50.0%", "25.0%")
    assert easy_a["geomean"] == f"{(2.0 * 0.5 * 1.2) ** (1 / 3):.2f}x" and easy_a["timed"] == "3"
    # No torch.compile times: against it, nothing; the faster baseline is then eager.
    assert (easy_a["fast_1_compiled"], easy_a["vs_compiled"]) == ("-", "-")
    assert (easy_a["fast_1_best"], easy_a["vs_best"]) == (easy_a["fast_1"], easy_a["geomean"])
    assert rows[("easy", "B")]["pass"] == "100.0%"
    assert rows[("hard", "A")]["pass@1"] == "66.7%" and rows[("hard", "A")]["pass@3"] == "100.0%"
    assert rows[("all", "A")]["pass@1"] == f"{(3 + 2 / 3) / 5:.1%}"


def test_task_changes_lists_outcome_and_speedup_changes_only() -> None:
    runs = [Run("A", Path("A.jsonl"), RUN_A), Run("B", Path("B.jsonl"), RUN_B)]
    lines = task_changes(runs, speedup_change=0.10)
    assert lines[0].startswith("2 of 5 tasks changed")
    rows = {line.split()[0]: line for line in lines[2:]}
    assert set(rows) == {"easy/a", "easy/c"}  # b moved 4%, d and e not at all
    assert "wrong_result" in rows["easy/c"] and "ok 1.00x" in rows["easy/c"]
    assert "ok 2.00x" in rows["easy/a"] and "ok 3.00x" in rows["easy/a"]
    assert task_changes(runs[:1] * 2) == ["no task changed outcome, or speedup by more than 10%"]


def test_compare_command_prints_summaries_scores_and_changes(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    a, b = write_run(tmp_path / "A.jsonl", RUN_A), write_run(tmp_path / "B.jsonl", RUN_B)
    plot = tmp_path / "plots" / "runs.png"
    assert main(["report", "compare", str(a), str(b), "--label", "before", "--label", "after",
                 "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "== before" in out and "== after" in out and "kernels from: p/m" in out
    assert "2 of 5 tasks changed" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_tasks_two_tracks_are_two_tasks_not_two_samples(tmp_path: Path) -> None:
    # One sample per task, each through the pipeline and the baseline: pass@1 only, per track.
    both = [case("a"), case("a", "syntax_error", track="baseline"), case("b"), case("b", track="baseline")]
    assert mean_pass_at_k(both, 1) == (0.75, 4) and mean_pass_at_k(both, 2) is None
    table = score_table(load_runs([write_run(tmp_path / "both.jsonl", both)]))
    header = table[0].split()
    assert header[:3] == ["tier", "track", "run"] and "pass@2" not in header
    rows = {(cells[0], cells[1]): dict(zip(header, cells)) for cells in (line.split() for line in table[1:])}
    assert rows[("easy", "pipeline")]["pass@1"] == "100.0%" and rows[("easy", "baseline")]["pass@1"] == "50.0%"
    assert rows[("all", "baseline")]["cases"] == "2"


def test_tasks_missing_from_a_run_are_reported_as_missing_not_as_changed() -> None:
    partial = [c for c in RUN_B if c.task not in ("a", "e")]
    lines = task_changes([Run("A", Path("A.jsonl"), RUN_A), Run("B", Path("B.jsonl"), partial)])
    assert lines[0].startswith("1 of 3 tasks changed")  # c; a is missing from B, b and d unchanged
    assert lines[-1] == "missing from B (2 of 5 tasks, not compared): easy/a, hard/e"
    assert not any(line.startswith(("easy/a", "hard/e")) for line in lines)


def test_compare_of_one_run_has_no_task_section() -> None:
    lines = compare_lines([Run("A", Path("A.jsonl"), RUN_A)])
    assert "== per task" not in lines and any(line.startswith("== scores") for line in lines)


# -- merge ---------------------------------------------------------------------------------


def test_merged_shards_equal_the_whole_run(tmp_path: Path) -> None:
    whole = write_run(tmp_path / "whole.jsonl", RUN_A)
    first = write_run(tmp_path / "s1" / "run.jsonl", [RUN_A[i] for i in (4, 0, 5)])
    second = write_run(tmp_path / "s2" / "run.jsonl", [RUN_A[i] for i in (3, 6, 1, 2)])
    merged = merge_results([second, first], tmp_path / "merged.jsonl")
    assert [m.model_dump(exclude={"artifacts"}) for m in merged] == \
        [m.model_dump(exclude={"artifacts"}) for m in read_run(tmp_path / "merged.jsonl")]
    ordered = sorted(read_run(whole), key=lambda c: (("easy", "hard").index(c.tier), c.task, c.sample))
    assert [m.model_dump() for m in merged] == [m.model_dump() for m in ordered]
    assert [load_artifacts(tmp_path / "merged.jsonl", m) for m in merged] == [load_artifacts(whole, m) for m in ordered]


def test_merging_overlapping_shards_is_an_error(tmp_path: Path) -> None:
    first = write_run(tmp_path / "s1.jsonl", RUN_A[:2])
    second = write_run(tmp_path / "s2.jsonl", RUN_A[1:3])
    with pytest.raises(MergeError) as error:
        merge_results([first, second], tmp_path / "merged.jsonl")
    assert error.value.code == "duplicate_case" and "easy/b" in str(error.value)
    with pytest.raises(MergeError, match="one of the inputs"):
        merge_results([first, second], first)


def test_merged_allure_folders_keep_every_file_and_every_environment(tmp_path: Path) -> None:
    shards = []
    for index, gpu in enumerate(("NVIDIA H200", "NVIDIA A100")):
        folder = tmp_path / f"shard{index}"
        folder.mkdir()
        (folder / f"uuid{index}-result.json").write_text(json.dumps({"name": f"case{index}"}))
        (folder / f"uuid{index}-attachment.txt").write_text("ptx")
        (folder / "environment.properties").write_text(format_properties({"gpu": gpu, "torch": "2.13.0"}))
        (folder / "categories.json").write_text(json.dumps(categories()))
        shards.append(folder)
    out = tmp_path / "merged"
    assert merge_allure(shards, out) == 6
    assert parse_properties((out / "environment.properties").read_text()) == \
        {"gpu": "NVIDIA H200, NVIDIA A100", "torch": "2.13.0"}
    assert json.loads((out / "categories.json").read_text()) == categories()
    assert {p.name for p in out.iterdir()} >= {"uuid0-result.json", "uuid1-result.json", "uuid1-attachment.txt"}
    (shards[1] / "uuid0-result.json").write_text("{}")
    with pytest.raises(MergeError) as error:
        merge_allure(shards, tmp_path / "again")
    assert error.value.code == "conflict"


def test_merge_command_takes_files_or_folders_not_both(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run.jsonl", RUN_A[:1])
    assert main(["report", "merge", str(run), str(tmp_path), "-o", str(tmp_path / "out")]) == 1
    assert "not both" in capsys.readouterr().err


# -- Allure categories and properties ------------------------------------------------------


def test_each_failing_outcome_falls_in_its_own_category() -> None:
    import re

    rules = categories()
    for outcome in Outcome:
        message = f"Failed: {outcome.value} at verify: /body/0: code: first line\nsecond line"
        first_match = next((rule["name"] for rule in rules
                            if "messageRegex" in rule and re.search(rule["messageRegex"], message)), None)
        if outcome == Outcome.OK:
            assert first_match is None
        else:
            assert re.fullmatch(failure_message_regex(outcome), message)
            assert first_match == next(r["name"] for r in rules if r.get("messageRegex") == failure_message_regex(outcome))
    assert rules[-1]["matchedStatuses"] == ["broken"]


@settings(max_examples=300)
@given(st.dictionaries(st.text(min_size=1), st.text()))
@example({"\f#": ""})  # a form feed before '#': a comment line, before tab and form feed were escaped
@example({"\t!x": "\t y", " a": "\f"})
def test_properties_round_trip(values: dict[str, str]) -> None:
    assert parse_properties(format_properties(values)) == values


# -- the HTML report's preconditions -------------------------------------------------------


def test_html_report_of_a_folder_without_results_says_how_to_make_them(tmp_path: Path) -> None:
    from kernelgen.report.html import ReportError, build_html

    with pytest.raises(ReportError) as error:
        build_html([tmp_path], tmp_path / "out")
    assert error.value.code == "no_results" and f"--alluredir {tmp_path}" in str(error.value)


def test_html_report_without_node_names_the_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelgen.report.html import ALLURE_INSTALL, ReportError, find_allure

    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ReportError) as error:
        find_allure(tmp_path)
    assert error.value.code == "node_missing"
    assert "apt-get install -y nodejs npm" in str(error.value) and ALLURE_INSTALL in str(error.value)
