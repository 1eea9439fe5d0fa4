"""Extreme draws of an integer-valued domain holding 0 (reductions.with_zero_extremum_lines): some
reduced lines have zero as their minimum, +0.0 before -0.0, and some as their maximum, -0.0
before +0.0, so a kernel ordering floats by their bits picks the wrong zero. And of any integer
domain (reductions.with_spread_extremum_lines): a quarter of the lines have a largest magnitude
of their own, so a statistic of it is drawn at many values, not at the domain's bound."""

from __future__ import annotations

import torch

from kernelgen.check.checker import check
from kernelgen.task.draws import case_draws
from kernelgen.task.reductions import (with_end_extremum_lines, with_end_true_lines, with_infinite_lines,
                                       with_spread_extremum_lines, with_zero_extremum_lines)
from kernelgen.task.spec import get_task
from kernelgen.task.line_statistics import statistic_axes
from kernelgen.task.verify import make_inputs, run_reference


def _first_zero_sign(line: torch.Tensor, extremum: torch.Tensor) -> list[bool]:
    zeros = (line == extremum).nonzero().flatten()
    return [bool(torch.signbit(line[i])) for i in zeros]


def test_lines_get_a_zero_extremum_with_both_signs_in_order() -> None:
    values = torch.randint(-10, 11, (40, 64)).float()
    drawn = with_zero_extremum_lines(values, 1, 7)
    minima = [line for line in drawn if float(line.min()) == 0]
    maxima = [line for line in drawn if float(line.max()) == 0]
    assert len(minima) >= 10 and len(maxima) >= 10
    for line in minima:
        signs = _first_zero_sign(line, line.min())
        assert signs[0] is False and True in signs  # +0.0 first, a -0.0 later
    for line in maxima:
        signs = _first_zero_sign(line, line.max())
        assert signs[0] is True and False in signs  # -0.0 first, a +0.0 later
    # along the first axis (columns) too, and the other lines keep their values
    columns = with_zero_extremum_lines(values, 0, 7)
    assert sum(float(c.min()) == 0 for c in columns.T) >= 16
    assert int((columns == values).all(dim=0).sum()) >= 64 // 2 - 1


def test_a_quarter_of_the_lines_get_a_largest_magnitude_of_their_own() -> None:
    values = torch.randint(-254, 255, (400, 100)).float()
    drawn = with_spread_extremum_lines(values, 1, -254, 254, 3)
    changed = (drawn != values).any(dim=1)
    assert 80 <= int(changed.sum()) <= 100  # a quarter
    peaks = drawn[changed].abs().amax(dim=1)
    assert len(set(peaks.tolist())) >= 60  # spread over 1..254, not at 254
    assert bool((drawn == drawn.round()).all()) and float(drawn.abs().max()) <= 254
    # each chosen line's peak is its only element of that magnitude
    assert all(int((line.abs() == line.abs().max()).sum()) == 1 for line in drawn[changed])
    # within a non-negative domain the peak is positive
    positive = with_spread_extremum_lines(torch.randint(0, 21, (40, 30)).float(), 1, 0, 20, 3)
    assert float(positive.min()) >= 0


def test_absmax_quantize_draws_many_row_maxima() -> None:
    """Rows of N >= 20 integers in [-254, 254] almost all hold 254; its extreme draws now give
    many integer amax values, among them those where amax * (1/127) is not amax / 127."""
    task = get_task("absmax_quantize")
    found = set()
    for draw in case_draws(task, check(task.golden), 8, 0, False):
        x = make_inputs(task, draw.sizes, 0, extreme=True)["x"]
        found |= {a for a in x.abs().amax(dim=1).tolist() if a == int(a)}
    reciprocal_off = {a for a in range(1, 255) if torch.tensor(float(a)) / 127 != torch.tensor(float(a)) * (1 / 127.0)}
    assert len(found & reciprocal_off) >= 3, sorted(found)


