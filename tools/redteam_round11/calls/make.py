import sys, json, copy
from pathlib import Path
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3] / "tools"))
from redteam_candidates import golden, find_let
OUT = Path(__file__).resolve().parent

def B(op, l, r): return {"op": op, "lhs": l, "rhs": r}
def U(op, x): return {"op": op, "x": x}

def write(task, what, outcome, why, kernel):
    name = f"{task.split('/')[1]}_{what}"
    (OUT / f"{name}.json").write_text(json.dumps({"task": task, "outcome": outcome, "why": why, "kernel": kernel}, indent=1) + "\n")
    print("wrote", name)

def softshrink():
    g = golden("easy/softshrink")
    body = g["body"]
    # drop 'below', store v * max(0, 1 - lambd/|v|)
    body[:] = [s for s in body if not (s.get("op") == "let" and s["name"] == "below")]
    st = body[-1]
    st["value"] = B("mul", "v", B("maximum", 0.0, B("sub", 1.0, B("div", "lambd", U("abs", "v")))))
    write("easy/softshrink", "prox_scaling_nan_at_lambd_zero", "wrong_result",
          "softshrink as the proximal scaling x * max(0, 1 - lambd / |x|): equal to the piecewise form for every lambd > 0 "
          "(x = 0 gives lambd / 0 = inf, max(0, -inf) = 0), but the prompt allows lambd = 0 (lambd >= 0), where x = 0 "
          "gives 0 / 0 = NaN and maximum propagates it: torch gives 0. Input: lambd = 0, x = [0.0, 1.0]: torch [0, 1], "
          "kernel [nan, 1]. scalar_ranges draws lambd from [0.05, 1.5], never 0.", g)

def moe():
    g = golden("expert/moe_top2_routing")
    permute = g["launches"][2]["body"]
    keep = []
    for s in permute:
        if s.get("op") == "let" and s["name"] in ("local_flat", "chosen_i", "chosen_j", "earlier", "valid_j", "same_before", "rank", "base"):
            continue
        if s.get("op") == "store":
            continue
        keep.append(s)
    keep.append({"op": "atomic_add", "ptr": B("add", "block_base", B("add", B("mul", {"op": "program_id"}, "E"), "chosen")),
                 "val": 1, "mask": "token_valid", "name": "place"})
    keep.append({"op": "store", "ptr": B("add", "order", "place"), "value": "pair_offsets", "mask": "token_valid"})
    permute[:] = keep
    write("expert/moe_top2_routing", "block_rank_by_lane_tickets", "wrong_result",
          "the permute launch replaces the golden's [64,2,64,2] 'earlier assignments with the same expert' count by tickets: "
          "place = atomic_add(block_base[block, expert], 1) per assignment (each program bumps only its own block's row, "
          "so no other program is involved). The interpreter applies one atomic statement's lanes in lane order, which is "
          "assignment order, so tickets come out ascending and the sort looks stable; on a GPU the lanes (threads of "
          "several warps, each holding several elements) hit the counter in no defined order, so assignments of one "
          "expert within a block land permuted: order is no longer torch's stable sort. Any T >= 2 with two assignments "
          "of one expert in one block shows it once the lane order differs. Input: T = 6, E = 4, logits = randn(6, 4) "
          "(seed 0) + [5, 4, 0, 0] (every token picks experts 0 then 1): torch's order is [0, 2, 4, 6, 8, 10, 1, 3, 5, 7, "
          "9, 11]; with the lanes of each atomic applied in reverse order (tools/redteam_round11/calls/demo_moe.py) the kernel "
          "gives [10, 8, 6, 4, 2, 0, 11, 9, 7, 5, 3, 1], while the golden stays right under the same order", g)

def avgpool():
    g = golden("med/avg_pool1d_stride")
    print(json.dumps(g)[:3000])


def avgpool8():
    g = golden("med/avg_pool1d_stride")
    loop = [s for s in g["body"] if s.get("op") == "for"][0]
    loop["stop"] = {"op": "minimum", "lhs": "K", "rhs": 8}
    write("med/avg_pool1d_stride", "taps_capped_at_8", "wrong_result",
          "sums at most 8 taps per window (an unrolled window of up to 8 taps, the tap loop stopping at min(K, 8)) but "
          "divides by K: right for every kernel_size up to 8, which covers every listed call (2, 3, 4 and 5), wrong past "
          "it. The prompt admits any int kernel_size (L >= k). Input: x = ones(1, 9), kernel_size = 9: torch gives [1.0], "
          "the kernel 8/9 = 0.889.", g)


