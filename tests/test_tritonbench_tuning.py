"""Autotuning in the TritonBench-T track (kernelgen.tritonbench.tuning): perf calls bucketed as
the tuning cache buckets sizes, the wrapper choosing its bucket's configuration per call, the
main track's search space and selection reused per bucket, the fallback past a configuration
that fails verification (verified by the CPU interpreter on the operator's test and perf calls),
the cache's keys, as-written vs tuned in the results and the summary, and CPU mode a no-op that
says so; on a GPU, one sample operator tuned end to end."""

from __future__ import annotations

import json
import math

import pytest
import torch
from golden_edits import pinned

from kernelgen.errors import Diagnostic, WrongResult
from kernelgen.lang.parse import parse_kernel
from kernelgen.harness.pipeline import Settings
from kernelgen.model.providers import make_provider
from kernelgen.task.results import CaseResult
from kernelgen.tritonbench.evaluate import evaluate_operator, track_summary
from kernelgen.tritonbench.goldens import golden_answer
from kernelgen.tritonbench.perf_script import PerfCase, PerfTensor
from kernelgen.gpu.function import KernelFunction, wrapper
from kernelgen.tritonbench.speedup import PerfPoint, SpeedupResult
from kernelgen.tritonbench.tuning import (OperatorTuning, PerfBucket, cpu_verify, make_verify, perf_buckets,
                                          tune_operator)
from kernelgen.gpu.tune import (NO_VARIANT, Candidate, Choice, Config, Timed, TuneCache, Variant, bucket_label,
                            cached_tune, kernel_hash, search_space, size_bucket)


def fixed_grid_relu() -> str:
    """relu whose grid is ``cdiv(N, 1024)`` whatever BLOCK is: with BLOCK=512 it leaves half of
    each 1024 elements unwritten, so wrong for N > 512 (the perf calls), right below (the
    operator's test calls have 3 to 6 elements)."""
    golden = json.loads(golden_answer("relu"))
    golden["grid"] = [{"op": "cdiv", "lhs": "N", "rhs": 1024}]
    return json.dumps(golden)


def with_cases(operator, *shapes: int):
    """The operator with perf calls on float32 vectors of ``shapes`` instead of its own."""
    cases = [PerfCase(args=[PerfTensor(shape=[n], dtype="float32")]) for n in shapes]
    return operator.model_copy(update={"perf": operator.perf.model_copy(update={"cases": cases})})


def block(config: Config) -> int:
    return dict(config.meta)["BLOCK"]


# -- buckets ------------------------------------------------------------------------------------


def test_perf_calls_bucket_by_sizes_rounded_up_to_powers_of_two_as_the_cache_does(sample):
    relu = parse_kernel(golden_answer("relu"))
    operator = with_cases(sample.operator("relu"), 3000, 4096, 4097, 2, 5000)
    buckets, problems = perf_buckets(operator, relu)
    assert problems == []
    assert [(b.label, b.cases) for b in buckets] == [("N=4096", (0, 1)), ("N=8192", (2, 4)), ("N=2", (3,))]
    assert all(b.label == size_bucket(b.sizes) and b.variant == NO_VARIANT for b in buckets)
    assert buckets[0].sizes == {"N": 3000} and buckets[0].divisible == ()  # the first call's: 3000 % 16 != 0
    own, _ = perf_buckets(sample.operator("relu"), relu)  # the sample's 16 powers of two: one bucket each
    assert [b.label for b in own] == [f"N={1 << k}" for k in range(12, 28)]
    assert all(b.divisible == ("N",) for b in own)


def test_a_bucket_holds_the_calls_variant_as_the_wrapper_sees_the_sizes(sample):
    buckets, _ = perf_buckets(sample.operator("add_gelu"), parse_kernel(golden_answer("add_gelu")))
    first = buckets[0]
    assert first.sizes == {"N": 4096}
    assert first.variant == Variant.of({"approximate": 0}, {"T": "f16"})
    assert first.label == "N=4096 approximate=0 T=f16"
    # log_softmax_linear's golden is a program (GEMM, then the softmax): bound and planned, never bucketed
    assert perf_buckets(sample.operator("log_softmax_linear"), parse_kernel(golden_answer("log_softmax_linear"))) == ([], [])
    # softmax's rows view: the perf script's [1024, N] input reduced along its last dim
    softmax, _ = perf_buckets(sample.operator("softmax"), parse_kernel(golden_answer("softmax")))
    assert softmax[0].label == "M=1024,N=16 T=f32"


