"""IEEE's special values among every float input (CPU mode's ``nonfinite`` draw).

PyTorch defines what its operators do with NaN, the infinities and signed zeros, and a task's
prompt asks for the operator as PyTorch defines it; only the tasks whose domains list those values
(``specials``, in their extreme draws) ever met one. Red-team round 32 found kernels exact for every
finite input that broke there, each a shortcut a model takes for speed or brevity: relu as
x * (x > 0) (-inf * 0 is NaN, relu(-inf) is 0), pow as exp2(e * log2(b)) (pow(1, inf) = pow(1, nan)
= 1), and loads skipped where a multiplier is zero (a matvec skipping the columns of v == 0, a row
scale skipping the rows scaled by 0: NaN * 0 and inf * 0 are NaN, not 0).

Here each eligible input (:meth:`~kernelgen.task.spec.Task.nonfinite_inputs`) gets the values of
:data:`NORMAL_VALUES` (NaN, +-inf, +-0, +-1) at random elements, each at about one element in
:data:`SHARE`, drawn independently per input so that two inputs meet at one element in every
combination (1 beside inf or NaN, inf beside 0). A tensor of two or more dimensions the reference
does not map pointwise gets them sparsely (:data:`SPARSE`), and an input of lower rank than the
largest (a vector beside a matrix) only the finite ones: its zeros meet the matrix's lone NaNs. A
uniform domain stands for a range the prompt promises (pow's positive bases): it gets only the
values of :data:`NORMAL_VALUES` within its bounds, and never NaN.
Integer, boolean and fp8 inputs (fp8 casts of NaN are the hardware's choice), and domains whose
elements are not each of the domain on its own (sorted starts, rows copied from another input,
rows all zero, ties) keep their draw, as do the tasks marked ``nonfinite_draws: false`` (the
prompt promises finite inputs, or the golden does not follow PyTorch there, its YAML says where);
where the golden multiplies matrices, only vectors (a bias, a row's scale) get them, never the
matmul's operands (a matmul's special values are its BLAS's: the GPU machine's PyTorch 2.11 gave
NaN where this one's 2.13 gave inf, for one f16 linear's element).
A second draw (:data:`VECTORS_ORDER`, for a task with such lower-rank inputs) turns that round:
the vectors get NaN and the infinities at a few elements beside their dense finite values, the
other inputs only the finite values (their zeros), so that a zero meets a vector's infinity:
rank1_update skipping the product where u is 0 (0 * inf is NaN), prelu's x >= 0 for x > 0 (a slope
of inf times 0), max(x, 0) + w * min(x, 0) (inf * 0 where x > 0) passed the first (round 33).
A matrix the reference reduces or takes a statistic along (its end axes: the axes
:func:`kernelgen.task.verify.end_axes` finds) gets, in the first draw, a line along each such axis
wholly -inf, one wholly +inf and one wholly NaN too: a fully masked row is where a softmax is NaN in
PyTorch and a "safe" softmax gives zeros (round 34), and sparse specials never fill a line.
The outputs are compared as in any draw: NaN where the reference is NaN, an infinity where it is
one, the tolerance elsewhere. A reference that refuses the values (raises) gets the ordinary draw.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Mapping

import torch

from kernelgen.task.spec import Task

NONFINITE_ORDER = "nonfinite"
VECTORS_ORDER = "nonfinite_vectors"
NORMAL_VALUES = (math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0)
SHARE = 12  # densely, each value at about one element in SHARE (7 values: 58% of the elements)
# Sparsely, one special in SPARSE elements (each value at least once): a NaN anywhere in a row makes
# its reduction NaN, so dense specials leave no row where a vector's zero meets the matrix's one NaN
# (matvec skipping the columns where v == 0).
SPARSE = 64


def _values_for(task: Task, name: str, bounds_at: Mapping[str, Any]) -> list[float]:
    domain = task.domains.get(name)
    if domain is None or domain.kind == "normal":
        return list(NORMAL_VALUES)
    low, high = domain.bounds(bounds_at)
    return [v for v in NORMAL_VALUES if not math.isnan(v) and low <= v <= high]


def vector_inputs(task: Task) -> list[str]:
    """The eligible inputs of lower rank than the largest eligible one (the second draw's)."""
    ranks = {spec.name: len(spec.shape) for spec in task.signature.inputs if spec.shape is not None}
    eligible = [name for name in task.nonfinite_inputs() if name in ranks]
    rank = max((ranks[name] for name in eligible), default=0)
    return [name for name in eligible if ranks[name] < rank]


def _few_nonfinite(value: torch.Tensor, allowed: list[float], generator: torch.Generator) -> torch.Tensor:
    """``value`` with the non-finite values of ``allowed`` at one element in :data:`SPARSE` (at
    least one each, where it has room)."""
    specials = [v for v in allowed if not math.isfinite(v)]
    if not specials:
        return value
    count = min(value.numel(), max(len(specials), value.numel() // SPARSE))
    flat = value.flatten().clone()
    chosen = torch.randperm(value.numel(), generator=generator)[:count]
    flat[chosen] = torch.tensor([specials[i % len(specials)] for i in range(count)], dtype=value.dtype)
    return flat.view(value.shape)


def _special_lines(value: torch.Tensor, axis: int, allowed: list[float], generator: torch.Generator) -> torch.Tensor:
    """``value`` with one line along ``axis`` wholly each non-finite value of ``allowed``, where it
    has four lines or more (the others keep the draw's values)."""
    specials = [v for v in allowed if not math.isfinite(v)]
    if value.dim() < 2 or not specials:
        return value
    moved = value.movedim(axis, -1)
    lines = moved.reshape(-1, moved.shape[-1]).clone()
    if len(lines) < 4:
        return value
    for line, special in zip(torch.randperm(len(lines), generator=generator)[:len(specials)].tolist(), specials):
        lines[line] = special
    return lines.reshape(moved.shape).movedim(-1, axis)


def nonfinite(task: Task, inputs: dict[str, Any], bounds_at: Mapping[str, Any], seed: int,
              reference: Callable[[Task, dict[str, Any]], Any], pointwise: Iterable[str] = (),
              vectors: bool = False, lines: Mapping[str, list[int]] | None = None) -> tuple[dict[str, Any], float]:
    """``inputs`` with IEEE's special values placed (the module's docstring) and the atol factor, 1;
    as drawn where the task has no eligible input or ``reference`` (run on the task and the new
    inputs) raises on the values. ``bounds_at``: what the domains' bounds are evaluated in;
    ``pointwise``: the inputs the reference maps element by element (dense, whatever their rank);
    ``vectors``: the second draw's (:data:`VECTORS_ORDER`); ``lines``: per input, the axes whose
    lines the first draw fills wholly with each special value."""
    generator = torch.Generator().manual_seed(seed ^ (0x1EEE755 if vectors else 0x1EEE754))
    eligible = [name for name in task.nonfinite_inputs() if isinstance(inputs.get(name), torch.Tensor)
                and inputs[name].numel() > 0]
    rank = max((inputs[name].dim() for name in eligible), default=0)
    changed = dict(inputs)
    for name in eligible:
        value, allowed = inputs[name], _values_for(task, name, bounds_at)
        values = allowed
        lower = value.dim() < rank
        if lower or vectors:  # a vector's zeros meet the matrix's NaNs, or the other way round
            values = [v for v in values if math.isfinite(v)]
        if not values:
            continue
        if value.dim() >= 2 and name not in pointwise:  # sparse: most lines keep one special or none
            count = max(len(values), value.numel() // SPARSE)
            pick = torch.full((value.numel(),), SHARE, dtype=torch.long)
            pick[torch.randperm(value.numel(), generator=generator)[:count]] = torch.arange(count) % len(values)
            pick = pick.view(value.shape)
        else:
            pick = torch.randint(0, SHARE, value.shape, generator=generator)
        placed = value.clone()
        for i, special in enumerate(values):
            placed = torch.where(pick == i, torch.tensor(special, dtype=value.dtype), placed)
        if lower and vectors:
            placed = _few_nonfinite(placed, allowed, generator)
        if not vectors and not lower and name not in pointwise:
            for axis in (lines or {}).get(name, []):
                placed = _special_lines(placed, axis, allowed, generator)
        changed[name] = placed
    if all(changed[name] is inputs[name] for name in inputs):
        return inputs, 1.0
    try:
        reference(task, changed)
    except Exception:  # noqa: BLE001 - a reference that refuses the values keeps the ordinary draw
        return inputs, 1.0
    return changed, 1.0
