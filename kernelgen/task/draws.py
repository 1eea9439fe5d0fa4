"""What a case is checked on: the size assignments, which of them use extreme values, and the SM counts a persistent
kernel is verified under.

Sizes drawn without looking at the kernel let a kernel that handles only its first block pass: a grid of one program
with a 16384-wide block is right for every N up to 16384, and a matmul with one K block and no K loop is right while K
fits in it. So besides the hypothesis draws from the task's ranges (:mod:`kernelgen.task.random_sizes`: edge values
and uniform draws, capped by ``cpu_max`` in CPU mode), every size name gets a *targeted* draw: that name just past the
largest extent a program of the kernel covers (:func:`kernelgen.task.size_reads.block_extent`: its blocks as tiles,
the product of their axes, so a [32, 512] tile covers 16384 elements of a row; integer literals; loop bounds and trip
counts that its meta values decide, so a loop to CHUNKS * BLOCK covers that; a grid of a fixed number of programs
times a block; not a multiple of it), the other names small. Every name also gets a draw at its range's maximum (in
CPU mode, where thousands of programs cost the interpreter seconds, every name but those the grid spreads over and no
loop runs over), with the other names at 16 where the budget allows (else at their minimum): the sizes the prompt
promises are the sizes checked, and a long reduction shows its accumulated rounding on enough outputs (an f16 matmul
accumulating in f16 is off at K = 8192 on some of 16 x 16 outputs, not on one). Draws stay within a budget of the
total elements (CPU: the interpreter's speed) or bytes (GPU: memory) of all inputs and outputs; a range that cannot
reach past the extent, or not within the budget, is drawn at the largest value it can take.

Targeted and range-maximum draws use the task's extreme-value domains
(:attr:`kernelgen.task.spec.Task.extreme_domains`): large magnitudes, special values (NaN, inf, integer extremes,
ids over their whole range, out-of-range targets), where numerically careless formulas (softmax without the row
maximum, sums in f16) fail as they would on real data.

In CPU mode, each size a program reduces over (one no grid spreads over, or one a loop walks) also gets two *sorted*
draws past twice the extent: float inputs of ordinary domains ordered along every axis, ascending and then
descending (:func:`kernelgen.task.verify.sorted_along_axes`), so a row's largest and smallest values sit past any
leading part a truncated kernel reads. A domain that saturates the answer (integers in [-3, 3] over 4096 columns:
the maximum is in the first block with probability ~1) would otherwise hide a first-block argmax. Ids, offsets and
other integer inputs keep their order. The launches are also planned, without running, at each size's range maximum
(the others at their minimum) and at all maxima (:func:`limit_sizes`): a grid past 65535 programs on axis 1, or an
i32 param that overflows, at sizes the task allows is a ``launch_error`` even where no draw there is affordable. A
grid capped by a literal (``minimum(cdiv(T, 16), 4096)``) bounds the extent by the cap times the block.

A sum into an f16 or bf16 output (a gemv, a row mean) also gets, in CPU mode, a draw at the top of its reduced
size's range whose halves are large and cancel (:func:`cancelling_draw`): a kernel that rounds its partial sums to
the output's dtype before the final sum (a split-K gemv atomic_adding f16 partials) is within tolerance wherever the
partials are as small as the result.

Float inputs of a normal domain also get, in CPU mode, draws with a large common offset against their spread
(:func:`offset_draws`, :mod:`kernelgen.task.offset`): a variance as E[x^2] - E[x]^2, an MSE from moment sums or (x -
y)^2 expanded agree with the reference on centred values and cancel on these; the comparison there allows what
rounding the inputs moves the exact result by.

An input the reference ignores a shift of along some axes (a softmax's row, attention's keys) gets, in CPU mode, a
draw where it is constant and far off zero along them (:func:`shift_draws`, :mod:`kernelgen.task.shifts`): a running
maximum started at -1e4 in place of -inf fails there; and one long along those axes, where attention's unnormalised
sum of v, kept in f16, overflows.

A kernel that tests a size for a multiple of a block (``rem(N, BLOCK) == 0``: a path without masks) gets, in CPU
mode, draws at such a multiple with the others small, and one that walks a size in chunks, draws at one past a
multiple of the chunk (:func:`multiple_draws`); one that compares two sizes (``M > N``) draws with both large, each
past the other (:func:`ordering_draws`).

A kernel that takes its tile from a program's id by division (a grouped or persistent tile order) gets draws with two
of the sizes so numbered large together (:func:`tile_draws`, GPU mode too): a last group of fewer tile rows exists
only where the tiles are many along both.

A kernel that compares a size with a fixed value for equality (a decode path at ``M == 1``) gets, in CPU mode, draws
at that value with the other sizes large (:func:`equality_draws`): the other draws hold a size at 1 only with the
others small, where a weight read with its axes swapped is the same memory.

A kernel whose conditions on its sizes alone (``M * N >= 2**20``, splits capped at ``minimum(cdiv(cdiv(S, 64), 16),
8)``, ``sqrt(float(M) * float(N)) > 1024``, a band ``5000 < N < 6000``, ``M > 2 * N and N > 1024``; through lets,
params the host computes and ``numel``) answer otherwise somewhere in the ranges gets a draw well inside each such
region (GPU mode too) (:func:`crossing_draws`, :mod:`kernelgen.task.size_conditions`, which evaluates them): the
extent the other draws pass is only the largest of one size's thresholds, and none passed a threshold on a product.
An extent past the element budget (a grid capped at 65535 programs of 128) is passed within :data:`CPU_PAST_BUDGET`,
a launch past the interpreter's own budget judged on a sample of its programs; and where programs combine their work
(several launches, scratch, atomics), a size only the grid spreads over is also drawn as high as the element budget
reaches (a fixed 64 of a launch's partials combined by the next).

A kernel that tests its scalar inputs (``negative_slope == 0``) gets, in CPU mode, draws with them set where those
tests answer otherwise (:func:`scalar_draws`, :mod:`kernelgen.task.scalar_conditions`); an integer input, one at a
single value everywhere (:mod:`kernelgen.task.concentrated`).

A kernel whose grid, params or scratch read ``num_sms`` is also verified with num_sms set to each of
:data:`NUM_SMS_CHECKED` (3, the interpreter's default, is every other draw's), on the drawn sizes that give it the
most programs: a combine written for at most 128 partials, or a loop stepping by 3 instead of num_programs, fails
there (on the GPU the host expression takes those values for verification; timing keeps the device's own).

Everything is reproducible from the seed: the hypothesis draws from hypothesis's seed, the targeted ones from a
:class:`random.Random` seeded by the task and the seed."""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from kernelgen.lang import nodes as L
from kernelgen.check.checked import Checked, launches_of
from kernelgen.check.sequence import nodes
from kernelgen.interp.sampled import why_not_sampled
from kernelgen.task.addends import ADDEND, addend_inputs, addend_part
from kernelgen.task.concentrated import concentrated_orders
from kernelgen.task.homogeneous import UP_ORDER, scaled_up, up_names
from kernelgen.task.magnitude import down_orders
from kernelgen.task.nonfinite import NONFINITE_ORDER, VECTORS_ORDER, vector_inputs
from kernelgen.task.spread import candidate_names, pointwise_names, spread_orders
from kernelgen.task.offset import long_offset_orders, offset_orders
from kernelgen.task.random_sizes import draw_sizes
from kernelgen.task.reductions import END_LINES, cancelling_inputs
from kernelgen.task.scalar_conditions import (literal_settings, mixed_settings, scalar_order, scalar_settings,
                                               special_settings)
