"""Draws that reach what a truncated kernel skips (kernelgen.task.draws): values sorted along every
axis, so a row's extremes lie past any leading block; a grid bounded above by a fixed cap counts as
covering that many blocks; loop bounds followed through lets; the launches planned at the ranges'
maxima without running them."""

from __future__ import annotations

import torch

from kernelgen.check.checker import check
from kernelgen.lang import nodes as L
from kernelgen.task.draws import block_extent, case_draws, limit_sizes, looped_sizes
from kernelgen.task.spec import get_task
from kernelgen.task.verify import make_inputs, sorted_along_axes


def test_sorting_along_every_axis_keeps_the_values_and_orders_each_axis() -> None:
    values = torch.randn(5, 7, 9, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
    for descending in (False, True):
        got = sorted_along_axes(values, descending)
        assert got.dtype == values.dtype
        assert torch.equal(got.flatten().sort().values, values.flatten().sort().values)
        for axis in range(3):
            steps = got.float().diff(dim=axis)
            assert bool((steps <= 0).all() if descending else (steps >= 0).all())


def test_a_sorted_draw_sorts_float_inputs_not_ids() -> None:
    task = get_task("embedding_bf16")
    sizes = {"T": 40, "V": 30, "D": 20}
    plain, ordered = make_inputs(task, sizes, 0), make_inputs(task, sizes, 0, order="ascending")
    assert torch.equal(ordered["ids"], plain["ids"])
    assert not torch.equal(ordered["weight"], plain["weight"])
    assert torch.equal(ordered["weight"], sorted_along_axes(plain["weight"]))


def test_sorted_draws_go_past_twice_the_extent_along_a_reduced_size_in_cpu_mode() -> None:
    task = get_task("row_argmax")
    checked = check(task.golden)
    extent = block_extent(checked)
    drawn = [d for d in case_draws(task, checked, shapes=3, seed=0, gpu=False) if d.kind == "sorted"]
    assert sorted(d.order for d in drawn) == ["ascending", "descending"]
    assert all(d.sizes["N"] > 2 * extent and d.sizes["M"] <= 17 for d in drawn)
    assert not [d for d in case_draws(task, checked, shapes=3, seed=0, gpu=True) if d.order is not None]


def test_a_grid_capped_by_a_literal_covers_the_cap_times_the_block() -> None:
    silu = get_task("silu").golden
    capped = L.Binary(op="minimum", lhs=L.Binary(op="cdiv", lhs="N", rhs="BLOCK"), rhs=16)
    assert block_extent(check(silu.model_copy(update={"grid": [capped]}))) == 16 * 1024
    assert block_extent(check(silu)) == 1024  # cdiv(N, BLOCK) has no bound: the grid grows with N


def test_a_loop_bound_read_through_a_let_is_a_looped_size() -> None:
    golden = get_task("row_argmax").golden
    loop = next(i for i, s in enumerate(golden.body) if isinstance(s, L.For))
    blocks = L.Let(op="let", name="chunks", value=L.Binary(op="cdiv", lhs="N", rhs="BLOCK"))
    stop = L.Binary(op="mul", lhs="chunks", rhs="BLOCK")
    body = [*golden.body[:loop], blocks, golden.body[loop].model_copy(update={"stop": stop}), *golden.body[loop + 1:]]
    task = get_task("row_argmax")
    assert looped_sizes(check(golden.model_copy(update={"body": body}))) & set(task.sizes) == {"N"}


def test_limits_are_each_size_at_its_maximum_then_all() -> None:
    task = get_task("embedding_bf16")
    found = limit_sizes(task)
    assert found[-1] == {name: r.max for name, r in task.sizes.items()}
    for name, r in task.sizes.items():
        assert {**{o: s.min for o, s in task.sizes.items()}, name: r.max} in found


def test_a_sorted_draw_that_overflows_the_reference_judges_nothing() -> None:
    """cumprod of values in [0.95, 1.05] sorted descending climbs past f32's largest value and
    comes back down: every f32 running product stays inf, so that draw is not held against a
    kernel; ascending (tiny but finite products) and the drawn order are judged."""
    from kernelgen.task.spec import get_task
    from kernelgen.task.verify import make_inputs, run_reference, order_overflows

    task, sizes = get_task("row_cumprod_long"), {"M": 2, "N": 7234}
    down = run_reference(task, make_inputs(task, sizes, 0, order="descending"))
    up = run_reference(task, make_inputs(task, sizes, 0, order="ascending"))
    assert order_overflows(task, sizes, 0, down) and not order_overflows(task, sizes, 0, up)
    assert not order_overflows(task, sizes, 0, run_reference(task, make_inputs(task, sizes, 0)))


def test_a_size_compared_for_equality_is_drawn_there_with_the_other_sizes_large() -> None:
    """vecmat with a path at M == 1 (red-team round 11): the other draws held M at 1 only with
    N at 1, where reading v with the wrong lanes is right; an equality draw puts N past 8000."""
    import json
    from pathlib import Path

    from kernelgen.lang.parse import kernel_from_obj
    from kernelgen.task.draws import equality_draws, size_equalities

    path = Path(__file__).parent / "redteam" / "vecmat_single_row_path_v_by_column_lanes.json"
    task = get_task("med/vecmat")
    checked = check(kernel_from_obj(json.loads(path.read_text())["kernel"]))
    assert size_equalities(checked) == [1]
    draws = equality_draws(task, checked)
    single_row = next(d for d in draws if d.sizes["M"] == 1)  # each size at 1 in turn, the other large
    assert single_row.sizes["N"] > 4096 and all(d.kind == "at_equality" for d in draws)
    assert any(d.sizes == single_row.sizes for d in case_draws(task, checked, 4, 0, False))
    assert size_equalities(check(task.golden)) == []  # the golden compares no size for equality: no cost there