def center_rows_atomic():
    g = golden("med/center_rows")
    g["scratch"] = [{"name": "row_sum", "dtype": "f32", "shape": ["M"], "zero": True}]
    g["params"].insert(2, {"name": "row_sum"})
    body = g["body"]
    i = [k for k, st in enumerate(body) if st.get("op") == "let" and st["name"] == "mean"][0]
    body[i:i + 1] = [
        {"op": "atomic_add", "ptr": B("add", B("add", "row_sum", {"op": "program_id"}), B("mul", "lanes", 0)),
         "val": "partial_sums", "sem": "relaxed"},
        {"op": "let", "name": "mean", "value": B("div", {"op": "load", "ptr": B("add", "row_sum", {"op": "program_id"})},
                                                 {"op": "cast", "x": "N", "dtype": "f32"})},
    ]
    launch = {"name": "center", "params": g.pop("params"), "grid": g.pop("grid"), "num_warps": g.pop("num_warps"), "body": g.pop("body")}
    g["launches"] = [launch]
    write("med/center_rows", "lane_atomics_then_load_no_barrier", "wrong_result",
          "the row sum is combined across lanes by atomic_add of every lane's partial sum into the program's own slot "
          "row_sum[row] (f32 scratch, zero), and each thread then loads row_sum[row] back with a plain load and no "
          "barrier in between. The lanes belong to 16 warps that run independently: a warp that finishes its atomics "
          "first loads the slot before the other warps' adds land and uses a partial sum as the mean. The interpreter "
          "runs the program's lanes in lockstep (the atomic statement completes before the load) and its barrier check "
          "(kernelgen/interp/barrier.py) skips atomics ('ordered by the hardware and not judged here'), so the missing "
          "tl.debug_barrier is never reported. Input: x = 4 * ones(1, 1024): torch gives zeros; if the load of the "
          "warp owning lanes 0..63 runs after its own adds only, its mean is 4 * 64 / 1024 = 0.25 and out[0, 0:64] = 3.75", g)


def argmax_cas():
    g = golden("med/row_argmax")
    g["outputs"][0]["init"] = -1
    body = g["body"]
    body[:] = [st for st in body if st.get("op") != "store" and not (st.get("op") == "let" and st["name"] == "is_top")]
    body.append({"op": "for", "var": "chunk_start", "stop": "N", "step": "BLOCK", "body": [
        {"op": "let", "name": "cols", "value": B("add", "chunk_start", "lanes")},
        {"op": "let", "name": "in_row", "value": B("lt", "cols", "N")},
        {"op": "let", "name": "chunk", "value": {"op": "load", "ptr": B("add", "x_row", "cols"), "mask": "in_row", "other": "-inf"}},
        {"op": "let", "name": "hit", "value": B("and", "in_row", B("or", B("eq", "chunk", "top"),
                                                              B("and", B("ne", "chunk", "chunk"), B("ne", "top", "top"))))},
        {"op": "atomic_cas", "ptr": B("add", B("add", "out", "row"), B("mul", "lanes", 0)), "cmp": -1,
         "val": {"op": "where", "cond": "hit", "x": {"op": "cast", "x": "cols", "dtype": "i64"}, "y": -1}},
    ]})
    write("med/row_argmax", "first_cas_lane_claims", "wrong_result",
          "after the row maximum (the golden's lane pass, top = max, NaN-aware), a second pass over the row's chunks in "
          "order lets every lane holding the maximum claim the output with atomic_cas(out[row], -1, col) (out declared "
          "init -1; lanes without the maximum swap -1 for -1, a no-op): the first chunk holding the maximum wins, and "
          "within it the interpreter applies the lanes of one atomic statement in lane order, so the lowest column "
          "wins, as torch.argmax's first index. On a GPU the lanes of one atomic_cas (threads of 16 warps) reach the "
          "address in no defined order: any column of that chunk holding the maximum may win. Input: x = [[5, 5, 1, "
          "5]] (ties are everywhere in the task's integer domain [-20, 20]): torch gives 0; with the lanes of the CAS "
          "applied in reverse order the kernel gives 3. The race detector only asks that several *programs* "
          "compare-and-swap one value; one program's lanes may swap different values.", g)


