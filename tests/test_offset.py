"""CPU mode's offset draws (kernelgen.task.offset): a large common offset on a task's data inputs,
where formulas that cancel (a variance as E[x^2] - E[x]^2) fail, and the tolerance those draws
need, what rounding the inputs moves the exact result by, which a correct kernel stays within."""

import torch

from kernelgen.check.checker import check
from kernelgen.harness.pipeline import verify_cpu
from kernelgen.interp.execute import execute_call
from kernelgen.task.draws import offset_draws
from kernelgen.task.magnitude import checked_inputs
from kernelgen.task.offset import InputRounding, offset_names
from kernelgen.task.spec import get_task
from kernelgen.task.verify import compare_outputs, make_inputs, run_reference


def test_offset_draws_move_the_data_inputs_of_normal_domains_only():
    assert [(d.order, d.kind) for d in offset_draws(get_task("row_std_f16"))] == [("offset", "offset")]
    assert [d.order for d in offset_draws(get_task("mse_rows"))] == ["offset", "offset:x", "offset:y"]
    # a layer norm's weight and bias keep their draws; x and the residual take the offset
    assert offset_names(get_task("add_layernorm_bf16")) == ["x", "residual"]
    assert offset_draws(get_task("kl_div_rows")) == []  # a uniform domain states what the prompt promises
    assert offset_draws(get_task("cholesky_batched")) == []  # offset_draws: false (centred entries promised)


def test_an_offset_input_keeps_its_spread_in_its_own_dtype():
    task = get_task("row_std_f16")
    (draw,) = offset_draws(task)
    x = make_inputs(task, draw.sizes, 0, order=draw.order)["x"].double()
    plain = make_inputs(task, draw.sizes, 0)["x"].double()
    shift = 1024.0 * (1 + torch.arange(x.shape[0], dtype=torch.float64) % 2)[:, None]  # rows alternate
    assert abs(float(x[0].mean()) - 1024) < 1 and abs(float(x[1].mean()) - 2048) < 1
    assert all(len(row.unique()) >= 3 for row in x)  # f16 steps of 1 at 1024, 2 at 2048: the rows still vary
    assert float((x - plain - shift).abs().max()) <= 1  # the drawn values, moved: rounded once


def test_a_correct_layer_norm_needs_the_inputs_rounding_as_its_tolerance_on_an_offset_draw():
    """layernorm_stats' golden (two passes, x * rstd * weight + bias) rounds as every f32 kernel
    does; on offset rows its outputs lie past rtol 1e-4 of the f64 reference, within the inputs'
    rounding; a one-pass variance of the same rows is far outside it."""
    task = get_task("layernorm_stats")
    draw = offset_draws(task)[0]
    inputs, _ = checked_inputs(task, draw.sizes, 0, order=draw.order)
    expected = run_reference(task, inputs)
    run = execute_call(check(task.golden), inputs)
    plain = compare_outputs(task, run.outputs, expected, inputs, draw.sizes, run.written)
    assert [d.code for d in plain] == ["mismatch"]
    rounding = InputRounding(task, inputs, draw.order, 0, lambda: make_inputs(task, draw.sizes, 0))
    assert compare_outputs(task, run.outputs, expected, inputs, draw.sizes, run.written, rounding=rounding) == []
    x = inputs["x"].double()
    one_pass = ((x.float() * x.float()).sum(1) / x.shape[1] - (x.float().sum(1) / x.shape[1]) ** 2).double()
    rstd = torch.rsqrt(one_pass.clamp(min=0) + inputs["eps"])
    wrong = dict(run.outputs, y=(((x - x.mean(1, keepdim=True)) * rstd[:, None]) * inputs["weight"].double()
                                 + inputs["bias"].double()).float())
    found = compare_outputs(task, wrong, expected, inputs, draw.sizes, run.written, rounding=rounding)
    assert [d.code for d in found] == ["mismatch"]


def test_a_batch_norm_as_one_fused_multiply_add_passes_its_offset_draws():
    """batchnorm_inference's golden: x * scale + shift, which rounds x * scale, ~c / s times the result."""
    task = get_task("batchnorm_inference")
    checked = check(task.golden)
    for draw in offset_draws(task):
        verify_cpu(task, checked, draw.sizes, 0, order=draw.order)


def test_neighbouring_rows_take_different_offsets_and_a_saved_mean_moves_with_its_input():
    """A one-pass variance shifted by x[0, 0] for every row is right while all rows share a mean:
    the offset alternates from one reduced group to the next (rows of row_var, whose uniform range
    is the draws' choice; columns of batchnorm_backward, whose saved mean moves with x)."""
    task = get_task("row_var")
    draw = offset_draws(task)[0]
    means = make_inputs(task, draw.sizes, 0, order=draw.order)["x"].double().mean(1)
    assert abs(float(means[0]) - 180) < 1 and abs(float(means[1]) - 308) < 1  # [50, 54] moved by 32 and 64 widths
    task = get_task("batchnorm_backward")
    assert [d.order for d in offset_draws(task)] == ["offset", "offset:grad_y", "offset:x"]
    inputs = make_inputs(task, offset_draws(task)[0].sizes, 0, order="offset:x")
    columns = inputs["x"].double().mean(0)
    assert abs(float(columns[0]) + 1024) < 1 and abs(float(columns[1]) + 2048) < 1
    assert abs(float(inputs["mean"][0]) + 1024) < 5 and abs(float(inputs["grad_y"].double().mean())) < 1


def test_offset_with_names_another_float_input():
    import pytest
    from pydantic import ValidationError

    from kernelgen.task.spec import Task

    data = get_task("batchnorm_backward").model_dump()
    data["domains"]["mean"] = {"kind": "normal", "offset_with": "nothing"}
    with pytest.raises(ValidationError, match="offset_with: 'nothing' must be another float tensor input"):
        Task.model_validate(data)