from kernelgen.task.shifts import (probe_key, probed_shift_orders, shift_holds, shift_names, shift_orders,
                                   shifted_size_names)
from kernelgen.task.size_conditions import condition_regions, largest as _largest, size_conditions
from kernelgen.task.size_reads import (block_extent, chunk_steps, looped_sizes, names_read, reads_num_sms,
                                       size_equalities, size_multiples, size_pairs, tiled_sizes)
from kernelgen.task.spec import Task

# The other names' values in a targeted draw: small, odd and even, below and past 16.
SMALL_SIZES = (1, 2, 3, 5, 7, 16, 17)
# Elements of all inputs and outputs of one targeted draw in the CPU interpreter: enough for
# four tensors past the largest block the checker allows (2**20); a kernel with ordinary blocks
# (about 1024) has targeted draws far below it. Bytes of them on a GPU (an H200 has 141 GB;
# the reference, the guard-banded copies and a high-precision reference's temporaries need
# several times this).
CPU_ELEMENT_BUDGET = 1 << 23
GPU_BYTE_BUDGET = 4 << 30
# The range-maximum draws in CPU mode: all their inputs and outputs within this many elements
# (1 x 65536 fits with room; the interpreter takes a fraction of a second on it).
CPU_RANGE_MAX_BUDGET = 1 << 20
# The joint draw in CPU mode (:func:`joint_draw`): every size as large as the others, all inputs
# and outputs within this many elements, so that a product of sizes passes 2**18 (a matrix of
# 571 x 571), where each other CPU draw keeps all sizes but one small. 2**19 cost the goldens
# ~10% more interpreter time; this, about 6%.
CPU_JOINT_BUDGET = 5 << 16
# The offset draws in CPU mode (:func:`offset_draws`): a cancellation shows on rows of any length,
# so a fifth of the joint draw's elements (181 x 181 for an input and an output).
CPU_OFFSET_BUDGET = 1 << 16
# A long offset draw (:func:`offset_draws`): one size as long as twice that budget allows, the
# others at a few (an even number: both offsets, c and 2c, in as many groups).
CPU_OFFSET_LONG_BUDGET = 1 << 17
OFFSET_LONG_OTHERS = 4
# The draws scaled down (:func:`down_draws`): a floor shows on a row of any length.
CPU_DOWN_BUDGET = 1 << 14
# The spread draw's elements: a quarter of that holds dozens in each band a kernel may get wrong.
CPU_SPREAD_BUDGET = 1 << 12
# The pairs of sizes a kernel compares that get ordering draws, and the values of a size it
# compares for equality that get equality draws: a sixth pair and a ninth value are rare (round
# 13: a kernel with a fifth, 5120, special-cased among hidden sizes passed at four).
ORDERED_PAIRS = 6
EQUALITY_VALUES = 8
# The elements the draw of :func:`up_draws` holds at most.
UP_BUDGET = 1 << 12
# The elements an addend draw (:func:`addend_draws`) holds at most.
ADDEND_BUDGET = 1 << 15
# The elements a shift draw (:func:`shift_draws`) holds at most: attention's four sizes at 3.
SHIFT_BUDGET = 1 << 15
# The crossing draws a kernel gets at most (:func:`crossing_draws`; conditions that never change
# take none).
CROSSINGS = 12
# The settings of the scalar-crossing draws a kernel gets at most, each with ordinary and with
# extreme inputs (:func:`scalar_draws`).
SCALAR_CROSSINGS = 12
# The settings at the numbers a kernel's tests of its scalars compare with, read or not
# (:func:`kernelgen.task.scalar_conditions.literal_settings`), at most.
LITERAL_SETTINGS = 8
# Elements of all inputs and outputs of a CPU draw past a threshold or an extent that
# CPU_ELEMENT_BUDGET keeps out of reach (a grid capped at 65535 programs of 128 covers 8388480
# elements): a launch past the interpreter's own budget is judged on a sample of its programs;
# an elementwise kernel at 8.4M elements takes about 2 s and 0.8 GB.
CPU_PAST_BUDGET = 1 << 25
# The tile draws (:func:`tile_draws`): two sizes at 1127 (a third at 16), 9 tiles of 128 along each
# (18 of 64, 36 of 32), so a group of 8 tile rows leaves a partial last group; at most three pairs
# (a convolution's ten doubled its golden's CPU time), both sizes at least two tiles of 64.
TILE_BUDGET = 5 << 18
TILE_PAIRS = 3
TILE_LEAST = 128
# The other names' value in a range-maximum draw, where the budget allows: outputs enough for
# an accumulated rounding error to show on some of them.
RANGE_MAX_OTHERS = 16
# A targeted value lies in (extent, TARGET_SPAN * extent): past the first block, within a few.
TARGET_SPAN = 4
# The SM counts a kernel that reads num_sms is verified under, besides the interpreter's 3:
# one SM (a MIG slice), a few, an H100/H200's 132, one more than that, and a B200's 148 (round 21:
# a kernel wrong only past 140 SMs passed on the others).
NUM_SMS_CHECKED = (1, 7, 132, 133, 148)
# num_sms when counting how many programs a size assignment can keep busy.
_MANY_SMS = 1 << 20


