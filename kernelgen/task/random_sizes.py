"""The size assignments hypothesis draws from a task's ranges, the part of a case's draws that does not look at the
kernel (:func:`kernelgen.task.draws.case_draws` adds those that do): edge values (tiny, odd, powers of two and their
neighbours) and uniform draws, within the ranges, capped at ``cpu_max`` in CPU mode (the interpreter's speed)."""

from __future__ import annotations

from kernelgen.task.spec import Task

DEFAULT_CPU_MAX = 4096
EDGE_SIZES = (1, 2, 3, 7, 16, 17, 100, 127, 128, 129, 1000, 1023, 1024, 1025, 4097)


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
