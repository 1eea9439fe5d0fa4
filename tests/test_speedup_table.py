"""tools/speedup_table.py: the repeat spread that tells a golden at parity with torch.compile
from one below it (issue 33)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "tools" / "speedup_table.py"
_spec = importlib.util.spec_from_file_location("speedup_table", _PATH)
speedup_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(speedup_table)


def case(task: str, tier: str, written: float, final: float, compiled: float, kept: bool = True,
         cached: bool = False) -> dict:
    config = {"meta": {"BLOCK": 1024}, "num_warps": 8}
    return {"task": task, "tier": tier, "outcome": "ok",
            "timing": {"kernel_ms": final, "eager_ms": 2 * final, "compiled_ms": compiled, "roofline_fraction": 0.8},
            "tuning": {"config": config if kept else {**config, "num_warps": 4}, "as_written": config,
                       "as_written_ms": written, "cached": cached}}


def steady(n: int) -> list[dict]:
    """n cases timed twice, two of them 5% apart: a spread of exactly 1.05 over up to 20 pairs."""
    return [case(f"s{i}", "med", 1.0, 1.05 if i < 2 else 1.0, 1.0) for i in range(n)]


def test_the_repeat_spread_is_the_90th_percentile_of_same_configuration_pairs_either_way() -> None:
    cases = [case(f"t{i}", "med", 1.0, 1.0 + i / 100, 1.0) for i in range(10)]  # 1.00 .. 1.09 slower
    cases.append(case("faster", "med", 1.1, 1.0, 1.0))  # 10% faster the second time counts as 1.1
    cases.append(case("retuned", "med", 2.0, 1.0, 1.0, kept=False))  # another configuration: no pair
    cases.append(case("cached", "med", 3.0, 1.0, 1.0, cached=True))  # its search was another run's: no pair
    spread, pairs = speedup_table.repeat_spread(cases)
    assert pairs == 11
    assert spread == pytest.approx(1.09)


def test_a_golden_just_below_torch_compile_is_counted_within_the_spread_not_at_or_above() -> None:
    cases = steady(9) + [case("b", "hard", 1.0, 1.0, 0.97), case("c", "hard", 1.0, 1.0, 0.5),
                         case("d", "hard", 1.0, 1.0, 1.2), case("e", "hard", 1.0, 1.0, 0.9)]
    text = speedup_table.table(cases)
    # spread 1.05 over 13 pairs: b (0.97x) is within it, c (0.5x) and e (0.9x) are not
    assert "hard: 4 timed" in text and "1 at or above 1.0x tuned, 1 more within the repeat spread" in text
    assert "differs by up to 5.0%" in text


def test_too_few_pairs_give_no_spread() -> None:
    cases = steady(speedup_table.MIN_PAIRS - 1)
    assert speedup_table.repeat_spread(cases) is None
    assert speedup_table.repeat_spread(steady(speedup_table.MIN_PAIRS)) is not None


def test_without_tuning_there_is_no_spread_to_speak_of() -> None:
    cases = [{"task": "a", "tier": "easy", "outcome": "ok",
              "timing": {"kernel_ms": 1.0, "eager_ms": 1.0, "compiled_ms": 1.0, "roofline_fraction": 0.5}}]
    assert speedup_table.repeat_spread(cases) is None
    assert "repeat spread" not in speedup_table.table(cases)


def test_the_attainable_floor_adds_the_timers_fixed_cost_to_the_roofline_time() -> None:
    """A 20 us kernel at roofline fraction 0.8 has 16 us of roofline time; with 5 us of fixed cost its
    floor is 21 us, above the kernel itself (1.05 of it) and above torch.compile at 30 us (0.70)."""
    cases = [case("a", "med", 0.020, 0.020, 0.030), case("b", "med", 0.010, 0.010, 0.010)]
    s = speedup_table.speeds(cases[0], fixed_ms=0.005)
    assert s["floor_ms"] == pytest.approx(0.021)
    text = speedup_table.table(cases, fixed_us=5.0)
    assert "| 0.0210 | 1.05 / 0.70 |" in text
    # ceiling: torch.compile over the floor per case (30/21 and 10/13), their geometric mean
    assert "goldens at their attainable floors would be 1.05x torch.compile" in text
    assert "floor" not in speedup_table.table(cases)


def test_goldens_below_torch_compile_are_split_by_whether_both_are_at_the_floor() -> None:
    """5 us fixed: a 20 us golden at roofline fraction 0.8 has a 21 us floor, and against torch.compile
    at 19 us both are past 0.9 of it; a 40 us golden at 0.4 (16 us of roofline time) is at 0.53 of
    its floor, torch.compile at 30 us at 0.7; a scatter whose roofline fraction is above 1 has none."""
    far = case("far", "hard", 0.040, 0.040, 0.030)
    far["timing"]["roofline_fraction"] = 0.4
    cases = steady(10) + [case("near", "hard", 0.020, 0.020, 0.019), far]
    scatter = case("scatter", "hard", 0.005, 0.005, 0.004)
    scatter["timing"]["roofline_fraction"] = 6.5
    text = speedup_table.table(cases + [scatter], fixed_us=5.0)
    assert "hard: 3 below torch.compile past the spread; 1 of them with both at 90% of the attainable floor or " \
           "more (near); the rest: far, scatter" in text
