"""CPU mode's addend draws (kernelgen/task/addends.py): an input the reference adds to an f16 or
bf16 output (a residual, a bias broadcast over rows) is set to cancel the rest of it, so an
epilogue that rounds before it adds is many steps off; an input the reference uses any other way
gets no such draw."""

from __future__ import annotations

import torch

from kernelgen.task.addends import LEFT, REST_ATOLS, addend_part
from kernelgen.task.draws import addend_draws
from kernelgen.task.spec import get_task
from kernelgen.task.verify import make_inputs, run_reference


def _rest_and_output(task, draw, name: str, out: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The draw's output, and what it is with the addend at zero."""
    drawn = make_inputs(task, draw.sizes, 0, order=draw.order)
    rest = run_reference(task, {**drawn, name: torch.zeros_like(drawn[name])})[out].double()
    return run_reference(task, drawn)[out].double(), rest


def test_a_residual_cancels_all_but_a_small_part_of_the_output() -> None:
    """The rest is first made large against the output's atol (x scaled by a power of two: the
    rest is linear in it), then the residual cancels all but about LEFT of it."""
    task = get_task("gemm_scale_residual_bf16")
    [draw] = addend_draws(task, 0)
    assert draw.order == "addend:residual"
    coefficient, _, out = addend_part(task, make_inputs(task, draw.sizes, 0), "residual", run_reference)
    assert (coefficient, out) == (1.0, "out")
    cancelled, rest = _rest_and_output(task, draw, "residual", "out")
    assert float(rest.abs().median()) >= REST_ATOLS * task.tolerance_for("bf16").atol / 2
    # about LEFT of the rest (up to the residual's own bf16 rounding)
    ratio = (cancelled.abs() / rest.abs())[rest.abs() > 1]
    assert 0.25 * LEFT < float(ratio.median()) < 2 * LEFT


def test_a_bias_cancels_one_row_through_a_relu() -> None:
    """gemm_bias_relu_f16's bias is added before the relu: where neither side is zero its
    coefficient is 1, and it cancels one row, whose positive elements come out small."""
    task = get_task("gemm_bias_relu_f16")
    [draw] = addend_draws(task, 0)
    assert draw.order == "addend:bias"
    cancelled, rest = _rest_and_output(task, draw, "bias", "y")
    small = (cancelled <= 2 * LEFT * rest) | (rest <= 0)
    assert bool((small.all(dim=1) & (rest > 0).any(dim=1)).any())  # the cancelled row
    assert float(rest.abs().max()) >= REST_ATOLS * task.tolerance_for("f16").atol / 2


def test_an_input_the_reference_does_not_add_gets_no_draw() -> None:
    """attention's q has the output's sizes and dtype, but the output is not q plus the rest;
    rmsnorm_backward's grad_y, x and weight neither."""
    for task_id in ("attention_f16", "rmsnorm_backward_bf16", "swiglu_f16"):
        assert addend_draws(get_task(task_id), 0) == []


def test_a_scaled_addend_is_cancelled_by_its_coefficient() -> None:
    """An addend the reference scales (addmm's beta * c, here 0.5 * residual) is set to cancel
    through that coefficient; add_layernorm_bf16's x and residual are both addends of its sum h,
    its bias of the normed output."""
    base = get_task("gemm_scale_residual_bf16")
    task = base.model_copy(update={"id": "gemm_half_residual_bf16", "reference": base.reference.replace(
        "+ residual.float()", "+ 0.5 * residual.float()")})
    [draw] = addend_draws(task, 0)
    coefficient, _, _ = addend_part(task, make_inputs(task, draw.sizes, 0), "residual", run_reference)
    assert coefficient == 0.5
    cancelled, rest = _rest_and_output(task, draw, "residual", "out")
    assert float((cancelled.abs() / rest.abs())[rest.abs() > 1].median()) < 2 * LEFT
    assert [d.order for d in addend_draws(get_task("add_layernorm_bf16"), 1)] == \
        ["addend:x", "addend:residual", "addend:bias"]
