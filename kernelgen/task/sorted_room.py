"""The room a sorted draw's comparison adds: an f32 sum of values sorted along its axis drifts
with its partial sums, whatever order a correct kernel adds them in.

CPU mode's sorted draws (:func:`kernelgen.task.verify.sorted_along_axes`) put a row's largest
and smallest values at its ends, so a kernel that reads only a leading part misses them. A sum
over such a row runs through all the negative values before the positive ones: its partial sums
reach about half of sum |x| before they cancel down to the result, and each f32 addition there
rounds by f32's unit of that partial sum, all in one direction for long stretches. A correct
kernel that sums per block and adds the blocks' sums in turn (atomically, or in a loop) is then
off by a few f32 units of sum |x|: batchnorm_backward's grad_bias at R = 65536 by 2.3 (0.007 on
-23.58, past its atol of 1e-3), segment_sum_csr's longest segment by 0.85 (seeds 47 and 61). The
reference sums in f64, or pairwise, and does not drift.

So on a sorted draw an element also passes within :data:`SORTED_FACTOR` f32 units of the
reference's result on the absolute values of the float inputs (f64): for a sum, sum |x|; for a
product of sums or a normalisation, the same order of magnitude. A kernel that drops an element
of the row, or a block of it, is off by that element (about sum |x| / N), far more.
"""

from __future__ import annotations

import functools
from typing import Any, Mapping

import torch

from kernelgen.task.compare import Tolerance
from kernelgen.task.offset import F32_UNIT, FLOATS
from kernelgen.task.spec import Task
from kernelgen.task.wide_reference import reference_results

# f32 units of the magnitudes' sum an element may lie from the reference: the goldens' drift
# on sorted rows reached 2.3 (above); a dropped element of a row of N is sum |x| / N off.
SORTED_FACTOR = 16.0


def is_sorted(order: str | None) -> bool:
    """Whether a draw's ``order`` sorts its inputs."""
    return order in ("ascending", "descending")


class InputsRoom:
    """Room a draw's comparison admits, from the task and the draw's inputs, in :meth:`around`
    (a subclass's); the tolerance itself unchanged."""

    def __init__(self, task: Task, inputs: Mapping[str, Any]) -> None:
        self._task = task
        self._inputs = inputs

    def tolerance(self, name: str, tolerance: Tolerance) -> Tolerance:
        return tolerance


class SortedRoom(InputsRoom):
    """A sorted draw's room (the module's docstring), computed when :meth:`around` first asks
    (only a comparison that fails otherwise does), then kept."""

    def around(self, name: str, expected: torch.Tensor, centre: torch.Tensor | None = None
               ) -> tuple[torch.Tensor, torch.Tensor, str] | None:
        """The reference's result (or ``centre``, another result of the kernel, with twice the
        radius) and :data:`SORTED_FACTOR` f32 units of the magnitudes' sum; None where the
        reference refused the absolute values or gave another shape."""
        found = self._magnitudes
        if found is None or name not in found or tuple(found[name].shape) != tuple(expected.shape) \
                or not found[name].is_floating_point():
            return None
        radius = SORTED_FACTOR * F32_UNIT * found[name].to(expected.device, torch.float64).abs()
        radius = torch.where(radius.isfinite(), radius, torch.full_like(radius, float("nan")))
        if centre is None:
            return expected.detach().double(), radius, f"within {SORTED_FACTOR:g} f32 units of the result on the " \
                "inputs' magnitudes (a sorted row's sum drifts)"
        return centre.detach().double(), 2 * radius, \
            f"within {2 * SORTED_FACTOR:g} f32 units of each other's magnitudes (a sorted row's sum drifts)"

    @functools.cached_property
    def _magnitudes(self) -> dict[str, torch.Tensor] | None:
        return reference_results(self._task, {
            name: value.double().abs() if isinstance(value, torch.Tensor) and value.dtype in FLOATS else value
            for name, value in self._inputs.items()})
