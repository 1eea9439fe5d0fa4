"""The GPU stages of a task with calls (:mod:`kernelgen.task.variants`): each call verified with guard
bands and timed.

Verification is :func:`kernelgen.gpu.case.guarded_launches` on the kernel's own arguments as the
wrapper binds the call (converted for ``dtype=``, flattened by the view, zeros for an omitted
tensor), the outputs shaped back as the call's before the comparison. The parent compiles the
variant a launch needs from the call's shapes alone (meta-device tensors: nothing drawn).

Timing runs the kernel as a user calls it, through the wrapper
(:class:`kernelgen.gpu.function.KernelFunction`: binding, the conversions ``dtype=``
asks for, the launch, the result's shaping), against PyTorch eager called with the same
arguments: both sides pay their host work. Each call is timed; the case's timing is the first
call's, every call's is in the result's ``extra["call_timings"]``.

Tuning (``--kg-tune``) searches each listed call on its own, at the bench sizes: one kernel serves
calls of several dtypes and presence flags, and what fits one (an f16 call's shared memory at
large tiles) may not fit another (the same tiles in f32), as Triton's ``@autotune`` keys its choice
on its arguments' dtypes. A call's bucket is :func:`kernelgen.gpu.function.call_bucket`'s, the
label the wrapper looks its configuration up by; a candidate is timed through the wrapper with
the configuration forced and verified, before it is kept, on every size assignment of its call
(its own blocks' targeted draws included), as the configuration as written was.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Mapping

from kernelgen.lang import nodes as L
from kernelgen.gpu.tune import Config, Variant
from kernelgen.task.case import Case
from kernelgen.errors import Diagnostic, WrongResult
from kernelgen.gpu.case import (COMPILED_TIMEOUT_S, FLAG_SPEEDUP, REPETITIONS, WARMUP, _eager_times, _to_device,
                                bench_inputs, guarded_launches, record_times, reference_out_of_memory,
                                roofline_fraction)
from kernelgen.task.results import Timing
from kernelgen.task.spec import Task
from kernelgen.gpu.timing import call_retried_alone, event_times, flush_buffer, gpu_turn, harness_work, restoring
from kernelgen.task.variants import bound_call, named, outputs_by_name
from kernelgen.task.magnitude import magnified
from kernelgen.task.verify import compare_outputs, inputs_as_reference, make_inputs, reference_call


def compiled_for_call(task: Task, kernel: L.Kernel, sizes: Mapping[str, int], target: str, seed: int = 0,
                      config: Config | None = None) -> Any:
    """The kernel's variant for one call (variant ``task``) at these sizes, compiled as its
    launch needs it (multiple-of-16 integer params specialized), planned from shapes alone;
    with ``config``, a tuned configuration's meta values, warps and stages."""
    from kernelgen.gpu.compile import compile_kernel, divisible_params
    from kernelgen.host.plan import plan_launch

    meta, warps, stages = (None, None, None) if config is None else \
        (dict(config.meta), config.num_warps, config.num_stages)
    call, checked = bound_call(task, kernel, make_inputs(task, sizes, seed, shapes_only=True), meta)
    return compile_kernel(checked, target=target, num_warps=warps, num_stages=stages,
                          divisible_by_16=divisible_params(plan_launch(checked, call.args)))


def verify_call_gpu(case: Case, task: Task, sizes: Mapping[str, int], extreme: bool = False,
                    num_sms: int | None = None, config: Config | None = None) -> None:
    """One call (variant ``task``) on one size assignment (under ``num_sms`` where given), in
    the executor's child; with ``config``, as that tuned configuration runs it."""
    compiled = compiled_for_call(task, case.kernel, sizes, case.settings.target, case.settings.seed, config)
    problems = call_retried_alone(case.settings.executor, verify_call_job, task, case.kernel, compiled, dict(sizes),
                                  case.settings.seed, extreme, num_sms, None if config is None else dict(config.meta),
                                  timeout=case.settings.timeout_s)
    if problems:
        raise named(task, WrongResult(problems))


