"""What torch.compile (Inductor) generates for a task's eager code at its bench sizes, and how fast.

For each task: the Triton kernels Inductor writes for the task's ``eager`` code, the
configuration its autotuner picked for each one (block sizes, ``num_warps``, ``num_stages``), and
the times of eager, torch.compile and the task's golden AST (as written), all with the harness's
timer. It is how a golden is compared with what Inductor does on the same task (issue 33: rows
per program, persistent reductions, block shapes, warps, eviction hints, split reductions).

Run on a GPU machine, from the repository root::

    python tools/inductor_kernels.py row_var row_max ... --out inductor.json
    python tools/inductor_kernels.py --tier med --out inductor-med.json

The output is one JSON object per task: ``eager_ms``, ``compiled_ms``, ``golden_ms`` (medians),
``code`` (the output modules Inductor wrote, its Triton kernels in them), ``configs`` (the
configuration its autotuner kept, per kernel), ``autotune`` (its autotuning log:
:mod:`kernelgen.gpu.autotune_log`) and ``error`` where something failed. A task with
calls is measured on its first (the golden is then not timed: its variants need the harness).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

MODE = "max-autotune-no-cudagraphs"  # the harness's torch.compile mode (kernelgen.gpu.case.COMPILE_MODES)


def chosen_configs(before: set[str]) -> dict[str, list[str]]:
    """The configuration Inductor's autotuner kept for each Triton kernel of the modules it
    loaded since ``before`` (module keys), by kernel name."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    found = {}
    for key, module in loaded_modules().items():
        if key in before:
            continue
        for name, value in vars(module).items():
            if isinstance(value, CachingAutotuner):
                # Launchers are emptied when a module is pickled for the cache; its compile
                # results (the kept one, after autotuning) then still say it.
                kept = value.launchers or getattr(value, "compile_results", None) or []
                found[name] = [str(getattr(each, "config", each)) for each in kept]
    return found


def loaded_modules() -> dict[str, Any]:
    """Inductor's loaded output modules, by their cache key."""
    from torch._inductor.codecache import PyCodeCache

    return {getattr(module, "key", str(id(module))): module for module in PyCodeCache.modules}


def measure(task_id: str, repetitions: int) -> dict[str, Any]:
    import torch

    from kernelgen.check.checker import check
    from kernelgen.gpu.autotune_log import autotune_lines
    from kernelgen.gpu.case import _kernel_times, _to_device
    from kernelgen.gpu.compile import compile_document
    from kernelgen.gpu.timing import event_times, flush_buffer, inductor_timed_by_harness
    from kernelgen.host.plan import sequence_for_sizes
    from kernelgen.task.spec import get_task
    from kernelgen.task.verify import make_inputs

    from torch._inductor.utils import run_and_get_code

    task = get_task(task_id)
    concrete = task.variant_tasks()[0]  # a task with calls: its first (timed as the harness times it)
    found: dict[str, Any] = {"task": task_id, "sizes": task.bench_sizes,
                             "variant": concrete.variant.name if concrete.variant is not None else None}
    device = torch.device("cuda", torch.cuda.current_device())
    inputs = _to_device(make_inputs(concrete, task.bench_sizes, 0, bench=True), device)
    values = list(inputs.values())
    flush = flush_buffer()
    eager = concrete.eager_function()
    inductor_timed_by_harness()  # its autotuner times candidates as in a bench run
    with torch.no_grad():
        found["eager_ms"] = statistics.median(event_times(lambda: eager(*values), flush, repetitions, 5))
        torch._dynamo.reset()
        before = set(loaded_modules())
        compiled = torch.compile(eager, mode=MODE)
        start = time.perf_counter()
        with autotune_lines() as found["autotune"]:
            _, found["code"] = run_and_get_code(compiled, *values)
            torch.cuda.synchronize()
        found["compile_s"] = round(time.perf_counter() - start, 1)
        found["compiled_ms"] = statistics.median(event_times(lambda: compiled(*values), flush, repetitions, 5))
        try:
            found["configs"] = chosen_configs(before)
        except Exception as exc:  # noqa: BLE001 - Inductor's internals move between versions
            found["configs"] = f"not found: {type(exc).__name__}: {exc}"
    if task.golden is not None and concrete is task:
        checked = check(task.golden)
        compiled = compile_document(checked, plans=sequence_for_sizes(checked, task.bench_sizes, task.scalars))
        times = _kernel_times(checked, compiled, inputs, flush, repetitions, 5)
        found["golden_ms"] = statistics.median(times)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", help="task ids")
    parser.add_argument("--tier", action="append", default=[], help="every task of this tier (repeatable)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repetitions", type=int, default=50)
    args = parser.parse_args(argv)
    from kernelgen.task.spec import load_tasks

    ids = list(args.tasks) + [t.id for tier in args.tier for t in load_tasks(tier)]
    results = []
    for task_id in ids:
        try:
            results.append(measure(task_id, args.repetitions))
        except Exception:  # noqa: BLE001 - one task's failure is recorded, the others go on
            import traceback

            results.append({"task": task_id, "error": traceback.format_exc()[-3000:]})
        row = results[-1]
        print(f"{task_id:32s} eager {row.get('eager_ms', 0):.4f} compiled {row.get('compiled_ms', 0):.4f} "
              f"golden {row.get('golden_ms', 0):.4f} {row.get('error', '')[-300:]}", flush=True)
        args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
