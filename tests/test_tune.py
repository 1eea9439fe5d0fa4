"""Autotuning (kernelgen.gpu.tune): the search space from golden kernels, pruning by the checker,
by threads and by the shared-memory limit (compiled for sm_90: no GPU needed), the fallback when
the fastest configuration fails verification (verified by the CPU interpreter through the
selection's verify parameter), the choice cache, ``kernelgen tune`` and the options; on a GPU,
the benchmark's tune stage and the torch.compile baseline."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from kernelgen.lang import nodes as L
from kernelgen.cli import main as cli_main
from kernelgen.errors import Diagnostic, WrongResult
from kernelgen.lang.parse import kernel_from_obj, kernel_to_json
from kernelgen.harness.pipeline import verify_cpu
from kernelgen.task.results import CaseResult, Timing, Tuning
from kernelgen.task.spec import get_task
from kernelgen.gpu.tune import (FULL_MAX, QUICK_MAX, Candidate, Choice, Config, Timed, TuneCache, prune, search,
                            search_space, select, shared_memory_problem, size_bucket, tune)

ROOT = Path(__file__).resolve().parent.parent


def golden(task_id: str):
    return get_task(task_id).golden


def with_meta(config: Config, **values: int) -> Config:
    return Config(tuple((k, values.get(k, v)) for k, v in config.meta), config.num_warps, config.num_stages)


def relu_fixed_grid():
    """relu whose grid is ``cdiv(N, 1024)`` whatever BLOCK is: with BLOCK=512 it leaves half of
    each 1024 elements unwritten, wrong for N > 512 and right below."""
    kernel = golden("relu")
    return type(kernel).model_validate({**json.loads(kernel_to_json(kernel)),
                                        "grid": [{"op": "cdiv", "lhs": "N", "rhs": 1024}]})


# -- the search space -------------------------------------------------------------------------


def test_quick_varies_one_coordinate_at_a_time_around_the_matmul_as_written() -> None:
    kernel = golden("matmul_f16")
    # A meta value that is not a power of two (a loop count, a split) is no block dim: kept as written.
    kernel = kernel.model_copy(update={"meta": [*kernel.meta, L.Meta(name="ROUNDS", value=3)]})
    space = search_space(kernel, "quick")
    base = Config.as_written(kernel)
    assert space[0] == base == Config((("BLOCK_M", 128), ("BLOCK_N", 256), ("BLOCK_K", 64), ("GROUP_M", 8),
                                       ("ROUNDS", 3)), 8, 3)
    assert len(space) == len(set(space)) <= QUICK_MAX
    for name, value in base.meta:
        if name == "ROUNDS":
            assert {dict(c.meta)[name] for c in space} == {value}
            continue
        assert with_meta(base, **{name: value // 2}) in space and with_meta(base, **{name: value * 2}) in space
    assert {c.num_warps for c in space} == {2, 4, 8, 16} and {c.num_stages for c in space} == {1, 2, 3, 4, 5}
    for config in space[1:]:  # each differs from the as-written one in one coordinate, or in one
        # block dim and num_warps scaled by the same factor (the same elements per thread)
        metas = [(dict(base.meta)[name], value) for name, value in config.meta if dict(base.meta)[name] != value]
        changed = len(metas) + (config.num_warps != base.num_warps) + (config.num_stages != base.num_stages)
        joint = len(metas) == 1 and config.num_warps * metas[0][0] == base.num_warps * metas[0][1] \
            and config.num_stages == base.num_stages
        assert changed == 1 or joint, config
    assert with_meta(base, BLOCK_M=64).__class__(with_meta(base, BLOCK_M=64).meta, 4, 3) in space


def test_the_as_written_configuration_has_the_kernels_own_num_stages() -> None:
    kernel = golden("matmul_f16").model_copy(update={"num_stages": 4})
    space = search_space(kernel, "quick")
    assert space[0] == Config.as_written(kernel) and space[0].num_stages == 4
    assert {c.num_stages for c in space} == {1, 2, 3, 4, 5}


def test_full_is_the_product_nearest_first_capped() -> None:
    kernel = golden("softmax_f16")
    space = search_space(kernel, "full")
    base = Config.as_written(kernel)
    (name, value), = base.meta
    assert space[0] == base and len(space) == len(set(space)) <= FULL_MAX
    assert {dict(c.meta)[name] for c in space} == {value // 2, value, value * 2, value * 4}
    assert len(space) == 4 * 4 * 5
    matmul = search_space(golden("matmul_f16"), "full")
    assert len(matmul) == FULL_MAX and matmul[0] == Config.as_written(golden("matmul_f16"))
    assert search_space(kernel, "off") == [base]


def test_a_meta_value_that_is_not_a_power_of_two_stays_as_written() -> None:
    kernel = golden("relu")
    odd = kernel.model_validate({**json.loads(kernel_to_json(kernel)),
                                 "meta": [{"name": "BLOCK", "value": 1024}, {"name": "GROUP", "value": 6}]})
    assert {dict(c.meta)["GROUP"] for mode in ("quick", "full") for c in search_space(odd, mode)} == {6}


def test_a_bad_mode_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="mode takes off, quick, full, not 'fast'"):
        search_space(golden("relu"), "fast")


# -- pruning ----------------------------------------------------------------------------------


def test_the_checker_and_the_thread_count_prune_before_compiling() -> None:
    kernel = golden("rope_bf16")
    base = Config.as_written(kernel)
    tiny = Config(base.meta, 16, 3)
    tiny = with_meta(tiny, BLOCK_H=1)
    odd = with_meta(base, BLOCK_H=24)  # a block dim must be a power of two
    kept, pruned = prune(kernel, [base, tiny, odd])
    assert [c.config for c in kept] == [base]
    reasons = {p.config: p.reason for p in pruned}
    assert "fewer than 512 threads" in reasons[tiny]
    assert reasons[odd].startswith("checker: ")
    assert len(prune(kernel, search_space(kernel, "full"))[1]) > 0


def test_the_shared_memory_limit_prunes_after_compiling_for_sm_90() -> None:
    """On the examples' tiled matmul: the golden one's persistent TMA loop at 256 x 256 x 256
    took ptxas 80 s to refuse."""
    kernel = kernel_from_obj(json.loads((ROOT / "examples" / "matmul.json").read_text()))
    huge = Config((("BLOCK_M", 256), ("BLOCK_N", 256), ("BLOCK_K", 256)), 8, 3)  # 768 KB
    timed, pruned = search(kernel, "quick", "sm_90", None, workers=1, space=[huge])
    assert timed == [] and len(pruned) == 1 and pruned[0].config == huge
    assert "exceeds sm_90's 227 KB" in pruned[0].reason


def test_shared_memory_limits_per_target() -> None:
    metadata = {"shared": 120 * 1024}
    assert shared_memory_problem(metadata, "sm_90") is None and shared_memory_problem(metadata, "sm_80") is None
    assert shared_memory_problem(metadata, "sm_86") == "shared memory 120 KB exceeds sm_86's 99 KB"
    assert shared_memory_problem({"shared": 200 * 1024}, "sm_80") == "shared memory 200 KB exceeds sm_80's 163 KB"


# -- choosing: the fallback when the fastest is wrong ----------------------------------------------


def interpreter_verify(task_id: str, sizes: list[dict[str, int]]):
    """The pipeline's CPU verification on each assignment, as ``select``'s verify."""
    task = get_task(task_id)
    return lambda candidate: [verify_cpu(task, candidate.checked, s, 0) for s in sizes]


def test_the_fastest_config_failing_verification_is_dropped_for_the_next() -> None:
    kernel = relu_fixed_grid()
    base = Config.as_written(kernel)
    wrong, warps = with_meta(base, BLOCK=512), Config(base.meta, 8, 3)
    timed = [Timed(wrong, 0.5), Timed(warps, 0.8), Timed(base, 1.0)]
    chosen, failed = select(kernel, timed, interpreter_verify("relu", [{"N": 100}, {"N": 3000}]))
    assert chosen == Timed(warps, 0.8)
    assert [f.config for f in failed] == [wrong] and failed[0].reason.startswith("wrong_result: ")


def test_a_config_within_the_noise_of_the_as_written_one_does_not_replace_it() -> None:
    kernel = relu_fixed_grid()
    base = Config.as_written(kernel)
    warps = Config(base.meta, 8, 3)
    accept = lambda candidate: None  # noqa: E731 - every candidate is correct here
    chosen, _ = select(kernel, [Timed(warps, 0.99), Timed(base, 1.0)], accept)
    assert chosen == Timed(base, 1.0)
    chosen, _ = select(kernel, [Timed(warps, 0.9), Timed(base, 1.0)], accept)
    assert chosen == Timed(warps, 0.9)


def test_the_as_written_config_remains_when_every_faster_one_fails() -> None:
    kernel = relu_fixed_grid()
    base = Config.as_written(kernel)
    wrong = with_meta(base, BLOCK=256)

    def reject(candidate: Candidate) -> None:
        raise WrongResult([Diagnostic("/outputs/0", "mismatch", "y differs at index 600")])

    chosen, failed = select(kernel, [Timed(wrong, 0.1), Timed(base, 1.0)], reject)
    assert chosen == Timed(base, 1.0) and [f.config for f in failed] == [wrong]
    nothing, _ = select(kernel, [], reject)
    assert nothing.config == base and math.isnan(nothing.kernel_ms)


def test_tune_compiles_times_and_falls_back_past_a_wrong_config() -> None:
    """The whole search on CPU: every candidate compiled for sm_90, a time per candidate that
    favours small blocks (so the wrong BLOCK=512 comes first), the interpreter verifying."""
    kernel = relu_fixed_grid()
    base = Config.as_written(kernel)

    def time_fn(candidate: Candidate, compiled) -> float:
        assert compiled.target == "sm_90" and compiled.metadata["num_warps"] == candidate.config.num_warps
        return dict(candidate.config.meta)["BLOCK"] / 1024 + candidate.config.num_stages / 10

    choice = tune(kernel, "quick", "sm_90", time_fn, interpreter_verify("relu", [{"N": 3000}]), workers=1)
    # both BLOCK=512 candidates (alone, and with half the warps) leave elements unwritten
    assert [f.config for f in choice.failed] == [with_meta(base, BLOCK=512), Config((("BLOCK", 512),), 2, 3)]
    assert choice.config == Config(base.meta, base.num_warps, 1) and choice.as_written_ms == pytest.approx(1.3)
    assert len(choice.timed) == len(search_space(kernel, "quick")) and choice.seconds > 0
    record = Tuning(**choice.record("quick"))
    assert record.speedup_vs_as_written == pytest.approx(1.3 / 1.1) and record.failed[0].startswith("BLOCK=512")


def test_equal_times_keep_the_search_spaces_order_whatever_order_compiles_finish(monkeypatch) -> None:
    """Compiles finish in any order on a loaded machine; a tie must not go to whichever
    finished first (the fallback past a wrong config would then differ from run to run)."""
    import kernelgen.gpu.tune as tune_module

    kernel = relu_fixed_grid()
    real = tune_module.compile_candidates

    def finishing_last_first(candidates, *args, **kwargs):
        return reversed(list(real(candidates, *args, **kwargs)))

    monkeypatch.setattr(tune_module, "compile_candidates", finishing_last_first)
    timed, _ = search(kernel, "quick", "sm_90", lambda candidate, compiled: 1.0, workers=1)
    assert [t.config for t in timed] == search_space(kernel, "quick")


# -- the cache ------------------------------------------------------------------------------


def test_the_cache_keys_on_kernel_gpu_size_bucket_and_mode(tmp_path) -> None:
    cache = TuneCache(tmp_path)
    kernel = golden("relu")
    base = Config.as_written(kernel)
    choice = Choice(Config(base.meta, 8, 2), 0.5, base, 0.7)
    assert cache.load(kernel, "NVIDIA H200", {"N": 4000}, "quick") is None
    cache.store(kernel, "NVIDIA H200", {"N": 4000}, "quick", choice)
    hit = cache.load(kernel, "NVIDIA H200", {"N": 3000}, "quick")  # the same bucket: N <= 4096
    assert hit is not None and hit.cached and (hit.config, hit.kernel_ms, hit.as_written_ms) == (choice.config, 0.5, 0.7)
    other_kernel = kernel.model_copy(update={"num_warps": 8})
    for key in [(kernel, "NVIDIA A100", {"N": 4000}, "quick"), (kernel, "NVIDIA H200", {"N": 5000}, "quick"),
                (kernel, "NVIDIA H200", {"N": 4000}, "full"), (other_kernel, "NVIDIA H200", {"N": 4000}, "quick")]:
        assert cache.load(*key) is None, key
    assert size_bucket({"N": 4097, "M": 1, "K": 64}) == "K=64,M=1,N=8192"


# -- the command and the options ------------------------------------------------------------------


def test_kernelgen_tune_on_cpu_prints_the_space_and_the_pruned(tmp_path, capsys) -> None:
    path = tmp_path / "relu.json"
    path.write_text(kernel_to_json(relu_fixed_grid()))
    assert cli_main(["tune", str(path), "--size", "N=4096", "--target", "sm_90", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "search space (quick): 12 configurations" in out and "  BLOCK=1024 warps=4 stages=3\n" in out
    assert "pruned for sm_90: 0 dropped (0 before compiling), 12 kept" in out
    assert "timing the 12 kept candidates needs a GPU and a task" in out


def test_kernelgen_tune_on_cpu_takes_a_kernel_with_scalars(tmp_path, capsys) -> None:
    # A float scalar (eps, an optional bound) does not decide which params are multiples of 16: it
    # needs no value; an integer scalar can, and is given like a size, or named in one clear error.
    for task_id, sizes in (("rmsnorm_rows", ["M=4096", "N=4096"]), ("clamp_optional", ["N=4096"])):
        path = tmp_path / f"{task_id}.json"
        path.write_text(kernel_to_json(golden(task_id)))
        args = ["tune", str(path), *(a for size in sizes for a in ("--size", size)), "--target", "sm_90", "--jobs", "1"]
        assert cli_main(args) == 0, task_id
        assert "pruned for sm_90:" in capsys.readouterr().out
    path = tmp_path / "dropout.json"
    path.write_text(kernel_to_json(golden("dropout_residual_layernorm")))
    args = ["tune", str(path), "--size", "M=64", "--size", "N=64", "--target", "sm_90", "--jobs", "1"]
    assert cli_main(args) == 2
    assert "takes the integer scalar seed: give it with --size NAME=VALUE" in capsys.readouterr().err
    assert cli_main([*args, "--size", "seed=7"]) == 0


def test_kernelgen_tune_on_cpu_prunes_each_call_of_a_task(tmp_path, capsys) -> None:
    # A task with calls is tuned call by call: with --task the listing prunes each call's bucket
    # (its dtype binding, presence flags, sizes), as the benchmark does; without it, a generic
    # kernel's listing says which binding it compiled.
    task = get_task("clamp_optional")
    path = tmp_path / "clamp.json"
    path.write_text(kernel_to_json(task.golden))
    args = ["tune", str(path), "--size", "N=4096", "--target", "sm_90", "--jobs", "1", "--mode", "quick"]
    assert cli_main([*args, "--task", "clamp_optional"]) == 0
    out = capsys.readouterr().out
    calls = [line for line in out.splitlines() if line.startswith("call ")]
    assert [line.split()[1] for line in calls] == [v.name for v in task.variants]
    assert all("N=4096" in line and ": pruned for sm_90:" in line for line in calls), calls
    assert "timing each call's kept candidates needs a GPU" in out
    generic = tmp_path / "log1p.json"
    generic.write_text(kernel_to_json(golden("log1p_generic")))
    assert cli_main(["tune", str(generic), "--size", "N=4096", "--target", "sm_90", "--jobs", "1"]) == 0
    assert "log1p_generic is generic: compiled with its first dtype binding (" in capsys.readouterr().out


def bench_relu(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "bench/easy/test_easy.py::test_pipeline[relu]", "-q",
                           "-p", "no:cacheprovider", "--kg-mode", "cpu", "--kg-shapes", "1", "--wandb", "off", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_a_bad_kg_tune_or_kg_compiled_is_a_usage_error() -> None:
    run = bench_relu("--kg-tune", "fast")
    assert run.returncode == 4 and "--kg-tune fast: takes off, quick, full" in run.stderr
    run = bench_relu("--kg-compiled", "yes")
    assert run.returncode == 4 and "--kg-compiled yes: takes on, off" in run.stderr


def test_kg_tune_in_cpu_mode_is_a_no_op_that_says_so_once() -> None:
    run = bench_relu("--kg-tune", "full")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count("--kg-tune full: a no-op in CPU mode") == 1


# -- the summary ----------------------------------------------------------------------------------


def timed_case(task: str, eager: float, kernel: float, as_written: float | None, compiled: float | None) -> CaseResult:
    timing = Timing(sizes={}, kernel_ms=kernel, eager_ms=eager, speedup=eager / kernel, gbps=1.0, tflops=1.0,
                    roofline_fraction=0.5, compiled_ms=compiled,
                    speedup_vs_compiled=compiled / kernel if compiled else None)
    tuning = None if as_written is None else Tuning(mode="quick", config={}, as_written={}, kernel_ms=kernel,
                                                    as_written_ms=as_written, seconds=4.0)
    return CaseResult(task=task, tier="hard", provider="reference", model="golden", outcome="ok", mode="gpu",
                      target="sm_90", timing=timing, tuning=tuning,
                      extra={} if compiled else {"torch_compile": {"error": "default: RuntimeError: boom"}})


def test_the_summary_shows_as_written_tuned_compiled_and_tuning_time() -> None:
    from kernelgen.harness.plugin import summarize

    cases = [timed_case("a", 1.0, 0.5, 1.0, 1.0), timed_case("b", 1.0, 2.0, None, None)]
    lines = summarize(cases)
    line = next(line for line in lines if line.startswith("pipeline hard: "))
    # as written: 1x and 0.5x -> 0.71x; tuned: 2x and 0.5x -> 1x; vs torch.compile: 2x over 1 (a);
    # vs the faster of the two: a 2x (both 1 ms), b 0.5x (eager: torch.compile failed)
    assert line == ("pipeline hard: geomean vs eager as written 0.71x, tuned 1.00x over 2 cases; "
                    "vs torch.compile 2.00x over 1 (fast_1 100%); vs the faster of the two 1.00x (fast_1 50%); "
                    "tuning 4 s for 1 kernels (4.0 s each)")
    assert any(line.startswith("pipeline: torch.compile failed on b") for line in lines)


def test_the_choice_and_both_times_reach_the_results_file_allure_and_wandb() -> None:
    """Item 2: the chosen configuration, its time and the as-written time in each report."""
    from kernelgen.report.allure import describe as allure_describe, timings
    from kernelgen.report.wandb_run import TABLE_COLUMNS, case_metrics, run_scores, table_row

    case = timed_case("a", 1.0, 0.5, 1.0, 1.0).model_copy(update={"tuning": Tuning(
        mode="quick", config={"meta": {"BLOCK": 2048}, "num_warps": 8, "num_stages": 2},
        as_written={"meta": {"BLOCK": 1024}, "num_warps": 4, "num_stages": 3}, kernel_ms=0.5, as_written_ms=1.0,
        candidates=9, pruned=1, seconds=4.0)})
    case = case.model_copy(update={"extra": {"torch_compile": {"mode": "default", "compile_s": 12.0}}})
    again = CaseResult.model_validate_json(case.model_dump_json())
    assert again.tuning == case.tuning and again.tuning.speedup_vs_as_written is None  # as recorded
    text = allure_describe(case)
    assert "**tuned** (quick): {'meta': {'BLOCK': 2048}, 'num_warps': 8, 'num_stages': 2} at 0.5000 ms; " \
           "as written {'meta': {'BLOCK': 1024}, 'num_warps': 4, 'num_stages': 3} at 1.0000 ms; 9 timed, 1 pruned" in text
    assert "**speedup over torch.compile** (default): 2.00x" in text and "compiling took 12.0 s" in text
    assert timings(case)["tuning"]["as_written_ms"] == 1.0
    metrics = case_metrics(case)
    assert (metrics["case/as_written_ms"], metrics["case/tuned_kernel_ms"], metrics["case/tuning_s"]) == (1.0, 0.5, 4.0)
    row = dict(zip(TABLE_COLUMNS, table_row(case)))
    assert json.loads(row["tuned_config"])["meta"] == {"BLOCK": 2048} and row["as_written_ms"] == 1.0
    scores = run_scores([case])
    assert scores["hard/geomean_speedup_as_written"] == pytest.approx(1.0) and scores["hard/geomean_speedup"] == 2.0
    assert scores["hard/tuning_s"] == 4.0 and scores["hard/geomean_speedup_vs_compiled"] == pytest.approx(2.0)
    failed = timed_case("b", 1.0, 2.0, None, None)
    assert "**torch.compile failed**: default: RuntimeError: boom" in allure_describe(failed)


def test_a_timing_records_every_repetition_and_torch_compiles_mode_and_compile_time_or_why_it_failed() -> None:
    from kernelgen.gpu.case import record_times

    extra: dict = {}
    log = ["Best config for triton_red_fused_var_0: XBLOCK: 2, R0_BLOCK: 512, num_warps: 2: 0.022"]
    record_times(extra, {"compiled_ms": [0.1, 0.3], "compiled_mode": "max-autotune-no-cudagraphs",
                         "compile_s": 31.5, "compiled_autotune": log, "kernel_ms": [0.2], "eager_ms": [0.4, 0.5]})
    assert extra == {"kernel_times_ms": [0.2], "eager_times_ms": [0.4, 0.5],
                     "torch_compile": {"mode": "max-autotune-no-cudagraphs", "compile_s": 31.5, "times_ms": [0.1, 0.3],
                                       "autotune": log}}
    extra = {}
    record_times(extra, {"compiled_error": "max-autotune-no-cudagraphs: X; default: Y", "kernel_ms": [0.2]})
    assert extra["torch_compile"] == {"error": "max-autotune-no-cudagraphs: X; default: Y"}
    extra = {}
    record_times(extra, {"kernel_ms": [0.2], "eager_ms": [0.3]})  # --kg-compiled off: nothing said of it
    assert "torch_compile" not in extra


# -- on a GPU -------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("task_id", ["matmul_f16", "softmax_f16"])
def test_golden_kernels_tune_and_time_against_torch_compile(task_id: str, tmp_path, monkeypatch) -> None:
    from kernelgen.gpu.devices import executor_env, worker_gpu
    from kernelgen.gpu.executor import Executor
    from kernelgen.harness.pipeline import Settings, evaluate_answer

    monkeypatch.setenv("KERNELGEN_CACHE_DIR", str(tmp_path))  # a cold tuning cache, as the budget assumes
    task = get_task(task_id)
    with Executor(env=executor_env(worker_gpu())) as executor:
        settings = Settings(target="sm_90", gpu=True, executor=executor, tune="quick", torch_compile=True, shapes=3)
        result = evaluate_answer(task, kernel_to_json(task.golden), settings)
        assert result.ok, result.diagnostics
        tuning = result.tuning
        assert tuning is not None and not tuning.cached and tuning.candidates >= 2 and tuning.seconds < 60
        assert tuning.as_written_ms is not None and result.timing.kernel_ms <= 1.2 * tuning.as_written_ms
        assert result.timing.compiled_ms is not None or "error" in result.extra["torch_compile"]
        again = evaluate_answer(task, kernel_to_json(task.golden), dataclasses.replace(settings, torch_compile=False))
    assert again.tuning.cached and again.tuning.config == tuning.config
