"""Each golden's global loads and stores as compiled for its bench sizes (the variant the timing
launches: its params that are nonzero multiples of 16 specialized), by vector width, from the PTX.

No GPU needed (Triton compiles for sm_90 here). It finds the goldens whose accesses a lowering
change vectorizes or de-vectorizes: run it before and after, and compare the two files, e.g.::

    python tools/vector_accesses.py --out /tmp/after.json
    PYTHONPATH=/tmp/kg_head python tools/vector_accesses.py --out /tmp/before.json   # an earlier checkout
    python tools/vector_accesses.py --compare /tmp/before.json /tmp/after.json

``--tier med`` (repeatable) or task ids limit it; ``--workers`` compiles in parallel (default 2).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any


def accesses(task_id: str) -> tuple[str, dict[str, Any]]:
    """The task's golden's loads and stores (per launch for a program), or its error."""
    from kernelgen.task.case import Settings
    from kernelgen.lang.parse import kernel_to_json
    from kernelgen.model.optimize import answer_facts
    from kernelgen.task.spec import get_task

    task = get_task(task_id)
    try:
        facts = answer_facts(task, kernel_to_json(task.golden), Settings(target="sm_90"))
    except Exception as error:  # noqa: BLE001 - a golden that cannot compile is what this reports
        return task_id, {"error": f"{type(error).__name__}: {error}"[:300]}
    kernels = getattr(facts, "launches", None) or [facts]
    return task_id, {"kernels": [{"name": k.name, "loads": dataclasses.asdict(k.loads),
                                  "stores": dataclasses.asdict(k.stores)} for k in kernels]}


def compare(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """A line per task whose accesses differ between two outputs of this tool."""
    lines = []
    for task_id in sorted(set(before) | set(after)):
        old, new = before.get(task_id), after.get(task_id)
        if old != new:
            lines.append(f"{task_id}: {_summary(old)} -> {_summary(new)}")
    return lines


def _summary(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "absent"
    if "error" in entry:
        return entry["error"]
    return "; ".join(f"{k['name']}: loads {k['loads']['vectorized']}/{k['loads']['count']} vectorized, "
                     f"stores {k['stores']['vectorized']}/{k['stores']['count']}" for k in entry["kernels"])


def main() -> None:
    from kernelgen.task.spec import load_tasks

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tasks", nargs="*", help="task ids (default: every golden)")
    parser.add_argument("--tier", action="append", default=[])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(p.read_text()) for p in args.compare)
        print("\n".join(compare(before, after)) or "no golden's accesses differ")
        return
    ids = args.tasks or [t.id for tier in (args.tier or [None]) for t in load_tasks(tier) if t.golden is not None]
    found = {}
    with ProcessPoolExecutor(args.workers) as pool:
        for task_id, entry in pool.map(accesses, ids):
            found[task_id] = entry
            print(f"{task_id}: {_summary(entry)}", flush=True)
    if args.out:
        args.out.write_text(json.dumps(found, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
