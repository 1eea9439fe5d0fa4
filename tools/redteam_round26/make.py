"""Round 26 candidates: wrong paths that only a task's second (or later) call takes, behind a size
condition whose crossing draws (kernelgen.task.size_conditions) run for the first listed call only
(kernelgen.harness.pipeline.FIRST_CALL_KINDS), and probes that put the same wrong path on the first call.

Run from the repository root: .venv/bin/python tools/redteam_round26/make.py
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


def band(x, low, high):
    return B("and", B("gt", x, low), B("lt", x, high))


CANDIDATES = {}
DEMO = {}  # name -> (call name, sizes, extreme, scalars or None)


def candidate(name, task, outcome, why, demo=None):
    def wrap(fn):
        k = golden(task)
        fn(k)
        CANDIDATES[name] = {"task": task, "outcome": outcome, "why": why, "code": "mismatch" if outcome != "ok" else None,
                            "kernel": k}
        if demo:
            DEMO[name] = demo
        return fn
    return wrap


# 1. maximum_generic: past 32768 elements a "fast path" where(a > b, a, b): right for i32 (the first
# listed call, the only one the crossing draws run), wrong for floats holding NaN (a NaN in a gives b).
@candidate("maximum_generic_large_where_gt_drops_nan", "easy/maximum_generic", "wrong_result",
           "past 32768 elements y = where(a > b, a, b): a NaN in a gives b; only the i32 call (no NaN) is "
           "drawn past 32768 with extreme values", demo=("f16", {"M": 64, "N": 1024}, True, None))
def _(k):
    store = k["body"][-1]
    big = B("ge", "numel", 32768)
    store["value"] = where(big, where(B("gt", "lhs", "rhs"), "lhs", "rhs"), store["value"])


# 1b. control: the large path's where also keeps a NaN in a (ne(a, a)): right for every dtype.
@candidate("maximum_generic_large_where_gt_or_nan_control", "easy/maximum_generic", "ok",
           "past 32768 elements y = where(a > b or a != a, a, b): a NaN in either input gives NaN (right)")
def _(k):
    store = k["body"][-1]
    big = B("ge", "numel", 32768)
    keep_a = B("or", B("gt", "lhs", "rhs"), B("ne", "lhs", "lhs"))
    store["value"] = where(big, where(keep_a, "lhs", "rhs"), store["value"])


# 2. probe: the same size condition, a path wrong for every dtype (minimum): the first call's crossing draw sees it.
@candidate("maximum_generic_large_minimum_probe", "easy/maximum_generic", "wrong_result",
           "past 32768 elements y = minimum(a, b): wrong for i32 too, so the first call's crossing draw catches it")
def _(k):
    store = k["body"][-1]
    big = B("ge", "numel", 32768)
    store["value"] = where(big, B("minimum", "lhs", "rhs"), store["value"])


# 3. index_fill_inplace: for dim=1 (the second call, 'columns') with 256 < M < 1024, only the first 256
# rows of each listed column are filled; the alias leaves x's values in the rest.
def _fill_rows_cap(k, dim):
    store = k["body"][-1]
    extent = where(B("eq", "dim", 0), "N", "M")
    capped = where(B("and", B("eq", "dim", dim), band("M", 256, 1024)), 256, extent)
    store["mask"] = B("and", B("eq", "seen", 0), B("lt", "line", capped))


@candidate("index_fill_inplace_columns_tall_first_256_rows", "med/index_fill_inplace", "wrong_result",
           "dim=1 with 256 < M < 1024 fills only rows < 256 of each listed column (the alias keeps x below); "
           "the columns call gets no crossing draw and its hypothesis draws keep M <= 200",
           demo=("columns", {"M": 400, "N": 8, "K": 3}, False, None))
def _(k):
    _fill_rows_cap(k, 1)


@candidate("index_fill_inplace_rows_tall_first_256_columns_probe", "med/index_fill_inplace", "wrong_result",
           "the same cap on the rows call (dim=0, the first call): its crossing draw at 256 < M < 1024 catches it")
def _(k):
    store = k["body"][-1]
    capped = where(B("and", B("eq", "dim", 0), band("M", 256, 1024)), B("minimum", "N", 256), where(B("eq", "dim", 0), "N", "M"))
    store["mask"] = B("and", B("eq", "seen", 0), B("lt", "line", capped))


# 4. clamp_optional: past 131072 elements (above cpu_max = 100000) the min_only call returns x unclamped.
def _clamp_big(k, has_max, has_min):
    body = k["body"]
    store = body[-1]
    big = B("gt", "N", 131072)
    cond = B("and", big, B("and", B("eq", "HAS_MAX", has_max), B("eq", "HAS_MIN", has_min)))
    store["value"] = where(cond, "v", "clamped")


@candidate("clamp_optional_min_only_large_n_unclamped", "easy/clamp_optional", "wrong_result",
           "min_only call (max omitted) past N = 131072 stores x unclamped; crossing draws past cpu_max run "
           "for the first call ('both') only", demo=("min_only", {"N": 140000}, False, None))
def _(k):
    _clamp_big(k, 0, 1)


@candidate("clamp_optional_both_large_n_unclamped_probe", "easy/clamp_optional", "wrong_result",
           "the same on the first call ('both'): its crossing draw past 131072 catches it")
def _(k):
    _clamp_big(k, 1, 1)


if __name__ == "__main__":
    for name, entry in CANDIDATES.items():
        (OUT / f"{name}.json").write_text(json.dumps(entry, indent=1) + "\n")
        print("wrote", name)
