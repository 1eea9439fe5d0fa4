"""How far a kernel is verified (issue 32, items 1 and 2): sizes past what a program covers
along each size (tile products, loop bounds and grids its meta values decide), each size at its
range's maximum in CPU mode too, and the SM counts a persistent kernel may meet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from kernelgen.check.checker import check
from kernelgen.host.plan import INTERPRETER_NUM_SMS, plan_launch, verified_num_sms
from kernelgen.lang.parse import parse_kernel
from kernelgen.task.draws import CPU_RANGE_MAX_BUDGET, NUM_SMS_CHECKED, RANGE_MAX_OTHERS, case_draws
from kernelgen.task.size_reads import block_extent, reads_num_sms
from kernelgen.task.spec import get_task

CATALOGUE = Path(__file__).parent / "redteam"


def catalogued(name: str):
    """A catalogue kernel, checked."""
    return check(parse_kernel(json.dumps(json.loads((CATALOGUE / f"{name}.json").read_text())["kernel"])))


@pytest.mark.parametrize("name", ["row_cumsum_long_one_32x512_tile", "cross_entropy_loop_stops_at_chunks_times_block",
                                  "splitk_gemm_f32out_eight_splits_of_2048"])
def test_what_a_program_covers_is_the_extent(name: str) -> None:
    """A [32, 512] tile covers 16384 elements of a row; a loop to CHUNKS * BLOCK (16 x 1024)
    and a grid of SPLIT = 8 programs of a 2048-wide span each cover 16384 too."""
    assert block_extent(catalogued(name)) >= 16384


def test_a_draw_goes_past_a_tile_product() -> None:
    task = get_task("row_cumsum_long")
    draws = case_draws(task, catalogued("row_cumsum_long_one_32x512_tile"), 5, 0, gpu=False)
    assert any(d.kind == "past_extent" and d.sizes["N"] > 16384 for d in draws)


@pytest.mark.parametrize("task_id, name, others", [("row_cumsum_long", "N", {"M": 8}),  # 16 x 65536 x 2: past the budget
                                                    ("matmul_f16", "K", {"M": 16, "N": 16}),
                                                    ("cross_entropy", "C", {"M": 16})])
def test_cpu_mode_draws_each_size_at_its_range_maximum(task_id: str, name: str, others: dict[str, int]) -> None:
    """Beyond cpu_max, within the range-maximum budget; the other sizes at 16 where it fits, else
    at the largest of 8, 4 and 1 that does (a long reduction then shows its rounding on 256
    outputs of a matmul, not on one)."""
    assert RANGE_MAX_OTHERS == 16
    task = get_task(task_id)
    draws = [d for d in case_draws(task, check(task.golden), 5, 0, gpu=False) if d.kind == "range_max"]
    (draw,) = [d for d in draws if d.sizes[name] == task.sizes[name].max]
    assert draw.sizes == {**others, name: task.sizes[name].max} and draw.extreme
    assert task.footprint(draw.sizes)[0] <= CPU_RANGE_MAX_BUDGET


def test_in_cpu_mode_a_size_the_grid_spreads_over_gets_no_range_maximum_unless_a_loop_runs_over_it() -> None:
    """softmax_temperature: M is the grid's (8192 rows cost the interpreter seconds per call) and
    no loop runs over it: the draw past the extent stands for its maximum; N, which the kernel
    loops over, still gets its range's maximum. On the GPU both do."""
    from kernelgen.task.size_reads import looped_sizes

    task = get_task("softmax_temperature")
    checked = check(task.golden)
    assert looped_sizes(checked) & set(task.sizes) == {"N"}
    cpu = case_draws(task, checked, 5, 0, gpu=False)
    # N at its maximum, and one below it (odd: a partial last block there) with M at its minimum
    assert [d.sizes for d in cpu if d.kind == "range_max"] == [{"M": 1, "N": 8191}, {"M": RANGE_MAX_OTHERS, "N": 8192}]
    assert {"M", "N"} <= {n for d in case_draws(task, checked, 5, 0, gpu=True) if d.kind == "range_max"
                          for n, v in d.sizes.items() if v == task.sizes[n].max}


def test_a_range_maximum_past_the_budget_takes_the_others_at_their_minimum() -> None:
    task = get_task("row_sum")  # N at 8192 with M at 16 fits; the budget decides in the test above
    (draw,) = [d for d in case_draws(task, check(task.golden), 5, 0, gpu=False)
               if d.kind == "range_max" and d.sizes["N"] == 8192]
    assert draw.sizes["M"] == RANGE_MAX_OTHERS and task.footprint(draw.sizes)[0] <= CPU_RANGE_MAX_BUDGET


def test_a_kernel_that_reads_num_sms_is_verified_under_each_count() -> None:
    task = get_task("bincount_bytes")
    persistent = catalogued("bincount_bytes_persistent_all_partials_control")
    assert reads_num_sms(persistent) and not reads_num_sms(check(task.golden))
    draws = case_draws(task, persistent, 5, 0, gpu=False)
    counted = [d for d in draws if d.num_sms is not None]
    assert [d.num_sms for d in counted] == list(NUM_SMS_CHECKED)
    # On the assignment with the most elements among those that keep 133 programs busy.
    assert len({tuple(d.sizes.items()) for d in counted}) == 1
    assert counted[0].sizes["N"] == max(d.sizes["N"] for d in draws)
    assert not [d for d in case_draws(task, check(task.golden), 5, 0, gpu=False) if d.num_sms is not None]


