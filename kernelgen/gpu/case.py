"""A case's GPU stages: verification with guard bands, and timing.

The parent process never touches CUDA: it compiles the variant a launch needs (integer
params that are multiples of 16 are specialized, as Triton's JIT does) and sends the job to the
executor's child (:mod:`kernelgen.gpu.executor`), which makes the inputs from the seed itself (no
tensors cross the pipe), runs kernel and reference there and returns only findings and times.
A fault or a hang fails the case with ``launch_error`` or ``timeout``; the executor replaces
its child and the next case runs in a healthy CUDA context.

Timing: CUDA events around each repetition, the L2 cache flushed before each (a write over a
buffer larger than L2), warm-up first, the median reported. pytest-benchmark receives the
per-repetition event times through a clock that advances by exactly those times
(:func:`report_to_benchmark`), so its statistics are GPU times, not host times of the
inter-process calls.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
import statistics
from typing import Any, Callable, Iterator, Mapping

from kernelgen.lang import nodes as L
from kernelgen.task.case import Case
from kernelgen.check.checker import CheckedKernel, child
from kernelgen.errors import Diagnostic, OutOfMemory, WrongResult
from kernelgen.check.checked import Checked, launches_of
from kernelgen.host.plan import plan_for_sizes, sequence_for_sizes
from kernelgen.check.sequence import nodes
from kernelgen.gpu.autotune_log import autotune_lines
from kernelgen.task.results import Timing
from kernelgen.task.spec import Task
from kernelgen.gpu.timing import (AUTOTUNE_REPETITIONS, AUTOTUNE_WARMUP, call_retried_alone, event_times,
                                  flush_buffer, gpu_turn, harness_work, inductor_timed_by_harness, restoring,
                                  waited_seconds)
from kernelgen.task.magnitude import magnified
from kernelgen.task.verify import (compare_outputs, guard_fill, guarded, guards_intact, inputs_unchanged, make_inputs,
                              run_reference, scalar_values)

WARMUP = 10
REPETITIONS = 100
# torch.compile's modes, tried in order (the first that works is timed).
COMPILE_MODES = ("max-autotune-no-cudagraphs", "default")
# torch.compile with max-autotune benchmarks its own candidates on the first call: minutes.
COMPILED_TIMEOUT_S = 600.0
FLAG_SPEEDUP = 10.0

# Peak rates per compute capability, in FLOP/s (integer ops for int8): (fp32 CUDA cores, tf32
# tensor cores, f16/bf16 tensor cores, 8-bit tensor cores: int8, and fp8 where the chip has
# it), dense, from the vendors' datasheets (SXM parts; sm_86 and sm_89 their GeForce parts).
# Bandwidth is measured on the device itself (a large device-to-device copy), not taken from a
# table.
PEAK_FLOPS = {
    "sm_80": (19.5e12, 156e12, 312e12, 624e12),
    "sm_86": (35.6e12, 35.6e12, 71e12, 284e12),
    "sm_89": (82.6e12, 82.6e12, 165e12, 330e12),
    "sm_90": (67e12, 495e12, 989e12, 1979e12),
}


def compiled_for(case: Case, sizes: Mapping[str, int], scalars: Mapping[str, Any]):
    """The kernel variant for this launch (its multiple-of-16 sizes specialized); for a program,
    the list of its launches' variants, in order."""
    from kernelgen.gpu.compile import compile_document

    return compile_document(case.checked, target=case.settings.target, num_warps=case.num_warps,
                            num_stages=case.num_stages, plans=sequence_for_sizes(case.checked, sizes, scalars))


def _compiled_list(compiled: Any) -> list[Any]:
    return list(compiled) if isinstance(compiled, (list, tuple)) else [compiled]


