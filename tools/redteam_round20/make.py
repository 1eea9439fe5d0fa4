"""Round 20 candidates: wrong paths behind size thresholds the crossing draws cannot see.

Run from the repository root: ``.venv/bin/python tools/redteam_round20/make.py [NAME ...]`` writes
NAME.json into tools/redteam_round20/ (every candidate without names). Each is a minimal edit of a
task's golden (bench/<tier>/<task>.yaml). ``DEMO[name]`` is an allowed size assignment where a
wrong kernel is wrong (demo.py verifies it there), ``WRONG[name]`` the sizes where its wrong path
is taken (reach.py says whether any of today's CPU draws takes it). Controls end in ``_control``.
"""
import copy
import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent

CANDIDATES = {}
DEMO = {}
WRONG = {}


def golden(task):
    return copy.deepcopy(yaml.safe_load((ROOT / "bench" / f"{task}.yaml").read_text())["golden"])


def B(op, lhs, rhs):
    return {"op": op, "lhs": lhs, "rhs": rhs}


def U(op, x):
    return {"op": op, "x": x}


def f32(x):
    return {"op": "cast", "x": x, "dtype": "f32"}


def where(c, x, y):
    return {"op": "where", "cond": c, "x": x, "y": y}


def let(name, value):
    return {"op": "let", "name": name, "value": value}


def find(body, pred, found=None):
    found = [] if found is None else found
    for s in body:
        if pred(s):
            found.append(s)
        for key in ("body", "then", "else"):
            if isinstance(s.get(key), list):
                find(s[key], pred, found)
    return found


def find_let(body, name):
    return find(body, lambda s: s.get("op") == "let" and s.get("name") == name)[0]


def candidate(task, outcome, demo=None, wrong=None):
    def register(fn):
        name = fn.__name__
        CANDIDATES[name] = (task, outcome, fn)
        if demo is not None:
            DEMO[name] = demo
        if wrong is not None:
            WRONG[name] = wrong
        return fn
    return register


# ------------------------------------------------------------------ med/row_sum (M, N <= 8192)
BIG = 1 << 20


def row_sum_dropping_tail(cond, params=()):
    """The golden with its loop to the last full block of the row where ``cond`` holds (a 'large
    input' fast path that drops the partial tail); ``params``: extra params."""
    g = golden("med/row_sum")
    g["params"] += [{"name": "M"}, *params]
    loop = find(g["body"], lambda s: s.get("op") == "for")[0]
    loop["stop"] = where(cond, B("sub", "N", B("rem", "N", "BLOCK")), "N")
    return g


MN = B("mul", "M", "N")
THE_TAIL = ("the loop runs to the last full block of 1024 (N - N % 1024) instead of N, dropping each row's partial "
            "tail")


@candidate("med/row_sum", "wrong_result", {"M": 1200, "N": 1200}, lambda s: BIG < s["M"] * s["N"] < 2 * BIG)
def row_sum_product_window():
    """Wrong only while 2**20 < M*N < 2**21: both comparisons are crossings, and each crossing draw
    lands 1.5 to 2 times past its own threshold in each size, 2.25 to 4 times in the product: past
    the window's top for both."""
    cond = B("and", B("gt", MN, BIG), B("lt", MN, 2 * BIG))
    return row_sum_dropping_tail(cond), (
        f"where 2**20 < M*N < 2**21 (a 'mid-size' path) {THE_TAIL}. The two comparisons are crossings; each "
        "crossing draw puts M = N 1.5 to 2 times past the size where its comparison flips, so M*N is 2.25 to 4 "
        "times the threshold: past 2**21 for both, never inside the window; the other draws keep M*N below 2**19. "
        "Wrong at M = N = 1200 (M*N = 1440000): each row sum misses its last 176 elements.")


@candidate("med/row_sum", "wrong_result", {"M": 1100, "N": 1100}, lambda s: s["M"] * s["N"] > BIG)
def row_sum_numel_param():
    cond = B("gt", "total", BIG)
    return row_sum_dropping_tail(cond, [{"name": "total", "value": {"op": "numel", "of": "x"}}]), (
        f"a param total = numel(x) (the host's element count, M*N) tested against 2**20: past it {THE_TAIL}. "
        "size_crossings reads a param's host expression but counts numel (TensorInfo) as an unknown name ('?'), "
        "so the comparison is no crossing; size_thresholds takes 2**20 as a threshold of one size (beyond the "
        "range: the extent), and no draw has M*N past 2**19. Wrong at M = N = 1100: rows miss their last 76 "
        "elements.")


