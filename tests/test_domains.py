"""Inputs a PyTorch user may pass (issue 32, item 4): NaN and infinities where the operator
defines the result, integers over their whole range, all-zero blocks, ids over the whole
table, ignore-index, out-of-range and i64-only targets, ties on ordinary draws, extreme
magnitudes with a scalar at its most demanding end."""

from __future__ import annotations

import pytest
import torch

from kernelgen.lang import nodes as L
from kernelgen.task.ranges import Domain
from kernelgen.task.spec import get_task
from kernelgen.task.verify import draw_tensor, make_inputs, scalar_values


def test_nan_and_infinities_reach_the_extreme_draws_only() -> None:
    task = get_task("relu")
    x = make_inputs(task, {"N": 4000}, seed=0, extreme=True)["x"]
    assert x.isnan().any() and (x == float("inf")).any() and (x == float("-inf")).any()
    assert make_inputs(task, {"N": 4000}, seed=0)["x"].isfinite().all()
    assert "with nan, inf, -inf among them" in task.render_prompt()


@pytest.mark.parametrize("dtype", ["i32", "i64"])
def test_full_integers_span_the_dtype_with_its_extremes(dtype: str) -> None:
    info = torch.iinfo(torch.int32 if dtype == "i32" else torch.int64)
    a = draw_tensor(L.Input(name="a", dtype=dtype, shape=["N"]), (5000,), Domain(kind="full"),
                    torch.Generator().manual_seed(1), {"N": 5000})
    assert a.min() == info.min and a.max() == info.max
    assert (a.abs() > 2 ** 24).float().mean() > 0.9  # beyond what an f32 holds exactly


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32", "f64", "f8e4m3"])
def test_full_floats_reach_every_exponent_and_stay_finite(dtype: str) -> None:
    """A float ``full`` domain draws by uniform bits: subnormal, tiny and huge magnitudes, and in
    f64 values that f32 cannot hold (round's f64 call through f32 fails on them); the NaN and
    infinite patterns are redrawn, so specials alone place those."""
    x = draw_tensor(L.Input(name="x", dtype=dtype, shape=["N"]), (5000,), Domain(kind="full"),
                    torch.Generator().manual_seed(1), {"N": 5000}).double()
    info = torch.finfo({"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32,
                        "f64": torch.float64, "f8e4m3": torch.float8_e4m3fn}[dtype])
    assert x.isfinite().all() and (x > 0).any() and (x < 0).any()
    assert x.abs().max() > info.max / 4 and ((x != 0) & (x.abs() < info.tiny)).any()  # huge and subnormal
    if dtype == "f64":
        past_f32 = (x.abs() > 2 ** 24) & (x.abs() < 2 ** 52) & (x != x.float().double())
        assert past_f32.sum() > 20


def test_a_generic_task_draws_integer_extremes_and_float_nans_from_one_domain() -> None:
    task = get_task("maximum_generic")
    calls = {t.variant.name: t for t in task.variant_tasks()}
    a32 = make_inputs(calls["i32"], {"M": 64, "N": 64}, seed=0, extreme=True)["a"]
    assert a32.min() == -2 ** 31 and a32.max() == 2 ** 31 - 1
    assert make_inputs(calls["f16"], {"M": 64, "N": 64}, seed=0, extreme=True)["a"].isnan().any()


def test_targets_reach_every_class_the_ignore_index_and_what_i32_would_wrap() -> None:
    task = get_task("cross_entropy")
    target = make_inputs(task, {"M": 4096, "C": 1000}, seed=0, extreme=True)["target"]
    valid = (target >= 0) & (target < 1000)
    assert target[valid].max() > 900 and {-100, 1000, 1007, 2 ** 32 + 3, -2 ** 32 + 5, 2 ** 63 - 1} <= set(target.tolist())
    # An i32 target holds only the specials that fit.
    smoothing = make_inputs(get_task("cross_entropy_label_smoothing"), {"M": 4096, "C": 1000}, seed=0, extreme=True)
    assert {-100, 1000, 1007, 2 ** 31 - 1} <= set(smoothing["target"].tolist())


