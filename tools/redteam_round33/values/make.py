"""Round 33 (helper b): values, sizes, scalars and calls the draws miss. Builds every file of this folder
from a task's golden (run from the repository root: .venv/bin/python tools/redteam_round33/values/make.py; files go to $OUT,
default tools/redteam_round33/open/: those in the catalogue were copied from there into tests/redteam)."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lib import OUT, golden, op, write  # noqa: E402


def find(body, pred):
    """The first statement (depth first, through for/if bodies) for which pred holds."""
    for s in body:
        if pred(s):
            return s
        for key in ("body", "then", "else"):
            if isinstance(s.get(key), list):
                hit = find(s[key], pred)
                if hit is not None:
                    return hit
    return None


# ---------------------------------------------------------------------------------------------------------
# 1. bmm_f16: the f32 accumulator clamped to f16's largest finite value before the cast (a "saturating"
#    store). torch gives inf where |sum| >= 65520; the kernel gives +-65504.
def bmm_saturating(control=False):
    k = golden("hard/bmm_f16")
    st = find(k["body"], lambda s: s.get("op") == "tile_store")
    acc = "acc"
    if control:  # saturate only what rounds to a finite f16 anyway: |acc| < 65520 stays, the rest is inf as torch
        clamped = op("where", cond=op("lt", lhs=op("abs", x="acc"), rhs=65520.0),
                     x=op("clamp", x="acc", lo=-65504.0, hi=65504.0), y="acc")
    else:
        clamped = op("clamp", x="acc", lo=-65504.0, hi=65504.0)
    st["value"]["x"]["x"] = clamped
    return k


def make_bmm():
    write("bmm_f16_saturating_store_clamps_to_65504", "hard/bmm_f16",
          "The f32 sum is clamped to [-65504, 65504] before the f16 cast, so a product whose sum is 65520 or more "
          "(a = b = 16 everywhere, K = 256: 65536) stores 65504 where torch.bmm gives inf.", bmm_saturating())
    write("bmm_f16_clamp_only_below_65520_control", "hard/bmm_f16",
          "Clamps only sums that round to a finite f16 anyway (|acc| < 65520): bit for bit the plain cast.",
          bmm_saturating(control=True), outcome="ok")


# ---------------------------------------------------------------------------------------------------------
# 2. segment_sum_csr: each program walks at most 8 x the average segment length (+ one block) of its segment.
def segment_cap(mult=8, control=False):
    k = golden("expert/segment_sum_csr")
    loop = find(k["body"], lambda s: s.get("op") == "for")
    cap = op("add", lhs="seg_start", rhs=op("add", lhs=op("mul", lhs=mult, rhs=op("cdiv", lhs="E", rhs="S")),
                                             rhs="BLOCK_R"))
    if control:  # the cap at E past the start: never binds
        cap = op("add", lhs="seg_start", rhs="E")
    loop["stop"] = op("minimum", lhs="seg_end", rhs=cap)
    return k


def make_segment():
    write("segment_sum_csr_rows_capped_at_8x_average_segment", "expert/segment_sum_csr",
          "Each segment's loop stops after 8 * cdiv(E, S) + BLOCK_R rows, so a segment longer than eight times the "
          "average (E = 3000, S = 100, one segment of 2500 rows: the prompt's 'from empty to most of E') loses its "
          "tail rows.", segment_cap())
    write("segment_sum_csr_rows_capped_at_e_control", "expert/segment_sum_csr",
          "The same loop capped at seg_start + E, which never binds: correct.", segment_cap(control=True), outcome="ok")



# ---------------------------------------------------------------------------------------------------------
# 3. rank1_update: rows of u that are zero skip the product (out = a there): torch gives 0 * inf = NaN where
#    v holds an infinity (or NaN).
def rank1_skip(control=False):
    k = golden("hard/rank1_update")
    st = find(k["body"], lambda s: s.get("op") == "let" and s.get("name") == "updated")
    u_zero = op("expand_dims", x=op("eq", lhs="scaled_u", rhs=0.0), axis=1)
    if control:  # skip only where v is finite too: then 0 * v is a zero and a + 0 is a (signed zeros aside)
        u_zero = op("and", lhs=u_zero, rhs=op("expand_dims", x=op("lt", lhs=op("abs", x="v_chunk"), rhs="inf"), axis=0))
    st["value"] = op("where", cond=u_zero, x="a_tile", y=st["value"])
    return k


def make_rank1():
    write("rank1_update_zero_rows_of_u_skip_the_product", "hard/rank1_update",
          "Where alpha * u[m] is 0 the kernel stores a[m, n] without the product, but torch.addr gives "
          "a + alpha * 0 * inf = NaN where v[n] is inf or NaN (u = [0, 1], v = [inf, 2]: out[0, 0] NaN, kernel a[0, 0]).",
          rank1_skip())
    write("rank1_update_zero_rows_skip_only_finite_v_control", "hard/rank1_update",
          "The same shortcut taken only where v[n] is finite, where 0 * v[n] is zero: correct.",
          rank1_skip(control=True), outcome="ok")


# ---------------------------------------------------------------------------------------------------------
# 4. gemm_bias_relu_f16: ReLU as z * (z > 0): -inf * 0 is NaN where torch's relu gives 0 (a bias of -inf).
def make_gemm_relu():
    k = golden("hard/gemm_bias_relu_f16")
    st = find(k["body"], lambda s: s.get("op") == "let" and s.get("name") == "activated")
    z = op("add", lhs="acc", rhs="bias_row")
    st["value"] = op("mul", lhs=z, rhs=op("cast", x=op("gt", lhs=z, rhs=0.0), dtype="f32"))
    write("gemm_bias_relu_f16_relu_as_z_times_mask_nan_at_minus_inf", "hard/gemm_bias_relu_f16",
          "ReLU taken as z * (z > 0): where bias[n] = -inf (a unit masked off), z = -inf and -inf * 0 = NaN, where "
          "torch.relu gives 0.", k)


# ---------------------------------------------------------------------------------------------------------
# 5. embedding_bag_sum: each bag's loop walks at most 8 x the average bag length (+ one block).
def make_bag():
    k = golden("expert/embedding_bag_sum")
    loop = find(k["body"], lambda s: s.get("op") == "for")
    cap = op("add", lhs="bag_start", rhs=op("add", lhs=op("mul", lhs=8, rhs=op("cdiv", lhs="T", rhs="B")),
                                            rhs="BLOCK_T"))
    loop["stop"] = op("minimum", lhs="bag_end", rhs=cap)
    write("embedding_bag_sum_tokens_capped_at_8x_average_bag", "expert/embedding_bag_sum",
          "Each bag's loop stops after 8 * cdiv(T, B) + BLOCK_T tokens, so a bag longer than eight times the average "
          "(T = 2000, B = 64, one bag of 1500 tokens) loses its tail.", k)


# ---------------------------------------------------------------------------------------------------------
# 6. moe_top2_routing: counts[e] clamped at an expert capacity of twice the balanced load (+ 8), as Switch
#    Transformer's capacity factor: right while routing is balanced, which iid logits always are.
def make_moe():
    k = golden("expert/moe_top2_routing")
    prefix = k["launches"][1]
    st = find(prefix["body"], lambda s: s.get("op") == "store" and s["ptr"].get("lhs") == "counts")
    balanced = op("cdiv", lhs=op("mul", lhs=2, rhs=op("mul", lhs="NB", rhs="BLOCK_T")), rhs="E")
    st["value"] = op("minimum", lhs="totals", rhs=op("add", lhs=op("mul", lhs=2, rhs=balanced), rhs=8))
    write("moe_top2_routing_counts_capped_at_twice_balanced_load", "expert/moe_top2_routing",
          "counts[e] is clamped at 2 * cdiv(2 * T_padded, E) + 8 (an expert capacity), which binds only when routing "
          "is skewed: logits with expert 0 ahead by 10 for every token (T = 1000, E = 8) give counts[0] = 1000, the "
          "kernel (T padded to 16 blocks of 64) 2 * 256 + 8 = 520.", k)


# ---------------------------------------------------------------------------------------------------------
# 7. row_top2: masked lanes padded with -1e30 in place of -inf. Values below -1e30 are finite f32 values the
#    prompt allows; the scaled-up draw (homogeneous.py, 2**32) reaches about -1.3e10.
def top2_pad(value):
    k = golden("hard/row_top2")
    ld = find(k["body"], lambda s: s.get("op") == "let" and s.get("name") == "chunk")
    assert ld["value"]["other"] == "-inf"
    ld["value"]["other"] = value
    return k


def make_top2():
    write("row_top2_masked_lanes_padded_with_minus_1e30", "hard/row_top2",
          "Lanes past N are padded with -1e30 instead of -inf, so in a row whose values are all below -1e30 (x = "
          "[[-1e35, -2e35, -3e35]], finite as the prompt promises) a padding lane (column >= N) is taken as the "
          "second largest: values [-1e35, -1e30], torch [-1e35, -2e35].", top2_pad(-1e30))
    write("row_top2_masked_lanes_padded_with_lowest_finite_control", "hard/row_top2",
          "Padding with f32's lowest finite value (-3.4028235e38): a padding lane can only tie with a real value, "
          "and ties go to the lower column, which is always the real one: correct for every finite row.",
          top2_pad(-3.4028234663852886e38), outcome="ok")


# ---------------------------------------------------------------------------------------------------------
# 8. fp8_quantize_blockwise: the 1e-4 floor applied only to all-zero blocks, where(amax == 0, 1e-4, amax), in
#    place of the prompt's max(amax, 1e-4): they differ for blocks whose amax lies in (0, 1e-4).
def make_fp8_floor():
    k = golden("expert/fp8_quantize_blockwise")
    st = find(k["body"], lambda s: s.get("op") == "let" and s.get("name") == "scales")
    st["value"]["lhs"] = op("where", cond=op("eq", lhs="amax", rhs=0.0), x=0.0001, y="amax")
    write("fp8_quantize_blockwise_floor_only_for_all_zero_blocks", "expert/fp8_quantize_blockwise",
          "The amax floor is taken only where a block is all zero (where(amax == 0, 1e-4, amax)) instead of "
          "max(amax, 1e-4): a block of tiny f16 values (all 1e-5, amax 1e-5) gets scale 1e-5 / 448 and q = 448 "
          "where the prompt's formula gives scale 1e-4 / 448 and q = 44.8 -> 44.", k)


# ---------------------------------------------------------------------------------------------------------
# 9. gelu_tanh_backward: the x^2 of the slope factor (1 + 3a x^2) squared in T before the f32 conversion. Exact
#    enough in bf16 and f32; in f16 it overflows to inf for |x| >= 256 and 0 * inf gives NaN where torch gives grad_y
#    (x > 0) or 0.
def make_gelu():
    k = golden("expert/gelu_tanh_backward")
    st = find(k["body"], lambda s: s.get("op") == "let" and s.get("name") == "slope")
    in_t = op("cast", x="v", dtype="T")
    st["value"]["rhs"]["y"] = op("cast", x=op("mul", lhs=in_t, rhs=in_t), dtype="f32")
    write("gelu_tanh_backward_slope_square_in_t_f16_overflows_past_256", "expert/gelu_tanh_backward",
          "The x^2 in the slope factor k * (1 + 3a x^2) is squared in T, the input's dtype: for the f16 call it is inf "
          "for |x| >= 256, and (1 - t^2) * inf = 0 * inf = NaN, where torch gives grad_y (x = 300) or 0 (x = -300).", k)


# ---------------------------------------------------------------------------------------------------------
# 10. prelu_channels: the slope vector never holds inf or NaN in any draw (a vector beside a matrix gets the
#     finite specials only), so forms that differ from F.prelu only at an infinite or NaN slope pass.
def prelu(form):
    k = golden("med/prelu_channels")
    st = find(k["body"], lambda s: s.get("op") == "store")
    if form == "ge":  # x >= 0 keeps x: at x = +-0 torch gives slope * 0, NaN for an infinite or NaN slope
        st["value"]["cond"]["op"] = "ge"
    else:  # max(x, 0) + slope * min(x, 0): at x > 0, x + inf * 0 = NaN where torch gives x
        st["value"] = op("add", lhs=op("maximum", lhs="v", rhs=0.0),
                         rhs=op("mul", lhs="slope", rhs=op("minimum", lhs="v", rhs=0.0)))
    return k


def make_prelu():
    write("prelu_channels_ge_zero_keeps_zero_at_infinite_slope", "med/prelu_channels",
          "x >= 0 in place of x > 0 keeps x at x = +-0, where torch computes weight * 0: NaN for a slope of inf or "
          "NaN (weight = [inf], x = [[0.0]]: torch NaN, the kernel 0).", prelu("ge"))
    write("prelu_channels_max_plus_slope_min_nan_at_infinite_slope", "med/prelu_channels",
          "max(x, 0) + weight * min(x, 0) (the catalogue's prelu_channels_max_plus_slope_min_control) gives "
          "x + inf * 0 = NaN for x > 0 where the slope is inf or NaN; torch gives x (weight = [inf], x = [[1.0]]).",
          prelu("max_min"))

if __name__ == "__main__":
    which = sys.argv[1:] or [n[5:] for n in list(globals()) if n.startswith("make_")]
    for name in which:
        globals()["make_" + name]()
