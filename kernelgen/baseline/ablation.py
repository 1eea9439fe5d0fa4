"""The raw-LLM baseline, judged like the pipeline: same tasks, same shapes, same checks.

The ablation asks a model for Triton Python instead of a kernel AST and measures what the
constrained pipeline buys. To be fair it differs from the pipeline only where it must: the
answer goes through :mod:`kernelgen.baseline.answer`'s extraction and static rules instead of the
parser and checker, and runs in :mod:`kernelgen.baseline.sandbox` (Triton's interpreter without a GPU,
the GPU with one) instead of the compiler and executor. Sizes are drawn by the same hypothesis
strategy from the same seed, inputs are made by :func:`kernelgen.task.verify.make_inputs` (both
signs, the task's domains), outputs are compared by :func:`kernelgen.task.verify.compare_outputs`
with the same tolerances and anti-gaming rules, inputs must come back unchanged, and timings
use CUDA events with the L2 flushed, against the same PyTorch eager reference.

The ``reference`` answer is the task's golden AST emitted as Triton Python
(:func:`kernelgen.emit.module.emit_triton`), so the baseline runs without a model too.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from typing import Any

from kernelgen.baseline.answer import EntryPoint, check_answer
from kernelgen.baseline.interpreter_races import OUT_OF_BOUNDS
from kernelgen.baseline.timed import CHECKED_REPETITIONS
from kernelgen.lang import nodes as L
from kernelgen.lang.generic import bound_variables
from kernelgen.check.checker import check
from kernelgen.emit.module import emit_triton
from kernelgen.errors import Diagnostic, Outcome
from kernelgen.host.plan import TORCH_DTYPES
from kernelgen.task.case import Settings
from kernelgen.task.random_sizes import draw_sizes
from kernelgen.task.results import CaseResult, GenerationInfo, Timing
from kernelgen.task.ranges import Domain
from kernelgen.task.spec import Task
from kernelgen.task.verify import compare_outputs, make_inputs, reference_call, reference_leaves

# Triton's interpreter runs each program of the grid in Python, hundreds of times slower than
# the GPU: CPU mode checks fewer and smaller shapes, with more time.
INTERPRETER_SHAPES = 3
INTERPRETER_MAX_SIZE = 128
INTERPRETER_TIME_FACTOR = 3
# The most bytes an answer's outputs may take, as a multiple of what its calls' tensors take.
OUTPUT_BYTES_FACTOR = 4
# A kernel time below the roofline's floor divided by this is no measurement (outputs still in
# L2 after the timed window can make an honest small kernel look up to ~2x faster than the floor).
IMPLAUSIBLE_ROOFLINE = 3.0


def reference_answer(task: Task) -> str:
    """The golden AST as a model's baseline answer: Triton Python in a fenced block, its
    launcher named after the task. A generic golden is emitted once per dtype binding its calls
    select (kernels and launchers named after the binding) under a launcher that picks one by
    the call's dtypes (:func:`dispatching_launcher`)."""
    golden = task.golden
    if not golden.dtypes:
        return f"```python\n{emit_triton(check(golden), entry=task.id)}```\n"
    from kernelgen.lang.generic import instantiate
    from kernelgen.task.variants import call_bindings

    # Inputs of a variable a dtype= argument binds are cast to it by the launcher (as torch casts).
    bound = {i.binds for i in golden.inputs if i.role == "dtype"}
    converted = [i.name for i in golden.inputs if i.shape is not None and i.dtype in bound]
    parts: list[str] = []
    branches: list[tuple[dict[str, str], str]] = []
    for binding in call_bindings(task, golden):
        suffix = "_".join(binding.values())
        variant = instantiate(golden, binding).model_copy(update={"name": f"{golden.name}_{suffix}"})
        entry = f"{task.id}_{suffix}"
        parts.append(emit_triton(check(variant), entry=entry, converted_inputs=converted))
        branches.append((binding, entry))
    return f"```python\n{''.join(parts)}\n{dispatching_launcher(task.id, golden, branches)}```\n"


