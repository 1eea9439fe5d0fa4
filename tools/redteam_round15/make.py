"""Round 15 (thin constructs: scans, rand, atomic_min, sort sentinels, tile views, tanh/mish edges)
candidates: python tools/redteam_round15/make.py [NAME ...] (writes into tools/redteam_round15/).
Each is a minimal edit of a task's golden (or, for col_argmin, of the catalogue's atomic_min control)."""
import copy
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from redteam_candidates import Round, find_let, golden, loops  # noqa: E402
from redteam_round4 import B, U, cast, let, where  # noqa: E402

ROUND = Round()
ROUND.out = Path(__file__).resolve().parent
kernel, write = ROUND.kernel, ROUND.write

I32_MIN, I32_MAX, I64_MAX = -2147483648, 2147483647, 9223372036854775807


def ordered_key(v):
    """f32 -> i32 whose signed order is the floats' order, as the goldens' packed keys build it
    (-0.0 ranks below +0.0, NaN with the sign clear above +inf)."""
    bits = {"op": "bitcast", "x": v, "dtype": "i32"}
    return B("xor", bits, B("and", B("shr", bits, 31), I32_MAX))


# ================================================================ rand: the dropout mask's boundary
@kernel
def dropout_residual_layernorm_keep_ge_p():
    g = golden("expert/dropout_residual_layernorm")
    find_let(g["body"], "keep")["value"]["op"] = "ge"
    write("expert/dropout_residual_layernorm", "keep_ge_p", "wrong_result",
          "keep = rand(seed, offset) >= p where the prompt says keep = u > p: an element whose random number "
          "equals p exactly is kept (x / (1 - p) added) where it must be dropped. u is a multiple of 2^-31 rounded "
          "to f32 and p an f32 in [0.05, 0.5], so a draw hits u == p with probability ~1e-7 per element: no "
          "random draw shows it. Input: seed = 0, p = u(0, offset 0) (the first element's own random number).", g)


@kernel
def dropout_residual_layernorm_keep_one_minus_u():
    g = golden("expert/dropout_residual_layernorm")
    find_let(g["body"], "keep")["value"] = B("lt", B("sub", 1.0, {"op": "rand", "seed": "seed", "offset": "offsets"}),
                                             B("sub", 1.0, "p"))
    write("expert/dropout_residual_layernorm", "keep_one_minus_u", "wrong_result",
          "keep = (1 - u) < (1 - p), the prompt's u > p rewritten through the keep probability 1 - p: equal in "
          "algebra, but 1 - u and 1 - p lie in [0.5, 0.95] with ulp 2^-24 while u and p near 0.05..0.5 carry "
          "2^-28..2^-25, so a u just above p rounds to the same 1 - u as 1 - p and is dropped (kept by u > p). "
          "Happens where u is within ~2^-25 of p: ~1e-7 per element. Input: seed = 0, p = nextafter(u0, 0) for "
          "u0 = the first element's random number.", g)


@kernel
def dropout_residual_layernorm_exact_division_control():
    g = golden("expert/dropout_residual_layernorm")
    dropped = find_let(g["body"], "dropped")["value"]
    dropped["x"] = B("div", dropped["x"]["lhs"], B("sub", 1.0, "p"))
    write("expert/dropout_residual_layernorm", "exact_division_control", "ok",
          "CONTROL (correct): kept elements as x / (1 - p), the prompt's literal form, instead of the golden's "
          "x * (1 / (1 - p)): both round within an ulp or two.", g)


# ================================================================ scans
@kernel
def row_cumprod_long_prefix_carried_in_f16():
    g = golden("expert/row_cumprod_long")
    loop = loops(g["body"])[0]
    nxt = find_let(loop["body"], "new_prefix")
    nxt["value"] = cast(cast(nxt["value"], "f16"), "f32")
    write("expert/row_cumprod_long", "prefix_carried_in_f16", "wrong_result",
          "the carried prefix (product of the row's earlier chunks) rounded to f16 at every chunk boundary "
          "(a 'register-light' carry): each boundary adds a relative error up to 2^-11 = 4.9e-4, which the rtol "
          "1e-3 hides for one or two boundaries (N <= 6144) but not for the 31 boundaries of N = 65536, nor "
          "where one rounding lands near its worst case (the range-maximum draw N = 65535 shows it).", g)