def test_perf_calls_the_kernel_cannot_take_are_left_untuned_with_why(sample):
    only_i64 = pinned(golden_answer("max"), "i64")  # the test cases' dtype; the perf calls pass f32
    buckets, problems = perf_buckets(sample.operator("max"), parse_kernel(only_i64))
    assert buckets == [] and len(problems) == len(sample.operator("max").perf.cases)
    assert problems[0].path == "/perf/0" and problems[0].code == "bad_arguments"
    assert problems[0].message.startswith("float32[4096]: ") and "declared i64" in problems[0].message


# -- the wrapper ----------------------------------------------------------------------------------


def test_the_wrapper_runs_each_call_with_its_buckets_configuration():
    """On CPU tensors the interpreter runs the checked kernel with the chosen meta values: the
    fixed-grid relu is wrong exactly where a BLOCK=512 configuration applies."""
    kernel = parse_kernel(fixed_grid_relu())
    half = Config((("BLOCK", 512),), 4, 3)
    function = KernelFunction(kernel, {"N=4096": half})
    x, y = torch.randn(3000), torch.randn(5000)
    assert torch.isnan(function(x)).any()  # 3000 is in bucket N=4096: BLOCK=512 leaves elements unwritten
    torch.testing.assert_close(function(y), torch.relu(y))  # bucket N=8192 is untuned: as written
    assert set(function._checked) == {((("BLOCK", 512),), ()), ((), ())}
    forced = KernelFunction(kernel, force=Config((("BLOCK", 2048),), 8, 2))
    torch.testing.assert_close(forced(y), torch.relu(y))
    assert list(forced._checked) == [((("BLOCK", 2048),), ())]


# -- tuning an operator -------------------------------------------------------------------------


def favour_small_blocks(calls: list):
    """A model of time (no GPU here): smaller blocks and fewer stages are faster, larger sizes
    slower; each call is recorded."""
    def time_perf(bucket: PerfBucket, candidate: Candidate) -> float:
        calls.append((bucket.label, candidate.config))
        return bucket.sizes["N"] / 4096 * (block(candidate.config) / 1024 + candidate.config.num_stages / 10)
    return time_perf


def test_each_bucket_searches_the_kernels_own_space_and_falls_back_past_a_wrong_config(sample, tmp_path):
    operator = with_cases(sample.operator("relu"), 4096, 8192)
    answer = fixed_grid_relu()
    kernel = parse_kernel(answer)
    base = Config.as_written(kernel)
    calls: list = []
    tuning = tune_operator(operator, answer, "quick", "sm_90", "NVIDIA H200", favour_small_blocks(calls),
                           cpu_verify(operator, answer, 0), TuneCache(tmp_path), workers=1)
    assert [b.label for b, _ in tuning.choices] == ["N=4096", "N=8192"]
    space = search_space(kernel, "quick")
    for bucket, choice in tuning.choices:
        # the main track's search space, every candidate timed at this bucket
        assert sorted(t.config for t in choice.timed) == sorted(space)
        assert sorted(c for label, c in calls if label == bucket.label) == sorted(space)
        # BLOCK=512 timed fastest, passed the test calls (3 to 6 elements), failed the perf call
        assert [f.config for f in choice.failed] == [Config((("BLOCK", 512),), 4, 3), Config((("BLOCK", 512),), 2, 3)]
        assert choice.failed[0].reason.startswith("wrong_result: ")
        assert choice.config == Config(base.meta, base.num_warps, 1) and not choice.cached
    assert tuning.configs() == {"N=4096": Config(base.meta, 4, 1), "N=8192": Config(base.meta, 4, 1)}
    record = tuning.record()
    assert record["mode"] == "quick" and [b["bucket"] for b in record["buckets"]] == ["N=4096", "N=8192"]
    assert record["buckets"][0]["config"] == {"meta": {"BLOCK": 1024}, "num_warps": 4, "num_stages": 1}
    assert record["buckets"][0]["as_written_ms"] == pytest.approx(1.3)
    assert record["buckets"][0]["kernel_ms"] == pytest.approx(1.1) and record["buckets"][1]["kernel_ms"] == pytest.approx(2.2)
    assert "failed verification  BLOCK=512" in "\n".join(tuning.lines())

    # Again with the same cache: no search, the cached non-as-written choice verified again.
    calls.clear()
    verified: list = []
    real = cpu_verify(operator, answer, 0)

    def counting(bucket: PerfBucket, candidate: Candidate) -> None:
        verified.append((bucket.label, candidate.config))
        real(bucket, candidate)

    again = tune_operator(operator, answer, "quick", "sm_90", "NVIDIA H200", favour_small_blocks(calls), counting,
                          TuneCache(tmp_path), workers=1)
    assert calls == [] and all(choice.cached for _, choice in again.choices)
    assert again.configs() == tuning.configs() and verified == list(tuning.configs().items())
    # Another GPU: its own choices.
    other = tune_operator(operator, answer, "quick", "sm_90", "NVIDIA A100", favour_small_blocks(calls),
                          real, TuneCache(tmp_path), workers=1)
    assert not any(choice.cached for _, choice in other.choices) and calls


