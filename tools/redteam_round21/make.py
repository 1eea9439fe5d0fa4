"""Round 21 candidates: wrong paths behind conditions size_conditions cannot see or mis-evaluates.

Run from the repository root: ``.venv/bin/python tools/redteam_round21/make.py [NAME ...]`` writes
NAME.json into tools/redteam_round21/ (every candidate without names). Each is a minimal edit of a
task's golden (bench/<tier>/<task>.yaml). ``DEMO[name]`` is an allowed size assignment where a
wrong kernel is wrong (demo.py verifies it there; ``SCALARS[name]``: scalar inputs fixed there,
``SMS[name]``: num_sms there), ``WRONG[name]`` the predicate of sizes (and, where given, scalars)
where its wrong path is taken (reach.py says whether any of today's CPU draws takes it). Controls
end in ``_control``.
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
SCALARS = {}
SMS = {}


def golden(task):
    return copy.deepcopy(yaml.safe_load((ROOT / "bench" / f"{task}.yaml").read_text())["golden"])


def B(op, lhs, rhs):
    return {"op": op, "lhs": lhs, "rhs": rhs}


def U(op, x):
    return {"op": op, "x": x}


def cast(x, dtype):
    return {"op": "cast", "x": x, "dtype": dtype}


def f32(x):
    return cast(x, "f32")


def where(c, x, y):
    return {"op": "where", "cond": c, "x": x, "y": y}


def let(name, value):
    return {"op": "let", "name": name, "value": value}


PID = {"op": "program_id"}


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


def candidate(task, outcome, demo=None, wrong=None, scalars=None, sms=None):
    def register(fn):
        name = fn.__name__
        CANDIDATES[name] = (task, outcome, fn)
        if demo is not None:
            DEMO[name] = demo
        if wrong is not None:
            WRONG[name] = wrong
        if scalars is not None:
            SCALARS[name] = scalars
        if sms is not None:
            SMS[name] = sms
        return fn
    return register


# ------------------------------------------------------------------ med/row_sum (M, N <= 8192)
BIG = 1 << 20
MN = B("mul", "M", "N")
THE_TAIL = ("the loop runs to the last full block of 1024 (N - N % 1024) instead of N, dropping each row's partial "
            "tail")


def tail_stop(cond):
    return where(cond, B("sub", "N", B("rem", "N", "BLOCK")), "N")


def row_sum_dropping_tail(cond, params=(), before=()):
    """The golden with its loop to the last full block of the row where ``cond`` holds; ``params``:
    extra params; ``before``: statements put first in the body."""
    g = golden("med/row_sum")
    g["params"] += [{"name": "M"}, *params]
    loop = find(g["body"], lambda s: s.get("op") == "for")[0]
    loop["stop"] = tail_stop(cond)
    g["body"][0:0] = list(before)
    return g


def scalar_loop(loop):
    """A copy of the golden's chunk loop summing each chunk into a scalar carry ``acc``."""
    scalar = copy.deepcopy(loop)
    scalar["carry"] = [{"name": "acc", "init": 0.0, "next": "acc2"}]
    scalar["body"][-1] = let("acc2", B("add", "acc", {"op": "sum", "x": "chunk", "axis": 0}))
    return scalar


def row_sum_two_paths(cond, params=(), before=()):
    """Control shape: where ``cond`` the row is summed chunk by chunk into a scalar (right), else
    the golden's lane-wise partial sums."""
    g = golden("med/row_sum")
    g["params"] += [{"name": "M"}, *params]
    loop = find(g["body"], lambda s: s.get("op") == "for")[0]
    store = g["body"][-1]
    i = g["body"].index(loop)
    g["body"][i:] = [{"op": "if", "cond": cond,
                      "then": [scalar_loop(loop), {"op": "store", "ptr": store["ptr"], "value": "acc"}],
                      "else": [loop, store]}]
    g["body"][0:0] = list(before)
    return g


