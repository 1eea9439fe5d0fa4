"""CPU mode's draw scaled far up (kernelgen/task/homogeneous.py): only for a task whose reference
is homogeneous in its float inputs (values sorted, selected, moved or scaled along), never for
one whose outputs change otherwise; its atol grows with the outputs."""

from __future__ import annotations

import torch

from kernelgen.task.draws import up_draws
from kernelgen.task.homogeneous import UP_SCALES, scaled_up
from kernelgen.task.magnitude import checked_inputs
from kernelgen.task.spec import get_task
from kernelgen.task.verify import make_inputs, run_reference


def test_a_sort_is_drawn_far_past_a_finite_sentinel() -> None:
    task = get_task("row_sort")
    [draw] = up_draws(task, 0)
    assert draw.extreme and min(draw.sizes.values()) >= 3
    inputs, factor = checked_inputs(task, draw.sizes, 0, draw.extreme, order=draw.order)
    assert factor == UP_SCALES["f32"] and float(inputs["x"].abs().max()) > 1e9
    plain = make_inputs(task, draw.sizes, 0, extreme=True)
    assert torch.equal(run_reference(task, inputs)["indices"], run_reference(task, plain)["indices"])


def test_a_task_whose_outputs_change_otherwise_gets_no_such_draw() -> None:
    """A softmax's outputs and a matmul's (the square of the scale) are not the scale times what
    they were, nor unchanged; a test against a threshold changes on the draw (on a small one it
    may not: any row then holds a value past the threshold either way)."""
    for task_id in ("softmax_f16", "matmul_f16", "log_softmax_rows", "row_any_above"):
        task = get_task(task_id)
        assert up_draws(task, 0) == []
        if task_id != "row_any_above":
            sizes = {name: min(7, r.max) for name, r in task.sizes.items()}
            assert scaled_up(task, make_inputs(task, sizes, 0, extreme=True)) is None
