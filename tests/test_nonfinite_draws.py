"""CPU mode's nonfinite draw (kernelgen/task/nonfinite.py): NaN, infinities and signed zeros among
the float inputs of every task that does not opt out, placed so that a vector's zeros meet a
matrix's NaNs, and judged against PyTorch's results for them."""

from __future__ import annotations

import math

import pytest
import torch

from kernelgen.task.draws import down_draws
from kernelgen.task.magnitude import checked_inputs
from kernelgen.task.nonfinite import NONFINITE_ORDER, SPARSE, VECTORS_ORDER, nonfinite, vector_inputs
from kernelgen.task.spec import get_task, load_tasks
from kernelgen.task.verify import domain_env, order_overflows, run_reference


def _draw(task_id: str, order: str = NONFINITE_ORDER):
    task = get_task(task_id)
    [draw] = [d for d in down_draws(task, 0) if d.kind == "nonfinite" and d.order == order]
    inputs, atol_scale = checked_inputs(task, draw.sizes, 0, draw.extreme, order=draw.order)
    return task, draw, inputs, atol_scale


def _has(value: torch.Tensor, special: float) -> bool:
    if math.isnan(special):
        return bool(value.isnan().any())
    if special == 0.0:
        return bool(((value == 0) & (torch.signbit(value) == (math.copysign(1.0, special) < 0))).any())
    return bool((value == special).any())


def test_every_special_value_is_placed_in_a_pointwise_input_and_paired_with_the_others():
    task, draw, inputs, atol_scale = _draw("easy/pow")
    assert draw.order == NONFINITE_ORDER and atol_scale == 1.0
    exponent, base = inputs["exponent"], inputs["base"]
    for special in (math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0):
        assert _has(exponent, special), special
    # pow(1, inf) and pow(1, nan) are 1: base 1 meets an exponent of each at some element
    assert bool(((base == 1) & exponent.isinf()).any()) and bool(((base == 1) & exponent.isnan()).any())
    # the reference's non-finite results are the draw's point, not an overflow past the promise
    assert not order_overflows(task, draw.sizes, 0, run_reference(task, inputs), draw.order)


def test_a_uniform_domain_gets_only_the_values_within_its_bounds_and_never_nan():
    task, _, inputs, _ = _draw("easy/pow")  # base: uniform in [0.1, 4], the prompt's positive bases
    base = inputs["base"]
    assert bool(base.isfinite().all()) and float(base.min()) >= 0.1
    assert bool((base == 1).any())


