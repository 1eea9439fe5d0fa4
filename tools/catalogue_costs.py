"""The red-team catalogue's heavy cases: those whose CPU-mode case took more than ``--over``
seconds in a JUnit file of ``pytest tests/test_redteam.py`` (the most any given file measured),
written as ``tests/redteam/heavy.txt`` reads them. Heavy cases run when a ``-m`` expression names
``heavy`` (README: The tests), so that the README's test command keeps within CI's 25 minutes on 2 cores.

    pytest -n 2 tests/test_redteam.py -m "heavy or not heavy" --junitxml=/tmp/catalogue.xml
    python tools/catalogue_costs.py /tmp/catalogue.xml --over 4 > tests/redteam/heavy.txt

Without ``--over`` it prints every case's seconds, costliest first, and the share of the whole."""

from __future__ import annotations

import argparse
import re
import xml.etree.ElementTree as ET
from pathlib import Path

CASE = re.compile(r"^test_a_wrong_kernel_gets_its_outcome\[(?P<stem>.+)\]$")


def case_seconds(junit: list[Path]) -> dict[str, float]:
    """Each catalogue file's CPU-mode case time, the most over the given JUnit files; cases that
    did not run (skipped) are left out."""
    seconds: dict[str, float] = {}
    for path in junit:
        for case in ET.parse(path).getroot().iter("testcase"):
            found = CASE.match(case.get("name", ""))
            if found is None or case.find("skipped") is not None:
                continue
            stem = found["stem"]
            seconds[stem] = max(seconds.get(stem, 0.0), float(case.get("time", 0.0)))
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("junit", type=Path, nargs="+", help="JUnit XML of a run of tests/test_redteam.py")
    parser.add_argument("--over", type=float, help="print heavy.txt: the cases past this many seconds")
    args = parser.parse_args()
    seconds = case_seconds(args.junit)
    if not seconds:
        parser.error(f"no CPU-mode case of tests/test_redteam.py ran in {', '.join(map(str, args.junit))}")
    ranked = sorted(seconds.items(), key=lambda item: -item[1])
    total = sum(seconds.values())
    if args.over is None:
        for stem, s in ranked:
            print(f"{s:8.1f} s  {stem}")
        print(f"{total:8.1f} s  in all ({len(seconds)} cases)")
        return
    heavy = [(stem, s) for stem, s in ranked if s > args.over]
    print(f"# The red-team catalogue's CPU-mode cases past {args.over:g} s each on a 2-core machine "
          "under `pytest -n 2`")
    print(f"# ({sum(s for _, s in heavy):.0f} of the catalogue's {total:.0f} s): they run when -m names heavy.")
    print("# Regenerate: tools/catalogue_costs.py (its docstring).")
    for stem, s in heavy:
        print(f"{stem}  # {s:.0f} s")


if __name__ == "__main__":
    main()