def test_a_bucket_where_nothing_could_be_timed_is_left_untuned_and_uncached(sample, tmp_path):
    from kernelgen.errors import KernelTimeout

    operator = with_cases(sample.operator("relu"), 4096, 8192)
    answer = golden_answer("relu")
    calls: list = []
    modelled = favour_small_blocks(calls)

    def time_perf(bucket: PerfBucket, candidate: Candidate) -> float:
        if bucket.label == "N=8192":
            raise KernelTimeout("timing took more than 120 s", code="timeout")
        return modelled(bucket, candidate)

    tuning = tune_operator(operator, answer, "quick", "sm_90", "NVIDIA H200", time_perf, cpu_verify(operator, answer, 0),
                           TuneCache(tmp_path), workers=1)
    assert [b.label for b, _ in tuning.choices] == ["N=4096"]
    assert [(d.path, d.code) for d in tuning.problems] == [("/perf/1", "not_timed")]
    assert "bucket N=8192: not tuned, no candidate was timed (timing: timeout)" in tuning.problems[0].message
    kernel = parse_kernel(answer)
    assert TuneCache(tmp_path).load(kernel, "NVIDIA H200", {"N": 8192}, "quick") is None
    assert TuneCache(tmp_path).load(kernel, "NVIDIA H200", {"N": 4096}, "quick") is not None
    assert tuning.record()["not_tuned"][0]["code"] == "not_timed"


def test_the_operators_test_calls_verify_a_candidate_once_per_configuration():
    tests: list = []
    agreed: list = []

    def accuracy(config: Config):
        from kernelgen.tritonbench.evaluate import Accuracy

        tests.append(config)
        return Accuracy(mismatches=[Diagnostic("/test_case_2", "mismatch", "differs")] if block(config) == 256 else [])

    def agreement(index: int, config: Config) -> list[Diagnostic]:
        agreed.append(index)
        return [Diagnostic("/0", "mismatch", "differs")] if block(config) == 2048 else []

    verify = make_verify(accuracy, agreement)
    bucket = PerfBucket("N=4096", {"N": 4096}, NO_VARIANT, ("N",), (3, 5))
    candidate = lambda value: Candidate(Config((("BLOCK", value),), 4, 3), None)  # noqa: E731
    verify(bucket, candidate(512))
    verify(bucket, candidate(512))
    assert tests == [Config((("BLOCK", 512),), 4, 3)] and agreed == [3, 5, 3, 5]
    with pytest.raises(WrongResult) as info:
        verify(bucket, candidate(256))
    assert info.value.diagnostics[0].path == "/test_case_2" and agreed == [3, 5, 3, 5]
    with pytest.raises(WrongResult) as info:
        verify(bucket, candidate(2048))
    assert info.value.diagnostics[0].path == "/perf/3/0"


def test_a_call_failure_of_the_test_keeps_its_outcome():
    from kernelgen.errors import Outcome
    from kernelgen.tritonbench.evaluate import Accuracy, CallFailure
    from kernelgen.tritonbench.tuning import accuracy_error

    failure = CallFailure(Outcome.LAUNCH_ERROR, "host", (Diagnostic("/inputs/0", "bad_arguments", "no"),))
    error = accuracy_error(Accuracy(call_failure=failure))
    assert (error.outcome, error.stage, error.code) == (Outcome.LAUNCH_ERROR, "host", "bad_arguments")
    assert accuracy_error(Accuracy()) is None


# -- the cache ------------------------------------------------------------------------------------


