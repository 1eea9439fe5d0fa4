"""Speedup over TritonBench-T's perf_T input sizes (GPU only).

The loader read each perf script statically: the inputs of every timed call
(:attr:`Perf.cases`: tensor shapes and dtypes, plain values) and how ``call_op()`` calls the
operator (:attr:`Perf.call`: ``logsumexp(case[0], dim=0)``). Per size, in the executor's child:

1. the inputs are drawn (seeded) on the GPU; the reference and our wrapper each run once on
   private copies and must agree (:func:`~kernelgen.tritonbench.compare.compare_results`), so
   no speedup is reported for a kernel that is wrong at the sizes it is timed at; that first
   call also compiles the variant the size needs. Where they differ beyond the fixed tolerance,
   the reference runs again on float64 copies, and ours passes where it is as close to that
   truth as the reference is (large reductions with cancellation, which no fixed tolerance
   judges fairly at perf sizes);
2. both are timed with CUDA events, the L2 cache flushed before each repetition, after a
   warm-up, as :mod:`kernelgen.gpu.case` times tasks; the median counts. Before each
   repetition, outside its window, our outputs are made poisoned and the call's tensor
   arguments set back to their values as drawn (:func:`~kernelgen.gpu.function.prepared_outputs`;
   the reference's arguments likewise, :func:`~kernelgen.gpu.timing.restoring`): no call
   finds an earlier call's results, and neither side pays for a fill in its window. Host
   overhead (binding, planning the launch) is part of the time, as the reference's Python is
   part of its.

With tuned configurations (``--kg-tune``, :mod:`kernelgen.tritonbench.tuning`) our wrapper
runs each size with its bucket's configuration, and where that is not the one as written the
wrapper as written is timed too (``as_written_ms``; the same time where nothing changed).

An operator's speedup is the geometric mean over its sizes of reference time / our time, and
exists only when every size ran and agreed (its ``speedup_as_written`` likewise); the first
size that fails stops the operator. An operator whose perf files the loader could not read
(:attr:`Perf.problems`) is not timed; its ``perf_problems`` say why.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from kernelgen.errors import Diagnostic, KernelgenError, KernelTimeout, WrongResult
from kernelgen.gpu.timing import call_retried_alone
from kernelgen.task.metrics import geometric_mean
from kernelgen.tritonbench.compare import compare_results
from kernelgen.tritonbench.loader import Operator, TritonBenchError, load_reference_namespace
from kernelgen.tritonbench.perf_script import PerfCase, PerfInput, PerfObject, PerfScalar, PerfTensor
from kernelgen.gpu.tune import Config

if TYPE_CHECKING:
    from kernelgen.harness.pipeline import Settings

# Each function is timed for about this long per size (at least MIN_REPETITIONS repetitions,
# at most kernelgen.gpu.case.REPETITIONS): the perf sizes run from microseconds to seconds.
TIME_BUDGET_MS = 500.0
MIN_REPETITIONS = 5
WARMUP = 3
PERF_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class PerfPoint:
    inputs: str
    reference_ms: float
    kernel_ms: float
    as_written_ms: float | None = None  # with tuning: the configuration as written (see the module doc)

    @property
    def speedup(self) -> float:
        return self.reference_ms / self.kernel_ms

    @property
    def speedup_as_written(self) -> float | None:
        return self.reference_ms / self.as_written_ms if self.as_written_ms else None


@dataclass
class SpeedupResult:
    points: list[PerfPoint] = field(default_factory=list)
    problems: list[Diagnostic] = field(default_factory=list)

    @property
    def speedup(self) -> float | None:
        if self.problems or not self.points:
            return None
        return geometric_mean([p.speedup for p in self.points])

    @property
    def speedup_as_written(self) -> float | None:
        """The speedup with the configuration as written, where tuning timed it at every size."""
        values = [p.speedup_as_written for p in self.points]
        if self.speedup is None or None in values:
            return None
        return geometric_mean(values)

    def to_extra(self) -> dict[str, Any]:
        """The fields a :class:`~kernelgen.task.results.CaseResult`'s ``extra`` carries."""
        extra = {"speedup": self.speedup,
                 "perf": [{**asdict(p), "speedup": p.speedup} for p in self.points],
                 "perf_problems": [d.to_dict() for d in self.problems]}
        if any(p.as_written_ms is not None for p in self.points):
            extra["speedup_as_written"] = self.speedup_as_written
        return extra