def verify_call_job(task: Task, kernel: L.Kernel, compiled: Any, sizes: dict[str, int], seed: int,
                    extreme: bool = False, num_sms: int | None = None,
                    meta: dict[str, int] | None = None) -> list[Diagnostic]:
    """In the executor's child: the call bound on the device, run with guard bands (under
    ``num_sms`` where given), its outputs shaped back and compared with the reference."""
    import torch

    from kernelgen.host.plan import verified_num_sms

    device = torch.device("cuda", torch.cuda.current_device())
    with harness_work():  # on the CPU, before the turn
        drawn = make_inputs(task, sizes, seed, extreme=extreme)
        plain = make_inputs(task, sizes, seed) if extreme and task.extreme_domains else None
    with gpu_turn(), verified_num_sms(num_sms):  # never inside another worker's timed window on this GPU
        with harness_work(), reference_out_of_memory(task, sizes):  # an extreme draw's scale is chosen on the GPU
            inputs, atol_scale = magnified(task, _to_device(drawn, device), extreme,
                                          None if plain is None else lambda: _to_device(plain, device))
            before = {name: value.clone() if isinstance(value, torch.Tensor) else value
                      for name, value in inputs.items()}
            expected, reference_after = reference_call(task, inputs)
        call, checked = bound_call(task, kernel, inputs, meta)
        outputs, written, problems = guarded_launches(checked, compiled, call.args, device)
        shaped = outputs_by_name(task, call.finish(outputs))
        shaped_written = outputs_by_name(task, call.finish(written, copy=False))
        with harness_work():
            problems += inputs_as_reference(task, before, reference_after, inputs, atol_scale)
            return problems + compare_outputs(task, shaped, expected, inputs, sizes, shaped_written, atol_scale,
                                              drawn=before)


def time_call_job(task: Task, kernel: L.Kernel, sizes: dict[str, int], seed: int,
                  repetitions: int = REPETITIONS, torch_compile: bool = False,
                  configs: Mapping[str, Config] | None = None) -> dict[str, Any]:
    """In the executor's child: event times (ms) of the kernel called through its wrapper (with
    the tuned ``configs``, by bucket label), of PyTorch eager and, with ``torch_compile``, of
    torch.compile of the eager code."""
    from kernelgen.gpu.function import KernelFunction, prepared_outputs

    inputs = bench_inputs(task, sizes, seed)
    function = KernelFunction(kernel, configs)
    flush = flush_buffer()
    # An in-place call's inputs are set back before each call (the kernel writes no other
    # input), eager's and torch.compile's too.
    restore = restoring(inputs) if task.in_place else None
    with prepared_outputs(restore) as prepare:
        kernel_ms = event_times(lambda: function(**inputs), flush, repetitions, WARMUP, prepare)
    return {"kernel_ms": kernel_ms, **_eager_times(task, inputs, flush, repetitions, torch_compile, restore)}


def time_calls(case: Case) -> Timing:
    """Every call timed at the task's bench sizes; the first call's timing is the case's."""
    timings: dict[str, Timing] = {}
    sizes = dict(case.task.bench_sizes)
    timeout = max(case.settings.timeout_s, COMPILED_TIMEOUT_S if case.settings.torch_compile else 120.0)
    for task in case.task.variant_tasks():
        measured = call_retried_alone(case.settings.executor, time_call_job, task, case.kernel, sizes,
                                      case.settings.seed, torch_compile=case.settings.torch_compile,
                                      configs=case.call_configs, timeout=timeout)
        kernel_ms = statistics.median(measured["kernel_ms"])
        eager_ms = statistics.median(measured["eager_ms"])
        compiled_ms = statistics.median(measured["compiled_ms"]) if "compiled_ms" in measured else None
        seconds = kernel_ms / 1e3
        timings[task.variant.name] = Timing(
            variant=task.variant.name, sizes=sizes, kernel_ms=kernel_ms, eager_ms=eager_ms, speedup=eager_ms / kernel_ms,
            compiled_ms=compiled_ms, speedup_vs_compiled=compiled_ms / kernel_ms if compiled_ms else None,
            gbps=task.bytes_moved(sizes) / seconds / 1e9, tflops=task.flop_count(sizes) / seconds / 1e12,
            roofline_fraction=roofline_fraction(task, sizes, seconds, measured["bandwidth"], case.settings.target),
            flagged=eager_ms / kernel_ms > FLAG_SPEEDUP)
        if len(timings) == 1:
            record_times(case.extra, measured)
            case.artifacts["times"] = f"device: {measured['device']}\n"
        case.artifacts["times"] += (f"{task.variant.name}: kernel_ms: {measured['kernel_ms']}\n"
                                    f"{task.variant.name}: eager_ms: {measured['eager_ms']}\n")
    case.extra["call_timings"] = {name: timing.model_dump() for name, timing in timings.items()}
    return next(iter(timings.values()))


# The bench call's inputs and the wrapper in the executor's child, kept between one call's
# candidates (making a problem's inputs costs more than timing a candidate).
_TUNE_CALL: dict[tuple[str, str, str, int], tuple[dict[str, Any], Any, Any]] = {}


