"""What the raw-LLM baseline's sandbox costs per case: wall time of one sandboxed run of a
correct answer, and of one whole baseline case (static rules, sandbox, comparison).

Two measurements, each repeated and reported as median and minimum (the machine may be busy):

* ``sandbox``: :func:`kernelgen.baseline.sandbox.run_in_sandbox` of the vector-add example
  (300 elements, Triton's interpreter on the CPU, or the GPU with ``--device cuda``): starting
  the child, importing torch and Triton there, the call, reading the results back;
* ``case``: :func:`kernelgen.baseline.ablation.evaluate_baseline` of the ``relu`` task's
  reference answer, one size assignment (``shapes=1``), as ``pytest bench -m ablation`` runs it.

    python benchmarks/sandbox_overhead.py [--runs 5] [--device interpreter|cuda]

To compare two commits, run it from each checkout with the same interpreter, e.g. for the
commit before the OS-level sandbox: ``git archive a5be003 | tar -x -C /tmp/before`` and
``PYTHONPATH=/tmp/before python /tmp/before/../benchmarks/sandbox_overhead.py`` (this file
imports only functions both commits have).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--device", choices=("interpreter", "cuda"), default="interpreter")
    args = parser.parse_args()

    import kernelgen
    import torch

    from kernelgen.baseline.ablation import evaluate_baseline, reference_answer
    from kernelgen.baseline.sandbox import run_in_sandbox
    from kernelgen.check.checker import check
    from kernelgen.emit.module import emit_triton
    from kernelgen.lang.parse import parse_kernel
    from kernelgen.task.case import Settings
    from kernelgen.task.spec import get_task

    root = Path(kernelgen.__file__).resolve().parents[1]
    code = emit_triton(check(parse_kernel((root / "examples" / "vector_add.json").read_text())))
    x, y = torch.randn(300), torch.randn(300)
    gpu = args.device == "cuda"
    task = get_task("relu")
    answer = reference_answer(task)
    settings = Settings(gpu=gpu, shapes=1, time_kernels=False)

    def sandbox() -> None:
        run = run_in_sandbox(code, "vector_add", [x, y], device=args.device)
        assert run.ok, (run.error, run.stderr_tail)

    def case() -> None:
        result = evaluate_baseline(task, answer, settings)
        assert result.ok, result.diagnostics

    print(f"kernelgen at {root}; device {args.device}; {args.runs} runs each")
    for name, step in (("sandbox", sandbox), ("case", case)):
        step()  # a first run warms the parent's imports and caches
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        print(f"{name:8} median {statistics.median(times):.2f} s  min {min(times):.2f} s  "
              f"({', '.join(f'{t:.2f}' for t in times)})")


if __name__ == "__main__":
    main()