@dataclass(frozen=True)
class Draw:
    """One size assignment a case is checked on; ``extreme``: inputs use the task's
    extreme-value domains; ``num_sms``: the value of the host expression ``num_sms`` for this
    verification (None: the device's own, 3 in the interpreter)."""

    sizes: dict[str, int] = field(default_factory=dict)
    extreme: bool = False
    num_sms: int | None = None
    # "ascending" or "descending": float inputs sorted so along every axis (CPU mode's
    # "sorted" draws, :func:`kernelgen.task.verify.sorted_along_axes`); "cancelling": a
    # reduction's halves large and cancelling (:func:`cancelling_draw`); "offset", "offset:NAME"
    # or "offset/rows:NAME": a large common offset (:func:`offset_draws`); "down:K": scaled by
    # 2**-K and "spread": magnitudes spread (:func:`down_draws`); "up": scaled far up (:func:`up_draws`);
    # "addend:NAME": input NAME cancels the rest of its output (:func:`addend_draws`); "shift:NAME:AXES": NAME constant
    # and far off zero along AXES (:func:`shift_draws`); "concentrated:NAME": integer input NAME at
    # one value (:mod:`kernelgen.task.concentrated`); "scalars:...": scalars set; "end_lines": the
    # extreme draws' lines of extrema at their ends on the ordinary domains (:func:`multiple_draws`);
    # None: as drawn.
    order: str | None = None
    # Why it is drawn: "drawn" (hypothesis), "past_extent", "range_max" (the top of a size's
    # range: its maximum, and one less where loops walk it), "sorted", "joint" (every size large
    # together, :func:`joint_draw`), "cancelling" (:func:`cancelling_draw`), "at_equality" (a size
    # at a value the kernel compares it with, the others large: :func:`equality_draws`), "offset"
    # (:func:`offset_draws`), "scaled_down" (:func:`down_draws`), "at_multiple" or "chunk_edge" (:func:`multiple_draws`),
    # "size_order" (two sizes the kernel compares, one past the other: :func:`ordering_draws`), "addend"
    # (:func:`addend_draws`), "scaled_up" (:func:`up_draws`), "spread" (:func:`down_draws`), "shifted"
    # (:func:`shift_draws`), "crossing"
    # (past a threshold: :func:`crossing_draws`), "scalar_crossing" (scalars where the kernel's tests of
    # them answer otherwise: :func:`scalar_draws`), "tiles" (many tiles along two sizes: :func:`tile_draws`),
    # "concentrated" or "num_sms".
    kind: str = field(default="drawn", compare=False)


def _fits(task: Task, sizes: Mapping[str, int], gpu: bool, budget: int | None = None) -> bool:
    elements, nbytes = task.footprint(sizes)
    return nbytes <= GPU_BYTE_BUDGET if gpu else elements <= (budget or CPU_ELEMENT_BUDGET)


def _largest_fitting(task: Task, sizes: dict[str, int], name: str, gpu: bool, budget: int | None = None) -> int:
    """The largest value of ``name`` in its range, the others as given, within the budget
    (the range's minimum where even that does not fit)."""
    r = task.sizes[name]
    return _largest(lambda value: _fits(task, {**sizes, name: value}, gpu, budget), r.min, r.max)


def _small(task: Task, names: Iterable[str], rng: random.Random) -> dict[str, int]:
    """Each of ``names`` at a small value of its range (:data:`SMALL_SIZES`; its minimum where it holds none)."""
    return {name: rng.choice([v for v in SMALL_SIZES if task.sizes[name].min <= v <= task.sizes[name].max]
                             or [task.sizes[name].min]) for name in names}


