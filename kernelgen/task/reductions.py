"""Draws for reductions: values that show a sum kept narrower than a prompt asks.

A reduction into an f16 or bf16 output may keep its sums in f32 only in part, and values of one
magnitude hide the narrow part, since the output's tolerance (1e-2: ten f16 steps) is wider than
a few roundings of a sum of about the result's size. Two shapes of it, and the draws that show them:

- a running sum kept in the narrow dtype, lane by lane: it loses each small value added to a
  large one (:func:`with_mixed_magnitude_rows`, in every extreme draw);
- partial sums rounded to the narrow dtype before the final sum (a split-K gemv that
  atomic_adds each split's partial into its f16 output; per-chunk sums stored as f16): each
  rounding is relative to the partial, not to the result, and with both of one size the
  tolerance covers them (:func:`with_cancelling_halves`, CPU mode's ``cancelling`` draw, makes
  the partials large and the result small).

Neither is drawn for the inputs of a golden's ``dot`` (:func:`golden_dots`): the GPU's tensor
cores do not round each add to nearest, so the goldens themselves drift on such values.

A reduction that takes an extremum or its index (amax, argmax, argmin) counts a NaN as the
extremum, and a kernel that merges blocks with ``>`` drops it; with NaN at one element in 48 of
an extreme draw every long line holds one in its first block, where a kernel that handles NaN
within a block only is right: :func:`with_lone_nan_lines` gives some lines a single NaN anywhere.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

import torch

from kernelgen.check.sequence import nodes
from kernelgen.host.plan import is_fp8
from kernelgen.lang import nodes as L
from kernelgen.task.spec import Task

# The order of a draw on the ordinary domains that takes the extreme draws' lines of extrema at their ends
# (:func:`with_end_extremum_lines`, :func:`with_end_true_lines`).
END_LINES = "end_lines"
# Mantissa bits of the narrow float dtypes whose rows :func:`with_mixed_magnitude_rows` mixes.
NARROW_MANTISSA = {torch.float16: 10, torch.bfloat16: 7}


def with_mixed_magnitude_rows(values: torch.Tensor, seed: int) -> torch.Tensor:
    """An f16 or bf16 input of two or more rows (along the last axis) drawn from a normal
    domain, in an extreme draw: about a quarter of its rows hold a large value L = +-16 in a
    leading part (half the row in some, an eighth in others) and the small value L * 2**-(p + 1)
    (half a step of the dtype at L, p its mantissa bits) in the rest. A running sum kept in the
    input's dtype, as a per-lane accumulator of a row reduction is when a kernel keeps it narrow,
    holds L (or more) after the leading part wherever its lanes span no more than that part, and
    each small value added to it is a tie that rounds back (to even): it loses them all, a few
    percent of an eighth-led row's sum at 8 terms a lane (N = 8192 in lanes of 1024), while an
    f32 accumulation keeps every bit. Rows of uniform magnitude hide this whatever their scale.
    L is large against the normal rows (16, not 1) so that such a row's output stays large
    against the atol, which a magnified draw (:mod:`kernelgen.task.magnitude`) scales up with
    the largest output: a bf16 mean of 2 loses 0.05 there, past atol + rtol * 2."""
    if values.dtype not in NARROW_MANTISSA or values.dim() < 2 or values.numel() == 0 \
            or values.numel() // values.shape[-1] < 2:
        return values
    generator = torch.Generator().manual_seed(seed ^ 0x313D)
    rows = values.reshape(-1, values.shape[-1]).clone()
    chosen = torch.randperm(rows.shape[0], generator=generator)[:max(1, rows.shape[0] // 4)]
    # the chosen rows in turn: an eighth-led one first (the bf16 mean's), then a half-led one
    leading = torch.where(torch.arange(len(chosen)) % 2 == 0, -(-rows.shape[1] // 8), -(-rows.shape[1] // 2))
    sign = torch.where(torch.rand(len(chosen), generator=generator) < 0.5, -16.0, 16.0).double()
    small = 2.0 ** -(NARROW_MANTISSA[values.dtype] + 1)
    mixed = torch.where(torch.arange(rows.shape[1])[None, :] < leading[:, None], 1.0, small).double() * sign[:, None]
    rows[chosen] = mixed.to(values.dtype)
    return rows.reshape(values.shape)


def reduces_rows(task: Task, spec: L.Input) -> bool:
    """Whether an output is ``spec`` reduced along its last axis (``[M]`` or ``[M, 1]`` of an
    ``[M, N]`` input), whose rows a kernel sums lane by lane: elsewhere mixed-magnitude rows only
    raise a magnified draw's atol past what other wrong kernels differ by (a tanh GELU)."""
    rows = list(spec.shape[:-1])
    return len(spec.shape) >= 2 and any(list(out.shape or []) in (rows, rows + [1]) for out in task.signature.outputs)


