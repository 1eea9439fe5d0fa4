"""A sorted draw's room (kernelgen/task/sorted_room.py): a long f32 sum over a row sorted along
its axis drifts with its partial sums, in any correct order, so an element there also passes
within SORTED_FACTOR f32 units of the sum of the magnitudes; a kernel that drops part of the row
is off by far more."""

from __future__ import annotations

import pytest
import torch

from kernelgen.check.checker import check
from kernelgen.harness.pipeline import verify_cpu
from kernelgen.task.magnitude import input_rounding
from kernelgen.task.sorted_room import F32_UNIT, SORTED_FACTOR, SortedRoom
from kernelgen.task.spec import get_task
from kernelgen.task.verify import compare_outputs, make_inputs, run_reference


def test_the_radius_is_the_factor_times_the_sum_of_magnitudes() -> None:
    task = get_task("row_sum")
    inputs = make_inputs(task, {"M": 3, "N": 100}, 0, order="ascending")
    centre, radius, _ = SortedRoom(task, inputs).around("out", run_reference(task, inputs)["out"])
    assert torch.allclose(radius, SORTED_FACTOR * F32_UNIT * inputs["x"].double().abs().sum(1))
    assert isinstance(input_rounding(task, inputs, {"M": 3, "N": 100}, 0, "descending"), SortedRoom)
    assert input_rounding(task, inputs, {"M": 3, "N": 100}, 0, None) is None


def test_a_correct_blocked_sum_of_a_long_sorted_column_passes() -> None:
    """batchnorm_backward's golden adds 64 row groups' column sums atomically; on the sorted draw
    of R = 65536 rows (seed 47) grad_bias is 0.007 off -23.58, 2.3 f32 units of sum |grad_y|,
    past the task's atol of 1e-3 alone."""
    task = get_task("batchnorm_backward")
    sizes = {"R": 65536, "H": 1}
    inputs = make_inputs(task, sizes, 47, order="ascending")
    expected = run_reference(task, inputs)
    drifted = dict(expected, grad_bias=expected["grad_bias"] - 0.007)
    assert compare_outputs(task, drifted, expected, inputs, sizes)  # the tolerance alone fails it
    assert not compare_outputs(task, drifted, expected, inputs, sizes, rounding=SortedRoom(task, inputs))
    verify_cpu(task, check(task.golden), sizes, 47, order="ascending")


def test_a_sum_that_drops_one_element_of_a_sorted_row_still_fails() -> None:
    task = get_task("row_sum")
    sizes = {"M": 2, "N": 4097}
    inputs = make_inputs(task, sizes, 0, order="ascending")
    expected = run_reference(task, inputs)
    dropped = {"out": expected["out"] - inputs["x"][:, -1]}  # the row's largest value, at its end
    problems = compare_outputs(task, dropped, expected, inputs, sizes, rounding=SortedRoom(task, inputs))
    assert [p.code for p in problems] == ["mismatch"]


@pytest.mark.parametrize("order", ["ascending", "descending"])
def test_the_golden_of_a_segment_sum_passes_its_sorted_draws(order: str) -> None:
    """segment_sum_csr at seed 61: one segment of E = 43857 values, 0.85 f32 units of its
    magnitudes off on the sorted draw, past atol 1e-3."""
    task = get_task("segment_sum_csr")
    verify_cpu(task, check(task.golden), {"E": 43857, "D": 1, "S": 1}, 61, order=order)
