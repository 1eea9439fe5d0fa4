"""The result of one benchmark case: what the terminal summary, the results file, Allure and
W&B all read. One record per (task, track, sample)."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from kernelgen.errors import Diagnostic, KernelgenError, Outcome


class Timing(BaseModel):
    """GPU times (ms, medians of CUDA-event-timed repetitions with the L2 flushed between)."""

    model_config = ConfigDict(extra="forbid")

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


Track = Literal["pipeline", "baseline", "tritonbench"]
TRACKS: tuple[str, ...] = get_args(Track)


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
    generation: GenerationInfo = GenerationInfo()
    timing: Timing | None = None
    artifacts: dict[str, str] = Field(default_factory=dict, description="prompt, answer, ast, ttir, ptx, ...")
    duration_s: float = 0.0
    extra: dict[str, Any] = {}

    @property
    def ok(self) -> bool:
        return self.outcome == Outcome.OK

    @classmethod
    def failure_fields(cls, error: KernelgenError) -> dict[str, Any]:
        return {"outcome": error.outcome, "stage": error.stage,
                "diagnostics": [d.to_dict() for d in error.diagnostics]}

    def first_diagnostic(self) -> Diagnostic | None:
        if not self.diagnostics:
            return None
        d = self.diagnostics[0]
        return Diagnostic(d.get("path", ""), d.get("code", ""), d.get("message", ""))