def verify_gpu(case: Case, sizes: Mapping[str, int], extreme: bool = False, num_sms: int | None = None) -> None:
    """The kernel on one size assignment (under ``num_sms`` where given), in the executor's
    child; a timeout under load is retried once alone (:func:`kernelgen.gpu.timing.call_retried_alone`)."""
    compiled = compiled_for(case, sizes, scalar_values(case.task, sizes, case.settings.seed, extreme))
    problems = call_retried_alone(case.settings.executor, verify_job, case.task, case.checked, compiled, dict(sizes),
                                  case.settings.seed, extreme, num_sms, timeout=case.settings.timeout_s)
    if problems:
        raise WrongResult(problems)


def bench_inputs(task: Task, sizes: Mapping[str, int], seed: int) -> dict[str, Any]:
    """In the executor's child: a timing's inputs on the GPU (made as harness work, outside the
    job's limit)."""
    import torch

    with harness_work():
        return _to_device(make_inputs(task, sizes, seed, bench=True), torch.device("cuda", torch.cuda.current_device()))


def _to_device(inputs: Mapping[str, Any], device: Any) -> dict[str, Any]:
    import torch

    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def same_bits(a: Any, b: Any) -> Any:
    """Elementwise bit equality (NaN equals a NaN of the same payload, -0.0 differs from 0.0)."""
    return a.view(_bits_dtype(a)) == b.view(_bits_dtype(b))


