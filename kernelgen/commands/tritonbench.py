"""``kernelgen tritonbench SUBCOMMAND``: the TritonBench-T track.

Each subcommand is a row of :data:`SUBCOMMANDS`: its arguments, what it runs and its help
line. The loader is imported only when a subcommand runs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Callable


def configure_list(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", required=True, type=Path,
                        help="a TritonBench checkout (the directory holding data/ and performance_metrics/)")
    parser.add_argument("--json", action="store_true", help="print a JSON array, one object per operator")


def run_list(args: argparse.Namespace) -> int:
    from kernelgen.tritonbench import load_tritonbench

    bench = load_tritonbench(args.root)
    rows = [_summary(operator) for operator in bench.operators]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    table = [("name", "difficulty", "wrapper signature", "perf sizes")]
    table += [(row["name"], str(row["difficulty"]), row["call"],
               "?" if row["perf_cases"] is None else str(row["perf_cases"])) for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]) - 1)]
    for line in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)) + "  " + line[-1])
    unresolved = sum(row["perf_cases"] is None for row in rows)
    note = f"; perf sizes '?': {unresolved} perf scripts not readable statically" if unresolved else ""
    print(f"{len(rows)} operators in {bench.root}{note}")
    return 0


def _summary(operator: Any) -> dict[str, Any]:
    """One operator as the JSON listing shows it."""
    perf = operator.perf
    return {
        "name": operator.name,
        "torch_name": operator.torch_name,
        "file": operator.file,
        "difficulty": operator.difficulty,
        "wrapper": operator.wrapper,
        "signature": operator.signature.render(),
        "call": operator.signature.render(annotations=False),
        "params": [p.model_dump() for p in operator.signature.params],
        "prompt_signature": operator.prompt_signature.render() if operator.prompt_signature else None,
        "test_function": operator.test.function,
        "test_seeded": operator.test.seeded,
        "perf_cases": None if perf.cases is None else len(perf.cases),
        "perf_unresolved": perf.unresolved,
        "perf_results": len(perf.results),
    }


SUBCOMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], str]] = {
    "list": (configure_list, run_list, "list the operators of a TritonBench checkout"),
}


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="tritonbench_command", metavar="SUBCOMMAND", required=True)
    for name, (configure_subcommand, run_subcommand, help_text) in SUBCOMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        command.set_defaults(_tritonbench_run=run_subcommand)
        configure_subcommand(command)


def run(args: argparse.Namespace) -> int:
    return args._tritonbench_run(args)
