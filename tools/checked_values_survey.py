"""Whether the raw-Triton baseline's checked repetitions can find a result kept from another
call, task by task: on the CPU, at the task's bench sizes, as the timed calls make their values
(:mod:`kernelgen.baseline.timed`).

For each task's first call, the parent's checked values are made twice from the bench draw and
another draw (:func:`~kernelgen.baseline.timed.checked_values`, the inputs the baseline mixes
named by :func:`~kernelgen.baseline.ablation._mixed`), the reference is run on both, and the
harness's own comparison (:func:`~kernelgen.task.verify.compare_outputs`) judges the first
call's outputs as if an answer had returned them for the second: ``found`` says the kept
result fails there, as it must for a timing cheat to be caught; ``kept passes`` marks a task
whose outputs the variation does not move (its checks cannot tell a kept result from a fresh
one). ``informative`` is the share of float output elements finite and non-zero, on the bench
draw and on the checked values (a variation that drove a product to zero would make its checks
vacuous there).

    python tools/checked_values_survey.py --tier med
    python tools/checked_values_survey.py row_any_above remainder_int --limit 120

Each task is given ``--limit`` seconds (default 60) on the CPU; a slower one is reported as such.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _tools(seed: int) -> Any:
    import torch

    from kernelgen.baseline.timed import Tools

    return Tools.taken(torch.Generator().manual_seed(seed), random.Random(seed))


def _informative(outputs: dict[str, Any]) -> float:
    """The share of float output elements that are finite and non-zero (1.0 without floats)."""
    import torch

    floats = [t.float() for t in outputs.values() if t.is_floating_point() and t.numel()]
    if not floats:
        return 1.0
    good = sum(int((torch.isfinite(t) & (t != 0)).sum()) for t in floats)
    return good / sum(t.numel() for t in floats)


def survey(task: Any) -> str:
    import torch

    from kernelgen.baseline.ablation import _mixed
    from kernelgen.baseline.timed import checked_values
    from kernelgen.task.verify import compare_outputs, make_inputs, reference_call

    call = task.variant_tasks()[0]
    sizes = dict(task.bench_sizes)
    drawn = make_inputs(call, sizes, 0, bench=True)
    other = make_inputs(call, sizes, 1, bench=True)
    names = list(drawn)
    refill = [other[n] if isinstance(drawn[n], torch.Tensor) else drawn[n] for n in names]
    mixed = _mixed(call, drawn)
    first, second = (dict(zip(names, checked_values(list(drawn.values()), refill, _tools(seed), mixed)))
                     for seed in (1, 2))
    fresh, _ = reference_call(call, drawn)
    kept, _ = reference_call(call, first)
    wanted, _ = reference_call(call, second)
    problems = compare_outputs(call, kept, wanted, second, sizes)
    verdict = "found" if problems else "KEPT PASSES"
    return (f"{task.id}: {verdict}; informative {_informative(fresh):.3f} drawn, {_informative(wanted):.3f} checked"
            + (f"; mixed {[n for n, m in zip(names, mixed) if m and not drawn[n].is_floating_point()]}"
               if any(m and not drawn[n].is_floating_point() for n, m in zip(names, mixed)) else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", help="task ids (default: every task of --tier, or all)")
    parser.add_argument("--tier", help="easy, med, hard or expert")
    parser.add_argument("--limit", type=int, default=60, help="seconds per task (default 60)")
    args = parser.parse_args(argv)
    import torch

    from kernelgen.task.spec import load_tasks

    torch.set_num_threads(max(1, (os.cpu_count() or 1)))
    tasks = [t for t in load_tasks(args.tier) if not args.tasks or t.id in args.tasks]
    unknown = set(args.tasks) - {t.id for t in tasks}
    if unknown:
        parser.error(f"no such task: {', '.join(sorted(unknown))}")

    def out_of_time(*_: Any) -> None:
        raise TimeoutError

    signal.signal(signal.SIGALRM, out_of_time)
    for task in tasks:
        start = time.perf_counter()
        signal.alarm(args.limit)
        try:
            line = survey(task)
        except TimeoutError:
            line = f"{task.id}: not surveyed, over {args.limit} s on the CPU"
        except Exception as exc:  # one task's failure is reported, the others go on
            line = f"{task.id}: error {type(exc).__name__}: {str(exc)[:200]}"
        finally:
            signal.alarm(0)
        print(f"{line} ({time.perf_counter() - start:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
