"""CPU mode's cancelling draw (kernelgen.task.reductions.with_cancelling_halves): a sum into an
f16 or bf16 output whose partial sums are rounded to that dtype before the final sum (a split-K
gemv atomic_adding f16 partials) passed every draw, since partials as small as the result are
rounded within its tolerance. The draw makes the halves of the reduction large and cancelling."""

from __future__ import annotations

import pytest
import torch

from kernelgen.check.checker import check
from kernelgen.harness.pipeline import verify_cpu
from kernelgen.task.compare import compare_tensors
from kernelgen.task.draws import case_draws
from kernelgen.task.reductions import CANCEL_HALF_ATOLS, cancelling_inputs
from kernelgen.task.spec import get_task, load_tasks
from kernelgen.task.verify import make_inputs, run_reference

# row_mean_bf16 compares in bf16 steps (round 18), where its own steps judge partials rounded to
# bf16 on every draw and the large halves' f32 rounding would fail a correct sum: no such draw.
SUMS = ("gemv_f16", "splitk_gemv_f16")


def test_sums_into_narrow_outputs_get_the_draw_and_dots_and_extreme_domains_do_not() -> None:
    """Every task whose f16/bf16 output sums its tensor inputs (one or two) along a shared last
    axis, without a golden dot (a GPU answer's tensor cores drift that far on these sums)."""
    found = {task.id for task in load_tasks() if cancelling_inputs(task) is not None}
    assert found >= set(SUMS)
    for task_id in ("linear_f16", "row_std_f16", "matmul_f16", "row_mean_bf16"):  # a dot, extreme domains,
        assert cancelling_inputs(get_task(task_id)) is None, task_id            # b [K, N], steps


@pytest.mark.parametrize("task_id", SUMS)
def test_a_sum_into_a_narrow_output_has_one_cancelling_draw_in_cpu_mode_at_the_top_of_its_range(task_id: str) -> None:
    task = get_task(task_id)
    size, _ = cancelling_inputs(task)
    checked = check(task.golden)
    (draw,) = [d for d in case_draws(task, checked, 3, 0, gpu=False) if d.kind == "cancelling"]
    assert draw.order == "cancelling" and not draw.extreme
    assert draw.sizes[size] >= 8192
    assert not [d for d in case_draws(task, checked, 3, 0, gpu=True) if d.order is not None]


@pytest.mark.parametrize("task_id", SUMS)
def test_partials_rounded_to_the_output_dtype_fail_the_cancelling_draw_and_the_golden_passes(task_id: str) -> None:
    """Each half of the reduction alone, as the reference rounds it to the output's dtype, is
    large (about CANCEL_HALF_ATOLS atols); the two added are outside the tolerance of the full
    sum somewhere, while the golden's f32 sums pass."""
    task = get_task(task_id)
    size, names = cancelling_inputs(task)
    (draw,) = [d for d in case_draws(task, check(task.golden), 3, 0, gpu=False) if d.kind == "cancelling"]
    inputs = make_inputs(task, draw.sizes, 0, order=draw.order)
    half = draw.sizes[size] // 2
    (spec,) = task.signature.outputs
    expected = run_reference(task, inputs)[spec.name]
    rounded = []
    for keep in (slice(0, half), slice(half, None)):
        alone = dict(inputs)
        for name in names:
            alone[name] = torch.zeros_like(inputs[name])
            alone[name][..., keep] = inputs[name][..., keep]
        rounded.append(run_reference(task, alone)[spec.name].double())
    tolerance = task.tolerance_for(spec.dtype)
    assert float(rounded[0].abs().max()) > CANCEL_HALF_ATOLS / 2 * tolerance.atol
    narrow = (rounded[0] + rounded[1]).to(expected.dtype)
    assert not compare_tensors(narrow, expected, spec.dtype, tolerance).ok
    verify_cpu(task, check(task.golden), draw.sizes, 0, order=draw.order)
