"""Typed failures of the pipeline.

Every stage fails with a :class:`KernelgenError` that names its stage, the JSON path of the
AST node at fault (``/body/3/value/lhs``), a stable code and a message a model can act on.
One :class:`Outcome` enum serves the terminal summary, the results file, Allure and W&B.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass


class Outcome(str, enum.Enum):
    """The result of one benchmark case; the first failing stage decides it."""

    OK = "ok"
    SCHEMA_ERROR = "schema_error"
    SEMANTIC_ERROR = "semantic_error"
    LOWERING_ERROR = "lowering_error"
    COMPILE_ERROR = "compile_error"
    LAUNCH_ERROR = "launch_error"
    WRONG_RESULT = "wrong_result"
    TIMEOUT = "timeout"
    # The raw-LLM baseline's own failure modes.
    SYNTAX_ERROR = "syntax_error"
    NO_KERNEL = "no_kernel"
    FORBIDDEN_CONSTRUCT = "forbidden_construct"
    RUNTIME_ERROR = "runtime_error"
    # A time the GPU cannot have taken (below what its bandwidth and peak FLOP/s allow): the
    # baseline's times are measured in the answer's own process, which could forge them.
    IMPLAUSIBLE_TIME = "implausible_time"
    # An operator the kernel language cannot express (TritonBench-T).
    UNSUPPORTED = "unsupported"
    # kernelgen itself failed on the case (an exception that is not a KernelgenError): a
    # failure that is counted, never a case that vanishes from the results.
    HARNESS_ERROR = "harness_error"
    # CPU mode only: the interpreter's budget (its work estimate or its CPU-time limit) ran
    # out before the kernel was judged. Not a verdict on the kernel (a GPU may run it in a
    # millisecond): counted apart, never as passed.
    NOT_JUDGED = "not_judged"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Diagnostic:
    """One finding about a kernel: where (JSON pointer), what (stable code) and why."""

    path: str
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '/'}: {self.code}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


class KernelgenError(Exception):
    """A failure of one pipeline stage, carrying one or more diagnostics."""

    stage = "pipeline"
    outcome = Outcome.RUNTIME_ERROR

    def __init__(self, diagnostics: list[Diagnostic] | Diagnostic | str, *, path: str = "",
                 code: str = "error") -> None:
        if isinstance(diagnostics, str):
            diagnostics = [Diagnostic(path, code, diagnostics)]
        elif isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics: list[Diagnostic] = list(diagnostics)
        super().__init__("\n".join(str(d) for d in self.diagnostics))

    @property
    def path(self) -> str:
        return self.diagnostics[0].path if self.diagnostics else ""

    @property
    def code(self) -> str:
        return self.diagnostics[0].code if self.diagnostics else "error"

    @property
    def message(self) -> str:
        """The diagnostics' messages without path and code: for errors about a command line or
        a server, which have no JSON path."""
        return "; ".join(d.message for d in self.diagnostics)

    def to_dict(self) -> dict[str, object]:
        return {"stage": self.stage, "outcome": self.outcome.value,
                "diagnostics": [d.to_dict() for d in self.diagnostics]}

    def __reduce__(self):
        # Errors cross process boundaries (the executor, xdist workers). Exception's default
        # pickling calls cls(message), which re-wraps the message in a second diagnostic and
        # fails for subclasses with other constructors (MissingDependency).
        return _restore_error, (type(self), self.diagnostics), self.__dict__


def _restore_error(cls: type[KernelgenError], diagnostics: list[Diagnostic]) -> KernelgenError:
    error = cls.__new__(cls)
    KernelgenError.__init__(error, diagnostics)
    return error


class SchemaError(KernelgenError):
    """The text is not JSON, or the JSON is not a kernel AST."""

    stage = "parse"
    outcome = Outcome.SCHEMA_ERROR


class SemanticError(KernelgenError):
    """The AST is well-formed but wrong: types, shapes, names, bounds."""

    stage = "check"
    outcome = Outcome.SEMANTIC_ERROR


class InterpreterError(KernelgenError):
    """The reference interpreter met a fault the checker could not rule out (an access out of
    bounds under a mask, a loop step that is not positive). On a GPU the same kernel fails
    through a guard band or a fault, so it is a wrong result here too, not a semantic error."""

    stage = "interpret"
    outcome = Outcome.WRONG_RESULT


class InterpreterLimit(KernelgenError):
    """The reference interpreter refused a launch whose estimated work is past its budget
    (``over_budget``, before running) or ran past its CPU-time limit (``timeout``): the case
    is not judged on the CPU (``not_judged``), since the interpreter is 1e4 to 1e6 times slower
    than a GPU and a correct kernel with a long idle loop runs out of it too."""

    stage = "interpret"
    outcome = Outcome.NOT_JUDGED


class HostError(KernelgenError):
    """The call's arguments do not fit the kernel's declared inputs (shapes, dtypes, sizes)."""

    stage = "host"
    outcome = Outcome.LAUNCH_ERROR


class LoweringError(KernelgenError):
    stage = "lower"
    outcome = Outcome.LOWERING_ERROR


class CompileError(KernelgenError):
    stage = "compile"
    outcome = Outcome.COMPILE_ERROR


class CompileTimeout(KernelgenError):
    """The compiler ran past its limit (a job like any other: its outcome is ``timeout``)."""

    stage = "compile"
    outcome = Outcome.TIMEOUT


class LaunchError(KernelgenError):
    stage = "launch"
    outcome = Outcome.LAUNCH_ERROR


class KernelTimeout(KernelgenError):
    stage = "launch"
    outcome = Outcome.TIMEOUT


class OutOfMemory(KernelgenError):
    """The GPU had too little free memory for kernelgen's own work at a draw (the task's
    reference, the inputs): not the kernel's fault, so a harness error; retried once alone
    where other workers held memory (:func:`kernelgen.gpu.timing.retried_alone`)."""

    stage = "verify"
    outcome = Outcome.HARNESS_ERROR


class WrongResult(KernelgenError):
    stage = "verify"
    outcome = Outcome.WRONG_RESULT


class MissingDependency(KernelgenError):
    """An optional part (cupy, xgrammar, wandb, ...) is needed and not installed."""

    stage = "setup"

    def __init__(self, package: str, feature: str, extra: str) -> None:
        super().__init__(
            f"{feature} needs the package '{package}', which is not installed: "
            f"pip install 'kernelgen[{extra}]'", code="missing_dependency")


def require(module: str, feature: str, extra: str):
    """Import an optional heavy dependency where it is used, with a clear message if absent."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(module.split(".")[0], feature, extra) from exc
