"""Comparing a kernel's output with the reference's, with tolerances by dtype.

f32 uses rtol 1e-4 (the GPU's approximate ``exp``, ``rsqrt`` and division differ from the
CPU's correctly rounded ones by a few ulp, which 1e-5 would fail), f16 and bf16 use 1e-2,
f64 1e-9 (libdevice's double functions are within a few ulp; a kernel that computes an f64
result in f32, about 6e-8 off, fails);
integers and booleans must be equal. NaN equals NaN, so an element that both leave
unwritten (poison) counts as equal, and one that only the kernel leaves unwritten does not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch


# Elements compared at a time: a GPU draw of up to 4 GB compares without several f64 copies
# of the whole output at once.
CHUNK_ELEMENTS = 1 << 24


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


TOLERANCES: dict[str, Tolerance] = {
    "f32": Tolerance(rtol=1e-4, atol=1e-5),
    "f16": Tolerance(rtol=1e-2, atol=1e-2),
    "bf16": Tolerance(rtol=1e-2, atol=1e-2),
    "f64": Tolerance(rtol=1e-9, atol=1e-12),
    "i32": Tolerance(rtol=0.0, atol=0.0),
    "i64": Tolerance(rtol=0.0, atol=0.0),
    "bool": Tolerance(rtol=0.0, atol=0.0),
    # One unit in the last place of 3 (e4m3) or 2 (e5m2) mantissa bits; atol covers values
    # near the smallest normal (2**-6, 2**-14), where a reference's other rounding order lands.
    "f8e4m3": Tolerance(rtol=0.125, atol=2.0 ** -6),
    "f8e5m2": Tolerance(rtol=0.25, atol=2.0 ** -6),
}


@dataclass(frozen=True)
class Comparison:
    """How one output compares: ``mismatches`` of ``total`` elements lie outside the
    tolerance; ``max_abs_error`` is over all elements (infinite where only one side is NaN or
    the shapes differ); ``first_mismatch`` is the index of the first one."""

    ok: bool
    total: int
    mismatches: int
    max_abs_error: float
    first_mismatch: tuple[int, ...] | None
    tolerance: Tolerance
    shape_mismatch: str | None = None

    def __str__(self) -> str:
        if self.shape_mismatch:
            return f"mismatch: {self.shape_mismatch}"
        verdict = "ok" if self.ok else "mismatch"
        where = f", first at {list(self.first_mismatch)}" if self.first_mismatch is not None else ""
        return (f"{verdict}: max abs error {self.max_abs_error:.3g}, {self.mismatches} of {self.total} elements "
                f"outside rtol={self.tolerance.rtol:g} atol={self.tolerance.atol:g}{where}")


def compare_tensors(actual: torch.Tensor, expected: torch.Tensor, dtype: str,
                    tolerance: Tolerance | None = None) -> Comparison:
    """Compare a kernel's output with the reference's, on the reference's device (a GPU
    compares a 1 GB output in milliseconds where two CPU threads took 30 s)."""
    tolerance = tolerance or TOLERANCES[dtype]
    actual, expected = actual.detach().to(expected.device), expected.detach()
    if actual.shape != expected.shape:
        return Comparison(False, expected.numel(), expected.numel(), math.inf, None, tolerance,
                          f"shape {list(actual.shape)}, expected {list(expected.shape)}")
    floating = dtype in TOLERANCES and TOLERANCES[dtype].rtol > 0
    flat_actual, flat_expected = actual.reshape(-1), expected.reshape(-1)
    mismatches, first_flat, max_error = 0, None, 0.0
    for begin in range(0, flat_expected.numel(), CHUNK_ELEMENTS):  # bounded temporaries
        a_part = flat_actual[begin:begin + CHUNK_ELEMENTS]
        e_part = flat_expected[begin:begin + CHUNK_ELEMENTS]
        if floating:
            a, e = a_part.double(), e_part.double()
            close = torch.isclose(a, e, rtol=tolerance.rtol, atol=tolerance.atol, equal_nan=True)
            same = (a == e) | (a.isnan() & e.isnan())
            error = torch.where(same, torch.zeros_like(a), (a - e).abs().nan_to_num(nan=math.inf))
        else:
            # Integers compare exactly (a float64 round trip would merge large i64 values).
            close = a_part == e_part
            error = (a_part.long() - e_part.long()).abs().double()
        bad = ~close
        count = int(bad.sum())
        if count and first_flat is None:
            first_flat = begin + int(bad.nonzero()[0, 0])
        mismatches += count
        max_error = max(max_error, float(error.max()))
    first = tuple(int(i) for i in np.unravel_index(first_flat, tuple(expected.shape))) \
        if first_flat is not None else None
    return Comparison(mismatches == 0, actual.numel(), mismatches, max_error, first, tolerance)
