"""CPU mode's shift draws (kernelgen/task/shifts.py): an input the reference ignores a shift of
along some axes is set constant and far off zero along them, so a finite sentinel a kernel uses
in place of -inf (a running maximum started at -1e4, padding keys scored -1e4) shows; a reference
that the shift changes gets no such draw, and correct kernels pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from kernelgen.check.checker import check
from kernelgen.errors import WrongResult
from kernelgen.harness.pipeline import verify_cpu
from kernelgen.lang.parse import parse_kernel
from kernelgen.task.draws import shift_draws
from kernelgen.task.shifts import DOT_SCALE, GRID_CLIP, GRID_STEPS, MULTIPLES, shift_orders, with_shift
from kernelgen.task.spec import get_task
from kernelgen.task.verify import make_inputs, run_reference

REDTEAM = Path(__file__).parent / "redteam"


@pytest.mark.parametrize("task_id, order", [
    ("softmax_f16", "shift:x:1"),  # along a row
    ("softmax_cols", "shift:x:0"),  # along a column
    ("cross_attention_bf16", "shift:k:1"),  # along the keys: q . (k + u) shifts a query's scores alike
    ("paged_attention_decode_f16", "shift:k_cache:0,1"),  # the keys are a cache's pages and slots
    ("attention_f16", "shift:v:0"),  # the output moves with v constant along the keys, at every query
    ("flash_decoding_f16", "shift:v:2"),
    ("cross_entropy", "shift:logits:1"),
    ("moe_top2_routing", "shift:logits:1"),  # a ties domain: a constant row is all ties, broken as torch does
])
def test_the_axes_found_are_those_the_reference_ignores_a_shift_along(task_id: str, order: str) -> None:
    assert order in [draw.order for draw in shift_draws(get_task(task_id), 0)]


def test_a_reference_a_shift_changes_gets_no_draw() -> None:
    """A row sum grows with the shift, a GEMM's output with its inputs, a GELU's with its input."""
    for task_id in ("row_sum", "matmul_bf16_f32out", "gelu"):
        assert shift_draws(get_task(task_id), 0) == []


def test_an_output_moved_beside_one_the_shift_leaves_alone_gets_no_draw() -> None:
    """add + layer norm's h = x + residual moves with a shift of x along its rows, and its y, the
    layer norm of A * m plus the residual's spread, rests on an f32 mean of values near A: a
    correct kernel's y is a bf16 step off on ~8% of elements there, so neither input is shifted."""
    task = get_task("add_layernorm_bf16")
    sizes = {"M": 9, "N": 9}
    assert shift_orders(task, make_inputs(task, sizes, 0), run_reference, 7) == []


def test_a_long_draw_along_the_constant_axes_catches_a_partial_sum_kept_in_f16() -> None:
    """flash decoding's unnormalised split partials rounded to f16 (round 18): v constant along
    the keys is A * m, so a partial is A * m times the weights of a split's keys, past 65504 only
    past a few keys: the draw of every size at 5 passes it, the one long along S does not."""
    task, wrong = _kernel("flash_decoding_f16_partial_acc_f16")
    draws = [d for d in shift_draws(task, 0) if d.order == "shift:v:2"]
    assert [d.sizes for d in draws] == [{"B": 5, "H": 5, "S": 5}, {"B": 3, "H": 3, "S": 27}]
    for draw in draws:
        verify_cpu(task, check(task.golden), draw.sizes, 0, order=draw.order)
    verify_cpu(task, wrong, draws[0].sizes, 0, order=draws[0].order)
    with pytest.raises(WrongResult):
        verify_cpu(task, wrong, draws[1].sizes, 0, order=draws[1].order)


def test_the_shifted_input_is_constant_along_its_axes_and_the_others_on_a_grid() -> None:
    task = get_task("cross_attention_bf16")
    draw = next(d for d in shift_draws(task, 0) if d.order == "shift:k:1")
    plain = make_inputs(task, draw.sizes, 0)
    drawn = make_inputs(task, draw.sizes, 0, order=draw.order)
    k = drawn["k"].double()
    assert torch.equal(k, k[:, :1].expand_as(k))  # equal along SK
    multiples = (k / DOT_SCALE).abs()  # q meets k in a dot: A is DOT_SCALE, not bf16's SHIFT_SCALES
    assert bool(((multiples >= 1) & (multiples <= MULTIPLES) & (multiples == multiples.round())).all())
    assert bool((k < 0).any()) and bool((k > 0).any())
    for name in ("q", "v"):
        quarters = drawn[name].double() * GRID_STEPS
        assert torch.equal(quarters, quarters.round()) and float(quarters.abs().max()) <= GRID_STEPS * GRID_CLIP
        assert not torch.equal(drawn[name], plain[name])
    # q takes m's signs (k's batch, head and dimension axes), each query negated at random: its
    # scores are +-A * sum |q| |m|, all of one sign, both signs among the queries
    m = k[:, 0].double()  # [B, H, 64]
    scores = (drawn["q"].double() * m[:, None]).sum(-1)  # [B, SQ, H]
    assert torch.equal(scores.abs(), (drawn["q"].double().abs() * m[:, None].abs()).sum(-1))
    assert bool((scores < 0).any()) and bool((scores > 0).any())
    # the reference's result is the mean of v over the keys (every score of a query equal)
    assert torch.allclose(run_reference(task, drawn)["out"].float(), drawn["v"].float().mean(dim=1, keepdim=True)
                          .expand_as(drawn["q"]), atol=1e-2)


