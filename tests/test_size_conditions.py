"""The conditions a kernel computes from its sizes alone, evaluated (kernelgen.task.size_conditions):
what they read through lets, params, host values and tensor infos; the language's integer
semantics; and the regions of the size ranges where they answer otherwise than at the minima,
which the crossing draws take (red-team rounds 11 and 20)."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from kernelgen.check.checker import check
from kernelgen.lang import nodes as L
from kernelgen.lang.parse import kernel_from_obj
from kernelgen.task.draws import crossing_draws
from kernelgen.task.size_conditions import Condition, condition_regions, evaluate, size_conditions
from kernelgen.task.spec import get_task

CATALOGUE = Path(__file__).parent / "redteam"


def _kernel(name: str):
    return check(kernel_from_obj(json.loads((CATALOGUE / f"{name}.json").read_text())["kernel"]))


def _wrong_at(name: str, task: str) -> list[dict[str, int]]:
    return [d.sizes for d in crossing_draws(get_task(task), _kernel(name), 0)]


def test_integer_operations_follow_the_language() -> None:
    """idiv and rem truncate toward zero, a division by zero gives 0, cdiv rounds up, lshr reads
    an i32's bits unsigned, and comparisons of ints with floats compare values."""
    def value(op: str, lhs: object, rhs: object) -> object:
        return evaluate(L.Binary(op=op, lhs=lhs, rhs=rhs), {}).item()

    assert value("idiv", -7, 2) == -3 and value("rem", -7, 2) == -1 and value("idiv", 5, 0) == 0
    assert value("cdiv", 7, 2) == 4 and value("lshr", -1, 28) == 15 and value("shr", -16, 2) == -4
    assert value("gt", 3, 2.5) is True and value("and", 12, 10) == 8
    n = torch.arange(1, 6)
    sqrt = L.Unary(op="sqrt", x=L.Cast(op="cast", x="N", dtype="f32"))
    assert evaluate(L.Binary(op="gt", lhs=sqrt, rhs=2.0), {"N": n}).tolist() == [False] * 4 + [True]
    assert evaluate(L.Binary(op="gt", lhs=L.TypeInfo(op="iinfo", dtype="i16", what="max"), rhs=32766), {}).item()


def test_i32_values_wrap_as_on_the_gpu_and_sizes_and_i64_do_not() -> None:
    """``seed * 4 == -8`` holds at an i32 seed of 2**30 - 2 (the product wraps), not for an i64
    one, nor for a size (int64); a cast to i32 wraps, a literal past i32 is i64 (round 24)."""
    times_four = L.Binary(op="eq", lhs=L.Binary(op="mul", lhs="seed", rhs=4), rhs=-8)
    assert evaluate(times_four, {"seed": torch.tensor([2 ** 30 - 2], dtype=torch.int32)}).item()
    assert not evaluate(times_four, {"seed": torch.tensor([2 ** 30 - 2], dtype=torch.int64)}).item()
    assert not evaluate(times_four, {"seed": torch.tensor([2 ** 30 - 2])}).item()
    assert evaluate(L.Cast(op="cast", x=2 ** 31, dtype="i32"), {}).item() == -2 ** 31
    assert evaluate(L.Binary(op="add", lhs=2 ** 31, rhs=1), {}).item() == 2 ** 31 + 1
    hashed = L.Binary(op="and", lhs=L.Binary(op="mul", lhs="seed", rhs=40503), rhs=0xFFFF)
    assert evaluate(hashed, {"seed": torch.tensor([60687], dtype=torch.int32)}).item() == (60687 * 40503) & 0xFFFF


def test_a_condition_reading_a_load_or_a_program_id_is_left_out() -> None:
    """Only sizes, literals and meta values: the golden of row_sum has none (no draw, no cost)."""
    task = get_task("row_sum")
    assert size_conditions(task, check(task.golden)) == []
    assert crossing_draws(task, check(task.golden), 0) == []


def test_thresholds_through_functions_the_shape_reading_cannot_undo_are_drawn_past() -> None:
    """sqrt of a product, log2s summed, a bitwise mask, a shift tested with ne, pow, an iinfo bound,
    numel and stride params: each row_sum variant drops its tail past M * N of about 2**20, and a
    crossing draw lands there."""
    for name in ("row_sum_sqrt_of_product", "row_sum_log2_sum", "row_sum_bitand_mask", "row_sum_shr_ne_zero",
                 "row_sum_pow_half", "row_sum_iinfo_threshold", "row_sum_numel_param"):
        assert any(s["M"] * s["N"] > 2 ** 20 for s in _wrong_at(name, "med/row_sum")), name