def dispatching_launcher(entry: str, kernel: L.Kernel, branches: list[tuple[dict[str, str], str]]) -> str:
    """A launcher taking the kernel's inputs that calls the launcher of the call's binding: a
    variable a ``dtype=`` argument binds takes that dtype where the call passes one, else the
    dtype of the first required tensor of that variable, else its first dtype (the calls give
    the tensors of one variable one dtype; PyTorch's promotion of several is the kernelgen
    wrapper's)."""
    names = [i.name for i in kernel.inputs]
    lines = [f"def {entry}({', '.join(names)}):"]
    for variable in bound_variables(kernel):
        source = next((i.name for i in kernel.inputs if i.dtype == variable.name and i.is_plain
                       and i.shape is not None and not i.optional), None)
        fallback = f"{source}.dtype" if source else f"torch.{TORCH_DTYPES[variable.of[0]]}"
        chooser = next((i.name for i in kernel.inputs if i.role == "dtype" and i.binds == variable.name), None)
        value = f"{chooser} if {chooser} is not None else {fallback}" if chooser else fallback
        lines.append(f"    {variable.name}_ = {value}")
    for binding, launcher in branches:
        test = " and ".join(f"{name}_ == torch.{TORCH_DTYPES[dtype]}" for name, dtype in binding.items())
        lines += [f"    if {test}:", f"        return {launcher}({', '.join(names)})"]
    listed = ", ".join(f"{name}_" for name in binding)
    lines.append(f'    raise ValueError(f"no variant of {entry} for the dtypes {{({listed},)}}")')
    return "\n".join(lines) + "\n"


def interpreter_limitation(task: Task) -> str | None:
    """Why a task's baseline cannot be judged in Triton's interpreter, or None (a task with
    calls: when none of them can; :func:`evaluate_baseline` leaves out those that cannot).

    Triton 3.6's interpreter computes bf16 arithmetic, dots and casts on the raw bits, so a
    correct bf16 kernel gives wrong numbers there; those cases need a GPU.
    """
    reasons = [_bf16_limitation(concrete) for concrete in task.variant_tasks()]
    return reasons[0] if all(reasons) else None


def _bf16_limitation(task: Task) -> str | None:
    specs = task.signature.inputs + task.signature.outputs
    if any(spec.dtype == "bf16" for spec in specs):
        return "bf16 baseline cases need a GPU: Triton's interpreter computes bf16 on the raw bits"
    return None


def rule_diagnostics(task: Task, answer: str) -> list[Diagnostic] | None:
    """What the static rules find wrong with a baseline answer, for a repair round."""
    verdict = check_answer(answer, EntryPoint.for_task(task))
    return None if verdict.ok else [Diagnostic(f"line {d.line}:{d.col}", d.code, d.message)
                                    for d in verdict.diagnostics]


def _failure(outcome: Outcome, stage: str, diagnostics: list[Diagnostic]) -> dict[str, Any]:
    return {"outcome": outcome, "stage": stage, "diagnostics": [d.to_dict() for d in diagnostics]}


