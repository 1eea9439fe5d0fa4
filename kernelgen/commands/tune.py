"""``kernelgen tune FILE --size N=4096 [--task ID] [--target sm_90] [--mode quick|full]``: the
autotuning of :mod:`kernelgen.gpu.tune` for one kernel AST.

Everywhere it prints the search space and what pruning drops (the checker, fewer elements than
threads, compile failures and the target's shared-memory limit: compiling needs no GPU). On a
GPU, with ``--task`` (whose inputs and reference the candidates are timed and verified with),
it then times the candidates at the sizes given (default: the task's bench sizes), verifies
the fastest like the benchmark does and prints the choice; without a GPU it says that timing
needs one and exits 0.

A task with calls (``variants``: dtypes, optional tensors, choices) is tuned call by call
(:mod:`kernelgen.gpu.calls`), and what fits one call need not fit another (an f32 call's tiles
take twice an f16 call's shared memory): with ``--task`` the listing prunes each call's
bucket as the benchmark does, so it shows what each call keeps.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Sequence

from kernelgen.commands import UsageError
from kernelgen.commands.check import parse_assignments, read_source

if TYPE_CHECKING:
    from kernelgen.gpu.tune import Config, Variant
    from kernelgen.lang import nodes as L
    from kernelgen.task.spec import Task


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a kernel AST as JSON ('-' reads standard input)")
    parser.add_argument("--size", action="append", default=[], metavar="NAME=VALUE",
                        help="a size the candidates are compiled and timed for (repeat for each); "
                             "multiples of 16 are specialized as at launch")
    parser.add_argument("--task", default=None, metavar="ID",
                        help="the task whose inputs and reference time and verify the candidates (GPU)")
    parser.add_argument("--target", default=None, metavar="SM",
                        help="sm_80, sm_86, sm_89 or sm_90 (default: the GPU present, else sm_90)")
    parser.add_argument("--mode", choices=("quick", "full"), default="quick", help="the search space (default: quick)")
    parser.add_argument("--jobs", type=int, default=None, metavar="N", help="compile processes (default: half the CPUs, "
                                                                           "at most 8)")


def run(args: argparse.Namespace) -> int:
    from kernelgen.gpu.compile import divisible_params, resolve_options
    from kernelgen.check.checker import check
    from kernelgen.host.plan import plan_for_sizes
    from kernelgen.lang.parse import parse_kernel
    from kernelgen.gpu.devices import gpu_unavailable_reason
    from kernelgen.gpu.tune import NO_VARIANT, search_space
    from kernelgen.lang.generic import bindings, describe as describe_binding

    answer = read_source(args.file)
    kernel = parse_kernel(answer)
    checked = check(kernel)
    if kernel.is_program:
        print(f"{args.file}: a program of {len(kernel.launches)} launches is not tuned (it runs as written; "
              "see kernelgen.gpu.tune)")
        return 0
    target = resolve_options(checked, args.target, None, 3).target
    sizes = parse_assignments(args.size, "size")
    reason = gpu_unavailable_reason()
    if reason is None and args.task is not None:
        return _tune_on_gpu(args.task, answer, sizes, target, args.mode)
    space = search_space(kernel, args.mode)
    print(f"search space ({args.mode}): {len(space)} configurations, the as-written one first")
    for config in space:
        print(f"  {config.label()}")
    why = reason if reason is not None else "no --task given (its inputs and reference time and verify the candidates)"
    task = None if args.task is None else _task(args.task, sizes)
    if task is not None and task.variants:
        _list_calls(task, answer, kernel, target, args.mode, args.jobs)
        print(f"timing each call's kept candidates needs a GPU: {why}")
        return 0
    if kernel.dtypes:
        default = describe_binding(bindings(kernel)[0])
        print(f"{kernel.name} is generic: compiled with its first dtype binding ({default}); "
              "--task ID prunes for each of a task's calls")
    divisible = divisible_params(plan_for_sizes(checked, sizes, _stand_in_scalars(kernel, sizes))) if sizes else ()
    kept = _list_pruned("", kernel, target, args.mode, args.jobs, space, divisible, NO_VARIANT)
    print(f"timing the {kept} kept candidates needs a GPU and a task: {why}")
    return 0


def _task(task_id: str, sizes: dict[str, int]) -> Task:
    """The task, its bench sizes overridden by ``--size``."""
    from kernelgen.task.spec import get_task

    task = get_task(task_id)
    return task.model_copy(update={"bench_sizes": {**task.bench_sizes, **sizes}}) if sizes else task


def _list_calls(task: Task, answer: str, kernel: L.Kernel, target: str, mode: str, jobs: int | None) -> None:
    """Each listed call's bucket pruned and compiled as the benchmark tunes it (its dtype binding,
    presence flags and choices, the params that are multiples of 16 at its sizes), from its own
    search space (a meta ``when`` gives each binding its own as-written values)."""
    from kernelgen.gpu.calls import call_buckets
    from kernelgen.gpu.tune import search_space
    from kernelgen.task.case import Case, Settings

    for bucket in call_buckets(Case(task, answer, Settings(), kernel=kernel)):
        _list_pruned(f"call {bucket.task.variant.name} ({bucket.label}): ", kernel, target, mode, jobs,
                     search_space(kernel, mode, bucket.variant), bucket.divisible, bucket.variant)


def _list_pruned(prefix: str, kernel: L.Kernel, target: str, mode: str, jobs: int | None, space: Sequence[Config],
                 divisible: Sequence[str], variant: Variant) -> int:
    """Prune and compile ``space`` for one binding of the kernel, print what is dropped and why;
    returns how many candidates are kept."""
    from kernelgen.gpu.tune import describe, prune, search

    _, checker_pruned = prune(kernel, space, variant)
    _, pruned = search(kernel, mode, target, None, divisible, jobs, space, variant)
    kept = len(space) - len(pruned)
    print(f"{prefix}pruned for {target}: {len(pruned)} dropped ({len(checker_pruned)} before compiling), {kept} kept")
    for line in describe([], pruned):
        print(line)
    return kept


def _stand_in_scalars(kernel, sizes: dict[str, int]) -> dict[str, float]:
    """A value for each float scalar the kernel takes (eps, a bound): which params are multiples of
    16, all that compiling needs of the call, does not depend on them. An integer scalar can shape
    the launch, so it is given with ``--size NAME=VALUE`` like a size."""
    from kernelgen.lang.generic import FLOAT_DTYPES

    variables = {v.name for v in kernel.dtypes}  # a generic scalar: a float stand-in serves any binding
    scalars = [i for i in kernel.inputs if i.is_plain and i.shape is None and i.name not in sizes]
    integers = [i.name for i in scalars if i.dtype not in FLOAT_DTYPES and i.dtype not in variables]
    if integers:
        raise UsageError(f"{kernel.name} takes the integer scalar{'s' if len(integers) > 1 else ''} "
                         f"{', '.join(integers)}: give {'each' if len(integers) > 1 else 'it'} with --size NAME=VALUE",
                         code="missing_scalar")
    return {i.name: 0.0 for i in scalars}


def _tune_on_gpu(task_id: str, answer: str, sizes: dict[str, int], target: str, mode: str) -> int:
    """The benchmark's own path for one answer: verify as written, tune, time; print the choice."""
    from kernelgen.gpu.devices import executor_env, worker_gpu
    from kernelgen.gpu.executor import Executor
    from kernelgen.harness.pipeline import Settings, evaluate_answer

    task = _task(task_id, sizes)
    with Executor(env=executor_env(worker_gpu())) as executor:
        result = evaluate_answer(task, answer, Settings(target=target, gpu=True, executor=executor, tune=mode))
    if not result.ok:
        first = result.first_diagnostic()
        print(f"{result.outcome.value} at {result.stage}: {first}")
        return 1
    print(result.artifacts.get("tuning", "").rstrip())
    if result.tuning is not None and result.timing is not None:
        t = result.tuning
        written = "not timed" if t.as_written_ms is None else f"{t.as_written_ms:.4f} ms"
        print(f"as written: {written}; tuned: {result.timing.kernel_ms:.4f} ms "
              f"({result.timing.speedup:.2f}x eager); tuning took {t.seconds:.1f} s")
    return 0