def carried_product():
    """A one-trip loop whose carry ends as M * N (no let: the inliner does not see it)."""
    return {"op": "for", "var": "once", "stop": 1, "carry": [{"name": "elements", "init": 0, "next": "counted"}],
            "body": [let("counted", B("add", "elements", MN))]}


@candidate("med/row_sum", "wrong_result", {"M": 1100, "N": 1100}, lambda s: s["M"] * s["N"] > BIG)
def row_sum_carry_product():
    return row_sum_dropping_tail(B("gt", "elements", BIG), before=[carried_product()]), (
        f"a one-trip loop carries elements = 0 + M*N (a loop carry, not a let); where elements > 2**20 {THE_TAIL}. "
        "size_conditions inlines lets, params and host values only: the carry's name is no size, the comparison "
        "reads it and is left out; no other draw has M*N past 2**19. Wrong at M = N = 1100.")


@candidate("med/row_sum", "ok")
def row_sum_carry_product_control():
    return row_sum_two_paths(B("gt", "elements", BIG), before=[carried_product()]), (
        "control: elements = M*N through a one-trip loop's carry; past 2**20 the row is summed chunk by chunk "
        "into a scalar, else the golden's partial sums: both right.")


@candidate("med/row_sum", "wrong_result", {"M": 1100, "N": 1100}, lambda s: s["M"] * s["N"] > BIG)
def row_sum_reduce_product():
    lanes_times = B("add", B("mul", "lanes", 0), MN)
    total = let("elements", {"op": "max", "x": lanes_times, "axis": 0})
    g = row_sum_dropping_tail(B("gt", "elements", BIG))
    g["body"].insert(3, total)  # after lanes
    return g, (
        f"elements = max(lanes * 0 + M*N) (a reduction of a block of the product, M*N itself); where elements "
        f"> 2**20 {THE_TAIL}. A Reduce is not among the evaluated nodes: the let inlines to a node the "
        "evaluation reads as '?', and the condition is left out. Wrong at M = N = 1100.")


@candidate("med/row_sum", "wrong_result", {"M": 2100, "N": 2100}, lambda s: (s["M"] - 1) * s["N"] >= 1 << 22)
def row_sum_pid_offset():
    g = golden("med/row_sum")
    g["params"] += [{"name": "M"}]
    loop = find(g["body"], lambda s: s.get("op") == "for")[0]
    loop["stop"] = tail_stop(B("ge", B("mul", "row", "N"), B("shl", 1, 22)))
    return g, (
        f"rows whose first element lies past 2**22 (row * N >= 1 << 22: a 'far offset' path): {THE_TAIL}. The "
        "condition reads program_id: no size condition, no crossing draw; the draws keep M*N below 2**19 (joint "
        "571 x 571, one size large and the other at most 17, range maxima 16 x 8192). Wrong at M = N = 2100 "
        "(rows 1998 and on).")


@candidate("med/row_sum", "wrong_result", {"M": 4500, "N": 4500}, lambda s: s["M"] > 4096 and s["N"] > 4096)
def row_sum_many_rows_literal_stop():
    g = golden("med/row_sum")
    g["params"] += [{"name": "M"}]
    loop = find(g["body"], lambda s: s.get("op") == "for")[0]
    loop["stop"] = where(B("gt", "M", 4096), 4096, "N")
    return g, (
        "where M > 4096 (many rows) the chunk loop stops at 4096 (a literal), not N: columns past 4096 are "
        "dropped (masks keep N < 4096 right). M > 4096 is a condition of one size, drawn at M ~ 6000-8192 with N at "
        "its minimum (1): right there; no condition reads N (the stop is a literal), so no ladder of M against "
        "N; the draws past the extent (4096) hold M small. Wrong at M = N = 4500.")


