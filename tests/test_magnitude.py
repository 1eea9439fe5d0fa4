"""Large magnitudes in every extreme draw of a task without extreme domains
(kernelgen/task/magnitude.py), tiny ones judged with an atol scaled down with them, zeros' signs
where a task asks for them, and rows drawn equal to another input's (issue 32)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from kernelgen.task.compare import Tolerance, compare_tensors
from kernelgen.task.magnitude import checked_inputs, down_orders, scaled_names
from kernelgen.task.spec import TaskError, get_task, load_task_file
from kernelgen.task.verify import make_inputs, run_reference


def test_an_extreme_draw_scales_ordinary_inputs_as_far_as_the_reference_stays_finite() -> None:
    task = get_task("tanh_f16")  # normal of scale 2, no extreme domains: tanh saturates, any scale is stable
    sizes = {"N": 3000}
    ordinary = make_inputs(task, sizes, seed=0, extreme=True)["x"]
    inputs, atol_scale = checked_inputs(task, sizes, seed=0, extreme=True)
    assert torch.equal(inputs["x"], ordinary * 1024)  # f16's largest scale, exactly
    assert atol_scale == pytest.approx(1.0, rel=0.01)  # the outputs did not grow
    plain, one = checked_inputs(task, sizes, seed=0)
    assert one == 1.0 and torch.equal(plain["x"], make_inputs(task, sizes, seed=0)["x"])


def test_an_f32_input_is_scaled_past_the_i32_range_where_the_reference_stays_finite() -> None:
    """frac's extreme draws reach past 2**31, where frac as x - float(int32(x)) wraps (round 11)."""
    task = get_task("frac")
    sizes = {"N": 3000}
    inputs, _ = checked_inputs(task, sizes, seed=0, extreme=True)
    assert torch.equal(inputs["x"], make_inputs(task, sizes, seed=0, extreme=True)["x"] * 2.0 ** 32)
    assert float(inputs["x"].abs().max()) > 2.0 ** 31


def test_fp8_inputs_fill_their_range_and_are_never_scaled_down() -> None:
    """A normal draw's fp8 values stay within about +-5, where an fp8 GEMM's block dot summed in f16
    never overflows (round 32): the extreme draw scales them through f32, saturated at e4m3's 448,
    as far as the outputs grow at most MAX_GROWTH times (a product of two: 64 each)."""
    task = get_task("fp8_gemm_blockwise_bf16")
    sizes = {"M": 64, "NB": 2, "KB": 2}
    ordinary = make_inputs(task, sizes, seed=0, extreme=True)
    inputs, atol_scale = checked_inputs(task, sizes, seed=0, extreme=True)
    for name in ("a", "w"):
        assert inputs[name].dtype == torch.float8_e4m3fn
        assert torch.equal(inputs[name].float(), (ordinary[name].float() * 64).clamp(-448, 448))
        assert 128 < float(inputs[name].float().abs().max()) <= 448
    assert atol_scale > 64
    assert scaled_names(task) == ["a", "w"] and not down_orders(task)
    assert not (products := run_reference(task, inputs)["out"].float()).isnan().any() and products.isfinite().all()


def test_the_scale_backs_off_where_the_reference_would_overflow_and_atol_grows_with_the_outputs() -> None:
    task = get_task("swiglu_f16")  # silu(a) * b in f16: a * b at 1024 ** 2 leaves f16's range
    sizes = {name: 64 for name in task.sizes}
    base = make_inputs(task, sizes, seed=1, extreme=True)
    inputs, atol_scale = checked_inputs(task, sizes, seed=1, extreme=True)
    name = scaled_names(task)[0]
    factor = float((inputs[name].double().abs().max() / base[name].double().abs().max()))
    assert 1 < factor < 1024
    assert all(v.isfinite().all() for v in run_reference(task, inputs).values())
    assert atol_scale > 1


def test_a_task_with_extreme_domains_keeps_them_and_tiny_draws_scale_the_atol_down() -> None:
    assert scaled_names(get_task("group_norm")) == []  # x in [50, 54] against ordinary weights
    _, atol_scale = checked_inputs(get_task("log1p_generic").variant_tasks()[0], {"N": 100}, extreme=True)
    assert atol_scale == 1e-4


def test_an_extreme_domain_of_large_values_grows_the_atol_with_the_outputs_it_grows() -> None:
    """cross_entropy's extreme logits (scale 100 against 3) grow its losses, a difference of
    values near the largest logit that f32 holds to ~3e-5: the prompt's own lse - x[target]
    failed atol 1e-5 on one row at --kg-seed 7 (0.0193481 for 0.0193601). attention_f16's q of
    scale 64 leaves its outputs averages of v, its atol about as it was (a sharper softmax picks
    the larger values of v: 2.6 times at these sizes)."""
    task = get_task("cross_entropy")
    sizes = {"M": 2659, "C": 17}
    inputs, atol_scale = checked_inputs(task, sizes, seed=7, extreme=True)
    assert torch.equal(inputs["logits"], make_inputs(task, sizes, seed=7, extreme=True)["logits"])  # not scaled
    grown = float(run_reference(task, inputs)["loss"].abs().max())
    plain = float(run_reference(task, make_inputs(task, sizes, seed=7))["loss"].abs().max())
    assert atol_scale == pytest.approx(grown / plain) and atol_scale > 10
    task = get_task("attention_f16")
    _, atol_scale = checked_inputs(task, {name: 16 for name in task.sizes}, seed=0, extreme=True)
    assert 1.0 <= atol_scale < 4


