"""The benchmark's task files: they load, and each task's ``eager`` code (what speedups are
measured against) computes the same function as its reference, in the task's own dtypes.

A task whose reference upcasts for accuracy (an f16 matmul computed in f32) would otherwise be
timed against that slow upcast, and its speedup would say more about the reference than about
the kernel; ``eager`` is the PyTorch code a user would time instead. It must compute the same
function (within low-precision rounding: it may round where the reference does not), return
the outputs' shapes and dtypes, and read its inputs without modifying them."""

from __future__ import annotations

import pytest
import torch

from kernelgen.harness.pipeline import Settings, draw_sizes
from kernelgen.task.spec import TIERS, load_tasks
from kernelgen.task.verify import make_inputs, run_reference

TASKS = load_tasks()
WITH_EAGER = [t for t in TASKS if t.eager is not None]


def test_every_tier_has_its_tasks() -> None:
    counts = {tier: sum(t.tier == tier for t in TASKS) for tier in TIERS}
    assert counts["easy"] >= 40 and counts["med"] >= 40 and counts["hard"] >= 25, counts
    assert len({t.id for t in TASKS}) == len(TASKS)


def test_a_roofline_floor_never_exceeds_reading_every_input_once() -> None:
    """``min_bytes`` lowers the floor where a kernel need not read everything (a gather)."""
    floors = [t for t in TASKS if t.min_bytes is not None]
    assert {"embedding_bf16", "embedding_bag_mean_f16", "embedding_bag_sum", "paged_attention_decode_f16"} <= {t.id for t in floors}
    for task in floors:
        sizes = dict(task.bench_sizes)
        every_input = task.model_copy(update={"min_bytes": None}).bytes_moved(sizes)
        assert 0 < task.bytes_moved(sizes) <= every_input
    embedding = next(t for t in floors if t.id == "embedding_bf16")
    bag = next(t for t in floors if t.id == "embedding_bag_sum")
    assert embedding.bytes_moved({"T": 10, "V": 7, "D": 3}) == 10 * 4 + 10 * 3 * 2


def test_references_that_upcast_have_an_eager_twin() -> None:
    """A reference that converts inputs to a wider float type is not what PyTorch users run."""
    upcasting = [t.id for t in TASKS if ("double()" in t.reference or ".float()" in t.reference)
                 and any(i.dtype in ("f16", "bf16") or ".double()" in t.reference for i in t.signature.inputs)
                 and t.eager is None]
    assert upcasting == []


CONCRETE_WITH_EAGER = [c for t in WITH_EAGER for c in t.variant_tasks()]


@pytest.mark.parametrize("task", CONCRETE_WITH_EAGER,
                         ids=[t.id + (f"-{t.variant.name}" if t.variant else "") for t in CONCRETE_WITH_EAGER])
def test_eager_computes_the_reference_function(task) -> None:
    """(A task with calls: each call, as it passes dtype=, omitted tensors and dtypes.)"""
    for sizes in draw_sizes(task, Settings(shapes=2, seed=1))[:2]:
        # small, but within each size's range (a task's ids may need V >= 512)
        small = {name: max(min(value, 64), task.sizes[name].min) for name, value in sizes.items()}
        inputs = make_inputs(task, small, seed=3)
        inputs.update(task.eager_scalars)  # where eager's random numbers are PyTorch's: draws off
        before = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
        expected = run_reference(task, inputs)
        with torch.no_grad():
            result = task.eager_function()(*inputs.values())
        results = result if isinstance(result, (tuple, list)) else (result,)
        assert len(results) == len(expected)
        tied = False
        for (name, want), got in zip(expected.items(), results):
            assert got.shape == want.shape, name
            if _tie_order_only(task, inputs, got, want):
                tied = True
                continue
            if tied and not got.is_floating_point():
                continue  # counts or a permutation computed from those indices follow their tie order
            torch.testing.assert_close(got.to(want.dtype).double(), want.double(), rtol=3e-2, atol=3e-2, equal_nan=True,
                                       msg=f"{task.id}.{name} with {small}")
        for name, value in inputs.items():
            if isinstance(value, torch.Tensor):
                assert torch.equal(value, before[name]) or torch.allclose(value, before[name], rtol=0, atol=0, equal_nan=True), \
                    f"eager modified {name}"


def _tie_order_only(task, inputs, got, want) -> bool:
    """Whether indices into the rows of the first 2-D float input (a top-k's, a sort's) differ
    only in how equal values are ordered: torch.topk, the eager twin, leaves the tie order open,
    the reference follows the prompt's rule, and the ordinary draws hold ties (issue 32)."""
    x = next((v for v in inputs.values() if isinstance(v, torch.Tensor) and v.is_floating_point() and v.dim() == 2),
             None)
    if x is None or got.dtype not in (torch.int32, torch.int64) or got.dim() != 2 or x.dim() != 2 \
            or got.shape[0] != x.shape[0] or not all(0 <= int(t.min()) and int(t.max()) < x.shape[1] for t in (got, want)):
        return False
    return bool(torch.equal(x.gather(1, got.long()), x.gather(1, want.long())))


