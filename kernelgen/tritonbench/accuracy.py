"""Call and execution accuracy of a TritonBench-T wrapper: the operator's own test run with the
wrapper in place of the reference, seeded as the reference's run, and the two results compared
(:mod:`kernelgen.tritonbench.evaluate` says why so). Its own module because both the case
(:mod:`kernelgen.tritonbench.evaluate`) and the tuning (:mod:`kernelgen.tritonbench.tuning`,
which verifies each candidate on the test) run it, and the case runs the tuning.
"""

from __future__ import annotations

import random
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from kernelgen.errors import Diagnostic, KernelgenError, LaunchError, Outcome
from kernelgen.tritonbench.compare import compare_results
from kernelgen.tritonbench.loader import Operator, TritonBenchError, load_reference_namespace

if TYPE_CHECKING:
    from kernelgen.gpu.tune import Config


def seed_everything(seed: int) -> None:
    """The random generators a test may draw from, all seeded (torch seeds CUDA too)."""
    import numpy
    import torch

    torch.manual_seed(seed)
    random.seed(seed)
    numpy.random.seed(seed)


def run_test(operator: Operator, namespace: Any, seed: int) -> Any:
    """The test function's results, seeded just before it runs."""
    from kernelgen.tritonbench.loader import importable_as_itself

    test = getattr(namespace, operator.test.function)
    seed_everything(seed)
    with importable_as_itself(operator, namespace):  # `from <op> import <op>` in the test finds this one
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

    from kernelgen.gpu.executor import poisons_process
    from kernelgen.gpu.launch import cuda_errors

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


def accuracy_job(operator: Operator, ast_json: str, seed: int, device: str = "cuda",
                 force: Config | None = None) -> Accuracy:
    """In the executor's child: the accuracy of the kernel's wrapper (on the GPU: ``cuda``;
    ``force``: a tuning candidate's configuration on every call)."""
    from kernelgen.gpu.function import wrapper

    return check_accuracy(operator, wrapper(ast_json, operator.wrapper, force=force), device, seed)




def accuracy_on_the_cpu(operator: Operator, ast_json: str, settings: Any) -> Accuracy:
    """The accuracy in CPU mode (the interpreter runs the wrapper's launches): the whole test
    within ``settings.timeout_s`` of wall-clock time; a test that runs out of it, or a launch
    past the interpreter's work budget (even one the test catches), is not judged on the CPU."""
    from kernelgen.gpu.function import interpreter_limit, wrapper

    with interpreter_limit(settings.timeout_s) as limit:
        accuracy = check_accuracy(operator, wrapper(ast_json, operator.wrapper), "cpu", settings.seed)
    if limit.reached is not None:
        return Accuracy(call_failure=failure_of(limit.reached, operator))
    return accuracy
