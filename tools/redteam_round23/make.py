"""Round 23 candidates: wrong paths taken only at scalar values that kernelgen.task.scalar_conditions
(round 22's mechanism: evaluate every condition on the ranged scalars over a grid plus special
points, a draw per rare combination, at most 4) does not find or does not reach.

Run from the repository root: ``.venv/bin/python tools/redteam_round23/make.py`` writes NAME.json
into tools/redteam_round23/ for every candidate; judge them with ``.venv/bin/python
tools/redteam_verdicts.py tools/redteam_round23/*.json`` (verdicts.txt holds the last run), and
check each wrong one at its DEMO point with ``.venv/bin/python tools/redteam_round23/demo.py``
(demos.txt). Each is a minimal edit of a task's golden (bench/<tier>/<task>.yaml); controls
(``_control``) take another path that is still right.
"""
import copy
import json
import struct
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent


def golden(task):
    return copy.deepcopy(yaml.safe_load((ROOT / "bench" / f"{task}.yaml").read_text())["golden"])


def B(op, lhs, rhs):
    return {"op": op, "lhs": lhs, "rhs": rhs}


def U(op, x):
    return {"op": op, "x": x}


def where(cond, x, y):
    return {"op": "where", "cond": cond, "x": x, "y": y}


def cast(x, dtype):
    return {"op": "cast", "x": x, "dtype": dtype}


def let(name, value):
    return {"op": "let", "name": name, "value": value}


def band(x, low, high):
    return B("and", B("gt", x, low), B("lt", x, high))


def all_stores(body, found=None):
    found = [] if found is None else found
    for s in body:
        if s.get("op") == "store":
            found.append(s)
        for key in ("body", "then", "else"):
            if isinstance(s.get(key), list):
                all_stores(s[key], found)
    return found


def with_store(kernel, change, before=()):
    """The kernel with its last store's value v replaced by change(v); ``before``: statements put
    just before that store (or first in the body where the store is nested)."""
    store = all_stores(kernel["body"])[-1]
    store["value"] = change(store["value"])
    if before:
        at = kernel["body"].index(store) if store in kernel["body"] else 0
        kernel["body"][at:at] = list(before)
    return kernel


def doubled_where(task, cond, before=()):
    """The golden of ``task`` with its last store doubled where ``cond`` holds."""
    return with_store(golden(task), lambda value: where(cond, B("mul", value, 2.0), value), before)


def leaky_identity(cond, before=()):
    """leaky_relu's golden, negatives passed unchanged (no slope) where ``cond`` holds."""
    return with_store(golden("easy/leaky_relu"), lambda value: where(cond, "v", value), before)


S = "negative_slope"
ONCE_CARRY = {"op": "for", "var": "once", "stop": 1, "carry": [{"name": "s", "init": 0.0, "next": "s_next"}],
              "body": [let("s_next", B("add", "s", S))]}
IF_RESULT = {"op": "if", "cond": B("gt", "N", 0), "then": [], "else": [],
             "results": [{"name": "s", "then": S, "else": 1.0}]}
REDUCED = let("s", {"op": "max", "x": B("add", B("mul", cast({"op": "arange", "size": "BLOCK"}, "f32"), 0.0), S),
                    "axis": 0})
# 4 harmless point tests, each off the grid of [-0.5, 2] (share 0: sorted first) and right there
DECOY_POINTS = [struct.unpack("f", struct.pack("f", p))[0] for p in (0.1101, 0.2203, 0.3307, 0.4409)]  # f32 values
# the bf16 nearest 0.1: slopes whose bf16 is it lie in [0.09985, 0.10034]
BF16_TENTH = 0.10009765625

# name: (task, outcome, why, kernel, demo) with demo = (sizes, fixed scalars, extreme) for wrong ones
CANDIDATES = {}


def add(name, task, outcome, why, kernel, demo=None):
    CANDIDATES[name] = (task, outcome, why, kernel, demo)


add("leaky_relu_carry_slope_zero", "easy/leaky_relu", "wrong_result",
    "the slope goes through a one-trip loop's carry (s = 0 + slope); where s == 0 the negatives pass unchanged "
    "(x, not 0). The inliner does not follow carries: the condition reads 's' and is left out. Wrong at slope 0.",
    leaky_identity(B("eq", "s", 0.0), [ONCE_CARRY]), ({"N": 3000}, {S: 0.0}, False))
