"""Draws that reach what a truncated kernel skips (kernelgen.task.draws): values sorted along every
axis, so a row's extremes lie past any leading block; a grid bounded above by a fixed cap counts as
covering that many blocks; loop bounds followed through lets; the launches planned at the ranges'
maxima without running them."""

from __future__ import annotations

import json

import torch

from kernelgen.check.checker import check
from kernelgen.harness.pipeline import Settings, evaluate_answer
from kernelgen.lang import nodes as L
from kernelgen.task.draws import case_draws, limit_sizes
from kernelgen.task.size_reads import block_extent, looped_sizes
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
    from pathlib import Path

    from kernelgen.lang.parse import kernel_from_obj
    from kernelgen.task.draws import equality_draws
    from kernelgen.task.size_reads import size_equalities

    path = Path(__file__).parent / "redteam" / "vecmat_single_row_path_v_by_column_lanes.json"
    task = get_task("med/vecmat")
    checked = check(kernel_from_obj(json.loads(path.read_text())["kernel"]))
    assert size_equalities(checked) == [1]
    draws = equality_draws(task, checked)
    single_row = next(d for d in draws if d.sizes["M"] == 1)  # each size at 1 in turn, the other large
    assert single_row.sizes["N"] > 4096 and all(d.kind == "at_equality" for d in draws)
    assert any(d.sizes == single_row.sizes for d in case_draws(task, checked, 4, 0, False))
    assert size_equalities(check(task.golden)) == []  # the golden compares no size for equality: no cost there


def _round12(name: str):
    from pathlib import Path

    entry = json.loads((Path(__file__).parent / "redteam" / f"{name}.json").read_text())
    return check(L.Kernel.model_validate(entry["kernel"]))


def test_a_size_tested_for_a_multiple_of_a_block_is_drawn_at_one() -> None:
    """relu with an unmasked path where N % 2048 == 0 (NaN to 0 there): the draws past the extent
    avoid its multiples, the joint and offset draws take odd sizes; a draw at one is added."""
    from kernelgen.task.draws import multiple_draws
    from kernelgen.task.size_reads import size_multiples

    checked = _round12("relu_even_n_path_nan_to_zero")
    assert size_multiples(checked) == [2048]
    (draw,) = [d for d in multiple_draws(get_task("relu"), checked, 0) if d.kind == "at_multiple"]
    assert draw.sizes == {"N": 4096} and draw.kind == "at_multiple" and draw.extreme
    assert all(d.kind == "chunk_edge" for d in multiple_draws(get_task("relu"), check(get_task("relu").golden), 0))


def test_a_size_walked_in_chunks_is_drawn_one_past_a_multiple_of_the_chunk() -> None:
    """A loop that stops a chunk early (``range(0, M - 1, 256)``: col_argmin's rows; tools/mutants.py) drops
    the last row only where M is one past a multiple of 256; no other draw aims there. The steps are read
    from loops and from cdiv (the grid's too), the size through the stop's expression."""
    from kernelgen.task.draws import multiple_draws
    from kernelgen.task.size_reads import chunk_steps

    task = get_task("col_argmin")
    golden = task.golden.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert ("M", 256) in chunk_steps(check(task.golden)) and ("N", 32) in chunk_steps(check(task.golden))
    loop = golden["body"][4]
    assert loop["op"] == "for" and loop["step"] == "BLOCK_M"
    loop["stop"] = {"op": "sub", "lhs": "M", "rhs": 1}
    checked = check(L.Kernel.model_validate(golden))
    edges = {d.sizes["M"] for d in multiple_draws(task, checked, 0) if d.kind == "chunk_edge" and d.sizes["M"] > 1}
    assert edges == {257}
    assert any(d.sizes["M"] == 257 and d.extreme for d in case_draws(task, checked, 4, 0, False))
    result = evaluate_answer(task, json.dumps(golden), Settings(gpu=False, compile=False))
    assert result.outcome.value == "wrong_result" and "M=257" in result.first_diagnostic().message


