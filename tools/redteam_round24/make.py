"""Round 24 candidates: wrong paths taken only at scalar values that kernelgen.task.scalar_conditions
(round 23's mechanism: conditions on ranged scalars evaluated in their dtypes over a grid, special
points, bisected crossings and golden-section turns; up to 6 settings, bands and points taking turns;
mixed size/scalar regions; and always 0, -0.0 and 1 at small sizes) does not find or does not reach.
Round 22's and 23's attacks are not repeated.

Run from the repository root: ``.venv/bin/python tools/redteam_round24/make.py`` writes NAME.json
into tools/redteam_round24/ for every candidate; judge them with ``.venv/bin/python
tools/redteam_verdicts.py tools/redteam_round24/*.json`` (verdicts.txt holds the last run), and
check each wrong one at its DEMO point with ``.venv/bin/python tools/redteam_round24/demo.py``
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


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def f32_bits(x):
    return struct.unpack("i", struct.pack("f", x))[0]


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


S = "negative_slope"
RIGHT_LEAKY = where(B("gt", "v", 0.0), "v", B("mul", S, "v"))  # the golden's value, operands swapped


def leaky(cond, path="v", before=()):
    """leaky_relu's golden taking ``path`` (default: negatives passed unchanged) where ``cond`` holds."""
    return with_store(golden("easy/leaky_relu"), lambda value: where(cond, path, value), before)


def once_carry(scalar, name="s"):
    """A one-trip loop whose carry ends as the scalar itself (0 + scalar)."""
    return {"op": "for", "var": "once", "stop": 1, "carry": [{"name": name, "init": 0.0, "next": name + "_next"}],
            "body": [let(name + "_next", B("add", name, scalar))]}


def reduced(scalar, name="s"):
    """max over a block of (float(arange) * 0 + scalar): the scalar itself, through a reduction."""
    return let(name, {"op": "max", "x": B("add", B("mul", cast({"op": "arange", "size": "BLOCK"}, "f32"), 0.0), scalar),
                      "axis": 0})


def if_result(scalar, name="s"):
    return {"op": "if", "cond": B("gt", "N", 0), "then": [], "else": [],
            "results": [{"name": name, "then": scalar, "else": 0.0}]}


# leaky_relu's grid over [-0.5, 2]: 4097 points 2.5 / 4096 apart (exact in f32)
STEP = 2.5 / 4096


def grid(k):
    return -0.5 + k * STEP


# name: (task, outcome, why, kernel, demo) with demo = (sizes, fixed scalars, extreme) for wrong ones
CANDIDATES = {}


def add(name, task, outcome, why, kernel, demo=None):
    CANDIDATES[name] = (task, outcome, why, kernel, demo)


# -- 1. hidden tests (not evaluated) at values other than 0, -0.0 and 1 ---------------------------
add("leaky_relu_carry_slope_half", "easy/leaky_relu", "wrong_result",
    "the slope through a one-trip loop's carry (s = 0 + slope); where s == 0.5 the negatives pass unchanged. "
    "The carry is not inlined (the condition is left out) and the always-on special settings try only 0, -0.0 "
    "and 1. Wrong at slope 0.5.",
    leaky(B("eq", "s", 0.5), before=[once_carry(S)]), ({"N": 3000}, {S: 0.5}, False))
add("leaky_relu_carry_slope_half_control", "easy/leaky_relu", "ok",
    "CONTROL (correct): the same hidden carry test s == 0.5 takes where(v > 0, v, v * 0.5), exact there.",
    leaky(B("eq", "s", 0.5), where(B("gt", "v", 0.0), "v", B("mul", "v", 0.5)), before=[once_carry(S)]))
add("elu_bitcast_alpha_three_halves", "easy/elu", "wrong_result",
    f"where bitcast(alpha, i32) == {f32_bits(1.5)} (the bits of 1.5) the output is doubled. Bitcast is not "
    "evaluated (left out); 1.5 is neither a special value nor a range end of [-1, 2]. Wrong at alpha 1.5.",
    doubled_where("easy/elu", B("eq", {"op": "bitcast", "x": "alpha", "dtype": "i32"}, f32_bits(1.5))),
    ({"N": 3000}, {"alpha": 1.5}, False))