def describe_case(case: PerfCase) -> str:
    """``float32[4096], 0.5``: a case's inputs as the loader read them."""
    def one(arg: PerfTensor | PerfScalar | PerfObject) -> str:
        if isinstance(arg, PerfTensor):
            return f"{arg.dtype}[{', '.join(map(str, arg.shape))}]"
        if isinstance(arg, PerfScalar):
            return repr(arg.value)
        return arg.source

    return ", ".join(one(arg) for arg in case.args)


def _tensor(spec: PerfTensor, device: str, generator: Any) -> Any:
    import torch

    dtype = getattr(torch, spec.dtype)
    if device == "meta":  # shapes and dtypes alone (the tuner's buckets): no memory, no values
        return torch.empty(spec.shape, dtype=dtype, device="meta")
    if dtype.is_floating_point and spec.low is not None:  # the script's torch.rand (+ c)
        return torch.rand(spec.shape, dtype=dtype, device=device, generator=generator) + spec.low
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(spec.shape, dtype=dtype, device=device, generator=generator)
    if dtype == torch.bool:
        return torch.rand(spec.shape, device=device, generator=generator) < 0.5
    return torch.randint(-100, 100, spec.shape, dtype=dtype, device=device, generator=generator)


def _scalar(value: Any) -> Any:
    import torch

    if isinstance(value, str) and value.startswith("torch."):
        return getattr(torch, value.removeprefix("torch."))
    if isinstance(value, list):
        return tuple(_scalar(v) for v in value)
    return value


def perf_arguments(operator: Operator, index: int, device: str, seed: int) -> tuple[list[Any], dict[str, Any]]:
    """The arguments of the perf script's call on case ``index``, drawn on ``device`` (on
    ``meta``: tensors of the shapes and dtypes alone)."""
    import torch

    perf = operator.perf
    if perf.cases is None or perf.call is None:
        raise TritonBenchError(Diagnostic(str(perf.script), "perf_unresolved", perf.unresolved or "no perf call"))
    case = perf.cases[index]
    generator = None if device == "meta" else torch.Generator(device).manual_seed(seed + index)
    drawn: dict[int, Any] = {}

    def value(arg: Any) -> Any:
        if isinstance(arg, PerfInput):
            if arg.index not in drawn:
                drawn[arg.index] = value(case.args[arg.index])
            return drawn[arg.index]
        if isinstance(arg, PerfTensor):
            return _tensor(arg, device, generator)
        if isinstance(arg, PerfScalar):
            return _scalar(arg.value)
        raise TritonBenchError(Diagnostic(str(perf.script), "perf_object", f"the perf call passes {arg.source}, "
                                          "which the static reading does not build"))

    return [value(a) for a in perf.call.args], {k: value(a) for k, a in perf.call.keywords.items()}