@pytest.mark.parametrize("task_id, name, sizes", [("embedding_bag_sum", "ids", {"T": 3000, "B": 5, "V": 4000, "D": 3}),
                                                  ("index_add_rows", "index", {"V": 4000, "D": 3, "T": 3000})])
def test_ids_reach_the_whole_table(task_id: str, name: str, sizes: dict[str, int]) -> None:
    ids = make_inputs(get_task(task_id), sizes, seed=0, extreme=True)[name]
    assert 0 <= ids.min() and ids.max() < 4000 and ids.max() > 3000


def test_an_index_along_the_chosen_dim_reaches_that_dims_extent() -> None:
    """index_fill_'s indices are bounded by the size along the call's dim: rows past the column
    count in a dim-0 call, so a kernel guarding every index with N fails."""
    calls = {t.variant.name: t for t in get_task("index_fill_inplace").variant_tasks()}
    for name, sizes, extent in (("rows", {"M": 200, "N": 3, "K": 16}, 200),
                                ("columns", {"M": 3, "N": 200, "K": 16}, 200)):
        index = make_inputs(calls[name], sizes, seed=0, extreme=True)["index"]
        assert index.min() >= 0 and index.max() == extent - 1
        assert (make_inputs(calls[name], sizes, seed=0)["index"] >= 3).any()


def test_a_domain_bound_names_sizes_and_choices_only() -> None:
    from kernelgen.task.spec import TaskError, load_task_file
    import tempfile
    from pathlib import Path

    text = (Path(__file__).parents[1] / "bench/med/index_fill_inplace.yaml").read_text()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "med").mkdir()
        bad = Path(tmp) / "med" / "index_fill_inplace.yaml"
        bad.write_text(text.replace("lhs: dim, rhs: 0}, x: M", "lhs: value, rhs: 0}, x: M"))
        with pytest.raises(TaskError, match="neither a size name nor a choice input"):
            load_task_file(bad)


def test_the_largest_table_is_read_at_its_last_row_by_several_ids() -> None:
    """The range-maximum draw of V: 131072 rows with the others at the largest of 16, 8, 4, 1
    that fits the budget (not all at their minimum: one id), and V - 1 among the ids, so that a
    kernel keeping ids in 16 bits (row id - 65536 past 65535) fails on every seed."""
    from kernelgen.check.checker import check
    from kernelgen.task.draws import CPU_RANGE_MAX_BUDGET, case_draws

    task = get_task("embedding_bag_mean_f16")
    (draw,) = [d for d in case_draws(task, check(task.golden), 5, 0, gpu=False)
               if d.kind == "range_max" and d.sizes["V"] == 131072]
    assert draw.sizes["T"] >= 4 and task.footprint(draw.sizes)[0] <= CPU_RANGE_MAX_BUDGET
    for seed in range(3):
        ids = make_inputs(task, draw.sizes, seed=seed, extreme=True)["ids"]
        assert ids.max() == 131071 and ids.min() == 0


def test_some_blocks_are_all_zero() -> None:
    x = make_inputs(get_task("fp8_quantize_blockwise"), {"M": 8, "NB": 4}, seed=0, extreme=True)["x"]
    blocks = x.reshape(-1, 128).abs().amax(-1)
    assert int((blocks == 0).sum()) == 8 and int((blocks > 0).sum()) == 24  # a quarter of the 32 blocks


def test_ties_on_ordinary_draws_where_ties_are_judged() -> None:
    x = make_inputs(get_task("row_top2"), {"M": 64, "N": 100}, seed=0)["x"]
    top = x.sort(dim=1, descending=True).values
    assert (top[:, 0] == top[:, 1]).any()
    assert not torch.signbit(x[x == 0]).any()  # no -0.0 beside +0.0