@candidate("med/row_sum", "wrong_result", {"M": 3, "N": 6500}, lambda s: 5000 < s["N"] < 8000 and s["M"] > 1 and s["N"] % 8)
def row_sum_band_padded_pitch():
    g = golden("med/row_sum")
    x_row = find_let(g["body"], "x_row")
    pitch = where(B("and", B("gt", "N", 5000), B("lt", "N", 8000)), B("sub", "N", B("rem", "N", 8)), "N")
    x_row["value"] = B("add", "x", B("mul", "row", pitch))
    return g, (
        "where 5000 < N < 8000 rows are read at a pitch of N - N % 8 (rows assumed 32-byte aligned): row r from "
        "r * (N - N % 8), not r * N; row 0 is right, and so is every row where 8 divides N. The band's draw (1.5 to 2 times 5001, inside it) holds M at its minimum, 1: "
        "one row, right; the range-maximum draws (N = 8192 with M = 16, 8191) lie past the band, the draws "
        "past the extent (8000) too. Wrong at M = 3, N = 6500 (rows 1 and 2 read 4 and 8 elements early).")


@candidate("med/row_sum", "wrong_result", {"M": 3, "N": 6007},
           lambda s: s["N"] % 3000 < 16 and s["N"] > 3000)
def row_sum_rem_recurs_base_code():
    g = golden("med/row_sum")
    g["params"] += [{"name": "M"}]
    loop = find(g["body"], lambda s: s.get("op") == "for")[0]
    loop["stop"] = where(B("lt", B("rem", "N", 3000), 16), 3000, "N")
    return g, (
        "where N % 3000 < 16 (rows just past a multiple of 3000: 'a small tail') the loop stops at 3000 (masks "
        "keep N < 16 right), dropping columns past 3000. The condition is true at the range's minimum N = 1, so "
        "the regions N in 3000..3015 and 6000..6015 have the minima's answer and get no draw (only runs of "
        "other answers do: N in 16..2999 here). Wrong at M = 3, N = 6007 (3007 columns dropped).")


@candidate("med/row_sum", "wrong_result", {"M": 300, "N": 3000}, lambda s: s["M"] == 300 and s["N"] == 3000)
def row_sum_tuned_shape():
    cond = B("and", B("eq", "M", 300), B("eq", "N", 3000))
    return row_sum_dropping_tail(cond), (
        f"at exactly (M, N) = (300, 3000) (a shape-specialised path) {THE_TAIL}. Each equality gets its own "
        "draw (M = 300 with N at 1 or joint-large ~1000, N = 3000 with M at 1 or ~100), the common sweep "
        "(M = N) never holds both; the ladders miss the point. Wrong at M = 300, N = 3000 (952 of 3000 dropped).")


@candidate("med/row_sum", "wrong_result", {"M": 2400, "N": 1200},
           lambda s: s["M"] == 2 * s["N"] and s["N"] > 1024)
def row_sum_double_height():
    cond = B("and", B("eq", "M", B("mul", 2, "N")), B("gt", "N", 1024))
    return row_sum_dropping_tail(cond), (
        f"where M == 2N and N > 1024 (a 'stacked pair' shape) {THE_TAIL}. A thin set: the common sweep "
        "(M = N) never holds M == 2N, the geometric ladders (factor 1.15) hold exact doubles only among their "
        "small values, the ordering draws put M past N by a gap with both small. Wrong at M = 2400, N = 1200.")


@candidate("med/row_sum", "wrong_result", {"M": 1100, "N": 1100}, lambda s: s["M"] * s["N"] >= BIG)
def row_sum_umulhi_product():
    cond = B("gt", B("umulhi", MN, 1 << 12), 0)
    return row_sum_dropping_tail(cond), (
        f"where umulhi(M*N, 2**12) > 0 (the high word of M*N * 4096: M*N >= 2**20) {THE_TAIL}. The evaluation "
        "returns None for umulhi, so the condition is dropped. Wrong at M = N = 1100.")


@candidate("med/row_sum", "wrong_result", {"M": 1100, "N": 1100}, lambda s: s["M"] * s["N"] > BIG)
def row_sum_fma_product():
    cond = B("gt", {"op": "fma", "x": f32("M"), "y": f32("N"), "z": 0.0}, float(BIG))
    return row_sum_dropping_tail(cond), (
        f"where fma(float(M), float(N), 0) > 2**20 {THE_TAIL}. Fma is not among the evaluated nodes ('?'): the "
        "condition is dropped. Wrong at M = N = 1100.")


