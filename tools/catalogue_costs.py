"""The heavy cases of a suite's CPU mode: those whose case took more than ``--over`` seconds in
the JUnit files given (the most any file measured), written as the suite's ``heavy.txt`` reads
them. Heavy cases run when a ``-m`` expression names ``heavy`` (README: The tests), so that the
README's test command keeps within CI's 25 minutes on 2 cores. Two suites have them: the red-team
catalogue (``tests/redteam/heavy.txt``) and the baseline's reference answers in CPU mode
(``bench/ablation/heavy.txt``), each listed by its case's id.

    pytest -n 2 tests/test_redteam.py -m "heavy or not heavy" --junitxml=/tmp/catalogue.xml
    python tools/catalogue_costs.py /tmp/catalogue.xml --over 4 > tests/redteam/heavy.txt
    pytest -n 2 bench/ablation --kg-mode cpu -m "heavy or not heavy" --junitxml=/tmp/ablation.xml
    python tools/catalogue_costs.py --suite ablation /tmp/ablation.xml --over 3.5 > bench/ablation/heavy.txt

A whole run's JUnit file (CI's ``pytest -n 2 --junitxml``) serves for both, for the cases it ran.
Without ``--over`` it prints every case's seconds, costliest first, and the share of the whole."""

from __future__ import annotations

import argparse
import re
import xml.etree.ElementTree as ET
from pathlib import Path

SUITES = {
    "redteam": (re.compile(r"^test_a_wrong_kernel_gets_its_outcome\[(?P<stem>.+)\]$"), "tests.test_redteam",
                "The red-team catalogue's CPU-mode cases"),
    "ablation": (re.compile(r"^test_baseline\[(?P<stem>.+)\]$"), "bench.ablation",
                 "The baseline's reference answers (CPU mode)"),
}


def case_seconds(junit: list[Path], suite: str = "redteam") -> dict[str, float]:
    """Each of a suite's CPU-mode cases' time, the most over the given JUnit files; cases that
    did not run (skipped) are left out."""
    pattern, module, _ = SUITES[suite]
    seconds: dict[str, float] = {}
    for path in junit:
        for case in ET.parse(path).getroot().iter("testcase"):
            found = pattern.match(case.get("name", ""))
            if found is None or case.find("skipped") is not None or not case.get("classname", "").startswith(module):
                continue
            stem = found["stem"]
            seconds[stem] = max(seconds.get(stem, 0.0), float(case.get("time", 0.0)))
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("junit", type=Path, nargs="+", help="JUnit XML of a run of the suite")
    parser.add_argument("--suite", choices=sorted(SUITES), default="redteam", help="whose cases (default: redteam)")
    parser.add_argument("--over", type=float, help="print heavy.txt: the cases past this many seconds")
    args = parser.parse_args()
    seconds = case_seconds(args.junit, args.suite)
    if not seconds:
        parser.error(f"no CPU-mode case of the {args.suite} suite ran in {', '.join(map(str, args.junit))}")
    ranked = sorted(seconds.items(), key=lambda item: -item[1])
    total = sum(seconds.values())
    if args.over is None:
        for stem, s in ranked:
            print(f"{s:8.1f} s  {stem}")
        print(f"{total:8.1f} s  in all ({len(seconds)} cases)")
        return
    heavy = [(stem, s) for stem, s in ranked if s > args.over]
    print(f"# {SUITES[args.suite][2]} past {args.over:g} s each on a 2-core machine under `pytest -n 2`")
    print(f"# ({sum(s for _, s in heavy):.0f} of the {total:.0f} s they took): they run when -m names heavy.")
    print("# Regenerate: tools/catalogue_costs.py (its docstring).")
    for stem, s in heavy:
        print(f"{stem}  # {s:.0f} s")


if __name__ == "__main__":
    main()
