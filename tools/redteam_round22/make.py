"""Round 22 candidates: wrong paths taken only at scalar values the uniform draws do not hit.

Run from the repository root: ``.venv/bin/python tools/redteam_round22/make.py`` writes NAME.json
into tools/redteam_round22/ for every candidate; judge them with ``.venv/bin/python
tools/redteam_verdicts.py tools/redteam_round22/*.json`` (verdicts.txt holds the last run). Each is
a minimal edit of a task's golden (bench/<tier>/<task>.yaml): the result at a scalar value, or in
a narrow band of values, is replaced; controls (``_control``) replace it by something equal.
"""
import copy
import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent


def golden(task):
    return copy.deepcopy(yaml.safe_load((ROOT / "bench" / f"{task}.yaml").read_text())["golden"])


def B(op, lhs, rhs):
    return {"op": op, "lhs": lhs, "rhs": rhs}


def where(cond, x, y):
    return {"op": "where", "cond": cond, "x": x, "y": y}


def band(name, low, high):
    return B("and", B("gt", name, low), B("lt", name, high))


def with_store(kernel, change):
    """The kernel with its (last) store's value v replaced by change(v)."""
    store = [s for s in kernel["body"] if s["op"] == "store"][-1]
    store["value"] = change(store["value"])
    return kernel


def leaky(slope_term):
    """leaky_relu's golden with negatives times ``slope_term`` in place of the slope."""
    kernel = golden("easy/leaky_relu")
    return with_store(kernel, lambda value: where(B("gt", "v", 0.0), "v", B("mul", "v", slope_term)))


CANDIDATES = {
    # (task, outcome, why, kernel)
    "leaky_relu_slope_band_constant": (
        "easy/leaky_relu", "wrong_result",
        "negative slopes strictly between 0.4 and 0.42 are taken as 0.41 (a table of presets): off by up to 0.01 |x| "
        "there, 0.8% of the range [-0.5, 2]",
        leaky(where(band("negative_slope", 0.4, 0.42), 0.41, "negative_slope"))),
    "leaky_relu_slope_near_one_identity": (
        "easy/leaky_relu", "wrong_result",
        "|negative_slope - 1| < 1e-3 is taken as the identity: negatives off by up to 1e-3 |x|, a band 0.08% of the "
        "range",
        leaky(where(B("lt", {"op": "abs", "x": B("sub", "negative_slope", 1.0)}, 1.0e-3), 1.0, "negative_slope"))),
    "leaky_relu_slope_one_identity_control": (
        "easy/leaky_relu", "ok",
        "CONTROL (correct): a slope of exactly 1 is the identity, as the general formula gives",
        leaky(where(B("eq", "negative_slope", 1.0), 1.0, "negative_slope"))),
    "leaky_relu_slope_two_thirds_rounded": (
        "easy/leaky_relu", "wrong_result",
        "a slope equal to the f32 of 2/3 is replaced by 0.667 (a 'rounded' preset): off by 3.3e-4 of |x| at that one "
        "value",
        leaky(where(B("eq", "negative_slope", 0.6666666865348816), 0.667, "negative_slope"))),
}

elu = golden("easy/elu")
negative = [s for s in elu["body"] if s.get("name") == "negative_part"][0]
negative["value"] = where(B("eq", "alpha", 1.0), "v", negative["value"])
CANDIDATES["elu_alpha_one_identity"] = (
    "easy/elu", "wrong_result",
    "alpha == 1 takes the negatives as they are (x in place of exp(x) - 1): wrong at that one value of [-1, 2]", elu)
elu = golden("easy/elu")
negative = [s for s in elu["body"] if s.get("name") == "negative_part"][0]
negative["value"] = where(B("eq", "alpha", 0.0), 0.0, negative["value"])
CANDIDATES["elu_alpha_zero_control"] = (
    "easy/elu", "ok", "CONTROL (correct): alpha == 0 gives 0 for the negatives, as alpha * (exp(x) - 1) does", elu)

CANDIDATES["hardtanh_equal_bounds_drops_upper"] = (
    "easy/hardtanh", "wrong_result",
    "min_val == max_val (allowed: min_val <= max_val) clamps from below only: values above the bound pass",
    with_store(golden("easy/hardtanh"), lambda value: where(B("eq", "min_val", "max_val"),
                                                            B("maximum", "v", "min_val"), value)))
CANDIDATES["hardtanh_narrow_bounds_midpoint"] = (
    "easy/hardtanh", "wrong_result",
    "bounds closer than 0.05 give their midpoint everywhere: off by up to 0.025 where they are that close",
    with_store(golden("easy/hardtanh"), lambda value: where(B("lt", B("sub", "max_val", "min_val"), 0.05),
                                                            B("mul", B("add", "min_val", "max_val"), 0.5), value)))

for name, (task, outcome, why, kernel) in CANDIDATES.items():
    entry = {"task": task, "outcome": outcome, "why": why, "kernel": kernel}
    (OUT / f"{name}.json").write_text(json.dumps(entry, indent=1) + "\n")
    print(name)
