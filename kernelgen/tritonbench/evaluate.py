"""Scoring one TritonBench-T operator: call accuracy, execution accuracy, speedup.

* **Call accuracy**: the operator's own test function runs to the end with our wrapper in place
  of the reference (the test's namespace is the dataset file's, the wrapper's name rebound).
* **Execution accuracy**: every test case's result (tensors, tuples, numbers, strings) equals the
  reference's, the two runs seeded identically just before the test function (the dataset's
  tests draw unseeded random inputs). Tensors are compared with ``allclose`` and the project's
  dtype tolerances (:data:`kernelgen.tasks.DEFAULT_TOLERANCE`), after checking that kind, shape
  and dtype agree; a Python number must come back as a Python number of the same type. Never
  as printed text: TritonBench's own ``1_exe_acc.py`` compares stdout, where ``tensor([...])``
  rounds to 4 digits (too loose and too strict at once), and where a test part that prints
  nothing (none of the sample's 30 does) compares equal whatever it computed.
* **Speedup** (GPU only, :mod:`kernelgen.tritonbench.speedup`): over the perf_T input sizes.

:func:`evaluate_operator` runs the whole case (answer, parse, check, compile, both accuracies,
speedup) into a :class:`~kernelgen.results.CaseResult` of track ``tritonbench``; on a GPU the
runs happen in the executor's child, so a faulting kernel fails this operator only.
:func:`track_summary` aggregates the results.
"""

from __future__ import annotations

import random
import time
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from kernelgen.errors import Diagnostic, KernelgenError, LaunchError, Outcome
from kernelgen.metrics import geometric_mean
from kernelgen.results import CaseResult, GenerationInfo
from kernelgen.tritonbench.compare import compare_results
from kernelgen.tritonbench.loader import Operator, TritonBenchError, load_reference_namespace

if TYPE_CHECKING:
    from kernelgen.generation import GenerationCache
    from kernelgen.pipeline import Settings
    from kernelgen.providers.base import Provider, Sampling
    from kernelgen.tritonbench.generate import PromptKind

TRACK = "tritonbench"


# ---------------------------------------------------------------------------------------------
# Running the operator's test


def seed_everything(seed: int) -> None:
    """The random generators a test may draw from, all seeded (torch seeds CUDA too)."""
    import numpy
    import torch

    torch.manual_seed(seed)
    random.seed(seed)
    numpy.random.seed(seed)


def run_test(operator: Operator, namespace: Any, seed: int) -> Any:
    """The test function's results, seeded just before it runs."""
    test = getattr(namespace, operator.test.function)
    seed_everything(seed)
    return test()


@dataclass(frozen=True)
class CallFailure:
    """Why the test did not run to its end with our wrapper (picklable: it crosses from the
    executor's child)."""

    outcome: Outcome
    stage: str
    diagnostics: tuple[Diagnostic, ...]


def failure_of(exc: BaseException, operator: Operator) -> CallFailure:
    if isinstance(exc, KernelgenError):
        return CallFailure(exc.outcome, exc.stage, tuple(exc.diagnostics))
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(operator.path)]
    where = f" (at line {frames[-1].lineno} of {operator.file}: {frames[-1].line})" if frames else ""
    return CallFailure(Outcome.RUNTIME_ERROR, "call",
                       (Diagnostic("", "exception", f"{type(exc).__name__}: {exc}{where}"),))


@dataclass
class Accuracy:
    """One operator's call and execution accuracy; ``test_cases``: each case of the
    reference's results -> ``ok`` or ``mismatch`` (empty when the call failed)."""

    call_failure: CallFailure | None = None
    mismatches: list[Diagnostic] = field(default_factory=list)
    test_cases: dict[str, str] = field(default_factory=dict)

    @property
    def call_ok(self) -> bool:
        return self.call_failure is None

    @property
    def execution_ok(self) -> bool:
        return self.call_ok and not self.mismatches


def check_accuracy(operator: Operator, candidate: Callable[..., Any], device: str, seed: int) -> Accuracy:
    """Run the operator's test with the reference, then with ``candidate`` in its place, on
    ``device`` (the tests' ``'cuda'`` rewritten where it is another), and compare. A CUDA error
    (a faulting kernel) is raised as :class:`~kernelgen.errors.LaunchError` ``cuda_error``,
    not returned: the process that saw it cannot run anything else."""
    import torch

    from kernelgen.executor import poisons_process
    from kernelgen.launch import cuda_errors

    reference_namespace = load_reference_namespace(operator, device)
    try:
        expected = run_test(operator, reference_namespace, seed)
    except Exception as exc:
        raise TritonBenchError(Diagnostic(str(operator.path), "reference_failed",
                                          f"the reference's own test fails: {type(exc).__name__}: {exc}")) from exc
    namespace = load_reference_namespace(operator, device)
    setattr(namespace, operator.wrapper, candidate)
    try:
        with cuda_errors(f"running the test of {operator.name}"):
            actual = run_test(operator, namespace, seed)
            if torch.device(device).type == "cuda":
                torch.cuda.synchronize(device)  # a fault of an asynchronous launch belongs to this call
    except LaunchError as exc:
        if poisons_process(exc):
            raise  # the CUDA context is lost: the executor replaces its process
        return Accuracy(call_failure=failure_of(exc, operator))
    except Exception as exc:  # noqa: BLE001 - any failure of the candidate is its call failure
        return Accuracy(call_failure=failure_of(exc, operator))
    mismatches = compare_results(expected, actual)
    if isinstance(expected, dict):
        failed = {d.path.split("/")[1] for d in mismatches}
        cases = {str(key): "mismatch" if str(key) in failed else "ok" for key in expected}
    else:
        cases = {"results": "mismatch" if mismatches else "ok"}
    return Accuracy(mismatches=mismatches, test_cases=cases)


