"""Round 18 (intermediate values rounded to a narrow dtype where the prompt asks for f32 arithmetic and one
rounding at the store; double roundings) candidates: python tools/redteam_round18/make.py [NAME ...]
(writes into tools/redteam_round18/). Each is a minimal edit of the task's golden."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from redteam_candidates import Round, find_let, find_ops, golden, loops  # noqa: E402
from redteam_round4 import B, U, cast, f32_via, let, where  # noqa: E402

ROUND = Round()
ROUND.out = Path(__file__).resolve().parent
kernel, write = ROUND.kernel, ROUND.write


def ED(x, axis):
    return {"op": "expand_dims", "x": x, "axis": axis}


# ================================================================ norms: statistics rounded
@kernel
def add_layernorm_bf16_mean_bf16():
    g = golden("hard/add_layernorm_bf16")
    s = find_let(g["body"], "row_mean")
    s["value"] = f32_via(s["value"], "bf16")
    write("hard/add_layernorm_bf16", "mean_bf16", "wrong_result",
          "the row mean of h rounded to bf16 before it centres h (the mean kept in the output dtype). The prompt: "
          "'The statistics and y are computed from h in f32'. The mean is off by up to 2^-9 |mean|, which shifts "
          "every centred value and adds (mean error)^2 to the variance: nothing on drawn rows (mean ~ 0 against a "
          "spread of ~1.4), far off on a row whose mean is large against its spread. "
          "Input: N = 2, x = [[300, 302]], residual = 0, weight = 1, bias = 0: mean 301 rounds to 300 (bf16 "
          "steps of 2 there): torch y = [-1, 1], the kernel [0, 1.414].", g)


@kernel
def add_layernorm_bf16_inv_std_bf16():
    g = golden("hard/add_layernorm_bf16")
    s = find_let(g["body"], "inv_std")
    s["value"] = f32_via(s["value"], "bf16")
    write("hard/add_layernorm_bf16", "inv_std_bf16", "wrong_result",
          "1 / sqrt(var + eps) rounded to bf16 before it scales the centred values (the prompt: 'The statistics "
          "and y are computed from h in f32'): every y of the row is off by the same 2^-9-relative factor, up to "
          "one bf16 step on most elements.", g)


@kernel
def add_layernorm_bf16_divide_by_std_control():
    g = golden("hard/add_layernorm_bf16")
    s = find_let(g["body"], "inv_std")
    s["value"] = U("sqrt", s["value"]["x"])
    find_let(g["body"], "normalized")["value"]["op"] = "div"
    write("hard/add_layernorm_bf16", "divide_by_std_control", "ok",
          "CONTROL (correct): (h - mean) / sqrt(var + eps), a division by the f32 standard deviation instead of "
          "a product with its reciprocal square root (an f32 ulp or two apart), rounded to bf16 once.", g)


@kernel
def rmsnorm_f16_normalized_f16_before_weight():
    g = golden("hard/rmsnorm_f16")
    st = find_ops(g["body"], "store")[0]
    st["value"]["x"]["lhs"] = f32_via(st["value"]["x"]["lhs"], "f16")
    write("hard/rmsnorm_f16", "normalized_f16_before_weight", "wrong_result",
          "x * rsqrt(ms + eps) rounded to f16 before the weight multiplies it (Hugging Face's LlamaRMSNorm: "
          "weight * hidden.to(input_dtype)): two roundings where the prompt says 'compute everything in f32 "
          "(the mean of squares, the rsqrt and both products); round to f16 ... once, at the store'. "
          "Up to one f16 step off wherever the weight is not a power of two.", g)


@kernel
def rmsnorm_f16_rstd_times_weight_first_control():
    g = golden("hard/rmsnorm_f16")
    st = find_ops(g["body"], "store")[0]
    st["value"]["x"] = B("mul", "chunk", B("mul", "inv_rms", "scale"))
    write("hard/rmsnorm_f16", "rstd_times_weight_first_control", "ok",
          "CONTROL (correct): x * (rsqrt(ms + eps) * weight), the two f32 products in the other order (a few f32 "
          "ulps apart), rounded to f16 once.", g)


@kernel
def layer_norm_optional_rstd_in_T():
    g = golden("med/layer_norm_optional")
    for n in ("rstd1", "rstd"):
        s = find_let(g["body"], n)
        s["value"] = f32_via(s["value"], "T")
    write("med/layer_norm_optional", "rstd_in_T", "wrong_result",
          "rstd = 1 / sqrt(var + eps) rounded to x's dtype T before it scales the centred values: exact for "
          "f32, 2^-12 (f16) or 2^-9 (bf16) relative for the half variants. The prompt: 'y = (x - mean) / "
          "sqrt(var + eps) * weight + bias, computed in f32 and rounded to x's dtype ... at the store'. "
          "Up to a step of y, and many steps where the bias cancels the normalised value. Input (variant "
          "f16_affine, index 3): x = [[300, -300]], weight = 1, bias = [-1, 1], eps = 1e-5: torch y = [-0, 0], "
          "the kernel [0.00021362, -0.00021362] (f16(1/300) is 2^-12 high; ~3600 subnormal steps).", g)


@kernel
def rms_norm_batched_inv_rms_in_T():
    g = golden("hard/rms_norm_batched")
    s = find_let(g["body"], "inv_rms")
    s["value"] = f32_via(s["value"], "T")
    write("hard/rms_norm_batched", "inv_rms_in_T", "wrong_result",
          "1 / sqrt(mean(x^2) + eps) rounded to x's dtype T before it scales x (the prompt: 'y = x / sqrt(mean "
          "over H of x^2 + eps) * weight, computed in f32 and rounded to x's dtype ... at the store'): exact "
          "for f32, 2^-12 (f16) or 2^-9 (bf16) relative on every y of a row, up to one step of the output. "
          "Input (variant bf16, index 1): x = randn(2, 8, 64), weight = randn(64) (seed 0): 214 of 1024 outputs "
          "one bf16 step off (0.099609375 for 0.099121094), the golden 0.", g)


@kernel
def row_std_f16_variance_f16():
    g = golden("med/row_std_f16")
    st = find_ops(g["body"], "store")[0]
    st["value"]["x"]["x"] = f32_via(st["value"]["x"]["x"], "f16")
    write("med/row_std_f16", "variance_f16", "wrong_result",
          "the variance m2 / N rounded to f16 before the square root (the prompt: 'compute everything in f32, "
          "and round the result to f16 at the store'): half a step of relative error on most rows, and a "
          "variance past 65504 (a deviation past 256, an f16 output) becomes inf.", g)


@kernel
def rmsnorm_backward_bf16_rstd_bf16():
    g = golden("expert/rmsnorm_backward_bf16")
    s = find_let(g["launches"][0]["body"], "rstd")
    s["value"] = f32_via(s["value"], "bf16")
    write("expert/rmsnorm_backward_bf16", "rstd_bf16", "wrong_result",
          "rstd rounded to bf16 (and stored so for the weight gradient) instead of kept in f32 (the prompt: "
          "'compute in f32 and round once to bf16 at the store'): grad_x and grad_weight are off by a "
          "2^-9-relative factor (grad_x's rstd^3 term by three), inside the default bf16 tolerance except "
          "where the two terms of grad_x cancel.", g)


# ================================================================ GEMM epilogues and scales
@kernel
def gemm_scale_residual_bf16_alpha_bf16():
    g = golden("hard/gemm_scale_residual_bf16")
    st = find_ops(g["body"], "store")[0]
    st["value"]["x"]["y"] = f32_via("alpha", "bf16")
    write("hard/gemm_scale_residual_bf16", "alpha_bf16", "wrong_result",
          "the f32 scalar alpha rounded to bf16 before it scales the f32 accumulator (the prompt: 'apply the "
          "scale and the residual add in f32'): alpha * acc is off by up to 2^-9 of itself, many steps of the "
          "output where the residual cancels it. Input: a = [[1]], b = [[256]], residual = [[-256]], "
          "alpha = 1.001: torch 0.25 (bf16 0.25), the kernel 0.", g)


@kernel
def linear_bias_gelu_f16_h_rounded_f16():
    g = golden("hard/linear_bias_gelu_f16")
    s = find_let(g["body"], "h")
    s["value"] = f32_via(s["value"], "f16")
    write("hard/linear_bias_gelu_f16", "h_rounded_f16", "wrong_result",
          "h = x @ W^T + bias rounded to f16 before the GELU (the unfused linear-then-gelu): the prompt: "
          "'compute the bias add and the GELU in f32, and round to f16 ... once, at the store'. GELU's relative "
          "slope h gelu'(h) / gelu(h) is ~1 + h^2 on the negative side, so the 2^-12 relative error of h "
          "becomes up to ~26 x 2^-12 = 0.6% of gelu(h) at h = -5, inside the default f16 rtol of 1e-2. "
          "Input: x = [[-3]], weight = [[1]], bias = [-0.0009] (h = -3.0009, f16 -3): torch -0.00403976, the "
          "kernel -0.00405121 (3 steps); on x = randn(32, 64), weight = randn(32, 64) / 8, bias = randn(32) "
          "(seed 0) 335 of 1024 outputs are a step or more off (37 by two or more; the golden 7 and 2, near 0).", g)


@kernel
def linear_bias_gelu_f16_gelu_fma_control():
    g = golden("hard/linear_bias_gelu_f16")
    half_h = B("mul", 0.5, "h")
    find_let(g["body"], "gelu")["value"] = {"op": "fma", "x": half_h,
                                             "y": {"op": "erf", "x": B("mul", "h", 0.7071067811865476)}, "z": half_h}
    write("hard/linear_bias_gelu_f16", "gelu_fma_control", "ok",
          "CONTROL (correct): gelu(h) = fma(0.5 h, erf(h / sqrt 2), 0.5 h), all in f32, one f16 rounding.", g)


@kernel
def int8_gemm_rowcol_scaled_scales_f16():
    g = golden("expert/int8_gemm_rowcol_scaled")
    for n in ("a_scales", "w_scales"):
        s = find_let(g["body"], n)
        s["value"] = f32_via(s["value"], "f16")
    write("expert/int8_gemm_rowcol_scaled", "scales_f16", "wrong_result",
          "the f32 row and column scales loaded and cast to f16 (scales kept in the output dtype) before they "
          "scale the exact integer sums. The prompt: 'Scale them in f32 and round to f16 (round to nearest "
          "even) once, at the store.' Each scale is off by up to 2^-12 of itself, so the output by up to 2^-11 "
          "before its own rounding: one f16 step off on many elements, inside the default rtol 1e-2. "
          "Input: random a_q, w_q (16 x 32 words), scales uniform in [0.001, 0.02] (seed 0): 71 of 256 outputs "
          "one f16 step off (-0.33251953 for -0.33276367), the golden 0.", g)


@kernel
def int8_gemm_rowcol_scaled_scale_product_first_control():
    g = golden("expert/int8_gemm_rowcol_scaled")
    find_let(g["body"], "scaled")["value"] = B("mul", cast("acc", "f32"),
                                               B("mul", ED("a_scales", 1), ED("w_scales", 0)))
    write("expert/int8_gemm_rowcol_scaled", "scale_product_first_control", "ok",
          "CONTROL (correct): acc * (a_scale[m] * w_scale[n]), the scales' product first, all in f32 "
          "(a few f32 ulps from the golden's order), one f16 rounding.", g)


@kernel
def fp8_gemm_rowwise_bf16_w_scale_bf16():
    g = golden("expert/fp8_gemm_rowwise_bf16")
    s = find_let(g["body"], "sw")
    s["value"] = f32_via(s["value"], "bf16")
    write("expert/fp8_gemm_rowwise_bf16", "w_scale_bf16", "wrong_result",
          "the f32 per-channel weight scale cast to bf16 on load (as a checkpoint stored in bf16 would give) "
          "before it scales the f32 accumulator. The prompt: 'Accumulate the products in f32, scale in f32 and "
          "round to bf16 (round to nearest even) once, at the store.' Off by up to 2^-9 of the output before "
          "its own rounding: up to one bf16 step, inside the default bf16 tolerance (rtol 1e-2). Input: a = [[7]], "
          "w = [[1]], a_scale = [1], w_scale = [1.0039] (bf16 1.0): torch 7.03125, the kernel 7; on random "
          "32 x 64 inputs (seed 0) 238 of 1024 outputs are one step off, the golden's 0.", g)


@kernel
def int4_gemm_grouped_f16_dequant_weight_f16():
    g = golden("expert/int4_gemm_grouped_f16")
    body = loops(g["body"])[0]["body"]
    gs = find_let(body, "group_scales")
    body.remove(gs)
    at = [i for i, s in enumerate(body) if s.get("name") == "w_tile"][0]
    body.insert(at, gs)
    wt = find_let(body, "w_tile")
    codes = wt["value"]["x"]
    wt["value"] = cast(B("mul", cast(codes, "f32"), ED("group_scales", 1)), "f16")
    find_let(body, "new_acc")["value"] = B("add", "acc", "group_sum")
    write("expert/int4_gemm_grouped_f16", "dequant_weight_f16", "wrong_result",
          "the weight dequantised to f16 (W = f16((q - 8) * scale), the GPTQ/AWQ kernels' tile) and fed to an "
          "f16 dot: (q - 8) * scale needs up to 15 significant bits and f16 has 11, so each weight is off by "
          "up to 2^-12 of itself. The prompt defines W[n, k] = (q[n, k] - 8) * scales[n, k // 128] and says "
          "'Accumulate in f32 and round to f16 (round to nearest even) once, at the store'; the reference "
          "dequantises in f64. The errors are inside the default f16 tolerance except where the group terms "
          "cancel. Input: M = N = 1, G = 2, x[0, 0, 0] = 1000, x[0, 1, 0] = -1000 (else 0), code 15 (7 x scale) "
          "at column 0 of both groups and code 8 (0) elsewhere, scales [1.0009765625, 1.0]: torch 6.8359375, the "
          "kernel 7.8125 (f16(7 x 1.0009765625) = 7.0078125).", g)


@kernel
def grouped_gemm_f16_acc_via_bf16():
    g = golden("expert/grouped_gemm_f16")
    st = find_ops(g["body"], "store")[0]
    st["value"] = cast(f32_via("acc", "bf16"), "f16")
    write("expert/grouped_gemm_f16", "acc_via_bf16", "wrong_result",
          "the f32 accumulator rounded to bf16 and then to f16 (a bf16 epilogue buffer reused for the f16 "
          "output): a double rounding that keeps 8 of f16's 11 bits, up to 2^-9 relative off, inside the "
          "default f16 tolerance (rtol 1e-2). The prompt: 'f16 inputs, f32 accumulation, f16 output'. "
          "Input: G = 1, offs = [1], x = [[1]], w = [[[1.0009765625]]] (f16): torch 1.0009766, the kernel 1; on "
          "x = randn(64, 32), w = randn(2, 32, 32), offs = [20, 64] (seed 0) 1801 of 2048 outputs are off "
          "(1323 by two steps or more), the golden 1 by one step.", g)


# ================================================================ activations with half I/O
@kernel
def geglu_halves_bf16_gelu_rounded_bf16():
    g = golden("med/geglu_halves_bf16")
    st = find_ops(g["body"], "store")[0]
    st["value"]["x"]["rhs"] = f32_via(st["value"]["x"]["rhs"], "bf16")
    write("med/geglu_halves_bf16", "gelu_rounded_bf16", "wrong_result",
          "gelu(b) rounded to bf16 before it multiplies a (F.gelu on a bf16 tensor, then the product): two "
          "roundings where the prompt says 'Read bf16, compute in f32, round the result to bf16 (round to "
          "nearest even) at the store' (and the reference computes gelu and the product in f32). Up to 2^-9 "
          "relative before the final rounding, inside rtol 0.008. Input: x = 3 randn(32, 2, 64) (seed 0): 453 of "
          "2048 outputs a step or more off, the golden 13 (all near 0, within atol 1e-4).", g)


@kernel
def channel_affine_bf16_store_via_f16():
    g = golden("easy/channel_affine_bf16")
    st = find_ops(g["body"], "store")[0]
    st["value"] = cast(cast("affine", "f16"), "bf16")
    write("easy/channel_affine_bf16", "store_via_f16", "wrong_result",
          "the f32 result rounded to f16 and then to bf16 (an f16 staging buffer): double rounding, where the "
          "prompt says 'round the result to bf16 (round to nearest even) once at the store'. Where the f16 "
          "rounding lands on a bf16 tie the second rounding goes to even, one step off; past 65504 it is inf, "
          "and below 2^-24 it is 0. Input: x = [[256]], weight = [256], bias = [1] (y = 65537): torch 65536, "
          "the kernel inf; x = [[1e-10]], weight = [1], bias = [0]: torch 1e-10, the kernel 0.", g)


@kernel
def selu_bf16_expm1_f16():
    g = golden("easy/selu_bf16")
    s = find_let(g["body"], "expm1")
    s["value"] = f32_via(s["value"], "f16")
    write("easy/selu_bf16", "expm1_f16", "wrong_result",
          "exp(x) - 1 rounded to f16 before the constants scale it (the prompt: 'compute in f32, and round the "
          "result to bf16 ... at the store', with exp(x) - 1 'as accurate near 0 as torch.expm1'): a negative "
          "x above -2^-25 (where expm1(x) = x) flushes to 0 in f16, and below 2^-14 in magnitude keeps few "
          "bits. Input: x = [-1e-10]: torch -1.7582e-10, the kernel -0.", g)


@kernel
def swiglu_f16_silu_rounded_f16_control():
    g = golden("easy/swiglu_f16")
    s = find_let(g["body"], "activated")
    s["value"] = f32_via(s["value"], "f16")
    write("easy/swiglu_f16", "silu_rounded_f16_control", "ok",
          "CONTROL (the reference's arithmetic): silu(gate) rounded to f16 before it multiplies up, as F.silu(gate) "
          "* up in f16 does; the prompt names this rounding and says 'the tolerance covers that difference'.", g)


# ================================================================ gathers and convolutions
@kernel
def embedding_bag_mean_f16_sum_f16_before_divide():
    g = golden("expert/embedding_bag_mean_f16")
    st = find_ops(g["body"], "store")[0]
    st["value"]["x"]["lhs"] = f32_via("bag_sum", "f16")
    write("expert/embedding_bag_mean_f16", "sum_f16_before_divide", "wrong_result",
          "the bag's f32 sum rounded to f16 before the division by the count (sum stored in the table's dtype, "
          "then divided): the prompt: 'The mean is to be accumulated in f32'. A sum past 65504 becomes inf "
          "though the mean is a small f16; otherwise 2^-12 relative, inside rtol 1e-2. Input: a bag of 4 ids "
          "of a row holding 20000: torch 20000, the kernel inf.", g)


@kernel
def depthwise_conv3x3_f16_row_partials_f16():
    g = golden("expert/depthwise_conv3x3_f16")
    for p in ("ra", "rb", "rc"):
        for i in range(3):
            s = find_let(g["body"], f"{p}_h{i}")
            s["value"] = f32_via(s["value"], "f16")
    write("expert/depthwise_conv3x3_f16", "row_partials_f16", "wrong_result",
          "each input row's three-tap partial sum rounded to f16 before the three rows and the bias are added "
          "(partials kept in the input dtype): the prompt: 'Accumulate in f32; round to f16 at the store.' "
          "Where the rows' partials cancel, the output is many of its steps off.", g)


# ================================================================ attention
@kernel
def attention_f16_acc_f16_before_normalise():
    g = golden("hard/attention_f16")
    st = [s for s in g["body"] if s.get("op") == "store"][0]
    st["value"]["x"]["lhs"] = f32_via("acc_t", "f16")
    write("hard/attention_f16", "acc_f16_before_normalise", "wrong_result",
          "the unnormalised f32 output sum(p v) rounded to f16 before the division by the softmax denominator l "
          "(the prompt: 'accumulate the output in f32; ... Round the output to f16 at the store'). Twice "
          "rounded, and since p <= 1 but l up to S, acc reaches S |v|: past 65504 it is inf where the output "
          "(a mean of v) is finite. Input: S = 4, q = k = 0, v = 30000 everywhere: torch 30000, the kernel inf.", g)


@kernel
def attention_f16_reciprocal_l_control():
    g = golden("hard/attention_f16")
    st = [s for s in g["body"] if s.get("op") == "store"][0]
    st["value"]["x"] = B("mul", "acc_t", ED(B("div", 1.0, "l_t"), 1))
    write("hard/attention_f16", "reciprocal_l_control", "ok",
          "CONTROL (correct): acc * (1 / l) instead of acc / l, in f32 (an ulp of f32 apart), rounded to f16 "
          "once.", g)


@kernel
def alibi_attention_f16_slope_f16():
    g = golden("expert/alibi_attention_f16")
    s = find_let(g["body"], "slope")
    s["value"] = f32_via(s["value"], "f16")
    write("expert/alibi_attention_f16", "slope_f16", "wrong_result",
          "the f32 head slope cast to f16 on load (the bias table in the activations' dtype) before it "
          "multiplies the distance i - j: the prompt gives 'the f32 slope slopes[h]' and says 'Compute the "
          "scores and the softmax in f32'. The bias -slope (i - j) is off by up to 2^-12 slope (i - j), which "
          "grows with the distance: at slope 0.5 and a distance of 1000 the score is 0.12 off, 13% of the "
          "weight. Input: B = H = 1, S = 2, q = 1, k = 125 for key 0 and 0 for key 1, v = 1 and 0, slopes = "
          "[1000.3] (f16 1000.5): query 1's scores -0.3 and 0 (the kernel -0.5 and 0): torch 0.42553711, the "
          "kernel 0.37744141.", g)


@kernel
def sliding_window_attention_f16_scores_f16():
    g = golden("expert/sliding_window_attention_f16")
    s = find_let(g["body"], "raw_scores")
    s["value"] = f32_via(s["value"], "f16")
    write("expert/sliding_window_attention_f16", "scores_f16", "wrong_result",
          "the scaled scores q . k * 0.125 rounded to f16 before the softmax (the prompt: 'Compute the scores "
          "and the softmax in f32'): each score is off by up to 2^-12 of itself, so a probability by a factor "
          "e^(2^-12 |score|): 0.2% at a score of 10, 13% at 500, and a score past 65504 is inf (inf - inf = NaN).",
          g)


@kernel
def flash_decoding_f16_partial_acc_f16():
    g = golden("expert/flash_decoding_f16")
    s = find_let(g["launches"][0]["body"], "prog_acc")
    s["value"] = f32_via(s["value"], "f16")
    write("expert/flash_decoding_f16", "partial_acc_f16", "wrong_result",
          "each split's unnormalised partial output rounded to f16 before it is written for the combine launch "
          "(an f16 scratch buffer): the prompt: 'Compute in f32; round the output to f16 at the store'. "
          "2^-12 relative per partial, many steps of the output where the partials cancel, and a partial "
          "sum(p v) can pass 65504 (p <= 1 per key, up to a split's length of keys). Input: B = H = 1, S = 4, "
          "q = k = 0, v = 30000: torch 30000, the kernel inf.", g)


@kernel
def paged_attention_decode_f16_p_f16():
    g = golden("expert/paged_attention_decode_f16")
    s = find_let(g["body"], "new_acc")
    s["value"]["rhs"]["x"]["lhs"]["x"] = f32_via("p", "f16")
    write("expert/paged_attention_decode_f16", "p_f16", "wrong_result",
          "the probabilities p rounded to f16 before they multiply v, as flash attention does. Unlike "
          "attention_f16's, this prompt does not allow it: 'Compute the scores, the softmax and the sum in "
          "f32'. The denominator keeps the unrounded p, so the weights no longer sum to 1: up to 2^-12 "
          "relative per term, inside the default f16 tolerance except where the terms cancel. Input: one sequence "
          "of 2 tokens, one head, q = e_0, k = 0 and -0.008 e_0 (scores 0 and -0.001), v = +1000 and -1000: "
          "torch 0.5, the kernel 0.48852539 (p = 0.9990005 is 0.99902344 in f16, in the numerator only).", g)


# ================================================================ softmax-type rows
@kernel
def softmax_f16_exp_f16_before_scale():
    g = golden("med/softmax_f16")
    s = find_let(g["body"], "probabilities")
    s["value"]["lhs"] = f32_via(s["value"]["lhs"], "f16")
    write("med/softmax_f16", "exp_f16_before_scale", "wrong_result",
          "exp(x - max) rounded to f16 before it is multiplied by 1 / sum (the numerator in the output dtype): "
          "the prompt: 'compute in f32 (maximum, exponentials and their sum), and round each probability to f16 "
          "... at the store'. Two roundings, up to one f16 step off; exponentials below 2^-24 are 0. "
          "Input: x = 4 randn(32, 64) (seed 0): 399 of 2048 probabilities one f16 step off, the golden 0.", g)


@kernel
def softmax_backward_recompute_bf16_probabilities_bf16():
    g = golden("expert/softmax_backward_recompute_bf16")
    s = find_let(g["body"], "probabilities")
    s["value"] = f32_via(s["value"], "bf16")
    write("expert/softmax_backward_recompute_bf16", "probabilities_bf16", "wrong_result",
          "the recomputed softmax y rounded to bf16 before dx = y * (dy - dot) (y kept in the forward's dtype): "
          "the prompt: 'Compute in f32 (convert the bf16 values first) and round once to bf16 at the store'. "
          "2^-9 relative on each dx before its rounding, inside rtol 0.02. Input: x = 3 randn(32, 64), "
          "dy = randn(32, 64) (seed 0): 537 of 2048 dx one bf16 step off, the golden 0.", g)


@kernel
def row_mean_bf16_sum_bf16_before_divide():
    g = golden("med/row_mean_bf16")
    s = find_let(g["body"], "mean")
    s["value"]["lhs"] = f32_via(s["value"]["lhs"], "bf16")
    write("med/row_mean_bf16", "sum_bf16_before_divide", "wrong_result",
          "the row's f32 sum rounded to bf16 before the division by N (x.sum(1).bfloat16() / N): the prompt: "
          "'accumulate the sum in f32, divide in f32, and round the mean to bf16 ... at the store'. Two "
          "roundings, up to one bf16 step off, inside the default bf16 tolerance. Input: x = randn(64, 100) "
          "(seed 0): 18 of 64 means one bf16 step off (0.087402344 for 0.087890625), the golden 0.", g)


if __name__ == "__main__":
    ROUND.main(sys.argv[1:])