@candidate("med/row_sum", "wrong_result", {"M": 1100, "N": 1100}, lambda s: s["M"] * s["N"] > BIG)
def row_sum_sqrt_of_product():
    cond = B("gt", U("sqrt", B("mul", f32("M"), f32("N"))), 1024.0)
    return row_sum_dropping_tail(cond), (
        f"where sqrt(float(M) * float(N)) > 1024 (M*N > 2**20) {THE_TAIL}. A unary op in the compared "
        "expression makes it no crossing (_operands counts the sqrt as an unknown name) and size_thresholds "
        "takes 1024 itself as the threshold (not undone through sqrt): the extent stays 1024 and no draw has "
        "M*N > 2**20. Wrong at M = N = 1100.")


@candidate("med/row_sum", "wrong_result", {"M": 1100, "N": 1100}, lambda s: s["M"] * s["N"] > BIG)
def row_sum_log2_sum():
    cond = B("gt", B("add", U("log2", f32("M")), U("log2", f32("N"))), 20.0)
    return row_sum_dropping_tail(cond), (
        f"where log2(M) + log2(N) > 20 (M*N > 2**20) {THE_TAIL}. log2 hides both sizes from size_crossings and "
        "the threshold 20 is read as 20. Wrong at M = N = 1100.")


@candidate("med/row_sum", "wrong_result", {"M": 1100, "N": 1100}, lambda s: s["M"] * s["N"] >= BIG)
def row_sum_shr_ne_zero():
    cond = B("ne", B("shr", MN, 20), 0)
    return row_sum_dropping_tail(cond), (
        f"where (M*N) >> 20 != 0 (M*N >= 2**20) {THE_TAIL}. An eq/ne comparison is no crossing (only lt, le, gt, "
        "ge, minimum, maximum are), and size_equalities undoes it to M*N == 0, below 1, and drops it. Wrong at "
        "M = N = 1100.")


@candidate("med/row_sum", "wrong_result", {"M": 1100, "N": 1100}, lambda s: s["M"] * s["N"] >= BIG)
def row_sum_bitand_mask():
    cond = B("gt", B("and", MN, -BIG), 0)
    return row_sum_dropping_tail(cond), (
        f"where (M*N) & -2**20 > 0 (M*N >= 2**20) {THE_TAIL}. The comparison is a crossing of M and N, but "
        "_fixed_value folds no bitwise and, so the crossing's value is None at every size and it gets no draw; "
        "size_thresholds' threshold is 0. Wrong at M = N = 1100.")


@candidate("med/row_sum", "wrong_result", {"M": 1100, "N": 1100}, lambda s: s["M"] * s["N"] > BIG)
def row_sum_pow_half():
    cond = B("gt", B("pow", f32(MN), 0.5), 1024.0)
    return row_sum_dropping_tail(cond), (
        f"where pow(float(M*N), 0.5) > 1024 (M*N > 2**20) {THE_TAIL}. pow is not among _fixed_value's ops: the "
        "crossing is found but never evaluates, so it gets no draw. Wrong at M = N = 1100.")


@candidate("med/row_sum", "wrong_result", {"M": 2500, "N": 1100},
           lambda s: s["M"] > 2 * s["N"] and s["N"] > 1024)
def row_sum_tall_unequal():
    cond = B("and", B("gt", "M", B("mul", "N", 2)), B("gt", "N", 1024))
    return row_sum_dropping_tail(cond), (
        f"where M > 2N and N > 1024 (a 'tall matrix' path) {THE_TAIL}. The crossing of N > 1024 draws N past it "
        "with M at its minimum; the ordering draws of (M, N) put M just 1025 past N with both near 250 (the "
        "joint budget); the draws past the extent make one size large and the other small. None has both M "
        "> 2N and N > 1024. Wrong at M = 2500, N = 1100.")


@candidate("med/row_sum", "wrong_result", {"M": 3, "N": 5500}, lambda s: 5000 < s["N"] < 6000)
def row_sum_n_window():
    cond = B("and", B("gt", "N", 5000), B("lt", "N", 6000))
    return row_sum_dropping_tail(cond), (
        f"where 5000 < N < 6000 (a band of row lengths) {THE_TAIL}. Both thresholds are seen, and that is the "
        "trouble: the extent becomes 6000, so the draws past it start past 6000 (clamped to 8192), the sorted "
        "draws (past twice the extent) sit at the range's top, the range-maximum draws are 8192 and 8191, the "
        "crossing draws 1.5 to 2 times past each threshold (7500+ and 8192): none inside (5000, 6000); the "
        "hypothesis draws stop at cpu_max 2500. Wrong at M = 3, N = 5500.")


