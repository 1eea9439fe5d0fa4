"""What a case is checked on: the size assignments, and which of them use extreme values.

Sizes drawn without looking at the kernel let a kernel that handles only its first block pass:
a grid of one program with a 16384-wide block is right for every N up to 16384, and a matmul
with one K block and no K loop is right while K fits in it. So besides the hypothesis draws from
the task's ranges (edge values and uniform draws, capped by ``cpu_max`` in CPU mode), every size
name gets a *targeted* draw: that name just past the largest extent the kernel's own numbers
reach (blocks, integer literals, a literal grid times a block; not a multiple of it), the other
names small. On the GPU every name also gets a draw at its
range's maximum, so the sizes the prompt promises are the sizes checked. Targeted draws stay
within a budget of the total elements (CPU: the interpreter's speed) or bytes (GPU: memory) of
all inputs and outputs; a range that cannot reach past the extent, or not within the budget, is
drawn at the largest value it can take.

Targeted draws use the task's extreme-value domains (:attr:`kernelgen.task.spec.Task.extreme_domains`),
large magnitudes on long rows, where numerically careless formulas (softmax without the row
maximum, sums in f16) fail as they would on real data.

Everything is reproducible from the seed: the hypothesis draws from hypothesis's seed, the
targeted ones from a :class:`random.Random` seeded by the task and the seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Mapping

from kernelgen.check.checked import Checked, launches_of
from kernelgen.task.spec import Task

DEFAULT_CPU_MAX = 4096
EDGE_SIZES = (1, 2, 3, 7, 16, 17, 100, 127, 128, 129, 1000, 1023, 1024, 1025, 4097)
# The other names' values in a targeted draw: small, odd and even, below and past 16.
SMALL_SIZES = (1, 2, 3, 5, 7, 16, 17)
# Elements of all inputs and outputs of one targeted draw in the CPU interpreter: enough for
# four tensors past the largest block the checker allows (2**20); a kernel with ordinary blocks
# (about 1024) has targeted draws far below it. Bytes of them on a GPU (an H200 has 141 GB;
# the reference, the guard-banded copies and a high-precision reference's temporaries need
# several times this).
CPU_ELEMENT_BUDGET = 1 << 23
GPU_BYTE_BUDGET = 4 << 30
# A targeted value lies in (extent, TARGET_SPAN * extent): past the first block, within a few.
TARGET_SPAN = 4


@dataclass(frozen=True)
class Draw:
    """One size assignment a case is checked on; ``extreme``: inputs use the task's
    extreme-value domains."""

    sizes: dict[str, int] = field(default_factory=dict)
    extreme: bool = False


def block_extent(checked: Checked) -> int:
    """How far the kernel's own numbers reach: the largest of its meta values, every axis of
    every block shape the checker inferred (aranges, loads, reshapes, dots), every integer
    literal (a loop that stops at 4096 instead of N) and each literal grid size times the
    largest block (a grid of 16 blocks of 1024 covers 16384 elements and no more); for a
    program, over all its launches."""
    launches = launches_of(checked)
    blocks = [m.value for m in checked.kernel.meta]
    blocks += [d for each in launches for value_type in each.types.values() for d in value_type.shape]
    block = max([1, *blocks])
    literals = _integer_literals(checked.kernel.model_dump())
    grid = [g * block for each in launches for g in each.kernel.grid if isinstance(g, int) and not isinstance(g, bool)]
    return max([block, *literals, *grid])


def _integer_literals(node: object) -> list[int]:
    if isinstance(node, bool):
        return []
    if isinstance(node, int):
        return [abs(node)]
    if isinstance(node, dict):
        return [i for value in node.values() for i in _integer_literals(value)]
    if isinstance(node, list):
        return [i for value in node for i in _integer_literals(value)]
    return []


def _fits(task: Task, sizes: Mapping[str, int], gpu: bool) -> bool:
    elements, nbytes = task.footprint(sizes)
    return nbytes <= GPU_BYTE_BUDGET if gpu else elements <= CPU_ELEMENT_BUDGET


def _largest_fitting(task: Task, sizes: dict[str, int], name: str, gpu: bool) -> int:
    """The largest value of ``name`` in its range, the others as given, within the budget
    (the range's minimum where even that does not fit)."""
    r = task.sizes[name]
    low, high = r.min, r.max
    if _fits(task, {**sizes, name: high}, gpu):
        return high
    while low < high:  # the footprint grows with every size: bisect
        mid = (low + high + 1) // 2
        if _fits(task, {**sizes, name: mid}, gpu):
            low = mid
        else:
            high = mid - 1
    return low


def _past(extent: int, low: int, cap: int, rng: random.Random) -> int:
    """A value in [low, cap] past extent, below TARGET_SPAN * extent where the range allows,
    and not a multiple of extent where it can avoid one (cap > extent)."""
    low = max(low, extent + 1)
    value = rng.randint(low, max(low, min(cap, TARGET_SPAN * extent - 1)))
    if value % extent == 0:
        value = value - 1 if value - 1 >= low else min(value + 1, cap)
    return value


def targeted_draws(task: Task, checked: Checked, seed: int, gpu: bool) -> list[Draw]:
    """Per size name: a value past the kernel's largest block extent, the others small; on the
    GPU also the range's maximum. All within the budget, with the extreme domains."""
    rng = random.Random(f"{task.id}:{seed}:targeted")
    extent = block_extent(checked)
    draws: list[Draw] = []
    for name in task.sizes:
        small = {}
        for other, r in task.sizes.items():
            choices = [v for v in SMALL_SIZES if r.min <= v <= r.max] or [r.min]
            small[other] = rng.choice(choices)
        cap = _largest_fitting(task, small, name, gpu)
        value = _past(extent, task.sizes[name].min, cap, rng) if cap > extent else cap
        draws.append(Draw({**small, name: value}, extreme=True))
        if gpu and cap != value:
            draws.append(Draw({**small, name: cap}, extreme=True))
    return draws


def size_strategy(task: Task, cpu: bool):
    """Hypothesis strategy of size assignments: edge values (tiny, odd, powers of two and their
    neighbours) and uniform draws, within the task's ranges (capped in CPU mode)."""
    from hypothesis import strategies as st

    parts = {}
    for name, r in task.sizes.items():
        high = min(r.max, r.cpu_max or DEFAULT_CPU_MAX) if cpu else r.max
        high = max(high, r.min)
        edges = sorted({v for v in EDGE_SIZES + (r.min, high) if r.min <= v <= high})
        parts[name] = st.one_of(st.sampled_from(edges), st.integers(r.min, high))
    return st.fixed_dictionaries(parts)


def draw_sizes(task: Task, shapes: int, seed: int, gpu: bool) -> list[dict[str, int]]:
    """``shapes`` distinct size assignments drawn by hypothesis from the task's ranges,
    reproducible from ``seed``; they do not depend on a kernel."""
    from hypothesis import HealthCheck, Phase, given, settings as hyp_settings
    from hypothesis import seed as hyp_seed

    if not task.sizes:
        return [{}]
    drawn: list[dict[str, int]] = []

    @hyp_settings(max_examples=shapes, database=None, deadline=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck), print_blob=False)
    @hyp_seed(seed)
    @given(size_strategy(task, cpu=not gpu))
    def collect(sizes: dict[str, int]) -> None:
        if sizes not in drawn:
            drawn.append(dict(sizes))

    collect()
    return drawn


def case_draws(task: Task, checked: Checked | None, shapes: int, seed: int, gpu: bool) -> list[Draw]:
    """Every assignment a kernel is checked on: the hypothesis draws, then the targeted ones
    (none without a checked kernel or without sizes); duplicates dropped."""
    draws = [Draw(sizes) for sizes in draw_sizes(task, shapes, seed, gpu)]
    if checked is not None and task.sizes:
        for draw in targeted_draws(task, checked, seed, gpu):
            if draw not in draws:
                draws.append(draw)
    return draws