@kernel
def row_cumsum_long_total_minus_reverse_scan_control():
    g = golden("expert/row_cumsum_long")
    loop = loops(g["body"])[0]
    running = find_let(loop["body"], "running")
    running["value"] = B("add", B("add", "prefix", B("sub", {"op": "sum", "x": "chunk", "axis": 0},
                                                     {"op": "cumsum", "x": "chunk", "axis": 0, "reverse": True})),
                         "chunk")
    write("expert/row_cumsum_long", "total_minus_reverse_scan_control", "ok",
          "CONTROL (correct in algebra): each chunk's inclusive prefix as prefix + (chunk total - reverse "
          "cumsum) + x, the suffix-scan form: exact in reals; rounding of order ulp(chunk total), within rtol "
          "1e-4 / atol 1e-3 on centred values.", g)


@kernel
def row_cumsum_long_prefix_carried_in_bf16():
    g = golden("expert/row_cumsum_long")
    loop = loops(g["body"])[0]
    nxt = find_let(loop["body"], "new_prefix")
    nxt["value"] = cast(cast(nxt["value"], "bf16"), "f32")
    write("expert/row_cumsum_long", "prefix_carried_in_bf16", "wrong_result",
          "the carried total of the row's earlier chunks rounded to bf16 at each chunk boundary: an error up "
          "to 2^-9 of the running total per boundary (0.1 on a total of 50).", g)


# ================================================================ atomic_min on packed keys: -0.0 vs +0.0
def col_argmin_packed(canonical_zero):
    ctl = json.loads((ROOT / "tests/redteam/col_argmin_atomic_min_of_row_control.json").read_text())["kernel"]
    g = copy.deepcopy(ctl)
    claim = copy.deepcopy(g["launches"][1])
    body = [s for s in claim["body"] if s.get("name") in ("rows", "cols", "mask", "tile")]
    value = B("add", "tile", 0.0) if canonical_zero else "tile"
    body += [
        let("key", where(B("ne", "tile", "tile"), I32_MIN, ordered_key(value))),
        let("packed", where("mask", B("or", B("shl", cast("key", "i64"), 32), cast({"op": "expand_dims", "x": "rows", "axis": 1}, "i64")),
                            I64_MAX)),
        {"op": "atomic_min", "ptr": B("add", "out", "cols"), "val": {"op": "min", "x": "packed", "axis": 0},
         "mask": B("lt", "cols", "N"), "sem": "relaxed"},
    ]
    claim["body"] = body
    claim["params"] = [{"name": "x"}, {"name": "out"}, {"name": "M"}, {"name": "N"}]
    unpack = {
        "name": "unpack", "grid": [B("cdiv", "N", "BLOCK_N")],
        "params": [{"name": "out"}, {"name": "N"}],
        "body": [
            let("cols", B("add", B("mul", {"op": "program_id"}, "BLOCK_N"), {"op": "arange", "size": "BLOCK_N"})),
            let("ok", B("lt", "cols", "N")),
            let("packed", {"op": "load", "ptr": B("add", "out", "cols"), "mask": "ok"}),
            {"op": "store", "ptr": B("add", "out", "cols"), "value": B("and", "packed", 4294967295), "mask": "ok"},
        ],
    }
    g["launches"] = [claim, unpack]
    g["outputs"] = [{"dtype": "i64", "init": I64_MAX, "name": "out", "shape": ["N"]}]
    g.pop("scratch", None)
    return g


