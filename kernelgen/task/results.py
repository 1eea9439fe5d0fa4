"""The result of one benchmark case: what the terminal summary, the results file, Allure and
W&B all read. One record per (task, track, sample)."""

from __future__ import annotations

import traceback
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kernelgen.errors import Diagnostic, KernelgenError, Outcome

# How much of a crash the result keeps: the message's start and the innermost frames.
CRASH_MESSAGE_CHARS = 500
CRASH_FRAMES = 6


def largest_sizes(assignments: list[dict[str, int]]) -> dict[str, int]:
    """The largest value each size name took over some size assignments."""
    largest: dict[str, int] = {}
    for sizes in assignments:
        for name, value in sizes.items():
            largest[name] = max(largest.get(name, value), value)
    return largest


class Timing(BaseModel):
    """GPU times (ms, medians of CUDA-event-timed repetitions with the L2 flushed between)."""

    model_config = ConfigDict(extra="forbid")

    # The task's call it times (kernelgen.task.variants), where the task has several.
    variant: str | None = None
    sizes: dict[str, int]
    kernel_ms: float
    eager_ms: float
    compiled_ms: float | None = None
    speedup: float
    speedup_vs_compiled: float | None = None
    gbps: float
    tflops: float
    roofline_fraction: float
    flagged: bool = Field(False, description="speedup above 10x: flagged for review")


class GenerationInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    latency_s: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    retries: int = 0
    repair_rounds: int = 0
    cached: bool = False


class OptimizationRound(BaseModel):
    """One answer of an optimization round (round 0: the first correct answer) and what became of it."""

    model_config = ConfigDict(extra="forbid")

    round: int
    outcome: Outcome
    stage: str | None = None
    diagnostics: list[dict[str, str]] = []
    verdict: Literal["first", "kept", "slower", "failed", "untimed"] = Field(
        description="first: round 0; kept: correct and faster than the best so far (it became the best); "
                    "slower: correct but not faster; failed: not correct; untimed: correct, not timed")
    kernel_ms: float | None = None
    speedup: float | None = None
    speedup_vs_compiled: float | None = None
    roofline_fraction: float | None = None
    facts: dict[str, Any] | None = Field(None, description="the compiler's facts (kernelgen.gpu.facts.KernelFacts)")
    key: str | None = Field(None, description="the generation record of the answer (None for round 0)")
    latency_s: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0


class Optimization(BaseModel):
    """The optimization rounds of a case (``--optimize-rounds``): every round, which one is the
    case's result, and the timing before the rounds (round 0's), which the 'before' scores read."""

    model_config = ConfigDict(extra="forbid")

    rounds: list[OptimizationRound]
    best_round: int = 0
    before: Timing | None = None
    skipped: str | None = Field(None, description="why no rounds ran (CPU mode: nothing was timed)")
    stopped: str | None = Field(None, description="why the rounds ended early: the provider failed (after its "
                                                  "retries); the best answer so far stays the result")


Track = Literal["pipeline", "baseline", "tritonbench"]
TRACKS: tuple[str, ...] = get_args(Track)


class Tuning(BaseModel):
    """What the autotuning (``--kg-tune``, :mod:`kernelgen.gpu.tune`) chose for a case's kernel at
    the task's bench sizes; the case's timing is the chosen configuration's."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["quick", "full"]
    config: dict[str, Any] = Field(description="the chosen meta values, num_warps and num_stages")
    as_written: dict[str, Any] = Field(description="the configuration as the kernel was written")
    kernel_ms: float = Field(description="the chosen configuration's time during the search")
    as_written_ms: float | None = Field(None, description="the as-written configuration's time during the search")
    speedup_vs_as_written: float | None = None
    candidates: int = Field(0, description="configurations timed")
    pruned: int = Field(0, description="configurations dropped before timing (checker, shared memory, compile)")
    failed: list[str] = Field([], description="faster configurations that failed verification, with why")
    seconds: float = Field(0.0, description="the tuning's wall time, compiling included")
    cached: bool = Field(False, description="the choice came from the tuning cache")


class CaseResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task: str
    tier: str
    track: Track = "pipeline"
    provider: str
    model: str
    sample: int = 0
    outcome: Outcome
    stage: str | None = None
    diagnostics: list[dict[str, str]] = []
    mode: Literal["cpu", "gpu"]
    target: str
    sizes_checked: list[dict[str, int]] = []
    # The largest value each size name took over sizes_checked (filled from it): what was checked.
    largest_sizes: dict[str, int] = {}
    generation: GenerationInfo = GenerationInfo()
    timing: Timing | None = None
    artifacts: dict[str, str] = Field(default_factory=dict, description="prompt, answer, ast, ttir, ptx, ...")
    duration_s: float = 0.0
    extra: dict[str, Any] = {}
    optimization: Optimization | None = None
    tuning: Tuning | None = None

    @model_validator(mode="after")
    def _largest(self) -> CaseResult:
        if self.sizes_checked and not self.largest_sizes:
            self.largest_sizes = largest_sizes(self.sizes_checked)
        return self

    @property
    def ok(self) -> bool:
        return self.outcome == Outcome.OK

    @classmethod
    def failure_fields(cls, error: KernelgenError) -> dict[str, Any]:
        return {"outcome": error.outcome, "stage": error.stage,
                "diagnostics": [d.to_dict() for d in error.diagnostics]}

    @classmethod
    def crash_fields(cls, exc: Exception, stage: str) -> dict[str, Any]:
        """The fields of a case on which kernelgen itself crashed (``harness_error``): the
        exception's type and message and the innermost frames, where it happened."""
        message = str(exc)
        if len(message) > CRASH_MESSAGE_CHARS:
            message = message[:CRASH_MESSAGE_CHARS] + f"... ({len(message)} characters)"
        frames = "".join(traceback.format_list(traceback.extract_tb(exc.__traceback__)[-CRASH_FRAMES:]))
        # Raised in an executor's child (kernelgen.gpu.executor.RemoteTraceback): where it was raised there.
        remote = getattr(exc.__cause__, "text", None)
        if isinstance(remote, str):
            frames += "in the child process:\n" + "\n".join(remote.rstrip().splitlines()[-2 * CRASH_FRAMES - 1:])
        return {"outcome": Outcome.HARNESS_ERROR, "stage": stage,
                "diagnostics": [Diagnostic("", "uncaught_exception", f"{type(exc).__name__}: {message}\n"
                                           f"innermost frames:\n{frames.rstrip()}").to_dict()]}

    def scrubbed(self) -> CaseResult:
        """This result with every secret taken out of its text (:func:`kernelgen.env.scrub`):
        what is stored or printed (results file, artifacts, Allure, W&B, the terminal)."""
        from kernelgen.env import scrub_value

        return type(self).model_validate(scrub_value(self.model_dump()))

    def first_diagnostic(self) -> Diagnostic | None:
        if not self.diagnostics:
            return None
        d = self.diagnostics[0]
        return Diagnostic(d.get("path", ""), d.get("code", ""), d.get("message", ""))
