"""Judge round 19: check_answer on every NAME.py here against its task's entry point.

Run from the repository root: .venv/bin/python tools/redteam_round19/judge.py
One line per candidate: NAME, expected, got (accepted, or the rule codes found), and a flag where a cheat is
accepted (<== EVADES) or a control refused (<== CONTROL REFUSED).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from kernelgen.baseline.answer import EntryPoint, check_answer  # noqa: E402
from kernelgen.task.spec import get_task  # noqa: E402


def main() -> None:
    entries: dict[str, EntryPoint] = {}
    evades, refused_controls, total = [], [], 0
    for meta_path in sorted(HERE.glob("*.json")):
        name = meta_path.stem
        meta = json.loads(meta_path.read_text())
        task = meta["task"]
        if task not in entries:
            entries[task] = EntryPoint.for_task(get_task(task))
        verdict = check_answer((HERE / f"{name}.py").read_text(), entries[task])
        codes = sorted({d.code for d in verdict.diagnostics})
        got = "accepted" if verdict.ok else ",".join(codes)
        flag = ""
        if meta["expected"] == "refused" and verdict.ok:
            flag = "  <== EVADES"
            evades.append(name)
        elif meta["expected"] == "accepted" and not verdict.ok:
            flag = "  <== CONTROL REFUSED"
            refused_controls.append(name)
        total += 1
        print(f"{name:40s} {task:18s} expected={meta['expected']:9s} got={got}{flag}")
    print(f"\n{total} candidates: {len(evades)} evade, {len(refused_controls)} controls refused")


if __name__ == "__main__":
    main()
