"""What a case is checked on (kernelgen.task.draws, kernelgen.task.verify.make_inputs): sizes past the
kernel's own blocks, the ranges' maxima on the GPU, budgets, reproducibility, scalars drawn from
their ranges, extreme-value domains; and what the record and the summary say of it."""

from __future__ import annotations

import math

import pytest
import torch
from pydantic import ValidationError

from kernelgen.lang import nodes as L
from kernelgen.check.checker import check
from kernelgen.task.draws import CPU_ELEMENT_BUDGET, GPU_BYTE_BUDGET, case_draws
from kernelgen.task.size_reads import block_extent
from kernelgen.harness.plugin import summarize
from kernelgen.task.results import CaseResult
from kernelgen.task.ranges import ScalarRange
from kernelgen.task.spec import Task, get_task
from kernelgen.task.verify import scalar_values, make_inputs


def with_block(task_id: str, block: int):
    """The task's golden kernel with its BLOCK meta value replaced."""
    golden = get_task(task_id).golden
    meta = [L.Meta(name=m.name, value=block if m.name == "BLOCK" else m.value) for m in golden.meta]
    return check(golden.model_copy(update={"meta": meta}))


def targeted(draws):
    """The draws just past the kernel's extent (not the ranges' maxima, nor the hypothesis draws)."""
    return [d for d in draws if d.kind == "past_extent"]


def test_the_extent_is_the_largest_block_the_kernel_uses() -> None:
    assert block_extent(with_block("silu", 16384)) == 16384
    # matmul_bf16_f32out's golden: its largest tile, as the product of its axes.
    checked = check(get_task("matmul_bf16_f32out").golden)
    largest = max(t.numel for t in checked.types.values() if t.shape)
    assert largest > 128 and block_extent(checked) == largest


def test_literal_loop_bounds_and_literal_grids_count() -> None:
    silu = get_task("silu").golden
    assert block_extent(check(silu.model_copy(update={"grid": [16]}))) == 16 * 1024
    softmax = get_task("softmax_f16").golden
    body = [stmt.model_copy(update={"stop": 4096}) if isinstance(stmt, L.For) else stmt for stmt in softmax.body]
    assert block_extent(check(softmax.model_copy(update={"body": body}))) == 4096


@pytest.mark.parametrize("threshold", [
    {"op": "gt", "lhs": "N", "rhs": {"op": "mul", "lhs": "BLOCK", "rhs": 4}},
    {"op": "gt", "lhs": "N", "rhs": {"op": "shl", "lhs": "BLOCK", "rhs": 2}},
    {"op": "gt", "lhs": {"op": "cdiv", "lhs": "N", "rhs": "BLOCK"}, "rhs": 4},
    {"op": "lt", "lhs": 4096.0, "rhs": {"op": "cast", "x": "N", "dtype": "f32"}},
])
def test_a_size_threshold_in_a_comparison_counts(threshold: dict) -> None:
    """A long-row path behind ``N > BLOCK * 4`` (or a shift, a block count, a float) starts at
    4096: draws past the extent must pass it, not stop at the block's 1024."""
    from kernelgen.lang.parse import kernel_from_obj, kernel_to_obj

    silu = kernel_to_obj(get_task("silu").golden)
    silu["body"] = [*silu["body"], {"op": "let", "name": "long_rows", "value": threshold}]
    assert block_extent(check(kernel_from_obj(silu))) == 4096


@pytest.mark.parametrize("lets, threshold", [
    ([{"op": "let", "name": "big_n", "value": {"op": "mul", "lhs": "BLOCK", "rhs": 4}}],
     {"op": "gt", "lhs": "N", "rhs": "big_n"}),
    ([{"op": "let", "name": "n_blocks", "value": {"op": "cdiv", "lhs": "N", "rhs": "BLOCK"}}],
     {"op": "gt", "lhs": "n_blocks", "rhs": 4}),
    ([], {"op": "gt", "lhs": {"op": "num_programs"}, "rhs": 4}),
    ([], {"op": "minimum", "lhs": "N", "rhs": {"op": "mul", "lhs": "BLOCK", "rhs": 4}}),
])
def test_a_threshold_kept_in_a_let_or_in_the_grid_counts(lets: list, threshold: dict) -> None:
    """A threshold bound by a let (``big_n = BLOCK * 4``), a size turned into a block count by one
    (``cdiv(N, BLOCK) > 4``) and the number of programs (the grid's cdiv(N, BLOCK)) are read as
    if written in place, and a size's minimum with a fixed value is a threshold too (round 13:
    kernels wrong past such a threshold passed every draw)."""
    from kernelgen.lang.parse import kernel_from_obj, kernel_to_obj

    silu = kernel_to_obj(get_task("silu").golden)
    silu["body"] = [*lets, *silu["body"], {"op": "let", "name": "long_rows", "value": threshold}]
    assert block_extent(check(kernel_from_obj(silu))) == 4096


