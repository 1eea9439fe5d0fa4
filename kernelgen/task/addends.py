"""Draws where an input added to the output cancels the rest of it: an epilogue that rounds
before it adds.

A GEMM with a residual (``alpha * (a @ b) + residual`` into bf16) may round ``alpha * acc`` to
bf16 and then add the residual in bf16, two roundings where the prompt asks for one. On values
as drawn the two differ by a bf16 step of the sum now and then, which the tolerance takes. Where
the residual nearly cancels the product the output is small and the first rounding, relative to
the large product, is many steps of it (round 13: a = [[1, 1]], b = [[256], [1]], residual =
[[-256]] gives 1.0 from torch and 0 from the double rounding).

An addend is a float input of the sizes of a narrow (f16 or bf16) output, or of its last sizes (a
bias broadcast over rows), that the reference adds: its output moves by ``c * delta`` when the
input moves by ``delta``, for one coefficient c (1 for a residual or a bias, ``beta`` for addmm's
``c``), wherever neither side is zero (a relu after the add), which :func:`addend_part` measures on
the draw before it is used (an input that enters any other way leaves the draw as it was). The
draw sets the addend to ``(r - g) / c``, g being the output with the addend at zero (one row of
it, for a bias; first made large against the output's atol) and r a small term of about
:data:`LEFT` of g, so the output there is about r: a rounding of g to the output's dtype before
the add is up to 2**-9 |g|, an eighth of the output, where the task's rtol (bf16's 2e-2) is far
smaller, and an f32 accumulation's error (2**-24 of the terms a step, a few hundred steps in CPU
mode's sizes) stays far inside it. CPU mode's draws only: the sizes are CPU mode's, and GPU mode
runs them in the interpreter as it runs the other ordered draws.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

import torch

from kernelgen.task.spec import Task

# What is left of the output: this fraction of |g| (with a random sign and a factor in [0.5, 1]).
LEFT = 2.0 ** -6
# The outputs an addend draw is for: those whose dtype rounds a product far coarser than f32.
NARROW = ("f16", "bf16")
# The rest of the output an addend draw cancels, in atols of the output (at least: a rest of
# 2**14 atols leaves 2**8 atols, and an f16 rounding of the rest is 4 atols off there).
REST_ATOLS = 2.0 ** 14
# An order naming the addend: "addend:NAME".
ADDEND = "addend"


def addend_inputs(task: Task) -> list[str]:
    """The float tensor inputs of the sizes of an f16 or bf16 output, or of its trailing sizes (a
    bias of [N] broadcast over [M, N]), where the task has another float tensor input (the output
    is not the addend alone) and no calls or in-place outputs (their arguments are not drawn as
    one set); the reference decides on a draw whether one is an addend (:func:`addend_part`)."""
    if task.variants or task.in_place:
        return []
    shapes = [o.shape for o in task.signature.outputs if o.dtype in NARROW and o.shape]
    floats = [s for s in task.signature.inputs
              if s.is_plain and s.shape is not None and s.dtype in ("f16", "bf16", "f32")]
    return [s.name for s in floats if len(floats) > 1 and s.shape and any(_trails(s.shape, shape) for shape in shapes)]


def _trails(shape: list, out: list) -> bool:
    """Whether ``shape`` is ``out`` or its last sizes."""
    return len(shape) <= len(out) and list(out[len(out) - len(shape):]) == list(shape)


def is_addend(order: str | None) -> bool:
    return order is not None and order.startswith(ADDEND + ":")


def with_cancelled_addend(task: Task, args: dict[str, Any], order: str, seed: int,
                          reference: Callable[[Task, Mapping[str, Any]], dict[str, torch.Tensor]]) -> dict[str, Any]:
    """A draw's inputs (``args``) with the addend ``order`` names set to cancel the rest of its
    output (the module's docstring; a broadcast addend, a bias, cancels one row of it, chosen at
    random), the rest first made large against the output's atol (:func:`_magnified_rest`);
    unchanged where it is not an addend there (:func:`addend_part`)."""
    name = order.partition(":")[2]
    found = addend_part(task, args, name, reference)
    if found is None:
        return args
    coefficient, rest, out = found
    args, rest = _magnified_rest(task, args, name, out, rest, reference)
    value = args[name]
    generator = torch.Generator().manual_seed(seed ^ 0xADDE4D)
    rows = rest.reshape(-1, *value.shape)
    rest = rows[int(torch.randint(rows.shape[0], (1,), generator=generator))]
    sign = torch.where(torch.rand(rest.shape, generator=generator) < 0.5, -1.0, 1.0).double()
    left = LEFT * rest.abs() * sign * (0.5 + 0.5 * torch.rand(rest.shape, generator=generator, dtype=torch.float64))
    return {**args, name: ((left - rest) / coefficient).to(value.dtype)}


def _magnified_rest(task: Task, args: dict[str, Any], name: str, out: str, rest: torch.Tensor,
                    reference: Callable[[Task, Mapping[str, Any]], dict[str, torch.Tensor]]
                    ) -> tuple[dict[str, Any], torch.Tensor]:
    """``args`` with another float input scaled by a power of two so that the rest of output
    ``out`` comes to about :data:`REST_ATOLS` of its atol (never scaled down), and that rest: the
    first input the rest is linear in (scaled by s, it is s times what it was), else as drawn.
    An f16 GEMM's rest of about 10 (K = 103) rounded to f16 before the add is 2**-12 * 10 off,
    inside f16's atol of 1e-2 even where the output is small."""
    spec = next(o for o in task.signature.outputs if o.name == out)
    atol = task.tolerance_for(spec.dtype).atol or 0.0
    finite = rest[rest.isfinite() & (rest != 0)].abs()
    if atol <= 0 or finite.numel() == 0 or float(finite.median()) >= REST_ATOLS * atol:
        return args, rest
    scale = 2.0 ** math.ceil(math.log2(REST_ATOLS * atol / float(finite.median())))
    zero = {name: torch.zeros_like(args[name])}
    for spec_in in task.signature.inputs:
        other = args.get(spec_in.name)
        if spec_in.name == name or not isinstance(other, torch.Tensor) or not other.dtype.is_floating_point:
            continue
        scaled = {**args, spec_in.name: other * scale}
        try:
            grown = reference(task, {**scaled, **zero})[out].double()
        except Exception:  # noqa: BLE001 - a reference that refuses it: try the next input
            continue
        usable = rest.isfinite() & grown.isfinite() & (rest != 0)
        if bool(usable.any()) and bool(((grown - scale * rest).abs() <= 2.0 ** -7 * grown.abs())[usable].all()):
            return scaled, grown
    return args, rest


