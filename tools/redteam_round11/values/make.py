"""Round 11 VALUES candidates: python tools/redteam_round11/values/make.py [NAME ...] (writes into tools/redteam_round11/values/)."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
from redteam_candidates import Round, find_let, find_all_lets, golden  # noqa: E402
from redteam_round4 import B, U, cast  # noqa: E402

ROUND = Round()
ROUND.out = Path(__file__).resolve().parent
kernel, write = ROUND.kernel, ROUND.write


@kernel
def absmax_quantize_times_127_over_amax():
    g = golden("med/absmax_quantize")
    then = g["body"][5]["then"]
    find_let(then, "scaled")["value"] = B("div", B("mul", "chunk", 127.0), U("max", "x") if False else
                                          B("mul", "row_scale1", 127.0))
    # amax again as max(|chunk|) (the scale is only stored)
    find_let(then, "scaled")["value"] = B("div", B("mul", "chunk", 127.0),
                                          {"op": "max", "x": {"op": "abs", "x": "chunk"}, "axis": 0})
    els = g["body"][5]["else"]
    find_let(els, "scaled")["value"] = B("div", B("mul", find_let(els, "scaled")["value"]["lhs"], 127.0),
                                         {"op": "max", "x": "lane_absmax", "axis": 0})
    write("med/absmax_quantize", "times_127_over_amax", "wrong_result",
          "quantises as round(x * 127 / amax) (one division, no rounded scale) instead of the prompt's "
          "round(x / scale) with scale = amax / 127 rounded to f32: a different rounding, which only matters "
          "where x / scale lies at a tie k + 0.5: for integer x that happens at x = +-amax / 2 for 16 values of amax "
          "(18, 22, 26, 36, ...), and x * 127 overflows f32 for |x| > 2.7e36 (inf / inf = NaN). Input: x = [[18, 9]]: "
          "torch q = [127, 63], the kernel [127, 64].", g)


@kernel
def squared_difference_expanded():
    g = golden("easy/squared_difference")
    diff = find_let(g["body"], "diff")
    xv, yv = diff["value"]["lhs"], diff["value"]["rhs"]
    g["body"][2] = {"op": "let", "name": "xv", "value": xv}
    g["body"].insert(3, {"op": "let", "name": "yv", "value": yv})
    g["body"][4]["value"] = B("add", B("sub", B("mul", "xv", "xv"), B("mul", B("mul", "xv", 2.0), "yv")),
                              B("mul", "yv", "yv"))
    write("easy/squared_difference", "expanded", "wrong_result",
          "(x - y)^2 expanded as x*x - 2*x*y + y*y: each square rounds to ~2**-24 of x^2, so where x and y are "
          "close and large the result is dominated by rounding (catastrophic cancellation). Input: x = [3000.1, 1e20], "
          "y = [3000.2, 1e20]: torch [0.00997, 0], the kernel [1.0, nan] (x*x overflows past 1.8e19 where x - y is 0). "
          "The draws are independent normals (magnified by 4096 at most), where x*x and y*y never cancel.", g)


@kernel
def frac_through_i32():
    g = golden("easy/frac")
    find_let(g["body"], "truncated")["value"] = cast(cast("v", "i32"), "f32")
    write("easy/frac", "through_i32", "wrong_result",
          "trunc(x) as float(int32(x)), the classic cast shortcut: right while |x| < 2**31, but the prompt's x is any "
          "f32 (frac of every |x| >= 2**23 is 0). Input: x = [3e9, -1e10, inf]: "
          "torch [0, 0, nan], the kernel [8.525e8, -7.853e9, inf] (the interpreter wraps the i32 cast; a GPU's "
          "saturating cvt gives x - 2147483647, as wrong). The domain is normal of scale 10 (magnified to ~1.6e5 at most).", g)



@kernel
def moe_top2_routing_weights_without_max():
    g = golden("expert/moe_top2_routing")
    find_let(g["launches"][0]["body"], "relative")["value"] = U("exp", "top_values")
    write("expert/moe_top2_routing", "weights_without_max", "wrong_result",
          "the renormalised weights as exp(l1) / (exp(l1) + exp(l2)) of the two top logits, without subtracting "
          "the larger (the golden's exp(top - max)): right while the top logits lie in about [-87, 88], but the "
          "prompt allows any finite logits: past 88.7 exp overflows (inf / inf = NaN), below -103 both underflow "
          "(0 / 0 = NaN). Input: T = 1, E = 3, logits = [[100, 99, 0]]: torch weights [0.7311, 0.2689], the kernel "
          "[nan, nan]; logits = [[-200, -201, -300]] likewise.", g)



@kernel
def row_std_f16_one_pass_moments():
    g = golden("med/row_std_f16")
    body = g["body"][:5]
    zeros = {"op": "full", "shape": ["ROWS", "BLOCK"], "value": 0.0, "dtype": "f32"}
    loop = {"op": "for", "var": "chunk_start", "stop": "N", "step": "BLOCK",
            "carry": [{"name": "s1", "init": zeros, "next": "new_s1"}, {"name": "s2", "init": zeros, "next": "new_s2"}],
            "body": [
                {"op": "let", "name": "cols", "value": {"op": "expand_dims", "x": B("add", "chunk_start", "lanes"), "axis": 0}},
                {"op": "let", "name": "in_tile", "value": B("and", "row_mask", B("lt", "cols", "N"))},
                {"op": "let", "name": "chunk", "value": {"op": "where", "cond": "in_tile", "x": cast({"op": "load", "ptr": B(
                    "add", "x", B("add", B("mul", "row_column", "N"), "cols")), "mask": "in_tile"}, "f32"), "y": 0.0}},
                {"op": "let", "name": "new_s1", "value": B("add", "s1", "chunk")},
                {"op": "let", "name": "new_s2", "value": {"op": "fma", "x": "chunk", "y": "chunk", "z": "s2"}}]}
    count = cast("N", "f32")
    body += [loop,
             {"op": "let", "name": "mean", "value": B("div", {"op": "sum", "x": "s1", "axis": 1}, count)},
             {"op": "let", "name": "var", "value": B("maximum", B("sub", B("div", {"op": "sum", "x": "s2", "axis": 1}, count),
                                                                B("mul", "mean", "mean")), 0.0)},
             {"op": "store", "ptr": B("add", "out", "rows"), "value": cast(U("sqrt", "var"), "f16"), "mask": "row_in"}]
    g["body"] = body
    write("med/row_std_f16", "one_pass_moments", "wrong_result",
          "one pass of sum and sum of squares per row, var = E[x^2] - mean^2 (clamped at 0), instead of the "
          "prompt's mean of squared deviations: the same for rows centred near 0 (the draws: normal of scale 1, "
          "extreme 300), but the subtraction cancels for a row whose mean is large against its spread, which the "
          "prompt allows (any f16 row). Input: x = [[1000, 1000.5, 1001, 1000.5] * 64] (1 x 256): torch std 0.3536, "
          "the kernel far off (f32 E[x^2] ~ 1e6 has ulp 0.0625).", g)


@kernel
def layer_norm_optional_one_pass_variance():
    g = golden("med/layer_norm_optional")
    then = g["body"][5]["then"]
    find_let(then, "rstd1")["value"] = U("rsqrt", B("add", B("sub", B("div", {"op": "sum", "x": B("mul", "xv", "xv"), "axis": 0},
                                                                     "count"), B("mul", "mean1", "mean1")), "eps"))
    write("med/layer_norm_optional", "one_pass_variance", "wrong_result",
          "rows that fit one block (N <= 4096) take var = E[x^2] - mean^2 in f32 (one pass) instead of the prompt's "
          "mean of (x - mean)^2: the draws are centred (normal of scale 0.01, magnified to ~40 at most, mean ~0), "
          "where the two agree, but a row whose mean is large against its spread (any x the prompt allows: "
          "activations with an offset) cancels. Input: f32 call, x = 100 + 0.01 * randn(2, 512), eps = 1e-5.", g)



@kernel
def mse_rows_three_moment_sums():
    g = golden("med/mse_rows")
    loop = g["body"][5]
    zeros = {"op": "full", "shape": ["BLOCK"], "value": 0.0, "dtype": "f32"}
    err = find_let(loop["body"], "error")["value"]
    loop["carry"] = [{"name": "sxx", "init": zeros, "next": "new_sxx"}, {"name": "sxy", "init": zeros, "next": "new_sxy"},
                     {"name": "syy", "init": zeros, "next": "new_syy"}]
    loop["body"] = loop["body"][:2] + [
        {"op": "let", "name": "xv", "value": err["lhs"]}, {"op": "let", "name": "yv", "value": err["rhs"]},
        {"op": "let", "name": "new_sxx", "value": {"op": "fma", "x": "xv", "y": "xv", "z": "sxx"}},
        {"op": "let", "name": "new_sxy", "value": {"op": "fma", "x": "xv", "y": "yv", "z": "sxy"}},
        {"op": "let", "name": "new_syy", "value": {"op": "fma", "x": "yv", "y": "yv", "z": "syy"}}]
    total = B("add", B("sub", {"op": "sum", "x": "sxx", "axis": 0}, B("mul", 2.0, {"op": "sum", "x": "sxy", "axis": 0})),
              {"op": "sum", "x": "syy", "axis": 0})
    g["body"][6]["value"] = B("div", total, cast("N", "f32"))
    write("med/mse_rows", "three_moment_sums", "wrong_result",
          "accumulates sum x^2, sum x*y and sum y^2 (three fmas per element, no subtraction per element) and returns "
          "(Sxx - 2 Sxy + Syy) / N: the same for independent x and y (the draws), but for a prediction close to "
          "its target (the common case of an MSE) the three sums cancel. Input: x = 1000 + randn(2, 1000) "
          "(torch.Generator seed 0), y = x + 0.01: torch [1.0020e-4, 1.0020e-4], the kernel [0.064, -0.192] (negative); "
          "x = 10 * randn(2, 1000), y = x + 0.1: torch 0.0100000, the kernel 0.0100234 (beyond rtol 1e-4 + atol 1e-5).", g)



@kernel
def row_argmax_packed_key_negative_zero_below_zero():
    import copy, json
    k = json.load(open(Path(__file__).resolve().parents[3] / "tests/redteam/row_argmax_packed_key_max_into_uninitialised_output.json"))["kernel"]
    loop = copy.deepcopy(k["body"][2])
    lowest = {"op": "full", "shape": [], "value": -9223372036854775807, "dtype": "i64"}
    loop["carry"] = [{"name": "best", "init": lowest, "next": "new_best"}]
    loop["body"] = loop["body"][:7] + [{"op": "let", "name": "new_best", "value": B("maximum", "best", "chunk_key")}]
    k["body"] = k["body"][:2] + [loop, {"op": "store", "ptr": B("add", "out", "row"),
                                        "value": B("sub", 2147483647, B("and", "best", 4294967295))}]
    write("med/row_argmax", "packed_key_negative_zero_below_zero", "wrong_result",
          "one max reduction of a packed i64 key per row: the value's order-preserving bits (bits ^ ((bits >> 31) & "
          "0x7fffffff)) in the high word, 2**31 - 1 - column in the low word, so NaN (positive bits) is the largest "
          "and ties go to the lowest column. But the bit order puts -0.0 below +0.0, which torch.argmax counts equal: "
          "a row whose maximum is zero, held as -0.0 before +0.0, gives the +0.0's column. Input: x = [[-0.0, 0.0, -1.0]]: "
          "torch.argmax 0, the kernel 1. The task's values are integers in [-20, 20] (+0.0 only), so -0.0 is never drawn.", k)


@kernel
def row_topk8_packed_keys_negative_zero():
    import json
    k = json.load(open(Path(__file__).resolve().parents[3] / "tests/redteam/row_topk8_ticket_slots_packed_keys_control.json"))["kernel"]
    write("expert/row_topk8", "packed_keys_negative_zero", "wrong_result",
          "the catalogue's CONTROL row_topk8_ticket_slots_packed_keys_control, unchanged: its order-preserving value bits "
          "rank -0.0 below +0.0, which torch's stable descending sort counts equal (ties to the lower column). The prompt "
          "says only 'values are finite' (row_sort's says 'no -0.0'), and no draw holds -0.0 (ties domain adds + 0.0, "
          "the extreme integers domain gives +0.0). Input: x = [[-0.0, 0.0, -1, -1, -1, -1, -1, -1, -2, -3]]: torch "
          "indices [0, 1, 2, ..., 7], the kernel [1, 0, 2, ..., 7]. The task's golden gives [1, 0, ...] too.", k)



@kernel
def tanh_f16_one_minus_two_over_exp():
    g = golden("easy/tanh_f16")
    a = U("abs", "v")
    t = B("sub", 1.0, B("div", 2.0, B("add", U("exp", B("mul", a, 2.0)), 1.0)))
    signed = {"op": "where", "cond": B("lt", "v", 0.0), "x": U("neg", t), "y": t}
    g["body"][3]["value"] = cast(signed, "f16")
    write("easy/tanh_f16", "one_minus_two_over_exp", "wrong_result",
          "tanh(|x|) as 1 - 2 / (exp(2|x|) + 1), sign restored: no overflow (exp to inf gives 1), but for small |x| "
          "the subtraction from 1 leaves f32's absolute error (~6e-8) on a result of size |x|: many f16 steps off for "
          "|x| below ~1e-4 (f16 holds such values exactly, subnormals down to 6e-8). Input: x = (1e-5 * randn(1000, "
          "generator seed 0)).half(): 482 of 1000 elements one f16 step off (the harness's own steps rule allows 32), e.g. "
          "x = 3e-7: torch 2.98e-07, the kernel 2.38e-07; x = 1e-3 * randn(1000): 89 of 1000 one step off.", g)



@kernel
def fp8_quantize_per_tensor_ties_away_from_zero():
    g = golden("easy/fp8_quantize_per_tensor")
    bits = {"op": "bitcast", "x": "scaled", "dtype": "i32"}
    rounded = {"op": "bitcast", "x": B("and", B("add", bits, 0x00080000), -1048576), "dtype": "f32"}
    g["body"].insert(5, {"op": "let", "name": "half_up", "value": {
        "op": "where", "cond": B("ge", U("abs", "scaled"), 0.015625), "x": rounded, "y": "scaled"}})
    g["body"][6]["value"]["x"] = "half_up"
    write("easy/fp8_quantize_per_tensor", "ties_away_from_zero", "wrong_result",
          "rounds to e4m3's 3 mantissa bits by adding half a step to the f32 bits and masking (0x00080000, then "
          "& 0xFFF00000), i.e. half away from zero, before the (then exact) cast; e4m3 subnormals are left to the cast. "
          "Right except on exact ties, where the prompt (and torch) round to nearest even: a product exactly halfway "
          "between two e4m3 values. Input: x = [[1.0625, 2.125, -1.1875, 3.0]] (f32), scale = [1.0]: torch "
          "[1.0, 2.0, -1.25, 3.0], the kernel [1.125, 2.25, -1.25, 3.0]. Random f32 products hit a tie with "
          "probability ~2**-20, and the scale is drawn uniform in [0.25, 4]; with a power-of-two scale (common in fp8 "
          "recipes) bf16 inputs tie often: bf16 call, x = (4 * randn(16, 64, generator seed 0)).bfloat16(), scale = [2.0]: "
          "35 of 1024 elements differ (e.g. [1, 46]: torch 6, the kernel 6.5).", g)



@kernel
def batchnorm_backward_uncentred_weight_sum():
    g = golden("expert/batchnorm_backward")
    body = g["launches"][0]["body"]
    xhat = find_let(body, "xhat")
    xhat["value"] = xhat["value"]["lhs"]["lhs"]  # the raw x load
    find_let(body, "new_acc_weight")["value"]["y"] = "xhat"
    mean = {"op": "load", "ptr": B("add", "mean", "cols"), "mask": "col_in_bounds"}
    invstd = {"op": "load", "ptr": B("add", "invstd", "cols"), "mask": "col_in_bounds"}
    body[-2]["val"] = B("mul", B("sub", {"op": "sum", "x": "acc_weight", "axis": 0},
                                 B("mul", mean, {"op": "sum", "x": "acc_bias", "axis": 0})), invstd)
    write("expert/batchnorm_backward", "uncentred_weight_sum", "wrong_result",
          "grad_weight from uncentred sums, invstd * (sum dy * x - mean * sum dy) per split (one fma per element, "
          "no subtraction of the mean per element), algebraically the prompt's sum of dy * xhat: the draws' x and mean "
          "are independent standard normals (|x - mean| ~ |x|), where both agree, but for activations whose mean is "
          "large against their spread (what batch norm normalises) the two sums cancel, and grad_x inherits the error. Input: R = 2048, H = 4, g = torch.Generator seed 0, "
          "grad_y = randn(2048, 4), x = 1000 + randn(2048, 4), mean = 1000, invstd = 1, weight = 1: torch grad_weight[1] "
          "0.587559, the kernel 0.592239 (beyond rtol 1e-4 + atol 1e-3).", g)



@kernel
def minmax_scale_rows_fused_affine():
    g = golden("med/minmax_scale_rows")
    g["body"].insert(7, {"op": "let", "name": "inv_range", "value": B("div", 1.0, "row_range")})
    g["body"].insert(8, {"op": "let", "name": "offset", "value": U("neg", B("mul", "row_min", "inv_range"))})
    g["body"][9]["body"][3]["value"] = {"op": "fma", "x": "chunk", "y": "inv_range", "z": "offset"}
    write("med/minmax_scale_rows", "fused_affine", "wrong_result",
          "out = fma(x, 1 / range, -min / range), one fused multiply-add per element instead of (x - min) / range: "
          "the reciprocal's rounding alone stays within the tolerance, but for a row whose values lie far from 0 "
          "against their range, x / range and min / range are large and cancel, leaving their roundings (~2**-24 of "
          "min / range) on a result in [0, 1]. The draws are normal rows (|min| ~ range), where it stays inside "
          "the tolerance. An all-equal row still gives NaN (1 / 0 = inf, inf * 0). Input: x = 10000 + 4 * rand(2, 8) "
          "(torch.Generator seed 0): 13 of 16 elements beyond rtol 1e-4 + atol 1e-5, outputs -6.57e-05 and 1.000146 "
          "outside [0, 1] where torch gives 0 and 1, max abs error 1.46e-4.", g)



@kernel
def lerp_branch_on_signed_weight():
    g = golden("easy/lerp")
    find_let(g["body"], "value")["value"]["cond"] = B("lt", "weight", 0.5)
    write("easy/lerp", "branch_on_signed_weight", "wrong_result",
          "chooses torch's formula by weight < 0.5 instead of |weight| < 0.5: the same for every weight above -0.5 "
          "(the drawn range is [-0.5, 1.5]; -0.5 itself has probability 0), but a weight below -0.5 (any scalar "
          "weight is allowed; extrapolation) is computed from start where torch computes from end, and where the "
          "result cancels the two formulas' roundings differ far beyond atol.", g)



@kernel
def cosine_similarity_one_rsqrt_of_squared_norms():
    g = golden("med/cosine_similarity")
    sq = B("mul", {"op": "sum", "x": "partial_x_squares", "axis": 0}, {"op": "sum", "x": "partial_y_squares", "axis": 0})
    g["body"] = g["body"][:6] + [{"op": "store", "ptr": B("add", "out", "row"), "value": B(
        "mul", {"op": "sum", "x": "partial_dots", "axis": 0}, U("rsqrt", B("maximum", sq, 1e-16)))}]
    write("med/cosine_similarity", "one_rsqrt_of_squared_norms", "wrong_result",
          "dot * rsqrt(max(||x||^2 * ||y||^2, eps^2)), one rsqrt of the product of the squared norms (older "
          "PyTorch's formula) instead of the prompt's dot / (max(||x||, eps) * max(||y||, eps)): the product of "
          "squared norms overflows f32 once ||x|| * ||y|| passes ~1.8e19 and underflows the eps^2 floor once it "
          "falls below 1e-8, though each norm is far from eps and F.cosine_similarity is finite and exact there. The "
          "draws hold normal rows (norms ~ sqrt(N), magnified to 4096 sqrt(N)) and zero rows, where both agree. "
          "Input: x = [[1e10, 2e10, 3e10]], y = [[1e10, -1e10, 2e10]]: torch 0.5455, the kernel 0; "
          "x = [[1e-5, 2e-5]], y = [[1e-5, -3e-5]]: torch -0.7071, the kernel -5e-2 (floor hit).", g)



def _replace_op_in(node, op, new_op, marker):
    """Every {op: op, lhs: {op: marker...}} node's op changed to new_op."""
    if isinstance(node, dict):
        if node.get("op") == op and isinstance(node.get("lhs"), dict) and node["lhs"].get("op") == marker:
            node["op"] = new_op
        for v in node.values():
            _replace_op_in(v, op, new_op, marker)
    elif isinstance(node, list):
        for v in node:
            _replace_op_in(v, op, new_op, marker)