def test_a_clamp_of_values_is_no_size_threshold() -> None:
    """minimum(v, 4096.0) clamps loaded values (relu6's kind): no size flips there."""
    from kernelgen.lang.parse import kernel_from_obj, kernel_to_obj

    silu = kernel_to_obj(get_task("silu").golden)
    clamp = {"op": "let", "name": "clamped", "value": {"op": "minimum", "lhs": "v", "rhs": 4096.0}}
    silu["body"] = [*silu["body"], clamp]
    assert block_extent(check(kernel_from_obj(silu))) == 1024


def test_each_size_gets_a_draw_past_the_extent_not_a_multiple_with_the_others_small() -> None:
    task = get_task("softmax_f16")
    checked = with_block("softmax_f16", 4096)
    draws = targeted(case_draws(task, checked, shapes=5, seed=0, gpu=False))
    assert len(draws) == 2
    for name in task.sizes:
        (draw,) = [d for d in draws if d.sizes[name] > 4096]
        assert draw.sizes[name] % 4096 != 0
        assert all(v <= 17 for other, v in draw.sizes.items() if other != name)
        assert task.footprint(draw.sizes)[0] <= CPU_ELEMENT_BUDGET


def test_cpu_draws_pass_cpu_max_when_the_kernel_blocks_need_it() -> None:
    task = get_task("silu")
    sizes = [d.sizes["N"] for d in case_draws(task, with_block("silu", 1 << 17), 5, 0, gpu=False)]
    assert max(sizes) > 1 << 17 > task.sizes["N"].cpu_max


def test_a_range_below_the_extent_is_drawn_at_its_maximum() -> None:
    task = get_task("attention_causal_mha_f16")  # B in [1, 4], H in [1, 16]: below any block
    draws = targeted(case_draws(task, check(task.golden), 5, 0, gpu=False))
    assert {name: max(d.sizes[name] for d in draws) for name in ("B", "H")} == {"B": 4, "H": 16}


def test_the_largest_block_allowed_is_exceeded_within_the_budget() -> None:
    task = get_task("addcmul")  # four tensors of N
    checked = with_block("addcmul", 1 << 20)
    draws = targeted(case_draws(task, checked, 5, 0, gpu=False))
    assert [d.sizes["N"] > 1 << 20 for d in draws] == [True]
    assert task.footprint(draws[0].sizes)[0] <= CPU_ELEMENT_BUDGET


def test_a_targeted_draw_stays_in_a_range_that_starts_past_the_extent() -> None:
    silu = get_task("silu")
    task = silu.model_copy(update={"sizes": {"N": silu.sizes["N"].model_copy(update={"min": 5000})}})
    draws = targeted(case_draws(task, check(task.golden), 5, 0, gpu=False))  # extent 1024
    assert [5000 <= d.sizes["N"] <= task.sizes["N"].max and d.sizes["N"] % 1024 != 0 for d in draws] == [True]


def test_gpu_draws_reach_each_range_maximum_within_memory() -> None:
    task = get_task("matmul_bf16_f32out")
    draws = case_draws(task, check(task.golden), 5, 0, gpu=True)
    for name, r in task.sizes.items():
        assert any(d.sizes[name] == r.max for d in draws)
    assert all(task.footprint(d.sizes)[1] <= GPU_BYTE_BUDGET for d in targeted(draws))


def test_draws_are_reproducible_from_the_seed() -> None:
    task = get_task("cross_entropy")
    checked = check(task.golden)
    assert case_draws(task, checked, 5, 3, gpu=False) == case_draws(task, checked, 5, 3, gpu=False)
    assert case_draws(task, checked, 5, 3, gpu=False) != case_draws(task, checked, 5, 4, gpu=False)


def record(task: str, tier: str, sizes: list[dict[str, int]]) -> CaseResult:
    return CaseResult(task=task, tier=tier, provider="reference", model="golden", outcome="ok", mode="cpu",
                      target="sm_90", sizes_checked=sizes)


