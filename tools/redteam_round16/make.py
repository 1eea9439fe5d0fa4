"""Round 16 (tasks with no catalogue file: elementwise edges, GEMM epilogues, rope, fp8 scales, masks,
size thresholds) candidates: python tools/redteam_round16/make.py [NAME ...] (writes into tools/redteam_round16/).
Each is a minimal edit of the task's golden."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from redteam_candidates import Round, find_let, find_ops, golden, loops  # noqa: E402
from redteam_round4 import B, U, cast, f32_via, let, where  # noqa: E402

ROUND = Round()
ROUND.out = Path(__file__).resolve().parent
kernel, write = ROUND.kernel, ROUND.write


# ================================================================ attention: the tail's padding keys
@kernel
def cross_attention_bf16_tail_mask_minus_1e4():
    g = golden("hard/cross_attention_bf16")
    find_let(g["body"], "t_qk")["value"]["y"] = -10000.0
    write("hard/cross_attention_bf16", "tail_mask_minus_1e4", "wrong_result",
          "the tail block's padding keys (key >= SK) get the score -1e4 (the 'large negative' of Hugging Face "
          "attention masks) instead of -inf: their weight 2^((-1e4 - m) * log2e / 8) is 0 wherever some real key "
          "scores above about -9000, which q . k of the drawn scales (q normal of scale 64 in the extreme draws: "
          "q . k ~ N(0, 512^2)) always does. A row whose real scores all lie below -1e4 (bf16 q, k of a few "
          "tens) puts all its weight on the padding keys, whose v rows load as 0. Input: SK = 1, q = 8, "
          "k = -32 everywhere (q . k = -16384), v = 1: torch 1, the kernel 0.", g)


@kernel
def cross_attention_bf16_tail_max_over_padding():
    g = golden("hard/cross_attention_bf16")
    qk = find_let(g["body"], "t_qk")
    mask = qk["value"]["cond"]
    qk["value"] = qk["value"]["x"]
    tp = find_let(g["body"], "t_p")
    tp["value"] = where(mask, tp["value"], 0.0)
    write("hard/cross_attention_bf16", "tail_max_over_padding", "wrong_result",
          "the tail block's padding keys are zeroed after the exp (p = where(key < SK, p, 0)) instead of their "
          "scores set to -inf, so the running maximum also takes their score 0 (k loads 0 there): where every "
          "real score of a row lies below about -700 (q . k * 0.125 * log2e < -126), exp2_ftz of score - 0 "
          "flushes to 0 for every real key, l = 0 and the row is 0/0 = NaN. Input: SK = 1, q = 2, k = -8 "
          "(q . k = -1024), v = 1: torch 1, the kernel NaN.", g)


# ================================================================ GEMM epilogues: rounding before the bias
@kernel
def gemm_bias_relu_f16_acc_rounded_before_bias():
    g = golden("hard/gemm_bias_relu_f16")
    act = find_let(g["body"], "activated")
    act["value"]["lhs"]["lhs"] = f32_via("acc", "f16")
    write("hard/gemm_bias_relu_f16", "acc_rounded_before_bias", "wrong_result",
          "the f32 accumulator is rounded to f16 before the bias is added (relu(f16(acc) + bias), rounded again "
          "at the store): two roundings where the prompt asks for one. The first is up to 2^-11 |acc|, a step of "
          "the output wherever bias does not cancel acc; where it does, the output is small and that rounding is "
          "many of its steps. bias is [N], not an addend of the output's shape, so no cancelling draw. "
          "Input: x = [[1000, 0.3]], w = [[1], [1]], bias = [-1000] (f16): torch 0.30005, the kernel 0.5.", g)


@kernel
def gemm_bias_relu_f16_relu_after_store_cast_control():
    g = golden("hard/gemm_bias_relu_f16")
    act = find_let(g["body"], "activated")
    act["value"] = act["value"]["lhs"]
    st = find_ops(g["body"], "store")[0]
    st["value"] = {"op": "maximum", "lhs": cast("activated", "f16"), "rhs": 0.0}
    write("hard/gemm_bias_relu_f16", "relu_after_store_cast_control", "ok",
          "CONTROL (correct): acc + bias rounded to f16 once, the ReLU applied after the cast (rounding is monotone "
          "and keeps the sign, so relu(f16(v)) == f16(relu(v)) up to the sign of zero).", g)


@kernel
def linear_bias_bf16_acc_rounded_before_bias():
    g = golden("hard/linear_bias_bf16")
    st = find_ops(g["body"], "tile_store")[0]
    st["value"]["x"]["lhs"] = f32_via("acc", "bf16")
    write("hard/linear_bias_bf16", "acc_rounded_before_bias", "wrong_result",
          "x @ weight^T rounded to bf16 before the bias is added in f32 (and rounded again at the store), the "
          "unfused matmul-then-add: up to 2^-9 |acc| off, many steps of the output where bias cancels acc. "
          "Input: x = [[256, 1]], weight = [[1, 1]], bias = [-256] (bf16): torch 1, the kernel 0.", g)


@kernel
def swiglu_mlp_f16_gate_up_rounded_f16():
    g = golden("hard/swiglu_mlp_f16")
    gated = find_let(g["body"], "gated")
    gt, up = f32_via("gate_acc", "f16"), f32_via("up_acc", "f16")
    gated["value"] = B("mul", B("mul", gt, U("sigmoid", gt)), up)
    write("hard/swiglu_mlp_f16", "gate_up_rounded_f16", "wrong_result",
          "gate and up rounded to f16 before silu and the product (the prompt: do not round gate or up to f16): "
          "2^-11 relative each, inside the tolerance, but a gate past 65504 becomes inf where the f32 gate times a "
          "small up is a finite f16 output. The magnitude draws scale x, w1 and w3 together, so a gate that large "
          "comes with an up as large and an output past f16. Input: x = [[256, 256]], w1 = [[256], [256]], "
          "w3 = [[2^-10], [0]]: gate 131072, up 0.25: torch 32768, the kernel inf.", g)


# ================================================================ rope
@kernel
def rope_bf16_tables_in_bf16():
    g = golden("hard/rope_bf16")
    for n in ("cos_row", "sin_row"):
        s = find_let(g["body"], n)
        s["value"]["x"] = f32_via(s["value"]["x"], "bf16")
    write("hard/rope_bf16", "tables_in_bf16", "wrong_result",
          "the f32 cos and sin tables rounded to bf16 before use (as Hugging Face's eager rotary does, "
          "cos.to(x.dtype)): 2^-9 relative on each factor, inside the default bf16 tolerance on drawn values "
          "(and the magnitude draws scale atol with x), but where x1 cos and x2 sin nearly cancel the output is "
          "small and off by many of its steps. Input: x1 = x2 = 1024 (one head), cos = 0.7075, sin = 0.7065: "
          "torch 1.0234 (bf16), the kernel 0.", g)


@kernel
def rope_bf16_interleaved_pairs():
    g = golden("hard/rope_bf16")
    fh = find_let(g["body"], "first_half")
    fh["value"]["rhs"] = B("mul", fh["value"]["rhs"], 2)
    find_let(g["body"], "second_half")["value"]["rhs"] = 1
    write("hard/rope_bf16", "interleaved_pairs", "wrong_result",
          "GPT-J's interleaved pairing (x[2i], x[2i+1]) instead of the prompt's rotate-half halves "
          "(x[i], x[i+32]).", g)


# ================================================================ fp8 block scales
@kernel
def fp8_gemm_blockwise_bf16_scale_product_bf16():
    g = golden("expert/fp8_gemm_blockwise_bf16")
    na = find_let(g["body"], "new_acc")
    na["value"]["y"] = f32_via(na["value"]["y"], "bf16")
    write("expert/fp8_gemm_blockwise_bf16", "scale_product_bf16", "wrong_result",
          "each block's combined scale a_scale * w_scale rounded to bf16 before it multiplies the block's dot "
          "(scales kept in bf16): 2^-9 relative per block term, inside bf16's tolerance while the terms add up, "
          "far outside it where two blocks cancel. Input: M = 1, NB = 1, KB = 2, a = 448 everywhere, w[0] = 448 "
          "in block 0 and -448 in block 1, a_scale = 0.1 both, w_scale = [0.3, 0.3001]: torch -257 (bf16), "
          "the kernel 0 (both products round to the same bf16).", g)


# ================================================================ a size threshold: float division for the row
@kernel
def row_scale_float_division_row():
    g = golden("easy/row_scale")
    g["meta"] = [{"name": "BLOCK", "value": 16384}]
    find_let(g["body"], "row")["value"] = cast(U("floor", B("div", cast("offs", "f32"), cast("N", "f32"))), "i32")
    write("easy/row_scale", "float_division_row", "wrong_result",
          "the row of a flat offset taken as floor(f32(offs) / f32(N)) instead of an integer division: exact while "
          "offs < 2^24 and the row is below 4096, but past 2^24 elements f32(offs) rounds (an odd offs ties to "
          "even), so the last element of a row is scaled by the next row's factor. CPU draws stop at M * N of a "
          "few hundred thousand. Input: M = 2051, N = 8190, x = 1, s[m] = m % 2: y[2049, 8189] torch 1, the kernel 0 "
          "(s[2050]: offs 2050 * 8190 - 1 is odd and past 2^24, and rounds up to 2050 * 8190).", g)


# ================================================================ absmax quantize
@kernel
def absmax_quantize_amax_zero_test():
    g = golden("med/absmax_quantize")
    then, els = g["body"][5]["then"], g["body"][5]["else"]
    st = find_ops(then, "store")[-1]
    st["value"]["x"]["cond"] = B("eq", {"op": "max", "x": U("abs", "chunk"), "axis": 0}, 0.0)
    st = find_ops(els, "store")[-1]
    st["value"]["x"]["cond"] = B("eq", {"op": "max", "x": "lane_absmax", "axis": 0}, 0.0)
    write("med/absmax_quantize", "amax_zero_test", "wrong_result",
          "q = 0 where the row's amax is 0 instead of where scale is 0: a row whose largest |x| is so small that "
          "amax / 127 underflows (the prompt names this case) divides by 0 and casts +-inf/NaN to i32. "
          "Input: x = [[1e-45, -1e-45]]: torch q [0, 0], the kernel the casts of +-inf.", g)


@kernel
def absmax_quantize_scale_reciprocal():
    g = golden("med/absmax_quantize")
    then, els = g["body"][5]["then"], g["body"][5]["else"]
    find_let(then, "row_scale1")["value"]["op"] = "mul"
    find_let(then, "row_scale1")["value"]["rhs"] = 1.0 / 127.0
    find_let(els, "row_scale")["value"]["op"] = "mul"
    find_let(els, "row_scale")["value"]["rhs"] = 1.0 / 127.0
    write("med/absmax_quantize", "scale_reciprocal", "wrong_result",
          "scale = amax * (1/127) instead of the prompt's f32 division amax / 127: one ulp off for some amax, "
          "and the results are compared exactly (scale itself, and q where x / scale lands near k + 0.5). 14 of the "
          "254 integer amax values differ (9, 13, 18, 26, 36, 52, 72, 104, 143, 144, 175, 207, 208, 239); draws "
          "of N >= ~20 have amax 254 (scale 2 either way). Input: x = [[72, 36, 5]]: scale torch 0.56692916, "
          "the kernel 0.56692910; q[1] torch 63, the kernel 64.", g)


@kernel
def absmax_quantize_chunked_round_half_up():
    g = golden("med/absmax_quantize")
    els = g["body"][5]["else"]
    find_let(els, "rounded")["value"] = U("floor", B("add", "scaled", 0.5))
    write("med/absmax_quantize", "chunked_round_half_up", "wrong_result",
          "the chunked path (N > 4096) rounds with floor(v + 0.5) (half up) instead of half to even: 2.5 -> 3.", g)


# ================================================================ elementwise formulas
@kernel
def gelu_tanh_approximation():
    g = golden("easy/gelu")
    inner = B("mul", 0.7978845608028654, B("add", "v", B("mul", 0.044715, B("mul", "v", B("mul", "v", "v")))))
    find_let(g["body"], "cdf")["value"] = B("mul", 0.5, B("add", 1.0, U("tanh", inner)))
    write("easy/gelu", "tanh_approximation", "wrong_result",
          "GELU's tanh approximation (approximate='tanh') where the prompt asks for the exact erf form.", g)


@kernel
def sigmoid_bf16_tanh_form():
    g = golden("easy/sigmoid_bf16")
    st = find_ops(g["body"], "store")[0]
    st["value"]["x"] = B("add", 0.5, B("mul", 0.5, U("tanh", B("mul", 0.5, "v"))))
    write("easy/sigmoid_bf16", "tanh_form", "wrong_result",
          "sigmoid as 0.5 + 0.5 tanh(x / 2): equal in algebra, but for negative x the f32 sum cancels "
          "(absolute error ~3e-8), so outputs below ~1e-5 are many bf16 steps off and below ~3e-8 are 0.", g)


@kernel
def glu_halves_sigmoid_exp_ratio():
    g = golden("med/glu_halves")
    st = find_ops(g["body"], "store")[0]
    st["value"]["rhs"] = B("div", U("exp", "gate"), B("add", 1.0, U("exp", "gate")))
    write("med/glu_halves", "sigmoid_exp_ratio", "wrong_result",
          "sigmoid(b) as exp(b) / (1 + exp(b)): inf / inf = NaN for b > ~88.", g)


@kernel
def pow_exp_log_control():
    g = golden("easy/pow")
    st = find_ops(g["body"], "store")[0]
    st["value"] = U("exp", B("mul", "e", U("log", "b")))
    write("easy/pow", "exp_log_control", "ok",
          "CONTROL (correct for positive bases): b^e as exp(e * log b) in f32: relative error about "
          "|e log b| * 2^-24 (< 6e-6 before overflow), within rtol 1e-4.", g)


# ================================================================ reductions
@kernel
def bce_logits_rows_partials_f16():
    g = golden("med/bce_logits_rows")
    s = find_let(g["body"], "new_partial_losses")
    s["value"] = f32_via(s["value"], "f16")
    write("med/bce_logits_rows", "partials_f16", "wrong_result",
          "the per-lane running loss sums rounded to f16 at each chunk (register-light partials).", g)


@kernel
def rmsnorm_rows_eps_as_floor():
    g = golden("med/rmsnorm_rows")
    s = find_let(g["body"], "inv_rms")
    s["value"]["x"]["op"] = "maximum"
    write("med/rmsnorm_rows", "eps_as_floor", "wrong_result",
          "eps as a floor of the mean square (rsqrt(max(ms, eps))) instead of added inside the root.", g)


@kernel
def smooth_l1_rows_min_form_control():
    g = golden("med/smooth_l1_rows")
    loop = loops(g["body"])[0]
    body = loop["body"]
    at = [i for i, s in enumerate(body) if s.get("name") == "quadratic"][0]
    body[at] = let("clipped", {"op": "minimum", "lhs": "distance", "rhs": "beta"})
    body[at + 1] = let("linear", B("sub", "distance", "clipped"))
    find_let(body, "loss")["value"] = B("add", B("div", B("mul", B("mul", 0.5, "clipped"), "clipped"), "beta"), "linear")
    write("med/smooth_l1_rows", "min_form_control", "ok",
          "CONTROL (correct): loss = 0.5 c^2 / beta + (d - c), c = min(d, beta): the same piecewise function "
          "without a branch.", g)


# ================================================================ more (second batch)
@kernel
def fp8_gemm_blockwise_bf16_scale_product_f16():
    g = golden("expert/fp8_gemm_blockwise_bf16")
    na = find_let(g["body"], "new_acc")
    na["value"]["y"] = f32_via(na["value"]["y"], "f16")
    write("expert/fp8_gemm_blockwise_bf16", "scale_product_f16", "wrong_result",
          "each block's combined scale a_scale * w_scale rounded to f16 (2^-11 relative) before it multiplies the "
          "block's dot: a quarter of the bf16 version's error. Where two blocks cancel the output is many steps "
          "off. Input: M = 1, NB = 1, KB = 2, a = 448, w = 448 in block 0 and -448 in block 1, a_scale = 0.1, "
          "w_scale = [0.3, 0.30001]: torch -25.625 (bf16), the kernel 0.", g)


@kernel
def fp8_gemm_blockwise_bf16_scales_applied_separately_control():
    g = golden("expert/fp8_gemm_blockwise_bf16")
    na = find_let(g["body"], "new_acc")
    na["value"] = B("add", "acc", B("mul", B("mul", "block_sum", {"op": "expand_dims", "x": "a_s", "axis": 1}), "w_s"))
    write("expert/fp8_gemm_blockwise_bf16", "scales_applied_separately_control", "ok",
          "CONTROL (correct): each block's dot times a_scale, then times w_scale, then added (three f32 roundings "
          "instead of the golden's product of scales and one fma).", g)


@kernel
def gemm_bias_relu_f16_bias_in_acc_init_control():
    g = golden("hard/gemm_bias_relu_f16")
    body = g["body"]
    bias = [s for s in body if s.get("name") == "bias_row"][0]
    body.remove(bias)
    at = [i for i, s in enumerate(body) if s.get("op") == "for"][0]
    body.insert(at, bias)
    loop = body[at + 1]
    loop["carry"][0]["init"] = B("add", {"op": "full", "shape": ["BLOCK_M", "BLOCK_N"], "value": 0.0, "dtype": "f32"}, "bias_row")
    find_let(body, "activated")["value"]["lhs"] = "acc"
    write("hard/gemm_bias_relu_f16", "bias_in_acc_init_control", "ok",
          "CONTROL (correct): the f32 accumulator starts at the bias (the bias is one more f32 addend of the sum), "
          "the ReLU and one f16 rounding at the store.", g)


@kernel
def cross_attention_bf16_l_from_bf16_p_control():
    g = golden("hard/cross_attention_bf16")
    for ln, pn, an, lo in (("l_new", "p", "alpha", "l_i"), ("t_l_new", "t_p", "t_alpha", "l_t")):
        find_let(g["body"], ln)["value"] = {"op": "fma", "x": lo, "y": an,
                                            "z": {"op": "sum", "x": f32_via(pn, "bf16"), "axis": 1}}
    write("hard/cross_attention_bf16", "l_from_bf16_p_control", "ok",
          "CONTROL (correct): the softmax denominator summed from the same bf16-rounded probabilities that "
          "multiply v (the prompt allows rounding them; numerator and denominator then agree).", g)


@kernel
def swiglu_mlp_f16_silu_division_control():
    g = golden("hard/swiglu_mlp_f16")
    find_let(g["body"], "gated")["value"] = B(
        "mul", B("div", "gate_acc", B("add", 1.0, U("exp", U("neg", "gate_acc")))), "up_acc")
    write("hard/swiglu_mlp_f16", "silu_division_control", "ok",
          "CONTROL (correct): silu(g) = g / (1 + exp(-g)), the prompt's form (exp(-g) = inf for g < -88 gives "
          "g / inf = -0, torch's value to f16).", g)


@kernel
def rope_bf16_fma_control():
    g = golden("hard/rope_bf16")
    st = find_ops(g["body"], "store")
    st[0]["value"]["x"] = {"op": "fma", "x": "x1", "y": "cos_row", "z": U("neg", B("mul", "x2", "sin_row"))}
    st[1]["value"]["x"] = {"op": "fma", "x": "x2", "y": "cos_row", "z": B("mul", "x1", "sin_row")}
    write("hard/rope_bf16", "fma_control", "ok",
          "CONTROL (correct): each output as one fma of one product and the other rounded product, in f32.", g)


@kernel
def bias_relu_where_drops_nan():
    g = golden("easy/bias_relu")
    st = find_ops(g["body"], "store")[0]
    st["value"] = where(B("gt", "shifted", 0.0), "shifted", 0.0)
    write("easy/bias_relu", "where_drops_nan", "wrong_result",
          "ReLU as where(v > 0, v, 0): a NaN gives 0 where the prompt (torch.relu) gives NaN.", g)



@kernel
def absmax_quantize_element_reciprocal():
    g = golden("med/absmax_quantize")
    then, els = g["body"][5]["then"], g["body"][5]["else"]
    find_let(then, "scaled")["value"] = B("mul", "chunk", B("div", 1.0, "row_scale1"))
    sc = find_let(els, "scaled")
    sc["value"] = B("mul", sc["value"]["lhs"], B("div", 1.0, "row_scale"))
    write("med/absmax_quantize", "element_reciprocal", "wrong_result",
          "x / scale taken as x * (1 / scale), one reciprocal per row (the prompt: a true f32 division, not a "
          "multiplication by a reciprocal): an ulp off now and then, which moves q only where x / scale lies "
          "within an ulp of k + 0.5: x = amax / 2 (127 x / amax = 63.5 in reals) for 26 of the 254 integer amax "
          "values, rows the integer draws rarely hold (their amax is mostly 254, scale 2, exact). "
          "Input: x = [[18, 9]]: torch q [127, 63], the kernel [127, 64].", g)


@kernel
def hardsigmoid_affine_then_clamp_control():
    g = golden("easy/hardsigmoid")
    find_let(g["body"], "relu6")["value"] = {"op": "clamp", "x": {"op": "fma", "x": "v", "y": 0.16666666666666666, "z": 0.5},
                                             "lo": 0.0, "hi": 1.0}
    st = find_ops(g["body"], "store")[0]
    st["value"] = "relu6"
    write("easy/hardsigmoid", "affine_then_clamp_control", "ok",
          "CONTROL (correct): clamp(x / 6 + 0.5, 0, 1) as one fma then the clamp (NaN propagates through both); "
          "near x = -3 the sum cancels to an absolute error of ~3e-8, inside atol.", g)


@kernel
def softplus_unshifted_log1p_control():
    g = golden("easy/softplus")
    find_let(g["body"], "stable")["value"] = U("log1p", U("exp", "v"))
    write("easy/softplus", "unshifted_log1p_control", "ok",
          "CONTROL (correct): log1p(exp(x)) below the threshold, without the max(x, 0) shift: exp(x) <= e^20 "
          "there, and log1p keeps the far negative tail exact.", g)



@kernel
def cross_attention_bf16_running_max_init_minus_1e4():
    g = golden("hard/cross_attention_bf16")
    loops(g["body"])[0]["carry"][0]["init"]["value"] = -10000.0
    write("hard/cross_attention_bf16", "running_max_init_minus_1e4", "wrong_result",
          "the running maximum starts at -1e4 instead of -inf: right while some key of the row scores above "
          "-1e4 (in log2 units: q . k * 0.125 * log2e), which the drawn scales always give; a row whose scores all "
          "lie below keeps m = -1e4, every p = exp2(score - m) flushes to 0, l = 0 and the row is 0/0 = NaN. "
          "Input: SK = 1, q = 16, k = -64 (q . k = -65536, -11819 in log2 units), v = 1: torch 1, the kernel NaN.", g)


@kernel
def glu_halves_sigmoid_tanh_form():
    g = golden("med/glu_halves")
    st = find_ops(g["body"], "store")[0]
    st["value"]["rhs"] = B("add", 0.5, B("mul", 0.5, U("tanh", B("mul", 0.5, "gate"))))
    write("med/glu_halves", "sigmoid_tanh_form", "wrong_result",
          "sigmoid(b) as 0.5 + 0.5 tanh(b / 2): the f32 sum cancels for negative b (absolute error ~3e-8, and 0 "
          "below b ~ -17 where sigmoid is 4e-8), inside atol 1e-5 while a is O(1); a large value a with a "
          "strongly negative gate is 100% off beyond atol. The magnitude draws scale a and b together (b then "
          "saturates exactly) and scale atol with them. Input: a = 1e4, b = -20: torch 2.06e-5, the kernel 0.", g)


if __name__ == "__main__":
    ROUND.main(sys.argv[1:])
