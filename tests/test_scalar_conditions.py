"""The kernel's own tests of its scalar inputs, evaluated (kernelgen.task.scalar_conditions), and
the draws that set the scalars where those tests answer otherwise (red-team rounds 21 and 22:
a shortcut at ``negative_slope == 0`` passed every uniform draw)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelgen.check.checker import check
from kernelgen.lang.parse import kernel_from_obj
from kernelgen.task.draws import scalar_draws
from kernelgen.task.scalar_conditions import (literal_settings, scalar_order, scalar_settings, special_settings,
                                               with_scalars)
from kernelgen.task.spec import get_task
from kernelgen.task.verify import make_inputs

ROOT = Path(__file__).resolve().parents[1]


def _kernel(path: Path):
    return check(kernel_from_obj(json.loads(path.read_text())["kernel"]))


def _settings(name: str, task: str, seed: int = 0) -> list[dict]:
    path = ROOT / "tests" / "redteam" / f"{name}.json"
    return scalar_settings(get_task(task), _kernel(path), {"N": 1000}, 6, seed)


def test_a_value_the_kernel_tests_for_is_set() -> None:
    """``negative_slope == 0.0`` is never drawn from [-0.5, 2] uniformly; it is set here, with
    ordinary and with extreme inputs, at the joint draw's size."""
    settings = _settings("leaky_relu_zero_slope_default", "easy/leaky_relu")
    assert {"negative_slope": 0.0} in settings
    task = get_task("easy/leaky_relu")
    draws = scalar_draws(task, _kernel(ROOT / "tests" / "redteam" / "leaky_relu_zero_slope_default.json"), 0)
    crossing = [d for d in draws if d.sizes["N"] > 100000]
    assert {d.extreme for d in crossing} == {False, True} and all(d.kind == "scalar_crossing" for d in draws)
    assert any(with_scalars(task, {}, d.order) == {"negative_slope": 0.0} for d in crossing)


def test_a_band_is_met_inside_at_random() -> None:
    """``0.4 < slope < 0.42`` with 0.41 as the wrong value: the band's middle is the one value the
    wrong path gets right, so the value is drawn inside it (one per seed)."""
    values = {s["negative_slope"] for seed in range(4)
              for s in _settings("leaky_relu_slope_band_constant", "easy/leaky_relu", seed)
              if 0.4 < s["negative_slope"] < 0.42}
    assert len(values) >= 2


def test_a_pair_kept_ordered_stays_ordered() -> None:
    """hardtanh's ``min_val == max_val``: swept against the other's value, never past it (the
    prompt promises min_val <= max_val)."""
    settings = _settings("hardtanh_equal_bounds_drops_upper", "easy/hardtanh")
    assert any(s["min_val"] == s["max_val"] for s in settings)
    assert all(s["min_val"] <= s["max_val"] for s in settings)


def test_every_ranged_scalar_is_set_at_0_minus_0_and_1_whatever_the_kernel_reads() -> None:
    """A test through a loop carry, an if's result or a bitcast is not evaluated: the values kernels
    special-case are set anyway, every scalar at once (threshold and value both 0), in their
    ranges (masked_fill's value in [-4, 4]; softmax_temperature's in [0.1, 3] holds only 1), at
    small sizes; a golden without tests of its scalars gets only these."""
    assert [scalar_order(s) for s in special_settings(get_task("easy/threshold"))] == [
        "scalars:threshold=0.0,value=0.0", "scalars:threshold=-0.0,value=-0.0", "scalars:threshold=1.0,value=1.0"]
    assert [s["temperature"] for s in special_settings(get_task("med/softmax_temperature"))] == [1.0]
    task = get_task("easy/leaky_relu")
    draws = scalar_draws(task, check(task.golden), 0)
    assert len(draws) == 6 and all(d.sizes["N"] < 100000 for d in draws)


def test_hardtanh_specials_keep_the_bounds_ordered() -> None:
    """min_val at 1 with max_val at its ordinary value (-0.472) breaks min_val <= max_val: no such setting."""
    assert all(s["min_val"] <= s["max_val"] for s in special_settings(get_task("easy/hardtanh")))