@candidate("med/row_sum", "wrong_result", {"M": 1100, "N": 1100}, lambda s: s["M"] * s["N"] > BIG)
def row_sum_bitcast_product():
    cond = B("gt", {"op": "bitcast", "x": f32(MN), "dtype": "i32"}, 0x49800000)
    return row_sum_dropping_tail(cond), (
        f"where bitcast(float(M*N), i32) > 0x49800000 (the bits of 2**20.0: positive floats order as their "
        f"bits, so M*N > 2**20) {THE_TAIL}. Bitcast is not evaluated: dropped. Wrong at M = N = 1100.")


@candidate("med/row_sum", "wrong_result", {"M": 1100, "N": 1100}, lambda s: s["M"] * s["N"] > BIG)
def row_sum_deep_let_chain():
    chain = [let("e0", MN)] + [let(f"e{i}", B("add", f"e{i - 1}", 0)) for i in range(1, 24)]
    g = row_sum_dropping_tail(B("gt", "e23", BIG), before=chain)
    return g, (
        f"e0 = M*N, e1 = e0 + 0, ..., e23 = e22 + 0 (a chain of 24 lets); where e23 > 2**20 {THE_TAIL}. The "
        "inliner stops at depth 32 (each let costs two levels) and leaves a let's name in place: the condition "
        "reads a name that is no size and is dropped. Wrong at M = N = 1100.")


@candidate("med/row_sum", "wrong_result", {"M": 1100, "N": 1100}, lambda s: s["M"] * s["N"] > BIG)
def row_sum_if_result_product():
    branch = {"op": "if", "cond": B("gt", "N", 0), "then": [], "else": [],
              "results": [{"name": "elements", "then": MN, "else": 0}]}
    return row_sum_dropping_tail(B("gt", "elements", BIG), before=[branch]), (
        f"elements = M*N as an if's result (if N > 0: M*N else 0; not a let); where elements > 2**20 {THE_TAIL}. "
        "If results are not inlined: dropped. Wrong at M = N = 1100.")


@candidate("med/row_sum", "wrong_result", {"M": 6000, "N": 6000}, lambda s: s["M"] * s["N"] > 1 << 25)
def row_sum_past_past_budget():
    return row_sum_dropping_tail(B("gt", MN, 1 << 25)), (
        f"where M*N > 2**25 (33554432; the range allows 2**26) {THE_TAIL}. The condition is evaluated, but its "
        "region lies past CPU_PAST_BUDGET (2**25 elements of inputs and outputs): the common sweep stops at "
        "M = N = 5792 and the ladder's points past it do not fit, so no draw. Wrong at M = N = 6000.")


@candidate("med/row_sum", "wrong_result", {"M": 4200, "N": 4200}, lambda s: s["M"] * s["N"] >= 1 << 24)
def row_sum_f32_rounding_guard():
    count = f32(MN)
    cond = B("eq", B("add", count, 1.0), count)
    return row_sum_dropping_tail(cond), (
        f"where float(M*N) + 1.0 == float(M*N) in f32 (M*N >= 2**24, where f32 stops counting by ones) "
        f"{THE_TAIL}. The evaluation computes floats in f64, where the sum always differs: the condition never "
        "changes there (a decoy) and gets no draw, though its region (M*N in [2**24, 2**25)) is within the "
        "budget. Wrong at M = N = 4200.")


def with_decoys(g):
    """31 range asserts (M < 65536 + i, N < 65536 + i: true at every allowed size) chained by 30 ands,
    bound after the loop, just before the store (which stores 0 where they fail): size_conditions
    walks a body from its last statement, so their 61 conditions come before the loop's."""
    decoys = None
    for i in range(31):
        c = B("lt", "M" if i % 2 else "N", 65536 + i)
        decoys = c if decoys is None else B("and", decoys, c)
    store = g["body"].pop()
    g["body"] += [let("sane", decoys), {**store, "value": where("sane", store["value"], 0.0)}]
    return g