@kernel
def dropout_residual_layernorm_keep_at_p():
    g = golden("expert/dropout_residual_layernorm")
    _replace_op_in(g["body"], "gt", "ge", "rand")
    write("expert/dropout_residual_layernorm", "keep_at_p", "wrong_result",
          "keeps an element where u >= p instead of the prompt's u > p (keep = u > p): the same mask except where a "
          "random number equals p exactly. u is a multiple of 2**-24 and p any f32 in the allowed range, so a call "
          "whose p is one of the u values (p = 0.25, a round dropout rate, is one: u = 0.25 for about one offset in "
          "2**24) keeps an element torch's mask drops. The drawn p is uniform in [0.05, 0.5], and an element with "
          "u == p is never drawn. Input: M = 2, N = 8, seed = 1234, p = 0.2544158697128296 (u at offset 0), x, residual "
          "= randn (generator seed 0), weight 1, bias 0, eps 1e-5: h[0, 0] torch -1.35265 (dropped), the kernel -2.86266, "
          "and 8 of 16 elements of y differ (max 0.895). With seed 7, u(offset 8339963) is exactly 0.25.", g)



@kernel
def add_layernorm_bf16_one_pass_variance():
    g = golden("hard/add_layernorm_bf16")
    body = g["body"]
    first = body[7]
    first["carry"].append({"name": "partial_squares", "init": {"op": "full", "shape": ["BLOCK"], "value": 0.0, "dtype": "f32"},
                           "next": "new_partial_squares"})
    first["body"].append({"op": "let", "name": "new_partial_squares",
                          "value": {"op": "fma", "x": "h_chunk", "y": "h_chunk", "z": "partial_squares"}})
    mean_sq = B("div", {"op": "sum", "x": "partial_squares", "axis": 0}, "row_length")
    var = B("maximum", B("sub", mean_sq, B("mul", "row_mean", "row_mean")), 0.0)
    del body[9]  # the second (centred) pass
    find_let(body, "inv_std")["value"] = U("rsqrt", B("add", var, "eps"))
    write("hard/add_layernorm_bf16", "one_pass_variance", "wrong_result",
          "the sum of h and of h^2 in the same pass that stores h, var = E[h^2] - mean^2 (clamped at 0), instead of the "
          "prompt's mean of (h - mean)^2: the draws' x and residual are centred normals (magnified to 4096 at most), "
          "where the two agree within bf16 steps, but a residual stream whose rows have a large mean against their "
          "spread (any bf16 values are allowed) cancels in f32. Input: M = 2, N = 512, x = 1000 (every element), "
          "residual = randn(2, 512, generator seed 0).bfloat16(), weight 1, bias 0, eps 1e-5: 1023 of 1024 elements of y "
          "beyond one bf16 step (e.g. y[0, 0] torch -1.1719, the kernel -1.1875).", g)