def test_the_probe_needs_the_reference_unchanged_at_both_scales() -> None:
    """softmax's rows are found; with the row's axis swapped for the columns' the row softmax of a
    column-constant input is not the one of its unit version."""
    task = get_task("softmax_f16")
    sizes = {"M": 9, "N": 9}
    inputs = make_inputs(task, sizes, 0)
    assert shift_orders(task, inputs, run_reference, 7) == ["shift:x:1"]
    far = run_reference(task, with_shift(task, inputs, "shift:x:0", 7))["out"].float()
    near = run_reference(task, with_shift(task, inputs, "shift:x:0", 7, scale=1.0))["out"].float()
    assert not torch.allclose(far, near, atol=1e-2)


def _kernel(name: str) -> tuple:
    case = json.loads((REDTEAM / f"{name}.json").read_text())
    task = get_task(case["task"])
    return task, check(parse_kernel(json.dumps(case["kernel"])))


@pytest.mark.parametrize("name", ["cross_attention_bf16_running_max_init_minus_1e4",
                                  "cross_attention_bf16_tail_mask_minus_1e4"])
def test_a_sentinel_in_place_of_minus_infinity_fails_the_shift_draw_and_the_golden_passes(name: str) -> None:
    """Round 16: a running maximum started at -1e4, and the tail block's padding keys scored -1e4,
    passed every other draw; every score of a shifted query lies far below -1e4 for half the
    queries (a NaN from 0 / 0, or all the weight on padding whose v loads as 0)."""
    task, wrong = _kernel(name)
    draw = next(d for d in shift_draws(task, 0) if d.order == "shift:k:1")
    verify_cpu(task, check(task.golden), draw.sizes, 0, order=draw.order)
    with pytest.raises(WrongResult):
        verify_cpu(task, wrong, draw.sizes, 0, order=draw.order)


def test_a_logsumexp_started_at_minus_1e4_fails_where_the_row_moves_with_the_shift() -> None:
    """logsumexp moves with a shift of its row (out + u): an output that reduces the shifted axis
    away is admitted when it moves by the shift itself. The golden with its running maximum and
    its masked lanes at -1e4 passes rows of scale 100; shifted rows near -2**16 give log(0)."""
    task = get_task("logsumexp_rows")
    draw = next(d for d in shift_draws(task, 0) if d.order == "shift:x:1")
    text = task.golden.model_dump_json(exclude_none=True).replace("\"-inf\"", "-10000.0")
    assert text.count("-10000.0") == 2  # the carry's init and the load's other
    verify_cpu(task, check(task.golden), draw.sizes, 0, order=draw.order)
    with pytest.raises(WrongResult):
        verify_cpu(task, check(parse_kernel(text)), draw.sizes, 0, order=draw.order)


def test_a_dot_with_an_additive_term_keeps_its_rounding_well_inside_the_tolerance() -> None:
    """alibi adds slope * distance to scores of about 100 A: rounded at that magnitude, the term
    moves the weights. Where q meets k in a dot, A is DOT_SCALE; the golden there uses about a
    quarter of its tolerance (0.77 at f16's 2**14), room for correct kernels that round it twice."""
    from kernelgen.interp.execute import execute_call
    from kernelgen.task.magnitude import checked_inputs

    task = get_task("alibi_attention_f16")
    draw = next(d for d in shift_draws(task, 1) if d.order == "shift:k:2")
    inputs, atol_scale = checked_inputs(task, draw.sizes, 1, order=draw.order)
    assert float(inputs["k"].double().abs().max()) <= MULTIPLES * DOT_SCALE
    want = run_reference(task, inputs)["out"].double()
    got = execute_call(check(task.golden), inputs).outputs["out"].double()
    tolerance = task.tolerance_for("f16")
    used = ((got - want).abs() / (tolerance.atol * atol_scale + tolerance.rtol * want.abs())).max()
    assert float(used) < 0.4
