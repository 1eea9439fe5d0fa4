"""Draws where an input added to the output cancels the rest of it: an epilogue that rounds
before it adds.

A GEMM with a residual (``alpha * (a @ b) + residual`` into bf16) may round ``alpha * acc`` to
bf16 and then add the residual in bf16, two roundings where the prompt asks for one. On values
as drawn the two differ by a bf16 step of the sum now and then, which the tolerance takes. Where
the residual nearly cancels the product the output is small and the first rounding, relative to
the large product, is many steps of it (round 13: a = [[1, 1]], b = [[256], [1]], residual =
[[-256]] gives 1.0 from torch and 0 from the double rounding).

An addend is a float input of the same sizes as a narrow (f16 or bf16) output that the reference
adds: its output moves by ``c * delta`` when the input moves by ``delta``, for one coefficient c
(1 for a residual, ``beta`` for addmm's ``c``), which :func:`with_cancelled_addend` measures on
the draw before it uses it (an input that enters any other way leaves the draw as it was). The
draw sets the addend to ``(r - g) / c``, g being the output with the addend at zero and r a
small term of about :data:`LEFT` of g, so the output is about r: a rounding of g to the output's
dtype before the add is up to 2**-9 |g|, an eighth of the output, where the task's rtol (bf16's
1.6e-2) is far smaller, and an f32 accumulation's error (2**-24 of the terms a step, a few
hundred steps in CPU mode's sizes) stays far inside it. CPU mode's draws only: the sizes are
CPU mode's, and GPU mode runs them in the interpreter as it runs the other ordered draws.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import torch

from kernelgen.task.spec import Task

# What is left of the output: this fraction of |g| (with a random sign and a factor in [0.5, 1]).
LEFT = 2.0 ** -6
# The outputs an addend draw is for: those whose dtype rounds a product far coarser than f32.
NARROW = ("f16", "bf16")
# An order naming the addend: "addend:NAME".
ADDEND = "addend"


def addend_inputs(task: Task) -> list[str]:
    """The float tensor inputs of the same sizes as an f16 or bf16 output, where the task has
    another float tensor input (the output is not the addend alone) and no calls or in-place
    outputs (their arguments are not drawn as one set); the reference decides on a draw
    whether one is an addend (:func:`with_cancelled_addend`)."""
    if task.variants or task.in_place:
        return []
    shapes = [o.shape for o in task.signature.outputs if o.dtype in NARROW and o.shape]
    floats = [s for s in task.signature.inputs
              if s.is_plain and s.shape is not None and s.dtype in ("f16", "bf16", "f32")]
    return [s.name for s in floats if s.shape in shapes and len(floats) > 1]


def is_addend(order: str | None) -> bool:
    return order is not None and order.startswith(ADDEND + ":")


def with_cancelled_addend(task: Task, args: dict[str, Any], order: str, seed: int,
                          reference: Callable[[Task, Mapping[str, Any]], dict[str, torch.Tensor]]) -> dict[str, Any]:
    """A draw's inputs (``args``) with the addend ``order`` names set to cancel the rest of its
    output (the module's docstring); unchanged where it is not an addend there
    (:func:`addend_part`)."""
    name = order.partition(":")[2]
    found = addend_part(task, args, name, reference)
    if found is None:
        return args
    coefficient, rest = found
    generator = torch.Generator().manual_seed(seed ^ 0xADDE4D)
    sign = torch.where(torch.rand(rest.shape, generator=generator) < 0.5, -1.0, 1.0).double()
    left = LEFT * rest.abs() * sign * (0.5 + 0.5 * torch.rand(rest.shape, generator=generator, dtype=torch.float64))
    return {**args, name: ((left - rest) / coefficient).to(args[name].dtype)}


def addend_part(task: Task, args: Mapping[str, Any], name: str,
                reference: Callable[[Task, Mapping[str, Any]], dict[str, torch.Tensor]]
                ) -> tuple[float, torch.Tensor] | None:
    """For input ``name`` of a draw: its coefficient in the first f16 or bf16 output of its sizes
    that it is added to, and that output with the input at zero (f64); None where it is added to
    none (no single coefficient), the reference fails, or nothing finite and non-zero is there."""
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
        if out.shape == spec.shape and out.dtype in NARROW:
            rest = base[out.name].double()
            coefficient = _coefficient(rest, moved[out.name].double(), value.double())
            if coefficient is not None:
                return coefficient, rest
    return None


def _coefficient(rest: torch.Tensor, total: torch.Tensor, addend: torch.Tensor) -> float | None:
    """The c with total = rest + c * addend everywhere (to the output's rounding: within 2**-7 of
    the larger of the two sides), or None: the reference does not add the input, or nothing
    finite and non-zero is there to cancel."""
    usable = rest.isfinite() & total.isfinite() & addend.isfinite() & (addend.abs() > 0) & (rest != 0)
    if int(usable.sum()) < max(1, usable.numel() // 2):
        return None
    ratios = ((total - rest) / addend)[usable]
    coefficient = float(ratios.median())
    if coefficient == 0 or not torch.isfinite(torch.tensor(coefficient)):
        return None
    slack = 2.0 ** -7 * (rest.abs() + total.abs()) + 1e-30
    off = (total - rest - coefficient * addend).abs()[usable]
    return coefficient if bool((off <= slack[usable]).all()) else None