def evaluate_baseline(task: Task, answer: str, settings: Settings, *, provider: str = "reference",
                      model: str = "golden", sample: int = 0, generation: GenerationInfo | None = None,
                      prompt: str | None = None) -> CaseResult:
    """Judge one baseline answer; never raises for a bad answer, nor for a crash of kernelgen
    itself on it (``harness_error``)."""
    from kernelgen.baseline.sandbox import run_calls_in_sandbox
    from kernelgen.gpu.timing import retried_alone

    start = time.perf_counter()
    artifacts = {"answer": answer, **({"prompt": prompt} if prompt is not None else {})}
    fields: dict[str, Any] = {"outcome": Outcome.OK}
    timing = None
    extra: dict[str, Any] = {}
    sizes_checked: list[dict[str, int]] = []
    stage = "rules"
    try:
        verdict = check_answer(answer, EntryPoint.for_task(task))
        artifacts["code"] = verdict.code
        if not verdict.ok:
            fields = _failure(verdict.outcome, "rules", rule_diagnostics(task, answer) or [])
        else:
            # Every call of the task (those Triton's interpreter can judge, without a GPU) on
            # every size assignment, in one sandboxed process; the first call is timed.
            sizes_checked, concrete, calls = _checked_calls(task, settings.seed, settings.shapes, settings.gpu)
            timed_args = (make_inputs(concrete[0], task.bench_sizes, settings.seed, bench=True)
                          if settings.gpu and settings.time_kernels else None)
            timed = list(timed_args.values()) if timed_args is not None else None
            # The timed call's tensors (in some of its timed repetitions at random; without
            # timing, the smallest call's, after the others: in Triton's interpreter a call of
            # the largest sizes costs seconds) are refilled in place with new values and called
            # again: a result kept from an earlier call is stale there.
            smallest = min(range(len(calls)), key=lambda i: _elements(calls[i][1]))
            again = (_refilled(concrete[0], timed_args, task.bench_sizes, settings.seed, True)
                     if timed is not None else _refilled(*calls[smallest], settings.seed, False))
            stage = "sandbox"
            run = retried_alone(lambda: run_calls_in_sandbox(
                verdict.code, task.id, [list(c.values()) for _, c, _ in calls],
                timeout_s=settings.timeout_s * (1 if settings.gpu else INTERPRETER_TIME_FACTOR),
                device="cuda" if settings.gpu else "interpreter", timed_inputs=timed, refill=list(again[1].values()),
                refill_call=smallest, mixed=_mixed(concrete[0], timed_args),
                output_bytes_limit=_output_bytes_limit([*calls] + [again] * CHECKED_REPETITIONS),
                unsafe=settings.unsafe_sandbox), timed_out=lambda result: result.outcome is Outcome.TIMEOUT)
            artifacts["sandbox"] = run.stderr_tail
            extra["sandbox"] = run.isolation  # what walled the answer in (bubblewrap, or --unsafe-sandbox's none)
            if not run.ok and run.outcome is Outcome.TIMEOUT and not settings.gpu:
                # Triton's interpreter ran out of its time: not judged on the CPU (a GPU judges it).
                fields = _failure(Outcome.NOT_JUDGED, "sandbox", [Diagnostic(
                    "", "timeout", f"Triton's interpreter: {run.error}; not judged on the CPU")])
            elif run.outcome is Outcome.WRONG_RESULT:  # a race or an access out of bounds: its only sources
                fields = _failure(run.outcome, "verify", [Diagnostic("", _finding(run.error), run.error)])
            elif not run.ok:
                fields = _failure(run.outcome, "sandbox", [Diagnostic("", run.outcome.value, run.error)])
            else:
                stage = "verify"
                problems = _compare(calls, run) or _compare_again(again, run)
                if not problems and settings.gpu:
                    problems, extra["interpreter"] = _in_the_interpreter(task, verdict.code, settings)
                if problems:
                    fields = _failure(Outcome.WRONG_RESULT, "verify", problems)
                elif run.times_ms:
                    stage = "time"
                    extra["kernel_times_ms"] = list(run.times_ms)
                    if statistics.median(run.times_ms) <= 0:
                        fields = _failure(Outcome.IMPLAUSIBLE_TIME, "time", [Diagnostic(
                            "", "implausible_time", "the kernel's median time is 0 ms: no GPU is that fast")])
                    else:
                        timing = _timing(concrete[0], settings, run.times_ms, extra)
                        if timing.roofline_fraction > IMPLAUSIBLE_ROOFLINE:
                            fields = _failure(Outcome.IMPLAUSIBLE_TIME, "time", [_implausible(timing)])
    except Exception as exc:  # noqa: BLE001 - kernelgen's own crash is this case's outcome, counted
        fields = CaseResult.crash_fields(exc, stage)
    return CaseResult(task=task.id, tier=task.tier, track="baseline", provider=provider, model=model,
                      sample=sample, mode="gpu" if settings.gpu else "cpu", target=settings.target,
                      sizes_checked=sizes_checked, generation=generation or GenerationInfo(), timing=timing,
                      artifacts=artifacts, extra=extra, duration_s=time.perf_counter() - start, **fields)


