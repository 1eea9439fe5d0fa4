"""Comparing a kernel's output with the reference's, with tolerances by dtype.

f32 uses rtol 1e-4 (the GPU's approximate ``exp``, ``rsqrt`` and division differ from the
CPU's correctly rounded ones by a few ulp, which 1e-5 would fail), f16 and bf16 use 1e-2,
f64 1e-9 (libdevice's double functions are within a few ulp; a kernel that computes an f64
result in f32, about 6e-8 off, fails);
integers and booleans must be equal; a task's ``signed_zeros`` also asks each zero for the
reference's sign (copysign's point). NaN equals NaN, so an element that both leave
unwritten (poison) counts as equal, and one that only the kernel leaves unwritten does not.

fp8 outputs (e4m3, e5m2) are compared in representable steps, not by a tolerance: with 3 or 2
mantissa bits, a relative tolerance wide enough for a near-tie (one step is 1/16 to 1/4 of the
value) passes a kernel that is one step off everywhere (a truncating or round-away cast). An
element may be one step off the reference only where the two sides round a value near a tie
differently (a reference may round from f64 where the kernel rounds from f32; a kernel
multiplies by a reciprocal), which is rare: at most :data:`FP8_ONE_STEP_SHARE` of the elements
(at least one) may be one step off, none more. The golden kernels are one step off on ~0.3% of
their elements, a truncating quantizer on ~40%. A tolerance of rtol = atol = 0 (a task whose
reference computes the f32 value the kernel must, and casts it as the language does, once)
asks for every byte: a cast that rounds twice (through f16, ~0.4% of normal draws a step off)
fails it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch


# The share of an fp8 output's elements that may be one representable step off the reference.
FP8_ONE_STEP_SHARE = 1 / 32
FP8_DTYPES = ("f8e4m3", "f8e5m2")

# Elements compared at a time: a GPU draw of up to 4 GB compares without several f64 copies
# of the whole output at once.
CHUNK_ELEMENTS = 1 << 24


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float
    # A zero must have the reference's sign too (isclose finds -0.0 equal to +0.0).
    signed_zeros: bool = False


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
    "i8": Tolerance(rtol=0.0, atol=0.0),
    "u8": Tolerance(rtol=0.0, atol=0.0),
    "i16": Tolerance(rtol=0.0, atol=0.0),
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
    # fp8: the criterion in steps, and how many elements were exactly one step off.
    steps: str | None = None
    one_step: int = 0

    @property
    def criterion(self) -> str:
        """What an element had to meet, for a message."""
        signs = ", zeros' signs" if self.tolerance.signed_zeros else ""
        return self.steps or f"rtol={self.tolerance.rtol:g} atol={self.tolerance.atol:g}{signs}"

    def __str__(self) -> str:
        if self.shape_mismatch:
            return f"mismatch: {self.shape_mismatch}"
        verdict = "ok" if self.ok else "mismatch"
        where = f", first at {list(self.first_mismatch)}" if self.first_mismatch is not None else ""
        return (f"{verdict}: max abs error {self.max_abs_error:.3g}, {self.mismatches} of {self.total} elements "
                f"outside {self.criterion}{where}")


def compare_tensors(actual: torch.Tensor, expected: torch.Tensor, dtype: str,
                    tolerance: Tolerance | None = None) -> Comparison:
    """Compare a kernel's output with the reference's, on the reference's device (a GPU
    compares a 1 GB output in milliseconds where two CPU threads took 30 s)."""
    tolerance = tolerance or TOLERANCES[dtype]
    actual, expected = actual.detach().to(expected.device), expected.detach()
    if actual.shape != expected.shape:
        return Comparison(False, expected.numel(), expected.numel(), math.inf, None, tolerance,
                          f"shape {list(actual.shape)}, expected {list(expected.shape)}")
    if dtype in FP8_DTYPES:
        return _compare_steps(actual, expected, dtype, tolerance)
    floating = dtype in TOLERANCES and TOLERANCES[dtype].rtol > 0
    largest = torch.finfo(actual.dtype).max if actual.dtype.is_floating_point else math.inf
    flat_actual, flat_expected = actual.reshape(-1), expected.reshape(-1)
    mismatches, first_flat, max_error = 0, None, 0.0
    for begin in range(0, flat_expected.numel(), CHUNK_ELEMENTS):  # bounded temporaries
        a_part = flat_actual[begin:begin + CHUNK_ELEMENTS]
        e_part = flat_expected[begin:begin + CHUNK_ELEMENTS]
        if floating:
            a, e = a_part.double(), e_part.double()
            close = torch.isclose(a, e, rtol=tolerance.rtol, atol=tolerance.atol, equal_nan=True)
            close |= _overflows_within_tolerance(a, e, tolerance, largest) | _overflows_within_tolerance(e, a, tolerance, largest)
            if tolerance.signed_zeros:
                close &= ~((a == 0) & (e == 0) & (a.signbit() != e.signbit()))
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


def _overflows_within_tolerance(inf: torch.Tensor, finite: torch.Tensor, tolerance: Tolerance,
                                largest: float) -> torch.Tensor:
    """Where ``inf`` is an infinity and ``finite`` a value of its sign whose tolerance reaches
    past the dtype's largest finite value: the kernel's rounding within tolerance may overflow
    there (a cumprod reaching 3.38e38 in f32 rounds to inf on the way), or the reference's may."""
    return inf.isinf() & finite.isfinite() & (inf.sign() == finite.sign()) & \
        (finite.abs() * (1 + tolerance.rtol) + tolerance.atol > largest)


