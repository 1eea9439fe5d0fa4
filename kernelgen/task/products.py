"""The rounding an f32 accumulation of products makes, for outputs that are sums of products of
the inputs (a matmul's, addmm's): a task's tolerance names the sums' length (``products: K``).

The H200's tensor cores do not add as round-to-nearest f32 does: a bf16 or f16 dot accumulated
in f32 is off by far more than a blocked f32 sum on the CPU. matmul_bf16_f32out's golden, on
unit-normal inputs at M = 302, N = 420, K = 8192 (seed 3), was 4.6e-3 off where the task's atol,
measured with round-to-nearest blocked sums, was 1e-3 (addmm_f16's, 7.2e-3). Those elements
cancel: c = -0.41 out of a sum of |terms| of 5269. A tolerance relative to the result cannot take
that. A tensor core adds 16 products at a time into its accumulator and truncates the sum; the
error is about one f32 unit of the running sum at each of the K/16 steps. So an element of such
an output also passes within :data:`PRODUCTS_FACTOR` * u * (sum over the steps of |P_16j| +
|P_K| + |the added term|), u being f32's unit and P_k the exact sum of the first k products (the
reference at K sliced to [0, k), less what it gives at none: addmm's beta * c). The sum over the
steps is also taken the other way round (a kernel may run its K loop from the end) and the larger
kept; it is sampled at 64 points along K (trapezoids between them), so the room costs about two
f64 references, and only for a comparison that fails otherwise.

Why this form (round 14's red team, tools/redteam_round14/products/): it tracks the running sum,
which is what truncation errs by. On cancelling data (random signs) it is tight, about 2.5 times
tighter than sqrt(K) u of the terms' magnitudes (the form it replaced), and where the sum drifts
one way (the extreme draws' sign-biased rows) it widens as the truncation error does. In its
units the H200's goldens reached 0.72 at most over the elements that rtol and atol alone fail, in
every GPU-mode draw at seeds 0 to 3 (1.2 over every element of the draws at the largest K;
splitk_gemm_f32out at SPLIT 1, 2 and 8; tools/products_room.py), and a model of truncating tensor
cores coarser than the H200's (21 bits kept, split in two) 5.6; kernels wrong only at long K
reached 12 and more (a result rounded to f16, split-K partials kept in 11 bits, f16 products,
addmm's c read as bf16), where the old form admitted them. :data:`PRODUCTS_FACTOR` sits between.
A kernel computing in tf32 would fit too: an f32 GEMM that promises IEEE products
(matmul_f32_ieee) does not name ``products``.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Mapping

import torch

from kernelgen.task.offset import F32_UNIT
from kernelgen.task.spec import Task
from kernelgen.task.wide_reference import reference_results

# The radius, in f32 units of the running sum summed over the steps of 16 products (the docstring).
PRODUCTS_FACTOR = 6.0
# Steps of a tensor core's accumulation: products added at once.
STEP = 16
# Points along the sum where the running sum is taken: at most this many slices of the reference.
SAMPLES = 64


class ProductRounding:
    """The rounding room of one call's outputs: computed when :meth:`around` first asks (only a
    comparison that fails otherwise does), then kept."""

    def __init__(self, task: Task, inputs: Mapping[str, Any], sizes: Mapping[str, int]) -> None:
        self._task = task
        self._inputs = inputs
        self._length = int(sizes[task.tolerance.products])

    def around(self, name: str, expected: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, str] | None:
        """What :func:`kernelgen.task.compare.compare_tensors` takes in ``around`` for output
        ``name``: the reference's result and the radius (NaN where the running sums are not
        finite: no room there); None where the reference refused the slices."""
        sums = self._running_sums
        if sums is None or name not in sums or tuple(sums[name].shape) != tuple(expected.shape):
            return None
        sums = sums[name].to(expected.device, torch.float64)
        radius = PRODUCTS_FACTOR * F32_UNIT * sums
        radius = torch.where(sums.isfinite(), radius, torch.full_like(radius, math.nan))
        return expected.detach().double(), radius, \
            f"within {PRODUCTS_FACTOR:g} f32 units of its running sum at each step of {STEP} of {self._length} products"

    @functools.cached_property
    def _running_sums(self) -> dict[str, torch.Tensor] | None:
        return running_sums(self._task, self._inputs, self._length)


def running_sums(task: Task, inputs: Mapping[str, Any], length: int) -> dict[str, torch.Tensor] | None:
    """Per output, sum over j of |P_{16j}| + |P_K| + |P_0| (the larger of that sum taken from
    the start and from the end of the products size), in f64; None where an input of the size
    cannot be sliced along it or the reference refuses a slice."""
    size = task.tolerance.products
    axes = {}
    for spec in task.signature.inputs:
        value = inputs.get(spec.name)
        if spec.shape is None or not isinstance(value, torch.Tensor):
            continue
        along = [i for i, dim in enumerate(spec.shape) if dim == size]
        if along and (value.dim() != len(spec.shape) or any(value.shape[i] != length for i in along)):
            return None  # a batched or broadcast call's tensor: not sliced here
        if along:
            axes[spec.name] = along
    if not axes or length == 0:
        return None
    wide = {name: value.double() if isinstance(value, torch.Tensor) and value.dtype.is_floating_point else value
            for name, value in inputs.items()}

    def sliced(begin: int, end: int, zero: bool = False) -> dict[str, Any]:
        out = dict(wide)
        for name, along in axes.items():
            value = out[name]
            for axis in along:
                value = value.narrow(axis, begin, end - begin)
            out[name] = torch.zeros_like(value) if zero else value
        return out

    added = reference_results(task, sliced(0, 1, zero=True))  # the terms outside the sum (beta * c)
    total = reference_results(task, wide)
    if added is None or total is None:
        return None
    chunk = STEP * max(1, math.ceil(length / (SAMPLES * STEP)))
    partial = {name: torch.zeros_like(value) for name, value in total.items()}
    forward = {name: torch.zeros_like(value) for name, value in total.items()}
    backward = {name: torch.zeros_like(value) for name, value in total.items()}
    for begin in range(0, length, chunk):
        end = min(length, begin + chunk)
        block = reference_results(task, sliced(begin, end))
        if block is None:
            return None
        steps = (end - begin) / STEP
        for name in partial:
            before = partial[name]
            partial[name] = before + (block[name] - added[name])
            rest_before, rest_after = total[name] - added[name] - before, total[name] - added[name] - partial[name]
            forward[name] += steps / 2 * (before.abs() + partial[name].abs())
            backward[name] += steps / 2 * (rest_before.abs() + rest_after.abs())
    return {name: torch.maximum(forward[name], backward[name]) + (total[name] - added[name]).abs() + added[name].abs()
            for name in partial}