def _carries(node, found):
    if isinstance(node, dict):
        for c in node.get("carry", []) if isinstance(node.get("carry"), list) else []:
            found.append(c)
        for v in node.values():
            _carries(v, found)
    elif isinstance(node, list):
        for v in node:
            _carries(v, found)
    return found


@kernel
def attention_f16_running_max_from_zero():
    g = golden("hard/attention_f16")
    hits = [c for c in _carries(g, []) if c["name"] == "m_i"]
    assert len(hits) == 1, hits
    hits[0]["init"]["value"] = 0.0
    write("hard/attention_f16", "running_max_from_zero", "wrong_result",
          "the online softmax's running maximum starts at 0.0 instead of -inf, so every shift is max(0, row max): "
          "right for any query with some score above about -88 (every drawn query: its scores are q.k / 8 of random "
          "vectors, both signs), but a query whose scores are all below ~-104 underflows every exp to 0 and gives "
          "0 / 0 = NaN where softmax is shift-invariant. Input: S = 4, q = 10 (every element), k = -10 (every "
          "element), v = randn: every score is -800, torch gives the mean of v's rows, the kernel NaN.", g)



def _replace_cast_of(node, name, dtype, new_x):
    if isinstance(node, dict):
        if node.get("op") == "cast" and node.get("x") == name and node.get("dtype") == dtype:
            node["x"] = new_x
            return 1
        return sum(_replace_cast_of(v, name, dtype, new_x) for v in node.values())
    if isinstance(node, list):
        return sum(_replace_cast_of(v, name, dtype, new_x) for v in node)
    return 0