@kernel
def col_argmin_packed_key_signed_zero():
    write("med/col_argmin", "packed_key_signed_zero", "wrong_result",
          "one atomic_min per column of (ordered float bits << 32 | row), NaN given the smallest key, then the row "
          "unpacked: the ordered bits rank -0.0 below +0.0, so in a column whose minimum is zero the first -0.0 "
          "wins over an earlier +0.0 (the prompt: the smallest m with x[m, n] == min; -0.0 == +0.0, torch.argmin "
          "gives the first zero). The domain is integers in [-10, 10] (no -0.0, and a column's minimum is zero "
          "only if it holds nothing negative). Input: x = [[0.0], [-0.0]]: torch 0, the kernel 1.",
          col_argmin_packed(False))


@kernel
def col_argmin_packed_key_zero_canonical_control():
    write("med/col_argmin", "packed_key_zero_canonical_control", "ok",
          "CONTROL (correct): the packed-key atomic_min of col_argmin_packed_key_signed_zero with the key taken "
          "of x + 0.0 (which turns -0.0 into +0.0), so zeros of both signs tie and the lower row wins.",
          col_argmin_packed(True))


# ================================================================ max by ordered int keys (row_argmax)
@kernel
def row_argmax_int_key_signed_zero():
    g = golden("med/row_argmax")
    loop = loops(g["body"])[0]
    imp = find_let(loop["body"], "improves")
    imp["value"]["lhs"] = B("gt", ordered_key("chunk"), ordered_key("best_value"))
    find_let(g["body"], "top")["value"] = {"op": "max", "x": ordered_key("best_value"), "axis": 0}
    find_let(g["body"], "is_top")["value"]["lhs"] = B("eq", ordered_key("best_value"), "top")
    write("med/row_argmax", "int_key_signed_zero", "wrong_result",
          "the golden's comparisons made on the floats' ordered int bits (bits ^ ((bits >> 31) & 0x7fffffff), "
          "the sort goldens' key) instead of on the floats: NaN (sign clear) still ranks above every number, "
          "but -0.0 ranks below +0.0, so a row whose maximum is zero gives its first +0.0 even after an earlier "
          "-0.0 (torch.argmax: the first zero). The domain is integers in [-20, 20]: no -0.0, and a row's "
          "maximum is zero only if nothing is positive. Input: x = [[-0.0, 0.0, -1.0]]: torch 0, the kernel 1.", g)


# ================================================================ sort: a finite sentinel for the padding
@kernel
def row_sort_short_path_pad_1e9():
    g = golden("expert/row_sort")
    then = g["body"][1]["then"]
    find_let(then, "s_line")["value"]["other"] = 1.0e9
    find_let(then, "s_key")["value"] = ordered_key("s_line")
    write("expert/row_sort", "short_path_pad_1e9", "wrong_result",
          "short rows (N <= 128) padded to the block with the 'large' value 1e9 and keyed like the data (no "
          "where(s_ok, key, INT_MAX)): padding lanes, whose columns are >= N, sort after every value below 1e9 and "
          "after ties at 1e9, so rows of values up to 1e9 come out right; a row holding a finite value above 1e9 "
          "gets 1e9 padding (and an index >= N) in its place. The domain is normal of scale 1 rounded to quarters "
          "and integers in [-8, 8]; ties draws are not magnified. Input: x = [[3e9, 1.0]]: torch values [1, 3e9] "
          "indices [1, 0], the kernel [1, 1e9], [1, 2].", g)


@kernel
def row_sort_short_path_sort_and_argsort_control():
    g = golden("expert/row_sort")
    then = g["body"][1]["then"]
    find_let(then, "s_line")["value"]["other"] = "inf"
    keep = [s for s in then if s.get("name") in ("scols", "s_ok", "s_offsets", "s_line")]
    then[:] = keep + [
        {"op": "store", "ptr": B("add", "values", "s_offsets"), "value": {"op": "sort", "x": "s_line"}, "mask": "s_ok"},
        {"op": "store", "ptr": B("add", "indices", "s_offsets"),
         "value": cast({"op": "argsort", "x": "s_line"}, "i64"), "mask": "s_ok"},
    ]
    write("expert/row_sort", "short_path_sort_and_argsort_control", "ok",
          "CONTROL (correct): short rows sorted with sort for the values and argsort (stable: ties keep index "
          "order) for the indices, padding lanes +inf (values are finite, and a real +inf could not precede "
          "a padding lane anyway since argsort keeps index order among ties).", g)