def test_signed_zeros_tell_minus_zero_from_plus_zero() -> None:
    got, want = torch.tensor([1.0, -0.0, 0.0]), torch.tensor([1.0, 0.0, 0.0])
    assert compare_tensors(got, want, "f32", Tolerance(0.0, 0.0)).ok
    judged = compare_tensors(got, want, "f32", Tolerance(0.0, 0.0, signed_zeros=True))
    assert not judged.ok and judged.first_mismatch == (1,) and "zeros' signs" in judged.criterion
    assert get_task("copysign").tolerance.signed_zeros


def test_same_as_copies_some_rows_of_another_input() -> None:
    task = get_task("pairwise_distance")
    inputs = make_inputs(task, {"M": 40, "N": 9}, seed=0)
    equal = (inputs["x"] == inputs["y"]).all(dim=1)
    assert 0 < int(equal.sum()) < 40
    assert task.domains["y"].describe().endswith("some rows equal to x's")


@pytest.mark.parametrize("same_as, problem", [("y", "is not an input before 'y'"),
                                              ("w", "is not an input before 'y'"),
                                              ("v", "is not a tensor of the shape and dtype of 'y'")])
def test_same_as_names_an_earlier_input_of_the_same_shape(tmp_path, same_as: str, problem: str) -> None:
    source = Path(__file__).parents[1] / "bench" / "med" / "pairwise_distance.yaml"
    data = yaml.safe_load(source.read_text())
    data["signature"]["inputs"].insert(0, {"name": "v", "dtype": "f32", "shape": ["N"]})
    data["domains"] = {"y": {"kind": "normal", "same_as": same_as}}
    path = tmp_path / "med" / "pairwise_distance.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(TaskError, match=problem):
        load_task_file(path)


def test_rows_at_a_scalar_hold_it_once_and_their_other_elements_away_from_it() -> None:
    """with_rows_at_scalars reflects the elements on the wrong side of its bound instead of
    clamping them onto it: clamped, a row of N = 2 was [eps, eps - 1 ulp], which no f32 mean
    centres, and the clamped copies (the scalar itself) stayed unscaled in a magnified draw."""
    from kernelgen.task.extreme_values import scalar_neighbours, with_rows_at_scalars

    values = torch.randn(512, 6, generator=torch.Generator().manual_seed(5))
    rows = with_rows_at_scalars(values, None, {}, [0.25], seed=3)
    at = torch.isin(rows, scalar_neighbours([0.25], torch.float32)).sum(dim=1)
    assert int(at.max()) == 1 and int((at == 1).sum()) >= 2 * (512 // 8) - 4
    shaped = at == 1  # the rows made: every other element on one side of 0 or 0.25, strictly away
    others = rows[shaped][~torch.isin(rows[shaped], scalar_neighbours([0.25], torch.float32))]
    assert bool(((others - 0.25).abs() > 1e-6).all())


def test_a_magnified_draw_keeps_a_scalars_negated_neighbours_unscaled() -> None:
    """layer_norm_optional's f32 call without weight or bias, seed 43: eps and its neighbour in
    one row of N = 2, made negative by with_negative_rows, became [-4294967.0, -4294967.5] at
    2**32, a spread of one ulp; kept, the row is within eps of a constant row."""
    from kernelgen.task.extreme_values import scalar_neighbours

    task = next(t for t in get_task("layer_norm_optional").variant_tasks() if t.variant.name == "f32_plain")
    sizes = {"M": 4494, "N": 2}
    drawn = make_inputs(task, sizes, seed=43, extreme=True)
    inputs, _ = checked_inputs(task, sizes, seed=43, extreme=True)
    negated = torch.isin(drawn["x"], -scalar_neighbours([inputs["eps"]], torch.float32))
    assert bool(negated.any()) and torch.equal(inputs["x"][negated], drawn["x"][negated])
    x = inputs["x"].double()
    spread = (x[:, 0] - x[:, 1]).abs()  # equal elements are a constant row, which a mean centres exactly
    assert not bool(((x.abs().min(dim=1).values > 1e6) & (spread > 0) & (spread <= 1)).any())


def test_a_task_with_extreme_domains_gets_the_deepest_scaled_down_draw_only() -> None:
    """fp8_quantize_blockwise's floor max(amax, 1e-4) written as where(amax == 0, 1e-4, amax)
    passed every draw: no block's amax lay between 0 and the floor (round 33)."""
    assert down_orders(get_task("fp8_quantize_blockwise")) == ["down:20"]  # f16: mostly subnormal
    assert down_orders(get_task("row_sum")) == ["down:8", "down:24", "down:40"]  # no extreme domains: all three
    assert scaled_names(get_task("fp8_quantize_blockwise")) == []  # its extreme draws keep their domains
