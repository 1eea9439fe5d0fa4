"""Scoring one TritonBench-T operator: call accuracy, execution accuracy, speedup.

* **Call accuracy**: the operator's own test function runs to the end with our wrapper in place
  of the reference (the test's namespace is the dataset file's, the wrapper's name rebound).
* **Execution accuracy**: every test case's result (tensors, tuples, numbers, strings) equals the
  reference's, the two runs seeded identically just before the test function (the dataset's
  tests draw unseeded random inputs). Tensors are compared with ``allclose`` and the project's
  dtype tolerances (:data:`kernelgen.task.spec.DEFAULT_TOLERANCE`), after checking that kind, shape
  and dtype agree; a Python number must come back as a Python number of the same type. Never
  as printed text: TritonBench's own ``1_exe_acc.py`` compares stdout, where ``tensor([...])``
  rounds to 4 digits (too loose and too strict at once), and where a test part that prints
  nothing (none of the sample's 30 does) compares equal whatever it computed.
* **Speedup** (GPU only, :mod:`kernelgen.tritonbench.speedup`): over the perf_T input sizes;
  with ``--kg-tune`` (GPU only) the wrapper tuned per perf-size bucket first
  (:mod:`kernelgen.tritonbench.tuning`), and the speedup as written recorded beside it. In CPU
  mode each perf call is still bound and checked (on meta tensors, nothing runs), so a correct
  wrapper that refuses the perf calls' dtypes or shapes is named without a GPU.

:func:`evaluate_operator` runs the whole case (answer, parse, check, compile, both accuracies,
speedup) into a :class:`~kernelgen.task.results.CaseResult` of track ``tritonbench``; on a GPU the
runs happen in the executor's child, so a faulting kernel fails this operator only.
:func:`track_summary` aggregates the results.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from kernelgen.errors import KernelgenError, Outcome
from kernelgen.task.metrics import geometric_mean
from kernelgen.task.results import CaseResult, GenerationInfo
from kernelgen.tritonbench.accuracy import (Accuracy, CallFailure, accuracy_job, accuracy_on_the_cpu,  # noqa: F401
                                             check_accuracy)
from kernelgen.tritonbench.loader import Operator

if TYPE_CHECKING:
    from kernelgen.model.generation import GenerationCache
    from kernelgen.harness.pipeline import Settings
    from kernelgen.model.providers.base import Provider, Sampling
    from kernelgen.tritonbench.generate import PromptKind

TRACK = "tritonbench"
# Perf problems that are not the answer's: an unreadable perf script, a call meta tensors cannot bind.
NOT_THE_ANSWERS = frozenset({"perf_unresolved", "perf_not_bound"})


# ---------------------------------------------------------------------------------------------
# The case


def evaluate_operator(operator: Operator, provider: Provider, settings: Settings, *,
                      prompt_kind: PromptKind = "simp", cache: GenerationCache | None = None,
                      sampling: Sampling | None = None) -> CaseResult:
    """One operator through every stage; never raises for a bad answer, an unsupported
    operator or a crash of kernelgen itself (see :class:`CaseResult`'s outcome, stage and
    diagnostics)."""
    from kernelgen.tritonbench.generate import answer_for, build_kernel, generation_info, instruction

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
            from kernelgen.gpu.timing import call_retried_alone

            accuracy = call_retried_alone(settings.executor, accuracy_job, operator, build.answer, settings.seed,
                                          timeout=settings.timeout_s)
        else:
            accuracy = accuracy_on_the_cpu(operator, build.answer, settings)
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

            configs = None
            if settings.tune != "off":  # off in CPU mode (the plugin says so once): nothing to time
                from kernelgen.tritonbench.tuning import tune_on_gpu

                try:
                    tuning = tune_on_gpu(operator, build.answer, settings)
                except KernelgenError as error:  # a correct answer stays correct: timed as written
                    extra["tuning_error"] = str(error)
                else:
                    extra["tuning"] = tuning.record()
                    artifacts["tuning"] = "\n".join(tuning.lines()) + "\n"
                    configs = tuning.configs()
            extra.update(measure_speedup(operator, build.answer, settings, configs).to_extra())
        else:
            # No perf size runs (CPU mode, or timing off), but each perf call is bound and checked
            # on meta tensors: a wrapper that refuses them would get no speedup on a GPU.
            from kernelgen.tritonbench.tuning import perf_buckets

            _, refused = perf_buckets(operator, build.kernel)
            extra["perf_problems"] = [d.to_dict() for d in refused]
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
    unjudged = sorted(c.task for c in cases if c.outcome == Outcome.NOT_JUDGED)
    if unjudged:
        lines.append(f"not judged on the CPU ({len(unjudged)}: the interpreter's budget ran out; counted apart, "
                     f"not as accurate): {', '.join(unjudged)}")
    refused = {}  # the first perf problem of each correct operator that is the answer's own
    for c in cases:
        answers = [p for p in c.extra.get("perf_problems") or [] if p["code"] not in NOT_THE_ANSWERS]
        if c.extra.get("execution_accuracy") and answers:
            refused[c.task] = answers[0]
    if refused:
        first = "; ".join(f"{task}: {problem['message'][:160]}" for task, problem in sorted(refused.items()))
        lines.append(f"correct, but refusing or failing perf calls (no speedup): {len(refused)}: {first}")
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
    return lines + tuning_summary(cases)


def tuning_summary(cases: list[CaseResult]) -> list[str]:
    """With ``--kg-tune``: the geometric-mean speedup as written and as tuned over the operators
    timed both ways, the tuning's time, and each operator whose tuning changed its speedup."""
    tuned = [c for c in cases if c.extra.get("tuning")]
    if not tuned:
        return []
    both = {c.task: (c.extra["speedup_as_written"], c.extra["speedup"]) for c in tuned
            if c.extra.get("execution_accuracy") and c.extra.get("speedup") and c.extra.get("speedup_as_written")}
    modes = ", ".join(sorted({c.extra["tuning"]["mode"] for c in tuned}))
    lines = []
    if both:
        lines.append(f"tuning ({modes}): speedup over the reference as written "
                     f"{geometric_mean([a for a, _ in both.values()]):.2f}x, tuned "
                     f"{geometric_mean([t for _, t in both.values()]):.2f}x over the {len(both)} operators timed both ways")
    seconds = sum(c.extra["tuning"]["seconds"] for c in tuned)
    buckets = sum(len(c.extra["tuning"]["buckets"]) for c in tuned)
    lines.append(f"tuning time: {seconds:.0f} s for {len(tuned)} operators, {buckets} perf-size buckets "
                 f"({seconds / len(tuned):.1f} s per operator)")
    for c in tuned:
        changed = [b for b in c.extra["tuning"]["buckets"] if b["config"] != b["as_written"]]
        if c.task in both and changed:
            as_written, speedup = both[c.task]
            lines.append(f"  {c.task}: as written {as_written:.2f}x, tuned {speedup:.2f}x "
                         f"({len(changed)} of {len(c.extra['tuning']['buckets'])} buckets changed)")
    return lines