@candidate("med/row_sum", "wrong_result", {"M": 1100, "N": 1100}, lambda s: s["M"] * s["N"] > BIG)
def row_sum_decoys_then_product():
    g = row_sum_dropping_tail(B("gt", MN, BIG))
    # twelve range asserts first (M, N below 65536 + i: never false in the ranges), folded into the loop's stop
    decoys = None
    for i in range(12):
        c = B("lt", "M" if i % 2 else "N", 65536 + i)
        decoys = c if decoys is None else B("and", decoys, c)
    # after the loop in the body: size_crossings walks the body from its last statement up
    store = g["body"].pop()
    g["body"].append(let("sane", decoys))
    g["body"].append({**store, "value": where("sane", store["value"], 0.0)})
    return g, (
        f"where M*N > 2**20 {THE_TAIL}; after the loop, twelve comparisons M < 65536 + i / N < 65536 + i (range "
        "asserts, true at every allowed size; false would store 0), which size_crossings meets first (nodes() "
        "walks a body from its last statement). crossing_draws takes the first "
        "CROSSINGS = 12 comparisons and skips those that never flip in range: the thirteenth, the real one, gets "
        "no draw. Wrong at M = N = 1100.")


@candidate("med/row_sum", "wrong_result", {"M": 1100, "N": 1100}, lambda s: s["M"] * s["N"] > BIG)
def row_sum_where_wrapped_product():
    cond = B("gt", where(B("gt", "M", 0), MN, 0), BIG)
    return row_sum_dropping_tail(cond), (
        f"where (M > 0 ? M*N : 0) > 2**20 {THE_TAIL}. A where in the compared expression is no arithmetic "
        "(_operands: '?'), so no crossing; _undone stops at it and reads 2**20 as one size's threshold. Wrong at "
        "M = N = 1100.")


@candidate("med/row_sum", "wrong_result", {"M": 1025, "N": 1100},
           lambda s: s["M"] * s["N"] > BIG and s["M"] % 2 == 1)
def row_sum_two_rows_per_program_numel():
    g = golden("med/row_sum")
    pair = where(B("gt", {"op": "numel", "of": "x"}, BIG), 2, 1)
    g["grid"] = [B("idiv", "M", pair)]
    g["params"] += [{"name": "rows_per", "value": pair}, {"name": "M"}]
    loop = find(g["body"], lambda s: s.get("op") == "for")[0]
    store = g["body"][-1]
    g["body"] = [s for s in g["body"] if s is not loop and s is not store and s.get("name") not in ("row", "x_row")]
    inner = copy.deepcopy(loop)
    g["body"].append({"op": "for", "var": "r", "stop": "rows_per", "step": 1, "body": [
        let("row", B("add", B("mul", {"op": "program_id"}, "rows_per"), "r")),
        let("x_row", B("add", "x", B("mul", "row", "N"))),
        inner, {**store, "mask": B("lt", "row", "M")}]})
    return g, (
        "past numel(x) > 2**20 each program sums two rows, on a grid of M // 2 programs (host: idiv(M, where("
        "numel(x) > 2**20, 2, 1))): an odd M leaves its last row unwritten. The comparison sits in the grid and "
        "a param, reads numel (no crossing), and the draws keep M*N below 2**19. Wrong at M = 1025, N = 1100: "
        "out[1024] is never stored.")


@candidate("med/row_sum", "ok")
def row_sum_product_path_control():
    """Past M*N > 2**20 (a crossing it sees) the row is summed chunk by chunk into a scalar: both right."""
    g = golden("med/row_sum")
    g["params"].append({"name": "M"})
    loop = find(g["body"], lambda s: s.get("op") == "for")[0]
    store = g["body"][-1]
    scalar = copy.deepcopy(loop)
    scalar["carry"] = [{"name": "acc", "init": 0.0, "next": "acc2"}]
    scalar["body"][-1] = let("acc2", B("add", "acc", {"op": "sum", "x": "chunk", "axis": 0}))
    i = g["body"].index(loop)
    g["body"][i:] = [{"op": "if", "cond": B("gt", MN, BIG),
                      "then": [scalar, {"op": "store", "ptr": store["ptr"], "value": "acc"}],
                      "else": [loop, store]}]
    return g, ("control: past M*N > 2**20 each row is summed chunk by chunk into a scalar (a sum per block "
               "added up), else the golden's lane-wise partial sums; both are the row sum within the tolerance.")


