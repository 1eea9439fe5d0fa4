"""CPU mode's draws where one input is constant, and far from zero, along axes the reference
ignores a shift along: a finite sentinel a kernel uses in place of an infinity shows there.

An online softmax starts its running maximum at -inf. A model may start it at -1e4 or -1e9 (the
"large negative" of many attention codes), fill masked lanes or a tail block's padding keys with
such a value, or zero the padding after the exponential (its score 0 then enters the maximum).
Each is right while some real score of every row lies above the sentinel, and no other draw puts
a whole row below -1e4: attention's scores are q . k of ordinary values, a row's logits are
centred, and the draws that scale them up keep part of every row near its top (round 16:
cross_attention_bf16's tail mask and running maximum at -1e4 passed every draw).

Where the reference is invariant under adding to an input a tensor constant along some of its
axes (a softmax's row, cross-entropy's classes, attention's keys: q . (k_j + u) = q . k_j + q . u
shifts every score of a query alike), the draw sets that input to ``A * m``: m a random integer in
+-{1, ..., :data:`MULTIPLES`} at each position of the other axes, constant along these, so that
half of the rows (or of the queries' scores) lie far below the sentinels models use, the other
half far above. The task's other float inputs are rounded to quarters of their domain's scale (at
most :data:`GRID_CLIP` scales): every product and sum the task makes of them and the constant
input is then exact in f32, in any order (q . k over 64 dimensions is an integer of at most 2**12
quarter-units of A), so equal values along the axes give equal scores in every correct kernel,
whichever loop or instruction computes them. An input that has each of the shifted input's other
axes (q of k's batch, head and dimension) takes m's signs there, and a random sign per query, so
each query's scores are all about +-100 A (:func:`_aligned`). A is :data:`SHIFT_SCALES` of the
dtype (rows down to -3 * 2**16), or :data:`DOT_SCALE` where such an input meets the shifted one in
a dot (scores near +-51200 after attention's 1/8): past -1e4 in both, and past -65504 on rows
of f32 and bf16 inputs and on attention's unscaled scores.

A task qualifies on the draw itself (:func:`shift_orders`): its reference at A and at A = 1 agree
within :data:`PROBE_TOLERANCE` on every output, or an output moves with the shift itself (a
logsumexp, a row's maximum, attention's output for v constant along the keys: by A - 1 times one
of m's integers), finite where the draw's plain values give finite outputs. The last is where a
partial sum of weighted values kept in f16 shows: the output is v's A * m, its unnormalised sum
A * m times the sum of the keys' weights, past 65504 after a few keys (round 18: flash attention's
accumulator rounded to f16 before the division by l passed every other draw), so such a draw is
also made long along the constant axes (:func:`kernelgen.task.draws.shift_draws`). Where an output is f32 its comparison admits what rounding the inputs moves the exact
result by (:class:`kernelgen.task.offset.InputRounding`): at |x| = 2**17 a loss computed as
logsumexp - x[target] is off by the intermediate's ulps (2**-6), as a correct kernel may be,
while a sentinel's error is the distance from the sentinel to the row, or a NaN (0 / 0).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import torch

from kernelgen.task.spec import Task

# The order naming a draw: "shift:NAME:AXES", AXES the constant axes joined by commas ("shift:k:1").
SHIFT = "shift"
# A per dtype of the shifted input where no dot amplifies it (a softmax's rows): 2 * A past -1e5
# (f32, bf16), A past -1e4 (f16, 3 * A within its range). Not further: a correct kernel's own
# rounding grows with the values. Flash attention's exp2(fma(s, C, -max * C)) for the row's
# maximum is off by an ulp of s * C, and at A = 2**40 that ulp is 2**22, whose exp2 is inf or 0
# (cross_attention_bf16's golden gave NaN there); a bias added to rows at 2**17 keeps 2**-7 of
# its value (an f32 output also passes within the inputs' rounding, which covers that).
SHIFT_SCALES = {"f32": 2.0 ** 16, "bf16": 2.0 ** 16, "f16": 2.0 ** 14}
# A where another input meets the shifted one in a dot (:func:`_aligned`: attention's q . k, about
# 100 A before the softmax's scale, 12 A after 1/8), whatever the dtype: a query's scores then
# lie near +-51200, and an additive term (alibi's slope * distance) keeps 2**-8 of its value. At
# f16's 2**14 that term's rounding took alibi_attention_f16's golden to 0.77 of its tolerance
# (0.27 at 2**12; the error grows with A).
DOT_SCALE = 2.0 ** 12
# m's largest magnitude: a few distinct values, each a 2-bit integer (exact products).
MULTIPLES = 3
# The other float inputs: multiples of their scale / GRID_STEPS, within +-GRID_CLIP scales.
GRID_STEPS, GRID_CLIP = 4, 4
# The reference at A and at 1 agree within this fraction of an output's largest magnitude (an
# f16 or bf16 output rounds alike; a non-invariant one moves by whole multiples of A).
PROBE_TOLERANCE = 2.0 ** -6
# Axes taken together: single axes, then neighbouring pairs (a paged cache's pages and slots
# hold the keys).
MOST_AXES = 2


def is_shift(order: str | None) -> bool:
    return order is not None and order.startswith(SHIFT + ":")


def shift_names(task: Task) -> list[str]:
    """The inputs a shift draw may set: f16, bf16 and f32 tensors of a normal domain (ties too: a
    constant line is all ties, broken as the reference breaks them; not specials, zero rows or
    copies of another input, whose values the task judges), none for a call or an in-place task."""
    if task.variants or task.in_place:
        return []
    names = []
    for spec in task.signature.inputs:
        domain = task.domains.get(spec.name)
        if spec.is_plain and spec.shape and spec.dtype in SHIFT_SCALES and (domain is None or (
                domain.kind == "normal" and not domain.specials and not domain.zero_rows and domain.same_as is None)):
            names.append(spec.name)
    return names


def shift_orders(task: Task, inputs: Mapping[str, Any],
                 reference: Callable[[Task, Mapping[str, Any]], dict[str, torch.Tensor]], seed: int) -> list[str]:
    """The orders of the shift draws ``inputs`` (a draw's plain values) admit: for each input of
    :func:`shift_names`, the smallest sets of neighbouring axes (one, else two; each at least 2
    long; not all of its axes) the reference is invariant along there (the module's docstring),
    none where it fails."""
    try:
        plain = reference(task, inputs)
    except Exception:  # noqa: BLE001 - a reference that refuses the draw: no shift draws
        return []
    orders: list[str] = []
    for name in shift_names(task):
        value = inputs.get(name)
        if not isinstance(value, torch.Tensor):
            continue
        found: list[tuple[int, ...]] = []
        for count in range(1, min(MOST_AXES, value.dim() - 1) + 1):  # not every axis: not a constant tensor
            for first in range(value.dim() - count + 1):
                axes = tuple(range(first, first + count))
                if any(value.shape[a] < 2 for a in axes) or any(set(f) <= set(axes) for f in found):
                    continue
                order = f"{SHIFT}:{name}:{','.join(map(str, axes))}"
                if _invariant(task, inputs, order, seed, plain, reference):
                    found.append(axes)
                    orders.append(order)
    return orders


def shift_holds(task: Task, inputs: Mapping[str, Any], order: str,
                reference: Callable[[Task, Mapping[str, Any]], dict[str, torch.Tensor]], seed: int) -> bool:
    """Whether ``order`` qualifies on ``inputs`` (another draw's plain values) as
    :func:`shift_orders` tries it: a reference invariant along the axes on one draw may not be on
    another (a routing's top two experts tie, and so leave the weights alone, only where two of
    the shifted row's multiples are equal)."""
    try:
        plain = reference(task, inputs)
    except Exception:  # noqa: BLE001 - a reference that refuses the draw: no shift draw
        return False
    return _invariant(task, inputs, order, seed, plain, reference)


def _invariant(task: Task, inputs: Mapping[str, Any], order: str, seed: int, plain: Mapping[str, torch.Tensor],
               reference: Callable[[Task, Mapping[str, Any]], dict[str, torch.Tensor]]) -> bool:
    """Whether every output of the reference is the same with the shifted input at A and at 1, or
    moved by the shift itself (a logsumexp, a row's maximum, attention's output for a shift of v
    along the keys: ``(far - near) / (A - 1)`` one of m's nonzero integers at every element, not a
    fraction of them: a block's scale amax / 448), and finite wherever ``plain`` (the draw's
    outputs) is. Such an output need not have the input's shape less the axes (self-attention's
    [S, 64] output takes v's shift along its S keys at each of its S queries), but one of another
    shape rules out float outputs the shift leaves alone: add + layer norm's h = x + residual moves
    with x, and its y, the layer norm of A * m plus the residual's spread, rests on an f32 mean of
    values near A, whose rounding (A * 2**-24) takes a correct kernel's y a bf16 step off."""
    try:
        far = reference(task, with_shift(task, inputs, order, seed))
        near = reference(task, with_shift(task, inputs, order, seed, scale=1.0))
    except Exception:  # noqa: BLE001 - a reference that refuses the values: not this draw
        return False
    spec, axes = _shifted(task, order)
    reduced = [d for axis, d in enumerate(spec.shape) if axis not in axes]  # the shape a reduction over them has
    shapes = {o.name: list(o.shape or []) for o in task.signature.outputs}
    moved_by = shift_scale(task, order) - 1  # an output that moves with the shift moves by (A - 1) m
    left_alone = moved_elsewhere = False  # float outputs the shift leaves alone; ones it moves, not reduced
    for out, value in far.items():
        other, before = near[out], plain[out]
        if value.shape != other.shape or value.dtype != other.dtype:
            return False
        if not value.dtype.is_floating_point:
            if not torch.equal(value, other):
                return False
            continue
        a, b = value.double(), other.double()
        if int((~a.isfinite()).sum()) > int((~before.double().isfinite()).sum()) or not torch.equal(
                a.isfinite(), b.isfinite()):
            return False
        finite = a.isfinite()
        if not finite.any():
            continue
        top = float(b[finite].abs().max())
        moved = (a[finite] - b[finite]) / moved_by
        if float((a[finite] - b[finite]).abs().max()) <= PROBE_TOLERANCE * top:
            left_alone = True
        elif float((moved - moved.round()).abs().max()) <= PROBE_TOLERANCE \
                and 1 <= float(moved.round().abs().min()) and float(moved.round().abs().max()) <= MULTIPLES:
            moved_elsewhere = moved_elsewhere or shapes.get(out) != reduced
        else:
            return False
    return not (left_alone and moved_elsewhere)


def with_shift(task: Task, args: Mapping[str, Any], order: str, seed: int, scale: float | None = None
               ) -> dict[str, Any]:
    """A draw's inputs (``args``) with the input ``order`` names set to A * m, constant along its
    axes, and the other float inputs of :func:`shift_names` rounded to the grid, their signs
    aligned with m's (:func:`_aligned`; the module's docstring); ``scale``: A in place of the
    dtype's (the invariance probe's 1)."""
    spec, axes = _shifted(task, order)
    name, value = spec.name, args[spec.name]
    shape = [1 if axis in axes else size for axis, size in enumerate(value.shape)]
    generator = torch.Generator().manual_seed(seed ^ 0x5A1F7)
    m = torch.randint(1, MULTIPLES + 1, shape, generator=generator, dtype=torch.float64)
    m *= torch.randint(0, 2, shape, generator=generator, dtype=torch.float64) * 2 - 1
    moved = dict(args)
    specs = {s.name: s for s in task.signature.inputs}
    for other in shift_names(task):
        found = args.get(other)
        if other != name and isinstance(found, torch.Tensor):
            domain = task.domains.get(other)
            step = (1.0 if domain is None else domain.scale) / GRID_STEPS
            limit = GRID_STEPS * GRID_CLIP
            grid = (found.double() / step).round().clamp(-limit, limit) * step
            places = _dot_places(specs[other].shape, spec.shape, axes)
            moved[other] = (grid if places is None else _aligned(grid, places, axes, m, generator)).to(found.dtype)
    a = shift_scale(task, order) if scale is None else scale
    moved[name] = (m * a).expand(value.shape).to(value.dtype).contiguous()
    return moved


def shift_scale(task: Task, order: str) -> float:
    """A of a shift draw: :data:`SHIFT_SCALES` of the shifted input's dtype, at most
    :data:`DOT_SCALE` where another input of :func:`shift_names` meets it in a dot
    (:func:`_dot_places`)."""
    spec, axes = _shifted(task, order)
    specs = {s.name: s for s in task.signature.inputs}
    dots = [n for n in shift_names(task) if n != spec.name and _dot_places(specs[n].shape, spec.shape, axes)]
    return min(SHIFT_SCALES[spec.dtype], DOT_SCALE) if dots else SHIFT_SCALES[spec.dtype]


def shifted_size_names(task: Task, order: str) -> list[str]:
    """The size names of the axes an order holds its input constant along (none for literal axes)."""
    spec, axes = _shifted(task, order)
    return [spec.shape[axis] for axis in axes if isinstance(spec.shape[axis], str)]


def _shifted(task: Task, order: str) -> tuple[Any, list[int]]:
    """The input an order shifts (its signature entry) and its constant axes."""
    _, name, axes = order.split(":")
    return next(s for s in task.signature.inputs if s.name == name), [int(a) for a in axes.split(",")]


def _dot_places(dims: list, shifted: list, axes: list[int]) -> list[int] | None:
    """Where another input (of shape names ``dims``) has each of the shifted input's other axes
    (``shifted`` less ``axes``), each once: attention's q [B, SQ, H, 64] has k's [B, H, 64]; None
    where it lacks one."""
    kept = [d for axis, d in enumerate(shifted) if axis not in axes]
    if not kept or any(dims.count(d) != 1 for d in kept):
        return None
    return [dims.index(d) for d in kept]


def _aligned(value: torch.Tensor, places: list[int], axes: list[int], m: torch.Tensor,
             generator: torch.Generator) -> torch.Tensor:
    """``value`` (another input, meeting the shifted one in a dot at ``places``) with the signs of
    m there: attention's q [B, SQ, H, 64] against k's m [B, 1, H, 64]. Each query (every axis but
    the last of those, which a dot contracts) is negated at random, so q . (A * m) = +-A * sum
    |q_d| |m_d| for each: about 100 A in size, not the +-13 A of random signs (only ~3% of queries
    passed -65504 at f16's 2**14, round 17)."""
    signs = m.sign().squeeze(axes)
    signs = signs.permute(sorted(range(len(places)), key=lambda j: places[j]))
    signs = signs.reshape([value.shape[i] if i in places else 1 for i in range(value.dim())])
    # one sign per query: along every axis but the one a dot would contract (the shifted input's
    # last other axis, attention's head dimension)
    rest = [1 if i == places[-1] else size for i, size in enumerate(value.shape)]
    flips = torch.randint(0, 2, rest, generator=generator, dtype=torch.float64) * 2 - 1
    return value.abs() * signs * flips


_PROBED: dict[tuple[str, str, int], list[str]] = {}  # by probe_key


def probe_key(task: Task, seed: int) -> tuple[str, str, int]:
    """A task's shift probes are kept by its tier, id and variant, its reference's text and the seed."""
    return f"{task.tier}/{task.id}:{task.variant.name if task.variant is not None else ''}", task.reference, seed


def probed_shift_orders(task: Task, seed: int, probe: Callable[[], list[str]]) -> list[str]:
    """:func:`shift_orders` as ``probe`` gives it on a draw's plain values, kept per task and seed:
    the probe calls the reference twice per input and axes (attention's take seconds), and every
    answer to a task is checked on the same draws."""
    key = probe_key(task, seed)
    if key not in _PROBED:
        _PROBED[key] = probe()
    return _PROBED[key]
