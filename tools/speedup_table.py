"""The per-task speed table of issue 33 from results files (``--kg-results``): each timed case's
kernel as written and tuned, against PyTorch eager and against torch.compile, its roofline
fraction, and the geometric means per tier; the slowest against torch.compile first.

Run from the repository root on any machine, over the results of a GPU run
(``tools/gpu_verdicts.sh`` writes ``$OUT/bench.jsonl``)::

    python tools/speedup_table.py bench.jsonl [more.jsonl ...] [--tier med] [--track baseline]

One track at a time (default: the pipeline's goldens; ``pytest bench`` whole also runs the
baseline, the goldens emitted as Triton Python, on the same tasks).

As written is the golden's own configuration (``tuning.as_written_ms``, or the timed kernel when
the run did not tune); tuned is the configuration ``--kg-tune`` kept. Where the tuner searched in
this run (no cached choice) and kept the configuration as written, the run timed one kernel twice:
the 90th percentile of those pairs' ratio is the run's repeat spread (the kernel's repeatability,
not torch.compile's), and a golden below torch.compile by no more than it is counted apart. Cases that were not
timed (a wrong result, a harness error) are listed under the table with their outcome.

``--fixed-us C`` (the timer's fixed cost, from ``tools/timer_floor.py``) adds each task's attainable
floor, an estimate: its roofline time (its bytes at the measured copy bandwidth, or its FLOPs at
peak) plus C, which every time under this timer carries (none where the roofline fraction is above
1: the task's byte count overstates what it moves). It is not a strict bound: a kernel that only
reads writes nothing back while the flush's dirty lines drain, so it can come in a few percent
under its floor (a fraction above 1). The columns give the tuned golden's and torch.compile's
fraction of it; each tier's lines, the ceiling (the geometric mean against torch.compile that
goldens at their floors would show) and which goldens below torch.compile past the spread have
both at 90% of the floor or more.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any


def rows_of(paths: list[Path], track: str = "pipeline") -> list[dict[str, Any]]:
    """The cases of one track in the results files, the last of a task's repeated cases kept."""
    cases: dict[tuple[str, str], dict[str, Any]] = {}
    for path in paths:
        for line in path.read_text().splitlines():
            if line.strip():
                case = json.loads(line)
                if case.get("track", "pipeline") == track:
                    cases[(case["tier"], case["task"])] = case
    return list(cases.values())


def speeds(case: dict[str, Any], fixed_ms: float = 0.0) -> dict[str, float] | None:
    """The case's times (ms) and ratios, or None where it was not timed; with ``fixed_ms``, its
    attainable floor (ms) too."""
    timing = case.get("timing")
    if not timing or not timing.get("kernel_ms"):
        return None
    tuned = timing["kernel_ms"]
    written = (case.get("tuning") or {}).get("as_written_ms") or tuned
    eager, compiled = timing.get("eager_ms"), timing.get("compiled_ms")
    return {
        "written_ms": written, "tuned_ms": tuned, "eager_ms": eager or math.nan, "compiled_ms": compiled or math.nan,
        "eager_written": eager / written if eager else math.nan, "eager_tuned": eager / tuned if eager else math.nan,
        "compiled_written": compiled / written if compiled else math.nan,
        "compiled_tuned": compiled / tuned if compiled else math.nan,
        "roofline": timing.get("roofline_fraction") or math.nan,
        # The roofline fraction is the roofline time over the kernel's: its time, back. Above 1 the
        # task's byte count overstates what it moves (a scatter into part of a tensor): no floor.
        "floor_ms": (timing["roofline_fraction"] * tuned + fixed_ms)
        if timing.get("roofline_fraction") and timing["roofline_fraction"] <= 1.0 else math.nan,
    }


def geomean(values: list[float]) -> float:
    values = [v for v in values if v > 0 and not math.isnan(v)]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else math.nan


# A golden below torch.compile is at parity in the floor's sense where both are at least this share of
# their attainable floor: neither can gain more than the rest on it.
AT_FLOOR = 0.9
# Fewer same-configuration pairs than this and the 90th percentile is only the largest pair: no spread.
MIN_PAIRS = 10


def repeat_spread(cases: list[dict[str, Any]]) -> tuple[float, int] | None:
    """How far apart one run times the same kernel: over the cases whose tuner searched in this
    run (not a cached choice, whose search time is another run's) and kept the configuration as
    written, timed once in the search (fewer repetitions, other workers compiling) and once at the
    end, the 90th percentile of the larger of the two times over the smaller, and how many such
    cases; None with fewer than :data:`MIN_PAIRS`. It is the kernel's repeatability, not
    torch.compile's: a golden that far or less below torch.compile cannot be told from parity by
    this run's kernel timings."""
    ratios = sorted(max(r, 1 / r) for case in cases
                    if (tuning := case.get("tuning") or {}).get("config") == tuning.get("as_written")
                    and not tuning.get("cached")
                    and tuning.get("as_written_ms") and (case.get("timing") or {}).get("kernel_ms")
                    for r in [case["timing"]["kernel_ms"] / tuning["as_written_ms"]])
    if len(ratios) < MIN_PAIRS:
        return None
    return ratios[math.ceil(0.9 * len(ratios)) - 1], len(ratios)


