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
"""

from __future__ import annotations

import statistics
from typing import Any, Mapping

from kernelgen.lang import nodes as L
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


def compiled_for_call(task: Task, kernel: L.Kernel, sizes: Mapping[str, int], target: str, seed: int = 0) -> Any:
    """The kernel's variant for one call (variant ``task``) at these sizes, compiled as its
    launch needs it (multiple-of-16 integer params specialized), planned from shapes alone."""
    from kernelgen.gpu.compile import compile_kernel, divisible_params
    from kernelgen.host.plan import plan_launch

    call, checked = bound_call(task, kernel, make_inputs(task, sizes, seed, shapes_only=True))
    return compile_kernel(checked, target=target, divisible_by_16=divisible_params(plan_launch(checked, call.args)))


def verify_call_gpu(case: Case, task: Task, sizes: Mapping[str, int], extreme: bool = False,
                    num_sms: int | None = None) -> None:
    """One call (variant ``task``) on one size assignment (under ``num_sms`` where given), in
    the executor's child."""
    compiled = compiled_for_call(task, case.kernel, sizes, case.settings.target, case.settings.seed)
    problems = call_retried_alone(case.settings.executor, verify_call_job, task, case.kernel, compiled, dict(sizes),
                                  case.settings.seed, extreme, num_sms, timeout=case.settings.timeout_s)
    if problems:
        raise named(task, WrongResult(problems))


def verify_call_job(task: Task, kernel: L.Kernel, compiled: Any, sizes: dict[str, int], seed: int,
                    extreme: bool = False, num_sms: int | None = None) -> list[Diagnostic]:
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
        call, checked = bound_call(task, kernel, inputs)
        outputs, written, problems = guarded_launches(checked, compiled, call.args, device)
        shaped = outputs_by_name(task, call.finish(outputs))
        shaped_written = outputs_by_name(task, call.finish(written, copy=False))
        with harness_work():
            problems += inputs_as_reference(task, before, reference_after, inputs, atol_scale)
            return problems + compare_outputs(task, shaped, expected, inputs, sizes, shaped_written, atol_scale,
                                              drawn=before)


def time_call_job(task: Task, kernel: L.Kernel, sizes: dict[str, int], seed: int,
                  repetitions: int = REPETITIONS, torch_compile: bool = False) -> dict[str, Any]:
    """In the executor's child: event times (ms) of the kernel called through its wrapper, of
    PyTorch eager and, with ``torch_compile``, of torch.compile of the eager code."""
    from kernelgen.gpu.function import KernelFunction, prepared_outputs

    inputs = bench_inputs(task, sizes, seed)
    function = KernelFunction(kernel)
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
                                      case.settings.seed, torch_compile=case.settings.torch_compile, timeout=timeout)
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
