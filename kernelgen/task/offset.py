"""Inputs with a large common offset against their spread (CPU mode's ``offset`` draws), and the
tolerance such inputs need: what rounding the inputs would do to the exact result.

The other draws' normal inputs are centred: a row's mean is about its spread / sqrt(N). Real
inputs often are not (a residual stream, the activations batch norm normalizes, a prediction near
its target), and formulas that are exact in algebra cancel there in floats: a variance as
E[x^2] - E[x]^2, an MSE from three moment sums, (x - y)^2 expanded to x^2 - 2xy + y^2, a batch
norm's weight gradient from uncentred sums. On centred draws they agree with the reference to
f32's precision; with a mean c against a spread s their error grows as (c / s)^2 times f32's unit.

The draws (:func:`offset_orders`): ``offset`` adds c = scale * 2**k to every input
:func:`offset_names` finds, k per dtype (:data:`OFFSET_EXPONENT`) so that the values keep a few
representable steps of spread (an f16 1024 holds steps of 1, a bf16 128 steps of 1); and, where
there are two or more such inputs, ``offset:NAME`` subtracts it from each alone: the others'
spread rides on it (a residual added to a stream with a large mean: x + residual, then a
variance), and an input that multiplies the others (batch norm's grad_y) keeps its scale while x
and its mean cancel. The offset alternates between c and 2c from one group of reduced elements to
the next (a row of a row reduction), so each row has its own mean: a variance shifted by one
element of the whole tensor for every row is right while all rows share one. A matrix a float
output reduces along its columns alternates by column there, and ``offset/rows:NAME``
(:data:`OFFSET_ROWS`) gives it one offset per row as well, alone. An input whose domain says
``offset_with: x`` (a saved mean of x) takes x's offset, column by column; a uniform domain marked
``offset_draws: true`` (a range the prompt does not promise) is moved too, by 32 times its width.

On such inputs the task is ill-conditioned, and a correct kernel whose every step rounds well is
still off: a batch norm computed as x * scale + shift rounds x * scale, about c / s times the
result. So these draws accept an element within :data:`ROUNDING_FACTOR` times what rounding the
inputs moves the exact result (:class:`InputRounding`: the reference in f64 on the inputs, and on
one input at a time with its elements multiplied by 1 +- f32's unit, random signs,
:data:`ROUNDING_SAMPLES` times: the root mean square of each input's moves, added over the
inputs) of the reference's f64 result. A cancelling formula's error grows as
(c / s)^2, that move as c / s: at c / s = 1024 they stand ~1000 apart, and the factor sits
between, above what a sum's order of rounding adds to the move (a mean of N values summed in
blocks) and far below the cancellation.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Mapping

import torch

from kernelgen.task.compare import Tolerance, growth
from kernelgen.task.reductions import reduced_axes
from kernelgen.task.spec import Task
from kernelgen.task.wide_reference import reference_results


# c = scale * 2**k per input dtype: 2**k steps of 1 in the dtype's mantissa (f16's 10 bits, bf16's 7),
# the offset input's values keep about five distinct values within +-2 of a spread of 1.
OFFSET_EXPONENT = {"f16": 10, "bf16": 7, "f32": 10, "f64": 10}
# The unit a correct kernel rounds to: f32's for f16, bf16 and f32 inputs (the language computes in
# f32 at least), f64's where every float input is f64.
F32_UNIT, F64_UNIT = 2.0 ** -24, 2.0 ** -53
ROUNDING_SAMPLES = 2
# How far from the reference's f64 result, in moves, an element may lie (the module's docstring):
# every golden lies within 5 moves on its offset draws (4.7 the most seen, a grad_x of
# batchnorm_backward; 2026-12-04); a one-pass variance at c / s = 1024 is off by thousands.
ROUNDING_FACTOR = 16.0
# The draws (``offset/rows:NAME``) where a matrix reduced along its columns (a weight's gradient,
# [N] of [M, N]) takes one offset per row, alone: the ``offset`` draw's one per column leaves each
# row spread over both offsets, so a row's own statistics (layer norm's, recomputed in its
# backward pass: layernorm_backward_full with the row variance as E[x^2] - mean^2 passed every
# offset draw, round 13) never cancel. Alone: with grad_y offset as well, the f32 mean's rounding
# (delta) puts c * delta * rstd into a gradient whose exact value does not see c (a layer norm's
# backward pass annihilates a constant grad_y); the inputs' rounding does not measure that.
OFFSET_ROWS = "offset/rows"
# Their offset is 2**2 times smaller: a column output sums M rows' roundings of their f32 means
# (each ~ulp(N * c) / sqrt(N) off), and at the ``offset`` draw's c layernorm_backward_full's
# golden grad_weight was 3e-3 off (tolerance 1.2e-3) on 5 of 48 draws over 12 seeds; at c / 4,
# none, while a one-pass variance is still off by (c / 4 / s)^2 f32 units, ~4e-3 of it, on all.
ROWS_EXPONENT_DROP = 2
# The float dtypes whose inputs are rounded (here) or taken in magnitude (sorted_room.py).
FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def offset_names(task: Task) -> list[str]:
    """The inputs an offset draw moves (none where the task says ``offset_draws: false``): float
    tensors (f16, bf16, f32, f64) of a normal domain (ties stay ties: equal values moved alike;
    zero rows are the point of a domain that has them) of the largest rank among the task's
    tensors: the data a task maps or reduces, not the weights, biases and per-channel statistics
    broadcast over it (a layer norm's weight and bias offset as well make its output cancel to
    near zero, about 1000 times the rounding of its normed value: ill-conditioned beyond what the
    inputs' rounding measures). A domain's ``offset_draws`` overrides the choice of domains."""
    if not task.offset_draws:
        return []
    tensors = [s for s in task.signature.inputs if s.is_plain and s.shape is not None]
    rank = max((len(s.shape) for s in tensors), default=0)
    names = []
    for spec in tensors:
        domain = task.domains.get(spec.name)
        ordinary = domain is None or (domain.kind == "normal" and not domain.zero_rows)
        if len(spec.shape) == rank and spec.dtype in OFFSET_EXPONENT and (
                ordinary if domain is None or domain.offset_draws is None else domain.offset_draws):
            names.append(spec.name)
    return names


def offset_orders(task: Task) -> list[str]:
    """The offset draws' orders for ``task``: ``offset``, ``offset:NAME`` for each input of
    :func:`offset_names` where there are two or more, and ``offset/rows:NAME`` (:data:`OFFSET_ROWS`)
    for each that is a matrix reduced along its columns only (none without any)."""
    names = offset_names(task)
    if not names:
        return []
    rows = [f"{OFFSET_ROWS}:{s.name}" for s in task.signature.inputs if s.name in names and _column_reduced(task, s)]
    return ["offset"] + [f"offset:{n}" for n in names if len(names) > 1] + rows


def long_offset_orders(task: Task, name: str) -> list[str]:
    """The orders of the offset draws long in size ``name``: ``offset/rows:INPUT`` for each matrix
    INPUT reduced along its columns whose rows are ``name`` long (the ``offset`` draw would give
    its long rows both offsets), else ``offset`` (one offset along every row it reduces, or for
    the whole input)."""
    rows = [f"{OFFSET_ROWS}:{s.name}" for s in task.signature.inputs
            if s.name in offset_names(task) and _column_reduced(task, s) and s.shape[1] == name]
    return rows or ["offset"]


def is_offset(order: str | None) -> bool:
    """Whether a draw's ``order`` is an offset draw's."""
    return order is not None and (order == "offset" or order.startswith(("offset:", OFFSET_ROWS + ":")))


def offset_ratio(task: Task, order: str) -> float:
    """The largest offset of an ``order`` draw against its input's spread (2 * 2**k: every other
    group takes twice the offset); 1 for another draw's order (a shift draw's inputs have no
    spread along the shift)."""
    if not is_offset(order):
        return 1.0
    alone = order.partition(":")[2]
    names = [alone] if alone else offset_names(task)
    return max((2 * 2.0 ** _exponent(s.dtype, order) for s in task.signature.inputs if s.name in names), default=1.0)


def _exponent(dtype: str, order: str) -> int:
    """k of an ``order`` draw's offset c = scale * 2**k for an input of ``dtype``."""
    return OFFSET_EXPONENT[dtype] - (ROWS_EXPONENT_DROP if order.startswith(OFFSET_ROWS) else 0)