add("softshrink_reduce_lambd_quarter", "easy/softshrink", "wrong_result",
    "s = max over a block of (float(arange) * 0 + lambd), lambd itself through a reduction; where s == 0.25 the "
    "output is doubled. A reduction is not evaluated (left out). Wrong at lambd 0.25.",
    doubled_where("easy/softshrink", B("eq", "s", 0.25), [reduced("lambd")]), ({"N": 3000}, {"lambd": 0.25}, False))
add("addcmul_if_result_value_minus_one", "easy/addcmul", "wrong_result",
    "s = (if N > 0: value else 0), an if's result; where s == -1 the output is doubled. If results are not "
    "inlined (left out); -1 is in [-2, 2] but only 0, -0.0 and 1 are always tried. Wrong at value -1.",
    doubled_where("easy/addcmul", B("eq", "s", -1.0), [if_result("value")]), ({"N": 3000}, {"value": -1.0}, False))

# -- 2. a scalar test fused with a loaded value or a row statistic -------------------------------
add("leaky_relu_load_fused_slope", "easy/leaky_relu", "wrong_result",
    "where (slope - 0.75) * v == 0 (every element at slope 0.75; v == 0 otherwise, where either path gives 0) "
    "the negatives pass unchanged. The comparison reads the load v: left out. Wrong at slope 0.75.",
    leaky(B("eq", B("mul", B("sub", S, 0.75), "v"), 0.0)), ({"N": 3000}, {S: 0.75}, False))
add("rmsnorm_rows_row_stat_eps", "med/rmsnorm_rows", "wrong_result",
    "where eps + 0 * mean_square == 1e-4 (mean_square a row's sum of squares over N, a reduction) the output is "
    "doubled. The condition reads the reduction: left out; 1e-4 lies inside [1e-6, 1e-3]. Wrong at eps 1e-4.",
    doubled_where("med/rmsnorm_rows", B("eq", B("add", "eps", B("mul", "mean_square", 0.0)), 1.0e-4)),
    ({"M": 4, "N": 300}, {"eps": 1.0e-4}, False))

# -- 3. relations of two scalars that need both moved --------------------------------------------
pair = B("and", B("and", B("eq", "value", "threshold"), B("gt", "threshold", 0.5)), B("lt", "threshold", 0.95))
add("threshold_equal_pair_in_band", "easy/threshold", "wrong_result",
    "where value == threshold and 0.5 < threshold < 0.95, x is stored unchanged (the threshold step dropped). "
    "Each sweep holds the other scalar at its ordinary value (threshold -0.236, value -0.708): the equality's "
    "point there fails the band, the band's settings fail the equality, and the all-at-once special settings "
    "(0, 1) fall outside the band. Wrong at threshold = value = 0.75.",
    with_store(golden("easy/threshold"), lambda value: where(pair, "v", value)),
    ({"N": 3000}, {"threshold": 0.75, "value": 0.75}, False))
add("threshold_equal_pair_control", "easy/threshold", "ok",
    "CONTROL (correct): under the same test (value == threshold in (0.5, 0.95)) the kernel stores "
    "where(v <= threshold, threshold, v), what F.threshold gives there (NaN kept).",
    with_store(golden("easy/threshold"), lambda value: where(copy.deepcopy(pair),
                                                             where(B("le", "v", "threshold"), "threshold", "v"), value)))
add("isclose_sum_one_drops_rtol", "easy/isclose", "wrong_result",
    "where rtol + atol == 1 and rtol > 0.2 the rtol term is dropped (|a - b| <= atol). Swept with the other "
    "ordinary: atol's crossing (0.885) has rtol 0.115, not > 0.2; rtol's (0.618) is out of [0, 0.3]; the special "
    "settings give sums 0 and 1.115. Wrong at rtol 0.25, atol 0.75.",
    with_store(golden("easy/isclose"), lambda value: where(
        B("and", B("eq", B("add", "rtol", "atol"), 1.0), B("gt", "rtol", 0.2)), B("le", "error", "atol"), value)),
    ({"N": 3000}, {"rtol": 0.25, "atol": 0.75}, False))