add("leaky_relu_if_result_slope_zero", "easy/leaky_relu", "wrong_result",
    "s = (if N > 0: slope else 1.0), an if's result; where s == 0 the negatives pass unchanged. If results are not "
    "inlined: left out. Wrong at slope 0.",
    leaky_identity(B("eq", "s", 0.0), [IF_RESULT]), ({"N": 3000}, {S: 0.0}, False))
add("leaky_relu_reduce_slope_zero", "easy/leaky_relu", "wrong_result",
    "s = max over the block of (float(arange) * 0 + slope), the slope itself; where s == 0 the negatives pass "
    "unchanged. A reduction is not evaluated: left out. Wrong at slope 0.",
    leaky_identity(B("eq", "s", 0.0), [REDUCED]), ({"N": 3000}, {S: 0.0}, False))
add("leaky_relu_bitcast_slope_zero", "easy/leaky_relu", "wrong_result",
    "where bitcast(slope, i32) == 0 (the bits of +0.0) the negatives pass unchanged. Bitcast is not evaluated: "
    "left out. Wrong at slope 0.",
    leaky_identity(B("eq", {"op": "bitcast", "x": S, "dtype": "i32"}, 0)), ({"N": 3000}, {S: 0.0}, False))
add("leaky_relu_mask_selected_slope_zero", "easy/leaky_relu", "wrong_result",
    "where (mask ? slope : 1.0) == 0, i.e. at slope 0 in bounds, the negatives pass unchanged. The condition reads "
    "the bounds mask (arange): left out. Wrong at slope 0.",
    leaky_identity(B("eq", where("mask", S, 1.0), 0.0)), ({"N": 3000}, {S: 0.0}, False))
add("leaky_relu_f32_absorbed_tiny_slope", "easy/leaky_relu", "wrong_result",
    "where |slope| > 1e-12 and (slope + 1024) - 1024 == 0 in f32 (1e-12 < |slope| <= 2**-14) the negatives pass "
    "unchanged. Evaluated in f64 the sum absorbs only |slope| < 2**-43 (1.1e-13): the and never holds there (a "
    "decoy); the settings the parts get (slope 0, 1e-12) take the right path. Wrong at slope 1e-5.",
    leaky_identity(B("and", B("gt", U("abs", S), 1.0e-12), B("eq", B("sub", B("add", S, 1024.0), 1024.0), 0.0))),
    ({"N": 3000}, {S: 1.0e-5}, False))
add("leaky_relu_bf16_preset_snap", "easy/leaky_relu", "wrong_result",
    "where bf16(slope) == bf16(0.1) the slope is taken as that bf16 (0.10009766, a 'preset'): off by up to 2.4e-4 "
    "|x| for slopes in [0.09985, 0.10034]. A cast to bf16 is evaluated as f64 (no rounding): the condition holds "
    "only at its literal, where the snap is exact. Wrong at slope 0.1003.",
    with_store(golden("easy/leaky_relu"), lambda value: where(
        B("eq", cast(S, "bf16"), cast(BF16_TENTH, "bf16")),
        where(B("gt", "v", 0.0), "v", B("mul", "v", BF16_TENTH)), value)),
    ({"N": 3000}, {S: 0.1003}, False))
add("leaky_relu_negative_zero_slope", "easy/leaky_relu", "wrong_result",
    "where slope == 0 and 1 / slope < 0 (slope is -0.0, within [-0.5, 2]) the negatives pass unchanged. The special "
    "points hold +0.0 and its neighbours, never -0.0. Wrong at slope -0.0 (F.leaky_relu gives 0 there).",
    leaky_identity(B("and", B("eq", S, 0.0), B("lt", B("div", 1.0, S), 0.0))), ({"N": 3000}, {S: -0.0}, False))