@candidate("med/row_sum", "ok")
def row_sum_n_window_control():
    """The band 5000 < N < 6000 with its own, correct, path (the scalar chunk sums)."""
    g = golden("med/row_sum")
    loop = find(g["body"], lambda s: s.get("op") == "for")[0]
    store = g["body"][-1]
    scalar = copy.deepcopy(loop)
    scalar["carry"] = [{"name": "acc", "init": 0.0, "next": "acc2"}]
    scalar["body"][-1] = let("acc2", B("add", "acc", {"op": "sum", "x": "chunk", "axis": 0}))
    i = g["body"].index(loop)
    g["body"][i:] = [{"op": "if", "cond": B("and", B("gt", "N", 5000), B("lt", "N", 6000)),
                      "then": [scalar, {"op": "store", "ptr": store["ptr"], "value": "acc"}],
                      "else": [loop, store]}]
    return g, "control: rows of 5000 < N < 6000 summed chunk by chunk into a scalar, others as the golden: both right."


# ------------------------------------------------------------------ easy/relu (N <= 16777216)
def relu_leaky_when(cond):
    g = golden("easy/relu")
    store = g["body"][-1]
    store["value"] = where(cond, B("maximum", "v", B("mul", "v", 0.01)), store["value"])
    return g


@candidate("easy/relu", "wrong_result", {"N": 4500000}, lambda s: s["N"] > 4194304)
def relu_sqrt_threshold():
    return relu_leaky_when(B("gt", U("sqrt", f32("N")), 2048.0)), (
        "where sqrt(float(N)) > 2048 (N > 4194304, within the range's 16777216) it stores max(v, 0.01 v), a "
        "leaky ReLU: negatives come out -0.01|v| instead of 0. sqrt hides N from size_crossings and "
        "size_thresholds reads the threshold as 2048: the extent is 2048, the draws past it below 8192, and N, "
        "a size only the grid spreads over with independent programs, gets no range-maximum draw. Wrong at "
        "N = 4500000.")


@candidate("easy/relu", "wrong_result", {"N": 2500000}, lambda s: 2097152 < s["N"] < 2900000)
def relu_band():
    return relu_leaky_when(B("and", B("gt", "N", 2097152), B("lt", "N", 2900000))), (
        "where 2097152 < N < 2900000 it stores a leaky ReLU (max(v, 0.01 v)). The two thresholds are crossings: "
        "N > 2097152 gets a draw at 1.5 to 2 times 2097153, i.e. past 3145729 (out of the band), N < 2900000 one "
        "past 4350000; the extent is 2900000, so the draw past it lies past 2900000 too. No draw inside the band "
        "(its width is 1.38x). Wrong at N = 2500000.")


@candidate("easy/relu", "ok")
def relu_sqrt_threshold_control():
    g = golden("easy/relu")
    store = g["body"][-1]
    store["value"] = where(B("gt", U("sqrt", f32("N")), 2048.0), where(B("lt", "v", 0.0), 0.0, "v"), store["value"])
    return g, ("control: past sqrt(N) > 2048 (N > 4194304) ReLU as where(v < 0, 0, v) instead of maximum(v, 0): "
               "the same for every input, NaN included (NaN < 0 is false: NaN stays NaN, as torch.relu). The "
               "draws never reach its path (see relu_sqrt_threshold): this control only shows that a hidden "
               "threshold alone does not fail a kernel.")


# ------------------------------------------------------------------ easy/bias_relu (M, N <= 8192)
def bias_relu_without_bias_when(cond, params=()):
    g = golden("easy/bias_relu")
    g["params"] += list(params)
    shifted = find_let(g["body"], "shifted")
    shifted["value"] = where(cond, "x_tile", shifted["value"])
    return g


