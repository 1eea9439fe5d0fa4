"""The meaning of operations across a block (scans, sort, top-k, gather, histogram) in torch.

Values carry the interpreter's leading program axis: a block axis ``a`` is tensor dim ``a + 1``
and the last block axis is dim -1. :mod:`kernelgen.interp.execute` calls these; the lowering
(:mod:`kernelgen.lower.blocks`) and the emitter build the same order on the GPU:

* Sorting compares an integer **order key**: integers are their own key; a float's bits as a
  signed integer of its width, NaN first made the canonical quiet NaN (so every NaN sorts above
  inf and comes out as that NaN), negative values' magnitude bits flipped. That is IEEE's total
  order on non-NaN values: -0.0 sorts before 0.0. Equal keys keep their index order, in both
  directions (a stable sort), which argsort and argtopk make observable.
* Scans: ``cumsum``/``cumprod`` in the value's dtype (integers wrap); the GPU adds in a tree
  order, so float results differ by rounding only. ``cummax``/``cummin`` carry NaN onward.
* An index a gather reads, or a value a histogram counts, outside its range is an error
  (``index_out_of_range``): the GPU would read another element or miscount silently.
"""

from __future__ import annotations

import torch

from kernelgen.errors import Diagnostic, InterpreterError
from kernelgen.interp.masks import any_true

# float dtype -> (its bits' integer dtype, the canonical quiet NaN's bits, the magnitude mask)
ORDER_KEYS: dict[str, tuple[torch.dtype, int, int]] = {
    "f32": (torch.int32, 0x7FC00000, 0x7FFFFFFF),
    "f64": (torch.int64, 0x7FF8000000000000, 0x7FFFFFFFFFFFFFFF),
    "f16": (torch.int16, 0x7E00, 0x7FFF),
    "bf16": (torch.int16, 0x7FC0, 0x7FFF),
}
_BITS = {torch.int16: 16, torch.int32: 32, torch.int64: 64}


def order_key(x: torch.Tensor, dtype: str) -> torch.Tensor:
    """The integer whose signed order is the sort order of ``x`` (see the module docstring)."""
    if dtype not in ORDER_KEYS:
        return x
    int_dtype, nan, magnitude = ORDER_KEYS[dtype]
    bits = x.contiguous().view(int_dtype)
    bits = torch.where(torch.isnan(x), torch.tensor(nan, dtype=int_dtype), bits)
    return bits ^ ((bits >> (_BITS[int_dtype] - 1)) & magnitude)


def from_order_key(key: torch.Tensor, like: torch.Tensor, dtype: str) -> torch.Tensor:
    """The values whose order keys are ``key`` (the key's map is its own inverse)."""
    if dtype not in ORDER_KEYS:
        return key
    int_dtype, _, magnitude = ORDER_KEYS[dtype]
    bits = key ^ ((key >> (_BITS[int_dtype] - 1)) & magnitude)
    return bits.contiguous().view(like.dtype)


def scan(op: str, x: torch.Tensor, axis: int, reverse: bool) -> torch.Tensor:
    dim = axis + 1
    if reverse:
        x = x.flip(dim)
    if op == "cumsum":
        out = torch.cumsum(x, dim, dtype=x.dtype)
    elif op == "cumprod":
        out = torch.cumprod(x, dim, dtype=x.dtype)
    elif op == "cummax":
        out = torch.cummax(x, dim).values
    else:
        out = torch.cummin(x, dim).values
    return out.flip(dim) if reverse else out


def sort(op: str, x: torch.Tensor, dtype: str, descending: bool, k: int | None = None) -> torch.Tensor:
    """``sort``/``argsort`` along the last axis, or (``k`` given) the first k of a descending
    sort: ``topk``/``argtopk``."""
    ordered = torch.sort(order_key(x, dtype), dim=-1, descending=descending, stable=True)
    if op in ("argsort", "argtopk"):
        out = ordered.indices.to(torch.int32)
    else:
        out = from_order_key(ordered.values, x, dtype)
    return out if k is None else out[..., :k].contiguous()


def _out_of_range(path: str, what: str, bad: torch.Tensor, values: torch.Tensor, programs: torch.Tensor,
                  limit: int) -> InterpreterError:
    where = bad.nonzero()[0].tolist()
    return InterpreterError(Diagnostic(path, "index_out_of_range",
                                       f"{what} {int(values[tuple(where)])} is outside 0..{limit - 1} "
                                       f"(program {int(programs[where[0]])}, lane {where[1:]})"))


def gather(src: torch.Tensor, index: torch.Tensor, axis: int, path: str, programs: torch.Tensor,
           active: torch.Tensor | None) -> torch.Tensor:
    """``src[..index..]`` along ``axis``; ``active``: the programs that run this (a loop whose
    trip count ended for the others), whose indices must be in range."""
    n = src.shape[axis + 1]
    wrong = (index < 0) | (index >= n)
    if active is not None:
        wrong = wrong & active.view((-1,) + (1,) * (index.dim() - 1))
    if any_true(wrong):
        raise _out_of_range(path, "gather index", wrong, index, programs, n)
    return torch.gather(src, axis + 1, index.clamp(0, n - 1).long())


def histogram(x: torch.Tensor, bins: int, mask: torch.Tensor, path: str, programs: torch.Tensor) -> torch.Tensor:
    """Per program, the count of each value 0..bins-1 among the lanes of ``mask``."""
    wrong = mask & ((x < 0) | (x >= bins))
    if any_true(wrong):
        raise _out_of_range(path, "histogram value", wrong, x, programs, bins)
    counts = torch.zeros((x.shape[0], bins), dtype=torch.int32)
    return counts.scatter_add_(1, torch.where(mask, x, torch.zeros_like(x)).long(), mask.to(torch.int32))