def with_common_offset(task: Task, args: dict[str, Any], order: str) -> dict[str, Any]:
    """A draw's inputs (``args``) with the offset ``order`` names (the module's docstring); an
    input the call omits (None) stays omitted."""
    alone = order.partition(":")[2]
    names = [n for n in offset_names(task) if isinstance(args.get(n), torch.Tensor) and n == (alone or n)]
    moved, offsets = dict(args), {}
    for name in names:
        spec = next(s for s in task.signature.inputs if s.name == name)
        domain = task.domains.get(name)
        # a uniform range (marked offset_draws: true) sits off 0 already; 1/32 of its width makes c
        # about 110 times its spread (2c, 220): a variance about a pivot from another row is off by
        # (c / s)^2 f32 units, ~1e-3, while one about the row's own first element loses c / s units
        scale = 1.0 if domain is None else domain.scale if domain.kind == "normal" else (domain.high - domain.low) / 32
        offsets[name] = (-1 if alone else 1) * scale * 2.0 ** _exponent(spec.dtype, order)
    specs = {s.name: s for s in task.signature.inputs}
    shifts = {name: offset * _groups(task, specs[name], args[name], order.startswith(OFFSET_ROWS))
              for name, offset in offsets.items()}
    # inputs that move with another's offset (Domain.offset_with: a saved mean of it)
    shifts.update({name: _followed(shifts[d.offset_with], specs[d.offset_with], specs[name])
                   for name, d in task.domains.items()
                   if d.offset_with in shifts and isinstance(args.get(name), torch.Tensor)})
    for name, shift in shifts.items():
        moved[name] = (args[name].double() + shift).to(args[name].dtype)
    return moved


