"""Loads kernelgen's pytest plugin when pytest runs from a checkout (it is also a pytest11
entry point once installed; pytest registers it once either way), schedules this checkout's
xdist runs by work stealing, and runs the cases marked ``heavy`` only when asked for."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

pytest_plugins = ["kernelgen.harness.plugin"]


def pytest_configure(config: pytest.Config) -> None:
    """Under ``-n``, xdist's default schedule (``load``) hands each worker its share of the cases up
    front, so one worker may end minutes after the other: this suite's cases take from a tenth of a
    second to two minutes (the red-team catalogue on 2 cores: 668 s against 539 s stolen, for 1071
    and 1003 s of work, 2026-12-06). A ``--dist`` given on the command line or in PYTEST_ADDOPTS
    stays as given."""
    given = config.invocation_params.args + tuple(os.environ.get("PYTEST_ADDOPTS", "").split())
    if getattr(config.option, "dist", "no") == "load" and not any(
            arg in ("-d", "--dist") or arg.startswith("--dist=") for arg in given):
        config.option.dist = "worksteal"


_HEAVY = re.compile(r"\bheavy\b")
ABLATION_HEAVY = Path(__file__).resolve().parent / "bench" / "ablation" / "heavy.txt"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The cases marked ``heavy`` (the red-team catalogue's costliest CPU-mode cases,
    ``tests/redteam/heavy.txt``, and in a CPU-mode run of the baseline's reference answers the
    costliest of those, ``bench/ablation/heavy.txt``) run when a ``-m`` expression names ``heavy``
    (``-m heavy``, ``-m "heavy or not heavy"`` for everything); otherwise they skip, saying how to
    run them, so that the README's ``pytest -n 2`` keeps within CI's 25 minutes on 2 cores."""
    _mark_heavy_reference_answers(config, items)
    if _HEAVY.search(config.getoption("markexpr", "") or ""):
        return
    for item in items:
        if item.get_closest_marker("heavy") is not None:
            listed = "bench/ablation/heavy.txt" if "kg_baseline_case" in getattr(item, "fixturenames", ()) \
                else "tests/redteam/heavy.txt"
            item.add_marker(pytest.mark.skip(reason=f"heavy: one of the costliest CPU-mode cases ({listed}); "
                                                    "runs with -m heavy"))


def _mark_heavy_reference_answers(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``heavy`` the baseline's cases of the tasks ``bench/ablation/heavy.txt`` names where
    they run kernelgen's own reference answers in Triton's interpreter (a model's answers are the
    benchmark, and on a GPU they cost what the GPU takes): each starts a sandbox and imports torch
    there, and every golden is run as an answer in the interpreter by tests/test_emit.py too."""
    cases = [item for item in items if "kg_baseline_case" in getattr(item, "fixturenames", ())]
    if not cases or not ABLATION_HEAVY.is_file():
        return
    from kernelgen.gpu.devices import gpu_unavailable_reason
    from kernelgen.harness.plugin import run_options

    options = run_options(config)
    if options.llm != "reference" or options.mode == "gpu" or (options.mode == "auto" and
                                                                 gpu_unavailable_reason() is None):
        return
    heavy = {line.split("#")[0].strip() for line in ABLATION_HEAVY.read_text().splitlines()} - {""}
    for item in cases:
        if item.callspec.params["kg_baseline_case"][0] in heavy:
            item.add_marker(pytest.mark.heavy)
