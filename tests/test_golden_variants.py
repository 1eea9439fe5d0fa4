"""tools/golden_variants.py: the spec items that write a loop's unrolling and a running mean's
weight give goldens the checker accepts with the change made where it says, and a spec that
names what the golden lacks stops with one message (issue 33: the goldens' comments cite these
variants, so they must stay writable)."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest
import yaml

from kernelgen.check.checker import check
from kernelgen.lang.parse import kernel_from_obj

_ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("golden_variants", _ROOT / "tools" / "golden_variants.py")
golden_variants = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden_variants)


def golden(tier: str, task: str) -> dict:
    return yaml.safe_load((_ROOT / "bench" / tier / f"{task}.yaml").read_text())["golden"]


def loops(document: dict) -> list[dict]:
    return golden_variants._nodes(document, "for", [])


def test_unroll_sets_every_loop_or_the_one_named() -> None:
    every = golden_variants.apply(golden("med", "center_rows"), "unroll=2")
    assert [loop["unroll"] for loop in loops(every)] == [2] * len(loops(every)) and len(loops(every)) >= 2
    one = golden_variants.apply(golden("med", "center_rows"), "loop1_unroll=4")
    assert [loop.get("unroll") for loop in loops(one)][:2] == [None, 4]
    check(kernel_from_obj(every))
    check(kernel_from_obj(one))
    with pytest.raises(SystemExit, match="for loops"):
        golden_variants.apply(golden("med", "center_rows"), "loop9_unroll=2")


def test_divide_rsqrt_takes_the_running_mean_s_weight_branch_free() -> None:
    before = golden("med", "row_var")
    after = golden_variants.apply(copy.deepcopy(before), "divide=rsqrt")
    text = json.dumps(after)
    assert '"op": "rsqrt"' in text and '{"op": "div", "lhs": 1.0' not in text and '{"op": "div", "lhs": 1.0' in json.dumps(before)
    check(kernel_from_obj(after))
    with pytest.raises(SystemExit, match="divides 1.0"):  # its weights are rsqrt(j + 1)^2 already
        golden_variants.apply(golden("med", "row_std_f16"), "divide=rsqrt")


def test_divide_reciprocal_multiplies_where_a_tile_is_divided_by_a_smaller_one() -> None:
    after = golden_variants.apply(golden("med", "softmax_temperature"), "divide=reciprocal")
    check(kernel_from_obj(after))
    assert '"op": "mul"' in json.dumps(after)
