"""Round 12 VALUES (numerics) candidates: python tools/redteam_round12/values/make.py [NAME ...]
(writes into tools/redteam_round12/values/). Each is a minimal edit of a task's golden."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
from redteam_candidates import Round, find_let, golden  # noqa: E402
from redteam_round4 import B, SUM, U, cast, full, let, where  # noqa: E402

ROUND = Round()
ROUND.out = Path(__file__).resolve().parent
kernel, write = ROUND.kernel, ROUND.write


# ---------------------------------------------------------------- shifted one-pass variance
def row_var_shifted(pivot):
    """row_var's loop replaced by sums of d = x - pivot and d^2 (pivot a literal), then
    m2 = S2 - S1^2 / N: the shifted-data formula, exact in algebra for any pivot."""
    g = golden("med/row_var")
    loop = g["body"][3]
    loop["carry"] = [{"name": "s1", "init": full(["BLOCK"]), "next": "new_s1"},
                     {"name": "s2", "init": full(["BLOCK"]), "next": "new_s2"}]
    loop["body"] = loop["body"][:3] + [
        let("d", where("in_row", B("sub", "chunk", pivot), 0.0)),
        let("new_s1", B("add", "s1", "d")),
        let("new_s2", {"op": "fma", "x": "d", "y": "d", "z": "s2"})]
    n = cast("N", "f32")
    g["body"] = g["body"][:4] + [
        let("t1", SUM("s1")),
        let("m2", B("sub", SUM("s2"), B("div", B("mul", "t1", "t1"), n))),
        let("degrees_of_freedom", cast(B("sub", "N", 1), "f32")),
        {"op": "store", "ptr": B("add", "out", "row"), "value": B("div", "m2", "degrees_of_freedom")}]
    return g


@kernel
def row_var_pivot_52():
    write("med/row_var", "pivot_52", "wrong_result",
          "unbiased variance by the shifted-data one-pass formula with a FIXED pivot K = 52: S1 = sum(x - 52), "
          "S2 = sum((x - 52)^2), var = (S2 - S1^2 / N) / (N - 1). Exact in algebra for any K, stable only while the "
          "row's mean is near 52 (the draws: uniform [50, 54], never offset because the domain is uniform); the prompt "
          "asks for accuracy on 'rows whose mean is large against their spread'. Input: x = 10000 + U(0, 1) "
          "(1 x 2048): torch var 0.0836, the kernel off by orders of magnitude (S2 ~ 2e11 cancels).",
          row_var_shifted(52.0))


@kernel
def row_var_one_pass():
    write("med/row_var", "one_pass", "wrong_result",
          "PROBE of the domain's ratio: var = (sum x^2 - (sum x)^2 / N) / (N - 1) in f32 (pivot 0), the formula the "
          "prompt forbids; the uniform [50, 54] domain gives mean / spread ~ 45, (c / s)^2 ~ 2000 ulps of cancellation.",
          row_var_shifted(0.0))


def col_var_shifted(pivot):
    g = golden("med/col_mean_var")
    body = g["launches"][0]["body"]
    loop = body[11]
    loop["carry"] = [{"name": "s1", "init": full(["BLOCK_M", "BLOCK_N"]), "next": "new_s1"},
                     {"name": "s2", "init": full(["BLOCK_M", "BLOCK_N"]), "next": "new_s2"}]
    loop["body"] = loop["body"][:3] + [
        let("d", where("tile_mask", B("sub", "tile", pivot), 0.0)),
        let("new_s1", B("add", "s1", "d")),
        let("new_s2", {"op": "fma", "x": "d", "y": "d", "z": "s2"})]
    tail = body[-3:]  # partial_offsets and the two stores
    g["launches"][0]["body"] = body[:12] + [
        let("t1", SUM("s1")),
        let("local_mean", B("add", pivot, B("div", "t1", "count"))),
        let("local_m2", B("sub", SUM("s2"), B("div", B("mul", "t1", "t1"), "count")))] + tail
    return g


@kernel
def col_mean_var_pivot_102():
    write("med/col_mean_var", "pivot_102", "wrong_result",
          "each split's column statistics by the shifted-data one-pass formula with a FIXED pivot K = 102 "
          "(S1 = sum(x - 102), S2 = sum((x - 102)^2), m2 = S2 - S1^2 / n), then the golden's exact merge: stable only "
          "for columns whose mean is near 102 (the draws: uniform [100, 104], never offset); the prompt says features "
          "may have a mean far from zero relative to their spread. Input: x = -5000 + U(0, 1) (256 x 4): torch var "
          "~0.083, the kernel off by orders of magnitude.", col_var_shifted(102.0))


@kernel
def col_mean_var_one_pass():
    write("med/col_mean_var", "one_pass", "wrong_result",
          "PROBE of the domain's ratio: per split E[x^2] - E[x]^2 in f32 (pivot 0), which the prompt forbids; "
          "the uniform [100, 104] domain gives mean / spread ~ 88.", col_var_shifted(0.0))


@kernel
def standardize_rows_pivot_5():
    g = golden("med/standardize_rows")
    loop = g["body"][6]
    find_let(loop["body"], "centered")["value"] = where("in_row", B("sub", "chunk", 5.0), 0.0)
    n = cast("N", "f32")
    shift = B("sub", "mean", 5.0)
    find_let(g["body"], "std")["value"] = U("sqrt", B("div", B("sub", SUM("partial_squares"),
                                                                 B("mul", n, B("mul", shift, shift))),
                                                      "degrees_of_freedom"))
    write("med/standardize_rows", "pivot_5", "wrong_result",
          "the squares' pass centred on a FIXED 5 instead of the row's mean, corrected as "
          "sum((x - 5)^2) - N (mean - 5)^2 (exact in algebra): stable for rows near 5 (the draws: uniform [-3, 13], "
          "never offset), cancels for a row far from 5, which the prompt allows (any f32 row). Input: "
          "x = 3000 + U(0, 1) (2 x 1024): torch out ~ +-1.7, the kernel's std is wrong (or NaN from sqrt of a negative).", g)


# ---------------------------------------------------------------- fixed scale instead of m
@kernel
def hypot_fixed_prescale():
    g = golden("easy/hypot")
    body = g["body"]
    k = 2.0 ** -80
    i = next(j for j, s in enumerate(body) if s.get("name") == "larger")
    body[i:] = [
        let("sx", B("mul", "abs_x", k)), let("sy", B("mul", "abs_y", k)),
        {"op": "store", "ptr": B("add", "out", "offs"),
         "value": B("mul", U("sqrt", {"op": "fma", "x": "sx", "y": "sx", "z": B("mul", "sy", "sy")}), 2.0 ** 80),
         "mask": "mask"}]
    write("easy/hypot", "fixed_prescale", "wrong_result",
          "hypot as 2^80 * sqrt((|x| 2^-80)^2 + (|y| 2^-80)^2): a FIXED scale chosen for the 1e20 magnitudes instead "
          "of the prompt's m = max(|x|, |y|): no overflow up to f32's max, but the squares underflow for "
          "|x|, |y| below ~1e5 (0 below ~45), and nothing in the prompt forbids ordinary magnitudes. The draws are "
          "normal of scale 1e20 (times up to 2^32), where |x| < 1e5 has probability ~1e-15. Input: x = [3, 3e4, 1e20], "
          "y = [4, 4e4, 1e20]: torch [5, 5e4, 1.414e20], the kernel [0, ~5e4 with a few bits, 1.414e20].", g)


# ---------------------------------------------------------------- one pivot for every row / column
FIRST = {"op": "load", "ptr": "x"}  # x[0, 0]: the tensor's first element instead of the row's


@kernel
def row_var_global_pivot():
    write("med/row_var", "global_pivot", "wrong_result",
          "the shifted-data one-pass variance (S1 = sum(x - p), S2 = sum((x - p)^2), var = (S2 - S1^2/N)/(N-1)) "
          "with the pivot p loaded from x (the tensor's first element, x[0, 0]) instead of x_row (the row's own "
          "first element): one missing offset. Every draw gives all rows one distribution (uniform [50, 54]; an "
          "offset draw would add one common c to all rows), so p lies within every row's spread; rows with "
          "different means (row 0 near 0, row 1 near 1e4) cancel. Input: x = [randn(2048), 1e4 + rand(2048)]: "
          "torch var [~1, 0.083], the kernel's second far off.", row_var_shifted(FIRST))


@kernel
def col_mean_var_global_pivot():
    write("med/col_mean_var", "global_pivot", "wrong_result",
          "each split's column statistics by the shifted-data one-pass formula with the pivot x[0, 0] for EVERY "
          "column (the golden-style pivot without '+ cols'): right while all columns share one mean (every draw: "
          "uniform [100, 104]), but the prompt's features 'may have a mean far from zero relative to their spread', "
          "each its own. Input: x[:, 0] = randn(256), x[:, 1] = 5000 + rand(256): torch var [~1, ~0.083], the "
          "kernel's second far off.", col_var_shifted(FIRST))


@kernel
def layernorm_stats_global_pivot():
    g = golden("hard/layernorm_stats")
    body = g["body"]
    loop = body[4]
    loop["carry"] = [{"name": "s1", "init": full(["BLOCK"]), "next": "new_s1"},
                     {"name": "s2", "init": full(["BLOCK"]), "next": "new_s2"}]
    loop["body"] = loop["body"][:3] + [
        let("d", where("in_row", B("sub", "chunk", "pivot"), 0.0)),
        let("new_s1", B("add", "s1", "d")),
        let("new_s2", {"op": "fma", "x": "d", "y": "d", "z": "s2"})]
    body[4:11] = [let("pivot", FIRST), loop, let("row_length", cast("N", "f32")), let("t1", SUM("s1")),
                  let("row_mean", B("add", "pivot", B("div", "t1", "row_length"))),
                  let("m2", B("sub", SUM("s2"), B("div", B("mul", "t1", "t1"), "row_length")))]
    write("hard/layernorm_stats", "global_pivot", "wrong_result",
          "one pass of shifted sums, S1 = sum(x - p), S2 = sum((x - p)^2), mean = p + S1/N, var = (S2 - S1^2/N)/N, "
          "with p = x[0, 0] for every row (the row's own first element is the stable choice): the offset draws add one "
          "common c to all rows and the extreme draws make every row uniform [50, 54], so p always lies within each "
          "row's spread; rows with different means (the usual case for activations) cancel. Input: x = "
          "[randn(1024), 1000 + 0.01 randn(1024)], weight 1, bias 0, eps 1e-5: torch rstd [~1, ~99.9], the kernel's "
          "second row wrong (var ~1e-4 lost in S2 ~ 1e9).", g)


@kernel
def batchnorm_forward_train_global_pivot():
    g = golden("expert/batchnorm_forward_train")
    first, combine = g["launches"][0]["body"], g["launches"][1]["body"]
    find_let(first, "pivot")["value"] = FIRST
    find_let(combine, "col_mean")["value"]["lhs"] = FIRST
    find_let(g["launches"][2]["body"], "pivot")["value"] = FIRST
    write("expert/batchnorm_forward_train", "global_pivot", "wrong_result",
          "the golden's shifted-data statistics (sums of x - p and (x - p)^2, var = E[(x-p)^2] - E[x-p]^2) with the "
          "pivot p = x[0, 0] for every channel instead of x[0, h]: '+ cols' dropped from three pointers. The draws give "
          "every channel one distribution (normal + a common offset, or the extreme uniform [1000, 1001]), so p lies "
          "within each channel's spread; channels with different means (the point of per-channel statistics) cancel. "
          "Input: R = 4096, x[:, 0] = randn, x[:, 1] = 1000 + 0.01 randn: torch var [~1, ~1e-4], the kernel's second "
          "far off (and y with it).", g)


# ---------------------------------------------------------------- log(exp(a)) for a: underflow never drawn
@kernel
def kl_div_rows_log_of_probability():
    g = golden("med/kl_div_rows")
    loop = g["body"][5]
    i = next(j for j, st in enumerate(loop["body"]) if st.get("name") == "term")
    loop["body"][i:i + 1] = [
        let("p_prob", U("exp", "p_chunk")),
        let("term", where("in_row", B("mul", "p_prob", B("sub", U("log", "p_prob"), "q_chunk")), 0.0))]
    write("med/kl_div_rows", "log_of_probability", "wrong_result",
          "each term as p * (log(p) - log_q) with p = exp(log_p), i.e. log_p recomputed as log(exp(log_p)): exact in "
          "algebra, but exp(log_p) underflows to 0 below log_p ~ -103.97 and log(0) = -inf, so the term is "
          "0 * -inf = NaN where torch gives exp(log_p) * (log_p - log_q) = 0 * finite = 0. The prompt's log_p is any "
          "target log-probability (a sharp target has entries far below -100); the draws keep log_p in [-6, 0] "
          "(only log_q has an extreme domain, and uniform domains are never magnified or offset). Input: "
          "log_p = [[-0.01, -150, -4.6]], log_q = [[-0.1, -2, -3]]: torch [0.07302], the kernel [nan].", g)


if __name__ == "__main__":
    ROUND.main(sys.argv[1:])
