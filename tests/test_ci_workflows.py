"""The CI workflows for GPU runners (ci/github, ci/gitlab): they parse, their scripts name only
commands and options that exist and variables the file or the CI provides, the model's settings
and keys come from the CI's variables and secrets, and the GitHub workflow's own shard, merge and
compare steps, run in CPU mode over three shards, give the comparison of the unsharded run.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from kernelgen.cli import build_parser, main
from kernelgen.report.store import read_run
from kernelgen.harness.sharding import parse_shard

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]
GITHUB = REPO / "ci" / "github" / "gpu-benchmark.yml"
GITLAB = REPO / "ci" / "gitlab" / "gpu-benchmark.yml"
TIMEOUT_S = 600

# What the CI systems set for a job, which the scripts may read.
BUILTINS = {GITHUB: {"GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_STEP_SUMMARY", "GITHUB_REF_NAME", "GITHUB_RUN_NUMBER",
                     "PWD"},
            GITLAB: {"CI_NODE_INDEX", "CI_NODE_TOTAL", "CI_COMMIT_REF_NAME", "CI_PIPELINE_IID", "PWD"}}
# The model and its keys: set in the CI's settings, never in the file.
MODEL_SETTINGS = {"KG_LLM", "KG_MODEL", "KG_BASE_URL", "KG_SAMPLES"}
SECRETS = {"OPENAI_API_KEY", "NVIDIA_API_KEY", "GEMINI_API_KEY", "LLM_API_KEY", "WANDB_API_KEY"}

# The values the checks give the variables: shard 2 of 3 of a model's run on runners of 2 GPUs.
SAMPLE = {"KG_SHARD": "2", "KG_SHARDS": "3", "CI_NODE_INDEX": "2", "CI_NODE_TOTAL": "3", "KG_GPUS_PER_RUNNER": "2",
          "KG_MARKERS": "hard", "KG_KEYWORDS": "", "KG_MODE": "gpu", "KG_LLM": "openai", "KG_MODEL": "qwen",
          "KG_BASE_URL": "http://localhost:8000/v1", "KG_SAMPLES": "4", "KG_WANDB": "off", "KG_RUNS": "runs",
          "KG_PARTS": "parts", "KG_BASELINE": "ci/baseline.jsonl", "KG_MAX_PASS_DROP": "2",
          "KG_MAX_SPEEDUP_DROP": "5", "KG_GATE": "true", "GITHUB_REF_NAME": "main", "GITHUB_RUN_NUMBER": "7",
          "CI_COMMIT_REF_NAME": "main", "CI_PIPELINE_IID": "7"}

VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")
ASSIGNMENT = re.compile(r"(?:^|[\s;])([A-Za-z_][A-Za-z0-9_]*)=")
OPERATOR = re.compile(r"^[;&|()<>]+$")
REDIRECTS = {">", ">>", "<"}
KEYWORDS = {"if", "then", "else", "elif", "do", "while", "until", "!", "{"}


@dataclass
class Script:
    """One shell script of a workflow and the variables the file declares for it."""

    where: str
    text: str
    env: dict[str, str]


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def github_scripts(doc: dict) -> list[Script]:
    scripts = []
    for job_name, job in doc["jobs"].items():
        for step in job["steps"]:
            if "run" in step:
                env = {**doc.get("env", {}), **job.get("env", {}), **step.get("env", {})}
                scripts.append(Script(f"{job_name}/{step.get('name', step.get('id'))}", step["run"], env))
    return scripts


def gitlab_scripts(doc: dict) -> list[Script]:
    scripts = []
    for job_name, job in doc.items():
        if not isinstance(job, dict) or job_name in ("variables", "default") or job_name.startswith("."):
            continue  # templates (.name) are read through the jobs that extend them
        for template in [*([doc[job["extends"]]] if "extends" in job else []), job]:
            for key in ("before_script", "script"):
                for number, text in enumerate(template.get(key, [])):
                    scripts.append(Script(f"{job_name}/{key}[{number}]", text,
                                          {**doc["variables"], **job.get("variables", {})}))
    return scripts


SCRIPTS = {GITHUB: lambda: github_scripts(load(GITHUB)), GITLAB: lambda: gitlab_scripts(load(GITLAB))}


def expand(text: str, values: dict[str, str]) -> str:
    """``text`` with the variables of ``values`` replaced, any other left as it is."""
    return VARIABLE.sub(lambda match: values.get(match.group(1), match.group(0)), text)


def commands(script: str) -> list[list[str]]:
    """The simple commands of a shell script, words split as the shell splits them, with
    redirections dropped and leading keywords (if, then, !, ...) stripped."""
    found = []
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words: list[str] = []
        tokens = iter([*lexer, ";"])
        for token in tokens:
            if token in REDIRECTS:
                next(tokens)  # the redirection's file
            elif OPERATOR.match(token):
                while words and words[0] in KEYWORDS:
                    words.pop(0)
                if words:
                    found.append(words)
                words = []
            else:
                words.append(token)
    return found


def invocations(script: Script) -> list[tuple[str, list[str]]]:
    """Each ``pytest`` (or ``python -m pytest``) and ``kernelgen`` command of a script, with
    its arguments, the variables given their SAMPLE values."""
    found = []
    for words in commands(expand(script.text, SAMPLE)):
        if words[:3] == ["python", "-m", "pytest"]:
            found.append(("pytest", words[3:]))
        elif words[0] in ("pytest", "kernelgen"):
            found.append((words[0], words[1:]))
    for program, args in found:
        assert not VARIABLE.search(" ".join(args)), f"{script.where}: {program} {args}: give SAMPLE a value for it"
    return found


def all_invocations(path: Path) -> list[tuple[str, str, list[str]]]:
    return [(script.where, program, args) for script in SCRIPTS[path]() for program, args in invocations(script)]


def test_the_shell_reader_splits_commands_as_bash_does() -> None:
    script = ('status=0\nif [ -n "$X" ]; then\n  kernelgen report a "b c" > out.txt || status=$?\nfi\n'
              'python -m pytest bench \\\n  -k "relu or silu" || [ $? -eq 1 ]\n{ echo \'```\'; cat f; } >> s')
    assert commands(script) == [["status=0"], ["[", "-n", "$X", "]"], ["kernelgen", "report", "a", "b c"],
                                ["status=$?"], ["fi"], ["python", "-m", "pytest", "bench", "-k", "relu or silu"],
                                ["[", "$?", "-eq", "1", "]"], ["echo", "```"], ["cat", "f"], ["}"]]


@pytest.mark.parametrize("path", [GITHUB, GITLAB], ids=["github", "gitlab"])
def test_workflow_files_parse_and_run_every_report_step(path: Path) -> None:
    found = all_invocations(path)
    shards = [args for _, program, args in found if program == "pytest"]
    assert len(shards) == 1 and "--shard" in shards[0] and "-n" in shards[0]
    assert {" ".join(args[:2]) for _, program, args in found if program == "kernelgen"} == \
        {"report merge", "report compare", "report html", "report gate"}


def test_github_workflow_shape() -> None:
    doc = load(GITHUB)
    triggers = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` as true
    assert set(triggers["workflow_dispatch"]["inputs"]) >= {"runner_label", "shards", "gpus_per_runner"}
    jobs = doc["jobs"]
    assert jobs["shard"]["strategy"]["matrix"]["shard"] == "${{ fromJSON(needs.plan.outputs.shards) }}"
    assert all("vars.KG_RUNNER_LABEL" in str(job["runs-on"]) for job in jobs.values())
    assert jobs["merge"]["needs"] == "shard" and jobs["gate"]["needs"] == jobs["pages"]["needs"] == "merge"
    uploads = [step for step in jobs["shard"]["steps"] if step.get("uses", "").startswith("actions/upload-artifact")]
    assert uploads and uploads[0]["with"]["name"] == "shard-${{ matrix.shard }}"
    assert jobs["pages"]["permissions"] == {"pages": "write", "id-token": "write"}


def test_gitlab_workflow_shape() -> None:
    doc = load(GITLAB)
    assert isinstance(doc["benchmark"]["parallel"], int) and doc["benchmark"]["parallel"] >= 2
    assert doc["merge"]["needs"] == ["benchmark"] and doc["merge"]["when"] == "always"
    assert doc["default"]["tags"] == ["$KG_RUNNER_TAG"]
    assert doc["pages"]["artifacts"]["paths"] == ["public"]


@pytest.mark.parametrize("path", [GITHUB, GITLAB], ids=["github", "gitlab"])
def test_scripts_read_only_variables_the_file_or_the_ci_provides(path: Path) -> None:
    project_settings = MODEL_SETTINGS if path == GITLAB else set()  # GitHub maps them into env
    for script in SCRIPTS[path]():
        assert "${{" not in script.text, f"{script.where}: an expression in a script (pass it through env:)"
        local = set(ASSIGNMENT.findall(script.text))
        unknown = set(VARIABLE.findall(script.text)) - local - set(script.env) - BUILTINS[path] - project_settings
        assert not unknown, f"{script.where} reads {sorted(unknown)}, which nothing sets"


def test_github_takes_the_model_and_its_keys_from_variables_and_secrets() -> None:
    doc = load(GITHUB)
    env = {name: value for job in doc["jobs"].values() for name, value in job.get("env", {}).items()}
    env |= doc["env"]
    assert {name: env[name] for name in SECRETS} == {name: f"${{{{ secrets.{name} }}}}" for name in SECRETS}
    assert {name: env[name] for name in MODEL_SETTINGS} == {name: f"${{{{ vars.{name} }}}}" for name in MODEL_SETTINGS}
    assert "secrets." not in yaml.safe_dump(doc["env"])  # keys only where a shard asks the model


def test_gitlab_leaves_the_model_and_its_keys_to_the_project_settings() -> None:
    assert not (MODEL_SETTINGS | SECRETS) & set(load(GITLAB)["variables"])


@pytest.mark.parametrize("path", [GITHUB, GITLAB], ids=["github", "gitlab"])
def test_kernelgen_commands_of_the_workflows_parse(path: Path) -> None:
    parser = build_parser()
    for where, program, args in all_invocations(path):
        if program == "kernelgen":
            try:
                parser.parse_args(args)
            except SystemExit:
                pytest.fail(f"{where}: `kernelgen {shlex.join(args)}` does not parse")


@pytest.mark.parametrize("path", [GITHUB, GITLAB], ids=["github", "gitlab"])
def test_pytest_commands_of_the_workflows_name_registered_options(path: Path, pytester: pytest.Pytester) -> None:
    for where, program, args in all_invocations(path):
        if program != "pytest":
            continue
        try:
            config = pytester.parseconfig(*args)  # every installed plugin's options; nothing runs
        except pytest.UsageError as error:
            pytest.fail(f"{where}: `pytest {shlex.join(args)}`: {error}")
        for name in (value.split("=", 1)[0] for flag, value in zip(args, args[1:]) if flag == "-o"):
            try:
                config.getini(name)
            except ValueError:
                pytest.fail(f"{where}: -o {name}=...: no such ini option")
        assert parse_shard(config.option.kg_shard) == parse_shard("2/3")
        assert (config.option.numprocesses, config.option.kg_mode) == (2, "gpu")
        assert config.option.kg_results == "runs/shard-2.jsonl" and config.option.allure_report_dir == "runs/allure-2"


# -- the dry run: the GitHub workflow's steps in CPU mode -----------------------------------

# A small selection of four tasks (relu, silu, leaky_relu, bias_relu), pipeline track only; one
# worker-less process per shard (-n 0) to keep the test quick on a CPU.
DRY_RUN = {"KG_MARKERS": "easy and pipeline", "KG_KEYWORDS": "relu or silu", "KG_GPUS_PER_RUNNER": "0",
           "KG_MODE": "cpu", "KG_WANDB": "off", "KG_LLM": "", "KG_MODEL": "", "KG_BASE_URL": "", "KG_SAMPLES": "",
           "KG_BASELINE": ""}
SHARDS = 3


def github_step(name: str) -> Script:
    return next(script for script in github_scripts(load(GITHUB)) if script.where.endswith("/" + name))


def run_step(name: str, env: dict[str, str], **values: str) -> subprocess.Popen:
    """Start the GitHub workflow's step ``name`` as the runner would: its script in bash, with
    the DRY_RUN and ``values`` of the variables the workflow declares for it."""
    script = github_step(name)
    assert set(values) <= set(script.env), f"{name}: the dry run sets a variable the workflow does not have"
    declared = {key: value for key, value in (DRY_RUN | values).items() if key in script.env}
    return subprocess.Popen(["bash", "-eo", "pipefail", "-c", script.text], cwd=REPO, env=env | declared,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def runner_env(folder: Path, summary: Path) -> dict[str, str]:
    """A runner's environment for the steps: ``folder/bin`` (this interpreter as ``python`` and
    ``kernelgen``) first on PATH, this checkout on PYTHONPATH, no trace of the outer pytest."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTEST_", "WANDB_", "KG_")) and key != "CUDA_VISIBLE_DEVICES"}
    return env | {"PATH": f"{folder / 'bin'}{os.pathsep}{env.get('PATH', '')}", "PYTHONPATH": str(REPO),
                  "PYTEST_ADDOPTS": "-p no:cacheprovider", "GITHUB_STEP_SUMMARY": str(summary)}