def range_max_draw(task: Task, name: str, gpu: bool) -> Draw:
    """``name`` at its range's maximum (or the largest value within the budget), the other
    names at :data:`RANGE_MAX_OTHERS` where that fits (clamped to their ranges), else at the
    largest of 8 and 4 that does, else at their minimum (``name`` then as large as fits): a
    table of 131072 rows looked up by 4 ids, not by one, the largest id among them (the extreme
    domains' integers hold their bounds), where a kernel that keeps ids in 16 bits reads a wrong row."""
    budget = None if gpu else CPU_RANGE_MAX_BUDGET
    tried = [{o: min(max(value, r.min), r.max) for o, r in task.sizes.items() if o != name}
             for value in (RANGE_MAX_OTHERS, RANGE_MAX_OTHERS // 2, RANGE_MAX_OTHERS // 4, 0)]  # 0: their minimum
    for others in tried:
        value = _largest_fitting(task, others, name, gpu, budget)
        if value == task.sizes[name].max or others is tried[-1]:
            return Draw({**others, name: value}, extreme=True, kind="range_max")
    raise AssertionError("unreachable: the last assignment tried is returned")


def joint_draw(task: Task, fixed: Mapping[str, int] | None = None, kind: str = "joint") -> Draw | None:
    """CPU mode's draw with every size large together: each name at one value v (clamped to its
    range; v odd, so no block divides it), the largest within :data:`CPU_JOINT_BUDGET`. The
    hypothesis draws stop at ``cpu_max`` (48 x 2500) and the targeted and range-maximum draws make
    one size large and the others small (8192 x 16), so no CPU draw had M * N >= 2**18: a kernel
    that takes another path, or drops a tail, only past a threshold on a product of sizes passed.
    None for a task of fewer than two sizes (its other draws reach its range already). ``fixed``:
    names held at these values, the others large (:func:`equality_draws`)."""
    if len(task.sizes) < 2:
        return None
    sizes = _together(task, CPU_JOINT_BUDGET, fixed)
    return Draw(sizes, kind=kind) if sizes is not None else None


def _together(task: Task, budget: int, fixed: Mapping[str, int] | None = None) -> dict[str, int] | None:
    """Each size name at one value v (clamped to its range; v odd, so no block divides it; the
    names in ``fixed`` at theirs), the largest within ``budget`` elements; None where none fits."""
    fixed = dict(fixed or {})

    def at(value: int) -> dict[str, int]:
        return {name: fixed.get(name, min(max(value, r.min), r.max)) for name, r in task.sizes.items()}

    low = _largest(lambda value: _fits(task, at(value), False, budget), 1, max(r.max for r in task.sizes.values()))
    sizes = at(low - 1 if low % 2 == 0 and low > 1 else low)
    return sizes if _fits(task, sizes, False, budget) else None


def scalar_draws(task: Task, checked: Checked, seed: int) -> list[Draw]:
    """CPU mode's draws with the scalar inputs set (:mod:`kernelgen.task.scalar_conditions`): where
    the kernel's tests of them answer otherwise than on most of their ranges, at most
    :data:`SCALAR_CROSSINGS` settings at the joint draw's sizes; in the size regions of tests of
    scalars and sizes together (``float(N) * slope > 2**20``); and at 0, -0.0 and 1 and at the
    numbers tests the evaluation cannot follow compare with (a loop carry, a load, a bitcast),
    all sizes at one value within :data:`CPU_OFFSET_BUDGET`. Ordinary and extreme inputs (a
    shortcut at value == 0 that multiplies by the mask is wrong only where x holds an inf)."""
    sizes = _together(task, CPU_JOINT_BUDGET) if task.sizes else {}
    small = _together(task, CPU_OFFSET_BUDGET) if task.sizes else {}
    if sizes is None or small is None:
        return []
    swept = scalar_settings(task, checked, sizes, SCALAR_CROSSINGS, seed)
    draws = [Draw(sizes, extreme=extreme, order=scalar_order(setting), kind="scalar_crossing")
             for setting in swept for extreme in (False, True)]
    fits = lambda s: _fits(task, s, False, CPU_PAST_BUDGET)  # noqa: E731  (a launch past the budget is sampled)
    draws += [Draw(at, extreme=extreme, order=scalar_order(setting), kind="scalar_crossing")
              for at, setting, both in mixed_settings(task, checked, seed, fits, SCALAR_CROSSINGS // 2, swept, sizes)
              for extreme in (False, True)[:1 + both]]
    settings = special_settings(task) + literal_settings(task, checked, LITERAL_SETTINGS)
    return draws + [Draw(small, extreme=extreme, order=scalar_order(setting), kind="scalar_crossing")
                    for setting in settings for extreme in (False, True)]


def offset_draws(task: Task, checked: Checked | None = None) -> list[Draw]:
    """CPU mode's draws whose float inputs of a normal domain carry a large common offset
    (:mod:`kernelgen.task.offset`: ``offset``, and ``offset:NAME`` for each where two or more
    inputs take one), every size at one value within :data:`CPU_OFFSET_BUDGET`: a variance as
    E[x^2] - E[x]^2 is right on centred rows and cancels on these. None for a task without such
    inputs or sizes. Given the kernel, also each size it loops over (the first two) as long as
    :data:`CPU_OFFSET_LONG_BUDGET` allows, the others at :data:`OFFSET_LONG_OTHERS`, in the
    orders :func:`kernelgen.task.offset.long_offset_orders` gives: rows of 147 are one block for
    most kernels, and a variance taken in one pass only past one block passed them (round 13)."""
    orders = offset_orders(task)
    sizes = _together(task, CPU_OFFSET_BUDGET) if orders and task.sizes else None
    if sizes is None:
        return []
    draws = [Draw(sizes, order=order, kind="offset") for order in orders]
    for name in sorted(looped_sizes(checked) & set(task.sizes))[:2] if checked is not None else []:
        others = {o: min(max(OFFSET_LONG_OTHERS, r.min), r.max) for o, r in task.sizes.items() if o != name}
        value = _largest_fitting(task, others, name, False, CPU_OFFSET_LONG_BUDGET)
        if value > sizes[name] and _fits(task, {**others, name: value}, False, CPU_OFFSET_LONG_BUDGET):
            draws += [Draw({**others, name: value}, order=order, kind="offset")
                      for order in long_offset_orders(task, name)]
    return draws


def down_draws(task: Task, seed: int) -> list[Draw]:
    """CPU mode's draws whose ordinary inputs are scaled down (:func:`kernelgen.task.magnitude.down_orders`:
    where a statistic crosses the floor the prompt puts on it, max(norm, 1e-12) or var + eps, a floor put
    elsewhere shows) and, for a task pointwise in an input, whose magnitudes spread over the dtype's
    range (:mod:`kernelgen.task.spread`); every size at one value within :data:`CPU_DOWN_BUDGET`
    (:data:`CPU_SPREAD_BUDGET`)."""
    from kernelgen.task.verify import make_inputs

    orders = down_orders(task)
    sizes = _together(task, CPU_DOWN_BUDGET) if task.sizes and orders else None
    few = _together(task, CPU_SPREAD_BUDGET) if task.sizes and candidate_names(task) else None
    spread = few is not None and pointwise_names(task, make_inputs(task, few, seed))
    specials = _together(task, CPU_SPREAD_BUDGET) if task.sizes and task.nonfinite_inputs() else None
    return ([Draw(sizes, order=order, kind="scaled_down") for order in orders] if sizes is not None else []) + \
        ([Draw(few, order=order, kind="spread") for order in spread_orders(task)] if spread else []) + \
        ([Draw(specials, order=order, kind="nonfinite") for order in
          [NONFINITE_ORDER] + ([VECTORS_ORDER] if vector_inputs(task) else [])] if specials is not None else [])


def up_draws(task: Task, seed: int) -> list[Draw]:
    """CPU mode's draw scaled far up (:mod:`kernelgen.task.homogeneous`): an extreme draw of every
    size at one odd value (partial blocks, where a kernel reads its pads), within
    :data:`UP_BUDGET` elements and at least 3 (or the size's maximum), for a task whose reference
    is homogeneous in its float inputs there (tried on the draw itself); none for other tasks,
    calls and in-place ones."""
    if not task.sizes or task.variants or task.in_place or not up_names(task):
        return []
    from kernelgen.task.verify import make_inputs

    sizes = _together(task, UP_BUDGET)
    if sizes is None or any(value < min(3, task.sizes[name].max) for name, value in sizes.items()) \
            or scaled_up(task, make_inputs(task, sizes, seed, extreme=True)) is None:
        return []  # a size of 1 or 2 (a softmax of one key) is homogeneous in anything
    return [Draw(sizes, extreme=True, order=UP_ORDER, kind="scaled_up")]


def shift_draws(task: Task, seed: int) -> list[Draw]:
    """CPU mode's draws where an input is constant and far off zero along axes the reference
    ignores a shift along (:mod:`kernelgen.task.shifts`: a softmax's rows, attention's keys), one
    per such input and axes (tried on the draw's values): every size at one value within
    :data:`SHIFT_BUDGET` elements and at least 3 (or its maximum), so a row holds equal values;
    and one with the sizes of the constant axes as long as that budget allows, the others at 3,
    where that is longer (:func:`_long_along`)."""
    if not task.sizes or not shift_names(task):
        return []
    sizes = _together(task, SHIFT_BUDGET)
    if sizes is None or any(value < min(3, task.sizes[name].max) for name, value in sizes.items()):
        return []
    draws = []
    from kernelgen.task.verify import make_inputs, run_reference, size_seed

    probe = lambda: shift_orders(task, make_inputs(task, sizes, seed), run_reference, size_seed(task, sizes, seed))  # noqa: E731
    for order in probed_shift_orders(task, seed, probe):
        draws.append(Draw(sizes, order=order, kind="shifted"))
        long = _long_along(task, order, sizes, seed)
        if long is not None:
            draws.append(Draw(long, order=order, kind="shifted"))
    return draws


def _long_along(task: Task, order: str, sizes: Mapping[str, int], seed: int) -> dict[str, int] | None:
    """A shift draw's sizes with the constant axes' names as long as :data:`SHIFT_BUDGET` allows
    and the others at 3 (or their range's bounds), where that is at least twice ``sizes``' length
    along them and the order qualifies on that draw too (:func:`kernelgen.task.shifts.shift_holds`):
    split-decoding's keys are 5 long in a draw of every size at 5, and a partial sum of the values
    kept in f16 (each near A times a key's weight) overflows only past a few keys of weight near 1
    (round 18: flash_decoding_f16 with its splits' partials in f16 passed)."""
    from kernelgen.task.verify import make_inputs, run_reference, size_seed

    long_names = set(shifted_size_names(task, order))
    others = {name: min(max(3, r.min), r.max) for name, r in task.sizes.items() if name not in long_names}
    if not long_names or not others:
        return None
    long = _together(task, SHIFT_BUDGET, others)
    if long is None or any(long[name] < 2 * sizes[name] for name in long_names):
        return None
    key = (probe_key(task, seed), order)
    if key not in _LONG_HOLDS:
        _LONG_HOLDS[key] = shift_holds(task, make_inputs(task, long, seed), order, run_reference,
                                       size_seed(task, long, seed))
    return long if _LONG_HOLDS[key] else None


_LONG_HOLDS: dict[tuple[tuple[str, str, int], str], bool] = {}  # by shifts.probe_key and the order


def multiple_draws(task: Task, checked: Checked, seed: int) -> list[Draw]:
    """CPU mode's draws at a multiple of each of :func:`kernelgen.task.size_reads.size_multiples` (the first four): each size
    name at the least multiple, past 1, in its range, the others small; and each size that
    :func:`kernelgen.task.size_reads.chunk_steps` walks at one past a multiple of all its steps (their least
    common multiple; the largest where that is out of range): every chunk's last holds one element. The latter
    also on the ordinary domains with the extreme draws' end lines (``end_lines``): row_topk64's extreme integers
    overfill its candidate list, and the exact fallback hid a candidate loop that drops a row's last element."""
    rng = random.Random(f"{task.id}:{seed}:multiples")
    wanted = [(name, modulus, 0) for modulus in size_multiples(checked)[:4] for name in task.sizes]
    steps = [(name, step) for name, step in chunk_steps(checked) if name in task.sizes]
    for name in dict.fromkeys(name for name, _ in steps):  # one past a multiple of all of a size's steps at once
        own = [step for other, step in steps if other == name]
        common = math.lcm(*own)
        wanted.append((name, common if common <= task.sizes[name].max else max(own), 1))
    draws: list[Draw] = []
    for name, modulus, past in wanted:
        r = task.sizes[name]
        value = max(2 - past, -(-(r.min - past) // modulus)) * modulus + past
        if value > r.max:
            continue
        small = _small(task, [o for o in task.sizes if o != name], rng)
        draw = Draw({**small, name: value}, extreme=True, kind="chunk_edge" if past else "at_multiple")
        if _fits(task, draw.sizes, False) and draw not in draws:
            draws.append(draw)
            if past:  # and on the ordinary domains, where an extreme one (small integers, for ties) takes another path
                draws.append(Draw(draw.sizes, order=END_LINES, kind="chunk_edge"))
    return draws


def ordering_draws(task: Task, checked: Checked) -> list[Draw]:
    """CPU mode's draws for each pair of :func:`kernelgen.task.size_reads.size_pairs` (the first
    :data:`ORDERED_PAIRS`): the two sizes as large as :data:`CPU_JOINT_BUDGET` allows with the
    others at their minimum, one past the other by the kernel's largest block and one (tiles of M
    against tiles of N differ there), and the other way round."""
    draws: list[Draw] = []
    lowest = {name: r.min for name, r in task.sizes.items()}
    gap = max([1, *(m.value for each in launches_of(checked) for m in each.kernel.meta)]) + 1
    for a, b in size_pairs(task, checked)[:ORDERED_PAIRS]:
        for big, other in ((a, b), (b, a)):
            low = _largest(lambda value: _fits(task, _ordered(task, lowest, big, other, value, gap), False,
                                               CPU_JOINT_BUDGET), 1, max(task.sizes[a].max, task.sizes[b].max))
            sizes = _ordered(task, lowest, big, other, low, gap)
            if sizes[big] > sizes[other] and _fits(task, sizes, False, CPU_JOINT_BUDGET):
                draws.append(Draw(sizes, kind="size_order"))
    return draws


def tile_draws(task: Task, checked: Checked) -> list[Draw]:
    """For a kernel that takes its tile from a program's id by division (:func:`kernelgen.task.size_reads.tiled_sizes`):
    each pair of those sizes (those the divisions read first) at one odd value as large as :data:`TILE_BUDGET` allows,
    the other sizes so numbered at their minimum and the rest at :data:`RANGE_MAX_OTHERS`: many tiles along two sizes
    at once, where a grouped order's partial last group shows (every other draw keeps all sizes but one small, or all
    at one value within a quarter of this budget). None where a range keeps one below :data:`TILE_LEAST` (a batch)."""
    names = [name for name in tiled_sizes(checked) if name in task.sizes]
    draws: list[Draw] = []
    for pair in itertools.combinations(names, 2):
        fixed = {o: r.min if o in names else min(max(RANGE_MAX_OTHERS, r.min), r.max)
                 for o, r in task.sizes.items() if o not in pair}
        sizes = _together(task, TILE_BUDGET, fixed)
        if sizes is not None and min(sizes[name] for name in pair) >= TILE_LEAST \
                and Draw(sizes, kind="tiles") not in draws:
            draws.append(Draw(sizes, kind="tiles"))
    return draws[:TILE_PAIRS]


def crossing_draws(task: Task, checked: Checked, seed: int, gpu: bool = False) -> list[Draw]:
    """The draws where the kernel's conditions on its sizes answer otherwise than at the ranges'
    minima (:mod:`kernelgen.task.size_conditions`: one per combination of answers, well inside
    its region, the first :data:`CROSSINGS`), within :data:`CPU_PAST_BUDGET` (drawn again with the
    other sizes large: within :data:`CPU_ELEMENT_BUDGET`, their cost); on the GPU within its byte
    budget (a band of attention's S past the interpreter's budget was judged by neither). Inputs of
    the ordinary domains: the draw is there to take the path, and a path that drops keys past
    8192 showed at S = 13977 on ordinary values but not on extreme ones, whose peaked softmax
    put the weight on one key within the first 8192. A region's draw within :data:`CPU_ELEMENT_BUDGET`
    (not sampled; on the GPU every one) is drawn with the extreme domains as well: ``where(a > b, a, b)`` past 32768 elements drops a
    NaN only there (round 26)."""
    regions = condition_regions(task, size_conditions(task, checked),
                                lambda sizes: _fits(task, sizes, gpu, CPU_PAST_BUDGET), seed, CROSSINGS,
                                lambda sizes: _fits(task, sizes, gpu))
    return [Draw(sizes, extreme=extreme, kind="crossing") for extreme in (False, True) for sizes in regions
            if not extreme or _fits(task, sizes, gpu)]


def _ordered(task: Task, lowest: Mapping[str, int], big: str, other: str, value: int, gap: int) -> dict[str, int]:
    """``other`` at ``value`` and ``big`` ``gap`` or one more (odd) past it, clamped to their
    ranges, the rest as given."""
    rb, ro = task.sizes[big], task.sizes[other]
    past = value + gap + (1 - (value + gap) % 2)
    return {**lowest, other: min(max(value, ro.min), ro.max), big: min(max(past, rb.min), rb.max)}


def equality_draws(task: Task, checked: Checked) -> list[Draw]:
    """CPU mode's draws at each value :func:`kernelgen.task.size_reads.size_equalities` finds (the
    first :data:`EQUALITY_VALUES`): each name whose range holds it at that value, the others as
    large as :func:`joint_draw` makes them."""
    draws: list[Draw] = []
    for value in size_equalities(checked)[:EQUALITY_VALUES]:
        for name, r in task.sizes.items():
            if r.min <= value <= r.max:
                draw = joint_draw(task, {name: value}, kind="at_equality")
                if draw is not None and draw not in draws:
                    draws.append(draw)
    return draws


def cancelling_draw(task: Task) -> Draw | None:
    """CPU mode's draw for a sum into an f16 or bf16 output (a gemv, a row mean:
    :func:`kernelgen.task.reductions.cancelling_inputs`): the reduced size at the top of its
    range, the others as :func:`range_max_draw` puts them, the halves of the reduction large and
    cancelling (:func:`kernelgen.task.reductions.with_cancelling_halves`), where a partial sum
    rounded to the output's dtype (a split-K's partials atomic_added into an f16 output) is far off
    the small result; None for other tasks. Not on the GPU (GPU mode runs it in the interpreter,
    as it does the sorted draws): a correct answer's tensor-core dot truncates each accumulation
    step, and on these sums it drifts as far as an f16 rounding of the partials by K = 32768."""
    found = cancelling_inputs(task)
    if found is None:
        return None
    return Draw(range_max_draw(task, found[0], gpu=False).sizes, order="cancelling", kind="cancelling")


def addend_draws(task: Task, seed: int) -> list[Draw]:
    """CPU mode's draws where an input the reference adds to an f16 or bf16 output cancels the
    rest of it (:mod:`kernelgen.task.addends`), one per such input (the reference tried on the
    draw's values: an input it does not add gets none): every size at one value, within
    :data:`ADDEND_BUDGET` elements (the arithmetic is judged, not the sizes)."""
    names = addend_inputs(task)
    sizes = _together(task, ADDEND_BUDGET) if names and task.sizes else None
    if sizes is None:
        return []
    from kernelgen.task.verify import make_inputs, run_reference

    drawn = make_inputs(task, sizes, seed)
    return [Draw(sizes, order=f"{ADDEND}:{name}", kind="addend") for name in names
            if addend_part(task, drawn, name, run_reference) is not None]


def limit_sizes(task: Task) -> list[dict[str, int]]:
    """The assignments a kernel's launches are planned at without running (grid, shapes,
    params; no memory, no interpretation): each name at its range's maximum with the others at
    their minimum, then all at their maxima. Draws stay within a budget, so a grid that puts a
    size on axis 1 (at most 65535 programs) or an i32 param past 2**31 may never be drawn at a
    size the task allows; a GPU refuses the call there, and so does the verdict."""
    lowest = {name: r.min for name, r in task.sizes.items()}
    found: list[dict[str, int]] = []
    for sizes in [{**lowest, name: r.max} for name, r in task.sizes.items()] + [
            {name: r.max for name, r in task.sizes.items()}]:
        if sizes not in found:
            found.append(sizes)
    return found


def _past(extent: int, low: int, cap: int, rng: random.Random) -> int:
    """A value in [low, cap] past extent, below TARGET_SPAN * extent where the range allows,
    and not a multiple of extent where it can avoid one (cap > extent)."""
    low = max(low, extent + 1)
    value = rng.randint(low, max(low, min(cap, TARGET_SPAN * extent - 1)))
    if value % extent == 0:
        value = value - 1 if value - 1 >= low else min(value + 1, cap)
    return value


def targeted_draws(task: Task, checked: Checked, seed: int, gpu: bool) -> list[Draw]:
    """Per size name: a value past the kernel's largest extent, the others small; the range's
    maximum (:func:`range_max_draw`) and, along a size only loops walk, one less where that is
    even. All within the budget, with the extreme domains."""
    rng = random.Random(f"{task.id}:{seed}:targeted")
    extent = block_extent(checked)
    looped = looped_sizes(checked) & set(task.sizes)
    gridded = {n for each in launches_of(checked) for n in names_read(list(each.kernel.grid))} & set(task.sizes)
    # the task's own scans (its golden's), not the answer's: a kernel that numbers its lanes with
    # a cumsum must not turn the sorted draws off
    scans = any(isinstance(node, L.Scan) for node, _ in nodes(task.golden or checked.kernel, ""))
    lowest = {name: r.min for name, r in task.sizes.items()}
    combines = not gpu and why_not_sampled(checked) is not None
    draws: list[Draw] = []
    for name in task.sizes:
        small = _small(task, task.sizes, rng)
        cap = _largest_fitting(task, small, name, gpu)
        past, reach = small, cap
        if not gpu and cap <= extent < task.sizes[name].max:
            # The other names small may keep this one within the extent where their minima do
            # not (group_norm's L at B = 16: 4095), and an extent past the element budget (a
            # grid capped at 65535 programs of 128 covers 8388480 elements) is reached within
            # CPU_PAST_BUDGET, a launch past the interpreter's budget judged on a sample.
            further = _largest_fitting(task, lowest, name, gpu, CPU_PAST_BUDGET)
            if further > extent:
                past, reach = lowest, further
        value = _past(extent, task.sizes[name].min, reach, rng) if reach > extent else cap
        # In CPU mode, along a size the grid spreads over and no loop runs over (8192 rows are
        # 8192 programs, the interpreter's time), the draw past the extent stands for the range's
        # maximum: a size a program covers in blocks or a loop walks (a reduction, whose rounding
        # shows on the other sizes' 16) gets it; on the GPU every size does.
        top = range_max_draw(task, name, gpu) if gpu or name not in gridded or name in looped else None
        # Where the budget keeps the size within the extent, the draw "past" it is the largest
        # that fits: the range's maximum draw, when it reaches the maximum, holds it already.
        if top is None or reach > extent or top.sizes[name] < value:
            draws.append(Draw({**past, name: value}, extreme=True, kind="past_extent"))
        if top is None and combines:
            # Where programs combine their work (a later launch, scratch, atomics), a size only
            # the grid spreads over still gets the top the element budget reaches, the others at
            # their minimum: a launch that combines a fixed 64 of the partials an earlier one
            # wrote, 8 per 4096 columns, drops those past L = 32768, and no comparison says so.
            # (Independent programs are judged each by its own work; the extent covers that.)
            highest = _largest_fitting(task, lowest, name, gpu)
            if highest > value:
                draws.append(Draw({**lowest, name: highest}, extreme=True, kind="range_max"))
        if top is not None:
            draws.append(top)
            # Along a size only loops walk (a matmul's K, a long row), one less than that
            # maximum where it is even, the others at their minimum: the maximum (8192) is a
            # multiple of every block, so no draw at the top of the range had a partial last
            # block, and a loop that drops a partial tail only past some size (K >= 4096)
            # passed everything.
            reach = top.sizes[name]
            if name in looped and name not in gridded and reach % 2 == 0 and reach - 1 >= task.sizes[name].min:
                draws.append(Draw({**lowest, name: reach - 1}, extreme=True, kind="range_max"))
        # Along a size a program reduces over (a block or a loop covers it), values sorted up and
        # down put each row's largest and smallest values at its end, past any leading part:
        # with a domain of few values (ties) or a threshold most blocks reach, a scan of the
        # first block finds the row's maximum (or a hit) there anyway. The size is past twice
        # the extent, so the sorted row's top values are past the first extent too. CPU mode's
        # draws only: GPU mode runs them in the interpreter as well (``interpreter_checks``).
        # Not for a task whose golden scans: a running sum of sorted values cancels (through -19000
        # and back, f32's rounding there is past a cumsum's tolerance) and a running product
        # climbs out of range, whatever the kernel; each of its outputs depends on every earlier
        # element, so a truncated scan fails the draws past the extent already.
        # The other sizes at their minimum: the order along this one is what is judged, and
        # the interpreter's time grows with the others.
        if not gpu and not scans and (name not in gridded or name in looped):
            value = _past(2 * extent, task.sizes[name].min, cap, rng) if cap > 2 * extent else cap
            draws += [Draw({**lowest, name: value}, order=order, kind="sorted") for order in ("ascending", "descending")]
    if gpu:  # the crossing draws on the GPU too: its budget reaches regions the interpreter's does not
        return draws + crossing_draws(task, checked, seed, gpu=True) + tile_draws(task, checked)
    extra = [joint_draw(task), cancelling_draw(task), *equality_draws(task, checked), *offset_draws(task, checked),
             *down_draws(task, seed), *multiple_draws(task, checked, seed), *ordering_draws(task, checked),
             *tile_draws(task, checked),
             *crossing_draws(task, checked, seed), *addend_draws(task, seed), *up_draws(task, seed),
             *shift_draws(task, seed), *scalar_draws(task, checked, seed),
             *(Draw(joint, order=order, kind="concentrated") for order in concentrated_orders(task)
               if task.sizes and (joint := _together(task, CPU_JOINT_BUDGET)))]
    return draws + [draw for draw in extra if draw is not None]


def num_sms_draws(task: Task, checked: Checked, draws: list[Draw], scalars_of) -> list[Draw]:
    """For a kernel that reads num_sms: the drawn assignment that gives it the most programs
    (up to the largest value checked; then the one with the most elements, so that each of
    num_sms programs has work), once per value of :data:`NUM_SMS_CHECKED`."""
    if not draws or not reads_num_sms(checked):
        return []

    def programs(draw: Draw) -> int:
        from kernelgen.host.plan import eval_host, sequence_for_sizes

        try:
            plans = sequence_for_sizes(checked, draw.sizes, scalars_of(draw.sizes))
        except Exception:  # noqa: BLE001 - sizes the kernel refuses: the draw itself says so
            return 0
        most = 0
        for plan in plans:
            plan.env.num_sms = _MANY_SMS
            most = max(most, math.prod(int(eval_host(g, plan.env)) for g in plan.kernel.grid))
        return most

    # Not the joint draw: it holds more elements than a range maximum does, but square (571 x 571),
    # so no persistent program walks more than a few tiles of it; a kernel whose partials lose
    # the tiles of programs past 128 needs M = 8192 rows against 132 SMs to show it.
    candidates = [d for d in draws if d.kind != "joint"] or draws
    best = max(candidates, key=lambda d: (min(programs(d), max(NUM_SMS_CHECKED)), task.footprint(d.sizes)[0]))
    return [Draw(best.sizes, best.extreme, sms, kind="num_sms") for sms in NUM_SMS_CHECKED]


def case_draws(task: Task, checked: Checked | None, shapes: int, seed: int, gpu: bool) -> list[Draw]:
    """Every assignment a kernel is checked on: the hypothesis draws, then the targeted and
    range-maximum ones (none without a checked kernel or without sizes), the smallest first,
    then the num_sms draws of a kernel that reads it; duplicates dropped."""
    draws = [Draw(sizes) for sizes in draw_sizes(task, shapes, seed, gpu)]
    if checked is not None and task.sizes:
        # The smallest first: a wrong kernel fails on the cheapest draw that shows it.
        for draw in sorted(targeted_draws(task, checked, seed, gpu), key=lambda d: task.footprint(d.sizes)[0]):
            if draw not in draws:
                draws.append(draw)
    if checked is not None:
        from kernelgen.task.verify import scalar_values

        draws += num_sms_draws(task, checked, draws, lambda sizes: scalar_values(task, sizes, seed))
    return draws