@candidate("med/row_sum", "wrong_result", {"M": 1100, "N": 1100}, lambda s: s["M"] * s["N"] > BIG)
def row_sum_sixty_decoys():
    return with_decoys(row_sum_dropping_tail(B("gt", MN, BIG))), (
        f"where M*N > 2**20 {THE_TAIL}; after the loop, 31 range asserts M < 65536 + i / N < 65536 + i chained "
        "by 30 ands (61 conditions, true at every allowed size; false would store 0), met first (a body is walked "
        "from its last statement). A sweep evaluates at most CONDITIONS = 60 conditions of a group: the real "
        "one, the 62nd, is cut off in every group. Wrong at M = N = 1100.")


@candidate("med/row_sum", "ok")
def row_sum_sixty_decoys_control():
    g = golden("med/row_sum")
    g["params"] += [{"name": "M"}]
    loop = find(g["body"], lambda s: s.get("op") == "for")[0]
    loop["stop"] = where(B("gt", MN, BIG), B("mul", B("cdiv", "N", "BLOCK"), "BLOCK"), "N")
    return with_decoys(g), ("control: the 61 never-changing conditions of row_sum_sixty_decoys, then M*N > 2**20 "
                            "choosing a loop stop of cdiv(N, BLOCK) * BLOCK (the same trips as N: masked loads): "
                            "both right; what a sweep of 60 conditions costs.")


@candidate("med/row_sum", "wrong_result", {"M": 1100, "N": 1100}, lambda s: s["M"] * s["N"] > BIG)
def row_sum_twelve_tiers_first():
    tiers = [let("stop0", tail_stop(B("gt", MN, BIG)))]
    for i in range(12):  # tiers of N, each branch the same stop: harmless, but each flips
        tiers.append(let(f"stop{i + 1}", where(B("gt", "N", 300 * (i + 1) + 7), f"stop{i}", f"stop{i}")))
    g = golden("med/row_sum")
    g["params"] += [{"name": "M"}]
    loop = find(g["body"], lambda s: s.get("op") == "for")[0]
    loop["stop"] = "stop12"
    g["body"][0:0] = tiers
    return g, (
        f"where M*N > 2**20 {THE_TAIL}; around it, twelve tiers N > 307, 607, ..., 3607 (a where per tier, both "
        "arms equal: a tuning table left half done). Each tier flips, so the group {N}, swept before {M, N}, "
        "has twelve answers other than the minima's and spends the CROSSINGS = 12 draws (M at 1); the product's "
        "region gets none. Wrong at M = N = 1100.")


@candidate("med/row_sum", "wrong_result", {"M": 5, "N": 1100}, lambda s: s["num_sms"] > 140 and s["N"] % 1024, sms=148)
def row_sum_num_sms_b200():
    g = golden("med/row_sum")
    g["params"] += [{"name": "sms", "value": {"op": "num_sms"}}]
    loop = find(g["body"], lambda s: s.get("op") == "for")[0]
    loop["stop"] = tail_stop(B("gt", "sms", 140))
    return g, (
        f"on a device of more than 140 SMs (a B200 has 148) {THE_TAIL}. Verification sets num_sms to 1, 7, 132 "
        "and 133 (and the interpreter's 3) only; num_sms is no size, so the condition is no size condition. "
        "Wrong at any N % 1024 != 0 with num_sms = 148 (M = 5, N = 1100).")


@candidate("med/row_sum", "ok")
def row_sum_num_sms_control():
    g = row_sum_two_paths(B("gt", "sms", 140), params=[{"name": "sms", "value": {"op": "num_sms"}}])
    return g, ("control: on more than 140 SMs the rows are summed chunk by chunk into a scalar, else as the golden: "
               "both right.")


