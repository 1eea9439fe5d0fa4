"""``kernelgen emit FILE``: print a kernel AST as readable Triton Python (kernel and launcher).

A generic kernel (dtype variables) is emitted as one variant: its default (each variable's
first dtype), or the one ``--dtype T=f64`` binds.
"""

from __future__ import annotations

import argparse

from kernelgen.commands.check import parse_assignments, read_source
from kernelgen.errors import KernelgenError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a kernel AST as JSON ('-' reads standard input)")
    parser.add_argument("--meta", action="append", default=[], metavar="NAME=VALUE",
                        help="emit with this meta-parameter value instead of the kernel's own")
    parser.add_argument("--dtype", action="append", default=[], metavar="VARIABLE=DTYPE",
                        help="emit the variant of a generic kernel that binds this dtype variable so "
                             "(default: each variable's first dtype)")


def run(args: argparse.Namespace) -> int:
    from kernelgen.check.checker import check
    from kernelgen.emit.module import emit_triton
    from kernelgen.lang.generic import bound_variables
    from kernelgen.lang.parse import parse_kernel

    kernel = parse_kernel(read_source(args.file))
    dtypes: dict[str, str] = {}
    for item in args.dtype:
        name, sep, dtype = item.partition("=")
        if not sep or not name.strip() or not dtype.strip():
            raise KernelgenError(f"--dtype takes VARIABLE=DTYPE, got {item!r}", code="bad_argument")
        dtypes[name.strip()] = dtype.strip()
    if dtypes:
        # A variable the option does not name takes its first dtype, as in the default variant.
        dtypes = {v.name: dtypes.pop(v.name, v.of[0]) for v in bound_variables(kernel)} | dtypes
    checked = check(kernel, parse_assignments(args.meta, "meta"), dtypes or None)
    print(emit_triton(checked), end="")
    return 0
