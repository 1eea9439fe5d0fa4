"""What a new user meets first, in pytest subprocesses as users run them (CPU mode): a wrong
option is one usage line before any case runs, an unreachable model server stops the run after
its first case, ``-m TIER`` runs the pipeline without the baseline, and a run writes nothing
into the project (caches under ``$XDG_CACHE_HOME/kernelgen``, W&B off unless asked for). The
many option and selection checks run pytest in this process (a subprocess costs seconds of
imports each); a usage line from a subprocess is still checked by the ini and --kg-mode tests."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from test_harness import model_server  # noqa: F401 - the fixture: an OpenAI-compatible model on loopback

from kernelgen.model.breaker import CircuitBreaker, is_unreachable
from kernelgen.report.wandb_run import resolve_mode

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]
CASES = "from kernelgen.harness.plugin import run_pipeline_case as test_pipeline  # noqa: F401\n"
BASELINE = "from kernelgen.harness.plugin import run_baseline_case as test_baseline  # noqa: F401\n"
MARKERS = "".join(f"    {name}: m\n" for name in ("easy", "med", "hard", "expert", "tritonbench", "ablation",
                                                      "pipeline", "baseline", "gpu", "slow"))


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path_factory) -> pytest.Pytester:
    """A project with the easy tier and the baseline, caches in a folder of its own."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg")))
    # A user's shell: no kernelgen or W&B settings, and not inside an xdist worker (under
    # `pytest -n 2` the worker's variables made pytest-benchmark warn in the runs below).
    for name in ("KERNELGEN_CACHE_DIR", "WANDB_MODE", "WANDB_API_KEY", "OPENAI_MODEL", "OPENAI_BASE_URL",
                 "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    pytester.makeconftest('pytest_plugins = ["kernelgen.harness.plugin"]\n')
    pytester.makeini(f"[pytest]\naddopts = --strict-markers -p no:cacheprovider\nmarkers =\n{MARKERS}")
    (pytester.path / "easy").mkdir()
    (pytester.path / "easy" / "test_easy.py").write_text(CASES)
    (pytester.path / "ablation").mkdir()
    (pytester.path / "ablation" / "test_ablation.py").write_text(BASELINE)
    return pytester


def usage_line(result: pytest.RunResult) -> str:
    """The one line of a usage error; nothing ran and nothing else was said."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    errors = [line for line in result.stderr.lines if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("ERROR: "), result.stderr.str()
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    return errors[0].removeprefix("ERROR: ")


@pytest.mark.parametrize("args, message", [
    (["--llm", "foo"], "--llm foo: takes one of openai, nim, ollama, gemini, remote, hf, reference, replay"),
    (["--llm", "replay:/nonexistent"], "--llm replay:/nonexistent: replay: no directory /nonexistent"),
    (["--kg-shapes", "-1"], "--kg-shapes -1: takes a positive integer"),
    (["--samples", "0"], "--samples 0: takes a positive integer"),
    (["--samples", "-1"], "--samples -1: takes a positive integer"),
    (["--target", "sm_75"], "--target sm_75: takes one of the targets kernelgen compiles for: sm_80, sm_86, "
                            "sm_89, sm_90"),
    (["--repair-rounds", "-1"], "--repair-rounds -1: takes an integer >= 0"),
    (["--kg-timeout", "0"], "--kg-timeout 0: takes a number > 0"),
    (["--temperature", "hot"], "--temperature hot: takes a number >= 0"),
    (["--kg-seed", "x"], "--kg-seed x: takes an integer >= 0"),
    (["--base-url", "localhost:8000"], "--base-url localhost:8000: takes an http:// or https:// URL"),
    (["--kg-mode", "fast"], "--kg-mode fast: takes auto, cpu, gpu"),
    (["--tritonbench-root", "/nonexistent"], "--tritonbench-root /nonexistent: no such folder"),
    (["--kg-results", "/"], "--kg-results /: is a folder; give the results file"),
    (["--llm", "openai"], "openai needs a model: --model NAME or OPENAI_MODEL"),  # when the provider is made
    (["--llm", "openai", "-n", "2"], "openai needs a model: --model NAME or OPENAI_MODEL"),  # xdist: the controller
])
def test_a_wrong_option_is_one_usage_line_before_any_case(project: pytest.Pytester, args: list[str],
                                                            message: str) -> None:
    """In this process: the options are checked before any case, and a subprocess costs seconds
    of imports per option; the ini and --kg-mode tests below run theirs as a user does."""
    assert usage_line(project.runpytest_inprocess("-m", "easy", "--import-mode=importlib", *args)).startswith(message)


def test_ini_values_are_checked_the_same_way(project: pytest.Pytester) -> None:
    project.makeini(f"[pytest]\naddopts = -p no:cacheprovider\nkg_samples = 0\nmarkers =\n{MARKERS}")
    assert usage_line(project.runpytest_subprocess("-m", "easy")) == "kg_samples (ini) 0: takes a positive integer"


def test_kg_mode_gpu_without_a_gpu_is_a_usage_line(project: pytest.Pytester) -> None:
    from kernelgen.gpu.devices import gpu_unavailable_reason

    if gpu_unavailable_reason() is None:
        pytest.skip("this machine has a GPU")
    assert usage_line(project.runpytest_subprocess("-m", "easy", "--kg-mode", "gpu")) == \
        "--kg-mode gpu: no CUDA GPU on this machine (use --kg-mode auto or cpu)"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_model_server_stops_the_run_after_the_first_case(project: pytest.Pytester) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    result = project.runpytest_subprocess("-m", "easy", "-k", "relu", "--kg-mode", "cpu", "--llm", "openai",
                                          "--model", "m", "--base-url", url)
    result.assert_outcomes(failed=1)  # three cases selected; the first one stopped the run
    output = result.stdout.str()
    assert "Traceback" not in output and "During handling" not in output
    failure = f"POST {url}/chat/completions: ConnectError: [Errno 111] Connection refused (gave up after 4 attempts)"
    lines = result.stdout.lines
    header = lines.index("easy/test_easy.py F") + 3  # the FAILURES line, then the case's own
    assert lines[header + 1] == f"generate: {failure}; the run stops here"  # one line, no traceback
    case = lines[header].strip("_ ")
    assert f"the run stopped after {case}: the model server is unreachable: {failure}" in lines
    assert any(line.startswith("!") and f"stopping after {case}: the model server is unreachable" in line
               for line in lines)


def test_the_breaker_trips_on_a_server_down_not_on_one_bad_request() -> None:
    for code in ("connection", "timeout", "http_429", "http_502", "http_503"):
        assert is_unreachable("generate", code)
    for code in ("http_400", "http_401", "no_record", "bad_response", "config"):
        assert not is_unreachable("generate", code)
    assert not is_unreachable("launch", "timeout")  # a kernel's timeout is the kernel's
    breaker = CircuitBreaker()
    breaker.trip("test_pipeline[relu]", "POST x: refused")
    breaker.trip("test_pipeline[gelu]", "POST x: timeout")
    assert breaker.tripped and breaker.case == "test_pipeline[relu]" and breaker.reason == "POST x: refused"


@pytest.mark.parametrize("args, selected", [
    (["-m", "easy"], {"test_pipeline"}),  # the tier through the pipeline: the baseline is asked for by name
    (["-m", "easy and ablation"], {"test_baseline"}),
    (["-m", "easy and (pipeline or ablation)"], {"test_pipeline", "test_baseline"}),
    ([], {"test_pipeline", "test_baseline"}),  # no -m: everything collected
    (["ablation", "-m", "easy"], {"test_baseline"}),  # its folder named
])
def test_a_tier_runs_the_pipeline_and_the_baseline_when_named(project: pytest.Pytester, args: list[str],
                                                             selected: set[str]) -> None:
    """In this process: the selection is collection's alone, which a subprocess would only slow."""
    result = project.runpytest_inprocess("--collect-only", "-q", "-k", "relu", "--import-mode=importlib", *args)
    assert {line.split("::")[1].split("[")[0] for line in result.stdout.lines if "::" in line} == selected


def test_a_run_writes_nothing_into_the_project(project: pytest.Pytester, model_server: str) -> None:  # noqa: F811
    before = set(project.path.iterdir())
    result = project.runpytest_subprocess("easy/test_easy.py::test_pipeline[relu]", "--kg-mode", "cpu",
                                          "--kg-shapes", "1", "--llm", "openai", "--model", "tiny",
                                          "--base-url", model_server)
    result.assert_outcomes(failed=1)  # the loopback model's first answer is broken (no repair rounds)
    assert "PytestAssertRewriteWarning" not in result.stdout.str() + result.stderr.str()
    created = {path.name for path in set(project.path.iterdir()) - before}
    pytester_own = {"stdout", "stderr", "runpytest-0", "runpytest-current"}
    assert created - pytester_own <= {"__pycache__", ".hypothesis", ".benchmarks"}, created  # plugins' own, ignored
    assert list((Path(os.environ["XDG_CACHE_HOME"]) / "kernelgen" / "generations").glob("*.json"))


@pytest.mark.parametrize("requested, environment, mode", [
    (None, {}, "off"),  # nothing asked for, no key: nothing written
    (None, {"WANDB_MODE": "disabled", "WANDB_API_KEY": "k" * 40}, "off"),
    (None, {"WANDB_MODE": "offline"}, "offline"),
    (None, {"WANDB_API_KEY": "k" * 40}, "online"),
    ("offline", {"WANDB_MODE": "disabled"}, "offline"),  # the command line wins
    ("off", {"WANDB_API_KEY": "k" * 40}, "off"),
])
def test_wandb_is_off_unless_asked_for(requested: str | None, environment: dict[str, str], mode: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("WANDB_MODE", "WANDB_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert resolve_mode(requested) == (mode, None)


def test_the_caches_live_under_the_users_cache_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from kernelgen.gpu.compile import cache_directory
    from kernelgen.env import generation_cache_dir

    monkeypatch.delenv("KERNELGEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert generation_cache_dir() == Path.home() / ".cache" / "kernelgen" / "generations"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_directory() == tmp_path / "xdg" / "kernelgen" / "compile"
    monkeypatch.setenv("KERNELGEN_CACHE_DIR", str(tmp_path / "kg"))
    assert (generation_cache_dir(), cache_directory()) == (tmp_path / "kg" / "generations", tmp_path / "kg" / "compile")


TIMED_CASE = """
from kernelgen.harness.plugin import report_case
from kernelgen.task.results import CaseResult, Timing


def test_timed(request):
    timing = Timing(sizes={"N": 4}, kernel_ms=1.0, eager_ms=2.0, speedup=2.0, gbps=1.0, tflops=0.1,
                    roofline_fraction=0.5)
    report_case(request, CaseResult(task="relu", tier="easy", provider="reference", model="golden", outcome="ok",
                                    mode="gpu", target="sm_90", timing=timing,
                                    extra={"kernel_times_ms": [1.0, 1.1, 0.9]}))
"""


@pytest.mark.parametrize("args", [[], ["-p", "no:benchmark"]], ids=["benchmark", "no-benchmark"])
def test_a_timed_case_passes_with_or_without_pytest_benchmark(project: pytest.Pytester, args: list[str]) -> None:
    """Its times go to pytest-benchmark's table where that plugin runs, and nowhere else (the
    H200 run with -p no:benchmark failed every timed case on the missing fixture)."""
    (project.path / "easy" / "test_timed.py").write_text(TIMED_CASE)
    result = project.runpytest_subprocess("easy/test_timed.py", *args)
    result.assert_outcomes(passed=1)


def test_the_baseline_without_its_sandbox_is_one_usage_line(project: pytest.Pytester,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Where bubblewrap cannot run, a run that selects baseline cases stops before any case;
    the pipeline alone does not need it."""
    from kernelgen.baseline import wall

    monkeypatch.setattr(wall, "find_wall", lambda: "bubblewrap (bwrap) is not installed: apt-get install -y bubblewrap")
    line = usage_line(project.runpytest_inprocess("-m", "easy and ablation", "--import-mode=importlib"))
    assert line.startswith("the baseline runs model code only inside its sandbox, and bubblewrap (bwrap) is not "
                           "installed") and line.endswith("--unsafe-sandbox runs it without one)")
    collected = project.runpytest_inprocess("-m", "easy", "--collect-only", "-q", "--import-mode=importlib")
    assert collected.ret == pytest.ExitCode.OK
    unsafe = project.runpytest_inprocess("-m", "easy and ablation", "--collect-only", "-q", "--unsafe-sandbox",
                                         "--import-mode=importlib")
    assert unsafe.ret == pytest.ExitCode.OK
    assert "WARNING: the raw-LLM baseline runs model code WITHOUT its operating-system sandbox" in unsafe.stdout.str()


def test_the_baseline_without_its_sandbox_under_xdist_is_one_line_too(project: pytest.Pytester,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    """Under ``-n 2`` the check runs in the workers, where a usage error at the end of collection
    reached the controller as an INTERNALERROR naming a case and hid the line (a fresh machine
    without bubblewrap, 2026-12-03). The workers now leave every case out and stop with the line."""
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it (workers start from sys.executable)
    result = project.runpytest_subprocess("-m", "easy and ablation", "-n", "2", "-p", "no:randomly")
    out = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out, out
    assert ("Interrupted: ERROR: the baseline runs model code only inside its sandbox, and bubblewrap (bwrap) "
            "is not installed") in out, out
    assert "no tests ran" in out and result.ret == pytest.ExitCode.INTERRUPTED, out
    # A run whose -m or -k leaves the baseline's cases out needs no sandbox, under xdist too: the
    # workers look after pytest has deselected (a review found -m "... and not ablation" stopped);
    # one worker each (a worker looks as each of several would; each costs an import of torch).
    for args in (["-m", "easy and not baseline", "-k", "hardtanh"], ["-k", "test_pipeline and hardtanh"]):
        result = project.runpytest_subprocess(*args, "-n", "1", "-p", "no:randomly")
        out = result.stdout.str() + result.stderr.str()
        assert "Interrupted" not in out, out
        result.assert_outcomes(passed=1)