@candidate("med/row_sum", "wrong_result", {"M": 3, "N": 4098}, lambda s: s["N"] == 4098)
def row_sum_even_point_of_two():
    g = golden("med/row_sum")
    loop = find(g["body"], lambda s: s.get("op") == "for")[0]
    band = B("and", B("ge", "N", 4098), B("le", "N", 4099))
    chunk = find_let(loop["body"], "chunk")
    chunk["value"]["mask"] = B("lt", "cols", where(band, B("add", B("sub", "N", 1), B("rem", "N", 2)), "N"))
    return g, (
        "where 4098 <= N <= 4099 the loads are masked to cols < N - 1 + N % 2: N itself where N is odd, N - 1 "
        "where it is even "
        "(each row's last element dropped at N = 4098 only; the parity is arithmetic, not a condition). The band "
        "is a region of two values, and the draw in a region prefers an odd value (_inside: 'no block divides "
        "it'): N = 4099, right. Wrong at M = 3, N = 4098.")


@candidate("med/row_sum", "wrong_result", {"M": 3, "N": 4099}, lambda s: s["N"] == 4099)
def row_sum_single_point_probe():
    return row_sum_dropping_tail(B("eq", "N", 4099)), (
        f"probe (should be caught): at exactly N == 4099 {THE_TAIL}. A region of one point; the equality draws "
        "and the common sweep both reach it. Wrong at M = 3, N = 4099.")


# ------------------------------------------------------------------ easy/relu (N <= 16777216)
def relu_leaky_when(cond, params=()):
    g = golden("easy/relu")
    g["params"] += list(params)
    store = g["body"][-1]
    store["value"] = where(cond, B("maximum", "v", B("mul", "v", 0.01)), store["value"])
    return g


@candidate("easy/relu", "wrong_result", {"N": 5000000},
           lambda s: ((s["N"] * 512 + 2**31) % 2**32) - 2**31 <= 0)
def relu_i32_wrap_guard():
    return relu_leaky_when(U("not", B("gt", B("mul", "N", 512), 0))), (
        "where not (N * 512 > 0) (a guard against an empty input) it stores a leaky ReLU, max(v, 0.01 v). N * 512 "
        "is an i32 product: it wraps negative for N in [2**22, 2**23) and [3 * 2**22, 2**24) (N = 2**24 wraps to "
        "0). The evaluation's int64 never wraps: the guard never changes there, no draw. Wrong at N = 5000000.")


@candidate("easy/relu", "ok")
def relu_i32_wrap_guard_control():
    g = golden("easy/relu")
    store = g["body"][-1]
    store["value"] = where(U("not", B("gt", B("mul", "N", 512), 0)), where(B("lt", "v", 0.0), 0.0, "v"),
                           store["value"])
    return g, ("control: where the i32 N * 512 wraps (N in [2**22, 2**23) and [3 * 2**22, 2**24)) ReLU as "
               "where(v < 0, 0, v): the same for every input, NaN included.")


@candidate("easy/relu", "wrong_result", {"N": 4500000}, lambda s: s["N"] > 1 << 22)
def relu_offset_past_2_22():
    return relu_leaky_when(B("ge", PID, 4096)), (
        "programs past 4095 (elements at offsets >= 4096 * 1024 = 2**22) store a leaky ReLU, max(v, 0.01 v) (a "
        "condition on program_id: no size condition at all; the literal makes the extent 4096). Only a draw with N > 4194304 takes it: "
        "N is a size only the grid spreads over (no range-maximum draw), its draws past the extent (1024) lie "
        "below 4096, the hypothesis ones below cpu_max 100000. Wrong at N = 4500000.")


# ------------------------------------------------------------------ easy/leaky_relu, easy/threshold (scalars)
@candidate("easy/leaky_relu", "wrong_result", {"N": 5000}, lambda s: s.get("negative_slope") == 0.0,
           scalars={"negative_slope": 0.0})