def test_verified_num_sms_sets_what_launches_read() -> None:
    kernel = catalogued("relu_persistent_num_programs_step_control")
    x = torch.randn(100_000)
    assert plan_launch(kernel, {"x": x}).num_programs == INTERPRETER_NUM_SMS
    for count in NUM_SMS_CHECKED:
        with verified_num_sms(count):
            assert plan_launch(kernel, {"x": x}).num_programs == min(count, -(-100_000 // 1024))
    assert plan_launch(kernel, {"x": x}).num_programs == INTERPRETER_NUM_SMS


def test_a_draw_chosen_for_the_kernel_past_the_interpreters_budget_is_judged_on_a_sample_of_programs() -> None:
    """attention_f16's [128, 64] score tile puts S past 8192: quadratic work past the
    interpreter's budget. Its programs are independent, so those draws are judged on a sample
    of programs (recorded with its size), the first and the last among them. The first of those
    draws runs here (the golden's whole case, every draw, is the bench's)."""
    from kernelgen.harness.pipeline import Settings, verify_cpu

    task, settings = get_task("attention_f16"), Settings(gpu=False, compile=False)
    checked = check(task.golden)
    past = [d for d in case_draws(task, checked, settings.shapes, settings.seed, gpu=False) if d.sizes["S"] > 8192]
    # the draw past the extent, and the sorted ones past twice the extent along S
    assert len(past) == 3
    sampled: list[dict] = []
    draw = past[0]
    verify_cpu(task, checked, draw.sizes, settings.seed, draw.extreme, settings.timeout_s, draw.num_sms,
               draw.order, sampled)
    assert len(sampled) == 1 and sampled[0]["sizes"]["S"] > 8192 and 2 <= sampled[0]["programs"] < sampled[0]["of"]


def test_a_sample_holds_the_first_and_last_programs_and_some_between() -> None:
    from kernelgen.interp.sampled import sampled_programs

    chosen = sampled_programs(1000, 9).tolist()
    assert chosen[:3] == [0, 1, 2] and chosen[-3:] == [997, 998, 999] and 7 <= len(chosen) <= 9
    assert chosen == sorted(set(chosen)) and all(3 <= p < 997 for p in chosen[3:-3])
    assert sampled_programs(5, 9).tolist() == [0, 1, 2, 3, 4] and sampled_programs(1000, 2).tolist() == [0, 999]
    # A grid of 2**31 - 1 programs is never listed (16 GB as int64): the sample is drawn.
    huge = sampled_programs(2**31 - 1, 30).tolist()
    assert huge[:10] == list(range(10)) and huge[-1] == 2**31 - 2 and len(huge) <= 30


def test_a_launch_whose_programs_share_memory_is_not_sampled_and_its_draw_stays_unjudged() -> None:
    """Atomics, scratch, an init fill or several launches: a sample of programs would see
    partial sums, so the draw is left out as before."""
    from kernelgen.interp.sampled import why_not_sampled

    for name in ("row_topk8_ticket_slots_packed_keys_control", "bincount_bytes_persistent_all_partials_control"):
        assert why_not_sampled(catalogued(name)) is not None, name
    assert why_not_sampled(check(get_task("attention_f16").golden)) is None


def test_a_draw_past_the_budget_that_no_sample_judges_gets_a_halved_stand_in() -> None:
    """row_topk64's two launches share scratch, so its M = 8192 draw against N = 64 is not sampled;
    it stays recorded unjudged, and the largest of its halvings the interpreter affords (M = 4097) is
    judged in its place: the only draw of CPU mode with M > N (a scratch sized by N, not M, is
    caught there: the catalogue's row_topk64_candidate_scratch_sized_by_columns)."""
    from kernelgen.harness.pipeline import Settings, evaluate_answer
    from kernelgen.lang.parse import kernel_to_json

    task = get_task("row_topk64")
    result = evaluate_answer(task, kernel_to_json(task.golden), Settings(gpu=False, compile=False))
    assert result.ok
    (left,) = result.extra["unjudged_draws"]
    assert left["sizes"] == {"M": 8192, "N": 64} and left["stand_in"] == {"M": 4097, "N": 64}
    assert left["stand_in"] in result.sizes_checked


def test_cpu_mode_draws_every_size_large_together_once() -> None:
    """A tail dropped only where M * N >= 2**18 passed every CPU draw (48 x 2500 at most by
    hypothesis, one size large and the others small in the targeted ones): one draw has every
    size at one odd value (or its range's maximum), its product past 2**18, within the joint budget; the GPU's draws
    reach such products by themselves."""
    from kernelgen.task.draws import CPU_JOINT_BUDGET

    for task_id in ("row_mean_abs_dev", "matmul_f16", "bmm_f16"):
        task = get_task(task_id)
        (joint,) = [d for d in case_draws(task, check(task.golden), 5, 0, gpu=False) if d.kind == "joint"]
        values = {v for n, v in joint.sizes.items() if v != task.sizes[n].max}  # bmm's B stops at 32
        assert len(values) == 1 and values.pop() % 2 == 1, joint
        elements = task.footprint(joint.sizes)[0]
        assert CPU_JOINT_BUDGET // 2 < elements <= CPU_JOINT_BUDGET
    task = get_task("row_mean_abs_dev")
    (joint,) = [d for d in case_draws(task, check(task.golden), 5, 0, gpu=False) if d.kind == "joint"]
    assert joint.sizes["M"] * joint.sizes["N"] >= 1 << 18
    assert not [d for d in case_draws(task, check(task.golden), 5, 0, gpu=True) if d.kind == "joint"]
    assert not [d for d in case_draws(get_task("relu"), check(get_task("relu").golden), 5, 0, gpu=False)
                if d.kind == "joint"]