def test_a_band_gets_a_draw_inside_it() -> None:
    """``5000 < N < 6000`` and ``2**20 < M * N < 2**21``: each crossing draw one side of one end,
    and one inside both."""
    assert any(5000 < s["N"] < 6000 for s in _wrong_at("row_sum_n_window", "med/row_sum"))
    assert any(2 ** 20 < s["M"] * s["N"] < 2 ** 21 for s in _wrong_at("row_sum_product_window", "med/row_sum"))
    assert any(3000 < s["N"] % 4096 < 3100 for s in _wrong_at("rmsnorm_f16_rem_band", "hard/rmsnorm_f16"))


def test_conditions_that_need_sizes_unequal_are_met_on_the_ladder() -> None:
    """``M > 2 * N and N > 1024`` (one common value never meets it), and ``M > 4096`` with a loop to
    ``minimum(N, 2048)`` (two conditions of two sizes, met together)."""
    assert any(s["M"] > 2 * s["N"] and s["N"] > 1024 for s in _wrong_at("row_sum_tall_unequal", "med/row_sum"))
    assert any(s["M"] > 4096 and s["N"] > 2048
               for s in _wrong_at("rmsnorm_rows_many_rows_cap_columns", "med/rmsnorm_rows"))


def test_conditions_that_never_change_take_no_draw() -> None:
    """Twelve range checks that hold everywhere before the threshold that matters: they give no
    region, so the cap on draws is not spent on them."""
    task = get_task("med/row_sum")
    checked = _kernel("row_sum_decoys_then_product")
    assert len(size_conditions(task, checked)) > 12
    (draw, _) = crossing_draws(task, checked, 0)  # ordinary and extreme inputs
    assert draw.sizes["M"] * draw.sizes["N"] > 2 ** 20


def test_a_region_only_the_ladder_meets_is_drawn_beside_the_common_sweeps() -> None:
    """``M > 2 * N`` never holds at one common value, so the common sweep leaves it out and its
    codes number the other conditions' answers from bit 0: the ladder's region where it alone holds
    must not pass for the common sweep's region where ``M * N >= 2**20`` holds."""
    task = get_task("med/row_sum")
    tall = Condition(L.Binary(op="gt", lhs="M", rhs=L.Binary(op="mul", lhs=2, rhs="N")), frozenset({"M", "N"}), {})
    large = Condition(L.Binary(op="ge", lhs=L.Binary(op="mul", lhs="M", rhs="N"), rhs=2 ** 20),
                      frozenset({"M", "N"}), {})
    regions = condition_regions(task, [tall, large], lambda s: s["M"] * s["N"] <= 2 ** 22, 0, 12)
    assert any(s["M"] > 2 * s["N"] and s["M"] * s["N"] < 2 ** 20 for s in regions)
    assert any(s["M"] <= 2 * s["N"] and s["M"] * s["N"] >= 2 ** 20 for s in regions)


def test_floats_are_evaluated_in_the_kernels_dtypes() -> None:
    """An f32 sum stops growing past 2**24 (round 21's ``row_sum_f32_rounding_guard``), a literal
    takes its operand's dtype, a cast to bf16 rounds, and a value of no cast stays f64."""
    n = L.Cast(op="cast", x="N", dtype="f32")
    grows = L.Binary(op="eq", lhs=L.Binary(op="add", lhs=n, rhs=1.0), rhs=n)
    assert evaluate(grows, {"N": torch.tensor([2 ** 24 - 1, 2 ** 24])}).tolist() == [False, True]
    slope = torch.tensor([0.3], dtype=torch.float32)
    assert evaluate(L.Binary(op="eq", lhs="s", rhs=0.3), {"s": slope}).item()
    snap = L.Cast(op="cast", x="s", dtype="bf16")
    assert evaluate(L.Binary(op="eq", lhs=snap, rhs=0.30078125), {"s": slope}).item()
    assert not evaluate(L.Binary(op="eq", lhs=L.Binary(op="add", lhs="N", rhs=0.5), rhs=2.0 ** 30),
                        {"N": torch.tensor([2 ** 30])}).item()
    assert any(s["M"] * s["N"] >= 2 ** 24 for s in _wrong_at("row_sum_f32_rounding_guard", "med/row_sum"))