def _domains(task) -> list:
    return list(task.domains.values()) + list(task.extreme_domains.values())


# Prompts that name NaN or infinity for what the computation makes of finite inputs, not for an
# input's: nothing to draw.
PRODUCED_NAN = {"masked_softmax": "a row with no kept element is zeros, not NaN",
                "minmax_scale_rows": "0 / 0 of an all-equal row (rows of one element are drawn)",
                "row_var": "0 / 0 of a row of one element", "standardize_rows": "0 / NaN of a row of one element"}
PRODUCED_INF = {"f32_to_f16": "overflow of the cast (x is normal of scale 30000)",
                "log_sigmoid": "no -inf for very negative x (the output's)",
                "reciprocal_int": "1 / 0 (zeros are drawn)"}


@pytest.mark.parametrize("word, value, produced", [("NaN", "nan", PRODUCED_NAN), ("inf", "inf", PRODUCED_INF)])
def test_a_prompt_that_says_what_nan_or_inf_gives_draws_it(word: str, value: str, produced: dict) -> None:
    """A task whose prompt states what a NaN (an infinity) in an input gives draws one in some
    domain (sign: NaN gives 0.0; outer_greater: false), else a kernel wrong there passes."""
    import re

    mention = re.compile(rf"\b{word}\b|infinit", re.I) if word == "inf" else re.compile(r"\bNaN\b")
    missing = [t.id for t in TASKS if mention.search(t.prompt) and t.id not in produced
               and not any(str(v).lstrip("-") == value for d in _domains(t) for v in d.specials)]
    assert missing == []


# Tasks whose reference takes a float maximum or minimum (max pooling, amax, amin, cummax) that
# do not draw NaN yet: the extremum feeds arithmetic or a comparison whose NaN meaning the
# prompt does not state (open: each needs its prompt to say it, then NaN in its draws).
EXTREMUM_WITHOUT_NAN = {"absmax_quantize": "the row's amax is a scale; a NaN's quantized value is unstated",
                        "fp8_quantize_blockwise": "the block's amax is a scale; a NaN's quantized value is unstated",
                        "minmax_scale_rows": "(x - min) / (max - min): NaN's meaning unstated"}
# Tasks whose reference takes an extremum's index or an order (argmax, argmin, topk, sort) whose
# prompt promises finite values (the router's logits, the top-k's and sort's rows): no NaN drawn.
FINITE_BY_PROMPT = {"row_top2", "row_topk8", "row_topk64", "row_sort", "moe_top2_routing"}


def test_a_float_extremum_or_its_index_draws_nan() -> None:
    """torch's max pooling, amax, amin and cummax propagate NaN, and argmax, argmin, topk and
    sort count it as larger (argmin: smaller) than every number; a maximum written as
    where(a > b, a, b) drops it (as Triton's tl.maximum does by default), and an argmax that
    merges blocks with > never lets it win: a task whose reference takes one draws NaN in some
    domain, else such a kernel passes (maxpool2x2, row_argmax, col_argmin and top1_mask did),
    unless its prompt promises finite values."""
    import re

    extremum = re.compile(r"max_pool\w*\(|\.amax\(|\.amin\(|\bcummax\b|\bcummin\b|\barg(max|min|sort)\(|\btopk\(|"
                          r"\bsort\(|\bkthvalue\(|\bmedian\(|\b(max|min)\((\w+, )?dim=")
    taking = {t.id for t in TASKS if extremum.search(t.reference)
              and any(i.dtype in ("f16", "bf16", "f32", "f64") for i in t.signature.inputs if i.shape is not None)}
    assert {"maxpool2x2", "col_max", "row_max", "row_range", "amax_keepdim", "row_argmax", "col_argmin",
            "top1_mask"} | FINITE_BY_PROMPT <= taking
    missing = sorted(i for i in taking - set(EXTREMUM_WITHOUT_NAN) - FINITE_BY_PROMPT
                     if not any(str(v) == "nan" for t in TASKS if t.id == i for d in _domains(t) for v in d.specials))
    assert missing == []
    assert set(EXTREMUM_WITHOUT_NAN) <= taking
    unpromised = [t.id for t in TASKS if t.id in FINITE_BY_PROMPT and not re.search(r"\bfinite\b", t.prompt)]
    assert unpromised == []


