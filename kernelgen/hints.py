"""Contiguity and alignment hints (:class:`kernelgen.language.Hint`): their claim, in one place.

Triton's ``tl.multiple_of`` / ``tl.max_contiguous`` set the ``tt.divisibility`` /
``tt.contiguity`` attributes its axis analysis starts from; the compiler trusts them, so a false
one silently reads the wrong elements through vectorized loads. The checker refutes what it can
see (shapes, powers of two, a claim on a constant); the interpreter checks the claim on the
actual values of every run (``hint_violated``), so a kernel whose hint is false fails in CPU
mode with the lane that breaks it instead of agreeing with a reference by luck.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kernelgen import language as L


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


def constant_refutation(e: L.Hint, value: int | None) -> str | None:
    """A multiple_of claim on a value the checker knows (a literal or a meta constant)."""
    if value is None or e.multiple_of is None or value % e.multiple_of[0] == 0:
        return None
    return f"{value} is not a multiple of {e.multiple_of[0]}"


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
