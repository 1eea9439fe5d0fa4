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
    assert [d.order for d in offset_draws(task)] == ["offset", "offset:grad_y", "offset:x",
                                                     "offset/rows:grad_y", "offset/rows:x"]
    inputs = make_inputs(task, offset_draws(task)[0].sizes, 0, order="offset:x")
    columns = inputs["x"].double().mean(0)
    assert abs(float(columns[0]) + 1024) < 1 and abs(float(columns[1]) + 2048) < 1
    # the saved mean follows its own column's offset (it had moved by c on every column)
    assert (inputs["mean"].double() - columns).abs().max() < 5 and abs(float(inputs["grad_y"].double().mean())) < 1


def test_a_matrix_reduced_along_its_columns_also_takes_one_offset_per_row_alone():
    """layernorm_backward_full's grad_weight [N] reduces x's columns, so the offset draw gives each
    column its offset and every row holds both: a row's variance as E[x^2] - mean^2 never
    cancelled there. The offset/rows draws give each row one offset, one input at a time, at a
    quarter of the offset (a column output sums M rows' roundings of their f32 means)."""
    task = get_task("layernorm_backward_full")
    assert [d.order for d in offset_draws(task)][-2:] == ["offset/rows:grad_y", "offset/rows:x"]
    draw = offset_draws(task)[0]
    inputs = make_inputs(task, draw.sizes, 0, order="offset/rows:x")
    rows = inputs["x"].double()
    assert abs(float(rows[0].mean()) + 256) < 1 and abs(float(rows[1].mean()) + 512) < 1
    assert float(rows.std(1).max()) < 2 and abs(float(inputs["grad_y"].double().mean())) < 1
    # moe_top2_routing's counts [E] are not a float reduction of its logits: no column offsets
    # (2c on every other expert of three left the others' softmax a tie at 0)
    task = get_task("moe_top2_routing")
    assert [d.order for d in offset_draws(task)] == ["offset"]
    logits = make_inputs(task, offset_draws(task)[0].sizes, 0, order="offset")["logits"].double()
    assert float(logits.mean(0).max() - logits.mean(0).min()) < 1


def test_a_kernel_that_loops_over_a_size_gets_an_offset_draw_as_long_as_it_loops():
    """Rows of 147 are one block for most kernels: a variance merged from per-block raw sums, or
    taken in one pass only past one block, passed them. Given the kernel, each size it loops over
    is drawn long with the offset (the others at a few)."""
    task = get_task("layernorm_backward")
    square = offset_draws(task)
    long = offset_draws(task, check(task.golden))[len(square):]
    assert [(d.sizes, d.order) for d in long] == [({"M": 4, "N": 10082}, "offset")]
    assert long[0].sizes["N"] > 1024  # past the golden's block
    # long columns (M) keep the offset draw's one offset per column; long rows (N) of a matrix
    # reduced along its columns take one per row, each input alone
    task = get_task("layernorm_backward_full")
    long = offset_draws(task, check(task.golden))[len(offset_draws(task)):]
    assert [(d.sizes, d.order) for d in long] == [({"N": 4, "M": 10921}, "offset"),
                                                  ({"M": 4, "N": 8192}, "offset/rows:grad_y"),
                                                  ({"M": 4, "N": 8192}, "offset/rows:x")]


def test_offset_with_names_another_float_input():
    import pytest
    from pydantic import ValidationError

    from kernelgen.task.spec import Task

    data = get_task("batchnorm_backward").model_dump()
    data["domains"]["mean"] = {"kind": "normal", "offset_with": "nothing"}
    with pytest.raises(ValidationError, match="offset_with: 'nothing' must be another float tensor input"):
        Task.model_validate(data)
