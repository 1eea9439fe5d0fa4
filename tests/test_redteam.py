"""The red-team catalogue: wrong kernels (tests/redteam/*.json), each written the way a careless
or cheating model would, and the outcome each must get. A verdict that such a kernel passes is
a false pass of the benchmark; every file here is one that passed once. Files whose name ends in
``_control`` are correct kernels written next to wrong ones (outcome ``ok``): a fix that stops
the wrong one must not stop them.

A file holds ``task`` (as kernelgen.task.spec.get_task accepts it), ``outcome`` (an Outcome value),
``why`` (what the kernel gets wrong), the answer as ``kernel`` (the AST) or as ``answer`` (raw
text, for what a JSON object cannot hold, such as a repeated key), and optionally ``code`` and
``path`` (the first diagnostic's code and JSON path). Cases run as the pytest plugin's CPU mode
runs them (the interpreter, its default shapes and seed); the compile stage runs only where the
expected outcome needs it, or where the file says ``"compile": true`` (a verdict that depends on
Triton compiling the kernel: a correct control that once failed to compile).

On a GPU (``pytest tests/test_redteam.py -m gpu``) every file runs through GPU mode as the
plugin runs it (compiled, launched on the GPU's draws, then refereed by the interpreter) and
must get the same outcome; its code may differ (the GPU may see a race as a mismatch first).
Where the H200 gave another outcome, the file says so in ``gpu`` (``outcome`` and ``why``, as
measured): a kernel the interpreter cannot afford (``not_judged`` is CPU mode's only), one
Triton fails to compile, and the GPU results that disagree with the interpreter's, kept
visible until explained. ``outcome`` is a list where H200 runs of the same file disagreed (a
float accumulation whose rounding follows the order the GPU ran its atomics in): each outcome
seen is accepted, and the list keeps the run-to-run verdict visible.

The CPU-mode cases ``tests/redteam/heavy.txt`` names (past 4 s each on 2 cores, then past 2 s: most of
the catalogue's time, in 93 of its ~630 cases) are marked ``heavy`` and run when a ``-m`` expression
names ``heavy`` (``pytest tests/test_redteam.py -m heavy -n 2``; the root ``conftest.py`` skips
them otherwise, saying so): the README's test command keeps within CI's 25 minutes, and
``tools/gpu_verdicts.sh`` runs them on the GPU machine's cores (its suite ``heavy``).

"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernelgen.errors import Outcome
from kernelgen.harness.pipeline import Settings, evaluate_answer
from kernelgen.task.spec import get_task

CATALOGUE = Path(__file__).parent / "redteam"
FILES = sorted(CATALOGUE.glob("*.json"))
HEAVY = {line.split("#")[0].strip() for line in (CATALOGUE / "heavy.txt").read_text().splitlines()} - {""}
# Outcomes decided at or after the compile stage; the others do not need Triton.
NEEDS_COMPILE = {Outcome.COMPILE_ERROR.value, Outcome.LOWERING_ERROR.value}


def test_the_catalogue_is_there() -> None:
    """At least 30 wrong kernels, across every tier; the controls are correct ones, and a
    control's name says so."""
    entries = [json.loads(p.read_text()) for p in FILES]
    assert sum(e["outcome"] != "ok" for e in entries) >= 30
    assert {get_task(e["task"]).tier for e in entries} >= {"easy", "med", "hard", "expert"}
    assert all((e["outcome"] == "ok") == p.stem.endswith("_control") for p, e in zip(FILES, entries))
    stale = HEAVY - {p.stem for p in FILES}
    assert not stale, f"heavy.txt names files the catalogue does not hold: {sorted(stale)}"


