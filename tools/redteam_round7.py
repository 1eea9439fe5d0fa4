"""Red-team round 7 candidates: wrong kernels (and controls) as minimal edits of goldens, for tasks
the catalogue had no file for: narrow-float lanes under an f32 final reduction, values outside
a domain the prompt promises (NaN, inputs near 0 and 1, tiny outputs under a bf16 atol),
dtype detours that are exact on the drawn values, approximations within a loose tolerance,
size thresholds that only a product of two sizes crosses, and split reductions whose partial
sums are merged in a narrow dtype or by a first writer.

Run from the repository root: ``python tools/redteam_round7.py [NAME ...] [--out DIR]`` (default
``redteam_candidates/``), then ``python tools/redteam_verdicts.py DIR/*.json``."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from redteam_candidates import Round, find_let, golden, loops  # noqa: E402 - the round-2 script's helpers
from redteam_round4 import B, U, cast, stores  # noqa: E402
from redteam_round5 import W, let  # noqa: E402

ROUND = Round()
kernel, write = ROUND.kernel, ROUND.write
CATALOGUE = Path(__file__).resolve().parents[1] / "tests" / "redteam"


# ============================================================================ batch 1: values and dtypes

@kernel
def logit_clamped_eps():
    g = golden("easy/logit")
    find_let(g["body"], "p")["value"] = {"op": "clamp", "x": find_let(g["body"], "p")["value"], "lo": 1e-6, "hi": 0.999999}
    write("easy/logit", "clamped_to_1e_6", "wrong_result",
          "clamps x to [1e-6, 1 - 1e-6] before log(x / (1 - x)), as torch.logit(x, eps=1e-6) does, where the "
          "prompt says 'no eps clamping': right for every x in [1e-6, 1 - 1e-6]. Input: x = [1e-7]: torch.logit "
          "gives -16.118, the kernel -13.816; x = [0.9999999] (f32 1 - 1.19e-7): torch 15.94, the kernel 13.82. "
          "The domain draws x uniform in [0.001, 0.999] in every draw (no extreme domain; uniform domains are not "
          "magnified), so no x ever lies outside the clamp. Caught since the extreme draws hold 1e-7, 1e-30, 1 - 2**-23 "
          "and 1 - 2**-24", g, code="mismatch")


@kernel
def clamp_tensor_nan_becomes_bound():
    g = golden("easy/clamp_tensor")
    raised = W(B("gt", "v", "low"), "v", "low")
    stores(g["body"])[0]["value"] = W(B("lt", raised, "high"), raised, "high")
    write("easy/clamp_tensor", "nan_becomes_bound", "wrong_result",
          "clamps with two selects, where(x > lo, x, lo) then where(. < hi, ., hi): right for every ordered "
          "pair of bounds and for lo > hi (gives hi), but a NaN in x compares false and becomes lo (or hi), "
          "where torch.clamp propagates it. Input: x = [nan], lo = [0], hi = [1]: torch gives nan, the kernel 0. "
          "No draw of the task holds a NaN: x, lo and hi are normal, and only a domain's specials put NaN among the"
          " values. Caught since the extreme draws put NaN (and infinities) in x", g, code="mismatch")


@kernel
def rsqrt_f16_bit_hack_one_newton():
    g = golden("easy/rsqrt_f16")
    st = stores(g["body"])[0]
    guess = {"op": "bitcast", "x": B("sub", 1597463007, B("shr", {"op": "bitcast", "x": "v", "dtype": "i32"}, 1)), "dtype": "f32"}
    g["body"].insert(-1, let("y0", guess))
    newton = B("mul", "y0", B("sub", 1.5, B("mul", B("mul", 0.5, "v"), B("mul", "y0", "y0"))))
    st["value"] = cast(newton, "f16")
    write("easy/rsqrt_f16", "bit_hack_one_newton_step", "wrong_result",
          "the fast inverse square root: the f32 bits' magic-constant guess 0x5f3759df - (i >> 1) and one Newton "
          "step, relative error up to 1.75e-3 (about two f16 ulps), where the prompt asks for rsqrt in f32 rounded "
          "once to f16. Input: x = [1.0, 0.01] (f16): torch gives [1.0, 10.0], the kernel [0.99854, 9.984]. "
          "The f16 tolerance (rtol = atol = 1e-2) is about ten f16 ulps, so a result two ulps off passed every "
          "element; the task now compares in f16 steps (one step off near ties only)", g, code="mismatch")


@kernel
def selu_bf16_small_inputs_flushed():
    g = golden("easy/selu_bf16")
    st = stores(g["body"])[0]
    st["value"] = W(B("lt", U("abs", "v"), 0.0078125), 0.0, st["value"])
    write("easy/selu_bf16", "small_inputs_flushed", "wrong_result",
          "returns 0 wherever |x| < 2**-7 (a 'denormal-like' flush of small inputs): every output it zeroes is below "
          "0.0082, inside the default bf16 atol of 1e-2. Input: x = [0.005] (bf16 0.0050049): torch gives 0.0052490 "
          "(bf16), the kernel 0. "
          "The task kept the default bf16 atol (1e-2), so any output below it could be anything near 0; it now "
          "compares in bf16 steps (one step off near ties only)", g, code="mismatch")


def _narrow_lanes(task, dtype, term):
    """The golden of a row reduction whose per-lane running sums (``partial_sums``) are kept in ``dtype``,
    adding ``term`` of each chunk: only the final reduction of the lanes (made f32 by the caller) is wide."""
    g = golden(task)
    loop = loops(g["body"])[0]
    loop["carry"][0]["init"]["dtype"] = dtype
    find_let(loop["body"], "new_partial_sums")["value"] = B("add", "partial_sums", term)
    return g


@kernel
def row_mean_bf16_lanes_in_bf16():
    g = _narrow_lanes("med/row_mean_bf16", "bf16", "chunk")
    find_let(g["body"], "mean")["value"]["lhs"]["x"] = cast("partial_sums", "f32")
    write("med/row_mean_bf16", "lanes_accumulate_in_bf16", "wrong_result",
          "each lane's running sum over the row's chunks is bf16 (8 significant bits); only the final reduction of "
          "the 1024 lanes is f32: the prompt asks for f32 accumulation. Input: M = 1, N = 8192, x[0, 0] = 65536, "
          "x[0, 1024 * k] = 256 for k = 1..7, others 0: each 65536 + 256 is a tie that rounds back to 65536 in "
          "bf16 (a step of 512 there), so the kernel gives 8.0 where torch gives 8.25. "
          "A lane holds at most N / 1024 <= 8 terms, and the means of normal rows are ~1/sqrt(N), inside the bf16 "
          "atol of 1e-2; the extreme draws' magnification scales the atol with the output. Caught since some rows of an "
          "extreme draw hold 16 in their first eighth and 16 * 2**-8 (a tie in bf16 at 16) in the rest "
          "(reductions.with_mixed_magnitude_rows), at N = 8192", g, code="mismatch")


@kernel
def row_l1_norm_f16_lanes_in_f16():
    g = _narrow_lanes("med/row_l1_norm_f16", "f16", U("abs", "chunk"))
    stores(g["body"])[0]["value"]["x"] = cast("partial_sums", "f32")
    write("med/row_l1_norm_f16", "lanes_accumulate_in_f16", "wrong_result",
          "each lane sums |x| over the row's chunks in f16 (the prompt: accumulate in f32, 'an f16 accumulator "
          "loses digits on long rows'); only the 1024 lanes' final reduction is f32, so a lane holds at most "
          "N / 1024 terms. Input: N = 1025, x[0, 0] = 2048, x[0, 1024] = 1: lane 0's f16 sum 2049 rounds to "
          "2048 and the kernel gives 2048 where torch gives 2049. "
          "A lane holds at most 8 terms of |x| ~ 0.8 (sums ~6, f16 step 0.004): the error is ~1e-5 of the norm, "
          "inside rtol 1e-4, in every draw, magnified ones too. Caught since some rows of an extreme draw hold 16 in a "
          "leading part and 16 * 2**-11 (a tie in f16 at 16) in the rest (reductions.with_mixed_magnitude_rows)", g,
          code="mismatch")


@kernel
def transpose_bf16_through_f16():
    g = golden("hard/transpose_bf16")
    find_let(g["body"], "tile")["value"] = cast(find_let(g["body"], "tile")["value"], "f16")
    st = stores(g["body"])[0]
    st["value"] = cast(st["value"], "bf16")
    write("hard/transpose_bf16", "tile_moved_as_f16", "wrong_result",
          "moves the tile as f16 (cast after the load, back to bf16 at the store, as a kernel that transposes "
          "through an f16 path would): exact for every bf16 value within f16's range and above 2**-17, but "
          "bf16's range is f32's. Input: x = [[1e5]] (bf16 99840): torch gives 99840, the kernel inf; "
          "x = [[1e-7]]: the kernel 1.19e-7. "
          "x was normal (magnified in extreme draws by at most 4096, below 65504), and values below 2**-17 too "
          "rare to be drawn: every drawn bf16 value survived f16 exactly; the extreme draws now take every bf16 "
          "value", g, code="mismatch")


@kernel
def splitk_gemv_f16_lanes_in_f16():
    g = golden("expert/splitk_gemv_f16")
    main, tail = loops(g["body"])
    main["carry"][0]["init"]["dtype"] = "f16"
    find_let(main["body"], "new_acc")["value"] = B("add", "acc", cast(B("mul", "wv", "xv"), "f16"))
    find_let(tail["body"], "new_acc2")["value"] = B("add", "acc2", cast(B("mul", "wt", "xt"), "f16"))
    stores(g["body"])[0]["value"]["x"]["x"] = cast("acc2", "f32")
    write("expert/splitk_gemv_f16", "lanes_accumulate_in_f16", "wrong_result",
          "each of the [8, 512] lanes accumulates its products in f16 (the prompt: do not round partial sums to "
          "f16); the final reduction over the 512 lanes is f32. Input: M = N = 1, K = 513, x = ones, "
          "weight[0, 0] = 2048, weight[0, 512] = 1, others 0: lane 0's f16 sum 2048 + 1 stays 2048, the "
          "kernel gives 2048 where torch gives 2049. Caught at K = 32768 (M = N = 8), where 2 of 64 sums, near "
          "zero, differ by more than the f16 atol", g, code="mismatch")


@kernel
def logaddexp_infinities_control():
    g = golden("easy/logaddexp")
    st = stores(g["body"])[0]
    st["value"] = W(B("eq", "a", "b"), B("add", "a", 0.6931471805599453), st["value"])
    write("easy/logaddexp", "equal_inputs_plus_ln2_control", "ok",
          "CONTROL (correct): where x == y, out = x + ln 2 (the golden's formula there gives x + log1p(1), the "
          "same f32 value), so logaddexp(-inf, -inf) = -inf and logaddexp(inf, inf) = inf as torch gives, "
          "where |x - y| = nan made the golden's NaN", g)


@kernel
def logaddexp_equal_infinities_make_nan():
    g = golden("easy/logaddexp")
    stores(g["body"])[0]["value"] = "general"
    write("easy/logaddexp", "equal_infinities_make_nan", "wrong_result",
          "m + log1p(exp(-|x - y|)) with m = max(x, y) and no guard (the prompt's own hint, and the golden until "
          "round 7): where x and y are the same infinity, |x - y| = inf - inf is NaN. Input: x = [-inf, inf], "
          "y = [-inf, inf]: torch.logaddexp gives [-inf, inf], the kernel [nan, nan]. Caught since the extreme "
          "draws put NaN and infinities in both inputs, every pair of them at the same element", g, code="mismatch")


# ============================================================================ batch 2: sizes

@kernel
def row_mean_abs_dev_tail_dropped_past_2pow18_elements():
    g = golden("med/row_mean_abs_dev")
    g["params"].append({"name": "M"})
    first = loops(g["body"])[0]
    big = B("minimum", B("shr", B("mul", "M", "N"), 18), 1)
    first["stop"] = B("sub", "N", B("mul", B("rem", "N", "BLOCK"), big))
    write("med/row_mean_abs_dev", "mean_tail_dropped_past_2pow18_elements", "wrong_result",
          "the mean's loop stops at N - (N % 1024) * min((M * N) >> 18, 1): for a matrix of 2**18 elements or "
          "more it skips each row's partial last chunk (a threshold on the product of two sizes, written as "
          "arithmetic). Input: M = 256, N = 1025, x[:, 1024] = 1000, others 0: the mean is 0 instead of 0.976, "
          "out = 0.976 where torch gives 1.950. "
          "No CPU draw has M * N >= 2**18: hypothesis draws stop at cpu_max (48 x 2500), a targeted draw makes one "
          "size large and the others small (<= 17), the range-maximum draws take the others at 16 (8192 x 16 = "
          "131072); GPU draws (M, N up to 8192) would reach it. Caught since CPU mode's joint draw takes every size at "
          "one odd value within 5 * 2**16 elements (M = N = 571: 326041 elements, draws.joint_draw)", g, code="mismatch")

@kernel
def hardtanh_bounds_straddle_zero():
    g = golden("easy/hardtanh")
    st = stores(g["body"])[0]
    st["value"] = W(B("gt", "v", 0.0), B("minimum", "v", "max_val"), B("maximum", "v", "min_val"))
    write("easy/hardtanh", "bounds_assumed_to_straddle_zero", "wrong_result",
          "clamps each sign against one bound only, where(x > 0, min(x, max_val), max(x, min_val)): right whenever "
          "min_val <= 0 <= max_val (every default and drawn call: min_val in [-1.5, -0.1], max_val in [0.1, 2]), "
          "but the prompt allows any min_val <= max_val. Input: x = [0.1, -0.3], min_val = 0.25, max_val = 0.5: "
          "F.hardtanh gives [0.25, 0.25], the kernel [0.1, 0.25]. "
          "scalar_ranges draw min_val in [-1.5, -0.1] and max_val in [0.1, 2.0]: no call has both bounds on one "
          "side of 0. Caught since both are drawn from [-2, 2] and sorted (min_val at most max_val), both above 0 "
          "in the extreme draws", g, code="mismatch")


@kernel
def channel_affine_bf16_store_truncates():
    g = golden("easy/channel_affine_bf16")
    st = stores(g["body"])[0]
    bits = {"op": "bitcast", "x": "affine", "dtype": "i32"}
    st["value"] = cast({"op": "bitcast", "x": B("and", bits, -65536), "dtype": "f32"}, "bf16")
    write("easy/channel_affine_bf16", "store_truncates_to_bf16", "wrong_result",
          "rounds the f32 result to bf16 by dropping its low 16 bits (round toward zero, the cheap bit trick) where "
          "the prompt asks for round to nearest even at the store: each output up to one bf16 step (2**-7 relative, "
          "0.78%) toward zero. Input: x = [[1.0]], weight = [1.0], bias = [0.005859375] (3 * 2**-9, exact in bf16): "
          "torch gives 1.0078125, the kernel 1.0. "
          "The bf16 tolerance (rtol 1e-2) is wider than one bf16 step (2**-7 = 0.0078), so rounding toward zero "
          "was within it for every element; the task now compares in bf16 steps, where a step off on about half "
          "the elements is far past the share of near ties", g, code="mismatch")


@kernel
def standardize_rows_one_pass_variance():
    g = golden("med/standardize_rows")
    first, second, _ = loops(g["body"])
    first["carry"].append({"name": "partial_squares", "init": {"op": "full", "shape": ["BLOCK"], "value": 0.0, "dtype": "f32"}, "next": "new_partial_squares"})
    first["body"].append(let("new_partial_squares", {"op": "fma", "x": "chunk", "y": "chunk", "z": "partial_squares"}))
    g["body"].remove(second)
    total = {"op": "sum", "x": "partial_sums", "axis": 0}
    find_let(g["body"], "std")["value"]["x"]["lhs"] = B("sub", {"op": "sum", "x": "partial_squares", "axis": 0}, B("mul", total, "mean"))
    write("med/standardize_rows", "one_pass_variance", "wrong_result",
          "one pass: std = sqrt((sum x^2 - sum x * mean) / (N - 1)) in f32, cancelling catastrophically where the "
          "row's mean is large against its spread. Exact enough on the task's draws (uniform in [-3, 13]: mean 5 "
          "against a spread of 4.6). Input: x = [[1000.5, 999.5, 1000.25, 999.75]]: torch gives [1.095, -1.095, "
          "0.548, -0.548], the kernel [1.225, -1.225, 0.612, -0.612]; x = [[3.0, 3.0009765625]]: the sums' "
          "rounding leaves a variance of 0 and the kernel gives [-inf, inf] where torch gives [-0.707, 0.707]. "
          "Caught on rows of N = 2 (a few of 2144), whose two values' squares cancel the same way", g,
          code="mismatch")


@kernel
def hypot_no_zero_guard():
    g = golden("easy/hypot")
    st = stores(g["body"])[0]
    st["value"] = "scaled"
    write("easy/hypot", "no_both_zero_guard", "wrong_result",
          "the scaled form m * sqrt(1 + (min/m)^2) without the prompt's 'out = 0 where both are 0': min/m = 0/0 "
          "is NaN there. Input: x = [0.0], y = [-0.0]: torch.hypot gives 0, the kernel nan. The extreme draws "
          "put zeros among the normal values, both zero at 1 element in 64", g, code="mismatch")


def _vecmat_split(first_writer: bool):
    g = golden("med/vecmat")
    g["grid"] = [g["grid"][0], {"op": "cdiv", "lhs": "M", "rhs": "BLOCK_M"}]
    loop = loops(g["body"])[0]
    at = g["body"].index(loop)
    body = [let("row_start", B("mul", {"op": "program_id", "axis": 1}, "BLOCK_M")), let("partial", {"op": "full", "shape": ["BLOCK_M", "BLOCK_N"], "value": 0.0, "dtype": "f32"})]
    body += [s for s in loop["body"]]
    g["body"][at:at + 1] = body
    st = stores(g["body"])[0]
    total = {"op": "sum", "x": "new_partial", "axis": 0}
    add = {"op": "atomic_add", "ptr": st["ptr"], "val": total, "mask": st["mask"], "sem": "relaxed"}
    if first_writer:
        g["body"][-1] = {"op": "if", "cond": B("eq", {"op": "program_id", "axis": 1}, 0),
                         "then": [dict(st, value=total)], "else": [add]}
    else:
        g["body"][-1] = add
        g["outputs"][0]["init"] = 0
    return g


@kernel
def vecmat_first_row_block_stores():
    write("med/vecmat", "first_row_block_stores_others_add", "wrong_result",
          "splits the rows over grid axis 1 (one 512-row block per program) and merges the column partials: the "
          "first row block's program stores its partial, the others atomic_add theirs into out, with no "
          "initialisation. Right only if program (c, 0) runs before every other program of column block c; a GPU "
          "runs them in any order, and a later store overwrites the sums already added. Input: M = 1024, N = 1, "
          "v = ones, x = ones: torch gives 1024; if the second row block's program adds first, the kernel gives 512",
          _vecmat_split(True), code="race")


@kernel
def vecmat_row_blocks_atomic_into_zero_control():
    write("med/vecmat", "row_blocks_atomic_add_into_zeroed_out_control", "ok",
          "CONTROL (correct): the rows split over grid axis 1, each program's column partial atomic_added into an "
          "out that starts at 0 (the output's init): f32 sums in an order the GPU picks, within the task's atol "
          "of 1e-3", _vecmat_split(False))


@kernel
def gemv_f16_split_k_f16_atomics():
    g = golden("hard/gemv_f16")
    g["outputs"][0]["init"] = 0
    g["meta"].append({"name": "SPLIT", "value": 8})
    g["grid"] = [g["grid"][0], "SPLIT"]
    per = B("mul", {"op": "cdiv", "lhs": {"op": "cdiv", "lhs": "K", "rhs": "SPLIT"}, "rhs": "BLOCK_K"}, "BLOCK_K")
    g["body"][0:0] = [let("k_per_split", per), let("k_first", B("mul", {"op": "program_id", "axis": 1}, "k_per_split")),
                      let("k_end", B("minimum", B("add", "k_first", "k_per_split"), "K"))]
    loop = loops(g["body"])[0]
    loop["start"], loop["stop"] = "k_first", "k_end"
    st = stores(g["body"])[0]
    g["body"][-1] = {"op": "atomic_add", "ptr": st["ptr"], "val": st["value"], "mask": st["mask"], "sem": "relaxed"}
    write("hard/gemv_f16", "split_k_partials_added_in_f16", "wrong_result",
          "splits K over 8 programs per row block and atomic_adds each split's f32 partial, rounded to f16, into an "
          "f16 y that starts at 0: y is rounded 8 times, in an order the GPU picks, where the prompt rounds each "
          "finished f32 sum once. Input: N = 1, K = 2048, x = ones, weight[0] = [1000] * 256, then [-999.5] * 256, "
          "then zeros: the f32 sum is 128, but the first two splits' partials, 256000 and -255872, overflow f16 "
          "(max 65504) to inf and -inf, and the kernel gives nan where torch gives 128. "
          "Drawn partials (normal products, |partial| ~ sqrt(K / 8)) stay far below f16's range, and 8 roundings of"
          " a sum are within the f16 rtol/atol of 1e-2 except for sums very near zero. Caught since CPU mode's "
          "cancelling draw (N = 16, K = 16384) gives a quarter of the rows halves that sum to about +-328 and cancel "
          "to ~0.1 (reductions.with_cancelling_halves): an f16 partial there is rounded by up to 0.03, y by up to "
          "0.125", g, code="mismatch")


def _splitk_combine(f16_partials: bool):
    """The catalogue's split-K kernel for splitk_gemv_f16 (each of 8 splits stores its f32 partial sums in
    scratch, a combine launch adds them) with a combine that adds every split's partial in f32, each one
    rounded to f16 first where ``f16_partials``."""
    g = json.loads((CATALOGUE / "splitk_gemv_f16_first_split_only.json").read_text())["kernel"]
    body = g["launches"][1]["body"]
    at = body.index(find_let(body, "partials"))
    term = {"op": "load", "ptr": B("add", B("add", "partial", B("mul", "split", "MN")), "offsets"), "mask": "in_bounds"}
    term = cast(cast(term, "f16"), "f32") if f16_partials else term
    body[at] = {"op": "for", "var": "split", "stop": "SPLIT", "step": 1,
                "carry": [{"name": "total", "init": {"op": "full", "shape": ["BLOCK"], "value": 0.0, "dtype": "f32"},
                           "next": "new_total"}],
                "body": [let("new_total", B("add", "total", term))]}
    stores(body)[0]["value"] = cast("total", "f16")
    return g


@kernel
def splitk_gemv_f16_combine_adds_f16_partials():
    write("expert/splitk_gemv_f16", "combine_adds_partials_rounded_to_f16", "wrong_result",
          "splits K over 8 programs, each storing its f32 partial sums in scratch, and the combine launch adds the 8 "
          "partials in f32 after rounding each to f16 (as a kernel that keeps its scratch in f16 would): the prompt "
          "says not to round partial sums to f16. Input: M = N = 1, K = 2048, x = ones, weight[0] = [1000.5] * 256 "
          "then [-1000] * 256, then zeros: the f32 sum is 128, the two splits' partials 256128 and -256000 overflow f16, "
          "and the kernel gives nan. Partials of normal products (~sqrt(K / 8)) are rounded by far less than the atol; "
          "caught by CPU mode's cancelling draw (M = N = 8, K = 32768: halves of about +-328 that cancel, "
          "reductions.with_cancelling_halves)", _splitk_combine(True), code="mismatch")


@kernel
def splitk_gemv_f16_combine_adds_f32_partials_control():
    write("expert/splitk_gemv_f16", "combine_adds_f32_partials_control", "ok",
          "CONTROL (correct): splits K over 8 programs, each storing its f32 partial sums (a dot) in scratch, and a "
          "combine launch adds the 8 partials in f32 and rounds once to f16: passes the cancelling draw, whose "
          "partials are large and whose result is small", _splitk_combine(False))


@kernel
def vecmat_row_blocks_atomic_into_unwritten_out():
    g = _vecmat_split(False)
    del g["outputs"][0]["init"]
    write("med/vecmat", "row_blocks_atomic_add_into_unwritten_out", "wrong_result",
          "the rows split over grid axis 1, each program's column partial atomic_added into out, which nothing "
          "zeroes first: the sums start from whatever the output's memory held (the harness's NaN poison, a "
          "previous call's result in a caching allocator). Input: M = 1, N = 1, v = [1], x = [[2]] into an out "
          "buffer holding 5: torch gives 2, the kernel 7", g, code="read_before_write")


@kernel
def renorm_rows_squared_norm_against_maxnorm():
    g = golden("med/renorm_rows")
    find_let(g["body"], "factor")["value"]["cond"]["lhs"] = {"op": "sum", "x": "partial_squares", "axis": 0}
    write("med/renorm_rows", "squared_norm_against_maxnorm", "wrong_result",
          "tests the row's sum of squares, not its norm, against maxnorm (norm^2 > maxnorm): for maxnorm > 1 a row "
          "whose norm lies in (sqrt(maxnorm), maxnorm] is scaled down although torch.renorm copies it. Input: "
          "x = [[3, 0]], maxnorm = 4: torch gives [[3, 0]], the kernel [[4, 0]]", g, code="mismatch")


@kernel
def outer_column_grid_capped_at_32_blocks():
    g = golden("easy/outer")
    g["grid"][1] = B("minimum", g["grid"][1], 32)
    write("easy/outer", "column_grid_capped_at_32_blocks", "wrong_result",
          "caps the column axis of the grid at 32 programs (a grid sized for N <= 4096, 32 blocks of 128): columns "
          "past 4096 are never written. Input: M = 1, N = 4097: out[0, 4096] is left unwritten", g,
          code="unwritten")


@kernel
def rsqrt_f16_exp2_of_log2_control():
    g = golden("easy/rsqrt_f16")
    st = stores(g["body"])[0]
    st["value"] = cast(U("exp2", B("mul", -0.5, U("log2", "v"))), "f16")
    write("easy/rsqrt_f16", "exp2_of_half_log2_control", "ok",
          "CONTROL (correct): 1 / sqrt(x) as exp2(-0.5 * log2(x)) in f32, a few f32 ulps from rsqrt, rounded "
          "once to f16", g)


@kernel
def f32_to_i32_through_f16():
    g = golden("easy/f32_to_i32")
    st = stores(g["body"])[0]
    st["value"] = cast(cast("v", "f16"), "i32")
    write("easy/f32_to_i32", "through_f16", "wrong_result",
          "converts through f16 (cast to f16, then to i32), as a kernel that narrows loads to halve the bytes "
          "would: f16 rounds to nearest before the truncation and holds integers exactly only up to 2048. "
          "Input: x = [2.9995, 2049.0, 70000.0]: torch gives [2, 2049, 70000], the kernel [3, 2048, 2147483647] "
          "(f16 rounds 2.9995 to 3.0 and 70000 to inf)", g, code="mismatch")


@kernel
def hardtanh_where_chain_control():
    g = golden("easy/hardtanh")
    st = stores(g["body"])[0]
    st["value"] = W(B("lt", "v", "min_val"), "min_val", W(B("gt", "v", "max_val"), "max_val", "v"))
    write("easy/hardtanh", "where_chain_control", "ok",
          "CONTROL (correct): where(x < min_val, min_val, where(x > max_val, max_val, x)): each bound tested on "
          "its own whatever their signs, and a NaN compares false twice and passes through as F.hardtanh's", g)


# (new kernels above)
if __name__ == "__main__":
    ROUND.main(sys.argv[1:])
