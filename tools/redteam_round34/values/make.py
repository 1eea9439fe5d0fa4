"""Round 34 (helper b): operators as PyTorch defines them, at values the draws never reach. Builds every file
of this folder from a task's golden. Run from the repository root: .venv/bin/python tools/redteam_round34/values/make.py
(files go to $OUT, default tools/redteam_round34/open/)."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lib import golden, let, find, op, write  # noqa: E402

MASK31 = 2147483647


def key(v):
    """The floats' ordered int key (the sort goldens'): bits ^ ((bits >> 31) & 0x7fffffff). Monotone for
    numbers; +NaN (sign clear) above +inf, but a NaN with its sign bit set below -inf."""
    b = op("bitcast", x=v, dtype="i32")
    return op("xor", lhs=b, rhs=op("and", lhs=op("shr", lhs=b, rhs=31), rhs=MASK31))


def zero_canonical(v):
    return op("add", lhs=v, rhs=0.0)  # -0.0 + 0.0 = +0.0: the keys of the two zeros tie


# ---------------------------------------------------------------------------------------------------------
# 1. row_argmax: the comparison made on ordered int keys (zeros made one, so the catalogue's signed-zero file
#    does not apply), no explicit NaN clause: a NaN whose sign bit is set has the smallest key and never wins.
def argmax_key(control=False):
    k = golden("med/row_argmax")
    st = let(k["body"], "improves")
    gt = op("gt", lhs=key(zero_canonical("chunk")), rhs=key(zero_canonical("best_value")))
    if control:  # a NaN best is final, and any NaN wins over a number, as the golden's clause
        gt = op("and", lhs=op("eq", lhs="best_value", rhs="best_value"),
                rhs=op("or", lhs=gt, rhs=op("ne", lhs="chunk", rhs="chunk")))
    st["value"] = gt
    return k


def make_argmax():
    write("row_argmax_int_key_negative_nan_ranks_lowest", "med/row_argmax",
          "Each lane's running argmax compares ordered int keys of the floats (bits ^ ((bits >> 31) & 0x7fffffff), "
          "zeros made +0.0 first) with no NaN clause. A NaN with its sign bit clear (torch's float('nan')) has a key "
          "above +inf, so it wins; but a NaN with its sign bit set (0xFFC00000: x86's "
          "default NaN, what inf - inf or 0 * inf gives on the CPU, or -x of a NaN) has a key below -inf and never "
          "wins. torch.argmax counts every NaN as the largest: x = [[1.0, -nan, 3.0]] gives 1, the kernel 2.",
          argmax_key())
    write("row_argmax_int_key_nan_clause_control", "med/row_argmax",
          "The same int-key comparison, taken only while the lane's best is not NaN, or'ed with the golden's NaN "
          "clause (a NaN chunk beats a non-NaN best): the first NaN, of either sign, wins and stays. Correct.", argmax_key(control=True), outcome="ok")


# ---------------------------------------------------------------------------------------------------------
# 2. top1_mask: the row maximum taken on ordered int keys (a max reduction of i32, turned back into the float):
#    a row holding a negative-signed NaN gets its largest number as maximum and marks it; torch's amax is NaN.
def top1_key(control=False):
    k = golden("med/top1_mask")
    loop = find(k["body"], lambda s: s.get("op") == "for")
    lane_init = -2139095041  # key(-inf): 0xFF800000 ^ 0x7FFFFFFF
    loop["carry"] = [{"name": "lane_key", "init": op("full", shape=["BLOCK"], value=lane_init, dtype="i32"),
                      "next": "new_lane_key"}]
    chunk = zero_canonical("chunk")
    if control:  # every NaN made the canonical +NaN first: its key is the largest
        chunk = op("where", cond=op("ne", lhs="chunk", rhs="chunk"), x="nan", y=chunk)
    st = let(loop["body"], "new_lane_max")
    st["name"] = "new_lane_key"
    st["value"] = op("maximum", lhs="lane_key", rhs=key(chunk))
    rm = let(k["body"], "row_max")
    rm["name"] = "row_key"
    rm["value"] = op("max", x="lane_key", axis=0)
    i = k["body"].index(rm)
    k["body"].insert(i + 1, op("let", name="row_max", value=op("bitcast", x=op(
        "xor", lhs="row_key", rhs=op("and", lhs=op("shr", lhs="row_key", rhs=31), rhs=MASK31)), dtype="f32")))
    return k


def make_top1_key():
    write("top1_mask_int_key_row_max_negative_nan_marks_numbers", "med/top1_mask",
          "The row maximum is a max of ordered int keys (bits ^ ((bits >> 31) & 0x7fffffff)) turned back into a "
          "float. torch's NaN (sign bit clear) has the largest key, so a row holding it gets NaN and marks nothing, "
          "as the prompt says; but a NaN with its sign bit set (x86's default NaN, 0xFFC00000) has the smallest key, "
          "so its row's maximum is its largest number, which is marked. x = [[1.0, -nan, 3.0]]: torch "
          "[F, F, F], the kernel [F, F, T].", top1_key())
    write("top1_mask_int_key_nan_canonicalised_control", "med/top1_mask",
          "The same int-key maximum after every NaN is replaced by the canonical +NaN (where(x != x, nan, x)): "
          "a row holding any NaN gets NaN. Correct.", top1_key(control=True), outcome="ok")


# ---------------------------------------------------------------------------------------------------------
# 3. top1_mask: 'equal to the maximum' tested with an absolute tolerance of 1e-12. The domain is integers in
#    [-3, 3] (ties at 1 apart, near ties one f32 step from 3): no two values ever lie within 1e-12 but tiny ones.
def top1_tolerance(control=False):
    k = golden("med/top1_mask")
    st = find(k["body"], lambda s: s.get("op") == "store")
    diff = op("sub", lhs="row_max", rhs="chunk")
    close = op("ge", lhs=0.0, rhs=diff) if control else op("le", lhs=diff, rhs=1e-12)
    st["value"] = op("or", lhs=op("eq", lhs="chunk", rhs="row_max"), rhs=close)
    return k


def make_top1_tol():
    write("top1_mask_within_1e-12_of_row_max", "med/top1_mask",
          "An element is marked where row_max - x <= 1e-12 (or x == row_max, for the infinities), an absolute "
          "tolerance 'for rounding'. Every drawn row holds integers in [-3, 3] (and NaN, infinities, signed zeros, "
          "a near tie one f32 step below 3): no element is within 1e-12 of its maximum without being equal. A row "
          "of small numbers, which the prompt allows (any f32 matrix), is marked wrongly: x = [[1e-13, 0.0, "
          "-5e-13]]: torch [T, F, F], the kernel [T, T, T].", top1_tolerance())
    write("top1_mask_difference_not_positive_control", "med/top1_mask",
          "Marked where row_max - x <= 0 (or x == row_max): with gradual underflow the difference of two distinct "
          "floats is never 0, so this is equality. Correct.", top1_tolerance(control=True), outcome="ok")


# ---------------------------------------------------------------------------------------------------------
# 4. softmax_f16: a row of all -inf (a fully masked row) gives zeros, the masked-softmax convention; torch.softmax
#    gives NaN there (exp(-inf - -inf)). Draws put an infinity at one element in 448 at most: never a whole row.
def softmax_masked(control=False):
    k = golden("med/softmax_f16")
    st = let(k["body"], "probabilities")
    st["value"] = op("where", cond=op("eq", lhs="row_max", rhs="-inf"), x="nan" if control else 0.0,
                     y=st["value"])
    return k


def make_softmax():
    write("softmax_f16_all_minus_inf_row_gives_zeros", "med/softmax_f16",
          "A row whose maximum is -inf (every element -inf: a fully masked row of attention scores) is stored as "
          "zeros, as a masked softmax would; torch.softmax gives NaN there (exp(-inf - (-inf)) = exp(NaN)). The "
          "prompt promises nothing finite, and the nonfinite draw puts -inf at one element in about 450, never a "
          "whole row. x = [[-inf, -inf, -inf]] (f16): torch [nan, nan, nan], the kernel [0, 0, 0].",
          softmax_masked())
    write("softmax_f16_all_minus_inf_row_gives_nan_control", "med/softmax_f16",
          "The same test of row_max == -inf, storing NaN as torch does: correct.", softmax_masked(control=True),
          outcome="ok")


# ---------------------------------------------------------------------------------------------------------
# 5. f32_to_f16: magnitudes above 65504 sent to +-inf before the cast. Round to nearest takes (65504, 65520) to
#    65504 (the prompt says so: 'beyond the largest finite f16 (65504, after rounding)').
def f16_overflow(threshold, control=False):
    k = golden("easy/f32_to_f16")
    st = find(k["body"], lambda s: s.get("op") == "store")
    inf = op("where", cond=op("lt", lhs="v", rhs=0.0), x="-inf", y="inf")
    test = op("ge", lhs=op("abs", x="v"), rhs=threshold) if control else op("gt", lhs=op("abs", x="v"), rhs=threshold)
    st["value"] = op("cast", x=op("where", cond=test, x=inf, y="v"), dtype="f16")
    return k


def make_f16():
    write("f32_to_f16_inf_above_65504_before_rounding", "easy/f32_to_f16",
          "Magnitudes above 65504 are sent to +-inf before the cast, but rounding to nearest even takes every "
          "|x| < 65520 (half an f16 step past 65504) to 65504: x = 65510.0 gives torch 65504, the kernel inf. The "
          "normal draw (scale 30000) puts an element in (65504, 65520) at about 4e-5 per element; the full-bits "
          "extreme draw at 1e-6.", f16_overflow(65504.0))
    write("f32_to_f16_inf_from_65520_control", "easy/f32_to_f16",
          "Magnitudes of 65520 and more sent to +-inf before the cast, which rounds them to inf anyway: correct.",
          f16_overflow(65520.0, control=True), outcome="ok")


# ---------------------------------------------------------------------------------------------------------
# 6. frac: trunc(x) as float(int64(x)). Exact for |x| < 2**63; past it the float-to-int conversion saturates
#    (cvt.rzi, and the language's cast) at +-9.22e18, where torch.frac gives 0. The draws reach 2**32.
def frac_i64(control=False):
    k = golden("easy/frac")
    st = let(k["body"], "truncated")
    through = op("cast", x=op("cast", x="v", dtype="i64"), dtype="f32")
    through = op("where", cond=op("eq", lhs=op("abs", x="v"), rhs="inf"), x="v", y=through)  # inf - inf: NaN
    if control:  # every |x| >= 2**23 is an integer already: trunc(x) = x there (inf and NaN too)
        through = op("where", cond=op("lt", lhs=op("abs", x="v"), rhs=8388608.0), x=through, y="v")
    st["value"] = through
    return k


def make_frac():
    write("frac_trunc_through_i64_saturates_past_2e63", "easy/frac",
          "trunc(x) taken as float(int64(x)): exact while |x| < 2**63, but the conversion saturates past it (the "
          "GPU's cvt.rzi.s64.f32 and the language's cast give +-9223372036854775807), so x = 1e20 gives "
          "1e20 - 9.223372e18 = 9.08e19 where torch.frac gives 0 (infinities are kept as their own trunc, so "
          "frac(inf) is NaN as torch's). The prompt's "
          "x is any f32 (frac of every |x| >= 2**23 is 0); the draws' magnitudes stop at 2**32 (extreme and spread "
          "draws), where the i32 version (the catalogue's frac_through_i32) is caught.", frac_i64())
    write("frac_trunc_through_i64_below_2e23_control", "easy/frac",
          "The same i64 round trip used only where |x| < 2**23; x itself elsewhere (an integer already, or inf or "
          "NaN): correct.", frac_i64(control=True), outcome="ok")


# ---------------------------------------------------------------------------------------------------------
# 7. count_positive: 'positive' tested against the smallest normal f32 (as a GPU flushing subnormals to zero
#    would compare): a positive subnormal is not counted. The domain is integers in [-2, 2], no extreme draws.
def count_flush(threshold):
    k = golden("med/count_positive")
    st = let(k["body"], "is_positive")
    st["value"]["x"] = op("ge", lhs="chunk", rhs=threshold)
    return k


def make_count():
    write("count_positive_subnormals_flushed", "med/count_positive",
          "Positive taken as x >= 1.1754944e-38 (f32's smallest normal number), as a comparison that flushes "
          "subnormal inputs to zero (setp.ftz) counts: the positive subnormals, which are strictly positive, are "
          "not counted. x = [[1e-40, 2.0, -1e-40]] (f32 subnormals): torch 2, the kernel 1. The domain is integers "
          "in [-2, 2] with no extreme draws, and the scaled-down draws stop at 2**-40.", count_flush(1.1754944e-38))
    write("count_positive_from_least_subnormal_control", "med/count_positive",
          "Positive taken as x >= 1.4e-45 (rounded to f32's least subnormal, 2**-149): every positive f32 is at "
          "least that, so this is x > 0. Correct.", count_flush(1.4e-45), outcome="ok")


# ---------------------------------------------------------------------------------------------------------
# 8. row_any_above: the comparison made in f16 (x and the threshold rounded to f16 first). Integers in [-3, 3]
#    and thresholds from a list of halves are exact in f16; a value just above the threshold rounds onto it.
def any_above_f16(dtype):
    k = golden("med/row_any_above")
    st = let(k["body"], "above")
    st["value"]["x"] = op("gt", lhs=op("cast", x="chunk", dtype=dtype), rhs=op("cast", x="threshold", dtype=dtype))
    return k


def make_any_above():
    write("row_any_above_compares_in_f16", "med/row_any_above",
          "x and the threshold are rounded to f16 before the strict comparison, so an element above the threshold "
          "by less than half an f16 step (2.0005 against 2.0: f16 steps are 2**-9 there) rounds onto it and does "
          "not count: x = [[2.0005, 1.0]], threshold 2.0: torch True, the kernel False. The domain is integers in "
          "[-3, 3] and the thresholds halves, all exact in f16; the task has no extreme draws (no near ties).",
          any_above_f16("f16"))
    write("row_any_above_compares_in_f64_control", "med/row_any_above",
          "The comparison made in f64: both values are exact there, so it is the f32 comparison. Correct.",
          any_above_f16("f64"), outcome="ok")


# ---------------------------------------------------------------------------------------------------------
# 9. softmax_temperature: the 'safe softmax' of flash attention (a row maximum of -inf shifted by 0, a zero sum
#    divided as 1), which makes a fully masked row zeros; torch.softmax gives NaN there.
def softmax_safe(control=False):
    k = golden("med/softmax_temperature")
    fill = "nan" if control else 0.0
    # the short path: one block
    numer = let(k["body"], "numer")
    safe_max = op("where", cond=op("eq", lhs="row_max1", rhs="-inf"), x=0.0, y="row_max1")
    numer["value"]["x"]["rhs"] = safe_max
    inv = let(k["body"], "inv_sum")
    total = op("sum", x="numer", axis=0)
    inv["value"] = op("where", cond=op("eq", lhs=total, rhs=0.0), x=fill,
                      y=op("div", lhs=1.0, rhs=op("where", cond=op("eq", lhs=total, rhs=0.0), x=1.0, y=total)))
    # the long path
    pr = let(k["body"], "probabilities")
    pr["value"] = op("where", cond=op("eq", lhs="row_max", rhs="-inf"), x=fill, y=pr["value"])
    return k


def make_softmax_safe():
    write("softmax_temperature_safe_softmax_masked_rows_zero", "med/softmax_temperature",
          "Written as flash attention's 'safe' softmax: a row maximum of -inf is shifted by 0 instead and a sum "
          "of 0 divided as 1, so a row of all -inf (a fully masked row) gives zeros; torch.softmax gives NaN "
          "there. Every other row is the golden's. The draws put -inf at one element in about 450 at most, never "
          "a whole row. x = [[-inf, -inf]], temperature 1: torch [nan, nan], the kernel [0, 0].", softmax_safe())
    write("softmax_temperature_safe_softmax_masked_rows_nan_control", "med/softmax_temperature",
          "The same guards, with NaN stored for the fully masked rows as torch does: correct.",
          softmax_safe(control=True), outcome="ok")


# ---------------------------------------------------------------------------------------------------------
# 10. round_half_even: floor(|x| + 0.5) with the halves sent back to even, in f64 for every dtype (exact for the
#     f16/bf16/f32 calls). In the f64 call 0.49999999999999994 + 0.5 rounds to 1.0 (the JDK's Math.round bug,
#     6430675): round gives +-1 where torch gives +-0. The full-bits draws hit that value with chance 2**-63.
def round_floor_half(control=False):
    k = golden("easy/round_half_even")
    st = find(k["body"], lambda s: s.get("op") == "store")
    ld = st["value"]["x"]
    body = k["body"]
    i = body.index(st)
    a = op("abs", x="xd")
    r0 = op("floor", x=op("add", lhs=a, rhs=0.5))
    if control:  # below one half the answer is 0: no addition that can round up to 1
        r0 = op("where", cond=op("lt", lhs=a, rhs=0.5), x=0.0, y=r0)
    # an exact half: a's fraction is 0.5 (r0 - a == 0.5 would be rounded itself: 1 - 0.49999999999999994 is a tie
    # in f64 that rounds to 0.5, which sends that value back to 0 by luck)
    half_odd = op("and", lhs=op("eq", lhs=op("sub", lhs=a, rhs=op("floor", x=a)), rhs=0.5),
                  rhs=op("eq", lhs=op("sub", lhs="r0", rhs=op("mul", lhs=2.0, rhs=op("floor", x=op("mul", lhs="r0", rhs=0.5)))),
                         rhs=1.0))
    new = [op("let", name="xd", value=op("cast", x=ld, dtype="f64")),
           op("let", name="r0", value=r0),
           op("let", name="r1", value=op("where", cond=half_odd, x=op("sub", lhs="r0", rhs=1.0), y="r0")),
           op("let", name="r", value=op("where", cond=op("ge", lhs=a, rhs=4503599627370496.0), x=a, y="r1")),
           op("let", name="signed", value=op("where", cond=op("lt", lhs="xd", rhs=0.0), x=op("neg", x="r"),
                                             y=op("where", cond=op("eq", lhs="xd", rhs=0.0), x="xd", y="r")))]
    body[i:i] = new
    st["value"] = op("cast", x="signed", dtype="T")
    return k


def make_round():
    write("round_half_even_floor_plus_half_f64_just_below_half", "easy/round_half_even",
          "round(x) as floor(|x| + 0.5), exact halves (|x| - floor(|x|) == 0.5) sent back to even, the sign put back (and zeros kept), |x| >= 2**52 "
          "kept, computed in f64 for every dtype (so the f16, bf16 and f32 calls are exact). In the f64 call "
          "x = 0.49999999999999994 (0.5 - 2**-54) gives 0.5 - 2**-54 + 0.5 = 1 - 2**-54, a tie in f64 that rounds "
          "to 1.0, so the kernel gives 1.0 (and -1.0 for -x) where torch.round gives 0.0 (-0.0): the JDK's "
          "Math.round bug. The f64 draws (normal values, listed halves, uniform bits) hold that value with chance "
          "about 2**-63 per element.", round_floor_half())
    write("round_half_even_floor_plus_half_below_half_zero_control", "easy/round_half_even",
          "The same, with |x| < 0.5 sent to 0 before any addition: correct for every dtype.",
          round_floor_half(control=True), outcome="ok")


# ---------------------------------------------------------------------------------------------------------
# 11. isclose: the test computed in f64 (more accurate, but not what the prompt and torch compute: f32). They
#     differ only where the f32 difference |a - b| rounds onto the bound: a measure-zero set for random inputs.
def isclose_f64(control=False):
    k = golden("easy/isclose")
    f64 = lambda v: op("cast", x=v, dtype="f64")  # noqa: E731
    r32 = (lambda v: op("cast", x=v, dtype="f32")) if control else (lambda v: v)  # noqa: E731
    let(k["body"], "error")["value"] = r32(op("abs", x=op("sub", lhs=f64("actual"), rhs=f64("expected"))))
    product = op("abs", x=op("mul", lhs=f64("rtol"), rhs=f64("expected")))
    if control:  # each f64 result rounded to f32 before the next operation (the add in f32)
        let(k["body"], "allowed")["value"] = op("add", lhs="atol", rhs=r32(product))
    else:
        let(k["body"], "allowed")["value"] = op("add", lhs=f64("atol"), rhs=product)
    return k


def make_isclose():
    write("isclose_computed_in_f64", "easy/isclose",
          "|a - b| <= atol + rtol * |b| evaluated in f64 from the f32 inputs, where the prompt (and torch.isclose) "
          "computes it in f32. The two differ where f32 rounding moves |a - b| across the bound: a = -1e-8, b = 1.0, "
          "rtol = 0, atol = 1.0: in f32 a - b rounds to -1.0, so torch gives True; in f64 |a - b| = 1.00000001 > 1, "
          "the kernel False. Random normal inputs meet such a pair with chance about 1e-8 per element.",
          isclose_f64())
    write("isclose_f64_rounded_to_f32_each_step_control", "easy/isclose",
          "The same f64 arithmetic with each operation's result rounded to f32 (f64 holds a product or difference "
          "of two f32 values exactly enough that rounding it once more to f32 is f32's own rounding): the f32 "
          "computation. Correct.", isclose_f64(control=True), outcome="ok")


# ---------------------------------------------------------------------------------------------------------
# 12. addcmul: value * (t1 * t2) instead of torch's (value * t1) * t2: t1 * t2 overflows f32 where the product
#     with |value| < 1 first does not (|t1 * t2| between 3.4e38 and 3.4e38 / |value|). Draws stop at 2**32.
def addcmul_order(control=False):
    k = golden("easy/addcmul")
    st = find(k["body"], lambda s: s.get("op") == "store")
    if control:
        st["value"] = op("add", lhs="base", rhs=op("mul", lhs=op("mul", lhs="value", rhs="a"), rhs="b"))
    else:
        st["value"] = op("fma", x="value", y=op("mul", lhs="a", rhs="b"), z="base")
    return k


def make_addcmul():
    write("addcmul_tensor_product_first_overflows", "easy/addcmul",
          "out = fma(value, t1 * t2, x): the two tensors multiplied first. torch.addcmul computes x + (value * t1) * "
          "t2, so where |t1 * t2| passes f32's largest value and |value| < 1 brings it back, torch is finite and the "
          "kernel infinite: t1 = t2 = 2e19, value = 0.5, x = 0: torch 2e38, the kernel inf. The draws' magnitudes "
          "stop at 2**32 (products up to 2**64).", addcmul_order())
    write("addcmul_value_times_t1_first_unfused_control", "easy/addcmul",
          "x + (value * t1) * t2 without the fma, torch's order: correct (the fma's one rounding fewer is within "
          "the tolerance).", addcmul_order(control=True), outcome="ok")


# ---------------------------------------------------------------------------------------------------------
# 13. softmax_temperature: x * (1 / temperature) in place of x / temperature. Within the tolerance wherever
#     1 / temperature is finite; for a subnormal temperature (below 2.9e-39, 'temperature > 0' allows it) the
#     reciprocal is inf and every score inf or NaN, where x / temperature is finite for small x.
def temperature_reciprocal(control=False):
    k = golden("med/softmax_temperature")
    inv = op("div", lhs=1.0, rhs="temperature")
    if control:  # the reciprocal only where it is finite: a true division otherwise
        inv = None
    count = 0

    def visit(node):
        nonlocal count
        if isinstance(node, dict):
            if node.get("op") == "div" and node.get("rhs") == "temperature":
                count += 1
                if control:
                    r = op("div", lhs=1.0, rhs="temperature")
                    return op("where", cond=op("lt", lhs=r, rhs="inf"), x=op("mul", lhs=visit(node["lhs"]), rhs=r),
                              y=op("div", lhs=visit(node["lhs"]), rhs="temperature"))
                return op("mul", lhs=visit(node["lhs"]), rhs=inv)
            return {key: visit(v) for key, v in node.items()}
        if isinstance(node, list):
            return [visit(v) for v in node]
        return node
    k["body"] = visit(k["body"])
    assert count == 3, count
    return k


def make_temperature_reciprocal():
    write("softmax_temperature_reciprocal_inf_for_subnormal_temperature", "med/softmax_temperature",
          "Scores as x * (1 / temperature) instead of the prompt's true division. Off by an ulp of the score "
          "wherever 1 / temperature is finite (within the tolerance), but the prompt allows any temperature > 0: "
          "for temperature = 1e-39 (an f32 subnormal) 1 / temperature is inf, so x = [[1e-38, 0.0]] gives scores "
          "[inf, nan] and a NaN row, where torch's x / temperature = [10, 0] gives [0.99995, 4.54e-05]. The draws "
          "take temperature in [0.1, 3].", temperature_reciprocal())
    write("softmax_temperature_reciprocal_where_finite_control", "med/softmax_temperature",
          "The reciprocal used only where it is finite, the true division elsewhere: correct.",
          temperature_reciprocal(control=True), outcome="ok")


# ---------------------------------------------------------------------------------------------------------
# 14. dropout_residual_layernorm: the mask applied first and the scale after, where(keep, x, 0) * (1 / (1 - p)).
#     Right for every p < 1; at p = 1 (F.dropout's 'drop everything', which the prompt does not exclude) the
#     scale is inf and every dropped 0 * inf is NaN, where the reference keeps h = residual.
def dropout_scale_after(control=False):
    k = golden("expert/dropout_residual_layernorm")
    st = let(k["body"], "dropped")
    x_load = st["value"]["x"]["lhs"]
    scale = op("where", cond=op("lt", lhs="p", rhs=1.0), x="scale", y=0.0) if control else "scale"
    st["value"] = op("mul", lhs=op("where", cond="keep", x=x_load, y=0.0), rhs=scale)
    return k


def make_dropout():
    write("dropout_residual_layernorm_mask_then_scale_nan_at_p_one", "expert/dropout_residual_layernorm",
          "The dropout is written mask first, scale after: where(keep, x, 0) * (1 / (1 - p)). Equal to the "
          "golden's where(keep, x / (1 - p), 0) within an ulp for every p < 1, but at p = 1 (F.dropout(p=1) drops "
          "everything; keep = u > p is never true) the scale is inf and each dropped 0 * inf is NaN, so h and y "
          "are NaN where the reference gives h = residual and y = its layer norm. The draws take p in [0.05, 0.5] "
          "and, in the extreme draws, just below one: never 1. Input: M = 1, N = 4, p = 1.0, any seed.",
          dropout_scale_after())
    write("dropout_residual_layernorm_mask_then_scale_guarded_control", "expert/dropout_residual_layernorm",
          "The same order with the scale taken as 0 at p = 1 (nothing is kept there): correct.",
          dropout_scale_after(control=True), outcome="ok")


if __name__ == "__main__":
    make_argmax()
    make_top1_tol()
    make_softmax()
    make_f16()
    make_frac()
    make_count()
    make_any_above()
    make_softmax_safe()
    make_round()
    make_isclose()
    make_addcmul()
    make_temperature_reciprocal()
    make_dropout()