add("leaky_relu_slope_eq_inexact_literal", "easy/leaky_relu", "wrong_result",
    "where slope == 0.3 (the literal becomes the f32 0.30000001) the negatives pass unchanged. The evaluation "
    "compares the f32 slope, in f64, with the f64 literal 0.3: never equal, the condition never holds and gets no "
    "setting. Wrong at slope 0.3 (f32).",
    leaky_identity(B("eq", S, 0.3)), ({"N": 3000}, {S: 0.3}, False))
add("leaky_relu_computed_center_band", "easy/leaky_relu", "wrong_result",
    "where |slope - sqrt(0.09)| < 1e-5 the negatives pass unchanged: a band 2e-5 wide (grid step 6.1e-4) centred "
    "on 0.3, which is no literal of the condition (0.09 and 1e-5 are). Wrong at slope 0.3.",
    leaky_identity(B("lt", U("abs", B("sub", S, U("sqrt", 0.09))), 1.0e-5)), ({"N": 3000}, {S: 0.3}, False))
add("leaky_relu_exp_bounded_band", "easy/leaky_relu", "wrong_result",
    "where exp(-10) < slope < exp(-9) (4.5e-5 to 1.2e-4, between grid points -1.2e-4 and 4.9e-4; the literals -10 "
    "and -9 are out of range) the negatives pass unchanged. Wrong at slope 8e-5.",
    leaky_identity(band(S, U("exp", -10.0), U("exp", -9.0))), ({"N": 3000}, {S: 8.0e-5}, False))

# 62 condition bits per scalar: 40 harmless tests (slope < 10 + i, always true: 40 comparisons and
# 39 ands) in the store, found first (the walk starts from the last statement), fill them
decoys = None
for i in range(40):
    c = B("lt", S, 10.0 + i)
    decoys = c if decoys is None else B("and", decoys, c)
lr = golden("easy/leaky_relu")
lr = with_store(lr, lambda value: where(decoys, where("shortcut", "v", value), 0.0),
                [let("shortcut", B("eq", S, 0.0))])
add("leaky_relu_sixty_two_decoys", "easy/leaky_relu", "wrong_result",
    "where slope == 0 (a let before the store) the negatives pass unchanged; the store first tests 40 always-true "
    "slope < 10 + i (79 conditions), which take all 62 bits of the sweep's code before it. Wrong at slope 0.",
    lr, ({"N": 3000}, {S: 0.0}, False))
lr = golden("easy/leaky_relu")
lr = with_store(lr, lambda value: where(decoys, where("shortcut", "v", value), 0.0),
                [let("shortcut", B("eq", S, 1.0))])
add("leaky_relu_sixty_two_decoys_control", "easy/leaky_relu", "ok",
    "CONTROL (correct): as leaky_relu_sixty_two_decoys, but the shortcut is at slope 1 (the identity, right).", lr)


def point_decoys(value):
    for p in DECOY_POINTS:
        value = where(B("eq", S, p), where(B("gt", "v", 0.0), "v", B("mul", "v", p)), value)
    return value


add("leaky_relu_four_point_decoys_band", "easy/leaky_relu", "wrong_result",
    "four harmless point shortcuts (slope == 0.1101, 0.2203, 0.3307, 0.4409: right there, off the grid, share 0) "
    "come first among the rare answers and take all 4 settings; the wrong one, slopes in (1.2, 1.201) passing "
    "negatives unchanged, holds at a grid point or two (share > 0) and gets none. Wrong at slope 1.2005.",
    with_store(golden("easy/leaky_relu"), lambda value: point_decoys(where(band(S, 1.2, 1.201), "v", value))),
    ({"N": 3000}, {S: 1.2005}, False))
add("leaky_relu_size_product_band", "easy/leaky_relu", "wrong_result",
    "where 1000 < float(N) * slope < 1001 the negatives pass unchanged: at the joint draw's N (~1e5) a band 1e-5 wide "
    "in slope, off the grid; at N = 1000 it is slopes in (1, 1.001), which the uniform draws miss. Size "
    "conditions leave it out (it reads a scalar). Wrong at N = 1000, slope 1.0005.",
    leaky_identity(band(B("mul", cast("N", "f32"), S), 1000.0, 1001.0)), ({"N": 1000}, {S: 1.0005}, False))

