"""Programs of several launches (issue 16, item 2): scratch tensors, launches in order.

The goldens under ``tests/programs/`` are answers of several launches to bench tasks (a split-K
column sum, stats-then-normalize, a three-launch column mean and variance); the bench's own
one-launch goldens stay as they are. Each is run
through the whole pipeline (parse, check, compile every launch to sm_90, the interpreter against
the reference on the task's draws); wrong programs (phases swapped, scratch read before any
launch writes it, scratch nobody reads, a first phase that leaves elements unwritten, a race
in one launch) fail with a code and a path into the document.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_emit import triton_interpreter  # noqa: F401 - the fixture: Triton's interpreter in a subprocess

from kernelgen.draw.strategies import GeneratedKernel

from kernelgen.task.case import Settings
from kernelgen.check.checker import check
from kernelgen.check.checked import CheckedProgram, launches_of
from kernelgen.emit.module import emit_triton, wrapper_name
from kernelgen.errors import InterpreterError, SchemaError, SemanticError
from kernelgen.interp.execute import execute_call, interpret
from kernelgen.lang.parse import kernel_from_obj, kernel_to_json, parse_kernel
from kernelgen.harness.pipeline import evaluate_answer
from kernelgen.draw.programs import documents, programs
from kernelgen.task.spec import get_task

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = sorted((ROOT / "tests" / "programs").glob("*.yaml"))


def fixture(stem: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "tests" / "programs" / f"{stem}.yaml").read_text())


COL_SUM = fixture("col_sum_bf16_two_phase")["answer"]
STANDARDIZE = fixture("standardize_rows_two_phase")["answer"]


def diagnose(document: dict[str, Any]) -> list[tuple[str, str]]:
    try:
        check(kernel_from_obj(document))
    except (SchemaError, SemanticError) as error:
        return [(d.path, d.code) for d in error.diagnostics]
    return []


# -- the goldens -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_a_program_golden_passes_its_task_on_the_cpu(path: Path) -> None:
    """Checked, each launch compiled for sm_90, interpreted on every draw against the reference."""
    case = yaml.safe_load(path.read_text())
    result = evaluate_answer(get_task(case["task"]), json.dumps(case["answer"]), Settings(shapes=3))
    assert result.ok, result.diagnostics
    assert result.artifacts["ptx"].count(".visible .entry") == len(case["answer"]["launches"])
    assert [line for line in result.artifacts["ttir"].splitlines() if line.startswith("// launch")] == [
        f"// launch {i}: {launch['name']}" for i, launch in enumerate(case["answer"]["launches"])]


def test_a_program_is_checked_launch_by_launch() -> None:
    checked = check(kernel_from_obj(COL_SUM))
    assert isinstance(checked, CheckedProgram)
    assert [c.kernel.name for c in checked.launches] == ["partial_col_sums", "reduce_partials"]
    # each launch sees the document's outputs, then its scratch, as its tensors
    assert [o.name for o in checked.launches[1].kernel.outputs] == ["out", "partial"]
    assert checked.meta == {"SPLIT": 32, "BLOCK_M": 32, "BLOCK_N": 64}


def test_the_two_phase_column_sum_is_the_column_sum() -> None:
    x = torch.randn(70, 45).to(torch.bfloat16)
    checked = check(kernel_from_obj(COL_SUM), {"BLOCK_N": 16, "SPLIT": 8})
    out = interpret(checked, [x])["out"]
    torch.testing.assert_close(out, x.float().sum(0), rtol=1e-5, atol=1e-4)


def test_stats_then_normalize_standardizes_rows() -> None:
    x = torch.randn(5, 300) * 3 + 2
    out = interpret(check(kernel_from_obj(STANDARDIZE), {"BLOCK": 128}), [x])["out"]
    torch.testing.assert_close(out, (x - x.mean(1, keepdim=True)) / x.std(1, keepdim=True), rtol=1e-4, atol=1e-5)


# -- wrong programs --------------------------------------------------------------------------


def edited(document: dict[str, Any], **changes: Any) -> dict[str, Any]:
    copied = copy.deepcopy(document)
    copied.update(changes)
    return copied


def test_phases_in_the_wrong_order_read_scratch_before_it_is_written() -> None:
    swapped = edited(COL_SUM, launches=list(reversed(COL_SUM["launches"])))
    assert diagnose(swapped) == [("/launches/0", "read_before_write")]


def test_normalize_before_stats_reads_both_statistics_unwritten() -> None:
    swapped = edited(STANDARDIZE, launches=list(reversed(STANDARDIZE["launches"])))
    assert diagnose(swapped) == [("/launches/0", "read_before_write")] * 2
    with pytest.raises(SemanticError, match="loads scratch 'row_mean' before any launch stores into it"):
        check(kernel_from_obj(swapped))


def test_scratch_no_launch_writes_is_read_uninitialised_unless_zero() -> None:
    extra = {"name": "unused_sums", "dtype": "f32", "shape": ["N"]}
    reads_it = copy.deepcopy(COL_SUM)
    reads_it["scratch"].append(extra)
    body = reads_it["launches"][1]["body"]
    reads_it["launches"][1]["params"].append({"name": "unused_sums"})
    body.insert(3, {"op": "let", "name": "junk", "value": {"op": "load", "ptr": {"op": "add", "lhs": "unused_sums",
                                                                                  "rhs": "cols"},
                                                           "mask": "col_in_bounds"}})
    body[-1]["value"] = {"op": "add", "lhs": body[-1]["value"], "rhs": "junk"}
    assert diagnose(reads_it) == [("/launches/1", "read_before_write")]
    reads_it["scratch"][1]["zero"] = True
    assert diagnose(reads_it) == []
    x = torch.randn(9, 20).to(torch.bfloat16)
    torch.testing.assert_close(interpret(check(kernel_from_obj(reads_it)), [x])["out"], x.float().sum(0))


def test_scratch_no_launch_reads_is_an_error() -> None:
    unread = copy.deepcopy(COL_SUM)
    unread["scratch"].append({"name": "spare", "dtype": "f32", "shape": ["N"], "zero": True})
    assert diagnose(unread) == [("/scratch/1", "scratch_unread")]


def test_an_output_no_launch_writes_is_an_error() -> None:
    phase_one_only = edited(COL_SUM, launches=COL_SUM["launches"][:1])
    assert ("/outputs/0", "output_not_written") in diagnose(phase_one_only)


def test_atomics_write_an_output_with_init_and_read_what_they_update() -> None:
    """An output written only by atomic adds (it starts at 0) is written; an atomic into a
    scratch no launch before has stored reads poison unless the scratch is zero."""
    atomic = copy.deepcopy(COL_SUM)
    atomic["outputs"][0]["init"] = 0
    final = atomic["launches"][1]["body"][-1]
    atomic["launches"][1]["body"][-1] = {"op": "atomic_add", "ptr": final["ptr"], "val": final["value"],
                                         "mask": final["mask"]}
    assert diagnose(atomic) == []
    x = torch.randn(9, 20).to(torch.bfloat16)
    torch.testing.assert_close(interpret(check(kernel_from_obj(atomic)), [x])["out"], x.float().sum(0))
    into_scratch = copy.deepcopy(COL_SUM)
    first = into_scratch["launches"][0]["body"][-1]
    into_scratch["launches"][0]["body"][-1] = {"op": "atomic_add", "ptr": first["ptr"], "val": first["value"],
                                               "mask": first["mask"]}
    assert diagnose(into_scratch) == [("/launches/0", "read_before_write")]
    into_scratch["scratch"][0]["zero"] = True
    assert diagnose(into_scratch) == []


def test_a_first_phase_that_misses_elements_fails_when_run() -> None:
    """Statically fine (phase 1 does store into the scratch), but its grid covers half the
    splits: phase 2 reads partial rows no launch wrote; the interpreter names the element."""
    short = copy.deepcopy(COL_SUM)
    short["launches"][0]["grid"][0] = {"op": "idiv", "lhs": "SPLIT", "rhs": 2}
    checked = check(kernel_from_obj(short))
    with pytest.raises(InterpreterError) as error:
        execute_call(checked, [torch.randn(40, 10).to(torch.bfloat16)])
    (found,) = error.value.diagnostics
    assert (found.path, found.code) == ("/launches/1/body/3/value", "read_before_write")  # the load
    assert "partial[16, 0]" in found.message and "the scratch zero" in found.message
    result = evaluate_answer(get_task("col_sum_bf16"), json.dumps(short), Settings(shapes=2, compile=False))
    assert (result.outcome.value, result.diagnostics[0]["code"]) == ("wrong_result", "read_before_write")


def test_a_race_is_judged_within_its_launch_and_named_by_the_document_path() -> None:
    """Phase 2 written with every program storing all columns of block 0: a race in launch 1."""
    racy = copy.deepcopy(COL_SUM)
    racy["launches"][1]["body"][0]["value"] = {"op": "arange", "size": "BLOCK_N"}
    with pytest.raises(InterpreterError) as error:
        execute_call(check(kernel_from_obj(racy)), [torch.randn(8, 200).to(torch.bfloat16)])
    assert [(d.path, d.code) for d in error.value.diagnostics] == [("/launches/1/body/4", "race")]


def test_diagnostics_of_a_launch_point_into_the_document() -> None:
    wrong = copy.deepcopy(COL_SUM)
    wrong["launches"][1]["body"][1]["value"]["rhs"] = "K"
    assert diagnose(wrong) == [("/launches/1/body/1/value/rhs", "undefined_name")]
    # the document's shared parts are reported once, though every launch is checked with them
    wrong["scratch"][0]["shape"][1] = 1.5
    assert diagnose(wrong) == [("/scratch/0/shape/1", "needs_int")]


def test_a_document_is_one_kernel_or_a_program() -> None:
    both = edited(COL_SUM, grid=[1])
    assert diagnose(both) == [("/grid", "bad_program")]
    neither = {k: v for k, v in COL_SUM.items() if k not in ("launches", "scratch")}
    assert diagnose(neither) == [("/params", "missing_field"), ("/grid", "missing_field"), ("/body", "missing_field")]
    twice = edited(COL_SUM, launches=[COL_SUM["launches"][0], {**COL_SUM["launches"][1], "name": "partial_col_sums"}])
    assert diagnose(twice) == [("/launches/1/name", "duplicate_name")]


def test_a_bad_grid_is_named_by_its_launch() -> None:
    big = copy.deepcopy(COL_SUM)
    big["launches"][0]["grid"] = ["SPLIT", 70000]
    with pytest.raises(Exception) as error:
        execute_call(check(kernel_from_obj(big)), [torch.randn(4, 4).to(torch.bfloat16)])
    assert [(d.path, d.code) for d in error.value.diagnostics] == [("/launches/0/grid", "bad_grid")]


# -- emitted Triton and the command line -----------------------------------------------------


def test_the_emitted_program_has_a_kernel_per_launch_and_launches_in_order() -> None:
    source = emit_triton(check(kernel_from_obj(COL_SUM)))
    assert source.count("@triton.jit") == 2
    first, second = source.index("partial_col_sums_kernel[grid]("), source.index("reduce_partials_kernel[grid](")
    assert source.index("partial = torch.empty((SPLIT, N)") < first < second
    zeroed = copy.deepcopy(COL_SUM)
    zeroed["scratch"][0]["zero"] = True
    assert "partial = torch.zeros((SPLIT, N)" in emit_triton(check(kernel_from_obj(zeroed)))


@pytest.mark.parametrize("stem, meta, args", [
    ("col_sum_bf16_two_phase", {"SPLIT": 4, "BLOCK_M": 16, "BLOCK_N": 16}, lambda: [torch.randn(37, 21).to(torch.bfloat16)]),
    ("standardize_rows_two_phase", {"BLOCK": 16}, lambda: [torch.randn(3, 37) + 1.5]),
    ("col_mean_var_three_phase", {"SPLIT": 4, "BLOCK_M": 16, "BLOCK_N": 16}, lambda: [torch.rand(37, 21) * 4 + 100]),
])
def test_the_emitted_program_runs_in_tritons_interpreter(stem: str, meta: dict[str, int], args: Any,
                                                         tmp_path: Path) -> None:
    checked = check(kernel_from_obj(fixture(stem)["answer"]), meta)
    inputs = args()
    expected = interpret(checked, inputs)
    (tmp_path / "program.py").write_text(emit_triton(checked))
    torch.save(inputs, tmp_path / "inputs.pt")
    script = ("import torch, program\n"
              "from kernelgen.baseline.interpreter_fixes import patch_triton_interpreter_index\n"
              "patch_triton_interpreter_index()\n"
              f"out = program.{wrapper_name(checked.kernel)}(*torch.load('inputs.pt'))\n"
              "torch.save(out, 'out.pt')\n")
    env = {"TRITON_INTERPRET": "1", "PYTHONPATH": f"{ROOT}:{tmp_path}", "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    actual = torch.load(tmp_path / "out.pt")
    actual = [actual] if isinstance(actual, torch.Tensor) else list(actual)
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected.values()):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)


def test_the_compile_command_emits_each_launch(tmp_path: Path) -> None:
    path = tmp_path / "program.json"
    path.write_text(json.dumps(COL_SUM))
    run = subprocess.run([sys.executable, "-m", "kernelgen.cli", "compile", str(path), "--emit", "ttir"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "// launch 0: partial_col_sums" in run.stdout and "// launch 1: reduce_partials" in run.stdout
    assert run.stdout.count("tt.func public") == 2


def test_the_compilers_facts_are_given_per_launch(tmp_path: Path) -> None:
    from kernelgen.cli import main as cli_main

    path = tmp_path / "program.json"
    path.write_text(json.dumps(COL_SUM))
    run = subprocess.run([sys.executable, "-m", "kernelgen.cli", "compile", str(path), "--facts"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "- launch 0 (partial_col_sums):" and "- launch 1 (reduce_partials):" in lines
    assert sum("registers per thread" in line for line in lines) == 2
    assert cli_main(["compile", str(path), "--emit", "cubin", "-o", str(tmp_path / "k.cubin")]) == 1
    assert cli_main(["compile", str(path), "--emit", "cubin", "--launch", "1", "-o", str(tmp_path / "k.cubin")]) == 0
    assert (tmp_path / "k.cubin").read_bytes()[:4] == b"\x7fELF"


# -- on the GPU: verification only (timing these is for the benchmark) -----------------------


@pytest.mark.gpu
@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_a_program_golden_passes_its_task_on_the_gpu(path: Path, gpu_settings: Settings) -> None:
    case = yaml.safe_load(path.read_text())
    result = evaluate_answer(get_task(case["task"]), json.dumps(case["answer"]), gpu_settings)
    assert result.ok, result.diagnostics


@pytest.mark.gpu
def test_a_first_phase_that_misses_elements_fails_on_the_gpu(gpu_settings: Settings) -> None:
    """The unwritten scratch rows are NaN (poison) on the GPU too: the sum is wrong."""
    short = copy.deepcopy(COL_SUM)
    short["launches"][0]["grid"][0] = {"op": "idiv", "lhs": "SPLIT", "rhs": 2}
    result = evaluate_answer(get_task("col_sum_bf16"), json.dumps(short), gpu_settings)
    assert result.outcome.value == "wrong_result", result.diagnostics


# -- random programs (kernelgen.draw.programs) -------------------------------------------

GENERATED = settings(max_examples=30, deadline=None, database=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                            HealthCheck.function_scoped_fixture])


@GENERATED
@given(programs())
def test_random_programs_check_and_write_every_output_element(generated: GeneratedKernel) -> None:
    assert generated.kernel.is_program and "several launches" in generated.constructs()
    checked = check(generated.kernel)
    run = execute_call(checked, generated.arguments(seed=1))
    assert set(run.outputs) == set(generated.tolerances)
    for name, written in run.written.items():
        assert written.all(), f"{name}: {int((~written).sum())} elements unwritten"
    assert parse_kernel(kernel_to_json(generated.kernel)) == generated.kernel


@settings(max_examples=8, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(programs())
def test_random_programs_compile_every_launch(generated: GeneratedKernel) -> None:
    from kernelgen.gpu.compile import compile_document

    compiled = compile_document(check(generated.kernel), "sm_90", cache=False)
    assert [c.name for c in compiled] == ["produce", "consume"]
    assert all(c.cubin[:4] == b"\x7fELF" for c in compiled)


@settings(max_examples=6, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_programs_match_the_interpreter_in_tritons_interpreter(data: st.DataObject,
                                                                       triton_interpreter: Any) -> None:
    from test_emit import combines_scalar_and_block_bools, computes_in_bf16, rounds_to_bf16

    generated = data.draw(programs())
    checked = check(generated.kernel)
    if any(f(each) for each in launches_of(checked)
           for f in (computes_in_bf16, rounds_to_bf16, combines_scalar_and_block_bools)):
        return  # what Triton's interpreter gets wrong (see test_emit)
    args = generated.arguments(seed=5)
    expected = interpret(checked, args)
    actual = triton_interpreter.run(emit_triton(checked), wrapper_name(checked.kernel), list(args.values()))
    problems = generated.mismatches(expected, dict(zip(expected, actual)))
    assert not problems, "\n".join(problems) + "\n" + emit_triton(checked)


def test_documents_draw_programs_and_kernels() -> None:
    seen: set[bool] = set()

    @settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(documents())
    def draw(generated: GeneratedKernel) -> None:
        seen.add(generated.kernel.is_program)

    draw()
    assert seen == {True, False}


def test_a_program_is_a_python_function_for_tritonbench() -> None:
    """The TritonBench track calls an answer like the operator (kernelgen.gpu.function):
    a program runs there too (interpreted on CPU tensors, launched in order on CUDA ones)."""
    from kernelgen.gpu.function import wrapper

    standardize = wrapper(json.dumps(STANDARDIZE), "standardize")
    x = torch.randn(4, 50) + 3
    torch.testing.assert_close(standardize(x), (x - x.mean(1, keepdim=True)) / x.std(1, keepdim=True),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.gpu
def test_a_program_runs_for_tritonbench_on_the_gpu() -> None:
    from kernelgen.gpu.function import wrapper

    col_sum = wrapper(json.dumps(COL_SUM), "col_sum")
    x = torch.randn(300, 77, device="cuda").to(torch.bfloat16)
    torch.testing.assert_close(col_sum(x), x.float().sum(0), rtol=1e-4, atol=1e-3)
