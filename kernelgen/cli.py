"""The ``kernelgen`` command line: a table of subcommands, each a module of its own.

A subcommand module has ``configure(parser)`` (its arguments) and ``run(args) -> int`` (the exit
status); it is imported only when its command runs, so ``kernelgen check`` never pays for
torch's CUDA probing or the model clients.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from kernelgen.commands import UsageError
from kernelgen.errors import KernelgenError

COMMANDS: dict[str, tuple[str, str]] = {
    "schema": ("kernelgen.commands.schema", "print the kernel AST's JSON schema"),
    "prompt": ("kernelgen.commands.prompt", "print the system prompt a model is given, or its size in tokens"),
    "check": ("kernelgen.commands.check", "check a kernel AST statically"),
    "interpret": ("kernelgen.commands.interpret", "run a kernel AST in the CPU reference interpreter"),
    "emit": ("kernelgen.commands.emit", "print a kernel AST as readable Triton Python"),
    "compile": ("kernelgen.commands.compile", "compile a kernel AST to TTIR, TTGIR, LLVM IR, PTX or cubin"),
    "generate": ("kernelgen.commands.generate", "ask a model for kernel ASTs (validated, cached)"),
    "tune": ("kernelgen.commands.tune", "autotune a kernel AST's block sizes, warps and stages (timing on a GPU)"),
    "run": ("kernelgen.commands.run", "compile a kernel, run it on the GPU and compare it with the interpreter"),
    "tasks": ("kernelgen.commands.tasks", "list the benchmark's tasks"),
    "tritonbench": ("kernelgen.commands.tritonbench", "the TritonBench-T track: list a checkout's operators"),
    "report": ("kernelgen.commands.report", "reports over runs: Allure HTML, compare runs, merge shards, gate CI on a baseline"),
    "serve": ("kernelgen.commands.serve", "serve a model: OpenAI-compatible, JSON-schema constrained decoding"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernelgen", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        command.set_defaults(_module=module)
        importlib.import_module(module).configure(command)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return importlib.import_module(args._module).run(args)
    except UsageError as exc:
        print(f"kernelgen {args.command}: error: {exc.message}", file=sys.stderr)
        return exc.exit_status
    except KernelgenError as exc:
        for diagnostic in exc.diagnostics:
            print(f"{exc.stage}: {diagnostic}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
