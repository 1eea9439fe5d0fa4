"""The CI gate: did a run fall too far below a baseline run?

``kernelgen report gate BASE NEW --max-pass-drop P --max-speedup-drop S`` compares two results
files over all of their cases and exits 0 (within the limits), 1 (the gate failed) or 2 (bad
usage or input), so that any CI system can stop on a regression without parsing text.

What it compares, each over all cases of a run (the ``all`` row of ``kernelgen report
compare``; the scores are :mod:`kernelgen.task.metrics`'s):

* **pass-rate drop**, in *percentage points* (absolute): ``100 x (base pass rate - new pass
  rate)``. A baseline at 82% and a run at 80% dropped 2 points. Absolute, because a pass rate
  is already a fraction of the cases: 2 points is 2 in 100 cases whatever the baseline was.
* **geometric-mean speedup drop**, in *percent of the baseline's* (relative): ``100 x (1 - new
  geomean / base geomean)``. 1.50x -> 1.35x dropped 10%. Relative, because speedups are
  ratios: losing 0.15x matters more at 1.2x than at 4x. When the baseline timed no case (a
  CPU-mode run) the speedup is not compared; when the baseline did and the new run timed
  none (its GPU vanished, or every kernel failed), the drop counts as 100%.
* **missing tasks**: tasks (track, tier, task) the baseline has and the new run lacks. A lost
  shard or a crashed runner shrinks a run without lowering its pass rate, so by default a
  missing task fails the gate (``--allow-missing`` only reports them).

A negative drop is a gain. A check fails when its drop is *more than* its limit; a metric
given no limit is shown but not gated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from kernelgen.errors import KernelgenError, Outcome
from kernelgen.task.metrics import geomean_speedup, score, tier_key
from kernelgen.report.compare import ABSENT, Run, format_table, score_table
from kernelgen.report.store import StoredCase

# Drops this close to their limit count as equal to it: 100 x (0.82 - 0.80) is not exactly 2.
TOLERANCE = 1e-9


class GateError(KernelgenError):
    """Input the gate cannot judge: an empty run, or no limit to gate on."""

    stage = "report"


@dataclass(frozen=True)
class Check:
    """One compared quantity: both runs' values, the drop between them and its limit."""

    name: str
    base: str
    new: str
    drop: float | None  # None: not comparable (see note)
    unit: str  # of drop and limit: "pp" (percentage points) or "%" (of the baseline)
    limit: float | None  # None: shown, not gated
    note: str = ""

    @property
    def failed(self) -> bool:
        return self.limit is not None and self.drop is not None and self.drop > self.limit + TOLERANCE

    @property
    def verdict(self) -> str:
        if self.limit is None or self.drop is None:
            return "not gated"
        return "FAIL" if self.failed else "ok"


@dataclass(frozen=True)
class GateResult:
    base: Run
    new: Run
    checks: list[Check]
    missing: list[str]  # "track/tier/task" of the baseline's tasks the new run lacks
    added: list[str]  # the new run's tasks the baseline lacks (reported, never a failure)
    allow_missing: bool

    @property
    def passed(self) -> bool:
        return not any(check.failed for check in self.checks) and (self.allow_missing or not self.missing)


def _tasks(cases: Sequence[StoredCase]) -> list[tuple[str, str, str]]:
    keys = {(case.track, case.tier, case.task) for case in cases}
    return sorted(keys, key=lambda k: (k[0], tier_key(k[1]), k[2]))


def _speedup_check(base: Sequence[StoredCase], new: Sequence[StoredCase], limit: float | None) -> Check:
    base_geomean, new_geomean = geomean_speedup(base), geomean_speedup(new)

    def shown(geomean: tuple[float, int] | None) -> str:
        return ABSENT if geomean is None else f"{geomean[0]:.2f}x ({geomean[1]} timed)"

    if base_geomean is None:
        return Check("geomean speedup", shown(base_geomean), shown(new_geomean), None, "%", limit,
                     "the baseline timed no case: speedup not compared")
    if new_geomean is None:
        return Check("geomean speedup", shown(base_geomean), shown(new_geomean), 100.0, "%", limit,
                     "the new run timed no correct case")
    drop = 100.0 * (1.0 - new_geomean[0] / base_geomean[0])
    return Check("geomean speedup", shown(base_geomean), shown(new_geomean), drop, "%", limit)


