"""Contiguity and alignment hints (:class:`kernelgen.lang.nodes.Hint`): their claim, in one place.

Triton's ``tl.multiple_of`` / ``tl.max_contiguous`` set the ``tt.divisibility`` /
``tt.contiguity`` attributes its axis analysis starts from; the compiler trusts them, so a false
one silently reads the wrong elements through vectorized loads. The checker refutes what it can
see (shapes, powers of two, a claim on a value it knows up to a per-program scalar, see
:func:`affine`) and trusts the rest; the interpreter checks the claim on the
actual values of every run (``hint_violated``), so a kernel whose hint is false fails in CPU
mode with the lane that breaks it instead of agreeing with a reference by luck.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from kernelgen.lang import nodes as L


@dataclass(frozen=True)
class Claim:
    """Per dim of the hinted value: the run length (1: none stated) and the run start's divisor."""

    contiguous: tuple[int, ...]
    multiple: tuple[int, ...]


def _power_of_two(v: int) -> bool:
    return v >= 1 and v & (v - 1) == 0


def claim_problem(e: L.Hint, shape: tuple[int, ...]) -> tuple[str, str] | None:
    """Why the hint cannot be stated on a value of ``shape``: (field, message), or None."""
    if e.multiple_of is None and e.max_contiguous is None:
        return "op", "a hint states multiple_of, max_contiguous or both"
    if e.max_contiguous is not None and not shape:
        return "max_contiguous", "a scalar has no contiguity: give multiple_of only"
    for field, values in (("multiple_of", e.multiple_of), ("max_contiguous", e.max_contiguous)):
        if values is None:
            continue
        if len(values) != max(1, len(shape)):
            return field, f"{field} has one entry per dim of the value's shape {list(shape)}, got {values}"
        if not all(_power_of_two(v) for v in values):
            return field, f"{field} entries are powers of two, got {values}"
    if e.max_contiguous is not None:
        for d, (c, n) in enumerate(zip(e.max_contiguous, shape)):
            if c > n:
                return "max_contiguous", f"a run of {c} lanes does not fit dim {d} of size {n}"
    return None


def claim_of(e: L.Hint, shape: tuple[int, ...]) -> Claim:
    rank = max(1, len(shape))
    contiguous = tuple(e.max_contiguous) if e.max_contiguous is not None else (1,) * len(shape)
    multiple = tuple(e.multiple_of) if e.multiple_of is not None else (1,) * rank
    return Claim(contiguous, multiple)


@dataclass(frozen=True)
class Affine:
    """A value the checker knows up to one per-program integer scalar: ``s + block``, ``s`` an
    unknown multiple of ``step`` (0: none). Adding a scalar moves no lane relative to another,
    so contiguity depends on ``block`` alone, and divisibility by m where m divides ``step``."""

    block: torch.Tensor
    step: int


_MAX_DEPTH = 32  # how far the refuter follows let-bound names


def affine(e: L.Expr, lets: dict[str, L.Expr], meta: dict[str, int], scalars: set[str],
           depth: int = 0) -> Affine | None:
    """``e`` as :class:`Affine`, or None when the checker cannot see it: built from literals,
    meta, arange, integer full, program ids, loop variables and integer scalar params (the
    unknown scalars) with + - * (a shifted value by a known scalar only), dims and shape ops."""
    if depth > _MAX_DEPTH:
        return None
    again = lambda x: affine(x, lets, meta, scalars, depth + 1)  # noqa: E731
    if isinstance(e, bool) or isinstance(e, float):
        return None
    if isinstance(e, int):
        return Affine(torch.tensor(e, dtype=torch.int64), 0)
    if isinstance(e, str):
        if e in meta:
            return Affine(torch.tensor(meta[e], dtype=torch.int64), 0)
        if e in lets:
            return again(lets[e])
        return Affine(torch.tensor(0, dtype=torch.int64), 1) if e in scalars else None
    if isinstance(e, L.ProgramId):
        return Affine(torch.tensor(0, dtype=torch.int64), 1)
    if isinstance(e, L.Arange):
        return Affine(torch.arange(meta[e.size] if isinstance(e.size, str) else e.size, dtype=torch.int64), 0)
    if isinstance(e, L.Full) and isinstance(e.value, int) and not isinstance(e.value, bool):
        shape = [meta[d] if isinstance(d, str) else d for d in e.shape]
        return Affine(torch.full(shape, e.value, dtype=torch.int64), 0)
    if isinstance(e, L.Hint):
        return again(e.x)
    if isinstance(e, L.Binary) and e.op in ("add", "sub", "mul"):
        a, b = again(e.lhs), again(e.rhs)
        if a is None or b is None:
            return None
        if e.op == "mul":
            if a.step and b.step or (a.step and b.block.dim()) or (b.step and a.block.dim()):
                return None  # (s + A) * B: lanes move by s * B
            step = a.step * abs(int(b.block)) if a.step else b.step * abs(int(a.block)) if b.step else 0
            return Affine(a.block * b.block, step)
        return Affine(a.block + b.block if e.op == "add" else a.block - b.block, math.gcd(a.step, b.step))
    if isinstance(e, (L.ExpandDims, L.Reshape, L.Trans)):
        x = again(e.x)
        if x is None:
            return None
        if isinstance(e, L.ExpandDims):
            return Affine(x.block.unsqueeze(e.axis), x.step)
        if isinstance(e, L.Trans):
            dims = list(reversed(range(x.block.dim()))) if e.dims is None else list(e.dims)
            return Affine(x.block.permute(dims), x.step)
        shape = [meta[d] if isinstance(d, str) else d for d in e.shape]
        return Affine(x.block.reshape(shape) if e.op == "reshape" else x.block.expand(shape), x.step)
    return None


def refutation(e: L.Hint, shape: tuple[int, ...], known: Affine | None) -> str | None:
    """Why the hint is false, where the checker knows the value (see :func:`affine`)."""
    if known is None or (known.block.numel() and int(known.block.abs().max()) >= 2**31):
        return None  # unseen, or past i32 where the computed values would wrap
    claim = claim_of(e, shape)
    # Divisibility by m is seen only where the unknown shift is a multiple of m.
    claim = Claim(claim.contiguous, tuple(m if known.step % m == 0 else 1 for m in claim.multiple))
    return violation(claim, known.block.expand(shape).unsqueeze(0))


def violation(claim: Claim, x: torch.Tensor) -> str | None:
    """Where ``x`` (``[programs, *shape]``) breaks the claim, in words, or None when it holds."""
    if x.dim() == 1:
        bad = (x % claim.multiple[0]) != 0
        if bad.any():
            return f"the value {int(x[bad][0])} is not a multiple of {claim.multiple[0]}"
        return None
    for d, (c, m) in enumerate(zip(claim.contiguous, claim.multiple)):
        along = x.movedim(d + 1, -1)
        runs = along.reshape(*along.shape[:-1], along.shape[-1] // c, c).to(torch.int64)
        if c > 1:
            steps = runs[..., 1:] - runs[..., :-1]
            if (steps != 1).any():
                lane = (steps != 1).nonzero()[0]
                return (f"along dim {d} the run of {c} lanes from lane {int(lane[-2]) * c} does not count up by 1 "
                        f"(it holds {runs[tuple(lane[:-1])].tolist()})")
        starts = runs[..., 0]
        if ((starts % m) != 0).any():
            first = int(starts[(starts % m) != 0][0])
            return f"along dim {d} a run starts at {first}, not a multiple of {m}"
    return None