add("threshold_value_is_neg_threshold", "easy/threshold", "wrong_result",
    "where value == -threshold (a 'symmetric' call) x is stored unchanged. Each scalar is swept with the other at "
    "its ordinary value (threshold -0.236, value -0.708): the special points hold the other's value, not its "
    "negation, and the grid misses it. Wrong at threshold 0.5, value -0.5.",
    with_store(golden("easy/threshold"), lambda value: where(B("eq", "value", U("neg", "threshold")), "v", value)),
    ({"N": 3000}, {"threshold": 0.5, "value": -0.5}, False))
add("threshold_both_zero_relu_nan", "easy/threshold", "wrong_result",
    "where threshold == 0 and value == 0 the kernel stores relu as where(x > 0, x, 0), which turns a NaN into 0 "
    "(F.threshold keeps it). Each scalar's setting moves it alone (the other stays ordinary): the pair is never "
    "both 0. Wrong at threshold = value = 0 with NaN inputs (extreme draws).",
    with_store(golden("easy/threshold"), lambda value: where(
        B("and", B("eq", "threshold", 0.0), B("eq", "value", 0.0)), where(B("gt", "v", 0.0), "v", 0.0), value)),
    ({"N": 3000}, {"threshold": 0.0, "value": 0.0}, True))
add("hardtanh_symmetric_drops_sign", "easy/hardtanh", "wrong_result",
    "where min_val == -max_val the kernel clamps |x| to max_val and drops the sign. The settings move one bound with "
    "the other ordinary (-0.472): the negation is no special point and off the grid. Wrong at min -1, max 1.",
    with_store(golden("easy/hardtanh"), lambda value: where(B("eq", "min_val", U("neg", "max_val")),
                                                            B("minimum", U("abs", "v"), "max_val"), value)),
    ({"N": 3000}, {"min_val": -1.0, "max_val": 1.0}, False))
add("hardtanh_symmetric_control", "easy/hardtanh", "ok",
    "CONTROL (correct): where min_val == -max_val, negatives are clamped from below and the rest from above, "
    "as the clamp does.",
    with_store(golden("easy/hardtanh"), lambda value: where(
        B("eq", "min_val", U("neg", "max_val")),
        where(B("lt", "v", 0.0), B("maximum", "v", "min_val"), B("minimum", "v", "max_val")), value)))
add("softshrink_scaled_int_band", "easy/softshrink", "wrong_result",
    "where int(lambd * 1e6) == 500000 (lambd in [0.5, 0.500001)) the output is doubled: a band 1e-6 wide whose "
    "bound 0.5 is no literal of the condition (1e6 and 500000 are, out of range), between grid points. "
    "Wrong at lambd 0.5.",
    doubled_where("easy/softshrink", B("eq", cast(B("mul", "lambd", 1.0e6), "i32"), 500000)),
    ({"N": 3000}, {"lambd": 0.5}, False))
add("rmsnorm_f16_eps_log_band", "hard/rmsnorm_f16", "wrong_result",
    "where |log(eps) - log(1e-5)| < 8e-4 (eps within 0.08% of the default 1e-5; log(1e-5) written as -11.512925, "
    "the bound 8e-4 a literal: neither an eps near 1e-5) the output is doubled: the log grid's points nearest 1e-5 "
    "are 0.11% and 0.22% away. Wrong at eps 1e-5.",
    doubled_where("hard/rmsnorm_f16", B("lt", U("abs", B("add", U("log", "eps"), 11.512925)), 8.0e-4)),
    ({"M": 4, "N": 300}, {"eps": 1.0e-5}, False))
add("dropout_residual_layernorm_p_band", "expert/dropout_residual_layernorm", "wrong_result",
    "where 0.3 < p < 0.3001 y is doubled. p is compared with the random numbers (at_rand) and so is neither swept "
    "nor set; its own draws are uniform. Wrong at p 0.30005.",
    doubled_where("expert/dropout_residual_layernorm", band("p", 0.3, 0.3001)),
    ({"M": 4, "N": 300}, {"p": 0.30005}, False))
