"""The meaning of an atomic statement in the reference interpreter (:mod:`kernelgen.interp.execute`).

The interpreter runs a chunk of programs statement by statement; an atomic statement of the
chunk is applied lane after lane, programs in linear order and a program's lanes in row-major
order: one of the orders a GPU may choose. Lanes that hit one element form a *segment* of
that order, and the result is a segmented scan over it (log steps of whole-tensor operations,
so a column sum whose thousand programs all add into one row of the output costs ten steps,
not a thousand), except for ``cas``, whose updates do not compose: it runs in rounds, one per
lane hitting the same element.

What is exact and what is not:

* integer atomics are exact: the final values do not depend on the order, and neither do the
  old values of an element a single lane touches (a counter's tickets do: they are this
  order's, and a kernel whose output depends on them is judged against the reference, where
  it fails as it would on a GPU);
* a float ``add`` is summed in f64 (a shadow copy of the element, kept across statements and
  chunks while no plain store changes the element) and rounded to the element's dtype after
  each update, so the final value is the correctly rounded sum up to f64's rounding: the
  order-independent answer. A GPU's sum, rounded after every addition in an order it picks,
  differs from it by the summation error that the task's tolerance (the differential test's
  derived one) must allow; the verifier compares with the reference within that tolerance,
  never with this interpreter's bits. The old value a float add returns is this order's
  rounded prefix sum: on a GPU it depends on the schedule, so a kernel should not let it reach
  an output (it is judged against the reference if it does, and the random-kernel generator
  never does so);
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


class AtomicMemory:
    """The f64 shadows of elements that float atomic adds accumulate into, for one launch."""

    def __init__(self) -> None:
        self.shadows: dict[int, torch.Tensor] = {}

    def shadow(self, index: int, buffer: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        """The f64 values of ``buffer[offsets]``: the shadow where it still rounds to the
        element (no plain store changed it since), else the element itself."""
        if index not in self.shadows:
            self.shadows[index] = buffer.double()
        current = buffer[offsets]
        kept = self.shadows[index][offsets]
        same = kept.to(buffer.dtype) == current
        same |= torch.isnan(current) & torch.isnan(kept)
        return torch.where(same, kept, current.double())

    def update(self, index: int, offsets: torch.Tensor, values: torch.Tensor) -> None:
        self.shadows[index][offsets] = values


def apply_atomic(op: str, buffer: torch.Tensor, offsets: torch.Tensor, val: torch.Tensor,
                 cmp: torch.Tensor | None, memory: AtomicMemory, index: int, dtype: str) -> torch.Tensor:
    """Apply atomic ``op`` of lanes ``offsets``/``val`` (lane order) to the flat ``buffer`` of
    ``dtype``; return each lane's old value."""
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
    else:
        old_sorted = _scanned(op, buffer, offs, first, last, segment, start, rank, val[order], memory, index, dtype)
    old = torch.empty_like(old_sorted)
    old[order] = old_sorted
    return old


def _scanned(op: str, buffer: torch.Tensor, offs: torch.Tensor, first: torch.Tensor, last: torch.Tensor,
             segment: torch.Tensor, start: torch.Tensor, rank: torch.Tensor, vals: torch.Tensor,
             memory: AtomicMemory, index: int, dtype: str) -> torch.Tensor:
    """Old values, in sorted lane order, of an op whose updates compose (a segmented scan)."""
    float_add = op == "atomic_add" and dtype in FLOAT_DTYPES
    unique = offs[first]
    if op == "atomic_xchg":
        base = buffer[unique]
        old = torch.empty_like(vals)
        old[first] = base
        old[~first] = vals[:-1][~first[1:]]
        buffer[unique] = vals[last]
        return old
    keyed = op in ("atomic_max", "atomic_min") and buffer.dtype in _TORCH_FLOATS
    if float_add:
        base, vals = memory.shadow(index, buffer, unique), vals.double()
    elif keyed:
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
    if float_add:
        memory.update(index, unique, final)
        buffer[unique] = final.to(buffer.dtype)
        return old.to(buffer.dtype)
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