def test_a_scale_one_ulp_off_fails_exactly_and_the_message_tells_the_two_apart() -> None:
    """absmax_quantize's scale compares exactly; one f32 ulp off prints with all its digits."""
    from kernelgen.task.verify import compare_outputs, run_reference

    task = get_task("absmax_quantize")
    sizes = {"M": 2, "N": 3}
    inputs = {"x": torch.tensor([[72.0, 36.0, 5.0], [9.0, 1.0, 2.0]])}
    expected = run_reference(task, inputs)
    off = dict(expected, scale=torch.nextafter(expected["scale"], torch.zeros_like(expected["scale"])))
    [problem] = compare_outputs(task, off, expected, inputs, sizes)
    assert problem.code == "mismatch" and "got 0.566929102, expected 0.566929162" in problem.message


def test_a_line_wholly_of_each_infinity_the_domain_holds() -> None:
    """An argmin whose index lanes start one off gives that start for a column all +inf (torch: 0);
    infinities at one element in 48 never fill a line. Lines holding a special are taken first."""
    values = torch.randn(6, 40)
    values[0, 3], values[2, 5], values[4, 7] = float("nan"), float("inf"), float("nan")
    drawn = with_infinite_lines(values, 0, [float("nan"), float("inf"), float("-inf")], 1)
    columns = drawn.T
    assert sum(bool((c == float("inf")).all()) for c in columns) == 1
    assert sum(bool((c == float("-inf")).all()) for c in columns) == 1
    kept = (drawn == values) | (drawn.isnan() & values.isnan())
    assert set((~kept).any(dim=0).nonzero().flatten().tolist()) <= {3, 5, 7}
    assert int((~kept).any(dim=0).sum()) == 2
    only_high = with_infinite_lines(values, 1, [float("inf"), 7.0], 1)
    assert [bool((r == float("inf")).all()) for r in only_high].count(True) == 1
    assert not bool((only_high == float("-inf")).any())
    assert with_infinite_lines(values, 1, [float("nan")], 1) is values


def test_col_argmin_extreme_draws_hold_a_column_all_inf() -> None:
    task = get_task("col_argmin")
    x = make_inputs(task, {"M": 5, "N": 9}, 0, extreme=True)["x"]
    assert bool((x == float("inf")).all(dim=0).any()) and bool((x == float("-inf")).all(dim=0).any())


def test_a_single_zero_row_domain_row_keeps_its_values() -> None:
    """cosine_similarity's zero rows: a draw of one row (the other sizes at their minimum) judged a
    row of zeros only, and a loop that stopped a chunk early passed there (tools/mutants.py)."""
    task = get_task("cosine_similarity")
    one = make_inputs(task, {"M": 1, "N": 1025}, 0)
    assert bool((one["x"] != 0).any()) and bool((one["y"] != 0).any())
    many = make_inputs(task, {"M": 16, "N": 30}, 0)
    assert bool((many["x"] == 0).all(dim=1).any())


def _only_extremum_at(line: torch.Tensor, sign: float) -> int | None:
    extremum = line.max() if sign > 0 else line.min()
    places = (line == extremum).nonzero().flatten()
    return int(places[0]) if len(places) == 1 else None


def test_four_ordinary_lines_get_their_only_extremum_at_an_end() -> None:
    """A loop that skips a line's first or last element is right wherever the extremum is held twice or
    lies elsewhere: integers in [-20, 20] hold their bounds many times over a long line."""
    values = torch.randint(-20, 21, (10, 300)).float()
    values[0] = -torch.arange(1, 301).float().clamp(max=20)  # all negative: a structured line, kept
    drawn = with_end_extremum_lines(values, 1, -20, 20, 3)
    assert torch.equal(drawn[0], values[0]) and float(drawn.max()) <= 20 and float(drawn.min()) >= -20
    found = {(place, sign) for line in drawn for sign in (1.0, -1.0)
             if (place := _only_extremum_at(line, sign)) in (0, 299)}
    assert found == {(299, 1.0), (0, 1.0), (299, -1.0), (0, -1.0)}
    assert int((drawn != values).any(dim=1).sum()) == 4
    # a normal domain: one past the line's extremum, along the first axis (columns) too
    normal = torch.randn(64, 5)
    columns = with_end_extremum_lines(normal, 0, None, None, 3)
    assert {_only_extremum_at(c, 1.0) for c in columns.T} >= {0, 63}