def test_an_extreme_draw_takes_a_scalars_most_demanding_value() -> None:
    task = get_task("softmax_temperature")
    assert scalar_values(task, {"M": 3, "N": 5}, 0, extreme=True)["temperature"] == float(torch.tensor(0.1).float())
    assert scalar_values(task, {"M": 3, "N": 5}, 0)["temperature"] != 0.1


def test_float_scalars_are_values_of_their_dtype_and_extreme_draws_hold_them_and_their_neighbours() -> None:
    """x == threshold, and one step above and below it: a test made >= for >, or made in bf16,
    differs from F.threshold only there. The scale of the extreme draw leaves them alone."""
    from kernelgen.task.magnitude import checked_inputs

    task = get_task("threshold")
    inputs, _ = checked_inputs(task, {"N": 4000}, 0, extreme=True)
    threshold = inputs["threshold"]
    assert threshold == float(torch.tensor(threshold, dtype=torch.float32))
    x = inputs["x"]
    step = torch.tensor([threshold], dtype=torch.float32)
    for value in (step, torch.nextafter(step, step + 1), torch.nextafter(step, step - 1)):
        assert bool((x == value).any())


def test_integer_valued_float_draws_get_fractions_and_near_ties_at_each_lines_extremes() -> None:
    """row_argmax draws integers (for ties); an extreme draw adds fractions to half of them and,
    in each row and each column, an element one step below the maximum and one above the
    minimum: an argmax compared in bf16 picks the wrong one of such a pair. The extreme domain's
    NaN and infinities stay, and the near ties are to each row's numbers."""
    x = make_inputs(get_task("row_argmax"), {"M": 16, "N": 300}, seed=0, extreme=True)["x"]
    numbers = x.isfinite()
    assert bool((x != x.round())[numbers].any()) and bool((x == x.round()).any())
    assert x.isnan().any() and x.isinf().any()
    top = torch.where(numbers, x, -torch.inf).max(dim=1).values
    below = torch.nextafter(top, torch.full_like(top, -torch.inf))
    held = numbers.any(dim=1)  # not the lines wholly of an infinity (reductions.with_infinite_lines)
    assert bool((x == below[:, None]).any(dim=1)[held].all()) and int(held.sum()) >= 12
    assert x[numbers].min() >= -20 and x[numbers].max() <= 20


def test_some_rows_of_a_normal_draw_are_all_negative_in_an_extreme_draw() -> None:
    """A row maximum whose masked lanes read 0 is right on every row holding a positive value."""
    x = make_inputs(get_task("row_max"), {"M": 16, "N": 300}, seed=0, extreme=True)["x"]
    negative = (x < 0).all(dim=1)
    assert 1 <= int(negative.sum()) < 16


def test_some_rows_of_an_extreme_draw_have_their_extreme_at_a_scalar() -> None:
    """any(x > threshold) is true on a row that holds a larger element whatever a kernel does
    at the tie: some rows hold nothing above the threshold but one element at it or one step
    above it (and, mirrored, nothing below it but one at it or one step below), and the
    magnified draw keeps them so."""
    from kernelgen.task.magnitude import checked_inputs

    for task_id, sizes in (("row_any_above", {"M": 32, "N": 300}), ("rmsnorm_rows", {"M": 32, "N": 300})):
        task = get_task(task_id)
        inputs, _ = checked_inputs(task, sizes, 0, extreme=True)
        scalar = next(value for value in inputs.values() if isinstance(value, float))
        x = inputs["x"].double()
        exact = torch.tensor(scalar, dtype=torch.float32)
        up = float(torch.nextafter(exact, exact + 1))
        down = float(torch.nextafter(exact, exact - 1))
        row_max, row_min = x.max(dim=1).values, x.min(dim=1).values
        above = (x > float(exact)).sum(dim=1)
        below = (x < float(exact)).sum(dim=1)
        assert bool(((row_max == up) & (above == 1)).any()), task_id
        assert bool(((row_max == float(exact)) & (above == 0)).any()), task_id
        assert bool(((row_min == down) & (below == 1)).any()), task_id
        assert bool(((row_min == float(exact)) & (below == 0)).any()), task_id