def leaky_relu_zero_slope_default():
    g = golden("easy/leaky_relu")
    store = g["body"][-1]
    slope = where(B("eq", "negative_slope", 0.0), 0.01, "negative_slope")
    store["value"]["y"] = B("mul", "v", slope)
    return g, (
        "negative_slope == 0.0 is taken as 'unset' and replaced by 0.01 (the `slope or 0.01` bug): at slope 0, "
        "an allowed value of [-0.5, 2.0], negatives come out 0.01 v instead of 0. The slope is drawn uniformly "
        "(and at the bounds -0.5 / 2.0 in extreme draws): 0.0 exactly is never drawn; no draw aims at a value a "
        "scalar is compared with. Wrong at negative_slope = 0.0, any N.")


@candidate("easy/leaky_relu", "ok")
def leaky_relu_zero_slope_control():
    g = golden("easy/leaky_relu")
    store = g["body"][-1]
    store["value"] = where(B("eq", "negative_slope", 0.0), where(B("gt", "v", 0.0), "v", B("mul", "v", 0.0)),
                           store["value"])
    return g, ("control: at negative_slope == 0.0 a separate (right) path where(v > 0, v, v * 0.0); else the golden.")


@candidate("easy/leaky_relu", "wrong_result", {"N": 2000000},
           lambda s: s["N"] * s.get("negative_slope", 0.0) > 2**20, scalars={"negative_slope": 0.9})
def leaky_relu_size_times_slope():
    g = golden("easy/leaky_relu")
    store = g["body"][-1]
    cond = B("gt", B("mul", f32("N"), "negative_slope"), U("exp2", 20.0))
    store["value"]["y"] = where(cond, B("mul", "v", 0.01), store["value"]["y"])
    return g, (
        "where float(N) * negative_slope > exp2(20.0) negatives get slope 0.01 instead of negative_slope. The "
        "condition reads a scalar input besides N: no size condition, dropped (the bound is an exp2, no literal "
        "extent); N's draws stay below 100000 (hypothesis) or 4096 (past the extent), so N * slope <= 2e5. Wrong at N = 2000000, negative_slope = 0.9.")


@candidate("easy/threshold", "wrong_result", {"N": 5000}, lambda s: s.get("threshold") == 0.0,
           scalars={"threshold": 0.0, "value": -1.5})
def threshold_zero_is_relu():
    g = golden("easy/threshold")
    store = g["body"][-1]
    store["value"] = where(B("eq", "threshold", 0.0), B("maximum", "v", 0.0), store["value"])
    return g, (
        "at threshold == 0.0 it stores maximum(v, 0) (a ReLU shortcut) ignoring value: x <= 0 gives 0, not "
        "value. threshold is drawn uniformly from [-1, 1] (bounds in extreme draws): 0.0 exactly never. Wrong at "
        "threshold = 0.0, value = -1.5.")


# ------------------------------------------------------------------ hard/maxpool2x2 (B <= 8, C <= 128, OH, OW <= 256)
@candidate("hard/maxpool2x2", "wrong_result", {"B": 8, "C": 128, "OH": 3, "OW": 3},
           lambda s: s["B"] * s["C"] > 64 * s["OH"] * s["OW"] and s["OH"] >= 3 and s["OW"] >= 3)
def maxpool2x2_many_planes_small_images():
    g = golden("hard/maxpool2x2")
    g["params"] += [{"name": "B"}, {"name": "C"}, {"name": "OH"}]
    cond = B("and", B("and", B("gt", B("mul", "B", "C"), B("mul", 64, B("mul", "OH", "OW"))), B("ge", "OH", 3)),
             B("ge", "OW", 3))
    store = g["body"][-1]
    store["value"] = where(cond, {"op": "max", "x": "top", "axis": 1}, store["value"])
    return g, (
        "where B*C > 64 * OH*OW and OH >= 3 and OW >= 3 (many planes of small images) each output is the max of "
        "its window's top pair only. The conditions read four sizes; a group of four gets only the common sweep "
        "(all four at one value, where B*C <= 8v < 64 v**2 never holds), and the groups {B, C} and {OH, OW} hold "
        "the others at 1. Wrong at B = 8, C = 128, OH = OW = 3.")


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
