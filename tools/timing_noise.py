"""How much a task's times move, and why: eager, torch.compile and the golden (as written), each
timed with the harness's timer several times, on an idle host and with busy processes on every
core or with processes keeping the GPU busy outside the harness's turns, and torch.compile
compiled afresh each round (its autotuner may keep another configuration).

Issue 33 compares goldens with torch.compile, whose time for one task moved up to 3x between
bench runs (row_var: 23.0, 38.2 and 76.5 us). This separates the causes: a time that rises only
under host load, with late windows (:class:`kernelgen.gpu.timing.Windows`), is host time leaking
into the GPU's; one that moves on an idle host with another kept configuration is Inductor's
autotuning; one that comes with a busy GPU, and stays once the load has stopped ("compiled after"),
is Inductor's benchmarks measuring other processes' work. ``--inductor-timer own`` leaves
Inductor's autotuner its own benchmarker, which measured the host's launch time on the H200
(the autotuning log in the output shows what each candidate measured). Run on a GPU machine,
from the repository root::

    TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 python tools/timing_noise.py row_var --rounds 3 --load 16 --gpu-load 2 --out noise.jsonl

(Without the variable, Inductor reuses its first round's autotuning from its cache: a bench run on a
fresh machine autotunes each task once.)

Each line of ``--out`` is one measurement: task, what (eager, compiled, golden, compiled after),
condition (idle, load, gpu), round, the median, minimum and maximum (ms), the queue attempts and
late windows, and for torch.compile the configurations its autotuner kept (``tools/inductor_kernels.py``'s
reading) and its autotuning log (:mod:`kernelgen.gpu.autotune_log`).
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


def _gpu_spin() -> None:
    """Keep the GPU busy without taking turns: back-to-back 64 MiB fills of 40-50 us each, a
    saturating form of the work other workers run outside their turns (first calls of kernels)."""
    import torch

    buffer = torch.empty(16 << 20, dtype=torch.float32, device="cuda")
    while True:
        buffer.add_(1.0)


@contextlib.contextmanager
def busy(processes: int, target: Callable[[], None] = _spin) -> Iterator[None]:
    """``processes`` processes running ``target`` meanwhile (none for 0)."""
    context = multiprocessing.get_context("spawn")
    spinners = [context.Process(target=target, daemon=True) for _ in range(processes)]
    for spinner in spinners:
        spinner.start()
    if target is _gpu_spin:
        import time

        time.sleep(8.0)  # until their CUDA contexts are up and their fills queue
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


def measure(task_id: str, rounds: int, load: int, gpu_load: int, repetitions: int) -> Iterator[dict[str, Any]]:
    import torch

    from kernelgen.check.checker import check
    from kernelgen.gpu.autotune_log import autotune_lines
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
    golden: Any = None  # the golden's TimedCall
    if task.golden is not None and concrete is task:
        checked = check(task.golden)
        plans = sequence_for_sizes(checked, task.bench_sizes, task.scalars)
        golden = kernel_call(checked, compile_document(checked, plans=plans), inputs)
    conditions = [("idle", 0, _spin), ("load", load, _spin), ("gpu", gpu_load, _gpu_spin)]
    for condition, processes, target in conditions:
        if condition != "idle" and not processes:
            continue
        for round_ in range(rounds):
            base = {"task": task_id, "condition": condition, "round": round_}
            with busy(processes, target), torch.no_grad():
                yield {**base, "what": "eager", **summary(timed_windows(lambda: eager(*values), flush,
                                                                        repetitions, WARMUP))}
                torch._dynamo.reset()
                before = set(loaded_modules())
                compiled = torch.compile(eager, mode=MODE)
                with autotune_lines() as autotune:
                    compiled(*values)
                    torch.cuda.synchronize()
                try:
                    configs: Any = chosen_configs(before)
                except Exception as exc:  # noqa: BLE001 - Inductor's internals move between versions
                    configs = f"not found: {type(exc).__name__}: {exc}"
                yield {**base, "what": "compiled", "configs": configs, "autotune": autotune,
                       **summary(timed_windows(lambda: compiled(*values), flush, repetitions, WARMUP))}
                if golden is not None:
                    yield {**base, "what": "golden", **summary(timed_windows(golden.run, flush, repetitions, WARMUP,
                                                                                   golden.prepare))}
            if processes:  # what was compiled under load, timed once the load has stopped
                with torch.no_grad():
                    yield {**base, "what": "compiled after", **summary(timed_windows(lambda: compiled(*values), flush,
                                                                                     repetitions, WARMUP))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="+", help="task ids")
    parser.add_argument("--rounds", type=int, default=3, help="timings per condition (a fresh torch.compile each)")
    parser.add_argument("--load", type=int, default=0, help="busy processes for the loaded condition (0: idle only)")
    parser.add_argument("--gpu-load", type=int, default=0,
                        help="processes keeping the GPU busy, outside the harness's turns, for the gpu condition (0: none)")
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--inductor-timer", choices=("harness", "own"), default="harness",
                        help="how torch.compile's autotuner times its candidates: with the harness's timer, as in a "
                             "bench run (kernelgen.gpu.timing.inductor_timed_by_harness), or with Inductor's own")
    parser.add_argument("--out", type=Path, required=True, help="a JSON-lines file")
    args = parser.parse_args(argv)
    if args.inductor_timer == "harness":
        from kernelgen.gpu.timing import inductor_timed_by_harness

        inductor_timed_by_harness()
    with args.out.open("w") as out:
        for task_id in args.tasks:
            try:
                for row in measure(task_id, args.rounds, args.load, args.gpu_load, args.repetitions):
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                    print(f"{task_id:28s} {row['what']:14s} {row['condition']:4s} r{row['round']} "
                          f"median {row['median_ms'] * 1e3:8.1f} us  min {row['min_ms'] * 1e3:8.1f}  "
                          f"max {row['max_ms'] * 1e3:8.1f}  attempts {row['attempts']} late {row['late']}", flush=True)
            except Exception:  # noqa: BLE001 - one task's failure is recorded, the others go on
                import traceback

                out.write(json.dumps({"task": task_id, "error": traceback.format_exc()[-3000:]}) + "\n")
                print(f"{task_id}: {traceback.format_exc()[-500:]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