def _copies(args: list[Any], kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    import torch

    def copy(value: Any) -> Any:
        return value.clone() if isinstance(value, torch.Tensor) else value

    return [copy(a) for a in args], {k: copy(v) for k, v in kwargs.items()}


def _median_ms(function: Any, flush: Any, prepare: Callable[[], None]) -> float:
    from kernelgen.gpu.case import REPETITIONS
    from kernelgen.gpu.timing import event_times

    probe = event_times(function, flush, 1, WARMUP, prepare)[0]
    repetitions = max(MIN_REPETITIONS, min(REPETITIONS, int(TIME_BUDGET_MS / max(probe, 1e-3))))
    return statistics.median(event_times(function, flush, repetitions, 1, prepare))


def disagreement(reference: Any, candidate: Any, args: list[Any], kwargs: dict[str, Any]) -> list[Diagnostic]:
    """How ``candidate`` differs from ``reference`` on one perf call, each run on private copies."""
    import torch

    with torch.no_grad():
        reference_args, reference_kwargs = _copies(args, kwargs)
        expected = reference(*reference_args, **reference_kwargs)
        our_args, our_kwargs = _copies(args, kwargs)
        actual = candidate(*our_args, **our_kwargs)
        problems = compare_results(expected, actual)
        if problems:
            truth = _in_float64(reference, args, kwargs)
            if truth is not None:
                problems = compare_results(expected, actual, truth=truth)
        return problems


def _in_float64(reference: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """The reference's results on float64 copies of the call's floating tensors (the truth a
    result's accuracy is judged against); None where the call has none or the reference
    refuses them."""
    import torch

    found = False

    def widen(value: Any) -> Any:
        nonlocal found
        if isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype != torch.float64:
            found = True
            return value.detach().to(torch.float64)
        if isinstance(value, (list, tuple)):
            return type(value)(widen(v) for v in value)
        return value.clone() if isinstance(value, torch.Tensor) else value

    wide_args, wide_kwargs = [widen(a) for a in args], {k: widen(v) for k, v in kwargs.items()}
    if not found:
        return None
    try:
        return reference(*wide_args, **wide_kwargs)
    except Exception:  # noqa: BLE001 - a reference that takes no float64: the fixed tolerance stands
        return None


def perf_job(operator: Operator, ast_json: str, index: int, seed: int,
             configs: dict[str, Config] | None = None) -> PerfPoint:
    """In the executor's child: check and time our wrapper (with ``configs``, tuned; see the
    module doc) and the reference on one perf case."""
    import torch

    from kernelgen.gpu.timing import flush_buffer, restoring
    from kernelgen.gpu.launch import cuda_errors
    from kernelgen.gpu.function import prepared_outputs, wrapper
    from kernelgen.host.wrapper import bind_call

    reference = getattr(load_reference_namespace(operator, "cuda"), operator.wrapper)
    candidate = wrapper(ast_json, operator.wrapper, configs)
    args, kwargs = perf_arguments(operator, index, "cuda", seed)
    try:
        with torch.no_grad(), cuda_errors(f"timing {operator.name}"):
            problems = disagreement(reference, candidate, args, kwargs)
            if problems:
                raise WrongResult(problems)
            # Timed with the call's configuration forced: every timed call is this one, and the
            # bucket's look-up would be host time the wrapper as written does not spend.
            function = candidate.kernel_function
            tuned = function.config_for(bind_call(function.kernel, args, kwargs)) if configs else None
            function.configs, function.force = {}, tuned
            flush = flush_buffer()
            restore = restoring(args, kwargs)  # an in-place call's arguments, set back before each call
            reference_ms = _median_ms(lambda: reference(*args, **kwargs), flush, restore)
            with prepared_outputs(restore) as prepare:
                kernel_ms = _median_ms(lambda: candidate(*args, **kwargs), flush, prepare)
            as_written_ms = None
            if configs is not None and tuned is None:
                as_written_ms = kernel_ms
            elif configs is not None:
                as_written = wrapper(ast_json, operator.wrapper)
                with prepared_outputs(restore) as prepare:
                    as_written_ms = _median_ms(lambda: as_written(*args, **kwargs), flush, prepare)
    except KernelgenError:
        raise
    except Exception as exc:  # noqa: BLE001 - e.g. out of memory at a large size: this size fails
        raise KernelgenError(f"{type(exc).__name__}: {exc}", code="exception") from None
    return PerfPoint(describe_case(operator.perf.cases[index]), reference_ms, kernel_ms, as_written_ms)


def measure_speedup(operator: Operator, ast_json: str, settings: Settings,
                    configs: dict[str, Config] | None = None) -> SpeedupResult:
    """Every perf size of the operator through the executor (see the module docstring);
    ``configs``: the tuned configurations by bucket label."""
    perf = operator.perf
    result = SpeedupResult()
    if perf.problems:
        result.problems += [Diagnostic("/perf", p.code, f"not measured: {p.path}: {p.message}")
                            for p in perf.problems]
        return result
    if perf.cases is None or perf.call is None:
        result.problems.append(Diagnostic("/perf", "perf_unresolved", perf.unresolved or "no perf call"))
        return result
    for index, case in enumerate(perf.cases):
        try:
            result.points.append(call_retried_alone(settings.executor, perf_job, operator, ast_json, index,
                                                    settings.seed, configs, timeout=max(settings.timeout_s, PERF_TIMEOUT_S)))
        except KernelTimeout as error:
            # A job past its limit (and, under load, past it again alone) is the case's verdict.
            raise KernelTimeout([Diagnostic(f"/perf/{index}", d.code, f"{describe_case(case)}: {d.message}")
                                 for d in error.diagnostics]) from None
        except KernelgenError as error:
            left = len(perf.cases) - index - 1
            result.problems += [Diagnostic(f"/perf/{index}", d.code, f"{describe_case(case)}: {d.message}"
                                           + (f" ({left} larger sizes not run)" if left else ""))
                                for d in error.diagnostics]
            break
    return result
