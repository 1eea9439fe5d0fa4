"""Red-team round 5 candidates: wrong kernels (and controls) as minimal edits of goldens, for the
hard and expert tasks (attention variants, routing, normalisation statistics, paged decode) and
med tasks with few catalogue files: scalars past their checked range, ties that continuous draws
never produce, tolerances that hide small outputs, boundary cases of ragged lengths.

Run from the repository root: ``python tools/redteam_round5.py [NAME ...] [--out DIR]`` (default
``redteam_candidates/``), then ``python tools/redteam_verdicts.py DIR/*.json``."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from redteam_candidates import Round, find_let, golden, loops  # noqa: E402 - the round-2 script's helpers
from redteam_round4 import B, U, cast, stores  # noqa: E402

ROUND = Round()
kernel, write = ROUND.kernel, ROUND.write


def rename(node, old, new):
    """``node`` with every name ``old`` read in it replaced by ``new`` (lets' names untouched)."""
    if isinstance(node, str):
        return new if node == old else node
    if isinstance(node, list):
        return [rename(v, old, new) for v in node]
    if isinstance(node, dict):
        return {k: (v if k in ("name", "op", "var") else rename(v, old, new)) for k, v in node.items()}
    return node


def W(cond, x, y):
    return {"op": "where", "cond": cond, "x": x, "y": y}


def let(name, value):
    return {"op": "let", "name": name, "value": value}


def ex(x, axis):
    return {"op": "expand_dims", "x": x, "axis": axis}


def R(op, x, axis, keepdims=False):
    r = {"op": op, "x": x, "axis": axis}
    if keepdims:
        r["keepdims"] = True
    return r


# ============================================================================ batch 1

@kernel
def sliding_window_capped():
    g = golden("expert/sliding_window_attention_f16")
    g["body"] = [let("window_keys", B("minimum", "window", 512))] + rename(g["body"], "window", "window_keys")
    write("expert/sliding_window_attention_f16", "window_capped_at_512", "wrong_result",
          "attends to at most the 512 most recent keys, min(window, 512) (a fixed-size key range per query "
          "block, as a kernel with a bounded KV ring does): right for every window <= 512, wrong past it. Input: "
          "S = 2048, window = 1024 (the bench's own value): query 1500 must see keys 477..1500, the kernel sees "
          "989..1500. The scalar range draws window in [1, 300] only, below the bench value 1024; and the cap "
          "halves the work the bench times", g)


@kernel
def sliding_window_off_by_one():
    g = golden("expert/sliding_window_attention_f16")
    vis = find_let(g["body"], "visible")
    vis["value"]["lhs"]["rhs"]["op"] = "ge"
    write("expert/sliding_window_attention_f16", "window_one_key_too_many", "wrong_result",
          "keys i - window <= j <= i (window + 1 keys) instead of i - window < j <= i: one key too many per "
          "query wherever the window is shorter than the row. Input: S = 4, window = 1: query 1 sees keys 0 and 1 "
          "instead of 1 alone", g)


@kernel
def moe_top2_second_by_value():
    g = golden("expert/moe_top2_routing")
    body = g["launches"][0]["body"]
    i = next(k for k, s in enumerate(body) if s.get("name") == "top_values")
    first_value = R("max", "row_logits", 1, True)
    rest = W(B("eq", "row_logits", "first_value"), "-inf", "row_logits")
    new = [
        let("first_value", first_value),
        let("first_index", ex(R("argmax", "row_logits", 1), 1)),
        let("rest", rest),
        let("second_value", R("max", "rest", 1, True)),
        let("second_index", ex(R("argmax", "rest", 1), 1)),
    ]
    body[i:i + 2] = new
    slots_i = next(k for k, s in enumerate(body) if s.get("name") == "slots")
    body[slots_i + 1:slots_i + 1] = [
        let("top_values", W(B("eq", "slots", 0), "first_value", "second_value")),
        let("top_experts", W(B("eq", "slots", 0), "first_index", "second_index")),
    ]
    write("expert/moe_top2_routing", "second_expert_excludes_by_value", "wrong_result",
          "takes the second expert as the argmax of the logits with every logit EQUAL to the maximum masked "
          "out (by value, not by the first expert's index): with two tied top logits the second choice is the "
          "third-largest expert. Input: logits = [[1.0, 1.0, 0.0]]: torch.topk gives experts [0, 1] with weights "
          "[0.5, 0.5], the kernel [0, 2] with [0.73, 0.27]. Logits are drawn normal without zeros in every draw "
          "(ordinary and extreme), so no row ever has a tie", g)


@kernel
def moe_top2_sigmoid_weights_control():
    g = golden("expert/moe_top2_routing")
    body = g["launches"][0]["body"]
    gap = R("sum", W(B("eq", "slots", 0), "top_values", U("neg", "top_values")), 1, True)
    find_let(body, "relative")["value"] = gap
    find_let(body, "renormalised")["value"] = U("sigmoid", B("mul", "relative", W(B("eq", "slots", 0), 1.0, -1.0)))
    write("expert/moe_top2_routing", "sigmoid_of_logit_gap_control", "ok",
          "CONTROL (correct): the renormalised weights as sigmoid(+-(l1 - l2)) of the two top logits' gap: "
          "p1 / (p1 + p2) = 1 / (1 + exp(l2 - l1)), no exponentials of the row and no softmax at all", g)


@kernel
def geglu_tanh_gelu():
    g = golden("med/geglu_halves_bf16")
    gate = "gate"
    inner = B("mul", 0.7978845608028654, B("add", gate, B("mul", 0.044715, B("mul", gate, B("mul", gate, gate)))))
    find_let(g["body"], "gate_cdf")["value"] = B("mul", 0.5, B("add", 1.0, U("tanh", inner)))
    write("med/geglu_halves_bf16", "tanh_approximate_gelu", "wrong_result",
          "gelu by the tanh approximation (0.5 b (1 + tanh(sqrt(2/pi)(b + 0.044715 b^3)))) where the prompt asks "
          "for the exact erf GELU (F.gelu's default). The gate's relative error is 10% at b = -3 and 45% at "
          "b = -4: input x[0, 0, 0] = 1.0 (a), x[0, 1, 0] = -4.0 (b): F.gelu gives -1.27e-4, the kernel -7.0e-5, "
          "which bf16 holds apart (its step there is ~5e-7). On standard-scale draws the absolute error stays "
          "below ~5e-4 * |a|, under the bf16 default tolerance (rtol = atol = 2e-2): it was caught only where an "
          "extreme draw happened to hold a large a beside a gate in [-4, -3], and passed once the golden's tiles "
          "(which the draws' sizes follow) changed. Caught since the task's tolerance is two bf16 steps (rtol "
          "8e-3, atol 1e-4), which most gates in [-4, -2] exceed", g)


@kernel
def alibi_key_only_bias_control():
    g = golden("expert/alibi_attention_f16")
    body = g["body"]
    loop = loops(body)[0]
    find_let(loop["body"], "raw_scores")["value"] = B("add", B("mul", {"op": "dot", "lhs": "q_tile", "rhs": {"op": "trans", "x": "k_tile"}}, 0.125),
                                                      B("mul", "slope", cast("key_row", "f32")))
    write("expert/alibi_attention_f16", "key_only_bias_control", "ok",
          "CONTROL (correct): biases each score by +slope * j instead of -slope * (i - j): the two differ by "
          "-slope * i, a constant along each query's row, which the softmax's maximum subtraction removes", g)


@kernel
def paged_attention_last_page_mod16():
    g = golden("expert/paged_attention_decode_f16")
    loop = loops(g["body"])[0]
    page = B("idiv", "tokens", 16)
    last_page = B("sub", {"op": "cdiv", "lhs": "length", "rhs": 16}, 1)
    find_let(loop["body"], "valid")["value"] = B("or", B("lt", page, last_page),
                                                 B("and", B("eq", page, last_page), B("lt", B("rem", "tokens", 16), B("rem", "length", 16))))
    write("expert/paged_attention_decode_f16", "last_page_fill_mod_16", "wrong_result",
          "the last page's valid slots are seq_len % 16 (the classic off-by-page: it should be "
          "(seq_len - 1) % 16 + 1): a sequence whose length is a multiple of 16 loses its whole last page "
          "(length 16: no token at all, 0 / 0 = NaN). Input: seq_lens = [32]: tokens 16..31 are dropped", g)


@kernel
def masked_softmax_max_over_all():
    g = golden("med/masked_softmax")
    loop = loops(g["body"])[0]
    x_chunk = {"op": "load", "ptr": B("add", "x_row", "cols"), "mask": "in_row", "other": "-inf"}
    find_let(loop["body"], "new_max")["value"] = B("maximum", "row_max", R("max", x_chunk, 0))
    write("med/masked_softmax", "max_over_masked_elements_too", "wrong_result",
          "shifts the exponentials by the maximum of the whole row, masked elements included, not of the kept "
          "ones: the softmax is the same while the kept values lie within ~87 of the row's maximum, but a masked "
          "element far above them underflows every kept exp to 0 and the row is 0 / 0 = NaN. Input: x = "
          "[[200.0, -10.0]], mask = [[False, True]]: torch gives [0, 1], the kernel [0, NaN]", g)


# ============================================================================ batch 2

@kernel
def row_l2_norm_scaled_no_zero_guard():
    g = golden("med/row_l2_norm")
    body = g["body"]
    loop = loops(body)[0]
    amax_loop = {"op": "for", "var": "chunk_start", "stop": "N", "step": "BLOCK",
                 "carry": [{"name": "lane_amax", "init": {"op": "full", "shape": ["BLOCK"], "value": 0.0, "dtype": "f32"},
                            "next": "new_lane_amax"}],
                 "body": [let("cols", B("add", "chunk_start", "lanes")),
                          let("chunk", {"op": "load", "ptr": B("add", "x_row", "cols"), "mask": B("lt", "cols", "N")}),
                          let("new_lane_amax", B("maximum", "lane_amax", U("abs", "chunk")))]}
    i = body.index(loop)
    body[i:i] = [amax_loop, let("amax", R("max", "lane_amax", 0))]
    find_let(loop["body"], "chunk")["value"] = B("div", find_let(loop["body"], "chunk")["value"], "amax")
    st = stores(body)[0]
    st["value"] = B("mul", "amax", st["value"])
    write("med/row_l2_norm", "scaled_by_row_amax_zero_row_nan", "wrong_result",
          "an overflow-safe norm (LAPACK nrm2 style): amax * sqrt(sum((x / amax)^2)), with no guard for amax = 0: "
          "a row of zeros gives 0 * sqrt(0 / 0) = NaN where vector_norm gives 0. Input: x = zeros([2, 5]). "
          "Right for every row with a nonzero element", g)


@kernel
def minmax_scale_rows_constant_row_zero():
    g = golden("med/minmax_scale_rows")
    st = stores(g["body"])[0]
    st["value"] = W(B("eq", "row_range", 0.0), 0.0, st["value"])
    write("med/minmax_scale_rows", "constant_row_gives_zero", "wrong_result",
          "guards the division: a row whose elements are all equal gives 0 instead of the 0 / 0 = NaN the prompt "
          "(and the PyTorch expression) asks for. Input: x of shape [3, 1] (rows of one element), or "
          "x = [[2.0, 2.0]]", g)


@kernel
def logsumexp_rows_running_max_from_zero():
    g = golden("med/logsumexp_rows")
    loops(g["body"])[0]["carry"][0]["init"] = 0.0
    write("med/logsumexp_rows", "running_max_from_zero", "wrong_result",
          "starts the running maximum at 0.0 instead of -inf, so the shift is max(0, row max): right while some "
          "element of the row is above about -87, but a row entirely below ~-104 underflows every exp to 0 and "
          "gives log(0) = -inf. Input: x = [[-200.0, -150.0]]: torch gives -150.0, the kernel -inf", g)


@kernel
def log_softmax_rows_exp2_ftz_control():
    g = golden("med/log_softmax_rows")
    loop = loops(g["body"])[0]
    L2E = 1.4426950408889634
    find_let(loop["body"], "rescaled_sum")["value"]["rhs"] = {"op": "exp2_ftz", "x": B("mul", B("sub", "row_max", "new_max"), L2E)}
    s = find_let(loop["body"], "new_sum")
    s["value"]["rhs"]["x"] = {"op": "exp2_ftz", "x": B("mul", B("sub", "chunk", "new_max"), L2E)}
    write("med/log_softmax_rows", "exp2_ftz_sum_control", "ok",
          "CONTROL (correct): the row's sum of exponentials as exp2_ftz((x - max) * log2 e): the exponent's "
          "rounding moves each term by ~1e-7 relative and the flushed subnormal terms (x - max < -87) are below "
          "the sum's rounding, whose largest term is 1", g)


@kernel
def col_mean_var_pivot_one_pass_control():
    g = golden("med/col_mean_var")
    body = g["body"]
    second = loops(body)[1]
    pivot = let("pivot", {"op": "load", "ptr": B("add", "x", "cols"), "mask": "col_in_bounds"})
    body.insert(body.index(second), pivot)
    find_let(second["body"], "centered")["value"]["x"]["rhs"] = ex("pivot", 0)
    shift = B("sub", "col_mean", "pivot")
    st = stores(body)[1]
    st["value"] = {"op": "maximum", "lhs": B("sub", st["value"], B("mul", shift, shift)), "rhs": 0.0}
    write("med/col_mean_var", "first_row_pivot_control", "ok",
          "CONTROL (correct for the promised data): the variance from squares shifted by each column's first "
          "element, E[(x - x0)^2] - (mean - x0)^2 (the shifted-data algorithm): the pivot lies within the "
          "column's spread, so nothing cancels as in E[x^2] - mean^2 with the mean at 100", g)


# ============================================================================ batch 3

@kernel
def flash_decoding_no_running_max():
    g = golden("expert/flash_decoding_f16")
    first, tail = loops(g["launches"][0]["body"])
    first["carry"][0]["init"] = {"op": "full", "shape": ["BLOCK_N"], "value": 0.0, "dtype": "f32"}
    find_let(first["body"], "m_new")["value"] = "m_i"
    find_let(tail["body"], "m_new")["value"] = "m_t"
    write("expert/flash_decoding_f16", "no_running_max", "wrong_result",
          "no maximum at all: every partial keeps its 'maximum' at 0, so p = exp(score) unshifted, summed and "
          "multiplied into v in f32 (the combine then rescales by exp(0 - 0) = 1). Exact while every score "
          "(q.k * 0.125) stays below ~88; past it exp overflows f32 and the head's output is inf/NaN. The prompt "
          "asks for the partial maxima and F.scaled_dot_product_attention subtracts the row maximum. Input: "
          "B = H = 1, S = 2, q = 12 * ones(64), k[0, 0, 0] = ones(64), k[0, 0, 1] = zeros(64): the first score is "
          "12 * 64 * 0.125 = 96, exp(96) overflows and the output is NaN where torch gives ~v[0, 0, 0]. The "
          "extreme domain scales q by "
          "6 only: scores ~N(0, 36), whose maximum over 32768 keys is ~27, far below 88, so no draw overflows", g)


@kernel
def layernorm_backward_full_one_pass_variance():
    g = golden("expert/layernorm_backward_full")
    body = g["launches"][0]["body"]
    second = loops(body)[1]
    raw = W("in_row", {"op": "load", "ptr": B("add", "x_row", "cols"), "mask": "in_row"}, 0.0)
    find_let(second["body"], "new_partial_squares")["value"] = {"op": "fma", "x": raw, "y": raw, "z": "partial_squares"}
    rstd = find_let(body, "rstd")
    rstd["value"]["x"]["lhs"] = B("sub", rstd["value"]["x"]["lhs"], B("mul", "mean", "mean"))
    write("expert/layernorm_backward_full", "one_pass_variance", "wrong_result",
          "recomputes the row variance as E[x^2] - mean^2 (one pass over raw squares) instead of from centred "
          "values: with a mean large against the spread the subtraction cancels (x = 10000 + randn: E[x^2] ~ 1e8 "
          "whose f32 rounding, ulp 8 and accumulated over the row, swamps the variance ~1, so "
          "rstd and every gradient are far off, or NaN where the difference goes negative). Input: "
          "x = 10000 + randn(4, 512), eps = 1e-5. "
          "x is drawn standard normal (mean ~0) and the extreme draws scale it by a power of two, which keeps "
          "the mean/spread ratio: the task has no offset domain (layernorm_stats, group_norm and "
          "dropout_residual_layernorm do)", g)


@kernel
def layernorm_backward_one_pass_variance():
    g = golden("hard/layernorm_backward")
    body = g["launches"][0]["body"] if "launches" in g else g["body"]
    second = loops(body)[1]
    raw = W("in_row", "chunk", 0.0)
    find_let(second["body"], "new_partial_squares")["value"] = {"op": "fma", "x": raw, "y": raw, "z": "partial_squares"}
    rstd = find_let(body, "rstd")
    rstd["value"]["x"]["lhs"] = B("sub", rstd["value"]["x"]["lhs"], B("mul", "mean", "mean"))
    write("hard/layernorm_backward", "one_pass_variance", "wrong_result",
          "recomputes the row variance as E[x^2] - mean^2 from raw squares instead of centred values: exact "
          "for x of mean ~0, but with a common offset the subtraction cancels (x = 10000 + randn: E[x^2] ~ 1e8, "
          "whose accumulated f32 rounding swamps the variance ~1): rstd, and grad_x with it, are "
          "far off or NaN. Input: x = 10000 + randn(4, 512), grad_y = randn, weight = randn, eps = 1e-5. x is "
          "drawn standard normal and the extreme draws scale it by a power of two (the mean/spread ratio "
          "stays); the task has no offset domain, unlike layernorm_stats", g)

# (new kernels above)
if __name__ == "__main__":
    ROUND.main(sys.argv[1:])