def test_heavy_cases_run_only_when_asked_for() -> None:
    """Without ``-m``, a heavy case skips and says how to run it; ``-m heavy`` selects exactly
    heavy.txt's cases (the root conftest.py)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS" and not k.startswith("PYTEST_XDIST")}
    base = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-q", "-rs"]
    one = f"tests/test_redteam.py::test_a_wrong_kernel_gets_its_outcome[{sorted(HEAVY)[0]}]"
    plain = subprocess.run([*base, one], cwd=CATALOGUE.parents[1], env=env, capture_output=True, text=True, timeout=300)
    assert "1 skipped" in plain.stdout and "runs with -m heavy" in plain.stdout, plain.stdout[-2000:]
    chosen = subprocess.run([*base, "tests/test_redteam.py", "-m", "heavy", "--collect-only"], cwd=CATALOGUE.parents[1],
                            env=env, capture_output=True, text=True, timeout=300)
    ids = {line.split("[", 1)[1].rstrip("]") for line in chosen.stdout.splitlines() if "::" in line and "[" in line}
    assert ids == HEAVY, chosen.stdout[-2000:]


def test_heavy_reference_answers_skip_in_cpu_mode_only(tmp_path: Path) -> None:
    """The baseline's costliest reference answers in CPU mode (bench/ablation/heavy.txt, the root
    conftest.py) are heavy too: without ``-m`` one skips and says how to run it, ``-m heavy``
    selects exactly the list's; a model's answers are never heavy (they are the benchmark)."""
    from kernelgen.task.spec import load_tasks

    root = CATALOGUE.parents[1]
    listed = {line.split("#")[0].strip() for line in (root / "bench" / "ablation" / "heavy.txt").read_text().splitlines()}
    listed -= {""}
    assert listed and listed <= {task.id for task in load_tasks()}, sorted(listed - {t.id for t in load_tasks()})
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS" and not k.startswith("PYTEST_XDIST")}
    base = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-q", "-rs", "--kg-mode", "cpu"]

    def run(*args: str, where: str = "bench/ablation") -> str:
        return subprocess.run([*base, where, *args], cwd=root, env=env, capture_output=True, text=True,
                              timeout=300).stdout

    plain = run(where=f"bench/ablation/test_ablation.py::test_baseline[{sorted(listed)[0]}]")
    assert "1 skipped" in plain and "runs with -m heavy" in plain, plain[-2000:]
    chosen = run("-m", "heavy", "--collect-only")
    assert {line.split("[", 1)[1].rstrip("]") for line in chosen.splitlines() if "::" in line} == listed, chosen[-2000:]
    model = run("-m", "heavy", "--collect-only", "--llm", f"replay:{tmp_path}")
    assert re.search(r"no tests collected \(\d+ deselected\)", model), model[-2000:]


def _entry(path: Path) -> tuple[dict, str]:
    entry = json.loads(path.read_text())
    assert set(entry) <= {"task", "outcome", "why", "kernel", "answer", "code", "path", "compile", "gpu"} \
        and entry["why"], path.name
    assert "gpu" not in entry or set(entry["gpu"]) == {"outcome", "why"}, f"{path.name}: gpu takes outcome and why"
    if "gpu" in entry:
        seen = entry["gpu"]["outcome"]
        assert isinstance(seen, str) or (len(set(seen)) == len(seen) > 1), \
            f"{path.name}: gpu's outcome is one outcome, or a list of the different outcomes H200 runs gave"
        assert set([seen] if isinstance(seen, str) else seen) <= {o.value for o in Outcome}, path.name
    assert entry["outcome"] != Outcome.NOT_JUDGED.value or "gpu" in entry, \
        f"{path.name}: not_judged is CPU mode's outcome; say the GPU's in gpu"
    assert ("kernel" in entry) != ("answer" in entry), f"{path.name}: give the answer once, as kernel or as answer"
    return entry, entry["answer"] if "answer" in entry else json.dumps(entry["kernel"])


@pytest.mark.parametrize("path", [pytest.param(p, marks=[pytest.mark.heavy] if p.stem in HEAVY else [])
                                  for p in FILES], ids=[p.stem for p in FILES])
def test_a_wrong_kernel_gets_its_outcome(path: Path) -> None:
    entry, answer = _entry(path)
    settings = Settings(gpu=False, compile=entry["outcome"] in NEEDS_COMPILE or entry.get("compile", False))
    result = evaluate_answer(get_task(entry["task"]), answer, settings)
    first = result.first_diagnostic()
    assert result.outcome.value == entry["outcome"], f"{path.stem}: {entry['why']}; got {result.outcome.value}: {first}"
    if "code" in entry:
        assert first is not None and first.code == entry["code"], f"{path.stem}: got {first}"
    if "path" in entry:
        assert first.path == entry["path"], f"{path.stem}: got {first}"
    assert first is None or len(first.message) < 400, "a message quotes what it refuses only in part"


@pytest.mark.gpu
@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_a_wrong_kernel_gets_its_outcome_on_the_gpu(path: Path, gpu_settings: Settings) -> None:
    """GPU mode: compiled, launched on the GPU's draws (its largest sizes too) with guard bands
    and both poisons, then refereed by the interpreter; the outcome is CPU mode's."""
    entry, answer = _entry(path)
    expected = entry.get("gpu", entry)
    result = evaluate_answer(get_task(entry["task"]), answer, gpu_settings)
    first = result.first_diagnostic()
    outcomes = [expected["outcome"]] if isinstance(expected["outcome"], str) else expected["outcome"]
    assert result.outcome.value in outcomes, f"{path.stem}: {expected['why']}; got {result.outcome.value}: {first}"