def test_the_cache_keys_a_variant_apart_and_keeps_a_tasks_keys(tmp_path):
    import hashlib

    cache = TuneCache(tmp_path)
    kernel = parse_kernel(golden_answer("gelu"))
    base = Config.as_written(kernel)
    exact, tanh = Variant.of({"approximate": 0}), Variant.of({"approximate": 1})
    cache.store(kernel, "NVIDIA H200", {"N": 4000}, "quick", Choice(Config(base.meta, 8, 2), 0.5, base, 0.7), exact)
    assert cache.load(kernel, "NVIDIA H200", {"N": 4096}, "quick", exact).config == Config(base.meta, 8, 2)
    assert cache.load(kernel, "NVIDIA H200", {"N": 4096}, "quick", tanh) is None
    assert cache.load(kernel, "NVIDIA H200", {"N": 4096}, "quick") is None
    plain = "\n".join([kernel_hash(kernel), "NVIDIA H200", "N=4096", "quick"])  # a task's key as before variants
    assert cache.key(kernel, "NVIDIA H200", {"N": 4096}, "quick") == hashlib.sha256(plain.encode()).hexdigest()
    assert bucket_label({"N": 4000}, exact) == "N=4096 approximate=0" and bucket_label({"N": 4000}) == "N=4096"


def test_a_cached_choice_that_no_longer_verifies_is_tuned_again(tmp_path):
    """Both tracks' cache: a stored choice is verified before use, and a fresh search replaces
    one that fails (here every candidate but the as-written one fails: it stays)."""
    kernel = parse_kernel(golden_answer("relu"))
    base = Config.as_written(kernel)
    stale = Config((("BLOCK", 2048),), 4, 3)
    cache = TuneCache(tmp_path)
    cache.store(kernel, "NVIDIA H200", {"N": 4096}, "quick", Choice(stale, 0.5, base, 1.0))
    timed: list = []

    def time_fn(candidate: Candidate, compiled) -> float:
        timed.append(candidate.config)
        return 0.5 if candidate.config != base else 1.0

    def reject_all_but_base(candidate: Candidate) -> None:
        raise WrongResult([Diagnostic("/outputs/0", "mismatch", "differs")])

    choice = cached_tune(cache, kernel, "NVIDIA H200", {"N": 4096}, "quick", "sm_90", time_fn,
                         reject_all_but_base, ("N",), workers=1)
    assert not choice.cached and choice.config == base and timed and stale in [f.config for f in choice.failed]
    assert cache.load(kernel, "NVIDIA H200", {"N": 4096}, "quick").config == base
    hit = cached_tune(cache, kernel, "NVIDIA H200", {"N": 4096}, "quick", "sm_90", time_fn, reject_all_but_base,
                      ("N",), workers=1)
    assert hit.cached and hit.config == base  # as written: not verified again, not searched


# -- results and summary ------------------------------------------------------------------------


def test_the_speedup_records_as_written_beside_tuned():
    result = SpeedupResult([PerfPoint("float32[4096]", 2.0, 1.0, 2.0), PerfPoint("float32[8192]", 4.0, 2.0, 2.0)])
    extra = result.to_extra()
    assert extra["speedup"] == pytest.approx(2.0) and extra["speedup_as_written"] == pytest.approx(math.sqrt(2.0))
    assert extra["perf"][0]["as_written_ms"] == 2.0
    assert "speedup_as_written" not in SpeedupResult([PerfPoint("float32[4096]", 2.0, 1.0)]).to_extra()
    failed = SpeedupResult([PerfPoint("a", 2.0, 1.0, 2.0)], [Diagnostic("/perf/1", "mismatch", "x")])
    assert failed.speedup_as_written is None


def tuned_case(name: str, as_written: float, tuned: float, changed: int, seconds: float) -> CaseResult:
    bucket = {"config": {"meta": {"BLOCK": 1024}, "num_warps": 4, "num_stages": 3},
              "as_written": {"meta": {"BLOCK": 1024}, "num_warps": 4, "num_stages": 3}}
    buckets = [dict(bucket, config={"meta": {"BLOCK": 2048}, "num_warps": 8, "num_stages": 3})] * changed
    buckets += [bucket] * (4 - changed)
    return CaseResult(task=name, tier="tritonbench", track="tritonbench", provider="reference", model="golden",
                      outcome="ok", mode="gpu", target="sm_90",
                      extra={"call_accuracy": True, "execution_accuracy": True, "speedup": tuned,
                             "speedup_as_written": as_written,
                             "tuning": {"mode": "quick", "seconds": seconds, "buckets": buckets, "not_tuned": []}})


