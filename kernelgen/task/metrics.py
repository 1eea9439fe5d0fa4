"""The benchmark's scores over a list of case results, defined once for every report.

* **pass rate**: the fraction of cases whose outcome is ``ok``.
* **pass@k**: the unbiased estimator of Chen et al. (2021) per task, averaged over tasks with at
  least k samples. A task's samples are its cases of one track: the pipeline's and the
  raw-LLM baseline's answers to the same task are two tasks here, never two samples.
* **fast_p** (KernelBench): the fraction of *all* cases that are correct *and* faster than
  ``p`` x PyTorch eager. Failures stay in the denominator, so a model cannot raise its fast_p
  by failing the hard tasks. Undefined (None) when no case was timed (a run without a GPU).
* **geometric-mean speedup** over PyTorch eager, over the correct timed cases (reported with
  their count: a mean over 3 cases says less than one over 300).

* **speedup vs torch.compile**: the geometric mean of ``compiled_ms / kernel_ms`` over the
  correct cases where torch.compile of the eager code was timed (``--kg-compiled``), and
  fast_1 against it: the fraction of those cases (failures and all) faster than torch.compile.
* **speedup vs the best baseline**: against the faster of eager and torch.compile per case
  (eager where torch.compile was not timed or failed): what a kernel engineer would otherwise
  run. Its geometric mean and fast_1, over the same cases as fast_p.
* **as written / tuned** (``--kg-tune``): the geometric-mean speedup over eager with each
  kernel's configuration as written (its time during the tuning) and as tuned (the case's
  timing); a case without tuning counts the same in both.

Each speedup score has a *before* variant (``before=True``) for runs with optimization rounds
(:mod:`kernelgen.model.optimize`): it reads each case's timing before the rounds (its first correct
answer's); a case without rounds counts the same before and after.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Sequence

if TYPE_CHECKING:
    from kernelgen.task.results import CaseResult, Timing

FAST_P_THRESHOLDS = (0.0, 1.0, 1.5)
# The benchmark's tiers (bench/<tier>/*.yaml); here, not in kernelgen.task.spec, so that the command
# line's --tier choices do not import the AST models.
TIERS = ("easy", "med", "hard", "expert")
TIER_ORDER = (*TIERS, "tritonbench")


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator of pass@k from n samples of which c pass (Chen et al. 2021):
    ``1 - C(n-c, k) / C(n, k)``, the chance that k samples drawn from the n hold a pass."""
    if not 0 <= c <= n or k < 1:
        raise ValueError(f"pass@k needs 0 <= c <= n and k >= 1, got n={n}, c={c}, k={k}")
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    # The product form avoids huge binomials: prod_{i=n-c+1}^{n} (1 - k / i).
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def mean_pass_at_k(cases: Sequence[CaseResult], k: int) -> tuple[float, int] | None:
    """pass@k averaged over the tasks that have at least k samples, and how many tasks those are
    (a task of each track counts on its own)."""
    per_task: dict[tuple[str, str, str], list[CaseResult]] = defaultdict(list)
    for case in cases:
        per_task[task_key(case)].append(case)
    scores = [pass_at_k(len(group), sum(c.ok for c in group), k) for group in per_task.values() if len(group) >= k]
    if not scores:
        return None
    return sum(scores) / len(scores), len(scores)


def task_key(case: CaseResult) -> tuple[str, str, str]:
    """What the samples of one task share: (track, tier, task)."""
    return case.track, case.tier, case.task


def max_samples(cases: Sequence[CaseResult]) -> int:
    """The most samples any task (of one track) has: the largest k pass@k can be reported for."""
    counts = Counter(task_key(case) for case in cases)
    return max(counts.values(), default=0)


def case_timing(case: CaseResult, before: bool = False) -> Timing | None:
    """A case's timing; with ``before``, the one before its optimization rounds."""
    if before and case.optimization is not None:
        return case.optimization.before
    return case.timing


def fast_p(cases: Sequence[CaseResult], p: float, *, before: bool = False) -> float | None:
    """The fraction of all ``cases`` that are correct and more than ``p`` times faster than
    PyTorch eager; None when none of them was timed."""
    timings = [case_timing(case, before) for case in cases]
    if not cases or all(timing is None for timing in timings):
        return None
    fast = sum(case.ok and timing is not None and timing.speedup > p for case, timing in zip(cases, timings))
    return fast / len(cases)


def geomean_speedup(cases: Iterable[CaseResult], *, before: bool = False) -> tuple[float, int] | None:
    """The geometric-mean speedup over the correct timed cases, and their count."""
    speedups = [timing.speedup for case in cases
                if case.ok and (timing := case_timing(case, before)) is not None]
    if not speedups:
        return None
    return geometric_mean(speedups), len(speedups)


def speedup_vs_best(timing: Timing) -> float:
    """A timing's speedup over the faster of PyTorch eager and torch.compile (eager alone where
    torch.compile was not timed)."""
    baseline = min(timing.eager_ms, timing.compiled_ms) if timing.compiled_ms else timing.eager_ms
    return baseline / timing.kernel_ms