def finish(process: subprocess.Popen) -> str:
    output = process.communicate(timeout=TIMEOUT_S)[0]
    assert process.returncode == 0, output
    return output


def runner_bin(folder: Path) -> Path:
    """``folder/bin`` with ``python`` and ``kernelgen`` as scripts that exec this interpreter by
    its own path. Not a symlink: a venv's interpreter reached through a link outside the venv
    does not find its ``pyvenv.cfg`` and runs as the base Python, without this venv's packages
    (pytest-xdist, allure-pytest), so the steps would pass or fail by what the machine's base
    Python happens to have."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    for name, args in {"python": "", "kernelgen": " -m kernelgen.cli"}.items():
        (bin_dir / name).write_text(f'#!/bin/sh\nexec "{sys.executable}"{args} "$@"\n')
        (bin_dir / name).chmod(0o755)
    return bin_dir


def test_the_runner_python_is_this_interpreter(tmp_path: Path) -> None:
    """The steps' ``python`` is this venv's interpreter with this venv's packages: the failure
    mode of a symlinked interpreter (the base Python, no xdist or allure) cannot come back."""
    probe = "import sys, xdist, allure_pytest; print(sys.prefix)"
    output = subprocess.run([runner_bin(tmp_path) / "python", "-c", probe], capture_output=True, text=True,
                            env=runner_env(tmp_path, tmp_path / "summary.md"), timeout=TIMEOUT_S)
    assert output.returncode == 0, output.stderr
    assert output.stdout.strip() == sys.prefix


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shard step three times (``--shard i/3``) and once unsharded (``--shard 1/1``), side by
    side; then the merge and compare steps over each. ``kernelgen`` and ``python`` are this
    interpreter's, the kernelgen package this checkout's."""
    assert set(DRY_RUN) <= set(github_step("benchmark shard").env)
    folder = tmp_path_factory.mktemp("ci-dry-run")
    runner_bin(folder)
    env = runner_env(folder, folder / "summary.md")
    runs = {"sharded": ("parts", SHARDS), "whole": ("whole-parts", 1)}
    shards = [run_step("benchmark shard", env, KG_RUNS=str(folder / parts), KG_SHARD=str(index),
                       KG_SHARDS=str(count))
              for parts, count in runs.values() for index in range(1, count + 1)]
    for process in shards:
        finish(process)
    for name, (parts, _) in runs.items():
        values = {"KG_PARTS": str(folder / parts), "KG_RUNS": str(folder / name)}
        finish(run_step("merge the shards", env, **values))
        finish(run_step("compare", env, **values))
    return folder


