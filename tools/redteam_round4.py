"""Red-team round 4 candidates: wrong kernels (and controls) as minimal edits of goldens, as a
careless or cheating model would write them (thresholds on sizes, integer-valued draws, scalar
boundaries, narrow scalar ranges, non-finite values the operator drops). The catalogue files in
tests/redteam/ came from these.

Run from the repository root: ``python tools/redteam_round4.py [NAME ...] [--out DIR]`` (default
``redteam_candidates/``), then ``python tools/redteam_verdicts.py DIR/*.json``."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from redteam_candidates import Round, find_let, golden, loops  # noqa: E402 - the round-2 script's helpers

ROUND = Round()
kernel, write = ROUND.kernel, ROUND.write


def stores(body):
    found = []
    for s in body:
        if s.get("op") == "store":
            found.append(s)
        for key in ("body", "then", "else"):
            if isinstance(s.get(key), list):
                found += stores(s[key])
    return found


def B(op, lhs, rhs):
    return {"op": op, "lhs": lhs, "rhs": rhs}


def U(op, x):
    return {"op": op, "x": x}


def cast(x, dt):
    return {"op": "cast", "x": x, "dtype": dt}


def f32_via(x, dt):
    """x rounded to dt and back to f32 (an intermediate kept in a narrow dtype)."""
    return cast(cast(x, dt), "f32")


def full(shape, value=0.0):
    return {"op": "full", "shape": shape, "value": value, "dtype": "f32"}


def let(name, value):
    return {"op": "let", "name": name, "value": value}


def SUM(x, axis=0):
    return {"op": "sum", "x": x, "axis": axis}


def where(c, x, y):
    return {"op": "where", "cond": c, "x": x, "y": y}


# ============================================================================ batch 1

@kernel
def threshold_ge():
    g = golden("easy/threshold")
    stores(g["body"])[0]["value"]["cond"]["op"] = "ge"
    write("easy/threshold", "ge_not_gt", "wrong_result",
          "x >= threshold instead of x > threshold: the prompt says 'strictly greater: x == threshold gives value'. "
          "Input: x = [0.25], threshold = 0.25, value = -1.5: F.threshold gives -1.5, the kernel 0.25. x is drawn "
          "normal (scaled in extreme draws) and threshold uniform in [-1, 1]: an element equal to the threshold "
          "has probability ~0, so no draw has one", g)


@kernel
def count_positive_clamp_cast():
    g = golden("med/count_positive")
    s = find_let(g["body"], "is_positive")
    s["value"] = cast({"op": "clamp", "x": "chunk", "lo": 0.0, "hi": 1.0}, "i32")
    write("med/count_positive", "clamp_cast_truncates", "wrong_result",
          "counts with the branchless cast(clamp(x, 0, 1), i32): the cast truncates, so 0 < x < 1 counts 0. "
          "Input: x = [[0.5, -1.0]]: (x > 0).sum() = 1, the kernel 0. The domain is integers in [-2, 2] "
          "(ordinary and extreme draws; integer domains get no scaling and no inserted zeros), where clamp-then-"
          "truncate equals x > 0 exactly; the prompt says x is any f32 matrix", g)


@kernel
def top1_mask_relative_equality():
    g = golden("med/top1_mask")
    st = stores(g["body"])[0]
    st["value"] = B("le", U("abs", B("sub", "chunk", "row_max")), B("mul", 1e-5, U("abs", "row_max")))
    write("med/top1_mask", "relative_equality", "wrong_result",
          "marks elements 'close' to the row maximum (|x - max| <= 1e-5 |max|, a float-equality guard) instead of "
          "equal to it. Input: x = [[100.0, 100.0005]]: torch marks only the second, the kernel both. The domain "
          "is integers in [-3, 3] in every draw (and sorted draws keep integers): distinct values differ by >= 1, "
          "so relative closeness is equality on every drawn matrix", g)


@kernel
def row_argmax_bf16_compare():
    g = golden("med/row_argmax")
    s = find_let(g["body"], "chunk")
    s["value"] = cast(cast(s["value"], "bf16"), "f32")
    write("med/row_argmax", "compares_in_bf16", "wrong_result",
          "compares values rounded to bf16 (as a kernel packing a 16-bit key beside a 16-bit index into one i32 for "
          "a single max reduction does): values equal in bf16 tie and the first index wins. Input: x = [[1.0, "
          "1.001]]: torch.argmax gives 1, the kernel 0 (both round to 1.0 in bf16). The domain is integers in "
          "[-20, 20], exact in bf16, in every draw", g)


@kernel
def row_var_n1_zero():
    g = golden("med/row_var")
    s = find_let(g["body"], "degrees_of_freedom")
    s["value"] = cast(B("maximum", B("sub", "N", 1), 1), "f32")
    write("med/row_var", "one_element_rows_zero", "wrong_result",
          "divides by max(N - 1, 1) (a guard against N = 1): a row of one element gives 0 where the prompt and "
          "torch.var give 0 / 0 = NaN. Input: x of shape [3, 1]. Right for every N >= 2; whether any draw has "
          "N = 1 depends on hypothesis's edge draws and the small sizes of M's targeted draw", g)


@kernel
def row_sum_long_path_drops_tail():
    g = golden("med/row_sum")
    body = g["body"]
    i = body.index(loops(body)[0])
    body.insert(i, {"op": "let", "name": "stop_at", "value": {"op": "where", "cond": B("gt", "N", B("mul", "BLOCK", 4)),
                    "x": B("mul", B("idiv", "N", "BLOCK"), "BLOCK"), "y": "N"}})
    loops(body)[0]["stop"] = "stop_at"
    write("med/row_sum", "long_rows_whole_blocks_only", "wrong_result",
          "for rows longer than BLOCK * 4 = 4096 (a 'fast path' for long rows) the loop stops at the last whole "
          "block, (N idiv BLOCK) * BLOCK, dropping the N mod 1024 tail columns. Input: N = 5000 (any N in "
          "(4096, 8192) not a multiple of 1024; the task allows N up to 8192): the last 904 columns are not summed. "
          "The threshold is an expression of the meta BLOCK (not a literal or a loop bound), so block_extent sees "
          "1024: the past-extent draw is N in (1024, 4096), the sorted draws N in (2048, 4096), hypothesis draws "
          "N <= cpu_max 2500; only the range-maximum draw N = 8192 reaches the long path, and 8192 is a multiple "
          "of 1024", g)


# ============================================================================ batch 2

@kernel
def kl_div_rows_ratio_of_exps():
    g = golden("med/kl_div_rows")
    s = find_let(g["body"], "term")
    p = U("exp", "p_chunk")
    q = U("exp", "q_chunk")
    s["value"]["x"] = B("mul", p, U("log", B("div", p, q)))
    write("med/kl_div_rows", "ratio_of_exps", "wrong_result",
          "computes each term as p * log(p / q) with p = exp(log_p), q = exp(log_q), leaving log space: once "
          "log_q < -103.9 q underflows f32 to 0 and the term is inf (p / 0), and for log_p < -103.9 too it is "
          "0 * log(0 / 0) = NaN; F.kl_div(log_target=True) computes exp(t) * (t - x), finite. Input: log_q = "
          "[[-120.0, -0.1]], log_p = [[-1.0, -0.5]] (a model's log-softmax gives -120 to an unlikely class "
          "routinely): torch gives a finite value, the kernel inf. Both inputs are uniform in [-6, 0] in every draw "
          "(uniform domains are never scaled in extreme draws, and the task has no extreme_domains)", g)


@kernel
def softmax_f16_flush_small_probabilities():
    g = golden("med/softmax_f16")
    st = stores(g["body"])[0]
    st["value"]["x"] = {"op": "where", "cond": B("lt", "probabilities", 0.005), "x": 0.0, "y": "probabilities"}
    write("med/softmax_f16", "flushes_probabilities_below_0_005", "wrong_result",
          "writes 0 for every probability below 0.005 (a 'sparse softmax' shortcut): on a row of 1000 equal logits "
          "every output is 0 where softmax gives 0.001 each (the row sums to 0, not 1; log of any output is -inf). "
          "f16's tolerance has atol 1e-2, so any output below ~0.01 may be anything in [0, 0.01]: the kernel "
          "is never off by more than 0.005. The trivial_zeros check needs the whole output zero. Input: x = "
          "zeros([1, 1000], f16): torch 0.000999 everywhere, the kernel 0 everywhere -- caught only as all-zero; "
          "x = zeros([1,1000]) with x[0,0] = 8: torch [0.75, 0.00025, ...], the kernel [0.75, 0, ...], passes the "
          "tolerance though 999 of 1000 outputs are 100% wrong", g)


@kernel
def col_argmin_f16_compare():
    g = golden("med/col_argmin")
    s = find_let(g["body"], "tile")
    s["value"] = cast(cast(s["value"], "f16"), "f32")
    write("med/col_argmin", "compares_in_f16", "wrong_result",
          "compares the column's values rounded to f16 (a kernel that stages the tile in half precision to halve its "
          "shared memory): values equal in f16 tie and the first row wins. Input: x = [[1.0], [0.9999]] (2 x 1): "
          "torch.argmin(dim=0) gives 1, the kernel 0 (both round to 1.0 in f16); past 65504 values become inf. The "
          "domain is integers in [-10, 10], exact in f16, in every draw", g)


@kernel
def row_max_long_path_tail_reads_zero():
    g = golden("med/row_max")
    body = g["body"]
    i = body.index(loops(body)[0])
    body.insert(i, {"op": "let", "name": "tail_fill", "value": {"op": "where", "cond": B("gt", "N", B("shl", "BLOCK", 2)),
                    "x": 0.0, "y": "-inf"}})
    ld = find_let(loops(body)[0]["body"], "chunk")
    ld["value"]["other"] = "tail_fill"
    write("med/row_max", "long_rows_tail_reads_zero", "wrong_result",
          "for rows longer than BLOCK << 2 = 4096 the masked lanes of the last chunk read 0.0 instead of -inf (a "
          "'fast path' for long rows with a neutral element that is only neutral for sums): a row of more than 4096 "
          "elements, all negative, whose length is not a multiple of 1024 gets max 0. Input: x = -ones([1, 5000]) "
          "(log-probabilities, say): torch gives -1, the kernel 0. The threshold is a shift of the meta BLOCK, "
          "not a literal or loop bound, so block_extent sees 1024: the past-extent draw has N in (1024, 4096), "
          "sorted draws N in (2048, 4096), hypothesis draws N <= 2500; only the range maximum N = 8192 takes the "
          "long path, and it has no tail (and its rows, drawn normal, are never all negative anyway)", g)


@kernel
def mse_rows_long_path_float_threshold():
    g = golden("med/mse_rows")
    body = g["body"]
    i = body.index(loops(body)[0])
    body.insert(i, {"op": "let", "name": "stop_at", "value": {"op": "where", "cond": B("gt", cast("N", "f32"), 4096.0),
                    "x": B("mul", B("idiv", "N", "BLOCK"), "BLOCK"), "y": "N"}})
    loops(body)[0]["stop"] = "stop_at"
    write("med/mse_rows", "long_rows_float_threshold_drop_tail", "wrong_result",
          "for rows longer than 4096 (tested as float(N) > 4096.0) the loop stops at the last whole block and drops "
          "the N mod 1024 tail, yet divides by N. Input: x = ones([1, 5000]), y = zeros([1, 5000]): torch 1.0, "
          "the kernel 4096/5000 = 0.8192. block_extent collects integer literals only, not the float 4096.0, so "
          "the extent is BLOCK = 1024 and no draw except the range maximum (N = 8192, a multiple of 1024) takes "
          "the long path", g)


@kernel
def avgpool3x3_edge_count_two():
    g = golden("hard/avgpool3x3")
    body = g["body"]
    edge_c = B("or", B("eq", "cols", 0), B("eq", "cols", B("sub", "W", 1)))
    find_let(body, "count_c")["value"] = {"op": "where", "cond": edge_c, "x": 2, "y": 3}
    lp = loops(body)[0]
    edge_r = B("or", B("eq", "orow", 0), B("eq", "orow", B("sub", "H", 1)))
    find_let(lp["body"], "count_r")["value"] = {"op": "where", "cond": edge_r, "x": 2, "y": 3}
    write("hard/avgpool3x3", "edge_count_two", "wrong_result",
          "counts the window's rows (columns) as 2 on an edge and 3 inside: right for every image at least 2 "
          "pixels high and wide, wrong for an image 1 pixel high or wide (the prompt names it: 'fewer for images "
          "1 pixel wide'), where the count is 1. Input: x of shape [1, 1, 1, 5]: each output is divided by 2 * 3 "
          "instead of 1 * 3 (half the reference)", g)


@kernel
def row_argmax_first_block_with_scan():
    g = golden("med/row_argmax")
    body = g["body"]
    loops(body)[0]["stop"] = {"op": "minimum", "lhs": "N", "rhs": "BLOCK"}
    find_let(body, "lanes")["value"] = B("sub", {"op": "cumsum", "x": {"op": "full", "shape": ["BLOCK"], "value": 1, "dtype": "i32"}, "axis": 0}, 1)
    write("med/row_argmax", "first_block_only_lanes_by_cumsum", "wrong_result",
          "the catalogue's row_argmax_first_block_only (the chunk loop stops at minimum(N, BLOCK): only the first "
          "1024 columns are searched) with its lane indices written as cumsum(ones) - 1 instead of arange. "
          "targeted_draws (kernelgen/task/draws.py) gives no sorted draws to a kernel that has any scan "
          "('a running sum of sorted values cancels'), and the sorted draws are what catches a first-block "
          "argmax under the saturating integer domain [-20, 20]. Input: x = arange(2000.0)[None]: torch 1999, "
          "the kernel 1023", g)


@kernel
def top1_mask_first_block_with_scan():
    g = golden("med/top1_mask")
    body = g["body"]
    loops(body)[0]["stop"] = {"op": "minimum", "lhs": "N", "rhs": "BLOCK"}
    find_let(body, "lanes")["value"] = B("sub", {"op": "cumsum", "x": {"op": "full", "shape": ["BLOCK"], "value": 1, "dtype": "i32"}, "axis": 0}, 1)
    write("med/top1_mask", "first_block_max_lanes_by_cumsum", "wrong_result",
          "the catalogue's top1_mask_first_block_max (the max loop stops at minimum(N, BLOCK)) with lanes = "
          "cumsum(ones) - 1: a kernel with a scan gets no sorted draws, and the integer domain [-3, 3] puts a 3 "
          "in the first block of every long row. Input: x = arange(2000.0)[None]: torch marks column 1999 only, "
          "the kernel marks column 1023 (the first block's maximum) and nothing else", g)

# ---- controls

@kernel
def row_sum_long_path_masked_tail_control():
    g = golden("med/row_sum")
    body = g["body"]
    i = body.index(loops(body)[0])
    body.insert(i, {"op": "let", "name": "stop_at", "value": {"op": "where", "cond": B("gt", "N", B("mul", "BLOCK", 4)),
                    "x": B("mul", B("idiv", "N", "BLOCK"), "BLOCK"), "y": "N"}})
    loops(body)[0]["stop"] = "stop_at"
    tail = {"op": "let", "name": "tail_cols", "value": B("add", "stop_at", "lanes")}
    tail2 = {"op": "let", "name": "tail", "value": {"op": "load", "ptr": B("add", "x_row", "tail_cols"),
             "mask": B("lt", "tail_cols", "N"), "other": 0.0}}
    st = stores(body)[0]
    body.insert(body.index(st), tail)
    body.insert(body.index(st), tail2)
    st["value"] = B("add", {"op": "sum", "x": "partial_sums", "axis": 0}, {"op": "sum", "x": "tail", "axis": 0})
    write("med/row_sum", "long_path_masked_tail_control", "ok",
          "CONTROL (correct): row_sum_long_rows_whole_blocks_only with the tail it drops added back: the loop "
          "covers whole blocks up to stop_at (all of N for short rows), then one masked load of the columns "
          "from stop_at (all masked off when stop_at = N) is summed in", g)


@kernel
def count_positive_ceil_clamp_control():
    g = golden("med/count_positive")
    s = find_let(g["body"], "is_positive")
    s["value"] = cast({"op": "clamp", "x": U("ceil", "chunk"), "lo": 0.0, "hi": 1.0}, "i32")
    write("med/count_positive", "ceil_clamp_cast_control", "ok",
          "CONTROL (correct): count_positive_clamp_cast_truncates with ceil before the clamp: ceil(x) >= 1 exactly "
          "when x > 0 (0 < x < 1 gives 1; -0.0, 0.0 and -1 < x < 0 give (-)0), so clamp to [0, 1] and the "
          "truncating cast give 1 for positives and 0 otherwise", g)


@kernel
def top1_mask_ge_control():
    g = golden("med/top1_mask")
    st = stores(g["body"])[0]
    st["value"]["op"] = "ge"
    write("med/top1_mask", "ge_row_max_control", "ok",
          "CONTROL (correct): marks x >= row max instead of x == row max: nothing exceeds the maximum, so the two "
          "agree on every finite input", g)


@kernel
def threshold_difference_sign_control():
    g = golden("easy/threshold")
    c = stores(g["body"])[0]["value"]["cond"]
    c["lhs"] = B("sub", "v", "threshold")
    c["rhs"] = 0.0
    write("easy/threshold", "difference_sign_control", "ok",
          "CONTROL (correct): tests x - threshold <= 0 instead of x <= threshold: with gradual underflow x - t is 0 "
          "only where x == t, so the comparison is the same (NaN: false either way, and x stays NaN)", g)


# ============================================================================ batch 3

@kernel
def where_arithmetic_blend():
    g = golden("easy/where")
    st = stores(g["body"])[0]
    st["value"] = B("add", "b", B("mul", cast("take_x", "f32"), B("sub", "a", "b")))
    write("easy/where", "arithmetic_blend", "wrong_result",
          "a branchless select y + float(cond) * (x - y) instead of torch.where: exact while x and y are of like "
          "magnitude, but x - y rounds away x when |y| >> |x| (cond true, x = 1.0, y = 1e8: 1e8 + (1 - 1e8) = 0, "
          "torch gives 1.0), and an inf or NaN in the unselected input poisons the result (cond false, x = inf: "
          "y + 0 * inf = NaN; torch.where is the standard way to mask out infs). Input: cond = [True, False], x = "
          "[1.0, inf], y = [1e8, 2.0]. x and y are both standard normal (extreme draws scale both by the same "
          "power of two), never far apart in magnitude and never infinite", g)


@kernel
def masked_fill_arithmetic_blend():
    g = golden("easy/masked_fill")
    st = stores(g["body"])[0]
    m = cast("fill", "f32")
    st["value"] = B("add", B("mul", "v", B("sub", 1.0, m)), B("mul", "value", m))
    write("easy/masked_fill", "arithmetic_blend", "wrong_result",
          "fills by arithmetic, x * (1 - m) + value * m: right for finite x, but masked_fill's commonest use is to "
          "replace infinities and NaNs (x.masked_fill(~torch.isfinite(x), 0), a -inf attention mask), and a "
          "masked inf or NaN gives inf * 0 = NaN instead of value. Input: x = [inf, nan, 1.0], mask = [True, True, "
          "False], value = 0.0: torch [0, 0, 1], the kernel [nan, nan, 1]. x is normal without specials (and the "
          "task has no extreme_domains), so no draw has a non-finite element", g)


@kernel
def leaky_relu_maximum_trick():
    g = golden("easy/leaky_relu")
    st = stores(g["body"])[0]
    st["value"] = B("maximum", "v", B("mul", "v", "negative_slope"))
    write("easy/leaky_relu", "maximum_trick", "wrong_result",
          "y = maximum(x, slope * x), the well-known branchless form that equals leaky_relu only for slope <= 1: "
          "for slope > 1 it returns slope * x on positives and x on negatives. Input: x = [-1.0, 2.0], "
          "negative_slope = 1.5: torch gives [-1.5, 2.0], the kernel [-1.0, 3.0]. The prompt and "
          "F.leaky_relu accept any slope; scalar_ranges draws it only in [0.01, 0.6]", g)


@kernel
def row_any_above_bf16_compare():
    g = golden("med/row_any_above")
    s = find_let(g["body"], "above")
    s["value"]["x"]["lhs"] = cast("chunk", "bf16")
    s["value"]["x"]["rhs"] = cast("threshold", "bf16")
    write("med/row_any_above", "compares_in_bf16", "wrong_result",
          "compares x and the threshold after rounding both to bf16 (half the register traffic): an element just "
          "above the threshold rounds onto it and does not count. Input: x = [[2.001]], threshold = 2.0: torch "
          "True, the kernel False. x is integers in [-3, 3] and thresholds come from {-2, -0.5, 0, 1, 1.5, 2, "
          "2.5}, all exact in bf16 and at least 0.5 apart", g)


@kernel
def f32_to_f16_flushes_subnormals():
    g = golden("easy/f32_to_f16")
    st = stores(g["body"])[0]
    st["value"]["x"] = {"op": "where", "cond": B("lt", U("abs", "v"), 6.103515625e-05), "x": B("mul", "v", 0.0), "y": "v"}
    write("easy/f32_to_f16", "flushes_subnormals", "wrong_result",
          "flushes results below f16's smallest normal (2**-14 = 6.1e-5) to (signed) zero, as a hand-written "
          "conversion that re-biases the exponent (or an FTZ mode) does, instead of rounding to an f16 subnormal. "
          "Input: x = [1e-5, -3e-6]: torch gives [1.0014e-05, -2.9802e-06], the kernel [0, -0]; the tolerance is "
          "exact (rtol = atol = 0). x is normal of scale 30000 (extreme draws scale it up further): |x| < 6.1e-5 "
          "has probability ~2e-9 per element, and inserted zeros convert to zero either way", g)

# ---- controls

@kernel
def bitwise_select_xor_form_control():
    g = golden("easy/bitwise_select")
    st = stores(g["body"])[0]
    st["value"] = B("xor", "from_b", B("and", B("xor", "from_a", "from_b"), "selector"))
    write("easy/bitwise_select", "xor_form_control", "ok",
          "CONTROL (correct): b ^ ((a ^ b) & m), the classic three-operation bit blend: a bit where m is 1 gives "
          "b ^ a ^ b = a, where m is 0 gives b; equal to (a & m) | (b & ~m) for every i32", g)


@kernel
def majority3_xor_form_control():
    g = golden("easy/majority3")
    st = stores(g["body"])[0]
    st["value"] = B("or", B("and", "va", "vb"), B("and", "vc", B("xor", "va", "vb")))
    write("easy/majority3", "xor_form_control", "ok",
          "CONTROL (correct): (a and b) or (c and (a xor b)): when a and b agree the vote is theirs, when they "
          "differ c decides; the same truth table as the prompt's", g)


@kernel
def frac_fmod_control():
    g = golden("easy/frac")
    st = stores(g["body"])[0]
    st["value"] = B("rem", "v", 1.0)
    write("easy/frac", "fmod_control", "ok",
          "CONTROL (correct): frac(x) as C fmod(x, 1.0) (the language's float rem, exact): the remainder of a "
          "truncating division keeps x's sign, so it equals x - trunc(x) for every finite x", g)


@kernel
def f32_to_f16_via_f64_control():
    g = golden("easy/f32_to_f16")
    st = stores(g["body"])[0]
    st["value"]["x"] = cast("v", "f64")
    write("easy/f32_to_f16", "via_f64_control", "ok",
          "CONTROL (correct): widens to f64 before the cast to f16; the language rounds f64 to f16 through f32, "
          "and an f32 value widened to f64 comes back to f32 exactly, so the result is rounded once", g)


# ============================================================================ batch 4

@kernel
def elu_docs_formula():
    g = golden("easy/elu")
    st = stores(g["body"])[0]
    st["value"] = B("add", B("maximum", "v", 0.0), B("minimum", 0.0, "negative_part"))
    write("easy/elu", "max_plus_min_formula", "wrong_result",
          "y = max(0, x) + min(0, alpha * (exp(x) - 1)), the formula of PyTorch's ELU documentation, which equals "
          "the piecewise definition (the prompt's, and F.elu's kernel) only for alpha >= 0: with a negative alpha "
          "the negative branch is positive and min(0, .) drops it. Input: x = [-1.0], alpha = -0.5: F.elu gives "
          "0.316, the kernel 0. scalar_ranges draws alpha only in [0.1, 2.0]; F.elu accepts any alpha", g)


@kernel
def isclose_strict():
    g = golden("easy/isclose")
    stores(g["body"])[0]["value"]["op"] = "lt"
    write("easy/isclose", "strict_less", "wrong_result",
          "|a - b| < atol + rtol * |b| instead of <= (the prompt's and torch.isclose's): an error exactly at the "
          "bound is judged not close. Input: a = [1.75], b = [1.0], rtol = 0.25, atol = 0.5: torch True, the "
          "kernel False; likewise any a == b with atol = rtol = 0 (isclose(x, x, 0, 0) is True, the kernel "
          "False). a, b are continuous normal draws and rtol, atol continuous uniform draws, so an error exactly "
          "equal to the bound never occurs", g)


@kernel
def center_rows_long_path_padded_mean():
    g = golden("med/center_rows")
    body = g["body"]
    mean = find_let(body, "mean")
    padded = B("mul", {"op": "cdiv", "lhs": "N", "rhs": "BLOCK"}, "BLOCK")
    denom = {"op": "where", "cond": B("gt", {"op": "cdiv", "lhs": "N", "rhs": "BLOCK"}, 4), "x": padded, "y": "N"}
    mean["value"]["rhs"] = cast(denom, "f32")
    write("med/center_rows", "long_rows_mean_over_padded_length", "wrong_result",
          "for rows of more than 4 chunks (cdiv(N, BLOCK) > 4, i.e. N > 4096) divides the row sum by the padded "
          "length cdiv(N, 1024) * 1024 instead of N. Input: x = 4 * ones([1, 5000]): torch gives zeros, the kernel "
          "4 - 4 * 5000/5120 = 0.094. The threshold is on a chunk count (literal 4), so block_extent sees "
          "1024: past-extent draws N in (1024, 4096), sorted draws N in (2048, 4096), hypothesis N <= 2500; the "
          "range maximum N = 8192 takes the path but pads nothing", g)

# ---- controls

@kernel
def softshrink_clamp_difference_control():
    g = golden("easy/softshrink")
    st = stores(g["body"])[0]
    st["value"] = B("sub", "v", {"op": "clamp", "x": "v", "lo": U("neg", "lambd"), "hi": "lambd"})
    write("easy/softshrink", "clamp_difference_control", "ok",
          "CONTROL (correct): softshrink(x) = x - clamp(x, -lambd, lambd): beyond the band x - (+-lambd), inside it "
          "x - x = 0; for lambd >= 0 (the prompt's promise) the same as the piecewise form", g)


@kernel
def prelu_channels_max_min_control():
    g = golden("med/prelu_channels")
    st = stores(g["body"])[0]
    st["value"] = B("add", B("maximum", "v", 0.0), B("mul", "slope", B("minimum", "v", 0.0)))
    write("med/prelu_channels", "max_plus_slope_min_control", "ok",
          "CONTROL (correct): y = max(x, 0) + w * min(x, 0): for x > 0 x + w * 0, otherwise 0 + w * x; right for "
          "every slope, negative or above 1 (unlike maximum(x, w * x))", g)


@kernel
def row_range_min_as_negated_max_control():
    g = golden("med/row_range")
    body = g["body"]
    find_let(body, "row_min")["value"] = U("neg", {"op": "max", "x": U("neg", "lane_min"), "axis": 0})
    write("med/row_range", "min_as_negated_max_control", "ok",
          "CONTROL (correct): the row minimum reduced as -max(-lane_min): negation is exact, so the same value", g)

# (new kernels above)
if __name__ == "__main__":
    ROUND.main(sys.argv[1:])
