"""Round 32, values: value/size/call candidates built from the goldens. Run from the repository root:
.venv/bin/python tools/redteam_round32/values/gen.py [names]; files go to $OUT (default tools/redteam_round32/open/;
those in the catalogue were copied from there into tests/redteam)."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "constructs"))
from lib import golden, op, write  # noqa: E402  (the construct scripts' helpers)

def find_let(body, name):
    for s in body:
        if s.get("op") == "let" and s.get("name") == name:
            return s
    raise KeyError(name)

# ---- easy/pow
k = golden("easy/pow")
find_let(k["body"], "b")["value"] = op("maximum", lhs=find_let(k["body"], "b")["value"], rhs=1e-30)
write("pow_clamps_base_at_1e-30", "easy/pow",
      "guards the log inside pow against a zero base with max(base, 1e-30) (the prompt promises positive bases, so "
      "the guard was meant to be harmless): every positive base below 1e-30 is raised as 1e-30. Input: base = [1e-35], "
      "exponent = [-1]: torch gives [1e35], the kernel [1e30]; base = [1e-38], exponent = [0.5]: torch 1e-19, kernel 1e-15 "
      "(within atol, but the first is 1e5x off). base is uniform in [0.1, 4] with specials 1e-30, 1e-7, 1e20 (the clamp "
      "leaves 1e-30 alone); uniform inputs get no spread or scaled-down draw", k)

k = golden("easy/pow")
find_let(k["body"], "b")["value"] = op("maximum", lhs=find_let(k["body"], "b")["value"], rhs=1.1754943508222875e-38)
write("pow_clamps_base_at_smallest_normal", "easy/pow",
      "clamps the base to f32's smallest normal (1.18e-38) before pow, as a kernel guarding log2 against a flushed "
      "subnormal does: every subnormal base (positive, as promised) is raised as 1.18e-38. Input: base = [1e-40], "
      "exponent = [-0.5]: torch gives [1e20], the kernel [9.22e18]; base = [1e-45], exponent = [-1]: torch inf, kernel "
      "8.5e37. No draw of base leaves [0.1, 4] + {1e-30, 1e-7, 1e20}", k)

# ---- med/smooth_l1_rows
k = golden("med/smooth_l1_rows")
loop = next(s for s in k["body"] if s.get("op") == "for")
loss = find_let(loop["body"], "loss")
m = op("cast", x=op("lt", lhs="distance", rhs="beta"), dtype="f32")
loss["value"] = op("add", lhs=op("mul", lhs=m, rhs="quadratic"), rhs=op("mul", lhs=op("sub", lhs=1.0, rhs=m), rhs="linear"))
write("smooth_l1_rows_branchless_blend_nan_past_2e19", "med/smooth_l1_rows",
      "selects the branch arithmetically, m * quadratic + (1 - m) * linear with m = float(d < beta) (a 'branchless' "
      "where): 0.5 * d * d / beta overflows to inf once d passes about 2.3e19 (at beta = 0.75), and 0 * inf is NaN, so a row with one far-apart "
      "pair is NaN. Input: x = [[1e20, 0.5]], y = [[0, 0]], beta = 0.75: torch gives [5e19], the kernel [nan]. Ordinary draws "
      "are of scale 1 and the extreme ones scale x and y by at most 2**32 (d ~ 4e10, d*d ~ 2e21); a row reduction "
      "gets no spread draw Caught first by the nonfinite draw (an infinite difference: 0 * inf in the blend).", k)

k = golden("med/smooth_l1_rows")
loop = next(s for s in k["body"] if s.get("op") == "for")
i = loop["body"].index(find_let(loop["body"], "quadratic"))
loop["body"][i] = op("let", name="clipped", value=op("minimum", lhs="distance", rhs="beta"))
find_let(loop["body"], "linear")["value"] = op("sub", lhs="distance", rhs="clipped")
find_let(loop["body"], "loss")["value"] = op("add", lhs=op("div", lhs=op("mul", lhs=op("mul", lhs=0.5, rhs="clipped"), rhs="clipped"), rhs="beta"), rhs="linear")
write("smooth_l1_rows_clipped_huber_form_control", "med/smooth_l1_rows",
      "the branch-free Huber form c = min(d, beta), loss = 0.5 * c * c / beta + (d - c): equal to both branches, and "
      "finite wherever d is", k, outcome="ok")

# ---- easy/row_scale
k = golden("easy/row_scale")
body = k["body"]
vi = body.index(find_let(body, "v")); fi = body.index(find_let(body, "factor"))
fac = body.pop(fi); body.insert(vi, fac)
find_let(body, "v")["value"]["mask"] = op("and", lhs="mask", rhs=op("ne", lhs="factor", rhs=0.0))
write("row_scale_skips_reading_rows_scaled_by_zero", "easy/row_scale",
      "loads x only where the row's factor is nonzero (masked load, 0 elsewhere), saving the reads of rows scaled "
      "by zero: x * 0 is 0 for finite x, but torch's x * s[:, None] is NaN where x is inf or NaN. Input: x = [[inf, nan, 1]], "
      "s = [0]: torch gives [[nan, nan, 0]], the kernel [[0, 0, 0]]. row_scale's draws hold no NaN or infinity (no "
      "specials: extreme draws scale by 2**32 and put zeros in), so x * 0 is never non-finite", k)

# ---- round 2
k = golden("easy/pow")
k["body"][-1]["value"] = op("exp2", x=op("mul", lhs="e", rhs=op("log2", x="b")))
write("pow_exp2_of_e_log2_b_nan_at_ieee_specials", "easy/pow",
      "pow written as exp2(e * log2(b)), the textbook hand-written pow for positive bases: right for every finite "
      "exponent, but IEEE/C pow's exact cases are lost: pow(1, +-inf) = 1 and pow(1, nan) = 1 (log2(1) = 0, and 0 * inf "
      "is NaN), pow(+inf, 0) = 1 (0 * inf again). Input: base = [1, 1, inf], exponent = [inf, nan, 0]: torch gives "
      "[1, 1, 1], the kernel [nan, nan, nan]. pow's draws never hold a non-finite exponent (normal of scale 2, spread "
      "to 2**32) or an infinite base (uniform [0.1, 4] with finite specials)", k)

k = golden("easy/pow")
find_let(k["body"], "b")["value"] = op("maximum", lhs=find_let(k["body"], "b")["value"], rhs=0.0)
write("pow_clamps_base_at_zero_control", "easy/pow",
      "max(base, 0) before pow: the guard of the two clamping files with a bound that leaves every positive base "
      "(subnormals included) alone: correct", k, outcome="ok")

def row_scale_float_row(reciprocal):
    k = golden("easy/row_scale")
    k["params"].append({"name": "M"})
    q = op("mul", lhs=op("cast", x="offs", dtype="f32"), rhs=op("div", lhs=1.0, rhs=op("cast", x="N", dtype="f32"))) if reciprocal \
        else op("div", lhs=op("cast", x="offs", dtype="f32"), rhs=op("cast", x="N", dtype="f32"))
    find_let(k["body"], "row")["value"] = op("minimum", lhs=op("cast", x=q, dtype="i32"), rhs=op("sub", lhs="M", rhs=1))
    return k

write("row_scale_row_index_by_f32_division", "easy/row_scale",
      "finds each element's row as int(float(offs) / float(N)) (clamped to M - 1) instead of an integer division "
      "('idiv is slow on the GPU'): exact while offs < 2**24 (the quotient's rounding cannot reach the next integer), "
      "but float(offs) itself rounds past 2**24, so the last elements of some rows take the next row's factor. Input: "
      "M = N = 8192 (x = ones, s = arange(8192)): y[2048, 8191] is s[2049] = 2049, torch gives 2048 (10238 elements "
      "wrong); M = N = 4097: y[4095, 4096] takes s[4096] (1 wrong). The bench size 4096 x 4096 is exactly 2**24 elements, all right. CPU mode never "
      "draws M * N past its element budget (2**23 over x and y), and the kernel has no condition on its sizes for the "
      "crossing draws to find", row_scale_float_row(False))

write("row_scale_row_index_by_f32_reciprocal", "easy/row_scale",
      "finds each element's row as int(float(offs) * (1 / float(N))): the rounded reciprocal puts k * N just below k for "
      "many N, so a row's first element takes the previous row's factor. Input: N = 41, M = 3 (s = [1, 2, 3]): offs = 82 "
      "is row 2, the kernel reads row 1", row_scale_float_row(True))

# ---- round 3
k = golden("easy/softplus")
st = find_let(k["body"], "stable")
st["value"]["lhs"] = op("mul", lhs="v", rhs=op("cast", x=op("gt", lhs="v", rhs=0.0), dtype="f32"))
write("softplus_relu_as_x_times_mask_nan_at_minus_inf", "easy/softplus",
      "max(x, 0) written branch-free as x * float(x > 0): equal for every finite x, but -inf * 0 is NaN, so "
      "softplus(-inf), 0 in torch, is NaN. Input: x = [-inf, 1]: torch gives [0, 1.3133], the kernel [nan, 1.3133]. "
      "softplus's draws hold no infinity: normal of scale 10, extreme normal of scale 100, the spread draw up to 2**32", k)

k = golden("easy/softplus")
st = find_let(k["body"], "stable")
st["value"]["lhs"] = op("where", cond=op("gt", lhs="v", rhs=0.0), x="v", y=0.0)
write("softplus_relu_as_where_control", "easy/softplus",
      "max(x, 0) written as where(x > 0, x, 0): the same branch-free intent as the mask product, without 0 * inf: correct "
      "(softplus(-inf) = 0, NaN stays NaN through the outer where)", k, outcome="ok")

# ---- round 4
k = golden("expert/fp8_gemm_blockwise_bf16")
loop = next(s for s in k["body"] if s.get("op") == "for")
bs = find_let(loop["body"], "block_sum")
bs["value"] = op("cast", x=op("dot", lhs=op("cast", x="a_tile", dtype="f16"), rhs=op("trans", x=op("cast", x="w_tile", dtype="f16")), dtype="f16"), dtype="f32")
write("fp8_gemm_blockwise_bf16_block_dot_accumulated_in_f16", "expert/fp8_gemm_blockwise_bf16",
      "widens the fp8 tiles to f16 (exact) and takes each 128-deep block's dot with an f16 accumulator (the faster "
      "MMA), scaling the f16 block sums in f32 (the prompt: accumulate in f32): a block sum past 65504 is inf. e4m3 "
      "reaches 448 and per-block quantization (scale = block amax / 448) fills that range, so real blocks' dots reach "
      "1e5 and more. Input: M = NB = KB = 1, a = w = 32 everywhere, a_scale = w_scale = 0.5: torch gives 32768 in every "
      "output, the kernel inf (the block sum 131072); a and w uniform in [-448, 448] (M = 2, KB = 2, scales 0.05): every "
      "output inf or NaN. fp8 inputs are drawn normal of scale 1 (|a| < ~5) and the extreme draws scale only f16/bf16/f32/f64 "
      "inputs (magnitude.SCALES has no fp8), so no block sum leaves ~+-100. (On a GPU the f16 accumulator also rounds every "
      "step; the interpreter's f16 dot sums in f32 and rounds once)", k)

k = golden("expert/fp8_gemm_blockwise_bf16")
loop = next(s for s in k["body"] if s.get("op") == "for")
bs = find_let(loop["body"], "block_sum")
bs["value"] = op("dot", lhs=op("cast", x="a_tile", dtype="f16"), rhs=op("trans", x=op("cast", x="w_tile", dtype="f16")))
write("fp8_gemm_blockwise_bf16_block_dot_of_f16_tiles_in_f32_control", "expert/fp8_gemm_blockwise_bf16",
      "widens the fp8 tiles to f16 (exact: e4m3 fits f16) and takes the block dot with the default f32 accumulator: correct "
      "at every e4m3 value", k, outcome="ok")

k = golden("med/bce_logits_rows")
loop = next(s for s in k["body"] if s.get("op") == "for")
loss = find_let(loop["body"], "loss")
loss["value"]["lhs"]["lhs"] = op("mul", lhs=0.5, rhs=op("add", lhs="logits", rhs=op("abs", x="logits")))
write("bce_logits_rows_relu_as_half_of_x_plus_abs", "med/bce_logits_rows",
      "max(x, 0) written branch-free as 0.5 * (x + |x|): x + |x| overflows to inf once x > 1.7e38, where max(x, 0) is x. "
      "Input: x = [[2e38]], t = [[0.5]]: torch gives [1e38] (2e38 - 1e38 + log1p(0)), the kernel [inf]. Logits are "
      "drawn normal of scale 20 and 200 (the task's extreme domain, which replaces the scaled extreme draws), so no "
      "logit passes ~1000", k)

k = golden("hard/swiglu_mlp_f16")
g = next(s for s in k["body"] if s.get("op") == "let" and s.get("name") == "gated")
e = op("exp", x="gate_acc")
g["value"]["lhs"]["rhs"] = op("div", lhs=e, rhs=op("add", lhs=1.0, rhs=e))
write("swiglu_mlp_f16_sigmoid_as_exp_over_one_plus_exp", "hard/swiglu_mlp_f16",
      "sigmoid(g) as exp(g) / (1 + exp(g)) in f32: inf / inf is NaN once g > 88.7, where silu(g) is g. Input: M = N = K = 1, "
      "x = [[1]], w1 = [[100]], w3 = [[1]]: torch gives [[100]], the kernel [[nan]]", k)

# ---- round 5: boundaries (expected caught)
k = golden("easy/mish")
e2 = op("exp", x=op("mul", lhs=2.0, rhs="softplus"))
k["body"][-1]["value"] = op("mul", lhs="v", rhs=op("div", lhs=op("sub", lhs=e2, rhs=1.0), rhs=op("add", lhs=e2, rhs=1.0)))
write("mish_tanh_as_exp_ratio_nan_past_44", "easy/mish",
      "tanh(sp) as (exp(2 sp) - 1) / (exp(2 sp) + 1): inf / inf is NaN once sp > 44.4 (x > 44.4). Input: x = [50]: torch "
      "gives [50], the kernel [nan]", k)

k = golden("easy/hardsigmoid")
k["body"][-2]["value"] = op("add", lhs=op("div", lhs=op("sub", lhs=op("abs", x=op("add", lhs="v", rhs=3.0)), rhs=op("abs", x=op("sub", lhs="v", rhs=3.0))), rhs=12.0), rhs=0.5)
k["body"][-1]["value"] = "relu6"
write("hardsigmoid_branch_free_abs_form", "easy/hardsigmoid",
      "hardsigmoid branch-free as (|x + 3| - |x - 3|) / 12 + 0.5: exact algebra, but past |x| ~ 2**25 both x + 3 and x - 3 "
      "round to x and the result is 0.5. Input: x = [1e8, -1e8]: torch gives [1, 0], the kernel [0.5, 0.5]", k)

# ---- round 6
k = golden("hard/swiglu_mlp_f16")
g = next(s for s in k["body"] if s.get("op") == "let" and s.get("name") == "gated")
gi = k["body"].index(g)
k["body"][gi:gi] = [op("let", name="gate16", value=op("cast", x=op("cast", x="gate_acc", dtype="f16"), dtype="f32")),
                    op("let", name="up16", value=op("cast", x=op("cast", x="up_acc", dtype="f16"), dtype="f32"))]
g["value"] = op("mul", lhs=op("mul", lhs="gate16", rhs=op("sigmoid", x="gate16")), rhs="up16")
write("swiglu_mlp_f16_gate_and_up_rounded_to_f16", "hard/swiglu_mlp_f16",
      "rounds the f32 accumulators gate and up to f16 before the silu and the product (as the eager code's f16 matmuls do; "
      "the prompt: do not round gate or up to f16): a gate below -65504 becomes -inf and silu(-inf) = -inf * 0 is NaN, "
      "where torch's silu of the f32 gate is -0 and the output 0 (also one extra rounding everywhere, inside the f16 "
      "tolerance of 1e-2). Input: M = N = K = 1, x = [[256]], w1 = [[-512]], w3 = [[1]]: gate = -131072, up = 256: torch "
      "gives [[-0]], the kernel [[nan]]. x is normal of scale 1 and the weights of 1/8; the extreme draw's one scale is "
      "the largest at which the positive side's gate * up stays in f16, so no gate nears -65504", k)

# ---- round 7
k = golden("med/matvec")
loop = next(s for s in k["body"] if s.get("op") == "for")
xi = loop["body"].index(find_let(loop["body"], "x_chunk")); vi = loop["body"].index(find_let(loop["body"], "v_chunk"))
vs = loop["body"].pop(vi); loop["body"].insert(xi, vs)
find_let(loop["body"], "x_chunk")["value"]["mask"] = op("and", lhs="in_row", rhs=op("ne", lhs="v_chunk", rhs=0.0))
write("matvec_skips_columns_where_v_is_zero", "med/matvec",
      "loads x only in the columns where v is nonzero (a ReLU'd activation vector is half zeros: the masked-off loads "
      "are saved), taking 0 there: x * 0 is 0 for finite x, but torch's x @ v is NaN where a NaN or inf of x meets a zero "
      "of v. Input: x = [[nan, 1], [inf, 2]], v = [0, 1]: torch gives [nan, nan], the kernel [1, 2]. The extreme draws "
      "put zeros into v, but no draw of matvec holds a NaN or an infinity", k)