def count_positive_store_then_atomic():
    g = golden("med/count_positive")
    body = g["body"]
    body.pop()  # the final store of the lane counts' sum
    loop = [k for k, st in enumerate(body) if st.get("op") == "for"][0]
    body.insert(loop, {"op": "store", "ptr": B("add", "out", "row"), "value": 0})
    body.append({"op": "atomic_add", "ptr": B("add", B("add", "out", "row"), B("mul", "lanes", 0)),
                 "val": "lane_counts", "sem": "relaxed"})
    write("med/count_positive", "zero_store_then_lane_atomics_no_barrier", "wrong_result",
          "each program zeroes its own out[row] with a plain (scalar) store, then, after the row loop, every lane "
          "atomic_adds its count into out[row]: no barrier between the store and the other threads' atomics. On a GPU "
          "the scalar store is one thread's, and the 8 warps run independently: a warp's adds that reach out[row] "
          "before the zero lands are wiped by it (the count comes out short, here by that warp's share). The "
          "interpreter runs the store before the atomic statement, and neither its race detector (one program) nor its "
          "barrier check (atomics 'not judged here') objects. Input: x = ones(1, 1024): torch gives 1024; if the warp "
          "owning lanes 0..127 adds before the zero lands, the kernel gives 896.", g)


def isclose_ratio():
    g = golden("easy/isclose")
    g["body"][-1]["value"] = B("le", B("div", "error", "allowed"), 1.0)
    write("easy/isclose", "error_over_allowed_ratio", "wrong_result",
          "tests the ratio |a - b| / (atol + rtol * |b|) <= 1 instead of |a - b| <= atol + rtol * |b| (the 'relative "
          "error at most one tolerance' form): the same wherever the allowed error is positive (rtol, atol drawn from "
          "[0.01, 0.3] and [0.05, 1.0]), but torch.isclose admits atol = 0 (and rtol = 0, the exact-equality test): "
          "then a == b with allowed = 0 gives 0 / 0 = NaN <= 1, false, where torch gives True. Input: a = b = [0.0, 2.0], "
          "rtol = 0, atol = 0: torch [True, True], kernel [False, False]; rtol = 0.1, atol = 0, a = b = [0.0]: torch "
          "True, kernel False.", g)


def splitk_gemv_ticket(finisher_offset=2, what="split_ticket_second_to_last_finishes", outcome="wrong_result", why=None):
    pid0, pid1 = {"op": "program_id"}, {"op": "program_id", "axis": 1}
    tiles_n = {"op": "cdiv", "lhs": "N", "rhs": "BLOCK_N"}
    body = [
        {"op": "let", "name": "tile", "value": pid0},
        {"op": "let", "name": "m", "value": B("idiv", "tile", "TILES_N")},
        {"op": "let", "name": "cols", "value": B("add", B("mul", B("rem", "tile", "TILES_N"), "BLOCK_N"), {"op": "arange", "size": "BLOCK_N"})},
        {"op": "let", "name": "col_ok", "value": B("lt", "cols", "N")},
        {"op": "let", "name": "w_rows", "value": B("add", "weight", B("mul", {"op": "expand_dims", "x": "cols", "axis": 1}, "K"))},
        {"op": "let", "name": "k_lanes", "value": {"op": "arange", "size": "BLOCK_K"}},
        {"op": "let", "name": "k_lo", "value": B("mul", pid1, "CHUNK")},
        {"op": "let", "name": "k_hi", "value": {"op": "minimum", "lhs": B("add", "k_lo", "CHUNK"), "rhs": "K"}},
        {"op": "for", "var": "k0", "start": "k_lo", "stop": "k_hi", "step": "BLOCK_K",
         "carry": [{"name": "acc", "init": {"op": "full", "shape": ["BLOCK_N", "BLOCK_K"], "value": 0.0, "dtype": "f32"}, "next": "new_acc"}],
         "body": [
            {"op": "let", "name": "ks", "value": B("add", "k0", "k_lanes")},
            {"op": "let", "name": "k_ok", "value": B("lt", "ks", "k_hi")},
            {"op": "let", "name": "xv", "value": {"op": "expand_dims", "x": {"op": "cast", "x": {"op": "load", "ptr": B("add", B("add", "x", B("mul", "m", "K")), "ks"), "mask": "k_ok"}, "dtype": "f32"}, "axis": 0}},
            {"op": "let", "name": "wv", "value": {"op": "cast", "x": {"op": "load", "ptr": B("add", "w_rows", {"op": "expand_dims", "x": "ks", "axis": 0}),
                                                                      "mask": B("and", {"op": "expand_dims", "x": "col_ok", "axis": 1}, {"op": "expand_dims", "x": "k_ok", "axis": 0})}, "dtype": "f32"}},
            {"op": "let", "name": "new_acc", "value": {"op": "fma", "x": "wv", "y": "xv", "z": "acc"}},
         ]},
        {"op": "atomic_add", "ptr": B("add", "partial", B("add", B("mul", "m", "N"), "cols")), "val": {"op": "sum", "x": "acc", "axis": 1}, "mask": "col_ok"},
        {"op": "atomic_add", "ptr": B("add", "arrived", "tile"), "val": 1, "name": "ticket"},
        {"op": "if", "cond": B("eq", "ticket", B("sub", "SPLIT", finisher_offset)), "then": [
            {"op": "atomic_add", "ptr": B("add", "partial", B("add", B("mul", "m", "N"), "cols")), "val": 0.0, "mask": "col_ok", "name": "total"},
            {"op": "store", "ptr": B("add", "y", B("add", B("mul", "m", "N"), "cols")), "value": {"op": "cast", "x": "total", "dtype": "f16"}, "mask": "col_ok"},
        ]},
    ]
    g = {"name": "splitk_gemv_f16",
         "inputs": [{"name": "x", "dtype": "f16", "shape": ["M", "K"]}, {"name": "weight", "dtype": "f16", "shape": ["N", "K"]}],
         "outputs": [{"name": "y", "dtype": "f16", "shape": ["M", "N"]}],
         "meta": [{"name": "BLOCK_N", "value": 8}, {"name": "BLOCK_K", "value": 256}, {"name": "SPLIT", "value": 32}],
         "scratch": [{"name": "partial", "dtype": "f32", "shape": ["M", "N"], "zero": True},
                     {"name": "arrived", "dtype": "i32", "shape": [B("mul", "M", tiles_n)], "zero": True}],
         "launches": [{"name": "splitk", "params": [{"name": "x"}, {"name": "weight"}, {"name": "y"}, {"name": "partial"}, {"name": "arrived"},
                                                    {"name": "N"}, {"name": "K"}, {"name": "TILES_N", "value": tiles_n},
                                                    {"name": "CHUNK", "value": {"op": "cdiv", "lhs": "K", "rhs": "SPLIT"}}],
                       "grid": [B("mul", "M", tiles_n), "SPLIT"], "num_warps": 4, "body": body}]}
    write("expert/splitk_gemv_f16", what, outcome, why or (
          "split-K in one launch with an arrival counter: SPLIT = 32 programs per output tile each atomic_add their f32 "
          "partial sums into a zeroed scratch, take a ticket (atomic_add(arrived[tile], 1), acq_rel) and the program "
          "that should be the last to arrive reads the total (atomic_add(partial, 0)) and stores it rounded to f16, but "
          "the test is ticket == SPLIT - 2 (off by one): the second-to-last arrival finishes, while the last split may "
          "not have added its partial yet. The interpreter's three orders all let the finisher see every partial: "
          "lockstep and the reversed order run the ticket statement for a whole chunk of programs after all their "
          "adds, and the shuffled order runs only 4 programs alone when the grid has more than 16 (it always has 32+ "
          "here). Input: M = N = 1, K = 64, x = weight = ones: torch gives 64; if the program of split 31 (the last "
          "two keys) runs after the others the kernel stores 62."), g)

