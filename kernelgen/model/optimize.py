"""Optimization rounds (``--optimize-rounds r``): the model sees how fast its kernel ran and what
the compiler made of it, and tries again.

After a correct first answer, each of up to ``r`` rounds shows the model its fastest correct
kernel so far with the measured time, the speedup over PyTorch eager (and torch.compile where
measured), the roofline fraction and the compiler's facts (:mod:`kernelgen.gpu.facts`), and, when
the previous round's answer was not kept, why (its failure, or that it was slower). The model
answers with a whole new kernel, which goes through the full pipeline (the caller's
``evaluate``, :func:`kernelgen.harness.pipeline.evaluate_answer` in the harness). Only a correct answer
that is faster (a lower median kernel time) replaces the best one; the case's result is the best.

A provider that fails (after its retries) ends the rounds; the best so far stays the result.

The prompt is built like the repair prompt (:func:`kernelgen.model.prompt.repair_messages`): the task's
system message and one user message. Its times differ from run to run, so each round's request
keys the generation cache on the same message without them (``key_messages``): a re-run, or
``--llm replay:DIR``, finds the round's answer as long as the kernels shown are the same.

Without a GPU nothing is timed: the rounds are skipped (the result says so) and the case keeps
the compiler's facts of its kernel.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence, Union

from kernelgen.errors import Diagnostic, KernelgenError
from kernelgen.gpu.facts import KernelFacts, ProgramFacts, document_facts, format_facts, kernel_facts
from kernelgen.model.generation import GenerationCache, GenerationRecord, generate
from kernelgen.task.metrics import fast_p, geomean_speedup
from kernelgen.model.prompt import ANSWER_FORMAT, Message, format_diagnostics
from kernelgen.model.providers.base import GenerationRequest, Provider, ProviderError
from kernelgen.task.results import CaseResult, Optimization, OptimizationRound, Timing

if TYPE_CHECKING:
    from kernelgen.task.case import Settings
    from kernelgen.task.spec import Task

# answer -> its result through the full pipeline (timed on a GPU)
Evaluate = Callable[[str], CaseResult]
# answer -> the compiler's facts about the variant that is timed (a KernelgenError: unavailable)
FactsOf = Callable[[str], Union[KernelFacts, ProgramFacts]]

CPU_SKIP = "no timing without a GPU (CPU mode): optimization rounds skipped, the compiler's facts kept"
# How many diagnostics of a failed round the next prompt shows.
SHOWN_DIAGNOSTICS = 3


def answer_facts(task: Task, answer: str, settings: Settings) -> Union[KernelFacts, ProgramFacts]:
    """The facts about the variant of an answer's kernel that is timed: compiled for the
    task's bench sizes (their multiples of 16 specialized, as the timing launches it); a
    program's, per launch. Needs no GPU; the compile is a cache hit where the case was just
    timed. A task with calls: the variant of its first call (the one its timing reports)."""
    from kernelgen.check.checker import check
    from kernelgen.gpu.case import compiled_for
    from kernelgen.lang.parse import parse_kernel
    from kernelgen.task.case import Case

    if task.variants:
        from kernelgen.gpu.calls import compiled_for_call

        first = task.variant_tasks()[0]
        return kernel_facts(compiled_for_call(first, parse_kernel(answer), dict(task.bench_sizes), settings.target))
    case = Case(task, answer, settings, checked=check(parse_kernel(answer)))
    return document_facts(compiled_for(case, dict(task.bench_sizes), task.scalars))


# ---------------------------------------------------------------------------------------------
# The prompt


def measurement_lines(timing: Timing) -> list[str]:
    """How a kernel ran, as bullet lines."""
    sizes = ", ".join(f"{k}={v}" for k, v in timing.sizes.items()) or "its fixed shapes"
    lines = [f"- measured at {sizes}: {timing.kernel_ms:.4g} ms (median of CUDA-event-timed runs, L2 flushed)",
             f"- PyTorch eager: {timing.eager_ms:.4g} ms; your speedup over it: {timing.speedup:.3g}x"]
    if timing.compiled_ms is not None and timing.speedup_vs_compiled is not None:
        lines.append(f"- torch.compile: {timing.compiled_ms:.4g} ms; your speedup over it: "
                     f"{timing.speedup_vs_compiled:.3g}x")
    lines.append(f"- {timing.gbps:.4g} GB/s, {timing.tflops:.4g} TFLOP/s: {timing.roofline_fraction:.1%} of the "
                 "roofline (the time its bytes take at the measured bandwidth, or its FLOPs at peak, "
                 "over the measured time)")
    return lines


def rejection_lines(rejected: OptimizationRound, best_ms: float, measured: bool) -> list[str]:
    """Why the previous round's answer was not kept; ``measured=False`` leaves its time out."""
    if rejected.verdict == "failed":
        lines = [f"- it failed: {rejected.outcome.value} at {rejected.stage}"]
        shown = [Diagnostic(d.get("path", ""), d.get("code", ""), d.get("message", ""))
                 for d in rejected.diagnostics[:SHOWN_DIAGNOSTICS]]
        return lines + ([format_diagnostics(shown)] if shown else [])
    if measured and rejected.kernel_ms is not None:
        return [f"- it was correct but not faster: {rejected.kernel_ms:.4g} ms against {best_ms:.4g} ms"]
    return ["- it was correct but not faster"]