def test_a_vector_beside_a_matrix_gets_zeros_and_the_matrix_sparse_non_finite_values():
    _, draw, inputs, _ = _draw("med/matvec")
    x, v = inputs["x"], inputs["v"]
    assert bool(v.isfinite().all()) and bool((v == 0).any())  # a NaN in v would make every output NaN
    whole = (~x.isfinite()).all(dim=1)  # a row each wholly -inf, +inf and NaN (the reduced axis's lines)
    assert int(whole.sum()) == 3
    specials = int((~x[~whole].isfinite()).sum())
    assert 0 < specials <= max(7, x.numel() // SPARSE)
    # some row holds exactly one non-finite value, at a column where v is zero: a kernel skipping
    # the columns of v == 0 gives a number there, torch NaN
    lone = (~x.isfinite()).sum(dim=1) == 1
    assert bool(((~x[lone].isfinite()) & (v == 0)).any())


def test_a_reduced_axis_gets_a_line_wholly_each_special_value():
    """A fully masked row (all -inf) is where torch's softmax is NaN and a "safe" softmax gives zeros
    (round 34): the nonfinite draw fills a line along the reduced axis with each special value."""
    _, draw, inputs, _ = _draw("med/softmax_f16")
    rows = inputs["x"]
    for special in (math.nan, math.inf, -math.inf):
        line = rows.isnan() if math.isnan(special) else rows == special
        assert bool(line.all(dim=1).any()), special
    _, _, stats, _ = _draw("hard/layernorm_stats")  # its golden's Welford mean: nonfinite_lines: false
    assert not bool((~stats["x"].isfinite()).all(dim=1).any())


def test_the_second_draw_gives_the_vector_a_few_infinities_and_the_matrix_finite_values_only():
    """prelu's slope of inf times an x of 0 is NaN, and max(x, 0) + w * min(x, 0) is NaN where x > 0
    (round 33): a vector's infinities must meet the matrix's zeros and ordinary values."""
    task, draw, inputs, _ = _draw("med/prelu_channels", VECTORS_ORDER)
    assert vector_inputs(task) == ["weight"]
    x, weight = inputs["x"], inputs["weight"]
    assert bool(x.isfinite().all()) and bool((x == 0).any())
    for special in (math.nan, math.inf, -math.inf):
        assert _has(weight, special), special
    assert int((~weight.isfinite()).sum()) <= max(3, weight.numel() // SPARSE)
    assert not order_overflows(task, draw.sizes, 0, run_reference(task, inputs), draw.order)
    assert [d.order for d in down_draws(get_task("easy/softplus"), 0) if d.kind == "nonfinite"] == [NONFINITE_ORDER]


def test_a_list_leaves_those_inputs_out():
    task = get_task("hard/group_norm")  # PyTorch folds the affine: NaN where the prompt's formula gives inf
    assert task.nonfinite_draws == ["weight", "bias"] and task.nonfinite_inputs() == ["x"]
    assert vector_inputs(task) == []


def test_a_task_that_opts_out_gets_no_draw_and_its_prompt_says_nothing_of_special_values():
    task = get_task("easy/isclose")  # its prompt promises finite inputs
    assert not task.nonfinite_draws and task.nonfinite_inputs() == []
    assert not [d for d in down_draws(task, 0) if d.kind == "nonfinite"]
    assert "IEEE special values" not in task.render_signature()
    softplus = get_task("easy/softplus")
    assert "IEEE special values are checked: NaN, +-inf and +-0 among the values of x" in softplus.render_signature()


def test_a_reference_that_refuses_the_values_keeps_the_ordinary_draw():
    task = get_task("easy/softplus")
    inputs = {"x": torch.randn(64)}

    def refuses(task, inputs):
        raise RuntimeError("no NaN here")

    kept, scale = nonfinite(task, inputs, domain_env(task, {"N": 64}), 0, refuses)
    assert kept is inputs and scale == 1.0


def test_integer_ties_and_opted_out_inputs_are_not_changed():
    for task in load_tasks():
        names = task.nonfinite_inputs()
        for spec in task.signature.inputs:
            if spec.name in names:
                domain = task.domains.get(spec.name)
                assert spec.dtype in ("f16", "bf16", "f32", "f64") and spec.shape is not None
                assert domain is None or (domain.kind in ("normal", "uniform") and not domain.ties
                                          and domain.by_element), (task.id, spec.name)


@pytest.mark.parametrize("kernel_file", ["softplus_relu_as_x_times_mask_nan_at_minus_inf",
                                         "matvec_skips_columns_where_v_is_zero",
                                         "rank1_update_zero_rows_of_u_skip_the_product",
                                         "prelu_channels_max_plus_slope_min_nan_at_infinite_slope"])
def test_the_draws_are_what_fail_the_round_32_and_33_kernels(kernel_file):
    """The catalogue's files pass every other draw: their first failing draw is the nonfinite one."""
    import json
    from pathlib import Path

    from kernelgen.harness.pipeline import Settings, evaluate_answer

    entry = json.loads((Path(__file__).parent / "redteam" / f"{kernel_file}.json").read_text())
    result = evaluate_answer(get_task(entry["task"]), json.dumps(entry["kernel"]), Settings(gpu=False, compile=False))
    assert result.outcome.value == "wrong_result"
    assert "expected nan" in result.first_diagnostic().message or "got nan" in result.first_diagnostic().message