def test_the_summary_prints_as_written_vs_tuned_and_the_tuning_time():
    lines = track_summary([tuned_case("relu", 0.5, 2.0, 2, 6.0), tuned_case("exp", 1.0, 1.0, 0, 2.0)])
    assert "tuning (quick): speedup over the reference as written 0.71x, tuned 1.41x over the 2 operators " \
           "timed both ways" in lines
    assert "tuning time: 8 s for 2 operators, 8 perf-size buckets (4.0 s per operator)" in lines
    assert "  relu: as written 0.50x, tuned 2.00x (2 of 4 buckets changed)" in lines
    assert not any(line.startswith("  exp:") for line in lines)
    untuned = CaseResult(task="a", tier="tritonbench", track="tritonbench", provider="reference", model="golden",
                         outcome="ok", mode="gpu", target="sm_90",
                         extra={"call_accuracy": True, "execution_accuracy": True, "speedup": 1.5})
    assert not any("tuning" in line for line in track_summary([untuned]))


def test_allure_describes_an_operators_tuning():
    from kernelgen.report.allure import describe, timings

    case = tuned_case("relu", 0.5, 2.0, 2, 6.0)
    assert "**tuned per perf-size bucket** (quick): 2.00x the reference, as written 0.50x; 2 of 4 buckets " \
           "changed, 6.0 s" in describe(case)
    assert len(timings(case)["tuning"]["buckets"]) == 4


# -- CPU mode -------------------------------------------------------------------------------------


def test_kg_tune_in_cpu_mode_leaves_the_case_untuned(sample):
    result = evaluate_operator(sample.operator("relu"), make_provider("reference"),
                               Settings(target="sm_90", gpu=False, tune="full"))
    assert result.ok and "tuning" not in result.extra and "tuning" not in result.artifacts
    assert result.extra["speedup"] is None and "speedup_as_written" not in result.extra


# -- on a GPU -------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_a_sample_operator_tunes_per_bucket_end_to_end(sample, tmp_path, monkeypatch):
    """relu on the GPU: every perf size its own bucket, tuned (cold cache), verified, cached; the
    speedup stage times each size as tuned and as written."""
    from kernelgen.gpu.devices import executor_env, worker_gpu
    from kernelgen.gpu.executor import Executor

    monkeypatch.setenv("KERNELGEN_CACHE_DIR", str(tmp_path))
    operator = sample.operator("relu")
    with Executor(env=executor_env(worker_gpu())) as executor:
        settings = Settings(target="sm_90", gpu=True, executor=executor, tune="quick")
        result = evaluate_operator(operator, make_provider("reference"), settings)
        assert result.ok and result.extra["execution_accuracy"], result.diagnostics
        tuning = result.extra["tuning"]
        assert len(tuning["buckets"]) == len(operator.perf.cases) and tuning["not_tuned"] == []
        assert all(b["candidates"] >= 2 and not b["cached"] for b in tuning["buckets"])
        assert result.extra["speedup"] is not None and result.extra["speedup_as_written"] is not None
        assert all(p["as_written_ms"] is not None for p in result.extra["perf"])
        again = evaluate_operator(operator, make_provider("reference"), settings)
    assert all(b["cached"] for b in again.extra["tuning"]["buckets"])
    assert [b["config"] for b in again.extra["tuning"]["buckets"]] == [b["config"] for b in tuning["buckets"]]
    assert any(line.startswith("tuning time: ") for line in track_summary([result]))


@pytest.mark.gpu
def test_on_the_gpu_a_bucket_config_compiles_with_its_warps_and_stages():
    function = KernelFunction(parse_kernel(golden_answer("relu")), {"N=4096": Config((("BLOCK", 512),), 8, 2)})
    x, y = torch.randn(4000, device="cuda"), torch.randn(5000, device="cuda")
    assert torch.equal(function(x), torch.relu(x)) and torch.equal(function(y), torch.relu(y))
    built = {(dict(key[0])["BLOCK"], compiled.metadata["num_warps"], compiled.metadata["num_stages"])
             for key, compiled in function._compiled.items()}
    assert built == {(512, 8, 2), (1024, 4, 3)}  # the bucket's configuration, and as written