def _below_line(tier: str, timed: list[tuple[dict[str, Any], dict[str, float]]],
                spread: tuple[float, int] | None) -> str:
    """The tier's goldens below torch.compile past the repeat spread (tuned), split into those at
    parity in the floor's sense (both at :data:`AT_FLOOR` of the attainable floor or more) and the rest."""
    bar = 1 / spread[0] if spread else 1.0
    below = [(case["task"], s) for case, s in timed if s["compiled_tuned"] < bar]
    at_floor = [name for name, s in below
                if s["floor_ms"] / s["tuned_ms"] >= AT_FLOOR and s["floor_ms"] / s["compiled_ms"] >= AT_FLOOR]
    rest = [name for name, _ in below if name not in at_floor]
    return (f"{tier}: {len(below)} below torch.compile past the spread; {len(at_floor)} of them with both at "
            f"{AT_FLOOR:.0%} of the attainable floor or more ({', '.join(at_floor) or 'none'}); the rest: "
            f"{', '.join(rest) or 'none'}")


def table(cases: list[dict[str, Any]], fixed_us: float | None = None) -> str:
    """The markdown table and the per-tier summary lines (with ``fixed_us``, the attainable floor's
    columns and ceilings)."""
    floor = fixed_us is not None
    timed = [(case, s) for case in cases if (s := speeds(case, (fixed_us or 0.0) / 1e3)) is not None]
    spread = repeat_spread(cases)
    timed.sort(key=lambda item: (item[1]["compiled_tuned"] if not math.isnan(item[1]["compiled_tuned"]) else math.inf))
    lines = ["| task | tier | as written ms | tuned ms | eager ms | compile ms | vs eager (written / tuned) "
             "| vs compile (written / tuned) | roofline |" + (" floor ms | of floor (tuned / compile) |" if floor else ""),
             "|---|---|---|---|---|---|---|---|---|" + ("---|---|" if floor else "")]
    for case, s in timed:
        lines.append(f"| {case['task']} | {case['tier']} | {s['written_ms']:.4f} | {s['tuned_ms']:.4f} | "
                     f"{s['eager_ms']:.4f} | {s['compiled_ms']:.4f} | {s['eager_written']:.2f}x / {s['eager_tuned']:.2f}x | "
                     f"{s['compiled_written']:.2f}x / {s['compiled_tuned']:.2f}x | {s['roofline']:.2f} |"
                     + (f" {s['floor_ms']:.4f} | {s['floor_ms'] / s['tuned_ms']:.2f} / {s['floor_ms'] / s['compiled_ms']:.2f} |"
                        if floor else ""))
    lines.append("")
    for tier in sorted({case["tier"] for case, _ in timed}):
        mine = [s for case, s in timed if case["tier"] == tier]
        at_least = sum(s["compiled_tuned"] >= 1.0 for s in mine)
        lines.append(f"{tier}: {len(mine)} timed; geomean vs eager {geomean([s['eager_written'] for s in mine]):.2f}x "
                     f"as written, {geomean([s['eager_tuned'] for s in mine]):.2f}x tuned; vs torch.compile "
                     f"{geomean([s['compiled_written'] for s in mine]):.2f}x as written, "
                     f"{geomean([s['compiled_tuned'] for s in mine]):.2f}x tuned; {at_least} at or above 1.0x tuned"
                     + (f", {sum(1 / spread[0] <= s['compiled_tuned'] < 1.0 for s in mine)} more within the repeat spread"
                        if spread else "")
                     + (f"; goldens at their attainable floors would be {geomean([s['compiled_ms'] / s['floor_ms'] for s in mine]):.2f}x"
                        " torch.compile" if floor else ""))
        if floor:
            lines.append(_below_line(tier, [(case, s) for case, s in timed if case["tier"] == tier], spread))
    if spread:
        lines.append(f"repeat spread: the same configuration timed twice in this run (the tuner's search, then the "
                     f"final timing) differs by up to {spread[0] - 1:.1%} in 9 of 10 of the {spread[1]} cases that "
                     f"searched and kept theirs (the kernel's repeatability, not torch.compile's)")
    untimed = [case for case in cases if speeds(case) is None]
    for case in untimed:
        first = (case.get("diagnostics") or [{}])[0]
        lines.append(f"not timed: {case['task']} ({case['tier']}): {case['outcome']} {first.get('code', '')}".rstrip())
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="results files (.jsonl)")
    parser.add_argument("--tier", action="append", help="only these tiers (repeat)")
    parser.add_argument("--track", default="pipeline", help="pipeline (default), baseline or tritonbench")
    parser.add_argument("--fixed-us", type=float, help="the timer's fixed cost in microseconds (tools/timer_floor.py): "
                                                       "adds each task's attainable floor and each tier's ceiling")
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.results if not p.is_file()]
    if missing:
        parser.error(f"no such results file: {', '.join(missing)}")
    cases = [c for c in rows_of(args.results, args.track) if not args.tier or c["tier"] in args.tier]
    if not cases:
        parser.error(f"no {args.track} cases in the results files" + (f" of tiers {args.tier}" if args.tier else ""))
    print(table(cases, args.fixed_us))
    return 0


if __name__ == "__main__":
    sys.exit(main())
