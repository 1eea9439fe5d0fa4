"""Red-team round 6 candidates: wrong kernels (and controls) as minimal edits of goldens, for tasks
with dtype variants or optional inputs, GEMMs, convolutions and pools, gathers and scatters, and
long scans: argument values no listed call takes, index domains narrower than the prompt's
promise, size thresholds hidden in arithmetic, non-finite values a select drops.

Run from the repository root: ``python tools/redteam_round6.py [NAME ...] [--out DIR]`` (default
``redteam_candidates/``), then ``python tools/redteam_verdicts.py DIR/*.json``."""
import json, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from redteam_candidates import Round, find_let, golden, loops  # noqa: E402 - the round-2 script's helpers
from redteam_round4 import B, U, cast, stores  # noqa: E402
from redteam_round5 import R, W, ex, let, rename  # noqa: E402

ROUND = Round()
kernel, write = ROUND.kernel, ROUND.write


# ============================================================================ batch 1

@kernel
def avg_pool1d_stride_taps_capped_at_4():
    g = golden("med/avg_pool1d_stride")
    loops(g["body"])[0]["stop"] = B("minimum", "K", 4)
    write("med/avg_pool1d_stride", "taps_capped_at_4", "wrong_result",
          "sums at most 4 taps per window (the tap loop stops at min(K, 4), as an unrolled 4-tap window would) "
          "but divides by K: right for every kernel_size up to 4, wrong past it. Input: x = ones(1, 8), "
          "kernel_size = 5 (stride None): y = [0.8], torch gives [1.0]. The listed calls take kernel sizes "
          "3, 4, 2 and 3 only", g)


@kernel
def index_fill_inplace_guard_against_n():
    g = golden("med/index_fill_inplace")
    loop = loops(g["body"])[0]
    entry = {"op": "load", "ptr": B("add", "index", "k")}
    find_let(loop["body"], "new_hit")["value"]["rhs"] = B("and", B("eq", "coord", entry), B("lt", entry, cast("N", "i64")))
    write("med/index_fill_inplace", "guard_against_n", "wrong_result",
          "guards each index entry with index[k] < N (the column count) whatever dim is: for dim = 0 a row "
          "index in [N, M) is skipped and its row is left unfilled. Input: dim = 0, x = zeros(300, 2), "
          "index = [200], value = -1.5: torch fills row 200, the kernel leaves it 0. The index domain draws "
          "entries in [0, min(M, N) - 1] (so one draw serves both dims), so no entry ever reaches N", g)


@kernel
def addmm_f16_k_tail_dropped_past_4096():
    g = golden("hard/addmm_f16")
    loop = loops(g["body"])[0]
    loop["stop"] = B("sub", "K", B("mul", B("rem", "K", "BLOCK_K"), B("minimum", B("shr", "K", 12), 1)))
    write("hard/addmm_f16", "k_tail_dropped_past_4096", "wrong_result",
          "the K loop stops at K - (K % BLOCK_K) * min(K >> 12, 1): for K >= 4096 the last partial K block is "
          "skipped (a threshold written as arithmetic, not a comparison): right for K < 4096 and for K a "
          "multiple of 32. Input: M = N = 16, K = 4100, alpha = 1, beta = 0: the products of k = 4096..4099 "
          "are missing (~2 absolute of sums ~64). CPU mode draws K up to 160 and K = 8192 (range maximum, "
          "a multiple of every block)", g)


@kernel
def maxpool2x2_where_gt_drops_nan():
    g = golden("hard/maxpool2x2")
    stores(g["body"])[0]["value"]["x"] = W(B("gt", "top", "bottom"), "top", "bottom")
    write("hard/maxpool2x2", "where_gt_drops_nan", "wrong_result",
          "the vertical pair's maximum as where(top > bottom, top, bottom): a NaN in the upper row compares "
          "false and is replaced by the lower value, where F.max_pool2d propagates it. Input: "
          "x = [[nan, 0], [1, 2]] (one 2x2 window): torch gives nan, the kernel 2", g)


@kernel
def row_cumprod_long_exp_cumsum_log_control():
    g = golden("expert/row_cumprod_long")
    loop = loops(g["body"])[0]
    find_let(loop["body"], "scanned")["value"] = U("exp", {"op": "cumsum", "x": U("log", "chunk"), "axis": 0})
    write("expert/row_cumprod_long", "exp_cumsum_log_control", "ok",
          "CONTROL (correct for the promised positive values): each chunk's scan as exp(cumsum(log x)) instead "
          "of cumprod; masked lanes read 1 (log 1 = 0). Log-sums of a chunk stay below ~2 in magnitude, so the "
          "f32 rounding is ~1e-6 relative, far inside rtol 1e-3", g)

# ============================================================================ batch 2