def candidate_call_job(task: Task, kernel: L.Kernel, sizes: dict[str, int], seed: int, config: Config) -> float:
    """In the executor's child: the median time (ms) of the call through its wrapper with
    ``config`` forced (its outputs prepared before each call, as :func:`time_call_job` times it)."""
    from kernelgen.gpu.function import KernelFunction, prepared_outputs
    from kernelgen.gpu.timing import AUTOTUNE_REPETITIONS, AUTOTUNE_WARMUP

    key = (task.id, task.variant.name if task.variant else "", repr(sorted(sizes.items())), seed)
    if key not in _TUNE_CALL or _TUNE_CALL[key][1].kernel != kernel:
        _TUNE_CALL.clear()
        inputs = bench_inputs(task, sizes, seed)
        # An in-place call's inputs are set back as drawn before each call of every candidate.
        _TUNE_CALL[key] = inputs, KernelFunction(kernel), restoring(inputs) if task.in_place else None
    inputs, function, restore = _TUNE_CALL[key]
    function.force = config
    with prepared_outputs(restore) as prepare:
        return statistics.median(event_times(lambda: function(**inputs), flush_buffer(), AUTOTUNE_REPETITIONS,
                                             AUTOTUNE_WARMUP, prepare))


@dataclass(frozen=True)
class CallBucket:
    """One listed call at the bench sizes, bound on meta tensors: its ``task``, its bucket's
    ``label``, the ``sizes`` the kernel sees, its ``variant`` and the integer params its launch
    specializes (``divisible``)."""

    task: Task
    label: str
    sizes: dict[str, int]
    variant: Variant
    divisible: tuple[str, ...]


def call_buckets(case: Case) -> list[CallBucket]:
    """Each listed call's bucket, in order; none for a program of several launches (it runs as
    written)."""
    from kernelgen.gpu.compile import divisible_params
    from kernelgen.gpu.function import call_bucket
    from kernelgen.gpu.tune import bucket_label
    from kernelgen.host.plan import plan_launch

    buckets = []
    for task in case.task.variant_tasks():
        call, checked = bound_call(task, case.kernel, make_inputs(task, task.bench_sizes, case.settings.seed,
                                                                  shapes_only=True))
        if checked.kernel.is_program:
            return []
        sizes, variant = call_bucket(case.kernel, call)
        buckets.append(CallBucket(task, bucket_label(sizes, variant), sizes, variant,
                                  tuple(divisible_params(plan_launch(checked, call.args)))))
    return buckets


def tune_calls(case: Case) -> None:
    """Each listed call tuned at the bench sizes (see the module doc): the kept configurations
    go to ``case.call_configs`` (by bucket label) for the timing; the first call's choice is the
    case's ``tuning`` (its seconds every call's), every call's is in ``extra["call_tunings"]``."""
    from kernelgen.gpu.tune import Candidate, TuneCache, cached_tune, choice_lines, gpu_name
    from kernelgen.task.draws import case_draws

    buckets = call_buckets(case)
    if not buckets:
        case.artifacts["tuning"] = "not tuned: a program of several launches runs as written\n"
        return
    settings, mode = case.settings, case.settings.tune
    timeout = max(settings.timeout_s, 120.0)
    records: dict[str, dict[str, Any]] = {}
    lines: list[str] = []
    for bucket in buckets:
        task = bucket.task

        def time_candidate(candidate: Candidate, _compiled: Any, task: Task = task) -> float:
            return settings.executor.call(candidate_call_job, task, case.kernel, dict(task.bench_sizes),
                                          settings.seed, candidate.config, timeout=timeout)

        def verify(candidate: Candidate, task: Task = task) -> None:
            for draw in case_draws(task, candidate.checked, settings.shapes, settings.seed, True):
                verify_call_gpu(case, task, draw.sizes, draw.extreme, draw.num_sms, candidate.config)

        choice = cached_tune(TuneCache(), case.kernel, gpu_name(settings.target), bucket.sizes, mode, settings.target,
                             time_candidate, verify, bucket.divisible, bucket.variant)
        if choice.config != choice.as_written:
            case.call_configs[bucket.label] = choice.config
        records[task.variant.name] = {"bucket": bucket.label, **choice.record(mode)}
        lines += [f"call {task.variant.name} (bucket {bucket.label}):", *(f"  {line}" for line in choice_lines(choice))]
    first = next(iter(records.values()))
    # The first call's choice, with the seconds every call's search took (the case's tuning time).
    case.tuning = {**{key: value for key, value in first.items() if key != "bucket"},
                   "seconds": sum(record["seconds"] for record in records.values())}
    case.extra["call_tunings"] = records
    case.artifacts["tuning"] = "\n".join(lines) + "\n"