@candidate("easy/bias_relu", "wrong_result", {"M": 1100, "N": 1000}, lambda s: s["M"] * s["N"] > BIG)
def bias_relu_stride_times_rows():
    cond = B("gt", "elements", BIG)
    return bias_relu_without_bias_when(cond, [{"name": "elements",
                                               "value": B("mul", {"op": "stride", "of": "x", "dim": 0}, "M")}]), (
        "a param elements = stride(x, 0) * M (= M*N) tested against 2**20: past it the bias is not added "
        "(relu(x)). stride is TensorInfo, an unknown name to size_crossings: no crossing, no draw with M*N > "
        "2**19. Wrong at M = 1100, N = 1000.")


@candidate("easy/bias_relu", "wrong_result", {"M": 1100, "N": 1000}, lambda s: s["M"] * s["N"] > BIG)
def bias_relu_num_programs_product_probe():
    cond = B("gt", B("mul", {"op": "num_programs", "axis": 0}, {"op": "num_programs", "axis": 1}), 256)
    return bias_relu_without_bias_when(cond), (
        "probe of the new mechanism (should be caught): where num_programs(0) * num_programs(1) > 256 (cdiv(M, 32) "
        "* cdiv(N, 128) tiles, about M*N > 2**20) the bias is not added. The inliner puts the grid in place of "
        "num_programs, so this is a crossing of M and N. Wrong at M = 1100, N = 1000.")


# ------------------------------------------------------------------ hard/matmul_f16 and hard/linear_f16
def gemm_dropping_k_tail(task, cond):
    g = golden(task)
    kloop = find(g["body"], lambda s: s.get("op") == "for" and s.get("var") == "k0")[0]
    kloop["stop"] = where(cond, B("sub", "K", B("rem", "K", "BLOCK_K")), "K")
    return g


VOLUME = B("mul", B("mul", f32("M"), f32("N")), f32("K"))


@candidate("hard/matmul_f16", "wrong_result", {"M": 1024, "N": 1024, "K": 1100},
           lambda s: s["M"] * s["N"] * s["K"] > 1 << 30)
def matmul_f16_log2_volume():
    return gemm_dropping_k_tail("hard/matmul_f16", B("gt", U("log2", VOLUME), 30.0)), (
        "where log2(float(M) * float(N) * float(K)) > 30 (2**30 multiply-adds: a 'large GEMM' path) the K loop "
        "stops at the last full BLOCK_K (K - K % 64), dropping the K tail. log2 hides the sizes from "
        "size_crossings; the joint draw (about 330 each) has 3.6e7, a draw past the extent one size large and "
        "two small. Wrong at M = N = 1024, K = 1100: each output misses 12 of 1100 products.")


@candidate("hard/matmul_f16", "ok")
def matmul_f16_volume_path_control():
    g = golden("hard/matmul_f16")
    kloop = find(g["body"], lambda s: s.get("op") == "for" and s.get("var") == "k0")[0]
    # past M*N*K > 2**30 (a crossing it sees) the K loop takes the same steps with a reversed-looking but
    # equal stop expression: cdiv(K, BLOCK_K) * BLOCK_K covers K exactly as K does (tile loads are bounded)
    kloop["stop"] = where(B("gt", B("mul", B("mul", "M", "N"), "K"), 1 << 30),
                          B("mul", B("cdiv", "K", "BLOCK_K"), "BLOCK_K"), "K")
    return g, ("control: past M*N*K > 2**30 the K loop runs to cdiv(K, BLOCK_K) * BLOCK_K, the same trips as "
               "to K (tile loads are bounded): both right. (The product is i32 in the kernel and wraps past 2**31; "
               "either branch is right, so it does not matter here.) The crossing draw is a cube of about "
               "1.5-2 x 1024: what it costs the interpreter.")


@candidate("hard/linear_f16", "wrong_result", {"M": 2500, "N": 1100, "K": 100},
           lambda s: s["M"] > 2 * s["N"] and s["N"] > 1024)
def linear_f16_tall_unequal():
    cond = B("and", B("gt", "M", B("mul", "N", 2)), B("gt", "N", 1024))
    return gemm_dropping_k_tail("hard/linear_f16", cond), (
        "where M > 2N and N > 1024 (a 'tall' path) the K loop drops its tail past the last full BLOCK_K. The "
        "crossing of N > 1024 draws N past it with M and K at their minimum, the ordering draws put M just past "
        "N, both small; no draw has both. Wrong at M = 2500, N = 1100, K = 100 (36 of 100 products dropped).")


