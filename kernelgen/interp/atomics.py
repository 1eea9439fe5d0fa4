"""The meaning of an atomic statement in the reference interpreter (:mod:`kernelgen.interp.execute`).

The interpreter runs a chunk of programs statement by statement; an atomic statement of the
chunk is applied lane after lane, programs in the chunk's order (increasing, or another of
:mod:`kernelgen.interp.orders`) and a program's lanes in row-major order: one of the orders a
GPU may choose. Lanes that hit one element form a *segment* of that order, and the result is a
segmented scan over it (log steps of whole-tensor operations, so a column max whose thousand
programs all update one row of the output costs ten steps, not a thousand), except for
``cas`` and float ``add``, whose updates do not compose (a compare, a rounding after each
add): they run in rounds, one per lane hitting the same element.

What is exact and what is not:

* integer atomics are exact: the final values do not depend on the order, and neither do the
  old values of an element a single lane touches (a counter's tickets do: they are this
  order's; :mod:`kernelgen.interp.orders` runs a launch that binds old values under other
  orders too, and its result must not change);
* a float ``add`` rounds to the element's dtype after every single add, in the order run, as
  the GPU's ``atom.add`` does (f16 and bf16 sums are computed exactly in f64 and rounded once
  per add; f32 and f64 add in their own precision): a bf16 accumulation that loses its small
  terms once the sum is large loses them here too. An f32 add flushes subnormal operands and
  results to zero of their sign, as ``atom.add.f32`` does (the PTX ISA: "flushes subnormal inputs
  and results to sign-preserving zero"; Triton adds ``.noftz`` for f16 and bf16 only): a kernel
  that writes an exact maximum by adding it into a zeroed output loses its subnormal values
  (red-team round 32). Lanes adding into one element run in
  rounds (one lane per element per round), so an element that thousands of lanes add into
  costs thousands of small steps; the interpreter's time limit applies between rounds;
* float ``max``/``min`` order bit patterns as Triton's lowering does (a signed maximum of the
  bits of non-negative values, an unsigned minimum of negative ones): -0.0 < 0.0, a NaN above
  +inf when its sign bit is clear and below -inf when it is set. A NaN value is taken as the
  GPU's canonical NaN (sign bit clear: what its arithmetic and reductions produce, where the
  CPU's may have the sign bit set), so ``atomic_max`` of a NaN gives NaN and ``atomic_min``
  ignores it; only a NaN already in memory keeps its sign.

Masked-off lanes are not accesses; their old value is undefined on a GPU and 0 here.
"""

from __future__ import annotations

import math
from typing import Callable

import torch

from kernelgen.check.checked import FLOAT_DTYPES

_TORCH_FLOATS = {torch.float16, torch.bfloat16, torch.float32, torch.float64}


def _scan_op(op: str):
    return {"atomic_add": torch.add, "atomic_max": torch.maximum, "atomic_min": torch.minimum,
            "atomic_and": torch.bitwise_and, "atomic_or": torch.bitwise_or, "atomic_xor": torch.bitwise_xor}[op]


def _order_key(values: torch.Tensor) -> torch.Tensor:
    """Float bits as integers ordered as Triton's float atomic max/min order them (an involution)."""
    bits = values.view(torch.int32 if values.dtype == torch.float32 else torch.int64)
    mask = (1 << 31) - 1 if values.dtype == torch.float32 else (1 << 63) - 1
    return torch.where(bits < 0, bits ^ mask, bits)