def splitk_gemv_ticket_control():
    splitk_gemv_ticket(1, "split_ticket_last_finishes_control", "ok",
                       "CONTROL (correct): the same one-launch split-K with the last arrival (ticket == SPLIT - 1) finishing: "
                       "every partial is added before its program's acq_rel ticket, so the last ticket sees them all.")


def layernorm_stats_reload():
    g = golden("hard/layernorm_stats")
    body = g["body"]
    loop = body.pop()
    body += [{"op": "let", "name": "saved_mean", "value": {"op": "load", "ptr": B("add", "mean", "row")}},
             {"op": "let", "name": "saved_rstd", "value": {"op": "load", "ptr": B("add", "rstd", "row")}}, loop]
    find_let(loop["body"], "normalized")["value"] = B("mul", B("sub", "chunk", "saved_mean"), "saved_rstd")
    write("hard/layernorm_stats", "stats_stored_then_reloaded_no_barrier", "wrong_result",
          "stores the row's mean and rstd into the outputs and then loads them back (scalar loads of mean[row] and "
          "rstd[row]) to normalise the row, with no barrier between. Triton stores a scalar from one thread (the "
          "redundant copies are masked off), while every thread of the 4 warps loads it: a warp other than the storing "
          "one may load before the store lands and normalise with whatever the memory held. The interpreter's barrier "
          "check treats two accesses of one block shape at one position as one thread, so a scalar store and a scalar "
          "load of one element never count as different threads and no missing_barrier is reported. Input: any row, "
          "e.g. x = [[1, 2, 3, 4]], weight 1, bias 0, eps 1e-5: torch gives y = [-1.342, -0.447, 0.447, 1.342]; a warp "
          "that reads mean = 0 and rstd = 0 (memory as it was) stores y = bias = 0.", g)

if __name__ == "__main__":
    for n in sys.argv[1:]:
        globals()[n]()
