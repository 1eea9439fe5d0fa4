"""The track's pytest plugin end to end, in a pytest subprocess of its own (CPU mode): a small
checkout in the official layout (two operators of the sample), and no checkout at all."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / ".." / "shared" / "tritonbench-t-sample"
CASE = "from kernelgen.tritonbench.pytest_plugin import run_tritonbench_case as test_tritonbench  # noqa: F401\n"


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.delenv("KERNELGEN_TRITONBENCH_ROOT", raising=False)
    pytester.makeconftest('pytest_plugins = ["kernelgen.harness.plugin"]\n')
    pytester.makeini("[pytest]\naddopts = --strict-markers\nmarkers =\n    tritonbench: t\n    pipeline: p\n")
    pytester.makepyfile(test_track=CASE)
    return pytester


def small_checkout(directory: Path, names: list[str]) -> Path:
    """The sample cut down to ``names``, files and JSON arrays alike."""
    if not (SAMPLE / "data").is_dir():
        pytest.skip(f"the TritonBench-T sample is not at {SAMPLE.resolve()}")
    records = json.loads((SAMPLE / "data" / "TritonBench_T_v1.jsonl").read_text())
    kept = [r for r in records if r["file"].removesuffix(".py") in names]
    (directory / "data" / "TritonBench_T_v1").mkdir(parents=True)
    (directory / "data" / "TritonBench_T_v1.jsonl").write_text(json.dumps(kept))
    for kind in ("simp", "comp"):
        prompts = json.loads((SAMPLE / "data" / f"TritonBench_T_{kind}_alpac_v1.json").read_text())
        wanted = [p for p in prompts if any(p["instruction"].split("Functional Description: ")[-1]
                                            .split("Wrapper Entry Information:")[0].replace("\n", "")
                                            in r["description"].replace("\n", "") for r in kept)]
        (directory / "data" / f"TritonBench_T_{kind}_alpac_v1.json").write_text(json.dumps(wanted))
    perf, perf_copy = SAMPLE / "performance_metrics" / "perf_T", directory / "performance_metrics" / "perf_T"
    for part in ("golden_metrics", "golden_results"):
        (perf_copy / part).mkdir(parents=True)
    for name in names:
        shutil.copy(SAMPLE / "data" / "TritonBench_T_v1" / f"{name}.py", directory / "data" / "TritonBench_T_v1")
        shutil.copy(perf / "golden_metrics" / f"{name}_perf.py", perf_copy / "golden_metrics")
        shutil.copy(perf / "golden_results" / f"{name}.json", perf_copy / "golden_results")
    return directory


def test_a_checkout_runs_one_case_per_operator_with_the_summary(project: pytest.Pytester,
                                                                 monkeypatch: pytest.MonkeyPatch):
    root = small_checkout(project.path / "checkout", ["sub", "matmul", "mul_sub"])
    # A bench folder whose goldens lack mul_sub: an operator without a golden fails, unsupported.
    goldens = project.path / "bench" / "tritonbench" / "golden"
    goldens.mkdir(parents=True)
    for name in ("sub", "matmul"):
        shutil.copy(REPO / "bench" / "tritonbench" / "golden" / f"{name}.json", goldens)
    monkeypatch.setenv("KERNELGEN_BENCH_DIR", str(project.path / "bench"))
    result = project.runpytest_subprocess("--tritonbench-root", str(root), "--kg-mode", "cpu", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*kernelgen tritonbench*",
                                 "call accuracy:      2/3 (66.7%)",
                                 "execution accuracy: 2/3 (66.7%)",
                                 "unsupported by the language (1, counted as failures): mul_sub"])


def test_without_a_checkout_the_cases_skip_and_say_why(project: pytest.Pytester):
    result = project.runpytest_subprocess("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*no TritonBench checkout: pass --tritonbench-root PATH or set "
                                 "KERNELGEN_TRITONBENCH_ROOT*"])


def test_kg_tune_in_cpu_mode_is_a_no_op_that_the_track_says_once(project: pytest.Pytester):
    root = small_checkout(project.path / "checkout", ["relu"])
    result = project.runpytest_subprocess("--tritonbench-root", str(root), "--kg-mode", "cpu", "--kg-tune", "quick",
                                          "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    notice = "kernelgen: --kg-tune quick: a no-op in CPU mode (tuning times kernels on a GPU)"
    assert result.outlines.count(notice) == 1
    assert not any(line.startswith("tuning") for line in result.outlines)  # no tuning lines in the summary