add("dropout_residual_layernorm_seed_residue", "expert/dropout_residual_layernorm", "wrong_result",
    "where seed % 65536 == 4000 + 660 y is doubled (1 seed in 65536). The literals 4000 and 660 (and their "
    "neighbours) are no such seed; the grid of 4097 seeds over [0, 2**31) lands on the residue by chance only. "
    "Wrong at seed 4660.",
    doubled_where("expert/dropout_residual_layernorm", B("eq", B("rem", "seed", 65536), B("add", 4000, 660))),
    ({"M": 4, "N": 300}, {"seed": 4660}, False))

# masked_fill: a flag computed in a loop that reads its loop variable
mf_loop = {"op": "for", "var": "i", "stop": 1, "carry": [{"name": "zero_fill", "init": 0.0, "next": "zf"}],
           "body": [let("zf", where(B("eq", B("add", "value", cast("i", "f32")), 0.0), 1.0, 0.0))]}
add("masked_fill_loop_var_zero_times_mask", "easy/masked_fill", "wrong_result",
    "where value + float(i) == 0 inside a one-trip loop (i = 0: value == 0) the fill is x * !mask, which gives NaN "
    "under the mask for x = inf or NaN (masked_fill gives 0). The condition reads the loop variable and the flag "
    "is a carry: left out. Wrong at value 0 with extreme inputs.",
    with_store(golden("easy/masked_fill"), lambda value: where(
        B("eq", "zero_fill", 1.0), B("mul", "v", cast(U("not", "fill"), "f32")), value), [mf_loop]),
    ({"N": 3000}, {"value": 0.0}, True))
add("masked_fill_loop_var_zero_control", "easy/masked_fill", "ok",
    "CONTROL (correct): the same loop flag at value == 0 selects where(mask, 0, x), right.",
    with_store(golden("easy/masked_fill"), lambda value: where(
        B("eq", "zero_fill", 1.0), where("fill", 0.0, "v"), value), [copy.deepcopy(mf_loop)]))
add("isclose_both_zero_equality_control", "easy/isclose", "ok",
    "CONTROL (correct): where rtol == 0 and atol == 0 the output is a == b, which |a - b| <= 0 is for finite inputs.",
    with_store(golden("easy/isclose"), lambda value: where(
        B("and", B("eq", "rtol", 0.0), B("eq", "atol", 0.0)), B("eq", "actual", "expected"), value)))
add("isclose_atol_twice_rtol_drops_rtol", "easy/isclose", "wrong_result",
    "where atol == 2 * rtol the rtol term is dropped (|a - b| <= atol). Swept one at a time with the other "
    "ordinary (rtol 0.115, atol 0.382), 2 * rtol is no special point and off the grid. Wrong at rtol 0.1, atol 0.2.",
    with_store(golden("easy/isclose"), lambda value: where(
        B("eq", "atol", B("mul", 2.0, "rtol")), B("le", "error", "atol"), value)),
    ({"N": 3000}, {"rtol": 0.1, "atol": 0.2}, False))
add("lerp_weight_one_end_control", "easy/lerp", "ok",
    "CONTROL (correct): where weight == 1 the output is end itself, which PyTorch's two-sided form gives exactly.",
    with_store(golden("easy/lerp"), lambda value: where(B("eq", "weight", 1.0), "b", value)))
add("softshrink_carry_lambd_zero", "easy/softshrink", "wrong_result",
    "lambd through a one-trip loop's carry; where it is 0 the output is x shrunk by 0.5 (a default). The carry is "
    "not followed: left out. Wrong at lambd 0 (allowed: lambd >= 0).",
    with_store(golden("easy/softshrink"), lambda value: where(
        B("eq", "s", 0.0), where(B("gt", "v", 0.5), B("sub", "v", 0.5),
                                 where(B("lt", "v", -0.5), B("add", "v", 0.5), 0.0)), value),
        [{"op": "for", "var": "once", "stop": 1, "carry": [{"name": "s", "init": 0.0, "next": "s_next"}],
          "body": [let("s_next", B("add", "s", "lambd"))]}]),
    ({"N": 3000}, {"lambd": 0.0}, False))

if __name__ == "__main__":
    for name, (task, outcome, why, kernel, demo) in CANDIDATES.items():
        entry = {"task": task, "outcome": outcome, "why": why, "kernel": kernel}
        (OUT / f"{name}.json").write_text(json.dumps(entry, indent=1) + "\n")
        print(name)
