"""Allure results for kernelgen cases (with allure-pytest's ``--alluredir``).

Per case, in the process that ran it (allure-pytest writes its result files there): the
prompt, the model's raw answer, the AST, the diagnostics, TTIR, PTX and the timings as
attachments; labels for the tier (parent suite and feature), track (suite and epic),
provider/model (sub-suite and labels of their own), the task (story), the failing stage, and
the outcome, mode and target as tags.

The test's Allure status follows from how the plugin ends it: ``ok`` passes; every other
outcome fails through ``pytest.fail("OUTCOME at STAGE: ...")``, so it is ``failed``, a
failure of the model's kernel (a schema or semantic error in the model's answer is the
model's failure too), except ``harness_error``, a crash of kernelgen while it judged the case,
which has a category of its own; ``not_judged`` (CPU mode: the interpreter's budget ran out)
skips through ``pytest.skip("not_judged at ...")`` into a category of skipped cases; an
exception outside the judging (a provider, the setup) is ``broken``.
``categories.json`` sorts the failures by outcome, matching that message.

Per session, on the controller: ``categories.json`` and ``environment.properties`` (GPU,
driver, CUDA, Triton, torch and kernelgen versions, provider, model, target).
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
from pathlib import Path
from typing import Any, Sequence

from kernelgen.gpu.devices import Gpu
from kernelgen.errors import Outcome, require
from kernelgen.task.results import CaseResult

CATEGORY_NAMES: dict[Outcome, str] = {
    Outcome.SCHEMA_ERROR: "Schema errors: the answer is not a kernel AST",
    Outcome.SEMANTIC_ERROR: "Semantic errors: the AST does not check",
    Outcome.LOWERING_ERROR: "Lowering errors",
    Outcome.COMPILE_ERROR: "Compile errors",
    Outcome.LAUNCH_ERROR: "Launch errors: the kernel faulted or could not start",
    Outcome.WRONG_RESULT: "Wrong results",
    Outcome.TIMEOUT: "Timeouts",
    Outcome.SYNTAX_ERROR: "Baseline: syntax errors",
    Outcome.NO_KERNEL: "Baseline: no kernel in the answer",
    Outcome.FORBIDDEN_CONSTRUCT: "Baseline: forbidden constructs",
    Outcome.RUNTIME_ERROR: "Runtime errors",
    Outcome.IMPLAUSIBLE_TIME: "Baseline: times faster than the GPU's roofline allows",
    Outcome.UNSUPPORTED: "Unsupported operators",
    Outcome.HARNESS_ERROR: "Crashes of kernelgen itself (harness_error): not the model's failures",
    Outcome.NOT_JUDGED: "Not judged on the CPU: the interpreter's budget ran out (skipped; a GPU judges them)",
}
HARNESS_ERRORS = "Harness errors (broken tests: not the model's failures)"


def failure_message_regex(outcome: Outcome) -> str:
    """The regex of the failure message the plugin gives a case with ``outcome``
    (``OUTCOME at STAGE: ...``, which allure-pytest prefixes with ``Failed: ``). It must match
    in full (Allure 2) and by search (Allure 3), in Java's and JavaScript's regex dialects."""
    return rf"^(?:Failed: |Skipped: )?{outcome.value} at [\s\S]*$"


def categories() -> list[dict[str, Any]]:
    """Allure's custom categories: one per failing outcome, then the harness's own errors."""
    rules: list[dict[str, Any]] = [
        {"name": CATEGORY_NAMES[outcome], "messageRegex": failure_message_regex(outcome),
         "matchedStatuses": ["skipped" if outcome == Outcome.NOT_JUDGED else "failed"]}
        for outcome in Outcome if outcome != Outcome.OK]
    rules.append({"name": HARNESS_ERRORS, "matchedStatuses": ["broken"]})
    return rules


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _joined(values: Sequence[str]) -> str:
    return ", ".join(sorted(set(values))) or "none"


def environment(results: Sequence[CaseResult], gpus: Sequence[Gpu]) -> dict[str, str]:
    """What the report's Environment panel shows: where and with what the run ran."""
    import torch

    return {
        "gpu": _joined([gpu.name for gpu in gpus]) if gpus else "none",
        "gpu.count": str(len(gpus)),
        "driver": _joined([gpu.driver for gpu in gpus]) if gpus else "none",
        "cuda": torch.version.cuda or "none (CPU build of torch)",
        "torch": torch.__version__,
        "triton": _version("triton"),
        "kernelgen": _version("kernelgen"),
        "python": platform.python_version(),
        "provider": _joined([r.provider for r in results]),
        "model": _joined([r.model for r in results]),
        "target": _joined([r.target for r in results]),
        "mode": _joined([r.mode for r in results]),
        "tiers": _joined([r.tier for r in results]),
    }


