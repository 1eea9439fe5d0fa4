"""The repair loop, and pass@k.

:func:`generate_with_repair` asks for an answer, has the caller's ``evaluate`` judge it, and
while it fails sends the diagnostics back (a repair prompt, :func:`kernelgen.model.prompt.repair_messages`)
for at most ``rounds`` more answers. ``evaluate(text)`` returns the diagnostics of the first
failing stage, or None (or ``[]``) for an answer that passes; the harness passes one that runs
parse -> check -> lower -> compile, :func:`check_answer` is the CPU-only one (grammar, schema,
checker). Every round is kept: its record (text, latency, tokens, retries) and diagnostics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from kernelgen.check.checker import check
from kernelgen.errors import Diagnostic, KernelgenError
from kernelgen.model.generation import GenerationCache, GenerationRecord, generate
from kernelgen.model.grammar import validate_answer
from kernelgen.model.prompt import repair_messages
from kernelgen.model.providers.base import GenerationRequest, Provider

Evaluate = Callable[[str], Sequence[Diagnostic] | None]


@dataclass(frozen=True)
class RepairRound:
    """One answer and what the evaluation found wrong with it (nothing: it passed)."""

    index: int
    record: GenerationRecord
    diagnostics: tuple[Diagnostic, ...]

    @property
    def passed(self) -> bool:
        return not self.diagnostics

    def to_dict(self) -> dict[str, Any]:
        completion = self.record.completion
        return {"round": self.index, "text": completion.text, "passed": self.passed,
                "diagnostics": [d.to_dict() for d in self.diagnostics],
                "latency_s": completion.latency_s, "tokens_in": completion.tokens_in,
                "tokens_out": completion.tokens_out, "retries": completion.retries,
                "cached": self.record.cached, "key": self.record.key}


@dataclass
class GenerationResult:
    """All rounds of one sample; the last one is the answer."""

    rounds: list[RepairRound] = field(default_factory=list)

    @property
    def final(self) -> RepairRound:
        return self.rounds[-1]

    @property
    def text(self) -> str:
        return self.final.record.text

    @property
    def passed(self) -> bool:
        return self.final.passed

    @property
    def repair_rounds(self) -> int:
        return len(self.rounds) - 1

    @property
    def latency_s(self) -> float:
        return sum(r.record.completion.latency_s for r in self.rounds)

    @property
    def tokens_in(self) -> int:
        return sum(r.record.completion.tokens_in for r in self.rounds)

    @property
    def tokens_out(self) -> int:
        return sum(r.record.completion.tokens_out for r in self.rounds)

    @property
    def retries(self) -> int:
        return sum(r.record.completion.retries for r in self.rounds)

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "repair_rounds": self.repair_rounds,
                "latency_s": self.latency_s, "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out, "retries": self.retries,
                "rounds": [r.to_dict() for r in self.rounds]}


def check_answer(text: str) -> list[Diagnostic] | None:
    """What is wrong with an answer as far as the CPU can tell: grammar and schema
    (:func:`~kernelgen.model.grammar.validate_answer`), then the static checker."""
    try:
        check(validate_answer(text))
    except KernelgenError as exc:
        return list(exc.diagnostics)
    return None


def generate_with_repair(provider: Provider, request: GenerationRequest, evaluate: Evaluate,
                         rounds: int, cache: GenerationCache | None = None) -> GenerationResult:
    """An answer and up to ``rounds`` repairs of it, until ``evaluate`` finds nothing wrong.

    ``request.messages`` are the task's messages (system, user); each repair shows the latest
    answer with its diagnostics. A provider failure (after its retries) propagates.
    """
    result = GenerationResult()
    current = request
    for index in range(rounds + 1):
        record = generate(provider, current, cache)
        diagnostics = tuple(evaluate(record.text) or ())
        result.rounds.append(RepairRound(index, record, diagnostics))
        if not diagnostics:
            break
        current = request.model_copy(update={
            "messages": repair_messages(request.messages, record.text, diagnostics)})
    return result