def optimize_messages(messages: Sequence[Message], best_answer: str, timing: Timing, facts: Sequence[str],
                      rejected: OptimizationRound | None = None, *,
                      measured: bool = True) -> tuple[Message, ...]:
    """The task's messages with the fastest correct kernel so far, how it ran (left out with
    ``measured=False``: the cache key's version), the compiler's facts, and why the last
    answer was not kept. One system and one user message, like the repair prompt."""
    system, task = messages[0], messages[-1]
    parts = [task.content, f"# Your fastest correct kernel so far\n{best_answer.strip()}"]
    if measured:
        parts.append("# How it ran\n" + "\n".join(measurement_lines(timing)))
    parts.append("# What the compiler made of it\n" + "\n".join(facts))
    if rejected is not None:
        parts.append(f"# Your previous answer (round {rejected.round}) was not kept\n"
                     + "\n".join(rejection_lines(rejected, timing.kernel_ms, measured)))
    parts.append("Write a faster kernel that computes the same result: the whole document again, not a "
                 "patch. If it is wrong or not faster, the kernel above stays your answer. " + ANSWER_FORMAT)
    return (system, Message(role="user", content="\n\n".join(parts)))


def round_request(request: GenerationRequest, best_answer: str, timing: Timing, facts: Sequence[str],
                  rejected: OptimizationRound | None) -> GenerationRequest:
    """One round's request: the prompt with the times, keyed on the prompt without them."""
    return request.model_copy(update={
        "messages": optimize_messages(request.messages, best_answer, timing, facts, rejected),
        "key_messages": optimize_messages(request.messages, best_answer, timing, facts, rejected, measured=False)})


# ---------------------------------------------------------------------------------------------
# The loop


@dataclass
class Attempt:
    """An answer of one round, its result and the compiler's facts about it."""

    answer: str
    result: CaseResult
    facts: KernelFacts | ProgramFacts | None
    facts_error: str | None = None

    def fact_lines(self) -> list[str]:
        if self.facts is not None:
            return format_facts(self.facts)
        return [f"- (the compiler's facts are unavailable: {self.facts_error})"]


def _facts(facts_of: FactsOf, answer: str) -> tuple[KernelFacts | ProgramFacts | None, str | None]:
    try:
        return facts_of(answer), None
    except KernelgenError as error:
        return None, "; ".join(f"{d.code}: {d.message}" for d in error.diagnostics)


def _round(index: int, attempt: Attempt, verdict: str, record: GenerationRecord | None) -> OptimizationRound:
    result, timing = attempt.result, attempt.result.timing
    completion = record.completion if record is not None else None
    return OptimizationRound(
        round=index, outcome=result.outcome, stage=result.stage, diagnostics=result.diagnostics, verdict=verdict,
        kernel_ms=timing.kernel_ms if timing else None, speedup=timing.speedup if timing else None,
        speedup_vs_compiled=timing.speedup_vs_compiled if timing else None,
        roofline_fraction=timing.roofline_fraction if timing else None,
        facts=attempt.facts.to_dict() if attempt.facts is not None else None,
        key=record.key if record is not None else None,
        latency_s=completion.latency_s if completion else 0.0, tokens_in=completion.tokens_in if completion else 0,
        tokens_out=completion.tokens_out if completion else 0)