def test_the_record_and_the_summary_say_the_largest_sizes_checked() -> None:
    a = record("relu", "easy", [{"N": 7}, {"N": 20000}, {"N": 1}])
    b = record("silu", "easy", [{"N": 30000}])
    c = record("row_sum", "med", [{"M": 3, "N": 900}, {"M": 70, "N": 2}])
    assert a.largest_sizes == {"N": 20000}
    assert CaseResult.model_validate_json(a.model_dump_json()).largest_sizes == {"N": 20000}
    lines = summarize([a, b, c])
    assert "easy: largest sizes checked: N 30000" in lines
    assert "med: largest sizes checked: M 70, N 900" in lines
    a.extra["sampled_draws"] = [{"sizes": {"N": 20000}, "programs": 9, "of": 202}]
    assert "1 cases were judged on a sample of programs in 1 draws past the interpreter's budget: relu" \
        in summarize([a, b, c])


def test_scalars_are_drawn_per_assignment_within_their_range_and_bench_keeps_its_value() -> None:
    task = get_task("rmsnorm_f16")
    r = task.scalar_ranges["eps"]
    drawn = {make_inputs(task, {"M": 2, "N": n}, seed=0)["eps"] for n in range(1, 9)}
    assert len(drawn) == 8 and all(r.min <= eps <= r.max for eps in drawn)
    assert max(drawn) / min(drawn) > 100  # log-uniform over six decades
    assert make_inputs(task, {"M": 2, "N": 3}, seed=0)["eps"] == make_inputs(task, {"M": 2, "N": 3}, seed=0)["eps"]
    assert make_inputs(task, {"M": 2, "N": 3}, seed=0, bench=True)["eps"] == task.scalars["eps"]
    assert "eps: f32 scalar, any value in [1e-06, 1]" in task.render_prompt()


def test_an_extreme_draw_puts_a_scalar_without_an_extreme_value_at_a_bound_of_its_range() -> None:
    """softshrink's prompt allows lambd = 0, where a kernel dividing lambd by |x| gives 0 / 0 at
    x = 0: uniform draws never hit a bound exactly, so each extreme draw takes min or max."""
    task = get_task("softshrink")
    r = task.scalar_ranges["lambd"]
    extreme = {scalar_values(task, {"N": n}, 0, extreme=True)["lambd"] for n in range(1, 40)}
    assert extreme == {r.min, r.max}
    plain = {scalar_values(task, {"N": n}, 0)["lambd"] for n in range(1, 40)}
    assert len(plain) > 30 and not plain & {r.min, r.max}


def test_a_set_of_values_is_drawn_from() -> None:
    task = get_task("row_any_above")
    values = task.scalar_ranges["threshold"].values
    drawn = {make_inputs(task, {"M": 1, "N": n}, seed=0)["threshold"] for n in range(1, 30)}
    assert drawn <= set(values) and len(drawn) > 3


def test_extreme_domains_apply_to_extreme_draws_and_the_prompt_says_so() -> None:
    task = get_task("log_sigmoid")
    plain = make_inputs(task, {"N": 4000}, seed=0)["x"]
    extreme = make_inputs(task, {"N": 4000}, seed=0, extreme=True)["x"]
    assert plain.abs().max() < 60 < extreme.abs().max()
    assert "x: normal of scale 100" in task.render_prompt()


def test_scalar_ranges_are_validated() -> None:
    with pytest.raises(ValidationError, match="either min and max, or values"):
        ScalarRange(min=0.1)
    with pytest.raises(ValidationError, match="log needs"):
        ScalarRange(min=0.0, max=1.0, log=True)
    data = get_task("elu").model_dump()
    data["scalar_ranges"] = {"beta": {"min": 0.0, "max": 1.0}}
    with pytest.raises(ValidationError, match="not a scalar input"):
        Task.model_validate(data)
    # the timed value must be one the checks draw: a window capped at 512 passed every check
    # of sliding-window attention while the bench timed window 1024 (half the work)
    data = get_task("sliding_window_attention_f16").model_dump()
    data["scalar_ranges"] = {"window": {"min": 1, "max": 300}}
    with pytest.raises(ValidationError, match="window = 1024, which its scalar_ranges .* never draws"):
        Task.model_validate(data)


