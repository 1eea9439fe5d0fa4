"""Autotuning in the TritonBench-T track (``--kg-tune``): an AST answer's wrapper tuned per
perf-size bucket, as the main track tunes a task's kernel at its bench sizes.

1. **Buckets.** Each timed call of the perf script is bound as the wrapper binds it, on
   ``meta`` tensors (shapes and dtypes, no memory). Its bucket is the sizes the kernel sees
   (after the wrapper's view), rounded up to powers of two as the tuning cache buckets sizes
   (:func:`kernelgen.gpu.tune.size_bucket`), with the call's variant (choices, presence flags,
   dtype binding): :func:`kernelgen.gpu.function.call_bucket`, the one function the
   wrapper also asks at each call. Perf calls in one bucket share a configuration.
2. **Search.** Per bucket, :func:`kernelgen.gpu.tune.cached_tune`: the kernel's own search space
   (:func:`kernelgen.gpu.tune.search_space`: meta values, ``num_warps``, ``num_stages``), pruned
   and compiled in parallel, each candidate timed as the wrapper (binding and planning
   included, as TritonBench times calls) at the bucket's first perf call.
3. **Verification.** The fastest is verified like any answer: the operator's own test run with
   the candidate forced on every call and compared with the reference's
   (:func:`kernelgen.tritonbench.accuracy.check_accuracy`), then every perf call of the bucket
   compared with the reference; one that fails is dropped for the next fastest, the
   configuration as written remaining the fallback.
4. **Cache.** The choice is kept by (kernel hash, GPU, bucket, mode) and verified again when
   it is reused.

The wrapper then runs each call with its bucket's configuration; the speedup stage times each
perf size as tuned and as written (:mod:`kernelgen.tritonbench.speedup`).

Timing and verifying are parameters of :func:`tune_operator`: :func:`tune_on_gpu` passes the
executor's jobs below; CPU tests pass the interpreter's verification (:func:`cpu_verify`) and a
model of time (a seam, not a mock of the GPU).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable

from kernelgen.lang import nodes as L
from kernelgen.errors import Diagnostic, KernelgenError, WrongResult
from kernelgen.lang.parse import parse_kernel
from kernelgen.task.results import Tuning
from kernelgen.tritonbench.accuracy import Accuracy, accuracy_job, check_accuracy
from kernelgen.tritonbench.loader import Operator, load_reference_namespace
from kernelgen.gpu.function import KernelFunction, call_bucket, wrapper
from kernelgen.tritonbench.speedup import PERF_TIMEOUT_S, describe_case, disagreement, perf_arguments
from kernelgen.gpu.tune import Candidate, Choice, Config, TuneCache, Variant, bucket_label, cached_tune, choice_lines

if TYPE_CHECKING:
    from kernelgen.harness.pipeline import Settings


@dataclass(frozen=True)
class PerfBucket:
    """The perf calls (``cases``, indices into the perf script's cases) that share a tuned
    configuration: their ``label`` (:func:`kernelgen.gpu.tune.bucket_label`), sizes as the first of
    them gives them, variant, and the integer params that first call specializes."""

    label: str
    sizes: dict[str, int]
    variant: Variant
    divisible: tuple[str, ...]
    cases: tuple[int, ...]


# A perf call the binding on meta tensors could not judge (not the answer's fault).
NOT_BOUND = "perf_not_bound"


def perf_buckets(operator: Operator, kernel: L.Kernel) -> tuple[list[PerfBucket], list[Diagnostic]]:
    """The operator's perf calls grouped by bucket, in the order of their first call; and the
    calls the kernel cannot take (they run as written, and fail there, in the speedup stage).
    A program of several launches has no buckets: its calls are bound and planned only."""
    from kernelgen.gpu.compile import divisible_params
    from kernelgen.host.plan import plan_launch, plan_sequence
    from kernelgen.host.wrapper import bind_call

    perf = operator.perf
    if perf.problems or perf.cases is None or perf.call is None:
        return [], [Diagnostic("/perf", "perf_unresolved", "no perf calls to tune for: "
                               + (perf.unresolved or "; ".join(p.message for p in perf.problems) or "no perf call"))]
    buckets: dict[str, PerfBucket] = {}
    problems: list[Diagnostic] = []
    checked_for: dict[Variant, Any] = {}
    for index, case in enumerate(perf.cases):
        try:
            args, kwargs = perf_arguments(operator, index, "meta", 0)
            call = bind_call(kernel, args, kwargs)
            sizes, variant = call_bucket(kernel, call)
            if variant not in checked_for:
                checked_for[variant] = variant.check(kernel, Config.as_written(kernel, variant))
            checked = checked_for[variant]
            if checked.kernel.is_program:  # bound and planned, never tuned (kernelgen.gpu.tune's doc)
                plan_sequence(checked, call.args)
                continue
            divisible = divisible_params(plan_launch(checked, call.args))
        except KernelgenError as error:
            first = error.diagnostics[0]
            problems.append(Diagnostic(f"/perf/{index}", first.code, f"{describe_case(case)}: {first}"))
            continue
        except Exception as exc:  # noqa: BLE001 - a call meta tensors cannot bind (a number read with .item())
            problems.append(Diagnostic(f"/perf/{index}", NOT_BOUND, f"{describe_case(case)}: not bound on meta "
                                       f"tensors ({type(exc).__name__}: {exc}); it runs on the GPU"))
            continue
        label = bucket_label(sizes, variant)
        if label in buckets:
            buckets[label] = replace(buckets[label], cases=buckets[label].cases + (index,))
        else:
            buckets[label] = PerfBucket(label, sizes, variant, divisible, (index,))
    return list(buckets.values()), problems


# -- tuning one operator ----------------------------------------------------------------------

TimePerf = Callable[[PerfBucket, Candidate], float]
VerifyPerf = Callable[[PerfBucket, Candidate], None]


@dataclass
class OperatorTuning:
    """An operator's choices, one per bucket, and the perf calls left untuned with why."""

    mode: str
    choices: list[tuple[PerfBucket, Choice]] = field(default_factory=list)
    problems: list[Diagnostic] = field(default_factory=list)
    seconds: float = 0.0

    def configs(self) -> dict[str, Config]:
        """What the wrapper takes: each bucket whose choice is not the configuration as written."""
        return {bucket.label: choice.config for bucket, choice in self.choices if choice.config != choice.as_written}

    def record(self) -> dict[str, Any]:
        """A result's ``extra["tuning"]``: each bucket's :class:`~kernelgen.task.results.Tuning` fields."""
        return {"mode": self.mode, "seconds": self.seconds,
                "buckets": [{"bucket": bucket.label, "perf_cases": list(bucket.cases),
                             **Tuning(**choice.record(self.mode)).model_dump()} for bucket, choice in self.choices],
                "not_tuned": [d.to_dict() for d in self.problems]}

    def lines(self) -> list[str]:
        """For a person (the result's ``tuning`` artifact)."""
        lines = [f"{len(self.choices)} perf-size buckets tuned ({self.mode}) in {self.seconds:.1f} s"]
        for bucket, choice in self.choices:
            lines += [f"bucket {bucket.label} (perf cases {', '.join(map(str, bucket.cases))}):",
                      *(f"  {line}" for line in choice_lines(choice))]
        lines += [f"not tuned: {d.path}: {d.message}" for d in self.problems]
        return lines


def tune_operator(operator: Operator, ast_json: str, mode: str, target: str, gpu: str, time_perf: TimePerf,
                  verify: VerifyPerf, cache: TuneCache, workers: int | None = None) -> OperatorTuning:
    """Tune the answer's kernel for each perf-size bucket (see the module doc)."""
    start = time.perf_counter()
    kernel = parse_kernel(ast_json)
    buckets, problems = perf_buckets(operator, kernel)
    tuning = OperatorTuning(mode, problems=problems)
    for bucket in buckets:
        choice = cached_tune(cache, kernel, gpu, bucket.sizes, mode, target,
                             lambda candidate, _compiled, bucket=bucket: time_perf(bucket, candidate),
                             lambda candidate, bucket=bucket: verify(bucket, candidate),
                             bucket.divisible, bucket.variant, workers)
        if choice.cached or choice.timed:
            tuning.choices.append((bucket, choice))
            continue
        why = choice.pruned[0].reason if choice.pruned else "no candidate"
        tuning.problems.append(Diagnostic(f"/perf/{bucket.cases[0]}", "not_timed",
                                          f"bucket {bucket.label}: not tuned, no candidate was timed ({why})"))
    tuning.seconds = time.perf_counter() - start
    return tuning


# -- verifying a candidate ----------------------------------------------------------------------


def accuracy_error(accuracy: Accuracy) -> KernelgenError | None:
    """The operator's test run as an error (its outcome and stage kept), None where it passed."""
    failure = accuracy.call_failure
    if failure is not None:
        error = KernelgenError(list(failure.diagnostics))
        error.outcome, error.stage = failure.outcome, failure.stage
        return error
    return WrongResult(accuracy.mismatches) if accuracy.mismatches else None


def make_verify(accuracy: Callable[[Config], Accuracy],
                agreement: Callable[[int, Config], list[Diagnostic]]) -> VerifyPerf:
    """A candidate passes when the operator's test with it forced on every call agrees with the
    reference (``accuracy``, run once per configuration: the test does not depend on the
    bucket), then each perf call of the bucket does (``agreement``)."""
    tested: dict[Config, KernelgenError | None] = {}

    def verify(bucket: PerfBucket, candidate: Candidate) -> None:
        config = candidate.config
        if config not in tested:
            tested[config] = accuracy_error(accuracy(config))
        if tested[config] is not None:
            raise tested[config]
        for index in bucket.cases:
            problems = agreement(index, config)
            if problems:
                raise WrongResult([replace(d, path=f"/perf/{index}{d.path}") for d in problems])

    return verify


def agreement_job(operator: Operator, ast_json: str, index: int, seed: int, config: Config,
                  device: str = "cuda") -> list[Diagnostic]:
    """In the executor's child (or in process on the CPU): how the wrapper with ``config`` forced
    differs from the reference on perf call ``index``."""
    from kernelgen.gpu.launch import cuda_errors

    reference = getattr(load_reference_namespace(operator, device), operator.wrapper)
    args, kwargs = perf_arguments(operator, index, device, seed)
    with cuda_errors(f"verifying a configuration of {operator.name}"):
        return disagreement(reference, wrapper(ast_json, operator.wrapper, force=config), args, kwargs)


def cpu_verify(operator: Operator, ast_json: str, seed: int) -> VerifyPerf:
    """The verification on the CPU, in this process: the reference interpreter runs the kernel
    (with the candidate's meta values) for the test and the perf calls."""
    return make_verify(lambda config: check_accuracy(operator, wrapper(ast_json, operator.wrapper, force=config),
                                                     "cpu", seed),
                       lambda index, config: agreement_job(operator, ast_json, index, seed, config, "cpu"))


# -- on the GPU -----------------------------------------------------------------------------------

# In the executor's child, kept between jobs: the perf call's inputs (between one bucket's
# candidates; with what sets them back as drawn, after an in-place call) and the answer's
# wrapper, whose compiled and loaded variants serve every bucket.
_INPUTS: dict[tuple[str, int, int], tuple[list[Any], dict[str, Any], Any]] = {}
_FUNCTIONS: dict[str, KernelFunction] = {}


def candidate_time_job(operator: Operator, ast_json: str, index: int, seed: int, config: Config) -> float:
    """In the executor's child: the median time (ms) of the wrapper with ``config`` forced on
    perf call ``index`` (its memory prepared before each call, as the speedup stage times it)."""
    import torch

    from kernelgen.gpu.launch import cuda_errors
    from kernelgen.gpu.timing import AUTOTUNE_REPETITIONS, AUTOTUNE_WARMUP, event_times, flush_buffer, restoring
    from kernelgen.gpu.function import prepared_outputs

    key = (operator.name, index, seed)
    if key not in _INPUTS:
        _INPUTS.clear()
        args, kwargs = perf_arguments(operator, index, "cuda", seed)
        _INPUTS[key] = args, kwargs, restoring(args, kwargs)
    args, kwargs, restore = _INPUTS[key]
    if ast_json not in _FUNCTIONS:
        _FUNCTIONS.clear()
        _FUNCTIONS[ast_json] = KernelFunction(parse_kernel(ast_json))
    candidate = _FUNCTIONS[ast_json]
    candidate.force = config
    with torch.no_grad(), prepared_outputs(restore) as prepare, \
            cuda_errors(f"timing a configuration of {operator.name}"):
        return statistics.median(event_times(lambda: candidate(*args, **kwargs), flush_buffer(), AUTOTUNE_REPETITIONS,
                                             AUTOTUNE_WARMUP, prepare))


def tune_on_gpu(operator: Operator, ast_json: str, settings: Settings) -> OperatorTuning:
    """:func:`tune_operator` with the executor's jobs (a faulting candidate costs its process)."""
    from kernelgen.gpu.tune import gpu_name

    executor, seed = settings.executor, settings.seed
    timeout = max(settings.timeout_s, 120.0)

    def time_perf(bucket: PerfBucket, candidate: Candidate) -> float:
        return executor.call(candidate_time_job, operator, ast_json, bucket.cases[0], seed, candidate.config,
                             timeout=timeout)

    verify = make_verify(
        lambda config: executor.call(accuracy_job, operator, ast_json, seed, "cuda", config, timeout=settings.timeout_s),
        lambda index, config: executor.call(agreement_job, operator, ast_json, index, seed, config,
                                            timeout=max(settings.timeout_s, PERF_TIMEOUT_S)))
    return tune_operator(operator, ast_json, settings.tune, settings.target, gpu_name(settings.target), time_perf,
                         verify, TuneCache())
