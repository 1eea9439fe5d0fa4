"""The TritonBench-T track as pytest cases: one per operator of a checkout, and a summary.

kernelgen's main plugin (:mod:`kernelgen.harness.plugin`) registers this module, so it also runs
on an xdist controller (which collects nothing); the module adds its options to the main
plugin's option group itself, so the main plugin never imports it (this module imports the
main one, for its session and reporting). The
checkout is ``--tritonbench-root PATH``, else ``$KERNELGEN_TRITONBENCH_ROOT``, else
``../shared/tritonbench-t-sample`` beside the pytest rootdir when it exists; without one the
cases skip and say why.

A case (``bench/tritonbench/test_tritonbench.py``) takes its answer from the main plugin's
provider (``--llm``; ``reference``: the golden ASTs), sampling and generation cache, and runs
:func:`~kernelgen.tritonbench.evaluate.evaluate_operator` with the main plugin's settings
(``--kg-mode``, ``--target``, ``--kg-seed``, ``--kg-timeout``) and its executor. It passes
when the operator has call and execution accuracy; an unsupported operator fails with outcome
``unsupported`` and the reason. Its :class:`~kernelgen.task.results.CaseResult` (track
``tritonbench``) goes into the report's user properties under the main plugin's key, for the
results store, Allure and the summaries.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import pytest

ROOT_VARIABLE = "KERNELGEN_TRITONBENCH_ROOT"
SAMPLE = Path("..") / "shared" / "tritonbench-t-sample"
FIXTURE = "tritonbench_operator"


def pytest_addoption(parser: pytest.Parser) -> None:
    """The track's options, in the main plugin's option group (added here, not imported by the
    main plugin: a module imported before pytest registers it escapes assertion rewriting)."""
    group = parser.getgroup("kernelgen", "kernelgen benchmark")
    group.addoption("--tritonbench-root", dest="tritonbench_root", default=None, metavar="PATH",
                    help=f"a TritonBench checkout (default: ${ROOT_VARIABLE}, else {SAMPLE} beside the rootdir)")
    group.addoption("--tritonbench-prompt", dest="tritonbench_prompt", default="simp", choices=("simp", "comp"),
                    help="the instructions a model is given: the dataset's simp or comp prompts (default: simp)")


def checkout_root(config: pytest.Config) -> tuple[Path | None, str]:
    """The checkout to run, or None and why there is none."""
    given = config.getoption("tritonbench_root", None) or os.environ.get(ROOT_VARIABLE)
    if given:
        return Path(given), ""
    default = Path(config.rootpath) / SAMPLE
    if default.is_dir():
        return default.resolve(), ""
    return None, (f"no TritonBench checkout: pass --tritonbench-root PATH or set {ROOT_VARIABLE} "
                  f"({default} does not exist)")


@functools.lru_cache(maxsize=2)
def _load(root: str) -> Any:
    from kernelgen.tritonbench import TritonBenchError, load_tritonbench

    try:
        return load_tritonbench(root)
    except TritonBenchError as exc:
        raise pytest.UsageError(f"--tritonbench-root {root}: {exc}") from None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if FIXTURE not in metafunc.fixturenames:
        return
    root, why = checkout_root(metafunc.config)
    if root is None:
        metafunc.parametrize(FIXTURE, [pytest.param(None, id="no-checkout", marks=pytest.mark.skip(reason=why))])
        return
    marks = [pytest.mark.tritonbench, pytest.mark.pipeline]
    # Every provider, the goldens ("reference") included, is judged on every operator.
    params = [pytest.param(op.name, id=op.name, marks=marks) for op in _load(str(root)).operators]
    metafunc.parametrize(FIXTURE, params)


def run_tritonbench_case(tritonbench_operator: str, request: pytest.FixtureRequest) -> None:
    """One operator, scored (re-exported by ``bench/tritonbench/test_tritonbench.py``)."""
    from kernelgen.harness.plugin import asking_the_model, report_case
    from kernelgen.tritonbench.evaluate import evaluate_operator

    config = request.config
    root, _ = checkout_root(config)
    operator = _load(str(root)).operator(tritonbench_operator)

    def evaluate(session: Any) -> Any:
        session.settings.executor = session.executor
        return evaluate_operator(operator, session.provider, session.settings, cache=session.cache,
                                 sampling=session.sampling, prompt_kind=config.getoption("tritonbench_prompt"))

    report_case(request, asking_the_model(request, evaluate))


# -- the summary ---------------------------------------------------------------------------

# The track's results, as JSON; they reach the controller through the reports (xdist forwards
# user_properties).
_results: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    given = config.getoption("tritonbench_root", None)
    if given and not Path(given).is_dir():  # at start, not as a collection error of the track's file
        raise pytest.UsageError(f"--tritonbench-root {given}: no such folder (a TritonBench checkout)")
    _results.clear()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    from kernelgen.harness.plugin import RESULT_KEY

    if report.when != "call":
        return
    _results.extend(value for key, value in report.user_properties if key == RESULT_KEY)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    from kernelgen.task.results import CaseResult
    from kernelgen.tritonbench.evaluate import track_summary

    lines = track_summary([CaseResult.model_validate_json(value) for value in _results])
    if lines:
        terminalreporter.write_sep("=", "kernelgen tritonbench")
        for line in lines:
            terminalreporter.write_line(line)
