"""``kernelgen interpret FILE --size N=1000``: run a kernel on random inputs in the CPU
reference interpreter and print a summary of each output."""

from __future__ import annotations

import argparse

from kernelgen.commands.check import parse_assignments, parse_sizes, read_source


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a kernel AST as JSON")
    parser.add_argument("--size", action="append", default=[], metavar="NAME=VALUE",
                        help="the value of a size name of the inputs (repeat for each)")
    parser.add_argument("--meta", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--seed", type=int, default=0)


def run(args: argparse.Namespace) -> int:
    from kernelgen.check.checker import check
    from kernelgen.host.inputs import random_inputs
    from kernelgen.interp.execute import interpret
    from kernelgen.lang.parse import parse_kernel

    checked = check(parse_kernel(read_source(args.file)), parse_assignments(args.meta, "meta"))
    inputs = random_inputs(checked.kernel, parse_sizes(args.size, checked.kernel), seed=args.seed)
    outputs = interpret(checked, inputs)
    for name, tensor in outputs.items():
        values = tensor.float()
        if values.numel() == 0:
            print(f"{name}: {tensor.dtype} {list(tensor.shape)} (empty)")
            continue
        print(f"{name}: {tensor.dtype} {list(tensor.shape)} "
              f"min={values.min().item():.6g} max={values.max().item():.6g} "
              f"mean={values.mean().item():.6g} nan={int(values.isnan().sum())}")
    for out in checked.kernel.outputs:
        if out.raises is not None and bool(outputs[out.name].any()):  # what a call would do
            print(f"{out.name}: the precondition fails: a call raises {out.raises}({out.message!r})")
    return 0
