"""Round 33 (a): GPU constructs the interpreter forgives. Builds every file of this folder from the
task goldens (run from the repository root: .venv/bin/python tools/redteam_round33/constructs/make.py; files go to $OUT,
default tools/redteam_round33/open/: those in the catalogue were copied from there into tests/redteam)."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lib import OUT, golden, op, write  # noqa: E402


def let(name, value):
    return op("let", name=name, value=value)


def add(a, b): return op("add", lhs=a, rhs=b)
def mul(a, b): return op("mul", lhs=a, rhs=b)
def pid(axis=0): return op("program_id", axis=axis)
BARRIER = op("barrier")


def as_program(g, scratch, extra_params, launch_name):
    """The golden kernel ``g`` as a program of one launch with ``scratch`` tensors (params appended)."""
    k = {key: v for key, v in g.items() if key not in ("params", "grid", "body", "num_warps", "num_stages")}
    k["scratch"] = scratch
    launch = {"name": launch_name, "params": g["params"] + [{"name": p} for p in extra_params], "grid": g["grid"]}
    if "num_warps" in g:
        launch["num_warps"] = g["num_warps"]
    launch["body"] = g["body"]
    k["launches"] = [launch]
    return k


def find(body, name):
    return next(i for i, s in enumerate(body) if s.get("op") == "let" and s.get("name") == name)


# ---------------------------------------------------------------------------------------------
# M2: a program's own lanes add atomically into one slot, then a bound atomic reads the slot
# back (atomic_add of 0, an xchg): atomics against atomics are never a barrier hazard in
# kernelgen/interp/barrier.py, and memorder.py treats a program's own earlier updates as ordered
# by program order, but the lanes are 16 warps that run independently.

def center_rows_atomic_read(barrier):
    g = golden("med/center_rows")
    body = g["body"]
    i = find(body, "mean")
    slot = add("row_sum", pid())
    read = [op("atomic_add", ptr=add(slot, mul("lanes", 0)), val="partial_sums", sem="relaxed")]
    if barrier:
        read.append(BARRIER)
    read += [op("atomic_add", ptr=slot, val=0.0, name="row_total"),
             let("mean", op("div", lhs="row_total", rhs=op("cast", x="N", dtype="f32")))]
    body[i:i + 1] = read
    return as_program(g, [{"name": "row_sum", "dtype": "f32", "shape": ["M"], "zero": True}], ["row_sum"], "center")


write("center_rows_lane_atomics_then_atomic_read_no_barrier", "med/center_rows",
      "Each lane atomically adds its partial sum into the program's slot row_sum[row] (f32 scratch, zero), and the "
      "row total is read back with a bound scalar atomic_add(row_sum[row], 0.0) with no barrier in between. The scalar "
      "atomic is thread 0's: it runs after thread 0's own adds, but the other 15 warps run independently and may not have "
      "added yet (a warp still waiting on its last chunk's loads), so the mean is a partial sum / N for the whole row. "
      "Input x = 4 * ones(1, 1024): torch gives zeros; if thread 0 reads after warp 0's 64 lanes only, mean = 0.25 and "
      "out = 3.75 everywhere. Needs a barrier before the read (the control).",
      center_rows_atomic_read(False))
write("center_rows_lane_atomics_then_barrier_then_atomic_read_control", "med/center_rows",
      "CONTROL (correct): the same lane atomics into row_sum[row], a barrier, then the bound scalar atomic read of the "
      "total: every warp's adds are done before thread 0 reads.",
      center_rows_atomic_read(True), outcome="ok")


def normalize_rows_xchg_read():
    g = golden("med/normalize_rows")
    body = g["body"]
    i = find(body, "norm")
    slot = add("row_squares", pid())
    body[i:i + 1] = [
        op("atomic_add", ptr=add(slot, mul("lanes", 0)), val="partial_squares", sem="relaxed"),
        op("atomic_xchg", ptr=slot, val=0.0, name="sum_of_squares"),
        let("norm", op("maximum", lhs=op("sqrt", x="sum_of_squares"), rhs=1e-12)),
    ]
    return as_program(g, [{"name": "row_squares", "dtype": "f32", "shape": ["M"], "zero": True}], ["row_squares"],
                      "normalize")


write("normalize_rows_lane_atomics_then_xchg_read_no_barrier", "med/normalize_rows",
      "Lanes atomically add their partial sums of squares into row_squares[row] (f32 scratch, zero); thread 0 then takes "
      "the total with a bound atomic_xchg(row_squares[row], 0.0) (read and reset) with no barrier: the other 15 warps' "
      "adds may land after the exchange (and are lost: they go into the reset slot). Input x = ones(1, 1024): torch "
      "gives 1/32 everywhere; if the xchg lands after warp 0's 64 lanes only, the norm is 8 and out = 1/8.",
      normalize_rows_xchg_read())


# ---------------------------------------------------------------------------------------------
# M1: a 'last program copies out' ticket (acq_rel) taken by thread 0 right after the block's atomic
# adds, with no barrier: its release covers thread 0's own adds, not those of warps 1-3, which may
# still be in their row loops. memorder.py keeps one clock per program (a program is one thread).

def col_sum_ticket(barrier, add_sem="relaxed"):
    g = golden("med/col_sum_bf16")
    g["outputs"][0].pop("init", None)
    g["meta"] = [{"name": "ROWS", "value": 64}, {"name": "BLOCK_N", "value": 512}]
    g["grid"] = [op("cdiv", lhs="N", rhs="BLOCK_N"), op("cdiv", lhs="M", rhs="ROWS")]
    g["num_warps"] = 4
    g["params"] = [{"name": "x"}, {"name": "out"}, {"name": "M"}, {"name": "N"}]
    cols = "cols"
    adds = op("atomic_add", ptr=add("acc", cols), val="partial_sums", mask="col_in_bounds")
    if add_sem != "acq_rel":
        adds["sem"] = add_sem
    body = [
        let("cols", add(mul(pid(0), "BLOCK_N"), op("arange", size="BLOCK_N"))),
        let("col_in_bounds", op("lt", lhs="cols", rhs="N")),
        let("first_row", mul(pid(1), "ROWS")),
        let("end_row", op("minimum", lhs=add("first_row", "ROWS"), rhs="M")),
        op("for", var="row", start="first_row", stop="end_row",
           carry=[{"name": "partial_sums", "init": op("full", shape=["BLOCK_N"], value=0.0, dtype="f32"),
                   "next": "new_partial_sums"}],
           body=[let("new_partial_sums", add("partial_sums", op("cast", x=op(
               "load", ptr=add("x", add(mul("row", "N"), "cols")), mask="col_in_bounds", cache="evict_first"),
               dtype="f32")))]),
        adds,
    ]
    if barrier:
        body.append(BARRIER)
    body += [
        op("atomic_add", ptr=add("arrived", pid(0)), val=1, name="ticket"),
        op("if", cond=op("eq", lhs="ticket", rhs=op("sub", lhs=op("num_programs", axis=1), rhs=1)),
           then=[op("atomic_add", ptr=add("acc", cols), val=op("full", shape=["BLOCK_N"], value=0.0, dtype="f32"),
                    mask="col_in_bounds", name="total"),
                 op("store", ptr=add("out", cols), value="total", mask="col_in_bounds")]),
    ]
    g["body"] = body
    return as_program(g, [{"name": "acc", "dtype": "f32", "shape": ["N"], "zero": True},
                          {"name": "arrived", "dtype": "i32", "shape": [op("cdiv", lhs="N", rhs=512)], "zero": True}],
                      ["acc", "arrived"], "col_sum_bf16")


WHY_TICKET = ("'Last row chunk copies out': each program adds its 512 column sums into acc (f32 scratch) with one atomic "
              "per lane ({sem} adds), then takes an acq_rel ticket; the program drawing the last ticket reads acc back "
              "(bound atomic_add of 0) and stores out. The ticket is a scalar atomic, issued by thread 0 right after its "
              "own lanes' adds, with no barrier: its release covers thread 0's writes (and what it observed), not warps "
              "1-3's, which run independently and may still be in their row loops. Schedule (M = 128, N = 512: "
              "programs W = (0, 0), R = (0, 1)): W's warp 0 finishes its 128 columns and draws ticket 0 while W's warp 3 "
              "is still summing columns 384-511; R finishes, draws ticket 1 (last), reads acc and stores out: "
              "out[384:512] lacks rows 0-63 (x = ones: 64 instead of 128). Needs a barrier before the ticket.")
write("col_sum_bf16_ticket_by_thread_zero_before_other_warps_add", "med/col_sum_bf16",
      WHY_TICKET.format(sem="relaxed"), col_sum_ticket(False))
write("col_sum_bf16_acq_rel_adds_ticket_by_thread_zero_no_barrier", "med/col_sum_bf16",
      WHY_TICKET.format(sem="acq_rel (the default: every lane's add is a release, but of its own thread only)"),
      col_sum_ticket(False, add_sem="acq_rel"))
write("col_sum_bf16_ticket_after_barrier_control", "med/col_sum_bf16",
      "CONTROL (correct): the same 'last row chunk copies out' col sum with a barrier between the block's relaxed adds "
      "and thread 0's acq_rel ticket, so every warp's adds precede the release the last program acquires.",
      col_sum_ticket(True), outcome="ok")


# ---------------------------------------------------------------------------------------------
# M3 (the open 'vector widths' item's mechanism, by another trigger): one program stores a row chunk
# and loads it back at the same block positions, so barrier.py takes both for the same threads; but
# Triton's coalesce pass lays out each access by its pointer's contiguity and alignment: the store
# through out_row + cols (contiguous, 16-byte aligned at N % 16 == 0) gets 4 f32 a thread, the load
# through out_row + where(in_row, cols, 0) (a select with a splat: contiguity 1) one a thread.

def normalize_rows_copy_then_reload():
    g = golden("med/normalize_rows")
    body = g["body"]
    first = body[4]  # the squares loop
    assert first["op"] == "for"
    first["body"].append(op("store", ptr=add("out_row", "cols"), value="chunk", mask=op("lt", lhs="cols", rhs="N")))
    second = body[-1]
    assert second["op"] == "for"
    j = next(i for i, s in enumerate(second["body"]) if s.get("name") == "chunk")
    second["body"][j] = let("chunk", op("load", ptr=add("out_row", op("where", cond="in_row", x="cols", y=0)),
                                        mask="in_row", cache="evict_first"))
    return g


write("normalize_rows_copy_then_reload_through_where_index_no_barrier", "med/normalize_rows",
      "The squares loop also copies each x chunk into out (store out_row + cols), and the scaling loop reads the row "
      "back from out through a 'safe' index out_row + where(in_row, cols, 0), scales it and stores it, with no barrier. "
      "The interpreter takes a block position for one thread in every access of one shape (kernelgen/interp/barrier.py), "
      "so it sees each thread reading back its own store. On the GPU at the bench sizes (N = 4096, specialized as a "
      "multiple of 16) Triton's coalesce pass gives the store 4 contiguous f32 per thread (thread t: columns 4t..4t+3 "
      "of a 1024-chunk) and the load, whose pointer is a select with a splat (contiguity 1), one per thread (thread t: "
      "columns t, t+512): column 600 is stored by thread 150 (warp 4) and loaded by thread 88 (warp 2), and stored "
      "again scaled by thread 150: read-after-write and write-after-read across warps with no bar.sync, so a lagging "
      "warp reads the output's poison or an already scaled value (x = ones(1, 4096): out should be 1/64 everywhere; a "
      "column whose load lands after its scaled store gives 1/4096, one read before its copy lands gives garbage).",
      normalize_rows_copy_then_reload())


def normalize_rows_copy_then_reload_same_pointer():
    g = normalize_rows_copy_then_reload()
    second = g["body"][-1]
    j = next(i for i, s in enumerate(second["body"]) if s.get("name") == "chunk")
    second["body"][j] = let("chunk", op("load", ptr=add("out_row", "cols"), mask="in_row", cache="evict_first"))
    return g


write("normalize_rows_copy_then_reload_through_same_pointer_control", "med/normalize_rows",
      "CONTROL (correct): the same copy into out and reload, but the reload goes through the store's own pointer "
      "out_row + cols and mask: one pointer, one layout, so every thread reads back exactly what it stored and stores "
      "over what it alone loaded; no barrier is needed.",
      normalize_rows_copy_then_reload_same_pointer(), outcome="ok")
