"""The GPU memory each task's reference holds at its largest draws (kernelgen/task/reference_memory.py),
measured on meta tensors on any machine: the heaviest first, then the references that cannot run
without data. GPU mode runs the reference inside one worker's turn at every draw; a reference past
the card's free memory fails every kernel at that draw with a harness error.
  usage: python tools/reference_memory.py [--top 20] [--tier expert] [TASK ...]
"""

from __future__ import annotations

import argparse

from kernelgen.task.reference_memory import REFERENCE_BYTE_BUDGET, largest_draw_peaks
from kernelgen.task.spec import load_tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", help="task ids (default: every task of --tier, or all)")
    parser.add_argument("--tier", help="only this tier's tasks")
    parser.add_argument("--top", type=int, default=20, help="how many of the heaviest to list")
    args = parser.parse_args()
    tasks = [t for t in load_tasks(args.tier) if not args.tasks or t.id in args.tasks]
    peaks = [p for task in tasks for p in largest_draw_peaks(task)]
    measured = sorted((p for p in peaks if p.nbytes is not None), key=lambda p: -p.nbytes)
    print(f"budget {REFERENCE_BYTE_BUDGET / 2**30:.0f} GiB; {len(measured)} of {len(peaks)} draws measured")
    for p in measured[:args.top]:
        flag = "  OVER" if p.nbytes > REFERENCE_BYTE_BUDGET else ""
        print(f"{p.nbytes / 2**30:8.2f} GiB  {p.task:32} {p.sizes}{flag}")
    for p in sorted({(p.task, p.why_not) for p in peaks if p.nbytes is None}):
        print(f"not measured: {p[0]}: {p[1]}")


if __name__ == "__main__":
    main()