def _verdict(result: CaseResult, best: CaseResult) -> str:
    if not result.ok:
        return "failed"
    if result.timing is None or best.timing is None:
        return "untimed"
    return "kept" if result.timing.kernel_ms < best.timing.kernel_ms else "slower"


def optimize(provider: Provider, request: GenerationRequest, first: CaseResult, rounds: int,
             evaluate: Evaluate, facts_of: FactsOf, cache: GenerationCache | None = None) -> CaseResult:
    """The best correct result of a correct first answer ``first`` and up to ``rounds`` answers
    to optimization prompts; every round is recorded in its ``optimization``.

    ``request`` is the task's request (its messages, sampling and sample index); ``evaluate``
    runs an answer through the pipeline (it is the seam where times come from), ``facts_of``
    gives the compiler's facts about an answer. When ``first`` was not timed (no GPU), no round
    runs and the result says why. A provider failure (after its retries) ends the rounds: the
    best answer so far stays the result, and ``optimization.stopped`` says what happened (a
    correct kernel is not lost to a rate limit).
    """
    if not first.ok:
        raise ValueError("optimization rounds start from a correct answer")
    answer = first.artifacts.get("answer", "")
    best = Attempt(answer, first, *_facts(facts_of, answer))
    history = [_round(0, best, "first", None)]
    best_round = 0
    skipped = CPU_SKIP if first.timing is None else None
    rejected: OptimizationRound | None = None
    stopped: str | None = None
    texts = []
    for index in range(1, 0 if skipped else rounds + 1):
        assert best.result.timing is not None
        current = round_request(request, best.answer, best.result.timing, best.fact_lines(), rejected)
        try:
            record = generate(provider, current, cache)
        except ProviderError as error:
            stopped = f"round {index}: {error}"
            break
        result = evaluate(record.text)
        result.artifacts["prompt"] = current.prompt_text()
        attempt = Attempt(record.text, result, *(_facts(facts_of, record.text) if result.ok else (None, None)))
        verdict = _verdict(result, best.result)
        history.append(_round(index, attempt, verdict, record))
        texts.append({"round": index, "verdict": verdict, "text": record.text})
        if verdict == "kept":
            best, best_round, rejected = attempt, index, None
        else:
            rejected = history[-1]
    final = best.result.model_copy(deep=True)
    final.optimization = Optimization(rounds=history, best_round=best_round, before=first.timing, skipped=skipped,
                                      stopped=stopped)
    final.artifacts["facts"] = "\n".join(best.fact_lines()) + "\n"
    if texts:
        final.artifacts["optimize_rounds"] = json.dumps(texts, indent=2)
    return final


# ---------------------------------------------------------------------------------------------
# The summary


def optimization_summary(track: str, cases: Sequence[CaseResult]) -> list[str]:
    """The summary's lines about optimization rounds: the scores before and after them, or
    (once) why they were skipped."""
    optimized = [c for c in cases if c.optimization is not None]
    if not optimized:
        return []
    if all(c.optimization.skipped for c in optimized):
        return [f"{track}: {optimized[0].optimization.skipped}"]
    ran = [c for c in optimized if not c.optimization.skipped]
    answers = sum(len(c.optimization.rounds) - 1 for c in ran)
    kept = sum(r.verdict == "kept" for c in ran for r in c.optimization.rounds)
    stopped = sum(c.optimization.stopped is not None for c in ran)
    lines = [f"{track}: optimization rounds: {answers} answers over {len(ran)} cases, {kept} kept"
             + (f"; {stopped} cases stopped early by a provider failure" if stopped else "")]
    scores = []
    for p in (1.0, 1.5):
        before, after = fast_p(cases, p, before=True), fast_p(cases, p)
        if before is not None and after is not None:
            scores.append(f"fast_{p:g} {before:.1%} -> {after:.1%}")
    before_mean, after_mean = geomean_speedup(cases, before=True), geomean_speedup(cases)
    if before_mean is not None and after_mean is not None:
        scores.append(f"geometric-mean speedup {before_mean[0]:.2f}x -> {after_mean[0]:.2f}x")
    if scores:
        lines.append(f"{track}: before -> after optimization: " + "; ".join(scores))
    return lines
