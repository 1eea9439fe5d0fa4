"""Host time per call of a TritonBench wrapper (a kernelgen AST called like the operator)
against the PyTorch operator and against Triton's own launcher running the same kernel.

At TritonBench-T's small perf sizes a kernel runs for a few microseconds, so what a call
costs on the host decides the speedup the track reports. Three ways to run one operator:

* ``torch``: the operator's PyTorch function;
* ``kernelgen``: the golden AST's wrapper (:func:`kernelgen.gpu.function.wrapper`:
  a call repeating a signature replays its binding and its prepared launch, through CuPy);
* ``triton``: the same AST as ``@triton.jit`` Python (:func:`kernelgen.emit.module.emit_triton`),
  launched by Triton's JIT with the emitted launcher (plain arguments, no operator semantics).

Each is called back to back on small CUDA tensors and synchronized once at the end; the
median over rounds of wall time / calls is reported. GPU only.

    python benchmarks/launch_overhead.py [--calls 2000] [--rounds 7] [--size 1024] [--profile sub]

``--profile OPERATOR`` also prints where kernelgen's calls of that operator spend their time
(cProfile, the functions with the most time of their own). ``--windows`` prints instead what the
harness's timer sees (:func:`kernelgen.gpu.timing.event_times`: GPU time between events, the L2
flushed before each window, the host's queueing hidden behind a spin): the median window of 1, 2
and 4 back-to-back calls of each way. The increase per call is the GPU-side cost of one more
launch, which a program of several launches pays in its reported time.

    python benchmarks/launch_overhead.py --windows [--size 1024]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any, Callable

from kernelgen.check.checker import check
from kernelgen.emit.module import emit_triton
from kernelgen.lang.parse import parse_kernel
from kernelgen.tritonbench.goldens import golden_answer
from kernelgen.gpu.function import unfilled_outputs, wrapper

def _operators() -> dict[str, tuple[Callable[..., Any], int]]:
    """Operator id -> (its PyTorch function, how many size-N f32 tensors it takes)."""
    import torch

    return {"relu": (torch.relu, 1), "sub": (torch.sub, 2), "exp": (torch.exp, 1), "sigmoid": (torch.sigmoid, 1)}


def per_call_us(function: Callable[[], Any], calls: int, rounds: int) -> float:
    import torch

    for _ in range(50):
        function()
    torch.cuda.synchronize()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            function()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples)


def emitted_launcher(operator: str, arity: int) -> Callable[..., Any]:
    """The golden AST as Triton Python, executed from a file (Triton's JIT reads the source).
    The emitted launcher takes every input of the AST: those after the tensors get their
    defaults (``alpha=1``, ``out=None``), as the operator's call would."""
    import importlib.util
    import tempfile
    from pathlib import Path

    kernel = parse_kernel(golden_answer(operator))
    source = emit_triton(check(kernel, {}), entry="launch")
    path = Path(tempfile.mkdtemp(prefix="kernelgen-launch-")) / f"emitted_{operator}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    defaults = [inp.default for inp in kernel.inputs[arity:]]
    return lambda *tensors: module.launch(*tensors, *defaults)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--size", type=int, default=1024, help="elements per input tensor")
    parser.add_argument("--profile", metavar="OPERATOR", help="profile kernelgen's calls of this operator")
    parser.add_argument("--windows", action="store_true", help="GPU time per window of 1, 2 and 4 calls (the timer's view)")
    args = parser.parse_args()

    import torch

    if not torch.cuda.is_available():
        print("launch_overhead needs a CUDA GPU", file=sys.stderr)
        return 2
    if args.windows:
        return windows(args.size)
    print(f"host time per call (µs), {args.size} f32 elements, median of {args.rounds} rounds of {args.calls} calls")
    print(f"{'operator':<10}{'torch':>10}{'kernelgen':>12}{'triton':>10}")
    for operator, (torch_function, arity) in _operators().items():
        inputs = [torch.randn(args.size, device="cuda") for _ in range(arity)]
        ours = wrapper(golden_answer(operator), operator)
        theirs = emitted_launcher(operator, arity)
        torch.testing.assert_close(ours(*inputs), torch_function(*inputs))
        torch.testing.assert_close(theirs(*inputs), torch_function(*inputs))
        with unfilled_outputs():
            row = [per_call_us(lambda f=f: f(*inputs), args.calls, args.rounds)
                   for f in (torch_function, ours, theirs)]
        print(f"{operator:<10}{row[0]:>10.1f}{row[1]:>12.1f}{row[2]:>10.1f}")
    if args.profile:
        profile(args.profile, args.size, args.calls)
    return 0


def windows(size: int, repetitions: int = 100) -> int:
    """The median event window (µs) of 1, 2 and 4 back-to-back calls of each operator's three ways."""
    import torch

    from kernelgen.gpu.timing import event_times, flush_buffer

    flush = flush_buffer()
    print(f"GPU time per window (µs), {size} f32 elements, median of {repetitions} windows, L2 flushed before each")
    print(f"{'operator':<10}{'way':<11}{'1 call':>8}{'2 calls':>9}{'4 calls':>9}")
    for operator, (torch_function, arity) in _operators().items():
        inputs = [torch.randn(size, device="cuda") for _ in range(arity)]
        ways = {"torch": torch_function, "kernelgen": wrapper(golden_answer(operator), operator),
                "triton": emitted_launcher(operator, arity)}
        for way, function in ways.items():
            with unfilled_outputs():
                row = [statistics.median(event_times(lambda f=function, n=n: [f(*inputs) for _ in range(n)],
                                                     flush, repetitions, 10)) * 1e3 for n in (1, 2, 4)]
            print(f"{operator:<10}{way:<11}" + "".join(f"{us:>9.2f}" for us in row))
    return 0


def profile(operator: str, size: int, calls: int) -> None:
    import cProfile
    import pstats

    import torch

    if operator not in _operators():
        raise SystemExit(f"--profile takes one of {sorted(_operators())}, not {operator!r}")
    _, arity = _operators()[operator]
    inputs = [torch.randn(size, device="cuda") for _ in range(arity)]
    ours = wrapper(golden_answer(operator), operator)
    ours(*inputs)
    profiler = cProfile.Profile()
    with unfilled_outputs():
        profiler.enable()
        for _ in range(calls):
            ours(*inputs)
        torch.cuda.synchronize()
        profiler.disable()
    print(f"\nkernelgen's {operator}: {calls} calls, by own time")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    sys.exit(main())