# -- 4. integer scalars: residues and i32 wrap-around ---------------------------------------------
DRL = "expert/dropout_residual_layernorm"
hashed = B("eq", B("and", B("mul", "seed", 40503), 65535), 12345)
add("dropout_residual_layernorm_seed_hash_residue", DRL, "wrong_result",
    "where (seed * 40503) & 0xFFFF == 12345 (one seed in 65536, scattered: a multiplicative hash) y is doubled. "
    "lhs - rhs jumps pseudo-randomly, so the bisections end at sign changes, not zeros, and 12345 +- 1 are no "
    "such seed. Wrong at seed 60687.",
    doubled_where(DRL, hashed), ({"M": 4, "N": 300}, {"seed": 60687}, False))
add("dropout_residual_layernorm_seed_hash_control", DRL, "ok",
    "CONTROL (correct): under the same hashed seed test y is stored as y * 1.0 (the same value).",
    with_store(golden(DRL), lambda value: where(copy.deepcopy(hashed), B("mul", value, 1.0), value)))
add("dropout_residual_layernorm_seed_i32_wrap", DRL, "wrong_result",
    "where seed * 4 == -8 in i32 (seed 2**30 - 2 or 2**31 - 2, the product wrapping) y is doubled. The evaluation "
    "computes integers exactly in int64, where 4 * seed >= 0 never equals -8: no crossing, no setting. "
    "Wrong at seed 1073741822.",
    doubled_where(DRL, B("eq", B("mul", "seed", 4), -8)), ({"M": 4, "N": 300}, {"seed": 1073741822}, False))

# -- 5. comparisons whose zero the grid and the refinement miss -----------------------------------
add("leaky_relu_tanh_plateau_point", "easy/leaky_relu", "wrong_result",
    "where tanh(|10 * slope - 7| * 1e6) == 0 (only at slope = f32(0.7), where 10 * slope rounds to 7) the "
    "negatives pass unchanged. lhs - rhs is exactly 1 at every grid value (tanh saturates): no crossing, no turn; "
    "the literals 10, 7, 1e6 and 0 are no such slope. Wrong at slope 0.7.",
    leaky(B("eq", U("tanh", B("mul", U("abs", B("sub", B("mul", S, 10.0), 7.0)), 1.0e6)), 0.0)),
    ({"N": 3000}, {S: 0.7}, False))
oscillating = where(B("lt", S, 0.69), B("add", U("sin", B("mul", S, 3000.0)), 0.25), B("sub", B("mul", S, 10.0), 7.0))
add("leaky_relu_oscillation_cap", "easy/leaky_relu", "wrong_result",
    "where (slope < 0.69 ? sin(3000 slope) + 0.25 : 10 slope - 7) == 0 and slope > 0.69 the negatives pass "
    "unchanged. Below 0.69 the sine crosses zero ~1100 times on the grid (its f32 zeros, which the bisection may "
    "hit, fail slope > 0.69: harmless points): the first 256 crossings and turns "
    "(the refinement's cap, in index order) are all there, and the true root 0.7 comes after them. "
    "Wrong at slope 0.7.",
    leaky(B("and", B("eq", oscillating, 0.0), B("gt", S, 0.69))), ({"N": 3000}, {S: 0.7}, False))

# -- 6. the 6-setting cap spent on genuine (right) bands --------------------------------------------
DECOY_AT = (500, 900, 1300, 1700, 2100, 2500)  # one grid point each: share 1/4097
WRONG_AT = 3300  # three grid points: share 3/4097, sorted after the six


def band_decoys(value, wrong_path):
    value = where(band(S, grid(WRONG_AT) - STEP / 4, grid(WRONG_AT + 2) + STEP / 4), wrong_path, value)
    for k in DECOY_AT:
        value = where(band(S, grid(k) - STEP / 4, grid(k) + STEP / 4), copy.deepcopy(RIGHT_LEAKY), value)
    return value


add("leaky_relu_six_band_decoys", "easy/leaky_relu", "wrong_result",
    f"six harmless bands (one grid point each, the golden's value with operands swapped) sort first among the "
    f"bands (rarest first) and take all 6 settings; the wrong band, slopes in ({grid(WRONG_AT) - STEP / 4:.6f}, "
    f"{grid(WRONG_AT + 2) + STEP / 4:.6f}) (three grid points, 0.07% of the range) passing negatives unchanged, "
    f"gets none. Wrong at slope {grid(WRONG_AT + 1)}.",
    with_store(golden("easy/leaky_relu"), lambda value: band_decoys(value, "v")),
    ({"N": 3000}, {S: grid(WRONG_AT + 1)}, False))