def fast_vs_compiled(cases: Sequence[CaseResult], p: float) -> float | None:
    """fast_p against torch.compile: of all cases but the timed ones torch.compile has no time
    for (it failed, or was not run), the fraction correct and more than ``p`` times faster than
    torch.compile (failures stay in the denominator); None when no torch.compile was timed."""
    if not any(case.timing is not None and case.timing.compiled_ms for case in cases):
        return None
    pool = [case for case in cases if case.timing is None or case.timing.compiled_ms]
    return sum(case.ok and case.timing is not None and case.timing.speedup_vs_compiled > p for case in pool) / len(pool)


def fast_vs_best(cases: Sequence[CaseResult], p: float) -> float | None:
    """fast_p against the faster of eager and torch.compile per case (see :func:`speedup_vs_best`)."""
    if not cases or all(case.timing is None for case in cases):
        return None
    return sum(case.ok and case.timing is not None and speedup_vs_best(case.timing) > p for case in cases) / len(cases)


def geomean_vs_best(cases: Iterable[CaseResult]) -> tuple[float, int] | None:
    """The geometric-mean speedup over the faster of eager and torch.compile, over the correct timed cases."""
    speedups = [speedup_vs_best(case.timing) for case in cases if case.ok and case.timing is not None]
    return (geometric_mean(speedups), len(speedups)) if speedups else None


def geomean_vs_compiled(cases: Iterable[CaseResult]) -> tuple[float, int] | None:
    """The geometric-mean speedup over torch.compile over the correct cases where it was timed."""
    speedups = [case.timing.speedup_vs_compiled for case in cases
                if case.ok and case.timing is not None and case.timing.speedup_vs_compiled]
    return (geometric_mean(speedups), len(speedups)) if speedups else None


def as_written_speedup(case: CaseResult) -> float | None:
    """A timed case's speedup over eager with its kernel's configuration as written."""
    if case.timing is None:
        return None
    tuning = case.tuning
    if tuning is None or not tuning.as_written_ms:
        return case.timing.speedup
    return case.timing.eager_ms / tuning.as_written_ms


def geomean_as_written(cases: Iterable[CaseResult]) -> tuple[float, int] | None:
    """The geometric-mean speedup over eager of the correct timed cases, as written (untuned)."""
    speedups = [value for case in cases if case.ok and (value := as_written_speedup(case))]
    return (geometric_mean(speedups), len(speedups)) if speedups else None


def tuning_time(cases: Iterable[CaseResult]) -> tuple[float, int] | None:
    """Seconds spent tuning, summed, and how many kernels were tuned (cache hits included)."""
    seconds = [case.tuning.seconds for case in cases if case.tuning is not None]
    return (sum(seconds), len(seconds)) if seconds else None


def geometric_mean(values: Sequence[float]) -> float:
    """The geometric mean of positive numbers (speedups average this way: 2x and 0.5x is 1x)."""
    return math.exp(sum(math.log(v) for v in values) / len(values))


@dataclass
class Scores:
    """Every score of one group of cases (a tier of a run, or a whole run)."""

    cases: int
    passed: int
    pass_at: dict[int, tuple[float, int]] = field(default_factory=dict)
    fast: dict[float, float | None] = field(default_factory=dict)
    geomean: tuple[float, int] | None = None
    fast_before: dict[float, float | None] = field(default_factory=dict)
    geomean_before: tuple[float, int] | None = None
    geomean_compiled: tuple[float, int] | None = None
    fast_compiled: float | None = None  # fast_1 against torch.compile
    geomean_best: tuple[float, int] | None = None  # against the faster of eager and torch.compile
    fast_best: float | None = None
    geomean_as_written: tuple[float, int] | None = None
    tuning_s: tuple[float, int] | None = None
    outcomes: Counter = field(default_factory=Counter)

    @property
    def pass_rate(self) -> float:
        return self.passed / self.cases if self.cases else 0.0


def score(cases: Sequence[CaseResult], ks: Iterable[int] = (1,)) -> Scores:
    pass_at = {k: value for k in ks if (value := mean_pass_at_k(cases, k)) is not None}
    return Scores(cases=len(cases), passed=sum(case.ok for case in cases), pass_at=pass_at,
                  fast={p: fast_p(cases, p) for p in FAST_P_THRESHOLDS}, geomean=geomean_speedup(cases),
                  fast_before={p: fast_p(cases, p, before=True) for p in FAST_P_THRESHOLDS},
                  geomean_before=geomean_speedup(cases, before=True),
                  geomean_compiled=geomean_vs_compiled(cases), fast_compiled=fast_vs_compiled(cases, 1.0),
                  geomean_best=geomean_vs_best(cases), fast_best=fast_vs_best(cases, 1.0),
                  geomean_as_written=geomean_as_written(cases),
                  tuning_s=tuning_time(cases),
                  outcomes=Counter(case.outcome.value for case in cases))


def tier_key(tier: str) -> tuple[int, str]:
    """Sort key of tiers: easy, med, hard, tritonbench, then any other by name."""
    return (TIER_ORDER.index(tier) if tier in TIER_ORDER else len(TIER_ORDER), tier)


def by_tier(cases: Iterable[CaseResult]) -> dict[str, list[CaseResult]]:
    groups: dict[str, list[CaseResult]] = defaultdict(list)
    for case in cases:
        groups[case.tier].append(case)
    return {tier: groups[tier] for tier in sorted(groups, key=tier_key)}
