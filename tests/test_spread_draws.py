"""CPU mode's spread draw (kernelgen.task.spread): a pointwise task's inputs at magnitudes over the
dtype's range, element by element, where the ordinary and the extreme draws leave gaps."""

from __future__ import annotations

import math

import torch

from kernelgen.task.draws import down_draws
from kernelgen.task.magnitude import checked_inputs, input_rounding
from kernelgen.task.spec import get_task
from kernelgen.task.spread import SPREAD_ORDER, WIDE_ORDER, SpreadRoom, candidate_names, pointwise_names
from kernelgen.task.verify import make_inputs, run_reference


def spread_of(task_id: str, seed: int = 0, order: str = SPREAD_ORDER):
    task = get_task(task_id)
    (draw,) = [d for d in down_draws(task, seed) if d.kind == "spread" and d.order == order]
    inputs, atol_scale = checked_inputs(task, draw.sizes, seed, order=draw.order)
    return task, draw, inputs, atol_scale


def test_only_inputs_the_reference_maps_pointwise_are_spread() -> None:
    for task_id, names in (("easy/sigmoid_bf16", ["x"]), ("easy/swiglu_f16", ["gate", "up"]), ("easy/sign", ["x"])):
        task = get_task(task_id)
        assert pointwise_names(task, make_inputs(task, {"N": 257}, 0)) == names, task_id
    row_sum = get_task("med/row_sum")  # a reduction: no output shaped as its input
    assert candidate_names(row_sum) == [] and not [d for d in down_draws(row_sum, 0) if d.kind == "spread"]
    softmax = get_task("med/softmax_temperature")  # shaped as its input, but each output reads a whole row
    assert pointwise_names(softmax, make_inputs(softmax, {name: 33 for name in softmax.sizes}, 0)) == []


def test_the_draw_reaches_the_magnitudes_between_and_below_the_other_draws() -> None:
    task, draw, inputs, atol_scale = spread_of("easy/sigmoid_bf16")
    assert (draw.order, draw.kind, atol_scale) == (SPREAD_ORDER, "spread", 1.0)
    x = inputs["x"].float().abs()
    assert int(((x > 20) & (x < 90)).sum()) > 10  # sigmoid's tail, which a bf16 kernel must not flush
    assert int(((x > 0) & (x < 1e-30)).sum()) > 10 and bool((x < 2.0 ** 33).all())
    _, _, signed, _ = spread_of("easy/sign")
    assert int(((signed["x"] != 0) & (signed["x"].abs() < 1e-38)).sum()) > 0  # subnormal f32 too


def test_the_wide_draw_reaches_past_2_to_the_32_up_to_the_dtypes_largest() -> None:
    """frac as x - float(int64(x)) saturates past 2**63 (red-team round 34): the second spread draw
    reaches it; a task whose prompt overflows first (gelu_tanh_backward's x**3 in f32) has none."""
    _, draw, inputs, _ = spread_of("easy/frac", order=WIDE_ORDER)
    x = inputs["x"].abs()
    assert draw.kind == "spread" and int((x > 2.0 ** 64).sum()) > 10 and bool(x[x.isfinite()].max() > 2.0 ** 100)
    call = get_task("expert/gelu_tanh_backward").variant_tasks()[0]  # each call's draws are its own
    assert [d.order for d in down_draws(call, 0) if d.kind == "spread"] == [SPREAD_ORDER]


def test_elements_the_reference_loses_keep_their_ordinary_values() -> None:
    """swiglu in f16: where silu(gate) * up overflows, or the reference's silu rounds to f16's zero
    (an exact result far off), the element is as the ordinary draw had it; a large negative gate
    beside a large up, where the result is small, stays."""
    task, draw, inputs, _ = spread_of("easy/swiglu_f16")
    out = run_reference(task, inputs)["out"]
    assert bool(out.isfinite().all())
    plain = make_inputs(task, draw.sizes, 0)
    kept = (inputs["gate"] == plain["gate"]) & (inputs["up"] == plain["up"])
    assert 0 < int(kept.sum()) < kept.numel()
    gate, up = inputs["gate"].float(), inputs["up"].float()
    assert bool(((gate * up).abs() > 65504).any())  # an f16 product of the two would overflow there


def test_the_room_grows_atol_with_the_inputs_and_not_in_steps() -> None:
    task, draw, inputs, _ = spread_of("easy/swiglu_f16")
    room = input_rounding(task, inputs, draw.sizes, 0, draw.order)
    assert isinstance(room, SpreadRoom)
    expected = run_reference(task, inputs)["out"]
    centre, radius, words = room.around("out", expected)
    largest = torch.maximum(inputs["gate"].double().abs(), inputs["up"].double().abs()).clamp(min=1.0)
    torch.testing.assert_close(radius, task.tolerance_for("f16").atol * largest)
    assert "spread" in words and torch.equal(centre, expected.double())
    sigmoid, draw, inputs, _ = spread_of("easy/sigmoid_bf16")  # in bf16 steps, no step_atol: no room
    _, radius, _ = input_rounding(sigmoid, inputs, draw.sizes, 0, draw.order).around("y", run_reference(sigmoid, inputs)["y"])
    assert float(radius.max()) == 0.0 and not math.isnan(float(radius.sum()))
