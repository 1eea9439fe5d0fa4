"""Round 13 VALUES (numerics) candidates: python tools/redteam_round13/values/make.py [NAME ...]
(writes into tools/redteam_round13/values/). Each is a minimal edit of a task's golden."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
from redteam_candidates import Round, find_let, golden, loops  # noqa: E402
from redteam_round4 import B, SUM, U, cast, let, where  # noqa: E402

ROUND = Round()
ROUND.out = Path(__file__).resolve().parent
kernel, write = ROUND.kernel, ROUND.write


# ---------------------------------------------------------------- an eps floor on a SQUARED norm
@kernel
def normalize_rows_rsqrt_of_floored_square():
    g = golden("med/normalize_rows")
    find_let(g["body"], "inverse_norm")["value"] = U("rsqrt", B("maximum", SUM("partial_squares"), 1e-12))
    write("med/normalize_rows", "rsqrt_of_floored_square", "wrong_result",
          "x * rsqrt(max(sum x^2, 1e-12)): the prompt's floor 1e-12 applied to the SQUARED norm (it belongs on the "
          "norm, max(||x||, 1e-12); on the square it would be 1e-24), so every row of norm below 1e-6 is divided by "
          "1e-6 instead of its norm. Zero rows (the only small rows drawn: zero_rows) give 0 either way; the normal "
          "draws are magnified up, never down. Input: x = 1e-8 * [[3, 4]]: torch [0.6, 0.8], the kernel [0.03, 0.04].", g)


@kernel
def cosine_similarity_floored_squared_norms():
    g = golden("med/cosine_similarity")
    for n, s in (("x_norm", "partial_x_squares"), ("y_norm", "partial_y_squares")):
        find_let(g["body"], n)["value"] = U("sqrt", B("maximum", SUM(s), 1e-8))
    write("med/cosine_similarity", "floored_squared_norms", "wrong_result",
          "dot / (sqrt(max(||x||^2, 1e-8)) * sqrt(max(||y||^2, 1e-8))): the prompt's eps 1e-8 floors the SQUARED "
          "norms (it belongs on the norms; on the squares it would be 1e-16), so a row of norm below 1e-4 is "
          "divided by 1e-4 instead of its norm. Zero rows (zero_rows) give 0 either way, and no draw scales a row "
          "down. Input: x = [[1e-5, 0]], y = [[1, 0]]: torch 1.0, the kernel 0.1.", g)


# ---------------------------------------------------------------- ln 2 truncated, hidden by rtol * |out|
@kernel
def logsumexp_rows_ln2_truncated():
    g = golden("med/logsumexp_rows")
    store = g["body"][-1]
    store["value"]["rhs"] = B("mul", 0.693, U("log2", "row_sum"))
    write("med/logsumexp_rows", "ln2_truncated", "wrong_result",
          "out = max + 0.693 * log2(sum exp(x - max)): ln 2 truncated to 0.693 (relative error 2.1e-4), an absolute "
          "error of 1.5e-4 * log2(s). The draws (normal of scale 50, extreme 100, offset draws) give every row a "
          "maximum of tens to hundreds, so rtol * |out| (~1e-2) hides it; a row of values of order one, whose "
          "logsumexp is ~log N, does not. Input: x = zeros(1, 8192): torch 9.0109, the kernel 9.0090.", g)


@kernel
def log_softmax_rows_ln2_truncated():
    g = golden("med/log_softmax_rows")
    find_let(g["body"], "log_sum")["value"] = B("mul", 0.693, U("log2", "row_sum"))
    write("med/log_softmax_rows", "ln2_truncated", "wrong_result",
          "log_sum = 0.693 * log2(s), ln 2 truncated to 0.693: every output x - max - log s is off by "
          "1.5e-4 * log2(s), hidden by rtol * |out| wherever the outputs are large (rows of scale 60), not for the "
          "largest elements of a row of many comparable values (s ~ N). Input: x = zeros(1, 8192): torch -9.0109 "
          "everywhere, the kernel -9.0090.", g)


# ---------------------------------------------------------------- a fast path without the maximum
@kernel
def logsumexp_rows_unshifted_below_80():
    g = golden("med/logsumexp_rows")
    loop = loops(g["body"])[0]
    loop["carry"].append({"name": "raw_sum", "init": 0.0, "next": "new_raw_sum"})
    loop["body"].append(let("new_raw_sum", B("add", "raw_sum", SUM(U("exp", "chunk")))))
    store = g["body"][-1]
    store["value"] = where(B("lt", "row_max", 80.0), U("log", "raw_sum"), store["value"])
    write("med/logsumexp_rows", "unshifted_below_80", "wrong_result",
          "a 'fast path': while the row maximum is below 80 (exp cannot overflow) log(sum exp(x)) with no shift, "
          "else the golden's shifted form. Wrong where every exp(x) underflows (a row entirely below ~-88: "
          "subnormals, then log(0) = -inf) and where N exp(x) overflows (many values near 80). Input: "
          "x = [[-100, -100.5], [-120, -130]]: torch [-99.5259, -120.0000], the kernel [-99.5177 (subnormal sum, just "
          "inside rtol), -inf].", g)


# ---------------------------------------------------------------- sigmoid by the half-angle tanh
@kernel
def sigmoid_bf16_tanh_half_angle():
    g = golden("easy/sigmoid_bf16")
    store = g["body"][-1]
    store["value"]["x"] = B("add", 0.5, B("mul", 0.5, U("tanh", B("mul", 0.5, "v"))))
    write("easy/sigmoid_bf16", "tanh_half_angle", "wrong_result",
          "sigmoid(x) = 0.5 + 0.5 tanh(x / 2), exact in algebra: for x below ~-9 the sum 0.5 + 0.5 tanh cancels "
          "(tanh near -1 has ulp 6e-8), so sigmoid(-12) = 6.1e-6 comes out with a few bits and sigmoid(-20) = 2e-9 as "
          "0; bf16 outputs compare in steps, where 6.1e-6 holds 2^-8 relative steps. Input: x = [-12, -16, -20].", g)


# ---------------------------------------------------------------- a guard the prompt forbids
@kernel
def standardize_rows_std_floor():
    g = golden("med/standardize_rows")
    s = find_let(g["body"], "std")
    s["value"] = B("maximum", s["value"], 1e-6)
    write("med/standardize_rows", "std_floor", "wrong_result",
          "std = max(sqrt(m2 / (N - 1)), 1e-6): a 'safety' floor the prompt rules out ('unbiased, no eps'). A row "
          "of one element still gives NaN (maximum propagates the 0/0), so only rows whose spread is below 1e-6 "
          "differ: rows of tiny values (out should still be ~ +-1) and constant rows of N >= 2 (torch 0/0 = NaN, "
          "the kernel 0). The draws are uniform [-3, 13] (offset by large c), never scaled down, never constant. "
          "Input: x = 1e-8 * [[1, 2, 3, 4]]: torch [-1.16, -0.39, 0.39, 1.16], the kernel ~100 times smaller.", g)


# ---------------------------------------------------------------- an intermediate rounded to the output dtype
@kernel
def gemm_scale_residual_bf16_product_rounded_to_bf16():
    g = golden("hard/gemm_scale_residual_bf16")
    store = g["body"][-1]
    scaled = cast(B("mul", "acc", "alpha"), "bf16")
    store["value"] = cast(B("add", cast(scaled, "f32"), "residual_tile"), "bf16")
    write("hard/gemm_scale_residual_bf16", "product_rounded_to_bf16", "wrong_result",
          "alpha * (a @ b) rounded to bf16 before the residual is added (then rounded again at the store), where "
          "the prompt asks for the scale and the add in f32 and one rounding: off by up to half a bf16 step of "
          "alpha * acc, which is many steps of the output where the residual cancels it. The draws' residuals are "
          "standard normal (magnified with a and b), so alpha * acc and residual rarely cancel. Input: a = [[257]], "
          "b = [[1]], residual = [[-256]], alpha = 1: torch 1.0, the kernel 0 (257 rounds to 256 in bf16).", g)


# ---------------------------------------------------------------- a rearranged comparison
@kernel
def isclose_tolerance_subtracted():
    g = golden("easy/isclose")
    store = g["body"][-1]
    store["value"] = B("le", B("sub", "error", U("abs", B("mul", "rtol", "expected"))), "atol")
    write("easy/isclose", "tolerance_subtracted", "wrong_result",
          "|a - b| - rtol |b| <= atol, the prompt's |a - b| <= atol + rtol |b| rearranged: equal in algebra, but "
          "computed in f32 the two round differently, so elements within an ulp of the boundary flip. The "
          "output is a bool compared exactly; continuous draws put a, b that near the boundary rarely.", g)


# ---------------------------------------------------------------- a finite mask fill
@kernel
def masked_softmax_fill_minus_1e4():
    g = golden("med/masked_softmax")
    loop = loops(g["body"])[0]
    find_let(loop["body"], "scores")["value"]["y"] = -10000.0
    write("med/masked_softmax", "fill_minus_1e4", "wrong_result",
          "excluded elements filled with -10000 (the finite mask value of many attention codes) instead of -inf "
          "for the row maximum and sum; the outputs keep where(mask, p, 0), so fully masked rows still give 0. "
          "Wrong where every kept value lies below ~-10000 + ... : the maximum is then the fill's, every kept "
          "exp(x - mx) underflows and a masked element's exp(0) = 1 fills the sum. The draws are normal of scale "
          "100 (kept values never below -1000). Input: x = [[-20000, -20001, 0]], mask = [[1, 1, 0]]: torch "
          "[0.731, 0.269, 0], the kernel [0, 0, 0].", g)


if __name__ == "__main__":
    ROUND.main(sys.argv[1:])
