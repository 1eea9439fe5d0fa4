"""The values an extreme draw shapes its inputs with (:func:`kernelgen.task.verify.make_inputs`):
specials, zeros, fractions and near ties, a call's float scalars and their neighbours, rows that
meet a scalar with one element, pairs of specials at one element, all-negative rows. Each one
closes a way a kernel wrong at those values passed ordinary draws; each is drawn from a generator
of its own, so the other inputs' values do not change.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any, Mapping

import torch

from kernelgen.host.plan import is_fp8
from kernelgen.task.spec import Task

SPECIAL_SHARE = 16  # up to one element in SPECIAL_SHARE is a special value, each at least once


def with_specials(values: torch.Tensor, specials: list, generator: torch.Generator) -> torch.Tensor:
    """``values`` with ``specials`` (those its dtype holds) placed at random positions: each
    at least once where there is room (at most half the elements), then repeated up to one
    element in :data:`SPECIAL_SHARE`."""
    if values.dtype == torch.bool or values.numel() == 0:
        return values
    if values.dtype.is_floating_point:
        held = [float(v) for v in specials]
    else:
        info = torch.iinfo(values.dtype)
        held = [int(v) for v in specials if isinstance(v, int) and info.min <= v <= info.max]
    if not held:
        return values
    count = min(max(len(held), values.numel() // SPECIAL_SHARE), max(1, values.numel() // 2))
    places = torch.randperm(values.numel(), generator=generator)[:count]
    flat = values.clone().reshape(-1)
    chosen = torch.tensor([held[i % len(held)] for i in range(count)], dtype=torch.float64 if
                          values.dtype.is_floating_point else torch.int64)
    flat[places] = chosen.to(values.dtype)
    return flat.reshape(values.shape)


def rows_of(values: torch.Tensor, other: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """``values`` with about a quarter of its rows (along the last axis), at least one, copied
    from ``other`` (a domain's ``same_as``)."""
    if values.dim() == 0 or values.numel() == 0:
        return values
    rows = values.reshape(-1, values.shape[-1]).clone()
    chosen = torch.randperm(rows.shape[0], generator=generator)[:max(1, rows.shape[0] // 4)]
    rows[chosen] = other.reshape(-1, values.shape[-1])[chosen]
    return rows.reshape(values.shape)


ZERO_SHARE = 8  # one element in ZERO_SHARE of a generic float input is a zero in extreme draws


def hash_name(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:7], "little")


def with_zeros(values: torch.Tensor, seed: int) -> torch.Tensor:
    """A float input drawn from a normal domain, in an extreme draw: one element in ZERO_SHARE
    set to +0.0 or -0.0. Normal draws never hit an exact zero, so a kernel wrong at zero (sign
    as ``x > 0 ? 1 : -1``, sinc as sin(pi x) / (pi x), copysign blind to -0.0) would pass;
    real data is full of zeros (padding, ReLU outputs). Drawn from a generator of its own, so
    the other inputs' values do not change; a task whose prompt promises no zeros says
    ``zeros: false`` in the input's domain."""
    if not values.dtype.is_floating_point or is_fp8(values.dtype) or values.numel() == 0:
        return values
    generator = torch.Generator().manual_seed(seed)
    pick = torch.randint(0, 2 * ZERO_SHARE, values.shape, generator=generator)
    zeros = torch.zeros((), dtype=values.dtype)
    values = torch.where(pick == 0, zeros, values)
    return torch.where(pick == 1, -zeros, values)


def with_fractions_and_near_ties(values: torch.Tensor, high: float, seed: int) -> torch.Tensor:
    """A float input whose domain is integers (for ties), in an extreme draw: half its nonzero
    elements given a random fraction (kept at or below ``high``), and along its last and its first axis,
    in each line, one other element set one step of its dtype below the line's maximum and one
    one step above its minimum. Integer values alone hide a comparison made in bf16 or f16, a
    cast that truncates 0.5, an equality "within 1e-5" and a strict test made loose; the near
    ties show them (the values stay inside the domain's bounds; NaN and infinities, an extreme
    domain's specials, stay, and the near ties are to the line's numbers)."""
    if not values.dtype.is_floating_point or is_fp8(values.dtype) or values.numel() < 2:
        return values
    generator = torch.Generator().manual_seed(seed ^ 0xF4AC)
    wide = values.to(torch.float64)
    fraction = torch.rand(values.shape, generator=generator, dtype=torch.float64)
    keep = torch.rand(values.shape, generator=generator) < 0.5
    # zeros keep their value and sign: a line whose extremum is a zero of either sign
    # (reductions.with_zero_extremum_lines) stays one
    values = torch.where(keep | ~wide.isfinite() | (wide == 0), wide,
                         torch.clamp(wide + fraction, max=float(high))).to(values.dtype)
    for axis in sorted({values.dim() - 1, 0}):
        lines = values.movedim(axis, -1).reshape(-1, values.shape[axis]).clone()
        if lines.shape[1] < 2:
            continue
        rows = torch.arange(lines.shape[0])
        for find, step in ((torch.argmax, -1.0), (torch.argmin, 1.0)):
            at = find(torch.where(lines.isfinite(), lines.to(torch.float64), step * math.inf), dim=1)  # of the numbers
            other = torch.randint(0, lines.shape[1] - 1, (lines.shape[0],), generator=generator)
            other = other + (other >= at).long()  # any element but the extreme itself
            extreme = lines[rows, at]
            lines[rows, other] = torch.nextafter(extreme, torch.full_like(extreme, step * math.inf))
        values = lines.reshape(*[s for i, s in enumerate(values.shape) if i != axis], values.shape[axis]).movedim(-1, axis)
    return values


def scalar_neighbours(scalars: list[float], dtype: torch.dtype) -> torch.Tensor:
    """Each float scalar of a call in ``dtype`` and the values one step of ``dtype`` above and
    below it (finite ones)."""
    exact = torch.tensor(scalars, dtype=torch.float64).to(dtype)
    near = torch.cat([exact, torch.nextafter(exact, torch.full_like(exact, math.inf)),
                      torch.nextafter(exact, torch.full_like(exact, -math.inf))])
    return near[near.isfinite()]


def float_scalars(task: Task, inputs: Mapping[str, Any]) -> list[float]:
    """The call's float scalar arguments."""
    return [value for spec in task.signature.inputs if spec.shape is None and spec.is_plain
            and isinstance(value := inputs.get(spec.name), float)]


def with_scalar_neighbours(values: torch.Tensor, domain, sizes: Mapping[str, int], scalars: list[float],
                           seed: int) -> torch.Tensor:
    """A float input, in an extreme draw: each float scalar of the call (a threshold, a clamp
    bound) among its values, with the values one step of its dtype above and below it, those
    inside the domain's bounds (:mod:`kernelgen.task.magnitude` leaves them unscaled). A test
    made ``>=`` for ``>``, or made in bf16, differs from the operator only there, and
    continuous draws never land on it."""
    if not values.dtype.is_floating_point or is_fp8(values.dtype) or not scalars:
        return values
    low, high = domain.bounds(sizes) if domain is not None and domain.kind != "normal" else (-math.inf, math.inf)
    held = [v for v in scalar_neighbours(scalars, values.dtype).double().tolist() if low <= v <= high]
    return with_specials(values, held, torch.Generator().manual_seed(seed ^ 0x5CA1)) if held else values


def with_rows_at_scalars(values: torch.Tensor, domain, sizes: Mapping[str, int], scalars: list[float],
                         seed: int) -> torch.Tensor:
    """A float input of two or more rows (along the last axis), in an extreme draw: for each
    float scalar of the call, about an eighth of the rows hold every element at or below
    min(scalar, 0) but one, which is the scalar or the value one step of the dtype above it
    (alternating), and as many the mirror image (at or above max(scalar, 0), one element at or
    one step below it). The neighbours :func:`with_scalar_neighbours` scatters are hidden by a
    row reduction over a test against the scalar: ``any(x > threshold)`` is true on a row that
    holds a larger element whatever a kernel does at the tie. Zero bounds the other elements,
    so a magnified draw (:mod:`kernelgen.task.magnitude`, which keeps the scalar's neighbours)
    keeps them on their side; all stay inside the domain's bounds. An element on the wrong side
    is reflected across the bound, not clamped onto it: clamped, a row held copies of the scalar
    beside its neighbour, a row no f32 statistic can take (layer_norm_optional's N = 2 row
    [eps, eps - 1 ulp], its mean rounded onto one element, failed every f32 kernel), and those
    copies, being the scalar, stayed unscaled in a magnified draw."""
    if not values.dtype.is_floating_point or is_fp8(values.dtype) or not scalars or values.dim() < 2 \
            or values.numel() == 0 or values.numel() // values.shape[-1] < 2:
        return values
    low, high = domain.bounds(sizes) if domain is not None and domain.kind != "normal" else (-math.inf, math.inf)
    generator = torch.Generator().manual_seed(seed ^ 0xA75C)
    for scalar in scalars:
        values = _rows_at_scalar(values, scalar, low, high, generator)
    return values


def _rows_at_scalar(values: torch.Tensor, scalar: float, low: float, high: float,
                    generator: torch.Generator) -> torch.Tensor:
    """One scalar's rows of :func:`with_rows_at_scalars`."""
    rows = values.reshape(-1, values.shape[-1]).clone()
    count = rows.shape[0]
    exact = torch.tensor(scalar, dtype=torch.float64).to(values.dtype)
    order = torch.randperm(count, generator=generator)
    share = max(1, count // 8)
    for side, chosen in ((1.0, order[:share]), (-1.0, order[share:2 * share])):
        step = torch.nextafter(exact, torch.tensor(side * math.inf, dtype=values.dtype))
        bound = min(float(exact), 0.0) if side > 0 else max(float(exact), 0.0)
        bound = min(max(bound, low), high)
        if not (math.isfinite(float(step)) and low <= min(float(step), float(exact)) and
                max(float(step), float(exact)) <= high and (bound - float(exact)) * side <= 0):
            continue
        wide = rows[chosen].double()
        # reflected across the bound, not clamped onto it (see with_rows_at_scalars)
        capped = torch.where((wide - bound) * side > 0, 2 * bound - wide, wide).clamp(low, high).to(values.dtype)
        at = torch.randint(0, rows.shape[1], (len(chosen),), generator=generator)
        tip = torch.where(torch.arange(len(chosen)) % 2 == 0, step, exact).to(values.dtype)
        capped[torch.arange(len(chosen)), at] = tip
        rows[chosen] = capped
    return rows.reshape(values.shape)


def with_special_pairs(first: torch.Tensor, second: torch.Tensor, first_specials: list, second_specials: list,
                       seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Two float inputs of one shape whose extreme domains both have specials, in an extreme
    draw: every pair of their specials (each one's that its dtype holds) at the same element, each
    pair at least once where there is room (at most half the elements), then repeated up to one
    element in 2 * :data:`SPECIAL_SHARE`. Placed independently, two specials meet at an element
    rarely: logaddexp(-inf, -inf), inf - inf in a difference, max(nan, nan) went undrawn, and a
    formula that makes NaN of two equal infinities (|x - y| = inf - inf) passed."""
    if first.numel() < 2:
        return first, second
    pairs = [(a, b) for a in first_specials for b in second_specials]
    count = min(max(len(pairs), first.numel() // (2 * SPECIAL_SHARE)), first.numel() // 2)
    places = torch.randperm(first.numel(), generator=torch.Generator().manual_seed(seed ^ 0x9A125))[:count]
    ours = [pairs[i % len(pairs)] for i in range(count)]
    a, b = first.clone().reshape(-1), second.clone().reshape(-1)
    a[places] = torch.tensor([float(x) for x, _ in ours], dtype=torch.float64).to(a.dtype)
    b[places] = torch.tensor([float(y) for _, y in ours], dtype=torch.float64).to(b.dtype)
    return a.reshape(first.shape), b.reshape(second.shape)


def with_negative_rows(values: torch.Tensor, seed: int, low: float | None = None) -> torch.Tensor:
    """An input of two or more rows drawn from a normal domain (floats), or from an integers domain whose ``low`` is
    negative (floats or integers), in an extreme draw: about a quarter of its rows (along the last axis) all
    negative (NaN and zeros there made -1; integers no lower than ``low``, their NaN kept). A row maximum whose
    masked lanes read 0 instead of -inf is right on every row that holds a positive value or a NaN, and normal
    rows of more than a few elements all do, as do rows of integers in [-20, 20] (an argmax reading 0 in its
    masked lanes passed: tools/mutants.py). A single row keeps its signs: all negative, it would hide what an
    elementwise kernel does to positive values."""
    if is_fp8(values.dtype) or values.dim() < 2 or values.numel() == 0 or values.numel() // values.shape[-1] < 2 \
            or values.dtype == torch.bool or not (values.dtype.is_floating_point or low is not None):
        return values
    wide = values.to(torch.float64)
    # -|x|, not shifted (a row far from zero against its spread is another test), with NaN and
    # zeros made -1, so that no row's maximum is NaN or 0
    negative = torch.where(wide.isnan() | (wide == 0), -1.0, -wide.abs())
    if low is not None:  # an integers domain's specials stay: its NaN and infinities are placed on purpose
        negative = torch.where(wide.isfinite(), negative.clamp(min=low), -wide.abs())
    return rows_of(values, negative.to(values.dtype), torch.Generator().manual_seed(seed ^ 0x5EED))


# The fraction bits of each float dtype (its integers are exact below 2**(bits + 1)).
_FRACTION_BITS = {torch.float16: 10, torch.bfloat16: 7, torch.float32: 23, torch.float64: 52}


def rounding_edges(dtype: torch.dtype, narrower: list[torch.dtype]) -> list[float]:
    """Values of ``dtype`` beside the thresholds where rounding changes its answer, both signs: to an
    integer (0.5 and its neighbours, the neighbours of 1.5 and 2.5, and the odd integer and the half
    at the top of the fractions, where x + 0.5 rounds: floor(x + 0.5) is wrong at 0.5 - ulp/2 and at
    2**52 + 1 in f64), and, for each dtype of ``narrower``, its largest value, the values just below
    and at the threshold past which it overflows (f16: 65504 < x < 65520 rounds to 65504, 65520 to
    inf), its least normal, and half its least subnormal and the value after it. Those ``dtype`` does
    not hold exactly are left out."""
    def after(value: float, toward: float) -> float:
        return float(torch.nextafter(torch.tensor(value, dtype=dtype), torch.tensor(toward, dtype=dtype)))

    bits = _FRACTION_BITS[dtype]
    found = [0.5, after(0.5, 0.0), after(0.5, 1.0), after(1.5, 0.0), after(2.5, 3.0), 2.0 ** bits + 1,
             2.0 ** (bits - 1) + 0.5]
    for narrow in narrower:
        info = torch.finfo(narrow)
        past = info.max + 2.0 ** (math.floor(math.log2(info.max)) - _FRACTION_BITS[narrow] - 1)  # max + ulp / 2
        found += [info.max, after(past, 0.0), past, info.tiny, info.smallest_normal / 2.0 ** (_FRACTION_BITS[narrow] + 1),
                  after(info.smallest_normal / 2.0 ** (_FRACTION_BITS[narrow] + 1), 1.0)]
    held = [v for v in found if math.isfinite(v) and float(torch.tensor(v, dtype=dtype)) == v]
    return held + [-v for v in held]


def with_rounding_edges(values: torch.Tensor, narrower: list[torch.dtype], seed: int) -> torch.Tensor:
    """A float input of a full-bits extreme draw (a cast's, a rounding's: every bit pattern at
    random) with :func:`rounding_edges` among its values: a bit pattern lands in f16's band
    (65504, 65520) at about one element in a million, and on 0.5 - ulp/2 in f64 never (red-team round
    34: a cast saturating to inf past 65504, a round as floor(|x| + 0.5))."""
    if not values.dtype.is_floating_point or values.dtype not in _FRACTION_BITS:
        return values
    return with_specials(values, rounding_edges(values.dtype, narrower), torch.Generator().manual_seed(seed ^ 0xED6E))
