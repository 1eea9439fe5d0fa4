"""f16 and bf16 outputs compared in representable steps (a task's ``steps`` tolerance) or for
equal values (rtol = atol = 0), as fp8 outputs always are (kernelgen.task.compare)."""

from __future__ import annotations

import math

import pytest
import torch

from kernelgen.task.compare import ONE_STEP_SHARE, Tolerance, compare_tensors, representable_steps
from kernelgen.task.spec import Tolerance as TaskTolerance

STEPS = Tolerance(1e-2, 1e-2, steps=True)
EXACT = Tolerance(0.0, 0.0)


def _values(n: int = 1 << 14, seed: int = 5) -> torch.Tensor:
    return torch.randn(n, generator=torch.Generator().manual_seed(seed)) * 3


def test_a_truncating_bf16_store_fails_in_steps_and_passed_the_tolerance() -> None:
    values = _values()
    want = values.bfloat16()
    truncated = (values.view(torch.int32) & ~0xFFFF).view(torch.float32).bfloat16()  # toward zero
    assert compare_tensors(truncated, want, "bf16").ok  # rtol 1e-2 is two bf16 steps
    judged = compare_tensors(truncated, want, "bf16", STEPS)
    assert not judged.ok and judged.one_step > len(values) // 4
    assert int(representable_steps(truncated, want).max()) == 1
    assert "one bf16 step" in str(judged) and "at most 512 of 16384" in judged.criterion
    assert compare_tensors(want.clone(), want, "bf16", STEPS).ok


def test_one_step_near_ties_passes_on_a_few_elements_and_two_steps_never() -> None:
    want = _values().half()
    few = int(len(want) * ONE_STEP_SHARE)
    nudged = want.clone().view(torch.int16)
    nudged[:few] += 1  # one step away from zero (or toward it, for negative values' bits)
    assert compare_tensors(nudged.view(torch.float16), want, "f16", STEPS).ok
    nudged[few] += 1  # one more element a step off: past the share
    assert not compare_tensors(nudged.view(torch.float16), want, "f16", STEPS).ok
    two = want.clone().view(torch.int16)
    two[7] += 2
    far = compare_tensors(two.view(torch.float16), want, "f16", STEPS)
    assert not far.ok and far.mismatches == 1 and far.first_mismatch == (7,)
    # 1.005 is two f16 steps at 100 (a step is 1/16 there): inside 1e-2, not in steps.
    hundred = torch.full((4,), 100.0)
    assert compare_tensors((hundred * 1.005).half(), hundred.half(), "f16").ok
    assert not compare_tensors((hundred * 1.005).half(), hundred.half(), "f16", STEPS).ok


def test_a_rounding_through_f32_of_an_f64_value_is_one_step_on_ties_only() -> None:
    """A reference that rounds from f64, a kernel from f32: within the one-step share."""
    exact = torch.randn(1 << 16, generator=torch.Generator().manual_seed(2), dtype=torch.float64) * 10
    for dtype, torch_dtype in (("f16", torch.float16), ("bf16", torch.bfloat16)):
        judged = compare_tensors(exact.float().to(torch_dtype), exact.to(torch_dtype), dtype, STEPS)
        assert judged.ok and judged.one_step < len(exact) * ONE_STEP_SHARE / 10


def test_nan_and_infinity_in_steps() -> None:
    want = torch.tensor([math.nan, 1.0, math.inf, -math.inf, 65504.0]).half()
    assert compare_tensors(want.clone(), want, "f16", STEPS).ok
    unwritten = torch.tensor([math.nan, math.nan, math.inf, -math.inf, 65504.0]).half()
    judged = compare_tensors(unwritten, want, "f16", STEPS)
    assert not judged.ok and judged.mismatches == 1 and judged.first_mismatch == (1,)
    assert judged.max_abs_error == math.inf
    assert not compare_tensors(torch.tensor([1.0, math.nan]).half(), torch.tensor([1.0, 2.0]).half(), "f16", STEPS).ok
    # An infinity is one step past the largest finite value (a rounding near overflow).
    assert representable_steps(torch.tensor([math.inf]).half(), torch.tensor([65504.0]).half()).item() == 1


def test_zeros_signs_count_only_where_the_task_asks() -> None:
    plus, minus = torch.tensor([0.0, 1.0]).bfloat16(), torch.tensor([-0.0, 1.0]).bfloat16()
    assert representable_steps(plus, minus).tolist() == [0.0, 0.0]
    assert compare_tensors(minus, plus, "bf16", STEPS).ok and compare_tensors(minus, plus, "bf16", EXACT).ok
    signed = compare_tensors(minus, plus, "bf16", Tolerance(0.0, 0.0, signed_zeros=True))
    assert not signed.ok and signed.first_mismatch == (0,) and "zeros' signs" in signed.criterion
    assert not compare_tensors(minus, plus, "bf16", Tolerance(1e-2, 1e-2, signed_zeros=True, steps=True)).ok