def _checked_calls(task: Task, seed: int, shapes: int, gpu: bool
                   ) -> tuple[list[dict[str, int]], list[Task], list[tuple[Task, dict[str, Any], dict[str, int]]]]:
    """The size assignments a mode checks, the task's listed calls it runs (without a GPU, those
    Triton's interpreter can: no bf16) and every call with its inputs: each listed call on each
    assignment, then the calls no listed call makes on the smallest (checked, never timed)."""
    from kernelgen.task.variants import unlisted_calls

    if gpu:
        sizes_checked = draw_sizes(task, shapes, seed, True)
    else:
        small = task.model_copy(update={"sizes": {name: r.model_copy(update={"cpu_max": min(
            r.cpu_max or INTERPRETER_MAX_SIZE, INTERPRETER_MAX_SIZE)}) for name, r in task.sizes.items()}})
        sizes_checked = draw_sizes(small, min(shapes, INTERPRETER_SHAPES), seed, False)
    concrete = [t for t in task.variant_tasks() if gpu or _bf16_limitation(t) is None]
    calls = [(t, make_inputs(t, sizes, seed), sizes) for t in concrete for sizes in sizes_checked]
    smallest_sizes = min(sizes_checked, key=lambda sizes: task.footprint(sizes)[0])
    calls += [(t, make_inputs(t, smallest_sizes, seed), smallest_sizes) for t in unlisted_calls(task)
              if gpu or _bf16_limitation(t) is None]
    return sizes_checked, concrete, calls


def _in_the_interpreter(task: Task, code: str, settings: Settings) -> tuple[list[Diagnostic], str]:
    """GPU mode's second look at an answer the GPU passed, as the pipeline's GPU mode runs its
    interpreter after the GPU (:func:`kernelgen.harness.pipeline.stage_verify`): CPU mode's calls in
    Triton's interpreter, which finds what a GPU's schedule or memory hides only sometimes. Three
    findings fail the answer: a race between programs of a launch, an access outside every tensor
    the launch was given (on a GPU it reads another allocation's memory), and an output element left as
    ``torch.empty``'s poison (NaN; an integer's largest value) where the reference has another
    value, which no program stored (on a GPU it holds whatever the memory held, often a right
    value a freed tensor left there). Other differences are left to the GPU, which judged the
    values: Triton's interpreter is not kernelgen's, and its arithmetic is not the GPU's. An
    answer the interpreter cannot run (bf16 only, a construct it lacks, past its time) is left to
    the GPU too. On a GPU the interpreter runs on CUDA tensors, so the answer takes the path it took
    on the GPU (one that branches on ``x.is_cuda``, or asserts it, is looked at all the same).
    Returns the problems and a line for the case's record."""
    import torch

    from kernelgen.baseline.sandbox import run_calls_in_sandbox

    _, _, calls = _checked_calls(task, settings.seed, settings.shapes, False)
    if not calls:
        return [], "not run: Triton's interpreter cannot compute any of the task's calls (bf16)"
    device = "cuda_interpreter" if torch.cuda.is_available() else "interpreter"
    run = run_calls_in_sandbox(code, task.id, [list(c.values()) for _, c, _ in calls],
                               timeout_s=settings.timeout_s * INTERPRETER_TIME_FACTOR, device=device,
                               output_bytes_limit=_output_bytes_limit(calls), unsafe=settings.unsafe_sandbox)
    if run.outcome is Outcome.WRONG_RESULT:
        code = _finding(run.error)
        return [Diagnostic("", code, f"in Triton's interpreter (CPU mode's calls): {run.error}")], code.replace("_", " ")
    if not run.ok:
        return [], f"not judged: {run.outcome.value}: {run.error[:300]}"
    problems = _unwritten(calls, run)
    return problems, "unwritten output" if problems else "no race, every output element written"


def _finding(error: str) -> str:
    """The code of what the sandbox's interpreter found (:mod:`kernelgen.baseline.interpreter_races`)."""
    return "out_of_bounds" if error.startswith(OUT_OF_BOUNDS) else "race"