# ================================================================ tile views with a boundary off by one axis
@kernel
def conv2d3x3_nhwc_f16_x_view_w_one_past():
    g = golden("expert/conv2d3x3_nhwc_f16")
    conv = g["launches"][1]
    a_tile = find_let(conv["body"], "a_tile")
    view = a_tile["value"]["x"]
    view["shape"][2] = B("add", "W", 1)
    write("expert/conv2d3x3_nhwc_f16", "x_view_w_one_past", "wrong_result",
          "x's tile view declared [N, H, W + 1, C] (strides unchanged): the right-hand tap of the last column "
          "(j + 1 = W) is not zero padding but reads the next image row's first pixel (or past x at the last row).",
          g)


@kernel
def matmul_f16_a_view_k_padded():
    g = golden("hard/matmul_f16")
    loop = loops(g["body"])[0]
    kloop = loops(loop["body"])[0]
    a_view = find_let(kloop["body"], "new_acc")["value"]["lhs"]
    a_view["shape"] = ["M", B("add", "K", "BLOCK_K")]
    write("hard/matmul_f16", "a_view_k_padded", "wrong_result",
          "a's tile view declared [M, K + BLOCK_K]: in the last K block the columns past K are read from the "
          "next row of a (and past a's end on its last row) instead of zeros; b's view still zero-fills rows past "
          "K, so the products vanish and c is right, but the last row's reads leave a's allocation (an out-of-"
          "bounds read: a fault or garbage that 0 * garbage can turn into NaN on a GPU).", g)


# ================================================================ tanh / mish edges
@kernel
def tanh_f16_one_minus_two_over_exp():
    g = golden("easy/tanh_f16")
    store = g["body"][-1]
    store["value"]["x"] = B("sub", 1.0, B("div", 2.0, B("add", U("exp", B("mul", 2.0, "v")), 1.0)))
    write("easy/tanh_f16", "one_minus_two_over_exp", "wrong_result",
          "tanh(x) = 1 - 2 / (exp(2x) + 1): no overflow (large x gives 1, large -x gives -1) but it cancels near "
          "zero: 1 - (a number near 1) keeps an absolute error of ~6e-8 plus exp's 2 ulp, so tanh of |x| below "
          "~1e-3 loses f16 precision and tiny x (f16 subnormals) come out as 0 or a few steps off.", g)


@kernel
def mish_fast_ratio_unclamped():
    g = golden("easy/mish")
    g["body"][-2] = let("softplus", U("exp", "v"))  # e = exp(x), reusing the name
    store = g["body"][-1]
    n = B("mul", "softplus", B("add", "softplus", 2.0))
    store["value"] = B("mul", "v", B("div", n, B("add", n, 2.0)))
    write("easy/mish", "fast_ratio_unclamped", "wrong_result",
          "tanh(softplus(x)) as n / (n + 2) with n = e^x (e^x + 2) (the 'fast mish' identity): no log, no "
          "tanh, exact in algebra, but e^x (e^x + 2) overflows for x > ~44 and inf / inf gives NaN where mish(x) "
          "= x (the prompt: inputs reach hundreds in some checks).", g)


@kernel
def mish_fast_ratio_clamped_control():
    g = golden("easy/mish")
    g["body"][-2] = let("softplus", U("exp", B("minimum", "v", 20.0)))
    store = g["body"][-1]
    n = B("mul", "softplus", B("add", "softplus", 2.0))
    store["value"] = B("mul", "v", B("div", n, B("add", n, 2.0)))
    write("easy/mish", "fast_ratio_clamped_control", "ok",
          "CONTROL (correct): the fast-mish identity tanh(softplus(x)) = n / (n + 2), n = e^x (e^x + 2), with x "
          "clamped at 20 inside the exp (tanh(softplus(20)) is 1 in f32); for negative x, n ~ 2 e^x and the "
          "ratio keeps full relative precision.", g)


if __name__ == "__main__":
    ROUND.main(sys.argv[1:])