def test_two_sizes_the_kernel_compares_are_drawn_large_each_past_the_other() -> None:
    """linear_optional_bias taking another path where M > N: the other draws hold one size large
    and the others small, or all equal."""
    from kernelgen.task.draws import ordering_draws
    from kernelgen.task.size_reads import size_pairs

    task = get_task("linear_optional_bias")
    checked = _round12("linear_optional_bias_tall_m_over_n_bias_first_256_columns")
    assert size_pairs(task, checked) == [("M", "N")]
    first, second = ordering_draws(task, checked)
    assert first.sizes["M"] > first.sizes["N"] > 256 and second.sizes["N"] > second.sizes["M"] > 256
    assert first.sizes["K"] == 1 and first.kind == "size_order"


def test_tiles_of_two_sizes_compared_are_drawn_a_tile_apart() -> None:
    """``cdiv(M, 128) > cdiv(N, 128)`` through lets (round 13): the pair is M and N, and the draws
    put one a block past the other, where their tile counts differ."""
    from pathlib import Path

    from kernelgen.lang.parse import kernel_from_obj
    from kernelgen.task.draws import ordering_draws
    from kernelgen.task.size_reads import size_pairs

    task = get_task("linear_optional_bias")
    path = Path(__file__).parent / "redteam" / "linear_optional_bias_more_row_tiles_bias_first_256_columns.json"
    checked = check(kernel_from_obj(json.loads(path.read_text())["kernel"]))
    assert size_pairs(task, checked) == [("M", "N")]
    block = max(m.value for m in checked.kernel.meta)
    for draw in ordering_draws(task, checked):
        big, small = sorted((draw.sizes["M"], draw.sizes["N"]), reverse=True)
        assert -(-big // block) > -(-small // block)


def test_an_unlisted_call_is_checked_past_the_kernels_extent() -> None:
    """A call no listed call makes got only the two smallest hypothesis draws; a path it alone takes
    (amax over dim 0 without keepdim, walking the first 128 rows) passed."""
    from kernelgen.harness.pipeline import for_each_draw
    from kernelgen.task.case import Settings
    from kernelgen.task.variants import unlisted_calls

    task = get_task("amax_keepdim")
    call = unlisted_calls(task)[0]
    seen = []
    for_each_draw(call, check(task.golden), Settings(), seen.append, "small")
    kinds = [d.kind for d in seen]
    assert kinds[:2] == ["drawn", "drawn"] and {"past_extent", "range_max"} & set(kinds)
    assert max(d.sizes["M"] for d in seen) == call.sizes["M"].max


def _catalogue(name: str):
    from pathlib import Path

    from kernelgen.lang.parse import kernel_from_obj

    return check(kernel_from_obj(json.loads((Path(__file__).parent / "redteam" / f"{name}.json").read_text())["kernel"]))


def test_a_product_of_sizes_compared_with_a_fixed_value_is_drawn_past_it() -> None:
    """row_sum dropping the tail past M * N >= 2**20 (round 11): every other draw keeps one size
    large and the others small, or all at 571; the crossing draw puts M = N well past 1024, odd."""
    from kernelgen.task.draws import crossing_draws
    from kernelgen.task.size_conditions import size_conditions

    task, checked = get_task("row_sum"), _catalogue("row_sum_large_inputs_whole_blocks_only")
    (condition,) = size_conditions(task, checked)
    assert condition.names == {"M", "N"}
    (draw, extreme) = crossing_draws(task, checked, 0)  # ordinary, then extreme inputs (within the budget)
    m, n = draw.sizes["M"], draw.sizes["N"]
    assert m == n and m % 2 == 1 and 1536 <= m <= 2048 and draw.kind == "crossing"
    assert not draw.extreme and extreme.extreme and extreme.sizes == draw.sizes
    assert draw in case_draws(task, checked, 4, 0, False)
    assert crossing_draws(task, check(task.golden), 0) == []  # the golden compares no size: no cost there


def test_a_threshold_the_host_computes_is_read_through_the_param() -> None:
    """The same threshold on a param ``total = M * N`` the host computes: read as its expression."""
    from kernelgen.task.draws import crossing_draws

    task, checked = get_task("row_sum"), _catalogue("row_sum_large_inputs_whole_blocks_only")
    kernel = checked.kernel.model_dump(exclude_none=True)
    kernel["params"].append({"name": "total", "value": {"op": "mul", "lhs": "M", "rhs": "N"}, "dtype": "i64"})
    stop = next(s for s in kernel["body"] if s.get("name") == "stop_at")
    stop["value"]["cond"]["lhs"] = "total"
    (draw, _) = crossing_draws(task, check(L.Kernel.model_validate(kernel)), 0)
    assert draw.sizes["M"] * draw.sizes["N"] > 2 ** 20


def test_a_threshold_below_the_extent_is_drawn_past() -> None:
    """flash decoding's splits capped at 8 blocks of 64 (``minimum(cdiv(cdiv(S, 64), 16), 8)``):
    keys past 8192 are dropped, under an extent of 65536 that no draw passes; a crossing draw
    puts S at 1.5 to 2 times 8192 (just past it, the dropped share stays within tolerance)."""
    from kernelgen.task.draws import crossing_draws

    task, checked = get_task("flash_decoding_f16"), _catalogue("flash_decoding_f16_splits_capped_at_8_blocks")
    assert block_extent(checked) > task.sizes["S"].max
    # S where the cap binds (past 8192) and where it is met (7169..8192), B = H = 1; then B and H large
    sizes = [d.sizes for d in crossing_draws(task, checked, 0)]
    assert {"B": 1, "H": 1} in [{"B": s["B"], "H": s["H"]} for s in sizes if 12288 <= s["S"] <= 16384]
    assert any(7169 <= s["S"] <= 8192 for s in sizes) and any(s["B"] > 1 and s["H"] > 1 for s in sizes)


def test_an_extent_past_the_element_budget_is_drawn_past() -> None:
    """relu's grid capped at 65535 programs of 128 covers 8388480 elements, past what
    CPU_ELEMENT_BUDGET allows for x and y: the draw past it is taken within CPU_PAST_BUDGET."""
    task, checked = get_task("relu"), _catalogue("relu_grid_capped_65535_programs_of_128")
    past = [d for d in case_draws(task, checked, 4, 0, False) if d.kind == "past_extent"]
    assert past and all(d.sizes["N"] > 65535 * 128 for d in past)


def test_a_size_only_the_grid_spreads_over_is_drawn_at_the_top_the_budget_reaches() -> None:
    """group_norm's combine of a fixed 64 partials (8 per 4096 columns) drops those past L = 32768,
    and no comparison says so: L, which only the grid spreads over, is drawn as high as the element
    budget allows with B at its minimum."""
    task, checked = get_task("group_norm"), _catalogue("group_norm_combine_one_block_of_64_partials")
    tops = [d.sizes for d in case_draws(task, checked, 4, 0, False) if d.kind == "range_max"]
    assert any(s["B"] == 1 and s["L"] > 32768 for s in tops)


def test_sizes_a_kernel_numbers_its_tiles_by_are_drawn_large_in_pairs() -> None:
    """matmul_f16's grouped order over a persistent walk (``t`` from program_id; ``idiv(t,
    per_group)``, ``rem(in_group, group_rows)``) numbers its tiles by M and N, not by K, which
    only the loop walks: M and N are drawn together past 8 tiles of 128 (a partial last group of 8
    tile rows) and two of 256, K small. A kernel that takes its block from its id directly, or
    divides a loaded value (a Collatz step's ``x % 2``), numbers no tiles."""
    from kernelgen.task.draws import tile_draws
    from kernelgen.task.size_reads import tiled_sizes

    task = get_task("matmul_f16")
    checked = check(task.golden)
    assert [name for name in tiled_sizes(checked) if name in task.sizes] == ["M", "N"]
    (draw,) = tile_draws(task, checked)
    assert draw.kind == "tiles" and draw.sizes["M"] == draw.sizes["N"] > 8 * 128 and draw.sizes["K"] == 16
    assert -(-draw.sizes["M"] // 128) % 8 != 0
    assert draw in case_draws(task, checked, 4, 0, False) and draw in case_draws(task, checked, 4, 0, True)
    for plain in ("softmax_f16", "collatz_step"):
        assert not set(tiled_sizes(check(get_task(plain).golden))) & set(get_task(plain).sizes)