add("leaky_relu_six_band_decoys_control", "easy/leaky_relu", "ok",
    "CONTROL (correct): the same seven bands, each taking the golden's value with operands swapped.",
    with_store(golden("easy/leaky_relu"), lambda value: band_decoys(value, copy.deepcopy(RIGHT_LEAKY))))

# -- 7. sizes and scalars together ------------------------------------------------------------------
add("leaky_relu_small_n_slope_band", "easy/leaky_relu", "wrong_result",
    "where N < 1000 and 1.98 < slope < 1.99 the negatives pass unchanged. The sweep runs at the joint draw's N "
    "(large: N < 1000 false), the mixed settings try the slope at its ends and ordinary value only (outside the "
    "band), and the size draws for N < 1000 take random slopes (0.4% in the band). Wrong at N 501, slope 1.985.",
    leaky(B("and", B("lt", "N", 1000), band(S, 1.98, 1.99))), ({"N": 501}, {S: 1.985}, False))
add("threshold_small_n_nan_mixed", "easy/threshold", "wrong_result",
    "where N < 1000 and threshold > 0.99 the kernel stores where(x > threshold, x, value), which turns a NaN into "
    "value (F.threshold keeps it). The mixed setting finds N < 1000 at threshold 1 but draws ordinary inputs only "
    "(no NaN); the sweep's band settings (extreme too) are at the joint N. Wrong at N 501, threshold 0.995, with "
    "extreme inputs.",
    with_store(golden("easy/threshold"), lambda value: where(
        B("and", B("lt", "N", 1000), B("gt", "threshold", 0.99)),
        where(B("gt", "v", "threshold"), "v", "value"), value)),
    ({"N": 501}, {"threshold": 0.995}, True))
pid_rel = B("eq", cast({"op": "program_id"}, "f32"), B("add", B("mul", S, 4.0), 0.5))
add("leaky_relu_program_slope_relation", "easy/leaky_relu", "wrong_result",
    "where float(program_id) == 4 * slope + 0.5 (program 2 at slope 0.375, program 1 at 0.125, ...) the "
    "negatives pass unchanged. Program ids are read at the last program only: at the joint N its root is out "
    "of range; the mixed settings' slopes (ends -0.5, 2, ordinary 0.455) give non-integer programs. "
    "Wrong at N 3000 (3 programs), slope 0.375.",
    leaky(pid_rel), ({"N": 3000}, {S: 0.375}, False))
add("leaky_relu_program_slope_relation_control", "easy/leaky_relu", "ok",
    "CONTROL (correct): under the same program/slope relation the slope is recomputed as (pid - 0.5) / 4, "
    "which equals it there (to an ulp).",
    leaky(copy.deepcopy(pid_rel),
          where(B("gt", "v", 0.0), "v", B("mul", "v", B("mul", B("sub", cast({"op": "program_id"}, "f32"), 0.5), 0.25)))))

# -- 8. a variant task, in place: the test reads the variant's choice ----------------------------
add("index_fill_inplace_dim_fused_value", "med/index_fill_inplace", "wrong_result",
    "where value + float(dim) == 1.5 (value 1.5 for rows, 0.5 for columns) the filled value is doubled. If dim "
    "(a choice) is no meta value nor size, the condition is left out; else the sweep must find value 1.5/0.5. "
    "Wrong at value 1.5 (rows) / 0.5 (columns).",
    doubled_where("med/index_fill_inplace", B("eq", B("add", "value", cast("dim", "f32")), 1.5)),
    ({"M": 40, "N": 50, "K": 3}, {"value": 1.5}, False))

if __name__ == "__main__":
    for name, (task, outcome, why, kernel, demo) in CANDIDATES.items():
        entry = {"task": task, "outcome": outcome, "why": why, "kernel": kernel}
        (OUT / f"{name}.json").write_text(json.dumps(entry, indent=1) + "\n")
        print(name)