# Tasks whose reference clamps or selects on a float input (clamp, minimum, maximum, hardtanh,
# relu, threshold, ...) that do not draw NaN, and why no kernel can drop a NaN there or why it is
# left open.
CLAMP_WITHOUT_NAN = {"elu": "both branches of the select are NaN at a NaN x: no select drops it",
                     "selu_bf16": "both branches of the select are NaN at a NaN x: no select drops it",
                     "leaky_relu": "both branches (x, slope * x) are NaN at a NaN x: no select drops it",
                     "hardswish": "x * relu6(x + 3) / 6 multiplies by x: NaN whatever the clamp does",
                     "hardswish_generic": "x * relu6(x + 3) / 6 multiplies by x: NaN whatever the clamp does",
                     "fp8_quantize_per_tensor": "the clamp saturates before an fp8 cast; a NaN's fp8 code is unstated",
                     "fp8_quantize_blockwise": "the block's amax is a scale; a NaN's quantized value is unstated",
                     "embedding_bag_mean_f16": "the clamp floors a bag's count (integers), not a float input",
                     "gemm_bias_relu_f16": "open: an extreme domain for bias would turn off the magnified x and w "
                                           "(kernelgen.task.magnitude), where an f16 accumulation shows"}


def test_a_float_clamp_or_select_draws_nan() -> None:
    """torch.clamp, minimum, maximum, hardtanh, relu, hardsigmoid and threshold propagate NaN,
    and a clamp written as where(x > lo, x, lo) drops it (clamp_tensor's did): a task whose
    reference takes one on float inputs draws NaN in some domain, and its prompt says NaN
    propagates, else such a kernel passes."""
    import re

    select = re.compile(r"\bclamp(_min|_max)?\(|\bclip\(|\bminimum\(|\bmaximum\(|\bfmax\(|\bfmin\(|hardtanh|"
                        r"\brelu6?\(|\.relu\(|hardsigmoid|hardswish|\bthreshold\(|leaky_relu|\belu\(|\bcelu\(|\bselu\(")
    taking = {t.id for t in TASKS if select.search(t.reference)
              and any(i.dtype in ("f16", "bf16", "f32", "f64") or i.dtype in {v.name for v in t.dtypes}
                      for i in t.signature.inputs if i.shape is not None)}
    assert {"clamp_tensor", "hardtanh", "relu", "bias_relu", "threshold", "clamp_optional", "maximum_f16"} <= taking
    drawing = {t.id for t in TASKS if any(str(v) == "nan" for d in _domains(t) for v in d.specials)}
    assert sorted(taking - drawing - set(CLAMP_WITHOUT_NAN)) == []
    assert set(CLAMP_WITHOUT_NAN) <= taking and not set(CLAMP_WITHOUT_NAN) & drawing
    unsaid = [t.id for t in TASKS if t.id in taking & drawing and not re.search(r"\bNaN\b", t.prompt)]
    assert unsaid == []


def test_a_norm_floored_by_eps_draws_zero_rows() -> None:
    """max(norm, eps) is the prompt's promise for an all-zero row (0, not 0 / 0): some draw has one."""
    import re

    floor = re.compile(r"max\([^()]*(\([^()]*\))?[^()]*,\s*(eps|[0-9.]+e-[0-9]+)\)")
    floored = [t for t in TASKS if floor.search(t.prompt)]
    assert {"normalize_rows", "cosine_similarity", "fp8_quantize_blockwise"} <= {t.id for t in floored}
    assert [t.id for t in floored if not any(d.zero_rows for d in _domains(t))] == []


# Tasks that compute a variance and do not yet draw a mean large against the spread: their
# goldens are unverified at such an offset (f16/bf16 inputs need a larger one), or (batchnorm
# inference) they take the variance as an input.
VARIANCE_WITHOUT_OFFSET = {"layer_norm_optional", "row_std_f16", "standardize_rows", "add_layernorm_bf16",
                           "batchnorm_inference", "layernorm_backward", "layernorm_backward_full"}


def test_a_variance_is_drawn_with_a_mean_large_against_the_spread() -> None:
    """var = E[x^2] - mean^2 cancels where the mean is large against the spread: a task whose
    reference computes a variance draws such values (uniform in [50, 54], say) in some domain, or
    CPU mode's offset draws move its data (kernelgen/task/offset.py; layernorm_backward's
    [1000, 1004] failed correct kernels at N = 2 and is gone)."""
    import re

    variance = re.compile(r"\b(var|std|var_mean|std_mean|layer_norm|group_norm|batch_norm|instance_norm)\b")
    offset = [t.id for t in TASKS if any(d.kind == "uniform" and isinstance(d.low, float) and isinstance(d.high, float)
                                         and (d.low + d.high) / 2 >= 10 * (d.high - d.low) for d in _domains(t))]
    computing = [t.id for t in TASKS if variance.search(t.reference + (t.eager or ""))]
    assert {"group_norm", "dropout_residual_layernorm", "layernorm_stats", "row_var"} <= set(computing) & set(offset)
    assert sorted(set(computing) - set(offset)) == sorted(VARIANCE_WITHOUT_OFFSET)
    from kernelgen.task.offset import offset_orders

    assert all(any(offset_orders(call) for call in (task.variant_tasks() if task.variants else [task]))
               for task in TASKS if task.id in VARIANCE_WITHOUT_OFFSET)