def _from_key(keys: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    mask = (1 << 31) - 1 if dtype == torch.float32 else (1 << 63) - 1
    return torch.where(keys < 0, keys ^ mask, keys).view(dtype)


def apply_atomic(op: str, buffer: torch.Tensor, offsets: torch.Tensor, val: torch.Tensor,
                 cmp: torch.Tensor | None, dtype: str, deadline: Callable[[], None] | None = None,
                 sequence: torch.Tensor | None = None) -> torch.Tensor:
    """Apply atomic ``op`` of lanes ``offsets``/``val`` (lane order, or the lanes ``sequence``
    lists, in its order) to the flat ``buffer`` of ``dtype``; return each lane's old value.
    ``deadline`` is called between rounds of a float add (it raises when the interpreter's time
    is up)."""
    if sequence is not None:
        applied = apply_atomic(op, buffer, offsets[sequence], val[sequence], None if cmp is None else cmp[sequence],
                               dtype, deadline)
        old = torch.empty_like(applied)
        old[sequence] = applied
        return old
    if offsets.numel() == 0:
        return torch.empty(0, dtype=buffer.dtype)
    order = torch.sort(offsets, stable=True).indices
    offs = offsets[order]
    first = torch.ones_like(offs, dtype=torch.bool)
    first[1:] = offs[1:] != offs[:-1]
    last = torch.ones_like(first)
    last[:-1] = first[1:]
    segment = torch.cumsum(first, 0) - 1
    start = torch.nonzero(first).flatten()
    rank = torch.arange(offs.numel()) - start[segment]
    if op == "atomic_cas":
        old_sorted = _cas_rounds(buffer, offs, rank, val[order], cmp[order])
    elif op == "atomic_add" and dtype in FLOAT_DTYPES:
        old_sorted = _float_adds(buffer, offs[first], segment, rank, val[order], deadline)
    else:
        old_sorted = _scanned(op, buffer, offs, first, last, segment, start, rank, val[order])
    old = torch.empty_like(old_sorted)
    old[order] = old_sorted
    return old


# Rounds of float adds between two looks at the interpreter's deadline.
_ROUNDS_PER_CHECK = 256
# Up to this many lanes on one element, a float add's rounds are found by comparing each lane's rank
# with the round's (a pass over the lanes per round); past it, by sorting the lanes by rank once.
_MASKED_ROUNDS = 16


def _float_adds(buffer: torch.Tensor, unique: torch.Tensor, segment: torch.Tensor, rank: torch.Tensor,
                vals: torch.Tensor, deadline: Callable[[], None] | None) -> torch.Tensor:
    """Old values, in sorted lane order, of float adds rounded after each add: round ``r`` adds
    the ``r``-th lane of every element's segment."""
    narrow = buffer.dtype in (torch.float16, torch.bfloat16)  # exact in f64, then rounded once
    flush = buffer.dtype == torch.float32  # atom.add.f32 flushes subnormals (the module's docstring)
    current = buffer[unique]
    old = torch.empty_like(vals)
    rounds = int(rank.max()) + 1
    if rounds <= _MASKED_ROUNDS:  # a tile added by a few programs (a split reduction): no sort
        lanes: list[torch.Tensor | slice] = [slice(None)] if rounds == 1 else \
            [torch.nonzero(rank == r).flatten() for r in range(rounds)]
    else:  # lanes grouped by rank, so a round is a slice
        by_rank = torch.argsort(rank, stable=True)
        bounds = [0] + torch.bincount(rank).cumsum(0).tolist()
        lanes = [by_rank[begin:end] for begin, end in zip(bounds, bounds[1:])]
    for r, these in enumerate(lanes):
        if deadline is not None and r % _ROUNDS_PER_CHECK == _ROUNDS_PER_CHECK - 1:
            deadline()
        seg = segment[these]
        before = current[seg]
        old[these] = before
        added = vals[these]
        if narrow:
            current[seg] = (before.double() + added.double()).to(buffer.dtype)
        elif flush:
            current[seg] = _flushed(_flushed(before) + _flushed(added))
        else:
            current[seg] = before + added
    buffer[unique] = current
    return old


def _flushed(values: torch.Tensor) -> torch.Tensor:
    """f32 ``values`` with subnormals replaced by zeros of their sign."""
    tiny = torch.finfo(torch.float32).tiny
    return torch.where(values.abs() < tiny, torch.copysign(torch.zeros_like(values), values), values)


def _scanned(op: str, buffer: torch.Tensor, offs: torch.Tensor, first: torch.Tensor, last: torch.Tensor,
             segment: torch.Tensor, start: torch.Tensor, rank: torch.Tensor, vals: torch.Tensor) -> torch.Tensor:
    """Old values, in sorted lane order, of an op whose updates compose (a segmented scan)."""
    unique = offs[first]
    if op == "atomic_xchg":
        base = buffer[unique]
        old = torch.empty_like(vals)
        old[first] = base
        old[~first] = vals[:-1][~first[1:]]
        buffer[unique] = vals[last]
        return old
    keyed = op in ("atomic_max", "atomic_min") and buffer.dtype in _TORCH_FLOATS
    if keyed:
        # A computed NaN is the GPU's canonical one (sign bit clear); the CPU's may be negative.
        vals = torch.where(torch.isnan(vals), torch.full_like(vals, math.nan), vals)
        base, vals = _order_key(buffer[unique]), _order_key(vals)
    elif op == "atomic_add" and buffer.dtype == torch.int32:
        base, vals = buffer[unique].long(), vals.long()  # sums wrap the same at the end
    else:
        base = buffer[unique]
    combine = _scan_op(op)
    inclusive = vals.clone()
    step, longest = 1, int(rank.max()) + 1
    while step < longest:
        reach = rank[step:] >= step
        shifted = combine(inclusive[step:], inclusive[:-step])
        inclusive[step:] = torch.where(reach, shifted, inclusive[step:])
        step *= 2
    seg_base = base[segment]
    before = torch.empty_like(inclusive)
    before[1:] = inclusive[:-1]
    old = torch.where(first, seg_base, combine(seg_base, before))
    final = combine(base, inclusive[last])
    if keyed:
        buffer[unique] = _from_key(final, buffer.dtype)
        return _from_key(old, buffer.dtype)
    buffer[unique] = final.to(buffer.dtype)
    return old.to(buffer.dtype)


def _cas_rounds(buffer: torch.Tensor, offs: torch.Tensor, rank: torch.Tensor, vals: torch.Tensor,
                cmps: torch.Tensor) -> torch.Tensor:
    """Old values, in sorted lane order, of compare-and-swap: one round per lane of a segment."""
    old = torch.empty_like(vals)
    for r in range(int(rank.max()) + 1):
        sel = rank == r
        where = offs[sel]
        current = buffer[where]
        old[sel] = current
        buffer[where] = torch.where(current == cmps[sel], vals[sel], current)
    return old
