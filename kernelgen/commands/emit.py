"""``kernelgen emit FILE``: print a kernel AST as readable Triton Python (kernel and launcher)."""

from __future__ import annotations

import argparse

from kernelgen.commands.check import parse_assignments, read_source


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a kernel AST as JSON ('-' reads standard input)")
    parser.add_argument("--meta", action="append", default=[], metavar="NAME=VALUE",
                        help="emit with this meta-parameter value instead of the kernel's own")


def run(args: argparse.Namespace) -> int:
    from kernelgen.check import check
    from kernelgen.emit import emit_triton
    from kernelgen.parse import parse_kernel

    checked = check(parse_kernel(read_source(args.file)), parse_assignments(args.meta, "meta"))
    print(emit_triton(checked), end="")
    return 0