def gate(base: Run, new: Run, *, max_pass_drop: float | None, max_speedup_drop: float | None,
         allow_missing: bool = False) -> GateResult:
    """Judge ``new`` against ``base``; the limits are in percentage points (pass rate) and in
    percent of the baseline (geometric-mean speedup), as the module's docstring defines."""
    if max_pass_drop is None and max_speedup_drop is None:
        raise GateError("nothing to gate on: give --max-pass-drop, --max-speedup-drop or both", code="no_limit")
    for limit, option in ((max_pass_drop, "--max-pass-drop"), (max_speedup_drop, "--max-speedup-drop")):
        if limit is not None and limit < 0:
            raise GateError(f"{option} {limit:g}: a limit is a drop, 0 or more", code="negative_limit")
    for run in (base, new):
        if not run.cases:
            raise GateError(f"{run.path} holds no cases: a run to gate must have finished at least one case",
                            code="empty_run")
    base_scores, new_scores = score(base.cases), score(new.cases)
    pass_check = Check("pass rate", f"{base_scores.pass_rate:.1%} ({base_scores.passed}/{base_scores.cases})",
                       f"{new_scores.pass_rate:.1%} ({new_scores.passed}/{new_scores.cases})",
                       100.0 * (base_scores.pass_rate - new_scores.pass_rate), "pp", max_pass_drop)
    base_tasks, new_tasks = _tasks(base.cases), _tasks(new.cases)
    base_set, new_set = set(base_tasks), set(new_tasks)
    missing = ["/".join(key) for key in base_tasks if key not in new_set]
    added = ["/".join(key) for key in new_tasks if key not in base_set]
    return GateResult(base, new, [pass_check, _speedup_check(base.cases, new.cases, max_speedup_drop)],
                      missing, added, allow_missing)


def _amount(value: float | None, unit: str) -> str:
    return ABSENT if value is None else f"{value:.2f} {unit}"


def gate_lines(result: GateResult) -> list[str]:
    """What ``kernelgen report gate`` prints: the runs' scores, then what the gate compared and
    its verdict on each, then the tasks that differ, then one verdict line."""
    base, new = result.base, result.new
    lines = ["== scores", *score_table([base, new]), "",
             f"== gate: {new.label} ({new.path}, {len(new.cases)} cases) against the baseline "
             f"{base.label} ({base.path}, {len(base.cases)} cases)",
             "drop: pass rate in percentage points (base - new); geomean speedup in percent of the "
             "baseline's (1 - new/base); negative = better"]
    rows = [[check.name, check.base, check.new, _amount(check.drop, check.unit), _amount(check.limit, check.unit),
             check.verdict] for check in result.checks]
    rows.append(["missing tasks", str(len(_tasks(base.cases))), str(len(_tasks(new.cases))), str(len(result.missing)),
                 "any" if result.allow_missing else "0",
                 "FAIL" if result.missing and not result.allow_missing else "ok"])
    lines += format_table(["check", "base", "new", "drop", "limit", "verdict"], rows)
    lines += [f"note: {check.name}: {check.note}" for check in result.checks if check.note]
    for run in (base, new):
        unjudged = sum(case.outcome == Outcome.NOT_JUDGED for case in run.cases)
        if unjudged:
            lines.append(f"note: {run.label}: {unjudged} cases not judged on the CPU (the interpreter's budget "
                         "ran out), counted as not passed")
    if result.missing:
        lines += ["", f"tasks of the baseline missing from {new.label} ({len(result.missing)}):",
                  *(f"  {task}" for task in result.missing)]
    if result.added:
        lines += ["", f"tasks of {new.label} not in the baseline ({len(result.added)}, not gated):",
                  *(f"  {task}" for task in result.added)]
    failures = [check.name for check in result.checks if check.failed]
    if result.missing and not result.allow_missing:
        failures.append("missing tasks")
    lines += ["", "gate passed" if result.passed else f"gate FAILED: {', '.join(failures)}"]
    return lines
