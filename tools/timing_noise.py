"""How much a task's times move, and why: eager, torch.compile and the golden (as written), each
timed with the harness's timer several times, on an idle host and with busy processes on every
core, and torch.compile compiled afresh each round (its autotuner may keep another configuration).

Issue 33 compares goldens with torch.compile, whose time for one task moved up to 3x between
bench runs (row_var: 23.0, 38.2 and 76.5 us). This separates the causes: a time that rises only
under host load, with late windows (:class:`kernelgen.gpu.timing.Windows`), is host time leaking
into the GPU's; one that moves on an idle host with another kept configuration is Inductor's
autotuning. Run on a GPU machine, from the repository root::

    TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 python tools/timing_noise.py row_var --rounds 3 --load 16 --out noise.jsonl

(Without the variable, Inductor reuses its first round's autotuning from its cache: a bench run on a
fresh machine autotunes each task once.)

Each line of ``--out`` is one measurement: task, what (eager, compiled, golden), condition (idle,
load), round, the median, minimum and maximum (ms), the queue attempts and late windows, and for
torch.compile the configurations its autotuner kept (``tools/inductor_kernels.py``'s reading).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import statistics
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

MODE = "max-autotune-no-cudagraphs"  # the harness's first torch.compile mode (kernelgen.gpu.case.COMPILE_MODES)


def _spin() -> None:
    while True:
        pass


@contextlib.contextmanager
def busy_host(processes: int) -> Iterator[None]:
    """``processes`` processes spinning on the CPU meanwhile (none for 0)."""
    context = multiprocessing.get_context("spawn")
    spinners = [context.Process(target=_spin, daemon=True) for _ in range(processes)]
    for spinner in spinners:
        spinner.start()
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.terminate()
            spinner.join()


def summary(windows: Any) -> dict[str, Any]:
    times = windows.times
    return {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times),
            "attempts": windows.attempts, "late": windows.late, "repetitions": len(times)}


def measure(task_id: str, rounds: int, load: int, repetitions: int) -> Iterator[dict[str, Any]]:
    import torch

    from kernelgen.check.checker import check
    from kernelgen.gpu.case import WARMUP, _to_device, kernel_call
    from kernelgen.gpu.compile import compile_document
    from kernelgen.gpu.timing import flush_buffer, timed_windows
    from kernelgen.host.plan import sequence_for_sizes
    from kernelgen.task.spec import get_task
    from kernelgen.task.verify import make_inputs

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from inductor_kernels import chosen_configs, loaded_modules

    task = get_task(task_id)
    concrete = task.variant_tasks()[0]
    device = torch.device("cuda", torch.cuda.current_device())
    inputs = _to_device(make_inputs(concrete, task.bench_sizes, 0, bench=True), device)
    values = list(inputs.values())
    flush = flush_buffer()
    eager = concrete.eager_function()
    golden: Callable[[], Any] | None = None
    if task.golden is not None and concrete is task:
        checked = check(task.golden)
        plans = sequence_for_sizes(checked, task.bench_sizes, task.scalars)
        golden = kernel_call(checked, compile_document(checked, plans=plans), inputs)
    for condition, processes in (("idle", 0), ("load", load)):
        if condition == "load" and not load:
            continue
        with busy_host(processes), torch.no_grad():
            for round_ in range(rounds):
                base = {"task": task_id, "condition": condition, "round": round_}
                yield {**base, "what": "eager", **summary(timed_windows(lambda: eager(*values), flush,
                                                                        repetitions, WARMUP))}
                torch._dynamo.reset()
                before = set(loaded_modules())
                compiled = torch.compile(eager, mode=MODE)
                compiled(*values)
                torch.cuda.synchronize()
                try:
                    configs: Any = chosen_configs(before)
                except Exception as exc:  # noqa: BLE001 - Inductor's internals move between versions
                    configs = f"not found: {type(exc).__name__}: {exc}"
                yield {**base, "what": "compiled", "configs": configs,
                       **summary(timed_windows(lambda: compiled(*values), flush, repetitions, WARMUP))}
                if golden is not None:
                    yield {**base, "what": "golden", **summary(timed_windows(golden, flush, repetitions, WARMUP))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="+", help="task ids")
    parser.add_argument("--rounds", type=int, default=3, help="timings per condition (a fresh torch.compile each)")
    parser.add_argument("--load", type=int, default=0, help="busy processes for the loaded condition (0: idle only)")
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--out", type=Path, required=True, help="a JSON-lines file")
    args = parser.parse_args(argv)
    with args.out.open("w") as out:
        for task_id in args.tasks:
            try:
                for row in measure(task_id, args.rounds, args.load, args.repetitions):
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                    print(f"{task_id:28s} {row['what']:8s} {row['condition']:4s} r{row['round']} "
                          f"median {row['median_ms'] * 1e3:8.1f} us  min {row['min_ms'] * 1e3:8.1f}  "
                          f"max {row['max_ms'] * 1e3:8.1f}  attempts {row['attempts']} late {row['late']}", flush=True)
            except Exception:  # noqa: BLE001 - one task's failure is recorded, the others go on
                import traceback

                out.write(json.dumps({"task": task_id, "error": traceback.format_exc()[-3000:]}) + "\n")
                print(f"{task_id}: {traceback.format_exc()[-500:]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
