"""Every case ends in an outcome that the results and the summary count.

Hostile answers that once crashed kernelgen (a traceback, no result record, a case missing from
the summary) end in a schema or semantic error that points at the node at fault (they are in
the red-team catalogue, tests/redteam, with their paths); a crash of kernelgen itself ends in
``harness_error``, which counts as a failure.
"""

from __future__ import annotations

import json

from kernelgen.errors import Outcome
from kernelgen.lang.parse import kernel_to_json
from kernelgen.harness.pipeline import Settings, evaluate_answer
from kernelgen.harness.plugin import summarize
from kernelgen.task.spec import get_task

SETTINGS = Settings(shapes=2, compile=False)


def broken_reference_task():
    """A task whose reference returns two values for its one output: kernelgen itself fails
    (in run_reference), not the kernel."""
    task = get_task("relu")
    return task.model_copy(update={"reference": "def reference(x):\n    return x, x\n"})


def test_a_crash_of_kernelgen_is_a_harness_error_with_the_exception_and_where() -> None:
    task = broken_reference_task()
    result = evaluate_answer(task, kernel_to_json(task.golden), SETTINGS)
    assert (result.outcome, result.stage, result.ok) == (Outcome.HARNESS_ERROR, "verify", False)
    first = result.first_diagnostic()
    assert first.code == "uncaught_exception"
    assert first.message.startswith("ValueError: the reference of relu returned 2 values for 1 outputs")
    assert "verify.py" in first.message and "run_reference" in first.message


def test_the_summary_counts_a_crash_as_a_failure() -> None:
    """One correct answer and one crash is 50%, not the 100% of the correct one alone."""
    golden = kernel_to_json(get_task("relu").golden)
    ok = evaluate_answer(get_task("relu"), golden, SETTINGS)
    crashed = evaluate_answer(broken_reference_task(), golden, SETTINGS)
    lines = summarize([ok.model_dump_json(), crashed.model_dump_json()])
    header = next(line for line in lines if line.startswith("track"))
    row = next(line for line in lines if line.startswith("pipeline") and "easy" in line)
    assert "harness_error" in header
    assert row.split()[2:4] == ["2", "50%"]
    assert "pipeline: pass@1: 50.0% over 1 tasks" in lines


def test_a_crash_of_kernelgen_in_the_baseline_track_is_a_harness_error_too() -> None:
    from kernelgen.baseline.ablation import evaluate_baseline, reference_answer

    task = broken_reference_task()
    result = evaluate_baseline(task, reference_answer(task), Settings(shapes=1))
    assert (result.outcome, result.stage, result.track) == (Outcome.HARNESS_ERROR, "verify", "baseline")
    assert result.first_diagnostic().message.startswith("ValueError: the reference of relu returned 2 values")


def generic_golden(task_id: str, of: list[str]) -> str:
    """The task's golden AST with its one float dtype (f32) made a dtype variable T, in its
    signature and its body alike."""
    text = json.dumps(json.loads(kernel_to_json(get_task(task_id).golden)))
    assert '"dtype": "f32"' in text
    golden = json.loads(text.replace('"dtype": "f32"', '"dtype": "T"'))
    golden["dtypes"] = [{"name": "T", "of": of}]
    return json.dumps(golden)


def test_a_generic_kernel_runs_a_task_in_the_variant_its_signature_binds() -> None:
    result = evaluate_answer(get_task("elu"), generic_golden("elu", ["f64", "f32"]), SETTINGS)
    assert result.outcome == Outcome.OK, result.diagnostics


def test_a_generic_kernel_whose_variables_miss_the_tasks_dtype_is_refused() -> None:
    result = evaluate_answer(get_task("elu"), generic_golden("elu", ["f64"]), SETTINGS)
    assert (result.outcome, result.stage) == (Outcome.SEMANTIC_ERROR, "check")
    assert result.diagnostics[0]["code"] == "bad_dtype_variable"


def test_a_crash_in_an_executors_child_keeps_where_it_was_raised_there() -> None:
    """The parent's frames end in Executor.call; the child's traceback says where it happened."""
    from kernelgen.gpu.executor import Executor
    from kernelgen.task.results import CaseResult

    with Executor(name="test") as executor:
        try:
            executor.call(json.loads, "{not json")
        except ValueError as exc:
            fields = CaseResult.crash_fields(exc, "verify")
    message = fields["diagnostics"][0]["message"]
    assert fields["outcome"] == Outcome.HARNESS_ERROR
    assert "executor.py" in message and "in the child process:" in message
    assert "json/decoder.py" in message.split("in the child process:")[1]