def _escape(text: str, key: bool) -> str:
    # Tab and form feed as Java writes them: a line's leading blanks (space, tab, form feed) are
    # skipped, so a key "\f#" written raw read back as a comment.
    text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t") \
        .replace("\f", "\\f")
    if key:
        for character in " :=":
            text = text.replace(character, "\\" + character)
        if text.startswith(("#", "!")):  # a comment line otherwise
            text = "\\" + text
    elif text.startswith(" "):  # whitespace after the separator is skipped otherwise
        text = "\\" + text
    return text


def format_properties(values: dict[str, str]) -> str:
    """A Java ``.properties`` file (what Allure reads ``environment.properties`` as)."""
    return "".join(f"{_escape(key, True)}={_escape(value, False)}\n" for key, value in values.items())


def parse_properties(text: str) -> dict[str, str]:
    """The ``key=value`` lines of a ``.properties`` file written by :func:`format_properties`."""
    values = {}
    for line in text.split("\n"):
        # Only space, tab and form feed are blanks in a .properties file (str.strip would also
        # take \x1c-\x1f, which a key may start with).
        if not line.strip(" \t\f") or line.lstrip(" \t\f").startswith(("#", "!")):
            continue
        key, value, escaped = [], [], False
        target = key
        for character in line:
            if escaped:
                target.append({"n": "\n", "r": "\r", "t": "\t", "f": "\f"}.get(character, character))
                escaped = False
            elif character == "\\":
                escaped = True
            elif character == "=" and target is key:
                target = value
            else:
                target.append(character)
        values["".join(key)] = "".join(value)
    return values


def write_session_files(alluredir: Path, results: Sequence[CaseResult], gpus: Sequence[Gpu]) -> None:
    """``categories.json`` and ``environment.properties`` into an Allure results folder."""
    alluredir.mkdir(parents=True, exist_ok=True)
    (alluredir / "categories.json").write_text(json.dumps(categories(), indent=2) + "\n", encoding="utf-8")
    (alluredir / "environment.properties").write_text(format_properties(environment(results, gpus)),
                                                      encoding="utf-8")