def _followed(shift: torch.Tensor | float, source: Any, follower: Any) -> torch.Tensor | float:
    """What an input that moves with ``source`` (a saved per-channel mean of it) is moved by: the
    source's shift averaged over the axes the follower lacks (by size name), so that it stays the
    source's mean where the offset alternates along them (batchnorm_backward's mean [H] of x
    [R, H], 2c on every other column: it had moved by c only)."""
    if not isinstance(shift, torch.Tensor):
        return shift
    kept = [axis for axis, size in enumerate(source.shape) if size in follower.shape]
    if len(kept) != len(follower.shape):
        return float(shift.mean())
    averaged = shift.mean(dim=[a for a in range(shift.dim()) if a not in kept]) if len(kept) < shift.dim() else shift
    names = [source.shape[a] for a in kept]
    return averaged.permute([names.index(size) for size in follower.shape])


def _column_reduced(task: Task, spec: Any) -> bool:
    """Whether an input is a matrix the task reduces along its columns and not its rows."""
    return bool(spec.shape) and len(spec.shape) == 2 and reduced_axes(task, spec, float_columns=True) == [0]


def _groups(task: Task, spec: Any, value: torch.Tensor, rows: bool = False) -> torch.Tensor | float:
    """1 or 2 per element of an input the task reduces (:func:`kernelgen.task.reductions.reduced_axes`),
    alternating from one group of reduced elements to the next (a row of a row reduction, a column
    of a column one), so that neighbouring groups' means differ by the offset: a one-pass variance
    shifted by one element of the whole tensor (x[0, 0]) for every row is right while all rows
    share a mean; 1 for an input reduced along no axis or along all of them. Columns count only
    where a float output reduces them: moe_top2_routing's expert counts [E] of logits [T, E] put
    2c on every other expert, and with E = 3 the softmax of the others underflowed to a tie at 0
    that the reference breaks by index. With ``rows`` (the :data:`OFFSET_ROWS` draws) a matrix
    reduced along its columns alternates by row instead."""
    if rows and _column_reduced(task, spec):
        axes = [1]
    else:
        axes = reduced_axes(task, spec, float_columns=True) if spec.shape else []
    kept = [a for a in range(value.dim()) if a not in axes]
    if not axes or not kept:
        return 1.0
    index = torch.zeros(value.shape, dtype=torch.int64)
    for axis in kept:  # the group's flat index over the kept axes
        shape = [1] * value.dim()
        shape[axis] = value.shape[axis]
        index = index * value.shape[axis] + torch.arange(value.shape[axis]).reshape(shape)
    return (1 + index % 2).to(value.device, torch.float64)