def test_shards_partition_the_selection(dry_run: Path) -> None:
    tasks = [{case.task for case in read_run(dry_run / "parts" / f"shard-{i}.jsonl")} for i in range(1, SHARDS + 1)]
    assert all(tasks) and sum(map(len, tasks)) == len(set().union(*tasks)) == 4
    assert set().union(*tasks) == {case.task for case in read_run(dry_run / "whole" / "run.jsonl")}


def test_merged_shards_compare_like_the_unsharded_run(dry_run: Path) -> None:
    sharded, whole = ((dry_run / name / "compare.txt").read_text().replace(str(dry_run / name), "RUNS")
                      for name in ("sharded", "whole"))
    assert sharded == whole
    assert "== run (RUNS/run.jsonl, 4 cases)" in whole
    assert re.search(r"^all\s+run\s+4\s+100\.0%", whole, re.MULTILINE)
    assert (dry_run / "summary.md").read_text().count("== run (") == 2  # each compare went to the job's summary
    assert any((dry_run / "sharded" / "allure").glob("*-result.json"))
    assert main(["report", "gate", str(dry_run / "whole" / "run.jsonl"), str(dry_run / "sharded" / "run.jsonl"),
                 "--max-pass-drop", "0", "--max-speedup-drop", "0"]) == 0