# Tasks with a nonnegative bounded (uniform) domain under a function singular at a finite point
# whose draws need not approach 0, and why.
SINGULAR_AWAY_FROM_EDGE = {"batchnorm_forward_train": "the rsqrt takes the variance plus eps, not x",
                           "layernorm_stats": "the rsqrt takes the variance plus eps, not x"}


def test_a_bounded_domain_under_a_singular_function_reaches_its_edges_in_the_extreme_draws() -> None:
    """logit, log, rsqrt, pow and the like grow without bound as their input nears 0 (logit and
    atanh near 1 too): a task whose reference takes one of a float input drawn from a
    nonnegative uniform domain draws, in its extreme draws, values within 1e-6 of 0 (and of 1
    for a function singular there), else a kernel that clamps its input away from the edge
    (logit's clamp to [1e-6, 1 - 1e-6]) passes every draw."""
    import re

    from kernelgen.task.spec import load_tasks

    singular = re.compile(r"\b(log|log2|log10|logit|sqrt|rsqrt|reciprocal|pow|atanh|digamma|lgamma)\(")
    at_one = re.compile(r"\b(logit|atanh)\(")
    checked, missing = set(), []
    for task in (v for t in load_tasks() for v in t.variant_tasks()[:1]):
        if not singular.search(task.reference):
            continue
        sizes = {name: min(max(r.min, 64), r.max) for name, r in task.sizes.items()}
        for spec in task.signature.inputs:
            domain = task.domains.get(spec.name) or task.extreme_domains.get(spec.name)
            if spec.shape is None or domain is None or domain.kind != "uniform" or not isinstance(domain.low, float) \
                    or domain.low < 0 or task.id in SINGULAR_AWAY_FROM_EDGE:
                continue
            checked.add(task.id)
            x = make_inputs(task, sizes, 0, extreme=True)[spec.name].double()
            if float(x.min()) > 1e-6 or (at_one.search(task.reference) and float(x.max()) < 1 - 1e-6):
                missing.append(task.id)
    assert {"logit", "rsqrt_f16", "pow", "log_clamped_eps"} <= checked
    assert missing == []
    assert set(SINGULAR_AWAY_FROM_EDGE) <= {t.id for t in load_tasks() if singular.search(t.reference)}


def test_two_inputs_with_specials_meet_every_pair_of_them_at_some_element() -> None:
    """logaddexp(-inf, -inf) is -inf and m + log1p(exp(-|x - y|)) makes it NaN: placed
    independently, two inputs' specials rarely meet, so an extreme draw puts every pair of them
    at the same element."""
    inf, nan = float("inf"), float("nan")
    for task_id in ("logaddexp", "maximum_f16"):
        inputs = make_inputs(get_task(task_id), {"N": 300}, seed=0, extreme=True)
        x, y = inputs["x"].double(), inputs["y"].double()
        for a in (nan, inf, -inf):
            for b in (nan, inf, -inf):
                at_a = x.isnan() if a != a else x == a
                at_b = y.isnan() if b != b else y == b
                assert bool((at_a & at_b).any()), (task_id, a, b)