def _unwritten(calls: list[tuple[Task, dict[str, Any], dict[str, int]]], run) -> list[Diagnostic]:
    """The first output of an interpreter run holding ``torch.empty``'s poison where the reference
    holds another value, named by its call and first such element."""
    import torch

    for (task, inputs, _), outputs in zip(calls, run.calls):
        reference, _ = reference_call(task, inputs)
        call = f"call {task.variant.name}: " if task.variant is not None else ""
        for position, (spec, out) in enumerate(zip(task.signature.outputs, outputs)):
            expected = reference.get(spec.name)
            if not isinstance(out, torch.Tensor) or not isinstance(expected, torch.Tensor) \
                    or out.shape != expected.shape or out.dtype == torch.bool or out.is_complex():
                continue
            if out.is_floating_point():
                # the poison's own bits, a positive quiet NaN: a NaN the interpreter's arithmetic
                # made (0 * inf) is negative on x86, and is one of the differences left to the GPU
                ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[out.element_size()]
                bits = torch.full((1,), float("nan"), dtype=out.dtype).view(ints)
                poison = (out.contiguous().view(ints) == bits) & ~expected.float().isnan()
            else:
                poison = (out == torch.iinfo(out.dtype).max) & (expected.to(out.dtype) != out)
            if poison.any():
                first = tuple(int(i) for i in poison.nonzero()[0])
                where = ", ".join(map(str, first))
                return [Diagnostic(f"/outputs/{position}", "unwritten_output", (
                    f"{call}in Triton's interpreter, {spec.name}[{where}] (of {int(poison.sum())} such elements) "
                    f"is torch.empty's poison ({out[first].item()}), where the reference has "
                    f"{expected[first].item()}: no program stored it (on a GPU it holds what the memory held)"))]
    return []


def _compare(calls: list[tuple[Task, dict[str, Any], dict[str, int]]], run) -> list[Diagnostic]:
    """What is wrong with the first call whose outputs are wrong, named by its variant; which
    inputs a call modified was found by the sandbox's parent, not by the answer's process."""
    for (task, inputs, sizes), outputs, modified in zip(calls, run.calls, run.modified):
        names = [o.name for o in task.signature.outputs]
        call = f"call {task.variant.name}: " if task.variant is not None else ""
        if len(outputs) != len(names):
            return [Diagnostic("/outputs", "wrong_arity", f"{call}the launcher returned {len(outputs)} tensors, "
                               f"the task has {len(names)} outputs {names}")]
        reference, reference_after = reference_call(task, inputs)  # kernelgen's own: a crash here is harness_error
        # An in-place operator's reference changes some inputs: the answer must change those
        # (their values: the output it returns, the target itself) and no other.
        changed = {i for i, (name, value) in enumerate(inputs.items())
                   if not reference_leaves(value, reference_after[name])}
        problems = [Diagnostic(f"/inputs/{i}", "input_modified", f"the answer modified input "
                               f"{task.signature.inputs[i].name}") for i in modified if i not in changed]
        problems += [Diagnostic(f"/inputs/{i}", "input_modified", f"the reference changes input "
                                f"{task.signature.inputs[i].name} in place; the answer left it")
                     for i in sorted(changed - set(modified))]
        problems += _answer_compare(lambda: compare_outputs(task, dict(zip(names, outputs)), reference, inputs, sizes))
        if problems:
            return [Diagnostic(d.path, d.code, call + d.message) for d in problems]
    return []


def _answer_compare(compare) -> list[Diagnostic]:
    """``compare()``, where an output that cannot even be compared (a dtype or shape the
    comparison cannot take) is the answer's wrong result, not kernelgen's crash."""
    try:
        return compare()
    except (RuntimeError, ValueError, TypeError, IndexError) as error:
        return [Diagnostic("/outputs", "uncomparable_output", f"the outputs could not be compared with the "
                           f"reference's: {type(error).__name__}: {error}")]


def _output_bytes_limit(calls: list[tuple[Task, dict[str, Any], dict[str, int]]]) -> int:
    """The most bytes the answer's outputs of these calls may take: a few times what the
    calls' tensors take (inputs as sent, inputs and outputs at their sizes, widest dtypes)."""
    return OUTPUT_BYTES_FACTOR * sum(task.footprint(sizes)[1] + _elements(inputs, nbytes=True)
                                     for task, inputs, sizes in calls) + (1 << 20)


def _elements(inputs: dict[str, Any], nbytes: bool = False) -> int:
    import torch

    return sum(v.numel() * (v.element_size() if nbytes else 1) for v in inputs.values() if isinstance(v, torch.Tensor))