def test_an_exact_tolerance_sees_bf16_moved_through_f16() -> None:
    """A transpose that moves bf16 data as f16 values: beyond f16's range and below its
    normals the values change."""
    want = torch.tensor([1.5, 1e6, -3e38, 1e-10, 2.0 ** -20]).bfloat16()
    moved = want.half().bfloat16()
    judged = compare_tensors(moved, want, "bf16", EXACT)
    assert not judged.ok and judged.mismatches >= 3 and "exact equality (bf16" in str(judged)
    assert compare_tensors(want.clone(), want, "bf16", EXACT).ok


def test_other_dtypes_ignore_steps() -> None:
    want = torch.full((4,), 100.0)
    assert compare_tensors(want * (1 + 5e-5), want, "f32", Tolerance(1e-4, 1e-5, steps=True)).ok


def test_an_atol_with_steps_passes_a_cancelled_value_and_still_counts_the_rest() -> None:
    """A layer norm's ``normed * weight + bias`` cancels to near zero: a few f32 ulps of the
    terms (H200: -3.77e-6 against -3.81e-6) are many bf16 steps of the result. Within the atol
    it is equal; an element past it, and a relative error on every element (a bit-hack rsqrt,
    1.75e-3 off), still fail."""
    exact = torch.randn(1 << 14, generator=torch.Generator().manual_seed(3)) * 2
    want = exact.bfloat16()
    want[5] = -3.8147e-06
    got = want.clone()
    got[5] = -3.76999e-06
    plain = Tolerance(1e-2, 1e-2, steps=True)
    cancelled = Tolerance(1e-2, 1e-2, steps=True, step_atol=1e-5)
    assert not compare_tensors(got, want, "bf16", plain).ok
    judged = compare_tensors(got, want, "bf16", cancelled)
    assert judged.ok and "one bf16 step (or atol=1e-05)" in judged.criterion
    assert judged.max_abs_error == pytest.approx(4.5e-8, rel=0.1)  # the error is still reported
    got[9] = want[9].float() + 0.05  # past the atol: far
    assert not compare_tensors(got, want, "bf16", cancelled).ok
    approximate = (exact * (1 + 1.75e-3)).bfloat16()
    judged = compare_tensors(approximate, want, "bf16", cancelled)
    assert not judged.ok and judged.one_step > len(want) // 8


def test_a_task_tolerance_is_rtol_and_atol_or_steps() -> None:
    assert TaskTolerance(steps=True).rtol is None
    assert TaskTolerance(steps=True, atol=1e-5).atol == 1e-5
    for wrong in ({"steps": True, "rtol": 0.01}, {"steps": True, "rtol": 0.01, "atol": 0.01}, {"rtol": 0.01}, {}):
        with pytest.raises(ValueError):
            TaskTolerance(**wrong)


def test_a_steps_task_steps_its_half_outputs_and_keeps_the_defaults_of_the_others() -> None:
    from kernelgen.task.spec import DEFAULT_TOLERANCE, load_tasks

    task = next(t for t in load_tasks("easy") if t.id == "rsqrt_f16")
    stepped = task.model_copy(update={"tolerance": TaskTolerance(steps=True)})
    assert stepped.tolerance_for("f16") == Tolerance(*DEFAULT_TOLERANCE["f16"], steps=True)
    assert stepped.tolerance_for("f32") == Tolerance(*DEFAULT_TOLERANCE["f32"], steps=True)
    cancelling = task.model_copy(update={"tolerance": TaskTolerance(steps=True, atol=1e-5)})
    assert cancelling.tolerance_for("f16") == Tolerance(*DEFAULT_TOLERANCE["f16"], steps=True, step_atol=1e-5)
    plain = task.model_copy(update={"tolerance": None}).tolerance_for("f16")
    assert not plain.steps and (plain.rtol, plain.atol) == DEFAULT_TOLERANCE["f16"]


def test_an_infinite_error_is_reported_as_infinite() -> None:
    """An output of inf where 1 was expected was reported as max abs error 1.798e+308 (nan_to_num's default)."""
    got = torch.tensor([1.0, math.inf, 2.0])
    comparison = compare_tensors(got, torch.tensor([1.0, 1.0, 2.0]), "f32")
    assert not comparison.ok and comparison.max_abs_error == math.inf
    assert compare_tensors(torch.tensor([math.nan]), torch.tensor([1.0]), "f32").max_abs_error == math.inf
