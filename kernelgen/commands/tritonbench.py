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
    unmeasured = [row["name"] for row in rows if row["perf_problems"]]
    if unmeasured:
        note += f"; no speedup for {', '.join(unmeasured)} (perf files missing or unreadable: see --json)"
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
        "perf_problems": [problem.message for problem in perf.problems],
    }


def configure_generate(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", required=True, type=Path,
                        help="a TritonBench checkout (the directory holding data/ and performance_metrics/)")
    parser.add_argument("--out", required=True, type=Path, metavar="DIR",
                        help="where each operator's kernel, wrapper module and the manifest are written")
    parser.add_argument("--llm", metavar="PROVIDER", default="reference",
                        help="reference (the golden ASTs), openai, nim, ollama, gemini, remote, hf or replay:DIR "
                             "(default: reference)")
    parser.add_argument("--model", metavar="NAME", help="the model")
    parser.add_argument("--base-url", metavar="URL", help="the provider's base URL")
    parser.add_argument("--prompt", choices=("simp", "comp"), default="simp",
                        help="the dataset's simple or complete instructions (default: simp)")
    parser.add_argument("--ops", metavar="A,B,...", help="only these operators (ids: file stems)")
    parser.add_argument("--target", metavar="SM",
                        help="compile target, e.g. sm_90 (default: the GPU present, else sm_90)")
    parser.add_argument("--cache-dir", metavar="DIR",
                        help="where generations are recorded (default: generations/ in $KERNELGEN_CACHE_DIR, "
                             "else in ~/.cache/kernelgen)")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor record generations")


def run_generate(args: argparse.Namespace) -> int:
    from kernelgen.gpu.compile import default_target
    from kernelgen.env import generation_cache_dir
    from kernelgen.errors import KernelgenError
    from kernelgen.model.generation import GenerationCache
    from kernelgen.model.providers import ProviderOptions, make_provider
    from kernelgen.tritonbench import load_tritonbench
    from kernelgen.tritonbench.generate import Generation, generate_all

    bench = load_tritonbench(args.root)
    operators = bench.operators
    if args.ops:
        wanted = [name.strip() for name in args.ops.split(",") if name.strip()]
        known = {operator.name for operator in operators}
        unknown = [name for name in wanted if name not in known]
        if unknown:
            raise KernelgenError(f"no operator {', '.join(unknown)} in {bench.root}", code="unknown_operator")
        operators = [bench.operator(name) for name in wanted]
    provider = make_provider(args.llm, ProviderOptions(base_url=args.base_url, model=args.model))
    cache = None if args.no_cache else GenerationCache(args.cache_dir or generation_cache_dir())
    run = Generation(provider=provider, kind=args.prompt, target=args.target or default_target(), cache=cache)
    manifest = generate_all(bench, operators, run, args.out)
    for entry in manifest.operators:
        first = entry.diagnostics[0] if entry.diagnostics else None
        why = f" at {entry.stage}: {first['path'] or '/'}: {first['code']}: {first['message']}" if first else ""
        print(f"{entry.name:<32}{entry.outcome.value}{why}")
    ok = sum(entry.outcome.value == "ok" for entry in manifest.operators)
    print(f"{ok} of {len(manifest.operators)} operators have a kernel; manifest: {args.out / 'manifest.json'}")
    return 0


def configure_wrap(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", type=Path, metavar="DIR", help="the --out directory of `tritonbench generate`")


def run_wrap(args: argparse.Namespace) -> int:
    from kernelgen.tritonbench.wrap import write_predictions

    path, manifest = write_predictions(args.directory)
    ok = sum(entry.outcome.value == "ok" for entry in manifest.operators)
    print(f"{path}: {len(manifest.operators)} predictions ({manifest.prompt} instructions), {ok} with a kernel")
    return 0


SUBCOMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], str]] = {
    "list": (configure_list, run_list, "list the operators of a TritonBench checkout"),
    "generate": (configure_generate, run_generate,
                 "write each operator's kernel (AST, TTIR, PTX, cubin) and wrapper module, and a manifest"),
    "wrap": (configure_wrap, run_wrap,
             "write DIR/predictions.jsonl (instruction, predict) for TritonBench's own evaluator"),
}


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="tritonbench_command", metavar="SUBCOMMAND", required=True)
    for name, (configure_subcommand, run_subcommand, help_text) in SUBCOMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        command.set_defaults(_tritonbench_run=run_subcommand)
        configure_subcommand(command)


def run(args: argparse.Namespace) -> int:
    return args._tritonbench_run(args)
