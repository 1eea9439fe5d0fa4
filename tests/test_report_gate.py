"""``kernelgen report gate``: its drops, limits and exit codes, over synthetic runs with known numbers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelgen.cli import main
from kernelgen.report.compare import load_runs
from kernelgen.report.gate import GateError, gate
from kernelgen.task.results import CaseResult
from test_report_results import case, write_run

# Ten easy tasks, nine correct at 2.0x, one wrong: pass rate 90%, geomean 2.0x over 9 timed.
BASE = [case(f"t{i}", speedup=2.0) for i in range(9)] + [case("t9", "wrong_result")]


def runs(tmp_path: Path, base: list[CaseResult], new: list[CaseResult]) -> tuple[str, str]:
    return str(write_run(tmp_path / "base.jsonl", base)), str(write_run(tmp_path / "new.jsonl", new))


def gate_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    status = main(["report", "gate", *args])
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def row(output: str, check: str) -> list[str]:
    """The cells of one row of the gate's table (cells are separated by two spaces or more)."""
    line = next(line for line in output.splitlines() if line.startswith(check + " "))
    return re.split(r"\s{2,}", line.strip())


def test_pass_rate_drop_is_absolute_percentage_points(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 7 of 10 correct: 90% -> 70% is a drop of 20 points (not 22% of 90%).
    new = [*BASE[:7], case("t7", "wrong_result"), case("t8", "compile_error"), BASE[9]]
    base, run = runs(tmp_path, BASE, new)
    status, output = gate_main(capsys, base, run, "--max-pass-drop", "20")
    assert status == 0, output
    assert row(output, "pass rate") == ["pass rate", "90.0% (9/10)", "70.0% (7/10)", "20.00 pp", "20.00 pp", "ok"]
    assert output.rstrip().endswith("gate passed")
    status, output = gate_main(capsys, base, run, "--max-pass-drop", "19.9")
    assert status == 1
    assert row(output, "pass rate")[-1] == "FAIL"
    assert output.rstrip().endswith("gate FAILED: pass rate")


def test_speedup_drop_is_relative_to_the_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Every correct case at 1.8x instead of 2.0x: the geomean fell by 10% of the baseline's.
    new = [case(f"t{i}", speedup=1.8) for i in range(9)] + [BASE[9]]
    base, run = runs(tmp_path, BASE, new)
    status, output = gate_main(capsys, base, run, "--max-pass-drop", "0", "--max-speedup-drop", "10")
    assert status == 0, output
    assert row(output, "geomean speedup") == ["geomean speedup", "2.00x (9 timed)", "1.80x (9 timed)", "10.00 %",
                                              "10.00 %", "ok"]
    status, output = gate_main(capsys, base, run, "--max-speedup-drop", "9.9")
    assert status == 1
    assert row(output, "geomean speedup")[-1] == "FAIL"
    assert row(output, "pass rate")[-2:] == ["-", "not gated"]  # no limit given: shown, not gated


def test_a_better_run_passes_limits_of_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new = [case(f"t{i}", speedup=2.5) for i in range(10)]
    status, output = gate_main(capsys, *runs(tmp_path, BASE, new), "--max-pass-drop", "0", "--max-speedup-drop", "0")
    assert status == 0, output
    assert row(output, "pass rate")[3] == "-10.00 pp"  # a negative drop is a gain
    assert row(output, "geomean speedup")[3] == "-25.00 %"


def test_missing_tasks_fail_the_gate_unless_allowed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A lost shard: t0..t4 are gone, which leaves the pass rate and speedup as they were.
    new = [*BASE[5:], case("extra", speedup=2.0, tier="hard")]
    base, run = runs(tmp_path, BASE, new)
    status, output = gate_main(capsys, base, run, "--max-pass-drop", "100", "--max-speedup-drop", "100")
    assert status == 1
    assert row(output, "missing tasks") == ["missing tasks", "10", "6", "5", "0", "FAIL"]
    assert "tasks of the baseline missing from new (5):" in output
    assert all(f"  pipeline/easy/t{i}" in output.splitlines() for i in range(5))
    assert "tasks of new not in the baseline (1, not gated):" in output and "  pipeline/hard/extra" in output
    assert output.rstrip().endswith("gate FAILED: missing tasks")
    status, output = gate_main(capsys, base, run, "--max-pass-drop", "100", "--allow-missing")
    assert status == 0, output
    assert row(output, "missing tasks")[-2:] == ["any", "ok"]


def test_speedup_is_not_gated_without_a_timed_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    untimed = [case(f"t{i}") for i in range(9)] + [BASE[9]]  # a CPU-mode run: nothing timed
    status, output = gate_main(capsys, *runs(tmp_path, untimed, BASE), "--max-speedup-drop", "0")
    assert status == 0, output
    assert row(output, "geomean speedup")[1:] == ["-", "2.00x (9 timed)", "-", "0.00 %", "not gated"]
    assert "note: geomean speedup: the baseline timed no case: speedup not compared" in output


def test_a_new_run_that_timed_nothing_dropped_all_its_speedup(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    untimed = [case(f"t{i}") for i in range(9)] + [BASE[9]]
    status, output = gate_main(capsys, *runs(tmp_path, BASE, untimed), "--max-speedup-drop", "99")
    assert status == 1
    assert row(output, "geomean speedup")[1:] == ["2.00x (9 timed)", "-", "100.00 %", "99.00 %", "FAIL"]
    assert "note: geomean speedup: the new run timed no correct case" in output


def test_drops_equal_to_their_limit_pass_despite_rounding(tmp_path: Path) -> None:
    # In floating point 100 x (0.9 - 0.7) is 20.000000000000007 and 100 x (1 - 2.7/3.0) is
    # 10.000000000000009: a limit of exactly the drop must still pass.
    base = [case(f"t{i}", speedup=3.0) for i in range(9)] + [case("t9", "wrong_result")]
    new = [case(f"t{i}", speedup=2.7) for i in range(7)] + [case(f"t{i}", "wrong_result") for i in range(7, 10)]
    result = gate(*load_runs(runs(tmp_path, base, new)), max_pass_drop=20, max_speedup_drop=10)
    assert [c.drop for c in result.checks] == [pytest.approx(20.0), pytest.approx(10.0)]
    assert [c.drop > c.limit for c in result.checks] == [True, True]  # what a bare comparison would say
    assert not any(c.failed for c in result.checks) and result.passed


@pytest.mark.parametrize("problem, expected", [
    ("missing", "no such results file"),
    ("malformed", "bad_result_line"),
    ("empty", "holds no cases"),
    ("no limit", "nothing to gate on"),
])
def test_input_the_gate_cannot_judge_exits_2(problem: str, expected: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    base, run = runs(tmp_path, BASE, BASE)
    limits = ["--max-pass-drop", "1"]
    if problem == "missing":
        run = str(tmp_path / "absent.jsonl")
    elif problem == "malformed":
        Path(run).write_text('{"task": "t0"}\n')
    elif problem == "empty":
        Path(run).write_text("")
    else:
        limits = []
    status, output = gate_main(capsys, base, run, *limits)
    assert status == 2
    assert expected in output


@pytest.mark.parametrize("limit", ["-1", "nan", "inf", "two"])
def test_a_bad_limit_is_a_usage_error(limit: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["report", "gate", "a.jsonl", "b.jsonl", "--max-speedup-drop", limit])
    assert exit_.value.code == 2
    assert f"a limit is a number, 0 or more, not {limit!r}" in capsys.readouterr().err


def test_the_gate_function_rejects_negative_limits(tmp_path: Path) -> None:
    with pytest.raises(GateError) as error:
        gate(*load_runs(runs(tmp_path, BASE, BASE)), max_pass_drop=-1, max_speedup_drop=None)
    assert error.value.code == "negative_limit"


def test_help_defines_the_drops(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["report", "gate", "--help"])
    assert exit_.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "in percentage points, 100 x (BASE pass rate - NEW pass rate)" in text
    assert "in percent of the baseline's geometric-mean speedup" in text
    assert "exit 0 when NEW is within the limits, 1 when the gate failed, 2 on bad usage or input" in text