@kernel
def conv2d3x3_nhwc_f16_accumulates_in_f16():
    g = golden("expert/conv2d3x3_nhwc_f16")
    conv = g["launches"][1]["body"]
    inner = loops(loops(conv)[0]["body"])[0]
    inner["carry"][0]["init"]["dtype"] = "f16"
    step = find_let(inner["body"], "new_acc")
    product = dict(step["value"])
    del product["acc"]
    step["value"] = B("add", "acc", cast(product, "f16"))
    write("expert/conv2d3x3_nhwc_f16", "accumulates_in_f16", "wrong_result",
          "the implicit GEMM's running sum is f16: each tap's [pixels, 64 channels] dot is rounded to f16 and "
          "added to an f16 accumulator, against the prompt's 'accumulate in f32'. Input: N = H = 1, W = 3, "
          "C = K = 1, x[0, 0, :, 0] = [2048, 1, -2048], w[0, 0, 1, :] = [1, 1, 1], other taps 0: the centre "
          "output's f16 running sum 2048 + 1 rounds to 2048 and it is 0, torch gives 1", g)


@kernel
def depthwise_conv3x3_f16_taps_in_f16():
    g = golden("expert/depthwise_conv3x3_f16")
    g = json.loads(json.dumps(g).replace('"dtype": "f32"', '"dtype": "f16"'))
    write("expert/depthwise_conv3x3_f16", "taps_in_f16", "wrong_result",
          "reads x, w and bias as f16 and computes the 9 products, their sums and the bias add in f16 (the "
          "prompt asks for f32 accumulation, rounding to f16 once at the store). Input: N = C = H = 1, W = 3, "
          "x = [[2048, 1, -2048]], w[0, 0] = [[0, 0, 0], [1, 1, 1], [0, 0, 0]], bias = 0: the centre output's "
          "f16 running sum 2048 + 1 rounds to 2048 and it is 0, torch gives 1", g)


@kernel
def avgpool3x3_count_from_edge_flags_control():
    g = golden("hard/avgpool3x3")
    body = g["body"]
    find_let(body, "count_c")["value"] = B("sub", B("sub", 3, cast(B("eq", "cols", 0), "i32")),
                                           cast(B("eq", "cols", B("sub", "W", 1)), "i32"))
    loop = loops(body)[0]
    find_let(loop["body"], "count_r")["value"] = B("sub", B("sub", 3, cast(B("eq", "orow", 0), "i32")),
                                                   cast(B("eq", "orow", B("sub", "H", 1)), "i32"))
    write("hard/avgpool3x3", "count_from_edge_flags_control", "ok",
          "CONTROL (correct): the window's row and column counts as 3 - (at the first) - (at the last), "
          "not min/max arithmetic: a 1-pixel-wide image gives 3 - 1 - 1 = 1, an edge 2, the interior 3, as "
          "count_include_pad=False asks (lanes past the image are masked at the store)", g)

@kernel
def channel_affine_bf16_product_rounded_to_bf16():
    g = golden("easy/channel_affine_bf16")
    g = json.loads(json.dumps(g).replace('"dtype": "f32"', '"dtype": "bf16"'))
    affine = find_let(g["body"], "affine")["value"]
    affine.update({"op": "add", "lhs": B("mul", affine["x"], affine["y"]), "rhs": affine["z"]})
    for key in ("x", "y", "z"):
        del affine[key]
    write("easy/channel_affine_bf16", "product_rounded_to_bf16", "wrong_result",
          "loads x, weight and bias as bf16 and computes x * weight and the + bias in bf16, two roundings (the "
          "prompt asks for f32, rounding to bf16 once at the store): where bias nearly cancels the product, the "
          "product's rounding (up to 2**-9 of it) is a large part of the result. Input: x = weight = 1.0234375, "
          "bias = -1: the product 1.0474243 rounds to 1.046875 in bf16 and the result is 0.046875, torch gives "
          "0.0473633. The default bf16 atol 1e-2 hid every such error", g)


@kernel
def addmm_f16_beta_zero_scales_nan_c():
    g = golden("hard/addmm_f16")
    find_let(g["body"], "result")["value"] = B("add", B("mul", "c_tile", "beta"), B("mul", "acc", "alpha"))
    write("hard/addmm_f16", "beta_zero_scales_nan_c", "wrong_result",
          "adds beta * c whatever beta is (the golden did once): with beta = 0, torch.addmm ignores c, so a NaN "
          "or infinity in c does not reach the result, while 0 * NaN and 0 * inf are NaN. Input: M = N = K = 1, "
          "c = [[nan]], a = b = [[1]], beta = 0, alpha = 1: torch gives 1, the kernel NaN. No draw held a "
          "non-finite c, nor beta = 0", g)


# (new kernels above)
if __name__ == "__main__":
    ROUND.main(sys.argv[1:])
