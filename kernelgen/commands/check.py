"""``kernelgen check FILE``: exit 0 for a valid kernel AST, 1 with one line per diagnostic."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from typing import TYPE_CHECKING

from kernelgen.commands import UsageError
from kernelgen.errors import Diagnostic, KernelgenError

if TYPE_CHECKING:
    from kernelgen.lang.nodes import Kernel


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a kernel AST as JSON ('-' reads standard input)")
    parser.add_argument("--json", action="store_true", help="print the diagnostics as a JSON array")
    parser.add_argument("--meta", action="append", default=[], metavar="NAME=VALUE",
                        help="check with this meta-parameter value instead of the kernel's own")


def parse_assignments(items: list[str], what: str) -> dict[str, int]:
    values: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip().lstrip("-").isdigit():
            raise UsageError(f"--{what} takes NAME=INTEGER, got {item!r}", code="bad_argument")
        values[name.strip()] = int(value)
    return values


def parse_sizes(items: list[str], kernel: Kernel) -> dict[str, int]:
    """``--size NAME=VALUE`` assignments for ``kernel``: each a size name of its inputs'
    shapes, each value >= 0 (a size is a tensor's extent)."""
    sizes = parse_assignments(items, "size")
    known = sorted({d for i in kernel.inputs if i.is_plain for d in i.shape or () if isinstance(d, str)})
    for name, value in sizes.items():
        if name not in known:
            raise UsageError(f"--size {name}={value}: {kernel.name} has no size {name} (its sizes: "
                             f"{', '.join(known) or 'none'})", code="unknown_size")
        if value < 0:
            raise UsageError(f"--size {name}={value}: a size is an integer >= 0", code="bad_size")
    return sizes


def parse_dtypes(items: list[str], kernel: Kernel) -> dict[str, str] | None:
    """``--dtype NAME=DTYPE`` assignments for a generic ``kernel``: the binding of its declared
    dtype variables they name, each other variable at its first dtype (the default variant);
    None without assignments (the checker then checks every variant and gives the default)."""
    from kernelgen.lang.generic import bound_variables

    if not items:
        return None
    variables = {v.name: v.of for v in bound_variables(kernel)}
    binding = {name: of[0] for name, of in variables.items()}
    for item in items:
        name, sep, dtype = (part.strip() for part in item.partition("="))
        if not sep or not name or not dtype:
            raise UsageError(f"--dtype takes NAME=DTYPE, got {item!r}", code="bad_argument")
        if name not in variables:
            raise UsageError(f"--dtype {item}: {kernel.name} declares no dtype variable {name} (its variables: "
                             f"{', '.join(variables) or 'none'})", code="unknown_dtype_variable")
        if dtype not in variables[name]:
            raise UsageError(f"--dtype {item}: {name} takes one of {', '.join(variables[name])}",
                             code="bad_dtype")
        binding[name] = dtype
    return binding


def read_source(file: str) -> bytes:
    """The file's bytes ('-': standard input); the parser decodes them and reports bad UTF-8."""
    if file == "-":
        return sys.stdin.buffer.read()
    path = Path(file)
    if not path.is_file():
        raise KernelgenError(f"no such file: {file}", code="no_file")
    return path.read_bytes()


def run(args: argparse.Namespace) -> int:
    from kernelgen.check.checker import check
    from kernelgen.lang.parse import parse_kernel

    meta = parse_assignments(args.meta, "meta")
    diagnostics: list[Diagnostic] = []
    stage = "check"
    try:
        check(parse_kernel(read_source(args.file)), meta)
    except KernelgenError as exc:
        diagnostics, stage = exc.diagnostics, exc.stage
    if args.json:
        print(json.dumps([{"stage": stage, **d.to_dict()} for d in diagnostics], indent=2))
    else:
        for d in diagnostics:
            print(f"{args.file}:{d}")
        if not diagnostics:
            print(f"{args.file}: ok")
    return 1 if diagnostics else 0