def _bits_dtype(tensor: Any) -> Any:
    """The integer dtype of an element's bits."""
    import torch

    return {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[tensor.dtype.itemsize]


def verify_job(task: Task, checked: Checked, compiled: Any, sizes: dict[str, int], seed: int,
               extreme: bool = False, num_sms: int | None = None) -> list[Diagnostic]:
    """In the executor's child: run the kernel (a program: its launches in order, scratch
    allocated per call; under ``num_sms`` where given) and the reference, return what is wrong."""
    import torch

    from kernelgen.host.plan import verified_num_sms

    device = torch.device("cuda", torch.cuda.current_device())
    with harness_work():  # on the CPU, before the turn
        drawn = make_inputs(task, sizes, seed, extreme=extreme)
        plain = make_inputs(task, sizes, seed) if extreme and task.extreme_domains else None
    with gpu_turn(), verified_num_sms(num_sms):  # never inside another worker's timed window on this GPU
        with harness_work(), reference_out_of_memory(task, sizes):  # an extreme draw's scale is chosen on the GPU
            inputs, atol_scale = magnified(task, _to_device(drawn, device), extreme,  # (the reference, up to 6 times)
                                          None if plain is None else lambda: _to_device(plain, device))
            expected = run_reference(task, inputs)
        outputs, written, problems = guarded_launches(checked, compiled, inputs, device)
        with harness_work():
            return problems + compare_outputs(task, outputs, expected, inputs, sizes, written, atol_scale)


@contextlib.contextmanager
def reference_out_of_memory(task: Task, sizes: Mapping[str, int]) -> Iterator[None]:
    """CUDA running out of memory for the draw's inputs or the task's reference is the
    harness's failure, not the kernel's: :class:`~kernelgen.errors.OutOfMemory`, which says
    where, and is retried alone where other workers held memory."""
    import torch

    try:
        yield
    except torch.OutOfMemoryError as error:
        # torch's message up to the card's free memory, not the list of every process's
        first = re.split(r"\.? (?=Process |Including |Of the allocated )", str(error))[0]
        raise OutOfMemory(f"the inputs or the reference of {task.id} at {dict(sizes)} ran out of GPU memory "
                          f"({first}); python tools/reference_memory.py {task.id} measures what the reference "
                          "holds at once", code="reference_out_of_memory") from None


def guarded_launches(checked: Checked, compiled: Any, inputs: Mapping[str, Any],
                     device: Any) -> tuple[dict[str, Any], dict[str, Any], list[Diagnostic]]:
    """The kernel run on guard-banded copies of its own arguments ``inputs``: its outputs,
    which of their elements it wrote, and what it broke (guard bands, inputs).

    The kernel runs twice, its outputs and scratch pre-filled with a poison (NaN, the integer
    minimum, true) and then with the second poison (:func:`kernelgen.interp.execute.second_poison`:
    floats alternating between +max and -max, the integer maximum, false): an element that holds
    the first poison after the first launch and the second after the second was written by
    neither (a poison can equal the right value, as ``True`` can for a bool output, but not both
    poisons can; a written value may differ between the launches, as float atomics make it, and
    still counts as written). The first poison is the identity of ``where(old > new, old, new)``
    and of an integer maximum, the second is neither: a kernel that merges into memory it never
    initialized (an output, or a scratch) is wrong in the second launch, whose result is
    compared. An output declared with an ``init`` fill starts as that fill in both launches
    (atomics accumulate onto it), an ``alias`` one as its input's values, and either counts as
    written everywhere: its value is defined from the start, and the comparison with the
    reference judges it. (The interpreter, which GPU mode
    runs as well, tracks every read of memory nothing wrote exactly: read_before_write.)"""
    import torch

    from kernelgen.host.plan import plan_sequence, torch_dtype
    from kernelgen.interp.execute import allocate_scratch, initial_fill, second_poison
    from kernelgen.gpu.launch import cuda_errors, sequence_runner

    buffers: dict[str, Any] = {}
    views: dict[str, Any] = {}
    for name, value in inputs.items():
        if isinstance(value, torch.Tensor):
            buffers[name], views[name] = guarded(value, guard_fill(value.dtype))
        else:
            views[name] = value
    with cuda_errors(f"running kernel {checked.kernel.name}"):
        plans = plan_sequence(checked, views)
        outputs, starts = {}, {}
        for out in checked.kernel.outputs:
            blank = torch.empty(plans[0].output_shapes[out.name], dtype=torch_dtype(out.dtype), device=device)
            # An aliasing output starts as its input's values (a copy here: the input's guarded
            # view stays as drawn, so inputs_unchanged still judges every input).
            starts[out.name] = views[out.into] if out.alias else \
                torch.full((), initial_fill(out), dtype=blank.dtype, device=device).expand(blank.shape)
            buffers[out.name], outputs[out.name] = guarded(blank.copy_(starts[out.name]), guard_fill(blank.dtype))

        calls = iter(range(1, 3))

        def scratch() -> dict[str, Any]:
            """Fresh per call (the second with the second poison), in guard bands that are
            checked after both runs."""
            fresh, call = {}, next(calls)
            for name, tensor in allocate_scratch(checked, plans[0], device, second=call == 2).items():
                buffers[f"scratch {name} (run {call})"], fresh[name] = guarded(tensor, guard_fill(tensor.dtype))
            return fresh

        run = sequence_runner(_compiled_list(compiled), plans, outputs, scratch if checked.kernel.scratch else None)
        run()
        first = {name: tensor.clone() for name, tensor in outputs.items()}
        fills = {}
        for out in checked.kernel.outputs:
            tensor = outputs[out.name]
            fills[out.name] = (starts[out.name], second_poison(out.dtype, tuple(tensor.shape), tensor.device))
            tensor.copy_(fills[out.name][0] if out.prefilled else fills[out.name][1])
        run()
        torch.cuda.synchronize(device)
    # Unwritten: the first poison after the first launch and the second after the second.
    # Not "the same bits both times": a value reduced with float atomics differs in its last
    # bits from run to run (the GPU orders them), and is written all the same.
    written = {out.name: torch.ones_like(outputs[out.name], dtype=torch.bool) if out.prefilled
               else ~(same_bits(first[out.name], fills[out.name][0]) & same_bits(outputs[out.name], fills[out.name][1]))
               for out in checked.kernel.outputs}
    problems = [d for name, buffer in buffers.items() for d in guards_intact(name, buffer)]
    problems += inputs_unchanged(inputs, views)
    return outputs, written, problems


# -- timing --------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def copy_bandwidth() -> float:
    """Bytes per second of a large device-to-device copy (read + write), measured once."""
    import torch

    source = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    target = torch.empty_like(source)
    flush = flush_buffer()
    times = event_times(lambda: target.copy_(source), flush, 10, 3)
    return 2 * source.numel() / (statistics.median(times) / 1e3)


@dataclasses.dataclass(frozen=True)
class TimedCall:
    """One call of a kernel as timed (``run``, inside the window), what resets its memory
    before each call, outside the window (``prepare``: :func:`kernel_call`; ``run`` needs it
    before every call), and the outputs every call writes."""

    run: Callable[[], None]
    prepare: Callable[[], None]
    outputs: Mapping[str, Any]


def kernel_call(checked: Checked, compiled: Any, inputs: Mapping[str, Any]) -> TimedCall:
    """One call of the kernel as timed: every launch of a program, with the scratch declared
    ``zero`` allocated and zero-filled inside the call, as each real call does.

    Before each call, outside its window, every output is poisoned again (an aliasing one set
    back to its input's values) and the other scratch is allocated poisoned: no call finds what
    an earlier call left, as none does in the verification. A kernel that read its previous
    results there, at the bench sizes only (the interpreter's read_before_write sees the small
    sizes), could otherwise skip its work in every repetition after the first and be timed
    faster than any correct kernel. The poison fills, which no real call runs, stay out of the
    time (inside it they took 4.4 of col_mean_var's 34.8 us on the H200: two fills of 512 KiB)."""
    import torch

    from kernelgen.host.plan import plan_sequence
    from kernelgen.interp.execute import allocate_outputs, allocate_scratch, initial_fill
    from kernelgen.gpu.launch import sequence_runner

    device = torch.device("cuda", torch.cuda.current_device())
    plans = plan_sequence(checked, inputs)
    names = {out.name for out in checked.kernel.outputs}
    kept = [out for out in plans[0].kernel.outputs if out.name in names]  # of concrete dtypes, no scratch
    outputs = {n: t for n, t in allocate_outputs(plans[0], device=device).items() if n in names}
    # Outputs with an init fill are refilled inside the call: the fill is part of the work (a
    # Triton wrapper's torch.zeros), and atomics would otherwise accumulate across repetitions.
    fills = [(outputs[out.name], initial_fill(out)) for out in kept if out.init is not None]
    resets = [(outputs[out.name], plans[0].inputs[out.into] if out.alias else initial_fill(out))
              for out in kept if out.init is None]
    poisoned: dict[str, Any] = {}

    def prepare() -> None:
        for tensor, value in resets:
            if isinstance(value, torch.Tensor):
                tensor.copy_(value)
            else:
                tensor.fill_(value)
        if checked.kernel.scratch:
            poisoned.clear()
            poisoned.update(allocate_scratch(checked, plans[0], device, zero=False))

    def scratch() -> dict[str, Any]:
        return {**poisoned, **allocate_scratch(checked, plans[0], device, zero=True)}

    launches = sequence_runner(_compiled_list(compiled), plans, outputs, scratch if checked.kernel.scratch else None)

    def run() -> None:
        for tensor, value in fills:
            tensor.fill_(value)
        launches()

    return TimedCall(run, prepare, outputs)


def _kernel_times(checked: Checked, compiled: Any, inputs: Mapping[str, Any], flush: Any,
                  repetitions: int, warmup: int) -> list[float]:
    """Event times of one call (:func:`kernel_call`)."""
    from kernelgen.gpu.launch import cuda_errors

    with cuda_errors(f"timing kernel {checked.kernel.name}"):
        call = kernel_call(checked, compiled, inputs)
        return event_times(call.run, flush, repetitions, warmup, call.prepare)


def time_job(task: Task, checked: Checked, compiled: Any, sizes: dict[str, int], seed: int,
             repetitions: int = REPETITIONS, torch_compile: bool = False) -> dict[str, Any]:
    """In the executor's child: event times (ms) of the kernel, of PyTorch eager and, with
    ``torch_compile``, of torch.compile of the eager code."""
    inputs = bench_inputs(task, sizes, seed)
    flush = flush_buffer()
    kernel_ms = _kernel_times(checked, compiled, inputs, flush, repetitions, WARMUP)
    return {"kernel_ms": kernel_ms, **_eager_times(task, inputs, flush, repetitions, torch_compile)}


# The tuning's inputs in the executor's child, kept between its candidates' jobs: making a
# problem's inputs costs more than timing a candidate.
_TUNE_INPUTS: dict[tuple[str, str, int], dict[str, Any]] = {}


def candidate_times_job(task: Task, checked: CheckedKernel, compiled: Any, sizes: dict[str, int], seed: int,
                        repetitions: int) -> list[float]:
    """In the executor's child: event times (ms) of one tuning candidate at ``sizes``."""
    key = (task.id, repr(sorted(sizes.items())), seed)
    if key not in _TUNE_INPUTS:
        _TUNE_INPUTS.clear()
        _TUNE_INPUTS[key] = bench_inputs(task, sizes, seed)
    return _kernel_times(checked, compiled, _TUNE_INPUTS[key], flush_buffer(), repetitions, AUTOTUNE_WARMUP)


def _eager_times(task: Task, inputs: Mapping[str, Any], flush: Any, repetitions: int,
                 torch_compile: bool = False, restore: Callable[[], None] | None = None) -> dict[str, Any]:
    import torch

    eager = task.eager_function()
    values = list(inputs.values())
    # An in-place operation is timed on its inputs as drawn every time (``restore``: the
    # caller's setting back of ``inputs``, where it has one).
    if restore is None and task.in_place:
        restore = restoring(values)
    with torch.no_grad():
        eager_ms = event_times(lambda: eager(*values), flush, repetitions, WARMUP, restore)
    found = {"eager_ms": eager_ms, "device": torch.cuda.get_device_name(), "bandwidth": copy_bandwidth()}
    if torch_compile:
        found |= _compiled_times(eager, values, flush, repetitions, restore)
    return found


def _compiled_times(eager: Any, values: list[Any], flush: Any, repetitions: int,
                    restore: Callable[[], None] | None = None) -> dict[str, Any]:
    """torch.compile of the eager code: ``max-autotune-no-cudagraphs``, else the default mode;
    the first call (compiling, autotuning) is timed apart and left out of the times. Dynamo
    is reset first: past its recompile limit (8 functions) it would silently run eager."""
    import time

    import torch

    inductor_timed_by_harness()  # its autotuning times candidates on the GPU while it compiles
    errors = []
    for mode in COMPILE_MODES:
        torch._dynamo.reset()
        try:
            compiled = torch.compile(eager, mode=mode)
            with torch.no_grad():
                if restore is not None:
                    restore()  # compiled and autotuned on the inputs as drawn
                start, waited = time.perf_counter(), waited_seconds()
                with autotune_lines() as autotune:
                    compiled(*values)
                    torch.cuda.synchronize()
                # Its autotuning's benchmarks wait for other workers' turns: not compile time.
                compile_s = time.perf_counter() - start - (waited_seconds() - waited)
                times = event_times(lambda: compiled(*values), flush, repetitions, WARMUP, restore)
        except Exception as exc:  # noqa: BLE001 - any failure of torch.compile is this baseline's finding
            errors.append(f"{mode}: {type(exc).__name__}: {str(exc).strip()[:300]}")
            continue
        return {"compiled_ms": times, "compiled_mode": mode, "compile_s": compile_s, "compiled_autotune": autotune}
    return {"compiled_error": "; ".join(errors)}


def eager_job(task: Task, sizes: dict[str, int], seed: int, repetitions: int = REPETITIONS,
              torch_compile: bool = False) -> dict[str, Any]:
    """In the executor's child: event times (ms) of PyTorch eager alone (the baseline's code
    is timed in its sandbox)."""
    inputs = bench_inputs(task, sizes, seed)
    flush = flush_buffer()
    return _eager_times(task, inputs, flush, repetitions, torch_compile)


def _dot_kinds(checked: Checked) -> set[str]:
    """Which matrix units the kernel's dots use: '8bit' (int8: an i32 result; fp8), 'f16'
    (f16/bf16), 'tf32' or 'ieee' (f32)."""
    kinds: set[str] = set()
    for each in launches_of(checked):
        for node, path in nodes(each.kernel.body, "/body"):
            if isinstance(node, L.Dot):
                operand = each.types[child(path, "lhs")].dtype
                kinds.add("8bit" if node.dtype == "i32" or operand in ("f8e4m3", "f8e5m2")
                          else "f16" if operand in ("f16", "bf16") else node.precision)
    return kinds


@functools.lru_cache(maxsize=None)
def _golden_dot_kinds(task_id: str) -> frozenset[str]:
    from kernelgen.check.checker import check
    from kernelgen.task.spec import get_task

    return frozenset(_dot_kinds(check(get_task(task_id).golden)))


def peak_flops(task: Task, target: str) -> float:
    """The peak rate of the units the task's golden kernel uses: the roofline is a property of
    the task, the same for every answer and for both tracks. The fastest unit it uses sets the
    floor (an int8 GEMM measured against f32's peak read 4.4 times the roofline on an H200, and
    the baseline rejected its time as implausible)."""
    fp32, tf32, f16, eight_bit = PEAK_FLOPS.get(target, PEAK_FLOPS["sm_90"])
    kinds = _golden_dot_kinds(task.id)
    return eight_bit if "8bit" in kinds else f16 if "f16" in kinds else tf32 if "tf32" in kinds else fp32


def roofline_fraction(task: Task, sizes: Mapping[str, int], seconds: float, bandwidth: float, target: str) -> float:
    """The floor time (the fewest bytes at the measured bandwidth, or the FLOPs at peak: the
    larger) over the measured time."""
    floor = max(task.bytes_moved(dict(sizes)) / bandwidth, task.flop_count(dict(sizes)) / peak_flops(task, target))
    return floor / seconds


def time_case(case: Case) -> Timing:
    sizes = dict(case.task.bench_sizes)
    compiled = compiled_for(case, sizes, case.task.scalars)
    timeout = max(case.settings.timeout_s, COMPILED_TIMEOUT_S if case.settings.torch_compile else 120.0)
    measured = call_retried_alone(case.settings.executor, time_job, case.task, case.checked, compiled, sizes,
                                  case.settings.seed, torch_compile=case.settings.torch_compile, timeout=timeout)
    kernel_ms = statistics.median(measured["kernel_ms"])
    eager_ms = statistics.median(measured["eager_ms"])
    compiled_ms = statistics.median(measured["compiled_ms"]) if "compiled_ms" in measured else None
    record_times(case.extra, measured)
    moved = case.task.bytes_moved(sizes)
    flops = case.task.flop_count(sizes)
    seconds = kernel_ms / 1e3
    speedup = eager_ms / kernel_ms
    case.artifacts["times"] = (f"device: {measured['device']}\nkernel_ms: {measured['kernel_ms']}\n"
                               f"eager_ms: {measured['eager_ms']}\n")
    return Timing(sizes=sizes, kernel_ms=kernel_ms, eager_ms=eager_ms, speedup=speedup, compiled_ms=compiled_ms,
                  speedup_vs_compiled=compiled_ms / kernel_ms if compiled_ms else None,
                  gbps=moved / seconds / 1e9, tflops=flops / seconds / 1e12,
                  roofline_fraction=roofline_fraction(case.task, sizes, seconds, measured["bandwidth"],
                                                      case.settings.target),
                  flagged=speedup > FLAG_SPEEDUP)


def record_times(extra: dict[str, Any], measured: Mapping[str, Any]) -> None:
    """Every repetition's time of the kernel and of eager (those measured) into a result's
    ``extra``, and what torch.compile did: its mode, compile time (left out of its times) and
    times, the lines of its autotuning log (:mod:`kernelgen.gpu.autotune_log`), or why it
    failed. All repetitions, not only the medians: a spread, or two modes, in a
    baseline's times is what a contended GPU or an unlucky autotuning choice leaves
    (``tools/timing_noise.py``)."""
    for series, key in (("kernel_ms", "kernel_times_ms"), ("eager_ms", "eager_times_ms")):
        if series in measured:
            extra[key] = measured[series]
    if "compiled_ms" in measured:
        extra["torch_compile"] = {"mode": measured["compiled_mode"], "compile_s": measured["compile_s"],
                                  "times_ms": measured["compiled_ms"],
                                  "autotune": measured.get("compiled_autotune", [])}
    elif "compiled_error" in measured:
        extra["torch_compile"] = {"error": measured["compiled_error"]}


def tune_case(case: Case) -> None:
    """Tune the verified kernel at the task's bench sizes (:mod:`kernelgen.gpu.tune`): the chosen
    configuration becomes the case's (``checked``, ``num_warps``, ``num_stages``), verified on
    every size assignment the as-written one passed; the choice is recorded in ``case.tuning``."""
    from kernelgen.gpu.compile import divisible_params
    from kernelgen.check.checker import check
    from kernelgen.task.draws import case_draws
    from kernelgen.gpu.tune import Candidate, Config, TuneCache, cached_tune, choice_lines, gpu_name

    kernel = case.checked.kernel
    if kernel.is_program:
        # Several launches run as written: their shared meta shapes scratch for every launch,
        # and timing a joint search over each launch's configuration is left for later.
        case.artifacts["tuning"] = "not tuned: a program of several launches runs as written\n"
        return
    sizes = dict(case.task.bench_sizes)
    mode = case.settings.tune
    divisible = divisible_params(plan_for_sizes(case.checked, sizes, case.task.scalars))
    timeout = max(case.settings.timeout_s, 120.0)

    def time_candidate(candidate: Candidate, compiled: Any) -> float:
        times = case.settings.executor.call(candidate_times_job, case.task, candidate.checked, compiled, sizes,
                                            case.settings.seed, AUTOTUNE_REPETITIONS, timeout=timeout)
        return statistics.median(times)

    def verify(candidate: Candidate) -> None:
        """The candidate on the draws of its own kernel (its blocks decide which sizes must pass
        them), as the stage that verified the kernel as written."""
        trial = dataclasses.replace(case, checked=candidate.checked, num_warps=candidate.config.num_warps,
                                    num_stages=candidate.config.num_stages)
        for draw in case_draws(case.task, candidate.checked, case.settings.shapes, case.settings.seed, True):
            verify_gpu(trial, draw.sizes, draw.extreme, draw.num_sms)

    choice = cached_tune(TuneCache(), kernel, gpu_name(case.settings.target), sizes, mode, case.settings.target,
                         time_candidate, verify, divisible)
    if choice.config != Config.as_written(kernel):
        case.checked = check(kernel, dict(choice.config.meta))
    case.num_warps, case.num_stages = choice.config.num_warps, choice.config.num_stages
    case.tuning = choice.record(mode)
    case.artifacts["tuning"] = "\n".join(choice_lines(choice)) + "\n"


def report_to_benchmark(benchmark: Any, result: Any) -> None:
    """Give pytest-benchmark the kernel's per-repetition GPU times.

    pytest-benchmark reads time through its fixture's timer around each round; a clock that
    advances by one measured event time per round makes its statistics (min, median, stddev,
    ...) those of the GPU times, with none of the host's inter-process overhead.
    """
    times = list(result.extra.get("kernel_times_ms", []))
    if not times or not hasattr(benchmark, "_timer"):
        return
    clock = [0.0]
    pending = iter(times)

    def advance() -> None:
        clock[0] += next(pending) / 1e3

    benchmark._timer = lambda: clock[0]
    benchmark.extra_info.update({"eager_ms": result.timing.eager_ms, "speedup": result.timing.speedup,
                                 "gbps": result.timing.gbps, "tflops": result.timing.tflops,
                                 "roofline_fraction": result.timing.roofline_fraction})
    benchmark.pedantic(advance, rounds=len(times), iterations=1, warmup_rounds=0)