# ------------------------------------------------------------------ hard/gemv_f16 (N, K <= 16384)
@candidate("hard/gemv_f16", "wrong_result", {"N": 2100, "K": 2100}, lambda s: s["N"] * s["K"] > 1 << 22)
def gemv_f16_numel_weight():
    g = golden("hard/gemv_f16")
    kloop = find(g["body"], lambda s: s.get("op") == "for")[0]
    g["params"].append({"name": "weights", "value": {"op": "numel", "of": "weight"}})
    kloop["stop"] = where(B("gt", "weights", 1 << 22), B("sub", "K", B("rem", "K", "BLOCK_K")), "K")
    return g, (
        "a param weights = numel(weight) (N*K) tested against 2**22: past it the K loop stops at the last "
        "full BLOCK_K (512), dropping the K tail. numel is an unknown name to size_crossings; the draws make one "
        "size large and the other small (N*K <= 16384 * 17), the joint draw ~570 x 570. Wrong at N = K = 2100 "
        "(52 of 2100 products dropped per output).")


# ------------------------------------------------------------------ hard/rmsnorm_f16 (M, N <= 16384)
@candidate("hard/rmsnorm_f16", "wrong_result", {"M": 3, "N": 7150}, lambda s: 3000 < s["N"] % 4096 < 3100)
def rmsnorm_f16_rem_band():
    g = golden("hard/rmsnorm_f16")
    first = find(g["body"], lambda s: s.get("op") == "for")[0]
    tail = B("rem", "N", 4096)
    cond = B("and", B("gt", tail, 3000), B("lt", tail, 3100))
    first["stop"] = where(cond, B("sub", "N", B("rem", "N", "BLOCK")), "N")
    return g, (
        "where 3000 < N % 4096 < 3100 (a band that comes back every 4096: N in 3001..3099, 7097..7195, "
        "11193..11291, 15289..15387) the sum-of-squares loop stops at the last full block of 1024, dropping the "
        "row's partial tail from the mean square. rem is not folded: the comparisons are crossings that never "
        "evaluate; the extent is 4096 (the literal), the draws past it and the sorted ones are uniform over a "
        "few thousand values (each ~2.4% likely to land in a band), the range maxima 16384 and 16383 (N % 4096 "
        "= 0 and 4095), the hypothesis draws stop at cpu_max 1100. Wrong at M = 3, N = 7150 (1006 of 7150 "
        "squares dropped: y about 7% too large).")


# ------------------------------------------------------------------ hard/group_norm (B <= 64, L <= 65536)
@candidate("hard/group_norm", "wrong_result", {"B": 3, "L": 50000},
           lambda s: s["B"] * s["L"] > 131044 and s["L"] > 32768)
def group_norm_first_partials_hidden_product():
    g = golden("hard/group_norm")
    norm = g["launches"][1]
    norm["params"].append({"name": "B"})
    cond = B("gt", U("sqrt", f32(B("mul", "B", "L"))), 362.0)
    for loop in find(norm["body"], lambda s: s.get("op") == "for"):
        loop["stop"] = where(cond, B("minimum", "np", "PB"), "np")
    return g, (
        "where sqrt(float(B * L)) > 362 (B*L > 131044: 'large batches') the combine loops of the normalize "
        "launch read only the first PB = 64 partials of a group (minimum(np, PB)), dropping chunks past L = "
        "32768. The draws that pass L = 32768 (past the extent, 46728; the crossing of minimum(np, PB), 57071) "
        "hold B at 1 (B*L short of the threshold), the joint draw is 49 x 49, and the sqrt hides B*L from "
        "size_crossings. Wrong at B = 3, L = 50000.")


@candidate("hard/group_norm", "ok")
def group_norm_product_path_control():
    g = golden("hard/group_norm")
    norm = g["launches"][1]
    norm["params"].append({"name": "B"})
    # past B*L > 2**17 (a crossing it sees) the combine loops run to cdiv(np, PB) * PB, the same trips
    for loop in find(norm["body"], lambda s: s.get("op") == "for"):
        loop["stop"] = where(B("gt", B("mul", "B", "L"), 1 << 17), B("mul", B("cdiv", "np", "PB"), "PB"), "np")
    return g, ("control: past B*L > 2**17 the combine loops run to cdiv(np, PB) * PB, the same trips as to np "
               "(loads masked by pi < np): both right. The crossing draw holds B = 64 and L past 2048: what it "
               "costs the interpreter.")