def fp8_steps(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """How many representable values of their fp8 dtype lie between ``a`` and ``b``, element by
    element (0: equal; +0.0 and -0.0 are one value; NaN is 0 from NaN and infinitely far from
    any number)."""
    def key(x: torch.Tensor) -> torch.Tensor:
        bits = x.contiguous().view(torch.uint8).to(torch.int32)
        magnitude = bits & 0x7F
        return torch.where(bits >= 0x80, -magnitude, magnitude)  # sign and magnitude, in order

    steps = (key(a) - key(b)).abs().double()
    nan_a, nan_b = a.float().isnan(), b.float().isnan()
    steps = torch.where(nan_a | nan_b, torch.full_like(steps, math.inf), steps)
    return torch.where(nan_a & nan_b, torch.zeros_like(steps), steps)


def _compare_steps(actual: torch.Tensor, expected: torch.Tensor, dtype: str, tolerance: Tolerance) -> Comparison:
    """fp8 in representable steps (the module's docstring), a chunk at a time."""
    flat_actual, flat_expected = actual.reshape(-1), expected.reshape(-1)
    total = flat_expected.numel()
    exact = tolerance.rtol == 0 and tolerance.atol == 0
    allowed = 0 if exact else max(1, math.ceil(total * FP8_ONE_STEP_SHARE))
    far = near = 0
    first_far = first_near = None
    max_error = 0.0
    for begin in range(0, total, CHUNK_ELEMENTS):
        a, e = flat_actual[begin:begin + CHUNK_ELEMENTS], flat_expected[begin:begin + CHUNK_ELEMENTS]
        steps = fp8_steps(a, e)
        for mask, kind in ((steps > 1, "far"), (steps == 1, "near")):
            count = int(mask.sum())
            if count and (first_far if kind == "far" else first_near) is None:
                index = begin + int(mask.nonzero()[0, 0])
                first_far, first_near = (index, first_near) if kind == "far" else (first_far, index)
            far, near = (far + count, near) if kind == "far" else (far, near + count)
        error = (a.float().double() - e.float().double()).abs()
        error = torch.where(steps == 0, torch.zeros_like(error), error.nan_to_num(nan=math.inf))
        max_error = max(max_error, float(error.max()))
    too_many = near > allowed
    mismatches = far + (near if too_many else 0)
    candidates = [i for i in (first_far, first_near if too_many else None) if i is not None]
    first = tuple(int(i) for i in np.unravel_index(min(candidates), tuple(expected.shape))) if candidates else None
    name = "e4m3" if dtype == "f8e4m3" else "e5m2"
    criterion = f"equal bytes ({name}; {near} were one step off)" if exact else (
        f"one {name} step, and one step on at most {allowed} of {total} elements (near rounding "
        f"ties; {near} were one step off)")
    return Comparison(mismatches == 0, total, mismatches, max_error, first, tolerance, steps=criterion, one_step=near)