def accuracy_job(operator: Operator, ast_json: str, seed: int, device: str = "cuda") -> Accuracy:
    """In the executor's child: the accuracy of the kernel's wrapper (on the GPU: ``cuda``)."""
    from kernelgen.tritonbench.runtime import wrapper

    return check_accuracy(operator, wrapper(ast_json, operator.wrapper), device, seed)


# ---------------------------------------------------------------------------------------------
# The case


def evaluate_operator(operator: Operator, provider: Provider, settings: Settings, *,
                      prompt_kind: PromptKind = "simp", cache: GenerationCache | None = None,
                      sampling: Sampling | None = None) -> CaseResult:
    """One operator through every stage; never raises for a bad answer, an unsupported
    operator or a crash of kernelgen itself (see :class:`CaseResult`'s outcome, stage and
    diagnostics)."""
    from kernelgen.tritonbench.generate import answer_for, build_kernel, generation_info, instruction
    from kernelgen.tritonbench.runtime import wrapper

    start = time.perf_counter()
    artifacts = {"prompt": instruction(operator, prompt_kind)}
    extra: dict[str, Any] = {"call_accuracy": False, "execution_accuracy": False, "speedup": None}
    generation = GenerationInfo()
    outcome: dict[str, Any] = {"outcome": Outcome.OK}
    try:
        record = answer_for(operator, prompt_kind, provider, cache, sampling)
        generation = generation_info(record)
        build = build_kernel(record.text, settings.target, compile=settings.compile)
        artifacts.update(build.artifacts())
        if build.error is not None:
            raise build.error
        if settings.gpu:
            accuracy = settings.executor.call(accuracy_job, operator, build.answer, settings.seed,
                                              timeout=settings.timeout_s)
        else:
            accuracy = check_accuracy(operator, wrapper(build.answer, operator.wrapper), "cpu", settings.seed)
        extra.update(call_accuracy=accuracy.call_ok, execution_accuracy=accuracy.execution_ok,
                     test_cases=accuracy.test_cases)
        if accuracy.call_failure is not None:
            failure = accuracy.call_failure
            outcome = {"outcome": failure.outcome, "stage": failure.stage,
                       "diagnostics": [d.to_dict() for d in failure.diagnostics]}
        elif accuracy.mismatches:
            outcome = {"outcome": Outcome.WRONG_RESULT, "stage": "verify",
                       "diagnostics": [d.to_dict() for d in accuracy.mismatches]}
        elif settings.gpu and settings.time_kernels:
            from kernelgen.tritonbench.speedup import measure_speedup

            extra.update(measure_speedup(operator, build.answer, settings).to_extra())
    except KernelgenError as error:
        outcome = CaseResult.failure_fields(error)
    except Exception as exc:  # noqa: BLE001 - kernelgen's own crash is this case's outcome, counted
        outcome = CaseResult.crash_fields(exc, "evaluate")
    return CaseResult(task=operator.name, tier=TRACK, track=TRACK, provider=provider.name,
                      model=provider.model or "", mode="gpu" if settings.gpu else "cpu", target=settings.target,
                      generation=generation, artifacts=artifacts, extra=extra,
                      duration_s=time.perf_counter() - start, **outcome)


# ---------------------------------------------------------------------------------------------
# The track's summary


def track_summary(results: list[CaseResult]) -> list[str]:
    """The track's lines for the terminal: accuracies over ALL operators (unsupported and failed
    ones count as failures), and the speedup.

    The speedup is the geometric mean of the per-operator speedups over the operators with
    execution accuracy whose every perf size ran and matched the reference (TritonBench's own
    script averages per-operator speedups arithmetically over the correct operators, after
    dropping one outlier per operator; a geometric mean needs no outlier rule). The fraction of
    ALL operators faster than the reference goes with it, so failures weigh in.
    """
    cases = [r for r in results if r.track == TRACK]
    if not cases:
        return []
    total = len(cases)

    def share(count: int) -> str:
        return f"{count}/{total} ({count / total:.1%})"

    called = sum(bool(c.extra.get("call_accuracy")) for c in cases)
    executed = sum(bool(c.extra.get("execution_accuracy")) for c in cases)
    unsupported = sorted(c.task for c in cases if c.outcome == Outcome.UNSUPPORTED)
    providers = sorted({f"{c.provider}/{c.model}" for c in cases})
    modes = sorted({f"{c.mode} ({c.target})" for c in cases})
    lines = [f"operators: {total}; kernels from {', '.join(providers)}; mode: {', '.join(modes)}",
             f"call accuracy:      {share(called)}",
             f"execution accuracy: {share(executed)}"]
    if unsupported:
        lines.append(f"unsupported by the language ({len(unsupported)}, counted as failures): {', '.join(unsupported)}")
    if all(c.mode == "cpu" for c in cases):
        lines.append("speedup: not measured (CPU mode: the reference interpreter ran the kernels)")
        return lines
    speedups = {c.task: c.extra["speedup"] for c in cases
                if c.extra.get("execution_accuracy") and c.extra.get("speedup") is not None}
    faster = sum(s > 1.0 for s in speedups.values())
    if speedups:
        lines.append(f"speedup over the reference: geometric mean {geometric_mean(list(speedups.values())):.2f}x over "
                     f"the {len(speedups)} operators with execution accuracy and every perf size timed")
    else:
        lines.append("speedup over the reference: no operator with execution accuracy had every perf size timed")
    lines.append(f"faster than the reference: {share(faster)} of all operators")
    return lines
