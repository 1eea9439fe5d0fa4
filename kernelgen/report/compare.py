"""Comparing benchmark runs: their scores side by side, and the tasks that changed.

For each run, the terminal summary of the plugin (:func:`kernelgen.harness.plugin.summarize`:
outcomes per tier, pass@k, fast_1, geometric mean); then one table of the scores of every run
per tier and track (pass rate, pass@1 and pass@k, fast_0, fast_1 and fast_1.5 with failures in
the denominator, the geometric-mean speedup with its count, and fast_1 and the geometric mean
against torch.compile and against the faster of eager and torch.compile per case; see
:mod:`kernelgen.task.metrics`); then
the tasks whose outcome or speedup differs between the runs that all have them, and the tasks
missing from a run. A task is scored per (track, task, sample): the pipeline's and the
baseline's cases of one task are two tasks, never two samples. A merged run compares like any
other. Runs with optimization rounds get a table of fast_1, fast_1.5 and the geometric mean
before and after the rounds.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from kernelgen.errors import KernelgenError
from kernelgen.task.metrics import FAST_P_THRESHOLDS, by_tier, geomean_speedup, max_samples, score, tier_key
from kernelgen.task.results import TRACKS
from kernelgen.harness.progress import progress
from kernelgen.report.store import StoredCase, read_run

DEFAULT_SPEEDUP_CHANGE = 0.10
ABSENT = "-"


class CompareError(KernelgenError):
    stage = "report"


@dataclass
class Run:
    label: str
    path: Path
    cases: list[StoredCase]


def run_labels(paths: Sequence[Path]) -> list[str]:
    """Short names for runs: their file stems, or their paths where stems collide."""
    stems = [path.stem for path in paths]
    if len(set(stems)) == len(stems):
        return stems
    return [str(path) for path in paths]


def load_runs(paths: Sequence[Path | str], labels: Sequence[str] | None = None) -> list[Run]:
    paths = [Path(p) for p in paths]
    if labels and len(labels) != len(paths):
        raise CompareError(f"{len(labels)} labels for {len(paths)} runs: give one --label per run", code="labels")
    names = list(labels) if labels else run_labels(paths)
    return [Run(name, path, read_run(path))
            for name, path in progress(list(zip(names, paths)), description="reading runs", unit="run")]


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Columns padded to their widest cell: the first left-aligned, the others right-aligned."""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(header), *(line(row) for row in rows)]


def _percent(value: float | None) -> str:
    return ABSENT if value is None else f"{value:.1%}"


def score_table(runs: Sequence[Run]) -> list[str]:
    """The scores of every run, per tier and over all tiers; per track too where the runs hold
    more than one (scores over two tracks' cases would mean nothing)."""
    k_max = max((max_samples(run.cases) for run in runs), default=1)
    ks = sorted({1, k_max})
    tracks = sorted({case.track for run in runs for case in run.cases}, key=TRACKS.index)
    by_track = len(tracks) > 1
    header = ["tier", *(["track"] if by_track else []), "run", "cases", "pass", *(f"pass@{k}" for k in ks),
              *(f"fast_{p:g}" for p in FAST_P_THRESHOLDS), "geomean", "timed", "fast_1_compiled", "vs_compiled",
              "fast_1_best", "vs_best"]
    tiers = sorted({case.tier for run in runs for case in run.cases}, key=tier_key)
    rows = []
    for tier in [*tiers, "all"]:
        for track in tracks:
            for run in runs:
                cases = [case for case in (run.cases if tier == "all" else by_tier(run.cases).get(tier, []))
                         if case.track == track]
                if not cases:
                    continue
                scores = score(cases, ks)
                geomean, compiled, best = (f"{value[0]:.2f}x" if value else ABSENT for value in
                                           (scores.geomean, scores.geomean_compiled, scores.geomean_best))
                timed = str(scores.geomean[1]) if scores.geomean else "0"
                rows.append([tier, *([track] if by_track else []), run.label, str(scores.cases),
                             _percent(scores.pass_rate),
                             *(_percent(scores.pass_at[k][0]) if k in scores.pass_at else ABSENT for k in ks),
                             *(_percent(scores.fast[p]) for p in FAST_P_THRESHOLDS), geomean, timed,
                             _percent(scores.fast_compiled), compiled, _percent(scores.fast_best), best])
    return format_table(header, rows)


def optimization_table(runs: Sequence[Run]) -> list[str]:
    """For runs with optimization rounds (``--optimize-rounds``): per tier, the rounds' answers
    and how many were kept, and fast_1, fast_1.5 and the geometric-mean speedup before the
    rounds and after them. Empty when no run has rounds that ran."""
    def optimized(cases: Sequence[StoredCase]) -> list[StoredCase]:
        return [c for c in cases if c.optimization is not None and not c.optimization.skipped]

    if not any(optimized(run.cases) for run in runs):
        return []
    header = ["tier", "run", "optimized", "answers", "kept", "fast_1 before", "after", "fast_1.5 before", "after",
              "geomean before", "after"]
    tiers = sorted({case.tier for run in runs for case in run.cases}, key=tier_key)
    rows = []
    for tier in [*tiers, "all"]:
        for run in runs:
            cases = run.cases if tier == "all" else by_tier(run.cases).get(tier, [])
            ran = optimized(cases)
            if not ran:
                continue
            scores = score(cases)
            rounds = [r for c in ran for r in c.optimization.rounds[1:]]
            means = [f"{m[0]:.2f}x" if m else ABSENT for m in (scores.geomean_before, scores.geomean)]
            rows.append([tier, run.label, str(len(ran)), str(len(rounds)), str(sum(r.verdict == "kept" for r in rounds)),
                         _percent(scores.fast_before[1.0]), _percent(scores.fast[1.0]),
                         _percent(scores.fast_before[1.5]), _percent(scores.fast[1.5]), *means])
    return format_table(header, rows)


