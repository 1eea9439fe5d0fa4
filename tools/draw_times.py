"""The CPU-mode cost of each draw a task's golden is verified on (issue 31: the interpreter's
time per tier), one line per draw with its kind, sizes and verdict, a total per task, per kind of draw
(why it is drawn: hypothesis, past the extent, a range's maximum, sorted, ...) and in all.
Times are the process's CPU time (a loaded machine stretches wall time several-fold, not this);
run single-threaded (``OMP_NUM_THREADS=1``) to compare commits.

    python tools/draw_times.py expert/layernorm_backward_full med/softmax_dtype
    python tools/draw_times.py --tier expert

Tasks with calls (dtype variants, optional tensors) are verified per call by the pipeline and
are left out here."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from kernelgen.check.checker import check
from kernelgen.errors import KernelgenError
from kernelgen.harness.pipeline import verify_cpu
from kernelgen.task import draws
from kernelgen.task.case import Settings
from kernelgen.task.spec import load_task_file

BENCH = Path(__file__).resolve().parent.parent / "bench"


def time_task(path: Path, settings: Settings, kinds: dict[str, float]) -> float | None:
    """The task's draws' CPU time in all, each draw's added to ``kinds`` by its kind."""
    task = load_task_file(path)
    if task.variants or task.in_place:
        print(f"{task.tier}/{task.id}: a task with calls, left out")
        return None
    checked = check(task.golden)
    total = 0.0
    for draw in draws.case_draws(task, checked, settings.shapes, settings.seed, settings.gpu):
        start, sampled = time.process_time(), []
        try:
            verify_cpu(task, checked, draw.sizes, settings.seed, draw.extreme, settings.timeout_s, draw.num_sms,
                       draw.order, sampled)
            verdict = "ok, on a sample of programs" if sampled else "ok"
        except KernelgenError as error:
            verdict = f"{type(error).__name__}: {str(error)[:100]}"
        spent = time.process_time() - start
        total += spent
        kinds[draw.kind] = kinds.get(draw.kind, 0.0) + spent
        print(f"  {spent:6.2f} CPU-s  {draw.kind:11s} {draw.sizes} extreme={draw.extreme} num_sms={draw.num_sms} "
              f"order={draw.order}: {verdict}")
    print(f"{task.tier}/{task.id}: {total:.1f} CPU-s")
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", help="TIER/NAME of bench/TIER/NAME.yaml")
    parser.add_argument("--tier", help="every task of this tier")
    args = parser.parse_args()
    paths = [BENCH / f"{name}.yaml" for name in args.tasks]
    if args.tier:
        paths += sorted((BENCH / args.tier).glob("*.yaml"))
    if not paths:
        parser.error("name tasks (TIER/NAME) or a --tier")
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        parser.error(f"no such task file: {', '.join(missing)}")
    kinds: dict[str, float] = {}
    times = [t for t in (time_task(p, Settings(), kinds) for p in paths) if t is not None]
    for kind, spent in sorted(kinds.items(), key=lambda item: -item[1]):
        print(f"{kind}: {spent:.1f} CPU-s")
    print(f"total: {sum(times):.1f} CPU-s over {len(times)} tasks")


if __name__ == "__main__":
    main()