def describe(result: CaseResult) -> str:
    """The case's description in the report (Markdown): the outcome and the numbers behind it."""
    lines = [f"**outcome**: {result.outcome.value}" + (f" at {result.stage}" if result.stage else "")]
    first = result.first_diagnostic()
    if first is not None:
        lines.append(f"**first diagnostic**: `{first}`")
    lines.append(f"**answer**: {result.provider}/{result.model}, sample {result.sample}")
    lines.append(f"**mode**: {result.mode} ({result.target}); sizes checked: {len(result.sizes_checked)}")
    if result.timing is not None:
        t = result.timing
        call = f" (call {t.variant})" if t.variant else ""
        lines.append(f"**speedup over PyTorch eager**{call}: {t.speedup:.2f}x (kernel {t.kernel_ms:.4f} ms, "
                     f"eager {t.eager_ms:.4f} ms, {t.gbps:.0f} GB/s, {t.roofline_fraction:.0%} of roofline)")
        calls = result.extra.get("call_timings", {})
        if len(calls) > 1:
            lines.append("**each call**: " + "; ".join(f"{name} {c['speedup']:.2f}x ({c['kernel_ms']:.4f} ms)"
                                                       for name, c in calls.items()))
        compiled = result.extra.get("torch_compile", {})
        if t.compiled_ms is not None:
            lines.append(f"**speedup over torch.compile** ({compiled.get('mode')}): {t.speedup_vs_compiled:.2f}x "
                         f"(compiled {t.compiled_ms:.4f} ms; compiling took {compiled.get('compile_s', 0):.1f} s)")
        elif "error" in compiled:
            lines.append(f"**torch.compile failed**: {compiled['error']}")
    if result.tuning is not None:
        tuning = result.tuning
        as_written = f"{tuning.as_written_ms:.4f} ms" if tuning.as_written_ms else "untimed"
        lines.append(f"**tuned** ({tuning.mode}{', cached' if tuning.cached else ''}): {tuning.config} "
                     f"at {tuning.kernel_ms:.4f} ms; as written {tuning.as_written} at {as_written}; "
                     f"{tuning.candidates} timed, {tuning.pruned} pruned, {len(tuning.failed)} failed verification, "
                     f"{tuning.seconds:.1f} s")
    per_bucket = result.extra.get("tuning")  # the TritonBench track: one choice per perf-size bucket
    if per_bucket and result.extra.get("speedup_as_written"):
        changed = sum(b["config"] != b["as_written"] for b in per_bucket["buckets"])
        lines.append(f"**tuned per perf-size bucket** ({per_bucket['mode']}): {result.extra['speedup']:.2f}x the "
                     f"reference, as written {result.extra['speedup_as_written']:.2f}x; {changed} of "
                     f"{len(per_bucket['buckets'])} buckets changed, {per_bucket['seconds']:.1f} s")
    gpu = result.extra.get("gpu")
    if gpu:
        lines.append(f"**ran on**: GPU {gpu.get('index')} ({gpu.get('name')}), worker {gpu.get('worker')}")
    return "\n\n".join(lines)


def timings(result: CaseResult) -> dict[str, Any]:
    """The case's times: the GPU timing when there is one, and the harness's own."""
    return {"duration_s": result.duration_s, "generation": result.generation.model_dump(),
            "timing": result.timing.model_dump() if result.timing else None,
            "sizes_checked": result.sizes_checked,
            "kernel_times_ms": result.extra.get("kernel_times_ms"),
            "eager_times_ms": result.extra.get("eager_times_ms"),
            "tuning": result.tuning.model_dump() if result.tuning else result.extra.get("tuning"),
            "torch_compile": result.extra.get("torch_compile")}


def attach_case(result: CaseResult, title: str) -> None:
    """Labels, description and attachments of the Allure test that is running now."""
    allure = require("allure", "Allure results", "report")
    text, as_json = allure.attachment_type.TEXT, allure.attachment_type.JSON
    dynamic = allure.dynamic
    dynamic.title(title)
    dynamic.parent_suite(result.tier)
    dynamic.suite(result.track)
    dynamic.sub_suite(f"{result.provider}/{result.model}")
    dynamic.epic(result.track)
    dynamic.feature(result.tier)
    dynamic.story(result.task)
    dynamic.label("provider", result.provider)
    dynamic.label("model", result.model)
    dynamic.label("stage", result.stage or "done")
    dynamic.tag(result.outcome.value, result.mode, result.target)
    dynamic.description(describe(result))

    artifacts = result.artifacts
    if "prompt" in artifacts:
        allure.attach(artifacts["prompt"], name="prompt", attachment_type=text)
    if "answer" in artifacts:
        allure.attach(artifacts["answer"], name="answer (the model's raw text)", attachment_type=text,
                      extension="txt")
    if "ast" in artifacts:
        allure.attach(artifacts["ast"], name="AST", attachment_type=as_json)
    if result.diagnostics:
        report = {"outcome": result.outcome.value, "stage": result.stage, "diagnostics": result.diagnostics}
        allure.attach(json.dumps(report, indent=2), name="diagnostics", attachment_type=as_json)
    if "ttir" in artifacts:
        allure.attach(artifacts["ttir"], name="TTIR", attachment_type=text, extension="ttir")
    if "ptx" in artifacts:
        allure.attach(artifacts["ptx"], name="PTX", attachment_type=text, extension="ptx")
    allure.attach(json.dumps(timings(result), indent=2), name="timings", attachment_type=as_json)