def outcome_table(runs: Sequence[Run]) -> list[str]:
    """How many cases of each run ended in each outcome."""
    counts = [Counter(case.outcome.value for case in run.cases) for run in runs]
    outcomes = sorted({outcome for count in counts for outcome in count}, key=lambda o: (o != "ok", o))
    return format_table(["run", *outcomes], [[run.label, *(str(count[o]) for o in outcomes)]
                                             for run, count in zip(runs, counts)])


@dataclass(frozen=True)
class TaskState:
    """How one run did on one task (over all of its samples)."""

    outcomes: tuple[tuple[str, int], ...]
    samples: int
    passed: int
    speedup: float | None

    def __str__(self) -> str:
        if self.samples == 1:
            text = self.outcomes[0][0]
        else:
            text = f"{self.passed}/{self.samples} ok"
            failures = [f"{n} {o}" for o, n in self.outcomes if o != "ok"]
            text += f" ({', '.join(failures)})" if failures else ""
        return text + (f" {self.speedup:.2f}x" if self.speedup is not None else "")


def task_states(run: Run) -> dict[tuple[str, str, str], TaskState]:
    groups: dict[tuple[str, str, str], list[StoredCase]] = {}
    for case in run.cases:
        groups.setdefault((case.tier, case.task, case.track), []).append(case)
    states = {}
    for key, cases in groups.items():
        geomean = geomean_speedup(cases)
        states[key] = TaskState(outcomes=tuple(sorted(Counter(c.outcome.value for c in cases).items())),
                                samples=len(cases), passed=sum(c.ok for c in cases),
                                speedup=geomean[0] if geomean else None)
    return states


def _changed(states: Sequence[TaskState], speedup_change: float) -> bool:
    if len({state.outcomes for state in states}) > 1:
        return True
    speedups = [state.speedup for state in states if state.speedup is not None]
    if len(speedups) != len(states) and speedups:
        return True
    return bool(speedups) and math.log(max(speedups) / min(speedups)) > math.log1p(speedup_change)


def task_changes(runs: Sequence[Run], speedup_change: float = DEFAULT_SPEEDUP_CHANGE) -> list[str]:
    """Of the tasks every run has, those whose outcomes differ between runs or whose speedups
    differ by more than ``speedup_change`` (a fraction), one row each with every run's result;
    then, per run, the tasks it lacks (reported as missing, not compared)."""
    per_run = [task_states(run) for run in runs]
    keys = sorted({key for states in per_run for key in states}, key=lambda k: (tier_key(k[0]), k[1], k[2]))
    tracks = {key[2] for key in keys}

    def name(key: tuple[str, str, str]) -> str:
        return f"{key[0]}/{key[1]}" if len(tracks) == 1 else f"{key[0]}/{key[1]} ({key[2]})"

    common = [key for key in keys if all(key in states for states in per_run)]
    rows = []
    for key in common:
        states = [states[key] for states in per_run]
        if _changed(states, speedup_change):
            rows.append([name(key), *(str(s) for s in states)])
    if rows:
        lines = [f"{len(rows)} of {len(common)} tasks changed (outcome, or speedup by more than {speedup_change:.0%}):",
                 *format_table(["task", *(run.label for run in runs)], rows)]
    else:
        lines = [f"no task changed outcome, or speedup by more than {speedup_change:.0%}"]
    for run, states in zip(runs, per_run):
        missing = [name(key) for key in keys if key not in states]
        if missing:
            lines.append(f"missing from {run.label} ({len(missing)} of {len(keys)} tasks, not compared): "
                         + ", ".join(missing))
    return lines


def compare_lines(runs: Sequence[Run], speedup_change: float = DEFAULT_SPEEDUP_CHANGE) -> list[str]:
    """The whole comparison, as the lines ``kernelgen report compare`` prints."""
    from kernelgen.harness.plugin import summarize

    lines: list[str] = []
    for run in runs:
        lines += [f"== {run.label} ({run.path}, {len(run.cases)} cases)", *summarize(run.cases), ""]
    lines += ["== scores (fast_p: correct and faster than p x PyTorch eager, over all cases)", *score_table(runs), ""]
    optimization = optimization_table(runs)
    if optimization:
        lines += ["== optimization rounds (speedups before the rounds and after them)", *optimization, ""]
    lines += ["== outcomes", *outcome_table(runs)]
    if len(runs) > 1:
        lines += ["", "== per task", *task_changes(runs, speedup_change)]
    return lines
