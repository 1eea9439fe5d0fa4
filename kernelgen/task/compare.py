"""Comparing a kernel's output with the reference's, with tolerances by dtype.

f32 uses rtol 1e-4 (the GPU's approximate ``exp``, ``rsqrt`` and division differ from the
CPU's correctly rounded ones by a few ulp, which 1e-5 would fail), f16 and bf16 use 1e-2,
f64 1e-9 (libdevice's double functions are within a few ulp; a kernel that computes an f64
result in f32, about 6e-8 off, fails);
integers and booleans must be equal; a task's ``signed_zeros`` also asks each zero for the
reference's sign (copysign's point). NaN equals NaN, so an element that both leave
unwritten (poison) counts as equal, and one that only the kernel leaves unwritten does not.

Outputs in representable steps: fp8 outputs (e4m3, e5m2) always, f16 and bf16 outputs where
the task's tolerance says ``steps`` (a task whose reference computes an f32 value, or a wider
one, and rounds it once at the store, as torch's f16/bf16 elementwise ops do in f32 "opmath")
or is exact (rtol = atol = 0). With 2 to 10 mantissa bits a tolerance wide enough for a near
tie passes a kernel that is a step off everywhere: one fp8 step is 1/16 to 1/4 of the value,
f16's 1e-2 is ten steps, bf16's two, so a truncating or round-away cast, a bit-hack rsqrt two
f16 steps off, or values below atol flushed to zero passed. An element may be one step off the
reference only where the two sides round a value near a tie differently (a reference may round
from f64 where the kernel rounds from f32; the GPU's ``exp`` and ``rsqrt`` are a few f32 ulp
off), which is rare: at most :data:`ONE_STEP_SHARE` of the elements (at least one) may be one
step off, none more; where the task gives an atol with ``steps``, an element within it of the
reference counts as equal (a result that cancels to near zero in f32, as a layer norm's
``normed * weight + bias`` does, is many steps off from a few f32 ulps of its terms). The fp8 goldens are one step off on ~0.3% of their elements; a truncating
cast is on ~40% (fp8) to ~50% (bf16). A tolerance of rtol = atol = 0 asks for exact equality (a
copy, transpose or gather, or an fp8 task whose reference casts the kernel's own f32 value once
as the language does): a cast that rounds twice (through f16, ~0.4% of normal draws a step off)
or data moved through a narrower format fails it; ``signed_zeros`` makes -0.0 differ from +0.0
there too (steps count them as one value).

Other float outputs also pass where a task is ill-conditioned at the drawn inputs: an element
within :data:`REFERENCE_ERROR_FACTOR` times the reference's own rounding error there (its result
in the task's dtype against its result on f64 copies of the inputs,
:mod:`kernelgen.task.wide_reference`) of both results is accepted whatever rtol and atol say,
where the two differ as rounding does (by at most :data:`ROUNDING_GAP_SHARE` of the larger).
Stepped, exact and integer outputs have no such floor.

A draw whose inputs carry a large common offset (:mod:`kernelgen.task.offset`) is ill-conditioned
by design; there a float element, stepped or not, also passes within a radius of the exact result
that rounding the inputs gives (``around``: the centre and radius, element by element).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch


# The share of a stepped output's elements that may be one representable step off the reference.
ONE_STEP_SHARE = 1 / 32
FP8_DTYPES = ("f8e4m3", "f8e5m2")
# Compared in steps where the tolerance asks (``steps``, or rtol = atol = 0); fp8 always.
HALF_DTYPES = ("f16", "bf16")
STEP_NAMES = {"f8e4m3": "e4m3", "f8e5m2": "e5m2", "f16": "f16", "bf16": "bf16"}

# How far a float element a may be, where the tolerance alone fails it, from the reference e (in
# the task's dtypes) and from the reference's f64 result w, in units of the reference's own error
# there, |e - w|: within 2 of both. Above 1: a kernel computing in f64 is exactly 1 from e; from
# both, or an answer could lie 3 errors from w on the far side of e. Measured on
# standardize_rows (uniform [-3, 13], 2M rows each of N = 2, 3, 4; the golden's arithmetic in
# torch, as the interpreter gives it): the golden mismatched rtol/atol on 4 elements, at most 0.08
# reference errors off the reference (so at most 1.08 off the f64 result); a variance divided by N
# and a bf16 result mismatch on 46% to 100% of the elements, every one of them beyond 2 reference
# errors off the reference (all but 2 beyond 4). On rows a few ulps apart (not the task's draws)
# any f32 answer is noise: the golden was up to 6 off at N = 33.
REFERENCE_ERROR_FACTOR = 2.0
# Rounding moves a result by part of its size, another function by all of it: where the reference
# and its f64 result differ by more than this share of the larger, there is no floor. A reference
# whose f64 run computes otherwise (a branch on x.dtype, x * 2 against x * 5: 60%; nan_to_num of an
# overflow, f32's largest value against 2.7e43: 100%; an f16 input compared with an f32 scalar, which
# torch rounds to f16 and f64 does not, so that a `>=` for `>` kernel passed at the threshold: 130%)
# gets none; standardize_rows' ill-conditioned row moves by at most a third (0.123 against 0.185).
ROUNDING_GAP_SHARE = 0.5
FLOOR_CRITERION = "twice the reference's own error in its dtype"  # REFERENCE_ERROR_FACTOR in words

# Elements compared at a time: a GPU draw of up to 4 GB compares without several f64 copies
# of the whole output at once.
CHUNK_ELEMENTS = 1 << 24

# A centre, a radius (a float output's shape, f64, NaN where there is none) and the criterion in
# words: an element within the radius of the centre passes (``compare_tensors``' ``around``).
Around = tuple[torch.Tensor, torch.Tensor, str]


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float
    # A zero must have the reference's sign too (isclose finds -0.0 equal to +0.0).
    signed_zeros: bool = False
    # f16 and bf16 compare in representable steps, as fp8 always does (the module's docstring).
    steps: bool = False
    # In steps: an element within this of the reference counts as equal (a value that cancels).
    step_atol: float = 0.0

    @property
    def exact(self) -> bool:
        return self.rtol == 0 and self.atol == 0


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
    # In steps: the criterion, and how many elements were exactly one step off.
    steps: str | None = None
    one_step: int = 0
    # Whether the reference's own error widened the tolerance (REFERENCE_ERROR_FACTOR).
    floored: bool = False
    # What ``around`` said in words, where it widened the tolerance.
    around: str | None = None

    @property
    def criterion(self) -> str:
        """What an element had to meet, for a message."""
        signs = ", zeros' signs" if self.tolerance.signed_zeros else ""
        floor = f" and {FLOOR_CRITERION}" if self.floored else ""
        around = f", or {self.around}" if self.around else ""
        return (self.steps or f"rtol={self.tolerance.rtol:g} atol={self.tolerance.atol:g}{signs}{floor}") + around

    def __str__(self) -> str:
        if self.shape_mismatch:
            return f"mismatch: {self.shape_mismatch}"
        verdict = "ok" if self.ok else "mismatch"
        where = f", first at {list(self.first_mismatch)}" if self.first_mismatch is not None else ""
        return (f"{verdict}: max abs error {self.max_abs_error:.3g}, {self.mismatches} of {self.total} elements "
                f"outside {self.criterion}{where}")


def floorable(dtype: str, tolerance: Tolerance) -> bool:
    """Whether an output of ``dtype`` compared under ``tolerance`` takes the reference's own
    error as a floor: a float compared by rtol and atol (not in steps, not exactly)."""
    return not stepped(dtype, tolerance) and not tolerance.exact and _floating(dtype)


def _floating(dtype: str) -> bool:
    return dtype in TOLERANCES and TOLERANCES[dtype].rtol > 0


def stepped(dtype: str, tolerance: Tolerance) -> bool:
    """Whether an output of ``dtype`` compares in representable steps (the module's docstring)."""
    return dtype in FP8_DTYPES or (dtype in HALF_DTYPES and (tolerance.steps or tolerance.exact))


def compare_tensors(actual: torch.Tensor, expected: torch.Tensor, dtype: str,
                    tolerance: Tolerance | None = None, wide: torch.Tensor | None = None,
                    around: Sequence[Around] = (), overflow: bool = False) -> Comparison:
    """Compare a kernel's output with the reference's, on the reference's device (a GPU
    compares a 1 GB output in milliseconds where two CPU threads took 30 s). ``wide``
    (``expected``'s shape, f64, NaN where there is none): the reference's result on f64 inputs;
    where the tolerance fails an element, it passes within :data:`REFERENCE_ERROR_FACTOR` times
    the reference's own error (|expected - wide|) of both; only where :func:`floorable`.
    ``around`` (each a centre and radius: ``expected``'s shape, f64, NaN where there is none; and
    the criterion in words): a float element within the radius of a centre passes too.

    An infinity against a finite value of its sign at the dtype's largest (not in steps) is
    rounding where the exact result lies within the tolerance of that largest value: ``wide``'s
    (finite there) or, with ``overflow`` (two results of one kernel, neither exact), either side's.
    A reference's infinity that is exact (1/0, the max of a row of -inf) takes no finite stand-in."""
    tolerance = tolerance or TOLERANCES[dtype]
    actual, expected = actual.detach().to(expected.device), expected.detach()
    if actual.shape != expected.shape:
        return Comparison(False, expected.numel(), expected.numel(), math.inf, None, tolerance,
                          f"shape {list(actual.shape)}, expected {list(expected.shape)}")
    if stepped(dtype, tolerance):
        return _compare_steps(actual, expected, dtype, tolerance, around)
    floating = _floating(dtype)
    floor = wide.to(expected.device).reshape(-1) if wide is not None and floorable(dtype, tolerance) else None
    largest = torch.finfo(actual.dtype).max if actual.dtype.is_floating_point else math.inf
    flat_actual, flat_expected = actual.reshape(-1), expected.reshape(-1)
    mismatches, first_flat, max_error = 0, None, 0.0
    for begin in range(0, flat_expected.numel(), CHUNK_ELEMENTS):  # bounded temporaries
        a_part = flat_actual[begin:begin + CHUNK_ELEMENTS]
        e_part = flat_expected[begin:begin + CHUNK_ELEMENTS]
        if floating:
            a, e = a_part.double(), e_part.double()
            close = torch.isclose(a, e, rtol=tolerance.rtol, atol=tolerance.atol, equal_nan=True)
            if overflow:
                close |= _overflows_within_tolerance(a, e, tolerance, largest) | \
                    _overflows_within_tolerance(e, a, tolerance, largest)
            if floor is not None:
                w = floor[begin:begin + CHUNK_ELEMENTS]  # NaN (no floor) compares false
                close |= _overflows_within_tolerance(a, e, tolerance, largest, w) | \
                    _overflows_within_tolerance(e, a, tolerance, largest, w)
                gap = (e - w).abs()
                # An infinite reference has no error of its own to floor by: exp(100) in f32 is inf
                # (its f64 result 2.7e43), and an infinite gap passed any value there.
                own = torch.where(e.isfinite() & (gap <= ROUNDING_GAP_SHARE * torch.maximum(e.abs(), w.abs())),
                                  REFERENCE_ERROR_FACTOR * gap, torch.zeros_like(gap))
                close |= ((a - e).abs() <= own) & ((a - w).abs() <= own)
            for centred in around:
                close |= _within(a, centred, begin)
            if tolerance.signed_zeros:
                close &= ~((a == 0) & (e == 0) & (a.signbit() != e.signbit()))
            same = (a == e) | (a.isnan() & e.isnan())
            error = torch.where(same, torch.zeros_like(a), (a - e).abs().nan_to_num(nan=math.inf, posinf=math.inf))
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
    return Comparison(mismatches == 0, actual.numel(), mismatches, max_error, first, tolerance,
                      floored=floor is not None, around=_words(around) if floating else None)


def _words(around: Sequence[Around]) -> str | None:
    """What ``around``'s criteria say, joined (None where there is none)."""
    return " or ".join(centred[2] for centred in around) or None


def _within(values: torch.Tensor, around: Around, begin: int) -> torch.Tensor:
    """Where a chunk of values (from flat index ``begin``) lies within ``around``'s radius of its
    centre (false where either is NaN)."""
    centre, radius = (t.to(values.device).reshape(-1)[begin:begin + values.numel()] for t in around[:2])
    return (values.double() - centre).abs() <= radius


def _overflows_within_tolerance(inf: torch.Tensor, finite: torch.Tensor, tolerance: Tolerance,
                                largest: float, exact: torch.Tensor | None = None) -> torch.Tensor:
    """Where ``inf`` is an infinity and ``finite`` a value of its sign whose tolerance reaches
    past the dtype's largest finite value: the kernel's rounding within tolerance may overflow
    there (a cumprod reaching 3.38e38 in f32 rounds to inf on the way), or the reference's may.
    With ``exact`` (the f64 result, NaN where it is not finite), only where that lies within the
    tolerance of the largest value too: 1/0 is inf, not f32's largest value."""
    near = inf.isinf() & finite.isfinite() & (inf.sign() == finite.sign()) & \
        (finite.abs() * (1 + tolerance.rtol) + tolerance.atol > largest)
    if exact is None:
        return near
    return near & (exact.abs() <= largest * (1 + tolerance.rtol) + tolerance.atol)


def growth(before: torch.Tensor, after: torch.Tensor) -> float:
    """How much an output's largest finite magnitude grew from ``before`` to ``after`` (at least 1;
    1 where ``before`` has none): the factor a draw that scales its inputs scales atol by."""
    top = [float(v[v.isfinite()].abs().max()) if v.isfinite().any() else 0.0 for v in (before.double(), after.double())]
    return max(1.0, top[1] / top[0]) if top[0] > 0 else 1.0


def representable_steps(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """How many representable values of their float dtype lie between ``a`` and ``b``, element
    by element (0: equal; +0.0 and -0.0 are one value; NaN is 0 from NaN and infinitely far from
    any number; an infinity is one step past the largest finite value)."""
    width = 8 * a.element_size()
    sign = 1 << (width - 1)

    def key(x: torch.Tensor) -> torch.Tensor:
        # Sign and magnitude, in order: a float's bits below the sign count its steps from zero.
        same_width = {8: torch.uint8, 16: torch.int16, 32: torch.int32}[width]
        bits = x.contiguous().view(same_width).to(torch.int64 if width == 32 else torch.int32) & (2 * sign - 1)
        magnitude = bits & (sign - 1)
        return torch.where(bits >= sign, -magnitude, magnitude)

    steps = (key(a) - key(b)).abs().double()
    nan_a, nan_b = a.float().isnan(), b.float().isnan()
    steps = torch.where(nan_a | nan_b, torch.full_like(steps, math.inf), steps)
    return torch.where(nan_a & nan_b, torch.zeros_like(steps), steps)


def _compare_steps(actual: torch.Tensor, expected: torch.Tensor, dtype: str, tolerance: Tolerance,
                   around: Sequence[Around] = ()) -> Comparison:
    """fp8, f16 or bf16 in representable steps (the module's docstring), a chunk at a time; an
    element within the radius of one of ``around``'s centres counts as equal."""
    flat_actual, flat_expected = actual.reshape(-1), expected.reshape(-1)
    total = flat_expected.numel()
    allowed = 0 if tolerance.exact else max(1, math.ceil(total * ONE_STEP_SHARE))
    far = near = 0
    first_far = first_near = None
    max_error = 0.0
    for begin in range(0, total, CHUNK_ELEMENTS):
        a, e = flat_actual[begin:begin + CHUNK_ELEMENTS], flat_expected[begin:begin + CHUNK_ELEMENTS]
        steps = representable_steps(a, e)
        # An infinity is one step past the largest value, but not a rounding tie's neighbour: f16's
        # 1/6e-8 is inf, not 65504 (a value rounds to inf from 65520 up, a band no draw finds).
        steps[a.float().isinf() != e.float().isinf()] = math.inf
        error = (a.float().double() - e.float().double()).abs()
        error = torch.where(steps == 0, torch.zeros_like(error), error.nan_to_num(nan=math.inf, posinf=math.inf))
        max_error = max(max_error, float(error.max()))
        if tolerance.step_atol:
            steps[error <= tolerance.step_atol] = 0
        for centred in around:
            steps[_within(a.float(), centred, begin)] = 0
        if tolerance.signed_zeros:
            steps[(a == 0) & (e == 0) & (a.signbit() != e.signbit())] = math.inf
        for mask, kind in ((steps > 1, "far"), (steps == 1, "near")):
            count = int(mask.sum())
            if count and (first_far if kind == "far" else first_near) is None:
                index = begin + int(mask.nonzero()[0, 0])
                first_far, first_near = (index, first_near) if kind == "far" else (first_far, index)
            far, near = (far + count, near) if kind == "far" else (far, near + count)
    too_many = near > allowed
    mismatches = far + (near if too_many else 0)
    candidates = [i for i in (first_far, first_near if too_many else None) if i is not None]
    first = tuple(int(i) for i in np.unravel_index(min(candidates), tuple(expected.shape))) if candidates else None
    name, signs = STEP_NAMES[dtype], ", zeros' signs" if tolerance.signed_zeros else ""
    within = f" (or atol={tolerance.step_atol:g})" if tolerance.step_atol else ""
    within += f" (or {_words(around)})" if around else ""
    criterion = f"exact equality ({name}{signs}; {near} were one step off)" if tolerance.exact else (
        f"one {name} step{within}, and one step on at most {allowed} of {total} elements (near rounding "
        f"ties{signs}; {near} were one step off)")
    return Comparison(mismatches == 0, total, mismatches, max_error, first, tolerance, steps=criterion, one_step=near)
