"""tools/golden_forms.py: every form it writes is a task file the harness loads and whose golden
the checker accepts, and a form a measurement kept as its golden's comment cites (issue 33)
stays one that can be written again. The forms' results are checked on the CPU by
``KERNELGEN_BENCH_DIR=DIR pytest bench --kg-mode cpu`` and timed on a GPU; this test keeps the
tool in step with the task format and the language."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import yaml

from kernelgen.check.checker import check
from kernelgen.task.spec import load_task_file

_PATH = Path(__file__).resolve().parent.parent / "tools" / "golden_forms.py"
_spec = importlib.util.spec_from_file_location("golden_forms", _PATH)
golden_forms = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden_forms)

# The numbers after K of each form's example in the tool's docstring.
EXAMPLES = {
    "swiglu-fused": [128, 128, 8, 3], "swiglu-two": [128, 128, 8, 3], "linear-bias": [128, 128, 64, 8, 3],
    "linear-gelu": [128, 256, 64, 8, 3], "maxpool-flat": [512, 8, 1], "prelu-flat": [1024, 4], "glu-flat": [1024, 4],
    "gemv-row-x": [4, 256, 4], "row-mean-rows": [8, 256, 4], "avgpool-flat": [512, 8, 1], "row-var-rows": [2, 512, 16],
    "col-mean-var-columns-first": [32, 32, 128, 2], "col-argmin-split": [32, 32, 128, 4], "col-sum-split": [32, 32, 128, 2],
}


def test_every_form_has_an_example_here() -> None:
    assert set(EXAMPLES) == set(golden_forms.FORMS)


@pytest.mark.parametrize("form", sorted(EXAMPLES))
def test_form_writes_a_task_whose_golden_checks(form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["golden_forms.py", "--out", str(tmp_path), form, "7", *map(str, EXAMPLES[form])])
    golden_forms.main()
    _, tier, name = golden_forms.FORMS[form]
    path = tmp_path / tier / f"{name}_v7.yaml"
    task = load_task_file(path)
    assert task.id == f"{name}_v7" and task.golden.name == name
    check(task.golden)


def test_split_forms_are_two_launches_through_scratch(tmp_path: Path) -> None:
    argmin = golden_forms.col_argmin_split(16, 32, 64, 4)["golden"]
    assert [launch["name"] for launch in argmin["launches"]] == ["split_argmin", "merge"]
    assert {s["name"]: s["dtype"] for s in argmin["scratch"]} == {"split_values": "f32", "split_rows": "i32"}
    sums = golden_forms.col_sum_split(16, 32, 64, 4)["golden"]
    assert "init" not in sums["outputs"][0]  # every column is stored by the merge: no zero fill, no atomics
    assert "atomic_add" not in yaml.safe_dump(sums)
    assert {m["name"]: m["value"] for m in sums["meta"]}["SPLIT"] == 16
    assert sums["launches"][0]["num_warps"] == 4


def test_linear_bias_writes_the_golden_with_the_f32_call_s_own_tile() -> None:
    """``linear-bias ... F32_BN``: BLOCK_N by dtype (a meta ``when``), as the task's golden has it."""
    from kernelgen.lang.parse import kernel_from_obj

    golden = golden_forms.linear_bias(128, 256, 64, 8, 3, 128)["golden"]
    kernel = kernel_from_obj(golden)
    assert check(kernel, dtypes={"T": "f16"}).meta["BLOCK_N"] == 256
    assert check(kernel, dtypes={"T": "f32"}).meta["BLOCK_N"] == 128
    bench = yaml.safe_load((_PATH.parent.parent / "bench" / "hard" / "linear_optional_bias.yaml").read_text())["golden"]
    assert golden == bench