def test_some_rows_of_a_narrow_float_extreme_draw_mix_large_and_half_step_values() -> None:
    """A row reduction whose lanes keep their running sums in bf16 (f16) loses every small
    value added to a large one: some rows of an extreme draw hold +-16 in a leading part (an
    eighth or half of the row) and half a step of the dtype at 16 in the rest, so that such a sum
    loses them all while f32 keeps them; the magnified draw scales them exactly."""
    from kernelgen.task.magnitude import checked_inputs

    for task_id, step in (("row_mean_bf16", 2.0 ** -8), ("row_l1_norm_f16", 2.0 ** -11)):
        task = get_task(task_id)
        inputs, _ = checked_inputs(task, {"M": 16, "N": 8192}, 0, extreme=True)
        x = inputs["x"].double()
        large = x.abs().max(dim=1, keepdim=True).values
        mixed = ((x.abs() == large) | (x.abs() == large * step)).all(dim=1) & (x.abs() == large * step).any(dim=1)
        leading = (x.abs() == large).sum(dim=1)[mixed]
        assert int(mixed.sum()) == 4, task_id  # a quarter of the rows
        assert set(leading.tolist()) == {1024, 4096}, task_id
        # a bf16 (f16) running sum of such a row stays at its leading part's sum
        row = x[mixed][0]
        narrow = torch.zeros((), dtype=inputs["x"].dtype)
        for value in row[row.abs() == row.abs().max()].tolist()[:1] + row[row.abs() != row.abs().max()].tolist()[:64]:
            narrow = narrow + torch.tensor(value, dtype=inputs["x"].dtype)
        assert float(narrow) == float(row.abs().max() * row.sign()[0])
    plain = make_inputs(get_task("row_mean_bf16"), {"M": 16, "N": 8192}, 0)["x"].double()
    assert float(plain.abs().max()) < 16


def test_the_inputs_of_a_dot_get_no_mixed_magnitude_rows() -> None:
    """A dot accumulates in f32 whatever a kernel does, and tensor cores do not round each add
    to nearest: on the H200 same-sign sums of such rows came out past an f32 output's rtol for
    the goldens themselves (matmul_bf16_f32out at K = 8192)."""
    task = get_task("matmul_bf16_f32out")
    sizes = {"M": 16, "N": 16, "K": 8192}
    a = make_inputs(task, sizes, 0, extreme=True)["a"].double()
    assert float(a.abs().max()) < 16
    assert not bool(((a.abs() == 16).sum(dim=1) >= 1024).any())


def test_an_argmax_draws_lines_holding_one_nan_past_the_first_block() -> None:
    """NaN at one element in 48 lies in nearly every long line's first block, where a kernel that
    counts NaN within a block but merges blocks with > is right: some extreme-draw rows (columns,
    for a column argmin) hold a single NaN, past the first 1024 elements in most."""
    rows = make_inputs(get_task("row_argmax"), {"M": 16, "N": 2500}, seed=0, extreme=True)["x"].isnan().sum(dim=1)
    assert (rows == 1).sum() >= 2 and (rows > 1).sum() >= 8
    x = make_inputs(get_task("row_argmax"), {"M": 1, "N": 2500}, seed=3, extreme=True)["x"]
    assert int(x.isnan().sum()) == 1
    columns = make_inputs(get_task("col_argmin"), {"M": 2500, "N": 16}, seed=0, extreme=True)["x"].isnan().sum(dim=0)
    # of 16 columns, up to six hold their own structure (an infinity's line each, four with an extremum at an end)
    assert (columns == 1).sum() >= 2 and (columns > 1).sum() >= 6
    lone = torch.stack([make_inputs(get_task("row_argmax"), {"M": 1, "N": 2500}, seed=s, extreme=True)["x"][0].isnan()
                        .nonzero()[0, 0] for s in range(8)])
    assert (lone >= 1024).sum() >= 3


def test_a_full_bits_draw_holds_the_values_beside_rounding_thresholds() -> None:
    """A bit pattern lands in f16's band (65504, 65520) at about one element in a million, and on
    0.5 - ulp/2 in f64 never: a cast saturating to inf past 65504 and a round as floor(|x| + 0.5)
    passed (red-team round 34). A full-bits extreme draw now holds them."""
    cast = get_task("easy/f32_to_f16")
    x = make_inputs(cast, {"N": 1025}, 0, extreme=True)["x"]
    assert bool((x == 65519.99609375).any()) and bool((x == -65520.0).any()) and bool((x == 65504.0).any())
    f64 = get_task("easy/round_half_even").variant_tasks()[3]
    x = make_inputs(f64, {"M": 3, "N": 1025}, 0, extreme=True)["x"]
    assert x.dtype == torch.float64 and bool((x == 0.49999999999999994).any()) and bool((x == -(2.0 ** 52 + 1)).any())