@kernel
def fp8_quantize_blockwise_ties_away_from_zero():
    g = golden("expert/fp8_quantize_blockwise")
    bits = {"op": "bitcast", "x": "scaled", "dtype": "i32"}
    rounded = {"op": "bitcast", "x": B("and", B("add", bits, 0x00080000), -1048576), "dtype": "f32"}
    half_up = {"op": "where", "cond": B("ge", U("abs", "scaled"), 0.015625), "x": rounded, "y": "scaled"}
    assert _replace_cast_of(g, "scaled", "f8e4m3", half_up) >= 1
    write("expert/fp8_quantize_blockwise", "ties_away_from_zero", "wrong_result",
          "rounds x / scale to e4m3's 3 mantissa bits half away from zero (add 0x00080000 to the f32 bits, mask "
          "with 0xFFF00000; e4m3 subnormals left to the cast) instead of to nearest even: wrong only on exact ties. "
          "With scale = amax / 448, a block whose amax is 448 * 2**k (values already on a power-of-two grid) divides "
          "exactly and f16 values tie often; the draws' normal blocks never do.", g)



@kernel
def normalize_rows_eps_inside_sqrt():
    g = golden("med/normalize_rows")
    find_let(g["body"], "inverse_norm")["value"] = U("rsqrt", B("add", {"op": "sum", "x": "partial_squares", "axis": 0}, 1e-24))
    write("med/normalize_rows", "eps_inside_sqrt", "wrong_result",
          "x * rsqrt(sum x^2 + eps^2) (the eps added inside the root, as RMSNorm does) instead of the prompt's "
          "x / max(||x||, 1e-12): a zero row still gives 0 and a row of norm ~1 is off by ~1e-24 relative, so every draw "
          "(normal rows and zero rows) agrees; a row whose norm is near 1e-12 (small but nonzero: the eps exists for "
          "them) is scaled wrongly. Input: x = [[3e-13, 4e-13], [6e-12, 8e-12]]: torch [[0.3, 0.4], [0.6, 0.8]], the "
          "kernel [[0.268, 0.358], [0.5970, 0.7960]].", g)


if __name__ == "__main__":
    ROUND.main(sys.argv[1:])
