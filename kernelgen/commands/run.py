"""``kernelgen run FILE --size N=1000``: compile a kernel, run it on the GPU on random inputs
and compare each output with the CPU reference interpreter's.

Exit status: 0 when every output matches, 1 on a mismatch or a failed stage, 2 where no CUDA
GPU is present (the kernel is still checked and compiled, so that much is verified).
"""

from __future__ import annotations

import argparse
import sys

from kernelgen.commands.check import parse_assignments, parse_sizes, read_source

NO_GPU_STATUS = 2


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a kernel AST as JSON ('-' reads standard input)")
    parser.add_argument("--size", action="append", default=[], metavar="NAME=VALUE",
                        help="the value of a size name of the inputs (repeat for each)")
    parser.add_argument("--meta", action="append", default=[], metavar="NAME=VALUE",
                        help="a meta-parameter value instead of the kernel's own")
    parser.add_argument("--target", help="compile for this GPU (sm_80, sm_86, sm_89, sm_90); "
                                         "default: the GPU present")
    parser.add_argument("--seed", type=int, default=0, help="the seed of the random inputs")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                        help="stop the kernel after this long (default 60)")
    parser.add_argument("--rtol", type=float, help="relative tolerance for every output "
                                                   "(default by dtype: f32 1e-4, f16/bf16 1e-2, integers 0)")
    parser.add_argument("--atol", type=float, help="absolute tolerance for every output "
                                                   "(default by dtype: f32 1e-5, f16/bf16 1e-2, integers 0)")


def run(args: argparse.Namespace) -> int:
    import torch

    from kernelgen.check.checker import check
    from kernelgen.task.compare import TOLERANCES, Tolerance, compare_tensors
    from kernelgen.gpu.compile import DEFAULT_TARGET, compile_document
    from kernelgen.gpu.executor import Executor
    from kernelgen.host.plan import plan_sequence
    from kernelgen.host.inputs import random_inputs
    from kernelgen.interp.execute import interpret
    from kernelgen.gpu.launch import device_target, prepare_gpu, run_on_gpu
    from kernelgen.lang.parse import parse_kernel

    checked = check(parse_kernel(read_source(args.file)), parse_assignments(args.meta, "meta"))
    inputs = random_inputs(checked.kernel, parse_sizes(args.size, checked.kernel), seed=args.seed)
    # Sizes that are multiples of 16 this time are compiled as such (vectorized accesses).
    plans = plan_sequence(checked, inputs)

    def build(target: str):
        """Each launch's variant (a program's list, a kernel alone)."""
        return compile_document(checked, target=target, plans=plans)

    if not torch.cuda.is_available():
        compiled = build(args.target or DEFAULT_TARGET)
        first = compiled[0] if isinstance(compiled, list) else compiled
        print(f"{args.file}: compiled {checked.kernel.name} for {first.target}; there is no CUDA GPU on this "
              "machine, so it was not run", file=sys.stderr)
        return NO_GPU_STATUS

    # The parent makes no CUDA context: the target is read, and the kernel run, in the executor.
    with Executor(initializer=prepare_gpu, default_timeout=args.timeout) as executor:
        target = args.target or executor.call(device_target)
        compiled = build(target)
        actual = executor.call(run_on_gpu, compiled, checked, inputs, to_cpu=True)
    expected = interpret(checked, inputs)

    all_ok = True
    for output in checked.kernel.outputs:
        default = TOLERANCES[output.dtype]
        tolerance = Tolerance(rtol=default.rtol if args.rtol is None else args.rtol,
                              atol=default.atol if args.atol is None else args.atol)
        comparison = compare_tensors(actual[output.name], expected[output.name], output.dtype, tolerance,
                                     overflow=True)  # the GPU's rounding against the interpreter's
        all_ok &= comparison.ok
        print(f"{output.name}: {comparison}")
    return 0 if all_ok else 1