def test_conditions_are_evaluated_in_the_scalars_dtype() -> None:
    """``slope == 0.3`` holds at the f32 of 0.3 (the literal takes the scalar's dtype), and
    ``(slope + 1024) - 1024 == 0`` for slopes f32 absorbs, not only below f64's 1e-13."""
    f32_point = _settings("leaky_relu_slope_eq_inexact_literal", "easy/leaky_relu")
    assert any(abs(s["negative_slope"] - 0.3) < 1e-7 for s in f32_point)
    absorbed = _settings("leaky_relu_f32_absorbed_tiny_slope", "easy/leaky_relu")
    assert any(0 < abs(s["negative_slope"]) < 6.2e-5 for s in absorbed)


def test_bands_narrower_than_the_grid_are_found_where_their_comparisons_turn_or_cross() -> None:
    """A band 2e-5 wide around sqrt(0.09) (no literal at 0.3), one between exp(-10) and exp(-9),
    and ``value == -threshold`` (a relation of two scalars, met where their difference crosses 0)."""
    assert any(abs(s["negative_slope"] - 0.3) < 1e-5 for s in _settings("leaky_relu_computed_center_band",
                                                                           "easy/leaky_relu"))
    assert any(4.5e-5 < s["negative_slope"] < 1.24e-4 for s in _settings("leaky_relu_exp_bounded_band",
                                                                            "easy/leaky_relu"))
    assert any(s["value"] == -s["threshold"] for s in _settings("threshold_value_is_neg_threshold", "easy/threshold"))


def test_decoys_do_not_spend_the_settings() -> None:
    """Four point tests that change nothing take turns with the band (1.2, 1.201); 79 tests that
    always hold take no bit, so ``slope == 0`` keeps its own."""
    assert any(1.2 < s["negative_slope"] < 1.201 for s in _settings("leaky_relu_four_point_decoys_band",
                                                                      "easy/leaky_relu"))
    assert {"negative_slope": 0.0} in _settings("leaky_relu_sixty_two_decoys", "easy/leaky_relu")


def test_the_setting_reaches_the_call_and_a_wrong_name_is_refused() -> None:
    task = get_task("easy/leaky_relu")
    order = scalar_order({"negative_slope": 0.0})
    assert make_inputs(task, {"N": 8}, 0, order=order)["negative_slope"] == 0.0
    with pytest.raises(ValueError, match="'slope', not a ranged scalar input of leaky_relu"):
        with_scalars(task, {}, "scalars:slope=0.0")


def test_a_condition_of_a_scalar_and_a_size_is_met_by_both() -> None:
    """``float(N) * negative_slope > 2**20``: N past 2**19 with the slope at its top (2.0), past
    the joint draw's sizes; a draw past the interpreter's budget judges a sample of programs."""
    task = get_task("easy/leaky_relu")
    draws = scalar_draws(task, _kernel(ROOT / "tests" / "redteam" / "leaky_relu_size_times_slope.json"), 0)
    assert any(d.sizes["N"] * with_scalars(task, {}, d.order)["negative_slope"] > 2 ** 20 for d in draws)


def test_a_band_of_a_scalar_that_holds_only_at_small_sizes_is_met_there_with_extreme_inputs_too() -> None:
    """``N < 1000 and 1.98 < slope < 1.99``: the sweep at the joint draw's N (N < 1000 false)
    finds the band; the mixed settings put the band's slope at an N of the minima's region, in
    its upper half (many elements, not N = 1), ordinary and extreme (round 24)."""
    task = get_task("easy/leaky_relu")
    draws = scalar_draws(task, _kernel(ROOT / "tests" / "redteam" / "leaky_relu_small_n_slope_band.json"), 0)
    met = [d for d in draws if 500 <= d.sizes["N"] < 1000 and 1.98 < with_scalars(task, {}, d.order)["negative_slope"] < 1.99]
    assert {d.extreme for d in met} == {False, True}


def test_the_numbers_a_hidden_test_compares_with_are_drawn() -> None:
    """A slope carried through a loop and tested against 0.5, alpha's bits tested against 1.5's
    (1069547520), ``(slope - 0.75) * v == 0`` (it reads a load): none is evaluated, and each
    number is set."""
    def literal(name: str, task: str, scalar: str) -> set:
        path = ROOT / "tests" / "redteam" / f"{name}.json"
        return {s[scalar] for s in literal_settings(get_task(task), _kernel(path), 8)}

    assert 0.5 in literal("leaky_relu_carry_slope_half", "easy/leaky_relu", "negative_slope")
    assert 1.5 in literal("elu_bitcast_alpha_three_halves", "easy/elu", "alpha")
    assert 0.75 in literal("leaky_relu_load_fused_slope", "easy/leaky_relu", "negative_slope")
