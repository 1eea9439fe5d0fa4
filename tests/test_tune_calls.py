"""Tuning a task with calls (kernelgen.gpu.calls.tune_calls): each listed call is its own bucket,
the label the wrapper looks its configuration up by; on a GPU, every call's candidates are
timed through the wrapper and verified on that call's own draws, and a faster configuration
that breaks the kernel is dropped in each."""

from __future__ import annotations

import json

import pytest

from kernelgen.gpu.calls import call_buckets
from kernelgen.gpu.function import KernelFunction
from kernelgen.gpu.tune import Config, size_bucket
from kernelgen.host.wrapper import bind_call
from kernelgen.lang.parse import kernel_to_json
from kernelgen.task.case import Case, Settings
from kernelgen.task.spec import get_task, load_tasks
from kernelgen.task.verify import make_inputs


def test_each_listed_call_is_a_bucket_of_its_own_that_the_wrapper_looks_up() -> None:
    task = get_task("linear_optional_bias")
    case = Case(task, kernel_to_json(task.golden), Settings(), kernel=task.golden)
    buckets = call_buckets(case)
    assert [b.task.variant.name for b in buckets] == [v.name for v in task.variants]
    labels = [b.label for b in buckets]
    assert len(set(labels)) == len(labels), labels  # f16 with and without a bias, bf16, f32: four choices
    assert all("M=4096" in label and "K=4096" in label for label in labels)
    assert dict(buckets[3].variant.dtypes) == {"T": "f32"} and dict(buckets[1].variant.meta)["HAS_BIAS"] == 0
    # Each call at the bench sizes finds its own configuration in the wrapper, and no other call's.
    configs = {label: Config((("BLOCK_M", 64), ("BLOCK_N", 64), ("BLOCK_K", 32), ("GROUP_M", 8)), 4, i + 2)
               for i, label in enumerate(labels)}
    function = KernelFunction(task.golden, configs)
    for bucket in buckets:
        call = bind_call(task.golden, [], make_inputs(bucket.task, bucket.task.bench_sizes, shapes_only=True))
        assert function.config_for(call) == configs[bucket.label]
    smaller = buckets[0].task
    call = bind_call(task.golden, [], make_inputs(smaller, {"M": 64, "N": 64, "K": 64}, shapes_only=True))
    assert function.config_for(call) is None  # another size bucket runs as written


def test_every_golden_with_calls_has_a_bucket_per_listed_call() -> None:
    tasks = [t for t in load_tasks() if t.variants]
    assert len(tasks) >= 10
    for task in tasks:
        case = Case(task, kernel_to_json(task.golden), Settings(), kernel=task.golden)
        buckets = call_buckets(case)
        assert [b.task.variant.name for b in buckets] == [v.name for v in task.variants], task.id
        # Calls that bind the kernel alike (the same dtypes and flags, sizes) share a bucket; no others do.
        assert len({b.label for b in buckets}) == len({(b.variant, size_bucket(b.sizes)) for b in buckets})


def clamp_fixed_grid():
    """clamp_optional whose grid is ``cdiv(N, 1024)`` whatever BLOCK is: with BLOCK=512 (the
    quick space's halving) it writes half of each 1024 elements, in half the time."""
    kernel = get_task("clamp_optional").golden
    return type(kernel).model_validate({**json.loads(kernel_to_json(kernel)),
                                        "grid": [{"op": "cdiv", "lhs": "N", "rhs": 1024}]})


@pytest.mark.gpu
def test_every_call_is_tuned_verified_on_its_own_draws_and_timed_with_its_choice(tmp_path, monkeypatch) -> None:
    from kernelgen.gpu.devices import executor_env, worker_gpu
    from kernelgen.gpu.executor import Executor
    from kernelgen.harness.pipeline import Settings as PipelineSettings, evaluate_answer

    monkeypatch.setenv("KERNELGEN_CACHE_DIR", str(tmp_path))  # a cold tuning cache
    task = get_task("clamp_optional")
    with Executor(env=executor_env(worker_gpu())) as executor:
        settings = PipelineSettings(target="sm_90", gpu=True, executor=executor, tune="quick", shapes=3)
        result = evaluate_answer(task, kernel_to_json(clamp_fixed_grid()), settings)
    assert result.ok, result.diagnostics
    calls = result.extra["call_tunings"]
    assert list(calls) == ["both", "min_only", "max_only"]
    for name, record in calls.items():
        assert record["candidates"] >= 2 and not record["cached"], name
        # The half-block configuration timed fastest and failed that call's own verification.
        assert any(f.startswith("BLOCK=512 ") and "wrong_result" in f for f in record["failed"]), (name, record)
        assert record["config"]["meta"]["BLOCK"] != 512
    assert result.tuning is not None and result.tuning.config == calls["both"]["config"]
    assert result.tuning.seconds == pytest.approx(sum(record["seconds"] for record in calls.values()))
    assert set(result.extra["call_timings"]) == set(calls)