class InputRounding:
    """What rounding one call's float tensor inputs moves the reference's exact result by, element
    by element (the module's docstring), computed when :meth:`moves` first asks (only a comparison
    that fails otherwise does), then kept."""

    def __init__(self, task: Task, inputs: Mapping[str, Any], order: str, seed: int = 0,
                 plain: Callable[[], Mapping[str, Any]] | None = None) -> None:
        self._task = task
        self._inputs = inputs
        self._seed = seed
        self._ratio = offset_ratio(task, order)
        self._plain = plain

    def tolerance(self, name: str, tolerance: Tolerance) -> Tolerance:
        """Output ``name``'s tolerance on this draw: its atols times how much the offset grew the
        reference's largest finite value of it (``plain``: the draw's inputs without the offset;
        a gradient times an offset grad_y rounds alike, larger), and a stepped output's atol for
        values that cancel (a layer norm's normed * weight + bias; meant for centred inputs) also
        times the offset's ratio to the spread, by which it magnifies the normed value's rounding."""
        growth = self._growth.get(name, 1.0)
        return dataclasses.replace(tolerance, atol=tolerance.atol * growth,
                                   step_atol=tolerance.step_atol * growth * self._ratio)

    @functools.cached_property
    def _growth(self) -> dict[str, float]:
        if self._plain is None:
            return {}
        base, moved = self._call(self._plain()), self._call(self._inputs)
        if base is None or moved is None:
            return {}
        return {name: growth(base[name], value) for name, value in moved.items()}

    def around(self, name: str, expected: torch.Tensor, centre: torch.Tensor | None = None
               ) -> tuple[torch.Tensor, torch.Tensor, str] | None:
        """What :func:`kernelgen.task.compare.compare_tensors` takes as ``around`` for output
        ``name``: the exact result and :data:`ROUNDING_FACTOR` times the moves; or ``centre`` (another
        result of a kernel: its lockstep run's) and twice that, as each may lie that far from the
        exact one; None where :meth:`moves` gives none."""
        found = self.moves(name, expected)
        if found is None:
            return None
        exact, moved = found
        if centre is None:
            return exact, ROUNDING_FACTOR * moved, f"within {ROUNDING_FACTOR:g} input roundings of the exact result"
        return centre.detach().double(), 2 * ROUNDING_FACTOR * moved, \
            f"within {2 * ROUNDING_FACTOR:g} input roundings of each other"

    def moves(self, name: str, expected: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The reference's f64 result for output ``name`` and how far rounding the inputs moves
        it (f64, on ``expected``'s device; NaN where either is not finite), or None where the
        reference refused f64 inputs, returned another shape, or returned a result narrower than
        f32: rounding the inputs by f32's unit moves an f16 or bf16 result (``.half()``) by its own
        steps or not at all, and a step times the factor would pass a cancelling formula. A
        reference that computes in f64 and returns ``.float()`` keeps its moves to f32's steps, no
        coarser than the moves themselves; one that computes in f32 (``x.float()`` first) rounds
        the rounded inputs back, and its moves are ~0: no floor beyond the others."""
        found = self._results
        if found is None or name not in found[0] or tuple(found[0][name].shape) != tuple(expected.shape) \
                or found[0][name].dtype not in (torch.float32, torch.float64):
            return None
        exact, moved = (t.to(expected.device, torch.float64) for t in (found[0][name], found[1][name]))
        bad = ~(exact.isfinite() & moved.isfinite())
        nan = torch.full_like(exact, float("nan"))
        return torch.where(bad, nan, exact), torch.where(bad, nan, moved)

    @functools.cached_property
    def _results(self) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]] | None:
        floats = {n: v for n, v in self._inputs.items() if isinstance(v, torch.Tensor) and v.dtype in FLOATS}
        if not floats:
            return None
        unit = F64_UNIT if all(v.dtype == torch.float64 for v in floats.values()) else F32_UNIT
        generator = torch.Generator().manual_seed(self._seed ^ 0x0FF5E7)
        wide = {n: v.double() for n, v in floats.items()}
        exact = self._call(wide)
        if exact is None:
            return None
        # Each input rounded alone, its moves added: rounded together, x - mean's two roundings
        # cancel wherever their signs agree (an eighth of the elements over three draws).
        moves = {n: torch.zeros_like(v, dtype=torch.float64) for n, v in exact.items()}
        for name, value in wide.items():
            squares = {n: torch.zeros_like(v, dtype=torch.float64) for n, v in exact.items()}
            for _ in range(ROUNDING_SAMPLES):
                signs = torch.randint(0, 2, value.shape, generator=generator, dtype=torch.float64) * 2 - 1
                rounded = self._call({**wide, name: value * (1 + unit * signs.to(value.device))})
                if rounded is None:
                    return None
                for n in squares:
                    squares[n] += (rounded[n].double() - exact[n].double()) ** 2
            for n in moves:
                moves[n] += (squares[n] / ROUNDING_SAMPLES).sqrt()
        return exact, moves

    def _call(self, floats: Mapping[str, Any]) -> dict[str, torch.Tensor] | None:
        """The reference's results on the inputs with ``floats`` in place of theirs, as returned."""
        return reference_results(self._task, {**self._inputs, **floats})
