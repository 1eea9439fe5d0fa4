"""Every golden (or the tasks named) on one kind of CPU-mode draw only, to find false failures a
new draw brings: ``offset`` (kernelgen/task/draws.py offset_draws, the long ones included),
``scaled_down`` (down_draws), ``scaled_up`` (up_draws), ``addend`` (addend_draws) or ``shifted``
(shift_draws), at each seed
given. Run from the repository root:
``python tools/golden_draws.py offset --seeds 0 1 [--tasks row_var layernorm_stats]``."""
import argparse
import time
from concurrent.futures import ProcessPoolExecutor


def one(job: tuple[str, str, list[int]]) -> tuple[str, str, float]:
    from kernelgen.check.checker import check
    from kernelgen.harness.pipeline import verify_cpu
    from kernelgen.task.draws import addend_draws, down_draws, offset_draws, shift_draws, up_draws
    from kernelgen.task.spec import get_task
    from kernelgen.task.variants import verify_call_cpu

    task_id, kind, seeds = job
    task = get_task(task_id)
    start, count = time.time(), 0
    try:
        checked = check(task.golden)
        for call in task.variant_tasks() if task.variants else [task]:
            for seed in seeds:
                drawn = {"offset": lambda: offset_draws(call, checked), "scaled_down": lambda: down_draws(call),
                         "scaled_up": lambda: up_draws(call, seed), "addend": lambda: addend_draws(call, seed),
                         "shifted": lambda: shift_draws(call, seed)}[kind]()
                for draw in drawn:
                    count += 1
                    if task.variants or task.in_place:
                        verify_call_cpu(call, task.golden, draw.sizes, seed, extreme=draw.extreme, order=draw.order,
                                        timeout_s=300)
                    else:
                        verify_cpu(task, checked, draw.sizes, seed, extreme=draw.extreme, order=draw.order,
                                   timeout_s=300)
        return task_id, f"ok ({count} checks)", time.time() - start
    except Exception as error:  # noqa: BLE001 - a golden's failure is what this reports
        return task_id, "FAIL " + str(error)[:500].replace("\n", " | "), time.time() - start


if __name__ == "__main__":
    from kernelgen.task.spec import load_tasks

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("kind", choices=["offset", "scaled_down", "scaled_up", "addend", "shifted"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--tasks", nargs="*")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    ids = args.tasks or [t.id for t in load_tasks() if t.golden is not None]
    with ProcessPoolExecutor(args.workers) as pool:
        for task_id, verdict, seconds in pool.map(one, [(i, args.kind, args.seeds) for i in ids]):
            print(f"{task_id}: {verdict} ({seconds:.1f}s)", flush=True)