def test_an_ordered_pair_of_bounds_is_drawn_anywhere_the_prompt_allows() -> None:
    """hardtanh promises min_val <= max_val: both are drawn from one range and sorted, so both lie
    above 0 in some draws and below it in others (a kernel that clamps each sign against one
    bound passed every pair from two disjoint ranges); the extreme draws put both above 0."""
    task = get_task("hardtanh")
    pairs = [scalar_values(task, {"N": n}, 0) for n in range(1, 200)]
    assert all(p["min_val"] <= p["max_val"] for p in pairs)
    assert any(p["min_val"] > 0 for p in pairs) and any(p["max_val"] < 0 for p in pairs)
    assert any(p["min_val"] < 0 < p["max_val"] for p in pairs)
    extreme = scalar_values(task, {"N": 5}, 0, extreme=True)
    assert 0 < extreme["min_val"] <= extreme["max_val"]
    assert "max_val: f32 scalar, any value in [-2, 2], at least min_val" in task.render_prompt()
    data = task.model_dump()
    data["scalar_ranges"]["max_val"] = {"min": 0.1, "max": 2.0, "at_least": "min_val"}
    with pytest.raises(ValidationError, match="drawn from the same range"):
        Task.model_validate(data)


def test_a_threshold_on_random_numbers_is_drawn_at_one_of_them() -> None:
    """dropout's p (at_rand: seed) is the random number of one element, and in an extreme draw the
    f32 number just below one: keep = u >= p, or 1 - u < 1 - p, differs there; a range naming a
    seed that is not an integer scalar is refused."""
    from kernelgen.lang import philox

    task = get_task("dropout_residual_layernorm")
    sizes = {"M": 3, "N": 50}
    for extreme in (False, True):
        values = scalar_values(task, sizes, 0, extreme=extreme)
        numbers = philox.random("rand", torch.tensor(values["seed"]), torch.arange(150, dtype=torch.int32))
        p = torch.tensor(values["p"], dtype=torch.float32)
        hit = numbers == (torch.nextafter(p, torch.tensor(math.inf)) if extreme else p)
        assert bool(hit.any()) and 0.05 <= values["p"] <= 0.5
    data = task.model_dump()
    data["scalar_ranges"]["p"] = {"min": 0.05, "max": 0.5, "at_rand": "eps"}
    with pytest.raises(ValidationError, match="must be an integer scalar input"):
        Task.model_validate(data)


# Scalar pairs that bound a clamp (lower, upper).
BOUND_PAIRS = (("min_val", "max_val"), ("min", "max"), ("lo", "hi"), ("low", "high"), ("lower", "upper"))


def test_a_pair_of_clamp_bounds_may_lie_on_one_side_of_zero() -> None:
    """Each scalar of a lower/upper pair is drawn from a range with both signs, so both bounds
    lie above 0 (or below it) in some draws: a kernel that assumes they straddle 0 fails."""
    from kernelgen.task.spec import load_tasks

    found = []
    for task in load_tasks():
        for low, high in BOUND_PAIRS:
            if {low, high} <= set(task.scalars):
                found.append(task.id)
                for name in (low, high):
                    r = task.scalar_ranges[name]
                    assert r.min < 0 < r.max, (task.id, name)
    assert {"hardtanh", "clamp_optional"} <= set(found)


def test_offsets_are_sorted_segment_starts_within_the_total() -> None:
    """A ``starts`` domain draws well-formed ragged inputs: the first start 0, sorted, each
    in [0, total]; lengths vary, and some segments are empty where the cuts repeat."""
    task = get_task("segment_sum_csr")
    for sizes in ({"E": 1, "D": 3, "S": 1}, {"E": 5, "D": 2, "S": 40}, {"E": 3000, "D": 1, "S": 100}):
        offsets = make_inputs(task, sizes, seed=2)["offsets"]
        assert offsets.dtype == torch.int32 and offsets.shape == (sizes["S"],)
        assert offsets[0] == 0 and bool((offsets[1:] >= offsets[:-1]).all()) and int(offsets[-1]) <= sizes["E"]
    many = make_inputs(task, {"E": 3000, "D": 1, "S": 100}, seed=2)["offsets"]
    lengths = torch.diff(torch.cat([many, torch.tensor([3000], dtype=torch.int32)]))
    assert int(lengths.max()) > 3 * int(lengths.float().mean())  # not an even split
    assert int((make_inputs(task, {"E": 5, "D": 2, "S": 40}, seed=2)["offsets"].diff() == 0).sum()) > 0


def test_a_starts_domain_needs_a_size_total_and_a_1d_integer_input() -> None:
    data = get_task("segment_sum_csr").model_dump(exclude={"variant"})
    with pytest.raises(ValidationError, match="total"):
        Task.model_validate({**data, "domains": {"offsets": {"kind": "starts"}}})
    with pytest.raises(ValidationError, match="is not a size name"):
        Task.model_validate({**data, "domains": {"offsets": {"kind": "starts", "total": "Q"}}})
    with pytest.raises(ValidationError, match="1-D i32 or i64"):
        Task.model_validate({**data, "domains": {"values": {"kind": "starts", "total": "E"}}})
