"""``kernelgen compile FILE --target sm_90 --emit ptx``: compile a kernel AST and print one stage's
output (TTIR, TTGIR, LLVM IR, PTX) or write its cubin; ``--facts`` prints what the compiler made
of it instead (registers, spills, shared memory, vectorized accesses, tensor cores, occupancy:
:mod:`kernelgen.gpu.facts`), the facts the optimization rounds show a model."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernelgen.commands.check import parse_assignments, parse_dtypes, read_source
from kernelgen.errors import KernelgenError

EMITS = ("ttir", "ttgir", "llir", "ptx", "cubin")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a kernel AST as JSON ('-' reads standard input)")
    parser.add_argument("--target", default=None, metavar="SM",
                        help="sm_80, sm_86, sm_89 or sm_90 (default: the GPU present, else sm_90)")
    parser.add_argument("--emit", choices=EMITS, default="ptx", help="which stage's output (default: ptx)")
    parser.add_argument("-o", "--output", metavar="PATH",
                        help="write to PATH instead of standard output (needed for cubin on a terminal)")
    parser.add_argument("--meta", action="append", default=[], metavar="NAME=VALUE",
                        help="compile with this meta-parameter value instead of the kernel's own")
    parser.add_argument("--dtype", action="append", default=[], metavar="NAME=DTYPE",
                        help="a generic kernel: compile the variant with this dtype variable bound (the others at "
                             "their first dtype; default: every variable at its first)")
    parser.add_argument("--num-warps", type=int, default=None, metavar="N",
                        help="warps per program (default: the kernel's num_warps)")
    parser.add_argument("--num-stages", type=int, default=None, metavar="N",
                        help="software pipelining stages (default: the kernel's num_stages)")
    parser.add_argument("--divisible-by-16", action="append", default=[], metavar="PARAM",
                        help="specialize on this integer param being a nonzero multiple of 16 (vectorizes masked "
                             "accesses and offsets taken mod it; the kernel is then wrong for other values)")
    parser.add_argument("--facts", action="store_true",
                        help="print the compiler's facts about the kernel instead of a stage's output")
    parser.add_argument("--launch", type=int, default=None, metavar="I",
                        help="a program of several launches: only launch I (default: all, one after another)")
    parser.add_argument("--no-cache", action="store_true", help="compile even if the result is cached")


def run(args: argparse.Namespace) -> int:
    from kernelgen.check.checker import check
    from kernelgen.check.checked import launches_of
    from kernelgen.gpu.compile import compile_kernel
    from kernelgen.lang.parse import parse_kernel

    meta = parse_assignments(args.meta, "meta")
    if args.emit == "cubin" and args.output is None and sys.stdout.isatty():
        raise KernelgenError("a cubin is binary: give -o PATH (or redirect standard output)", code="bad_argument")
    kernel = parse_kernel(read_source(args.file))
    checked = check(kernel, meta, parse_dtypes(args.dtype, kernel))
    launches = launches_of(checked)
    if args.launch is not None:
        if not 0 <= args.launch < len(launches):
            raise KernelgenError(f"--launch {args.launch}: the document has {len(launches)} launch(es)",
                                 code="bad_argument")
        launches = [launches[args.launch]]
    compiled = [compile_kernel(each, target=args.target, num_warps=args.num_warps, num_stages=args.num_stages,
                               divisible_by_16=args.divisible_by_16, cache=not args.no_cache) for each in launches]
    for each in compiled:
        if "flatten_dropped" in each.metadata:
            print(f"note: {each.name}: {each.metadata['flatten_dropped']}", file=sys.stderr)
    if args.facts:
        from kernelgen.gpu.facts import document_facts, format_facts

        result: str | bytes = "\n".join(format_facts(document_facts(compiled if len(compiled) > 1 else compiled[0])))
        result += "\n"
    elif len(compiled) == 1:
        result = compiled[0].emit(args.emit)
    elif args.emit == "cubin":
        raise KernelgenError("a program has a cubin per launch: choose one with --launch I", code="bad_argument")
    else:
        result = "".join(f"// launch {i}: {each.name}\n{each.emit(args.emit)}\n" for i, each in enumerate(compiled))
    data = result if isinstance(result, bytes) else result.encode()
    if args.output is not None:
        try:
            Path(args.output).write_bytes(data)
        except OSError as exc:
            raise KernelgenError(f"cannot write {args.output}: {exc.strerror}", code="bad_output") from exc
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    return 0