def test_the_end_is_the_only_extremum_where_one_is_below_the_dtypes_step() -> None:
    """masked_softmax's extreme domain is normal at scale 1e9, where one past a line's maximum rounds back to
    it in f32 (and bf16 at 300): the end was held twice."""
    for values in (torch.randn(8, 1000) * 1e9, (torch.randn(8, 100) * 300).bfloat16()):
        drawn = with_end_extremum_lines(values, 1, None, None, 3)
        found = {(place, sign) for line in drawn.float() for sign in (1.0, -1.0)
                 if (place := _only_extremum_at(line, sign)) in (0, values.shape[1] - 1)}
        assert found == {(values.shape[1] - 1, 1.0), (0, 1.0), (values.shape[1] - 1, -1.0), (0, -1.0)}


def test_the_reference_names_the_axes_an_output_of_the_inputs_shape_takes_a_statistic_along() -> None:
    sizes = {"M": 6, "N": 40}
    for name, axes in (("minmax_scale_rows", [1]), ("masked_softmax", [1]), ("softmax_cols", [0]), ("silu", [])):
        task = get_task(name)
        given = {n: v for n, v in sizes.items() if n in task.sizes} or {n: 40 for n in task.sizes}
        assert statistic_axes(task, "x", make_inputs(task, given, 0), run_reference) == axes, name


def test_rows_scaled_by_their_range_get_their_extrema_at_their_ends() -> None:
    """minmax_scale_rows' output has its input's shape: a loop over a row's range that stopped a chunk early
    was right wherever the row's maximum and minimum lay elsewhere (tools/mutants.py)."""
    x = make_inputs(get_task("minmax_scale_rows"), {"M": 16, "N": 1025}, 0, extreme=True)["x"]
    found = {(place, sign) for line in x for sign in (1.0, -1.0)
             if (place := _only_extremum_at(line, sign)) in (0, 1024)}
    assert found == {(1024, 1.0), (0, 1.0), (1024, -1.0), (0, -1.0)}


def test_a_masks_lines_keep_only_their_last_or_first_element_none_or_all() -> None:
    """A mask drawn true one time in two never masks a whole chunk: an online softmax that shifts by a running
    maximum still -inf gave NaN past such a chunk, and passed (tools/mutants.py)."""
    task = get_task("masked_softmax")
    assert statistic_axes(task, "mask", make_inputs(task, {"M": 6, "N": 40}, 0), run_reference) == [1]
    mask = make_inputs(task, {"M": 8, "N": 2049}, 0, extreme=True)["mask"]
    kept = {tuple(line.nonzero().flatten().tolist()) for line in mask if int(line.sum()) <= 1}
    assert kept == {(2048,), (0,), ()} and bool(mask.all(dim=1).any())
    assert with_end_true_lines(torch.ones(3, 1, dtype=torch.bool), 1, 0).all()  # lines of one: nothing to do


def test_a_fixed_count_taken_along_an_axis_gets_end_lines_on_ordinary_values_at_a_chunk_edge() -> None:
    """row_topk64 takes 64 of each row's N columns: the shape [M, 64] names no reduced axis, and its
    extreme domain (integers in [-4, 4], for ties) overfills the golden's candidate list, so its exact
    fallback judged every extreme draw; a candidate loop that drops a row's last element at N = 8193
    passed. The axis counts as reduced (selected_axes), and each chunk_edge draw has a twin on the
    ordinary domain with the end lines (order end_lines), where some row's only maximum is its last."""
    from kernelgen.task.reductions import selected_axes

    task = get_task("row_topk64")
    assert selected_axes(task, task.signature.inputs[0]) == [1]
    assert selected_axes(get_task("matmul_f16"), get_task("matmul_f16").signature.inputs[0]) == []
    twins = [d for d in case_draws(task, check(task.golden), 4, 0, False) if d.kind == "chunk_edge"]
    assert {(d.extreme, d.order) for d in twins} == {(True, None), (False, "end_lines")}
    sizes = twins[0].sizes
    x = make_inputs(task, sizes, 0, order="end_lines")["x"]
    plain = make_inputs(task, sizes, 0)["x"]
    assert any(_only_extremum_at(line, 1.0) == sizes["N"] - 1 for line in x)
    assert (x != plain).sum() <= 4 * 3  # the ordinary values, but for the lines' ends (and integers' middles)