def _mixed(task: Task, inputs: dict[str, Any] | None) -> list[bool] | None:
    """Per timed input, whether a timed call may take its elements one by one from another draw
    (:func:`kernelgen.baseline.timed.mix`; floats are varied anyway): a tensor whose task domain
    holds element by element."""
    import torch

    if inputs is None:
        return None
    return [isinstance(value, torch.Tensor) and (task.domains.get(name) or Domain()).by_element
            for name, value in inputs.items()]


def _refilled(task: Task, inputs: dict[str, Any], sizes: dict[str, int], seed: int,
              bench: bool) -> tuple[Task, dict[str, Any], dict[str, int]]:
    """A call's arguments with new tensor values (another seed's draw, same shapes), its other
    arguments as they were: what its tensors are refilled with for the call made again."""
    import torch

    fresh = make_inputs(task, sizes, seed + 1, bench=bench)
    return task, {name: fresh[name] if isinstance(value, torch.Tensor) else value
                  for name, value in inputs.items()}, sizes


def _compare_again(again: tuple[Task, dict[str, Any], dict[str, int]], run) -> list[Diagnostic]:
    """What is wrong with the calls made again on new values (the refill's, or on a GPU the
    timed repetitions' checked ones: run.again_inputs)."""
    task, inputs, sizes = again
    given = (task, dict(zip(inputs, run.again_inputs)), sizes)
    problems = _compare([given] * len(run.again), dataclasses.replace(run, calls=run.again, modified=run.again_modified))
    return [Diagnostic(d.path, d.code, "called again on the same tensors refilled with new values (on a GPU, in some "
                       "of the timed repetitions at random; a result kept "
                       f"from an earlier call is stale): {d.message}") for d in problems]


def _implausible(timing: Timing) -> Diagnostic:
    floor_ms = timing.kernel_ms * timing.roofline_fraction
    return Diagnostic("", "implausible_time", f"the kernel's median time {timing.kernel_ms:.6f} ms is below "
                      f"1/{IMPLAUSIBLE_ROOFLINE:g} of the least time the GPU's bandwidth and peak FLOP/s allow for "
                      f"the task at its bench sizes ({floor_ms:.6f} ms): the baseline's times are measured in the "
                      "answer's own process, and this one cannot be true")


def _timing(task: Task, settings: Settings, kernel_times: tuple[float, ...], extra: dict[str, Any]) -> Timing:
    """The baseline's GPU times against PyTorch eager, timed in the executor like the pipeline's,
    every repetition of each into ``extra`` as the pipeline's (:func:`kernelgen.gpu.case.record_times`).

    The kernel's times come from the answer's own process (its launcher must run there), so
    they are a claim: the caller rejects one the roofline cannot allow (``implausible_time``)."""
    from kernelgen.gpu.case import COMPILED_TIMEOUT_S, eager_job, record_times, roofline_fraction
    from kernelgen.gpu.timing import call_retried_alone

    sizes = dict(task.bench_sizes)
    timeout = max(settings.timeout_s, COMPILED_TIMEOUT_S if settings.torch_compile else 120.0)
    measured = call_retried_alone(settings.executor, eager_job, task, sizes, settings.seed,
                                  torch_compile=settings.torch_compile, timeout=timeout)
    record_times(extra, measured)  # eager's and torch.compile's; the kernel's are the caller's (its own process)
    kernel_ms = statistics.median(kernel_times)
    eager_ms = statistics.median(measured["eager_ms"])
    compiled_ms = statistics.median(measured["compiled_ms"]) if "compiled_ms" in measured else None
    seconds = kernel_ms / 1e3
    moved, flops = task.bytes_moved(sizes), task.flop_count(sizes)
    return Timing(variant=task.variant.name if task.variant is not None else None, sizes=sizes, kernel_ms=kernel_ms, eager_ms=eager_ms, speedup=eager_ms / kernel_ms,
                  compiled_ms=compiled_ms, speedup_vs_compiled=compiled_ms / kernel_ms if compiled_ms else None,
                  gbps=moved / seconds / 1e9, tflops=flops / seconds / 1e12,
                  roofline_fraction=roofline_fraction(task, sizes, seconds, measured["bandwidth"], settings.target),
                  flagged=eager_ms / kernel_ms > 10.0)