@pytest.mark.parametrize("new, gate_on, status", [("sharded", "true", 0), ("lost", "false", 0), ("lost", "true", 1),
                                                  ("absent", "false", 2)])
def test_the_gate_step_fails_the_job_on_a_drop_only_when_asked(dry_run: Path, tmp_path: Path, new: str, gate_on: str,
                                                               status: int) -> None:
    """The gate job's step against the unsharded run: the merged shards pass; a run that lost a
    shard fails only with KG_GATE=true; a missing results file always fails."""
    runs = dry_run / "sharded" if new == "sharded" else tmp_path  # "absent": no run.jsonl in it
    if new == "lost":
        (tmp_path / "run.jsonl").write_bytes((dry_run / "parts" / "shard-1.jsonl").read_bytes())
    env = runner_env(dry_run, tmp_path / "summary.md")
    process = run_step("gate against the baseline", env, KG_BASELINE=str(dry_run / "whole" / "run.jsonl"),
                       KG_RUNS=str(runs), KG_GATE=gate_on, KG_MAX_PASS_DROP="0", KG_MAX_SPEEDUP_DROP="0")
    output = process.communicate(timeout=TIMEOUT_S)[0]
    assert process.returncode == status, output
    assert {"sharded": "gate passed", "lost": "gate FAILED: missing tasks", "absent": "no such results file"}[new] \
        in output