def reduced_axes(task: Task, spec: L.Input, float_columns: bool = False) -> list[int]:
    """The axes of ``spec`` an output reduces it along: its last (:func:`reduces_rows`) and, for a
    matrix, its first (an output ``[N]`` or ``[1, N]`` of an ``[M, N]`` input; with
    ``float_columns``, a float one only: a sum or a variance of the columns, not a count)."""
    columns = [list(spec.shape[1:]), [1] + list(spec.shape[1:])] if len(spec.shape) == 2 else []
    outputs = [out for out in task.signature.outputs if not float_columns or out.dtype in ("f16", "bf16", "f32", "f64")]
    return [axis for axis, reduced in ((len(spec.shape) - 1, reduces_rows(task, spec)),
                                       (0, any(list(out.shape or []) in columns for out in outputs)))
            if reduced]


def selected_axes(task: Task, spec: L.Input) -> list[int]:
    """The axes of ``spec`` an output takes a fixed count of elements along: an output of its shape but for that
    axis, there a literal (a row's top 64 of N columns, ``[M, 64]`` of ``[M, N]``). Such an output depends on the
    whole line as a reduced one does, and neither the shape nor the probe of same-shaped outputs
    (:mod:`kernelgen.task.line_statistics`) said so: a candidate loop of a top-k that drops a row's last element
    passed (mutation testing, tools/mutants.py)."""
    shape = list(spec.shape or [])
    return [axis for axis in range(len(shape)) if isinstance(shape[axis], str) and any(
        len(out.shape or []) == len(shape) and isinstance(out.shape[axis], int)
        and all(a == b for i, (a, b) in enumerate(zip(out.shape, shape)) if i != axis)
        for out in task.signature.outputs)]


