"""tools/mutants.py: the edits it makes of a golden (each operator where it applies, none of the meta
values or the signature), and its verdicts: a wrong mutant fails, an equivalent one survives."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from kernelgen.task.spec import get_task

_PATH = Path(__file__).resolve().parent.parent / "tools" / "mutants.py"
_spec = importlib.util.spec_from_file_location("mutants", _PATH)
mutants = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mutants)


def _golden(task_id: str) -> dict:
    return get_task(task_id).golden.model_dump(mode="json", by_alias=True, exclude_none=True)


def test_each_operator_edits_where_it_applies_and_never_the_meta_values() -> None:
    golden = _golden("med/row_sum")
    found = {(op, edit): mutant for op, edit, mutant in mutants.mutations(golden, ["M", "N"])}
    ops = {op for op, _ in found}
    assert {"edge", "int", "arith", "other", "narrow", "size", "stop", "drop"} <= ops
    assert not any(edit.startswith(("/meta", "/inputs", "/outputs", "/params", "/num_warps")) for _, edit in found)
    (stop,) = [m for (op, _), m in found.items() if op == "stop"]
    assert stop["body"][3]["stop"] == {"op": "sub", "lhs": golden["body"][3]["stop"], "rhs": 1}
    assert golden["body"][3]["stop"] == "N"  # the golden itself is left as it was
    (drop,) = [m for (op, _), m in found.items() if op == "drop"]
    assert len(drop["body"]) == len(golden["body"]) - 1


def test_a_wrong_mutant_fails_and_an_equivalent_one_survives() -> None:
    task = get_task("easy/elu")
    golden = _golden("easy/elu")
    found = {edit: mutant for _, edit, mutant in mutants.mutations(golden, ["N"])}
    outcome, first = mutants.judge(task, found["/body/1/value: lt -> le"])  # the mask reads one past the end
    assert outcome != "ok" and first
    outcome, _ = mutants.judge(task, found["/body/4/value/cond: gt -> ge"])  # x >= 0: both sides give 0 at 0
    assert outcome == "ok"


def test_a_grid_rounds_down_and_a_guard_is_forgotten() -> None:
    task = get_task("med/minmax_scale_rows")
    golden = _golden("med/minmax_scale_rows")
    found = {edit: mutant for op, edit, mutant in mutants.mutations(golden, ["M", "N"]) if op == "guard"}
    # the masked lanes' -inf forgotten: a max over the loaded chunk, whose masked lanes hold no value of the row
    forgotten = found["/body/4/body/3/value/rhs: where -> its x"]
    assert forgotten["body"][4]["body"][3]["value"]["rhs"] == golden["body"][4]["body"][3]["value"]["rhs"]["x"]
    outcome, first = mutants.judge(task, forgotten)
    assert outcome != "ok" and first
    (divide,) = [m for op, _, m in mutants.mutations(_golden("easy/elu"), ["N"]) if op == "divide"]
    assert divide["grid"][0]["op"] == "idiv"
    outcome, first = mutants.judge(get_task("easy/elu"), divide)
    assert outcome != "ok" and "unwritten" in first