def addend_part(task: Task, args: Mapping[str, Any], name: str,
                reference: Callable[[Task, Mapping[str, Any]], dict[str, torch.Tensor]]
                ) -> tuple[float, torch.Tensor, str] | None:
    """For input ``name`` of a draw: its coefficient in the first f16 or bf16 output of its sizes
    (or whose trailing sizes it has) that it is added to, that output with the input at zero
    (f64), and the output's name; None where it is added to none (no single coefficient where
    neither side is zero: a relu after the add zeroes some), the reference fails, or too little
    is there to tell."""
    value = args.get(name)
    if not isinstance(value, torch.Tensor) or not value.numel():
        return None
    try:
        base = reference(task, {**args, name: torch.zeros_like(value)})
        moved = reference(task, args)
    except Exception:  # noqa: BLE001 - a reference that refuses zeros: no such draw
        return None
    spec = next(s for s in task.signature.inputs if s.name == name)
    for out in task.signature.outputs:
        if out.shape and _trails(spec.shape, out.shape) and out.dtype in NARROW:
            rest = base[out.name].double()
            coefficient = _coefficient(rest, moved[out.name].double(), value.double().expand(rest.shape))
            if coefficient is not None:
                return coefficient, rest, out.name
    return None


def _coefficient(rest: torch.Tensor, total: torch.Tensor, addend: torch.Tensor) -> float | None:
    """The c with total = rest + c * addend wherever neither side is zero (to the output's
    rounding: within 2**-7 of the larger of the two sides), or None: the reference does not add
    the input, or under a quarter of the elements are finite and non-zero on both sides."""
    usable = rest.isfinite() & total.isfinite() & addend.isfinite() & (addend.abs() > 0) & (rest != 0) & (total != 0)
    if int(usable.sum()) < max(1, usable.numel() // 4):
        return None
    ratios = ((total - rest) / addend)[usable]
    coefficient = float(ratios.median())
    if coefficient == 0 or not torch.isfinite(torch.tensor(coefficient)):
        return None
    slack = 2.0 ** -7 * (rest.abs() + total.abs()) + 1e-30
    off = (total - rest - coefficient * addend).abs()[usable]
    return coefficient if bool((off <= slack[usable]).all()) else None