def with_lone_nan_lines(values: torch.Tensor, axis: int, seed: int) -> torch.Tensor:
    """A float input holding NaN, in an extreme draw of a reduction along ``axis``: about a
    quarter of its lines along that axis that hold NaN hold exactly one, at a uniformly random
    place (their other NaNs replaced by one of the line's numbers; lines without NaN, such as
    all-negative rows, stay as they are). NaN placed at one element in 48 puts one in
    nearly every line's first block of 1024, so a kernel that merges later blocks with ``>``
    (the first block's argmax counted NaN, the merge never does) passed; a lone NaN lies past
    the first block in most long lines."""
    if not values.dtype.is_floating_point or values.numel() == 0:
        return values
    generator = torch.Generator().manual_seed(seed ^ 0x10AE)
    moved = values.movedim(axis, -1)
    lines = moved.reshape(-1, moved.shape[-1]).clone()
    holding = lines.isnan().any(dim=1).nonzero().flatten()
    if len(holding) == 0:
        return values
    chosen = holding[torch.randperm(len(holding), generator=generator)[:max(1, len(holding) // 4)]]
    lone = lines[chosen]
    # one of the line's own numbers for its NaNs: its maximum and minimum (and their near ties) stay
    pick = torch.where(lone.isfinite(), torch.rand(lone.shape, generator=generator), -1.0).argmax(dim=1)
    fill = lone[torch.arange(len(chosen)), pick].nan_to_num(nan=0.0)
    lone = torch.where(lone.isnan(), fill[:, None], lone)
    lone[torch.arange(len(chosen)), torch.randint(lone.shape[1], (len(chosen),), generator=generator)] = math.nan
    lines[chosen] = lone
    return lines.reshape(moved.shape).movedim(-1, axis)


def with_end_extremum_lines(values: torch.Tensor, axis: int, low: float | None, high: float | None,
                             seed: int) -> torch.Tensor:
    """A float input of a normal domain (``low``, ``high`` None) or an integers one (its bounds), in an extreme draw,
    along ``axis`` (a reduced one): up to four ordinary lines (finite, with values of both signs, else ones
    holding NaN or infinities, made finite; the structured ones, all negative or with a zero extremum, stay as
    they are) with their only maximum at their last element, their only maximum at their first, their only
    minimum at their last, their only minimum at their first: one past the line's extremum, or at the domain's
    bound with the rest of the line kept within it; for integers, its middle element one step of the dtype
    inside it (a near tie, as :func:`kernelgen.task.extreme_values.with_fractions_and_near_ties` gives every
    such line). A loop that skips a line's first element, or its last one where that is alone in the last chunk
    (:func:`kernelgen.task.draws.multiple_draws`), is right wherever the extremum lies elsewhere or is held
    twice, as nearly every drawn line's is (an argmax, a column argmin, a row's absmax: mutation testing,
    tools/mutants.py)."""
    if not values.dtype.is_floating_point or is_fp8(values.dtype) or values.dim() == 0 or values.numel() == 0 \
            or values.shape[axis] < 2:
        return values
    generator = torch.Generator().manual_seed(seed ^ 0xE4D5)
    moved = values.movedim(axis, -1)
    lines = moved.reshape(-1, moved.shape[-1]).clone().double()
    mixed = (lines > 0).any(dim=1) & (lines < 0).any(dim=1)
    ordinary = (lines.isfinite().all(dim=1) & mixed).nonzero().flatten()
    if len(ordinary) < min(4, len(lines)):  # NaN in nearly every long line: lines holding several, made finite
        several = (~lines.isfinite()).sum(dim=1) >= 2
        ordinary = torch.cat([ordinary, (several & lines.isfinite().any(dim=1) & mixed).nonzero().flatten()])
    chosen = ordinary[torch.randperm(len(ordinary), generator=generator)[:4]].tolist()
    for line, (place, sign) in zip(chosen, ((-1, 1.0), (0, 1.0), (-1, -1.0), (0, -1.0))):
        part = lines[line].nan_to_num(nan=0.0, posinf=0.0, neginf=0.0)
        top = part.max() if sign > 0 else part.min()
        end = (top + sign).to(values.dtype)
        if (end - top.to(values.dtype)) * sign <= 0:  # one is below the dtype's step there (bf16 at 300, f32 at 1e9)
            end = torch.nextafter(top.to(values.dtype), torch.tensor(sign * math.inf, dtype=values.dtype))
        end = end.double() if end.isfinite() else top  # at the dtype's largest value: held twice, as drawn
        bound = None if low is None else (high if sign > 0 else low)
        if bound is not None and (end - bound) * sign > 0:  # past the domain: the end at its bound, the rest within
            part = part.clamp(max=bound - 1) if sign > 0 else part.clamp(min=bound + 1)
            end = torch.tensor(float(bound), dtype=part.dtype)
        part[place] = end
        if low is not None and len(part) > 2:  # integers only (elsewhere it would stand in for the end): one step
            # of the dtype inside it in the middle, a near tie, as every line of an integers domain has
            inside = torch.nextafter(end.to(values.dtype), torch.tensor(-sign * math.inf, dtype=values.dtype))
            part[len(part) // 2] = inside.double()
        lines[line] = part
    return lines.to(values.dtype).reshape(moved.shape).movedim(-1, axis)


def with_end_true_lines(values: torch.Tensor, axis: int, seed: int) -> torch.Tensor:
    """A bool input (a mask), in an extreme draw, along ``axis`` (one an output reduces or takes a statistic
    along), of lines of two or more: four lines (or as many as it has) made true at their last element only, at
    their first only, nowhere and everywhere. Drawn true one time in two, no line of a long row starts with a
    chunk wholly false, where an online softmax that shifts by a running maximum still -inf gives NaN for the
    rest of its row (``where(max == -inf, 0, max)`` forgotten: mutation testing, tools/mutants.py); nor does any
    keep nothing but its last element, past a loop that stops a chunk early."""
    if values.dtype != torch.bool or values.dim() == 0 or values.numel() == 0 or values.shape[axis] < 2:
        return values
    generator = torch.Generator().manual_seed(seed ^ 0x7E0D)
    moved = values.movedim(axis, -1)
    lines = moved.reshape(-1, moved.shape[-1]).clone()
    chosen = torch.randperm(len(lines), generator=generator)[:4].tolist()
    for line, kept in zip(chosen, ("last", "first", "none", "all")):
        lines[line] = kept == "all"
        if kept in ("last", "first"):
            lines[line, -1 if kept == "last" else 0] = True
    return lines.reshape(moved.shape).movedim(-1, axis)


def with_infinite_lines(values: torch.Tensor, axis: int, specials: list, seed: int) -> torch.Tensor:
    """A float input whose extreme domain holds an infinity, in an extreme draw of a reduction along ``axis``, of four
    lines or more: one line along that axis wholly that infinity, for each of +inf and -inf it holds (lines that
    held a NaN or an infinity where there are enough: not the finite lines drawn on purpose, such as
    :func:`with_spread_extremum_lines`'s). Infinities at one element in 48 never fill a line of two or more, and
    a line of a reduction's identity is where its initial value shows: an argmin whose index lanes start one off
    (0 - lane, 1 + lane) gives that start for a column all +inf, where torch gives 0 (mutation testing,
    tools/mutants.py); a max started at a finite sentinel gives it."""
    infinities = [v for v in (math.inf, -math.inf) if any(isinstance(s, float) and s == v for s in specials)]
    if not values.dtype.is_floating_point or values.numel() == 0 or not infinities:
        return values
    generator = torch.Generator().manual_seed(seed ^ 0x1F1E)
    moved = values.movedim(axis, -1)
    lines = moved.reshape(-1, moved.shape[-1]).clone()
    if len(lines) < 4:  # the others judge the values: a draw of one or two lines would hold nothing else
        return values
    special = (~lines.isfinite()).any(dim=1).nonzero().flatten()  # not the lines drawn finite on purpose
    pool = special if len(special) >= len(infinities) else torch.arange(len(lines))
    chosen = pool[torch.randperm(len(pool), generator=generator)[:len(infinities)]]
    for line, value in zip(chosen.tolist(), infinities):
        lines[line] = value
    return lines.reshape(moved.shape).movedim(-1, axis)


# Zeros of alternating signs in each line :func:`with_zero_extremum_lines` gives a zero extremum.
SIGNED_ZEROS = 6


def with_spread_extremum_lines(values: torch.Tensor, axis: int, low: float, high: float, seed: int) -> torch.Tensor:
    """A float input of an integer-valued domain [low, high], in an extreme draw of a reduction along ``axis``: about a
    quarter of its lines along that axis scaled to a largest magnitude k of their own, k uniform in
    1..max(|low|, |high|) (rounded to integers, within the bounds), with +-k at a random place, its only element
    of that magnitude. A long line of integers in [-254, 254] holds 254 almost surely, so a statistic of its
    extremum (absmax_quantize's scale amax / 127) was drawn at one value: a scale by the reciprocal 1/127, one
    f32 ulp off for 14 of the 254 values, passed (round 16)."""
    top = int(max(abs(low), abs(high)))
    if not values.dtype.is_floating_point or values.numel() == 0 or values.shape[axis] < 2 or top < 2:
        return values
    generator = torch.Generator().manual_seed(seed ^ 0x5B4EAD)
    moved = values.movedim(axis, -1)
    lines = moved.reshape(-1, moved.shape[-1]).clone().double()
    count, length = lines.shape
    chosen = torch.randperm(count, generator=generator)[:max(1, count // 4)]
    k = torch.randint(1, top + 1, (len(chosen), 1), generator=generator).double()
    part = lines[chosen]
    largest = part.abs().amax(dim=1, keepdim=True).clamp(min=1.0)
    part = (part * (k - 1) / largest).round().clamp(low, high)  # below k: the peak is the line's only extremum
    place = torch.randint(0, length, (len(chosen),), generator=generator)
    sign = torch.where(torch.rand(len(chosen), generator=generator) < 0.5, -1.0, 1.0).double()
    peak = sign * k[:, 0]
    part[torch.arange(len(chosen)), place] = torch.where((peak < low) | (peak > high), -peak, peak).clamp(low, high)
    lines[chosen] = part.where(part.isfinite(), lines[chosen])
    return lines.to(values.dtype).reshape(moved.shape).movedim(-1, axis)


def with_zero_extremum_lines(values: torch.Tensor, axis: int, seed: int) -> torch.Tensor:
    """A float input of an integer-valued domain that holds 0, in an extreme draw of a reduction
    along ``axis``: about a quarter of its lines along that axis made non-negative, with zeros at
    up to :data:`SIGNED_ZEROS` random places, +0.0 and -0.0 alternating from the first (their
    minimum is zero, a +0.0 first), and another quarter non-positive, -0.0 first (their maximum).
    -0.0 equals +0.0, so argmin and argmax give the first; a kernel comparing the floats' bits as
    ordered integers (packed keys for an atomic_min) takes -0.0 as the smaller and picks a later
    one (round 15: it passed every draw, where zeros had one sign and lines their extremum
    elsewhere). Several zeros, since the draw's fractions (:func:`kernelgen.task.extreme_values.
    with_fractions_and_near_ties`) then move some of them off zero."""
    if not values.dtype.is_floating_point or values.numel() == 0 or values.shape[axis] < 2:
        return values
    generator = torch.Generator().manual_seed(seed ^ 0x5E20)
    moved = values.movedim(axis, -1)
    lines = moved.reshape(-1, moved.shape[-1]).clone()
    count, length = lines.shape
    order = torch.randperm(count, generator=generator)
    quarter = max(1, count // 4)
    zeros = min(length, SIGNED_ZEROS)
    signs = torch.tensor([1.0 if i % 2 == 0 else -1.0 for i in range(zeros)], dtype=lines.dtype)
    for chosen, sign in ((order[:quarter], 1.0), (order[quarter:2 * quarter], -1.0)):
        if len(chosen) == 0:
            continue
        part = sign * lines[chosen].abs()
        places = torch.rand((len(chosen), length), generator=generator).argsort(dim=1)[:, :zeros].sort(dim=1).values
        part.scatter_(1, places, (sign * signs * 0.0).expand(len(chosen), zeros).contiguous())
        lines[chosen] = part
    return lines.reshape(moved.shape).movedim(-1, axis)


def golden_dots(task: Task) -> bool:
    """Whether the golden uses ``dot``, whose inputs get no mixed-magnitude rows: a dot sums in
    f32 by the language's rule, and the H200's tensor cores do not round each add to nearest
    (same-sign sums of those rows at K = 8192 came out 2.5e-4 low, past an f32 rtol of 1e-4)."""
    return any(isinstance(node, L.Dot) for node, _ in nodes(task.golden, ""))


# :func:`with_cancelling_halves`: the reduced size's half at least this long (a short one has
# few partials to round, and needs large elements to make them large); the
# half-sums' size in the output, in atols of its tolerance (2**15 * 1e-2 = 328: an f16 partial of
# a quarter of it is rounded by up to 0.03, three atols, an f32 sum of it by ~2e-5); and the
# relative noise between the halves (their roundings must not mirror each other's).
CANCEL_MIN_HALF = 64
CANCEL_HALF_ATOLS = 2.0 ** 15
CANCEL_NOISE = 1.0 / 16
NARROW_OUTPUTS = ("f16", "bf16")


def cancelling_inputs(task: Task) -> tuple[str, list[str]] | None:
    """The reduced size and the inputs :func:`with_cancelling_halves` structures, or None where it
    does not apply: every tensor input (one or two) is a float of an ordinary normal domain whose
    last axis is one size that no output has (a row sum or mean, a gemv, a row-wise dot), some
    output is f16 or bf16 and none of those is compared in steps (there the result's own steps
    would judge an f32 sum's rounding of the large halves), the task has no extreme domains (it
    states the large values it takes, and these rows would stand in for them) and its golden no
    ``dot`` (a GPU answer's tensor cores drift by about an f16 rounding on such sums at K = 32768)."""
    outputs = task.signature.outputs
    narrow = [o for o in outputs if o.dtype in NARROW_OUTPUTS]
    if task.extreme_domains or golden_dots(task) or not narrow or any(o.shape is None for o in outputs) \
            or any(task.tolerance_for(o.dtype).steps or task.tolerance_for(o.dtype).exact for o in narrow):
        return None
    tensors = [s for s in task.signature.inputs if s.is_plain and s.shape is not None]
    if not 1 <= len(tensors) <= 2:
        return None
    for spec in tensors:
        domain = task.domains.get(spec.name)
        if spec.dtype not in ("f16", "bf16", "f32") or not spec.shape or (domain is not None and (
                domain.kind != "normal" or domain.ties or domain.specials or domain.zero_rows or domain.same_as)):
            return None
    size = tensors[0].shape[-1]
    if not isinstance(size, str) or any(s.shape[-1] != size for s in tensors) \
            or any(size in o.shape for o in outputs):
        return None
    return size, [s.name for s in tensors]


def with_cancelling_halves(task: Task, args: dict[str, Any], sizes: Mapping[str, int], seed: int,
                           reference: Callable[[Task, Mapping[str, Any]], dict[str, torch.Tensor]]) -> dict[str, Any]:
    """A draw's inputs (``args``) of a task :func:`cancelling_inputs` names, with sums along the
    reduced axis (length K, h = K // 2) whose halves are large and cancel: for one input, about a
    quarter of its rows hold u_k in the first half and -u_k (1 + e_k) in the second; for two, the
    one with fewer rows (A) holds -A[k] (1 + e_k) at k + h in every row, and about a quarter of
    the other's rows u_k and u_k again at k + h, with the signs of A's row (of its first row,
    where the shapes differ). u is uniform in [0.5, 1], scaled so that a half's sum comes to
    :data:`CANCEL_HALF_ATOLS` atols in the output (measured by ``reference`` on the first halves
    alone: a mean divides by K); e is uniform noise of :data:`CANCEL_NOISE`, so that the halves'
    roundings do not mirror each other. The products then sum to about +T over the first half
    and -T over the second, and the result to ~0.04 T / sqrt(h): a partial sum rounded to f16
    (a split-K's partials atomic_added into the f16 output) is off by up to |partial| * 2**-11,
    far outside the atol, while an f32 sum's error (2**-24 of the partials a rounding) stays far
    inside it. Unchanged where the half is shorter than :data:`CANCEL_MIN_HALF` or the reference
    fails."""
    found = cancelling_inputs(task)
    if found is None:
        return args
    size, names = found
    half = int(sizes[size]) // 2
    if half < CANCEL_MIN_HALF or not all(isinstance(args[n], torch.Tensor) and args[n].numel() for n in names):
        return args
    generator = torch.Generator().manual_seed(seed ^ 0xCA9CE1)
    rows = {n: args[n].reshape(-1, args[n].shape[-1]).double() for n in names}
    ordered = sorted(names, key=lambda n: rows[n].shape[0])  # stable: equal shapes keep their order
    anti, other = ordered[0], ordered[-1]
    count = rows[other].shape[0]
    chosen = torch.randperm(count, generator=generator)[:max(1, count // 4)]
    u = 0.5 + 0.5 * torch.rand((len(chosen), half), generator=generator, dtype=torch.float64)
    noise = 1 + CANCEL_NOISE * (2 * torch.rand((rows[anti].shape[0], half), generator=generator, dtype=torch.float64) - 1)
    if anti != other:
        signs_of = rows[anti][chosen] if args[anti].shape == args[other].shape else rows[anti][:1]
        u = u * torch.where(signs_of[:, :half] < 0, -1.0, 1.0)
    # the first halves alone, u scaled by a power of two near 1 / sqrt(h), so that the
    # reference's narrow output of their sums stays in range: the output a unit u gives
    shrink = 2.0 ** -(half.bit_length() // 2)
    alone = torch.zeros_like(rows[other])
    alone[chosen, :half] = u * shrink
    halves = {other: alone}
    if anti != other:
        halves[anti] = torch.cat([rows[anti][:, :half], torch.zeros_like(rows[anti][:, half:])], dim=1)
    try:
        outputs = reference(task, {**args, **{n: v.to(args[n].dtype).reshape(args[n].shape) for n, v in halves.items()}})
    except Exception:  # noqa: BLE001 - a reference that refuses these values keeps the draw as it was
        return args
    narrow = [v.double() for v in outputs.values() if v.dtype in (torch.float16, torch.bfloat16)]
    top = max((float(v[v.isfinite()].abs().max()) for v in narrow if v.isfinite().any()), default=0.0)
    if top == 0:
        return args
    atol = min(task.tolerance_for(o.dtype).atol for o in task.signature.outputs if o.dtype in NARROW_OUTPUTS)
    first = (u * (CANCEL_HALF_ATOLS * atol * shrink / top)).to(args[other].dtype).double()
    if not bool(first.isfinite().all()):
        return args
    structured = rows[other].clone()
    if anti == other:
        structured[chosen, :half] = first
        structured[chosen, half:2 * half] = -first * noise[chosen]
    else:
        structured[chosen, :half] = first
        structured[chosen, half:2 * half] = first
        mirrored = rows[anti].clone()
        mirrored[:, half:2 * half] = -mirrored[:, :half] * noise
        args = {**args, anti: mirrored.to(args[anti].dtype).reshape(args[anti].shape)}
    return {**args, other: structured.to(args[other].dtype).reshape(args[other].shape)}