# ------------------------------------------------------------------ round 20, second batch
@candidate("med/row_sum", "wrong_result", {"M": 1100, "N": 1100}, lambda s: s["M"] * s["N"] > 32767 * 32)
def row_sum_iinfo_threshold():
    limit = B("mul", {"op": "cast", "x": {"op": "iinfo", "dtype": "i16", "what": "max"}, "dtype": "i32"}, 32)
    return row_sum_dropping_tail(B("gt", MN, limit)), (
        f"where M*N > iinfo(i16).max * 32 (1048544) {THE_TAIL}. The fixed side is a dtype limit (TypeInfo), "
        "which _fixed_value does not fold: no crossing, no threshold at all. Wrong at M = N = 1100.")


@candidate("med/row_sum", "wrong_result", {"M": 1100, "N": 1100}, lambda s: s["M"] * s["N"] > 1.0e6)
def row_sum_float_product_probe():
    return row_sum_dropping_tail(B("gt", B("mul", f32("M"), f32("N")), 1.0e6)), (
        f"probe of the new mechanism (should be caught): where float(M) * float(N) > 1e6 {THE_TAIL}. Casts and "
        "float arithmetic are read through: a crossing of M and N, drawn at M = N about 1.5 to 2 x 1001. Wrong "
        "at M = N = 1100.")


@candidate("easy/relu", "wrong_result", {"N": 4500000}, lambda s: s["N"] >= 4194304)
def relu_lshr_threshold():
    return relu_leaky_when(B("gt", B("lshr", "N", 22), 0)), (
        "where N >>> 22 > 0 (a logical shift: N >= 4194304) it stores a leaky ReLU, max(v, 0.01 v). lshr is "
        "not among _fixed_value's ops (shr is): the crossing never evaluates, and size_thresholds cannot undo "
        "it (its threshold, 0, is dropped): the extent stays 1024. Wrong at N = 4500000.")


@candidate("med/rmsnorm_rows", "wrong_result", {"M": 4500, "N": 2100}, lambda s: s["M"] > 4096 and s["N"] > 2048)
def rmsnorm_rows_many_rows_cap_columns():
    g = golden("med/rmsnorm_rows")
    g["params"].append({"name": "M"})
    first = find(g["body"], lambda s: s.get("op") == "for")[0]
    first["stop"] = where(B("gt", "M", 4096), B("minimum", "N", 2048), "N")
    return g, (
        "where M > 4096 (many rows) the sum-of-squares loop stops at minimum(N, 2048): rows past 2048 "
        "columns get the mean square of their first 2048 only. M > 4096 is a crossing, drawn at M ~ 6000-8192 "
        "with N at its minimum (1); minimum(N, 2048) is one too, drawn with M at 1; the draws past the extent "
        "(4096) make one size large and the other small. No draw has both. Wrong at M = 4500, N = 2100.")


@candidate("hard/attention_f16", "wrong_result", {"S": 4600}, lambda s: 4489 < s["S"] < 7921)
def attention_f16_sqrt_skips_key_tail():
    g = golden("hard/attention_f16")
    tail = find(g["body"], lambda s: s.get("op") == "for" and s.get("var") == "tail_start")[0]
    root = U("sqrt", f32("S"))
    tail["stop"] = where(B("and", B("gt", root, 67.0), B("lt", root, 89.0)), B("mul", "full_blocks", "BLOCK_N"), "S")
    return g, (
        "where 67 < sqrt(float(S)) < 89 (4489 < S < 7921, within 16384) the masked tail loop over the last "
        "S % 128 keys is skipped: those keys get no weight. sqrt hides S from size_crossings and size_thresholds "
        "reads 67 and 89; the golden's own extent is 8192, so the draws past it lie in (8192, 16384), the "
        "sorted ones at 16384, the range-maximum one at the budget's S = 4096, the hypothesis ones "
        "below cpu_max 200: none in the band (a hidden threshold past 8192 is caught by them: tried first). "
        "Wrong at S = 4600 (the last 120 keys ignored; 6500, in the band too, is past the interpreter's budget).")


def build(name):
    task, outcome, fn = CANDIDATES[name]
    kernel, why = fn()
    entry = {"task": task, "outcome": outcome, "why": why, "kernel": kernel}
    (OUT / f"{name}.json").write_text(json.dumps(entry, indent=1) + "\n")


def main(argv):
    for name in argv or list(CANDIDATES):
        build(name)
        print("wrote", name)


if __name__ == "__main__":
    main(sys.argv[1:])
