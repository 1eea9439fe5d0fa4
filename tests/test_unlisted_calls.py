"""Every call a task admits is verified (issue 32, item 3): each binding of its dtype variables
with each presence pattern of its optional tensors, also those no listed call makes."""

from __future__ import annotations

import itertools

from kernelgen.task.spec import get_task
from kernelgen.task.variants import unlisted_calls


def patterns(task) -> set[tuple]:
    optional = [s.name for s in task.signature.inputs if s.is_plain and s.shape is not None and s.optional]
    return {(tuple(sorted(t.variant.dtypes.items())),
             frozenset(n for n in optional if n in t.variant.args and t.variant.args[n] is None))
            for t in task.variant_tasks() + unlisted_calls(task)}


def test_listed_and_unlisted_calls_cover_every_binding_and_presence_pattern() -> None:
    task = get_task("layer_norm_optional")  # T in {f16, bf16, f32}; weight and bias optional: 12 calls
    every = {((("T", dtype),), frozenset(omitted)) for dtype in ("f16", "bf16", "f32")
             for omitted in itertools.chain.from_iterable(itertools.combinations(("weight", "bias"), k) for k in range(3))}
    assert patterns(task) == every
    assert len(unlisted_calls(task)) == 12 - len(task.variants)


def test_a_binding_no_listed_call_makes_is_a_call() -> None:
    (f32,) = unlisted_calls(get_task("maximum_generic"))
    assert f32.variant.dtypes == {"T": "f32"} and [s.dtype for s in f32.signature.inputs] == ["f32", "f32"]


def test_an_unlisted_call_keeps_the_tolerance_of_a_listed_call_of_its_binding() -> None:
    task = get_task("linear_optional_bias")
    by_name = {t.variant.name: t for t in unlisted_calls(task)}
    listed = {v.name: v for v in task.variants}
    assert by_name["unlisted_f32"].tolerance == listed["f32_no_bias"].tolerance
    assert by_name["unlisted_bf16_no_bias"].tolerance == task.tolerance


def test_a_dtype_argument_that_selects_a_variable_is_rebound() -> None:
    by_name = {t.variant.name: t.variant for t in unlisted_calls(get_task("softmax_dtype"))}
    assert by_name["unlisted_f16_f64"].args == {"dim": -1, "dtype": "f64"}
    assert by_name["unlisted_f64_f32"].args["dtype"] == "f32"


def test_tasks_without_variables_or_optional_tensors_have_none() -> None:
    assert unlisted_calls(get_task("relu")) == [] and unlisted_calls(get_task("hardswish_generic")) == []


def test_the_prompt_says_every_call_is_checked() -> None:
    assert "Every other call a PyTorch user may make" in get_task("rms_norm_batched").render_prompt()
    assert "Every other call" not in get_task("relu").render_prompt()
