"""Round 34 (a): one block shape is not one layout. Builds every file of this folder from the task
goldens (run from the repository root: .venv/bin/python tools/redteam_round34/constructs/make.py; files go to
$OUT, default tools/redteam_round34/open/). layouts.py prints each access's TTGIR layout (sm_90, bench
specialization)."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import functools  # noqa: E402
from lib import OUT, golden, op, write as _write  # noqa: E402

write = functools.partial(_write, compile=True)  # every file: the bugs are in the compiled layouts


def let(name, value): return op("let", name=name, value=value)
def add(a, b): return op("add", lhs=a, rhs=b)
def sub(a, b): return op("sub", lhs=a, rhs=b)
def mul(a, b): return op("mul", lhs=a, rhs=b)
def lt(a, b): return op("lt", lhs=a, rhs=b)
def land(a, b): return op("and", lhs=a, rhs=b)
def where(c, x, y): return op("where", cond=c, x=x, y=y)
def ed(x, axis): return op("expand_dims", x=x, axis=axis)
def load(ptr, mask=None, **kw):
    d = op("load", ptr=ptr, **kw)
    if mask is not None:
        d["mask"] = mask
    return d
def store(ptr, value, mask=None):
    d = op("store", ptr=ptr, value=value)
    if mask is not None:
        d["mask"] = mask
    return d
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


# ---------------------------------------------------------------------------------------------
# L1: normalize_rows, scaling loop: stage the x chunk into out through a pointer Triton cannot
# vectorize (a where index, or a base shifted by one element and an offset shifted back), then
# read it back through out_row + cols and store it scaled, all in one trip (no reduction, so no
# shared-memory bar.sync, between the stage and the read).

def normalize_stage(kind, barrier=False):
    g = golden("med/normalize_rows")
    loop = g["body"][-1]
    body = loop["body"]  # cols, in_row, chunk = load x, store scaled
    if kind in ("where", "where_both"):
        stage_ptr = add("out_row", where("in_row", "cols", 0))
    elif kind == "shifted":
        stage_ptr = add(add("out", 1), sub(add("row_start", "cols"), 1))
    elif kind == "same":
        stage_ptr = add("out_row", "cols")
    body[3:] = [store(stage_ptr, "chunk", "in_row")]
    if barrier:
        body.append(BARRIER)
    back_ptr = stage_ptr if kind == "where_both" else add("out_row", "cols")
    body += [let("staged", load(back_ptr, "in_row")),
             store(back_ptr, mul("staged", "inverse_norm"), "in_row")]
    return g


NORM_WHY = ("The scaling loop stages each x chunk into out through {ptr} (masked by in_row), reads it back through "
            "out_row + cols and stores it scaled, in one trip, no barrier. The interpreter identifies a thread by "
            "(block shape, position) (kernelgen/interp/barrier.py), so it sees each lane reading back its own store. "
            "Compiled for sm_90 at the bench sizes (M = N = 4096, N specialized divisible_by_16; 16 warps, BLOCK 1024) "
            "Triton's coalesce pass gives the staging store {why_one}, so its layout is sizePerThread [1] (thread t: "
            "columns t and t+512 of the chunk), while the reload and the scaled store, contiguous and 16-byte aligned, "
            "get sizePerThread [2] (capped at 1024 elements / 512 threads; thread t: 2t, 2t+1). Column 64 of a chunk is "
            "staged by thread 64 (warp 2) and read back by thread 32 (warp 1); no reduction lies between them (the "
            "norm's sum is before the loop), so no bar.sync either: warp 1 may read out's uninitialised memory, and "
            "warp 2's staging store may land after warp 1's scaled store (write after write), leaving x unscaled. "
            "x = ones(1, 4096): out should be 1/64 everywhere; such columns give garbage or 1.")
write("normalize_rows_stage_through_where_index_then_scale_in_place_no_barrier", "med/normalize_rows",
      NORM_WHY.format(ptr="out_row + where(in_row, cols, 0)",
                      why_one="a per-thread width of 1 (a select's pointer has contiguity 1, and a store is capped at "
                              "its own width, not raised to its slice's largest as a load is)"),
      normalize_stage("where"))
write("normalize_rows_stage_through_shifted_base_then_scale_in_place_no_barrier", "med/normalize_rows",
      NORM_WHY.format(ptr="(out + 1) + (row_start + cols - 1) (the same addresses as out_row + cols, reassociated)",
                      why_one="a per-thread width of 1 (out + 1 is only 4-byte aligned and row_start + cols - 1 has "
                              "divisibility 1, so the axis analysis proves no 16-byte alignment; a store is capped "
                              "at its own width)"),
      normalize_stage("shifted"))
write("normalize_rows_stage_and_reload_through_one_where_index_no_barrier", "med/normalize_rows",
      "The scaling loop stages each x chunk into out, reads it back and stores it scaled, all three through ONE "
      "pointer expression, out_row + where(in_row, cols, 0), in one trip, no barrier. Same shape, position and "
      "pointer: the interpreter sees one thread, and so would a rule 'same pointer expression, same thread'. "
      "Compiled for sm_90 at the bench sizes (N = 4096 divisible_by_16; 16 warps, BLOCK 1024) the where pointer "
      "has contiguity 1, so both stores keep width 1 (sizePerThread [1]: thread t holds columns t, t + 512), but "
      "the reload shares its slice with the load of x through x_row + cols (width 2 after the 1024 / 512 cap) and "
      "a load is raised to its slice's largest width: sizePerThread [2] (thread t: 2t, 2t + 1). Column 64 is "
      "staged by thread 64 (warp 2) and read back by thread 32 (warp 1) with no bar.sync between (PTX: "
      "st.global.b32 x2, ld.global.b32 x2, then the conversion's bar.sync before the scaled store): warp 1 may "
      "read out's uninitialised memory, and the scaled store writes it, times 1/norm, to column 64. x = "
      "ones(1, 4096): out should be 1/64 everywhere.",
      normalize_stage("where_both"))
write("normalize_rows_stage_through_where_index_barrier_then_scale_control", "med/normalize_rows",
      "CONTROL (correct): the same staging store through out_row + where(in_row, cols, 0), then a barrier, then the "
      "reload through out_row + cols and the scaled store: every thread's staged values are visible to all before "
      "any is read back or overwritten.", normalize_stage("where", barrier=True), outcome="ok")
write("normalize_rows_stage_through_same_pointer_then_scale_control", "med/normalize_rows",
      "CONTROL (correct): staging store, reload and scaled store all through out_row + cols with mask in_row: one "
      "pointer, so one layout (sizePerThread [2]) and each element's three accesses are one thread's, in program "
      "order.", normalize_stage("same"), outcome="ok")


# ---------------------------------------------------------------------------------------------
# L2: transpose_bf16, a 2-D block whose layouts differ in ORDER: the golden's transposed tile
# stored negated through out + write_offsets (contiguous along dim 1: order [1, 0], 8 bf16 a
# thread), read back through out + where(write_mask, write_offsets, 0) (contiguity [1, 1]: Triton
# 3.6 orders such a pointer [0, 1], 1 a thread) and stored negated again.

def transpose_twice(kind, barrier=False):
    g = golden("hard/transpose_bf16")
    body = g["body"]
    st = body[-1]
    assert st["op"] == "store"
    body[-1:] = [let("out_tile", add("out", "write_offsets")),
                 store("out_tile", mul(op("trans", x="tile"), -1.0), "write_mask")]
    if barrier:
        body.append(BARRIER)
    back_ptr = add("out", where("write_mask", "write_offsets", 0)) if kind == "where" else "out_tile"
    body += [let("negated", load(back_ptr, "write_mask")),
             store("out_tile", mul("negated", -1.0), "write_mask")]
    return g


write("transpose_bf16_negate_twice_through_where_index_no_barrier", "hard/transpose_bf16",
      "Each program stores its transposed [64, 64] tile, negated (exact), through out + write_offsets, reads it back "
      "through out + where(write_mask, write_offsets, 0) and stores its negation through out + write_offsets, "
      "no barrier. One block shape and position for the three, so the interpreter sees one thread per element. "
      "Compiled for sm_90 (4 warps; M, N divisible_by_16 at the bench sizes), the stores' pointer is contiguous "
      "along dim 1: layout order [1, 0], sizePerThread [1, 8], threadsPerWarp [4, 8], warpsPerCTA [4, 1], so "
      "element (0, 1) is thread 0's and (1, 0) thread 8's; the where pointer has contiguity [1, 1], which Triton "
      "3.6 orders [0, 1] (the reload alone in that group keeps width 1): sizePerThread [1, 1], threadsPerWarp "
      "[32, 1], warpsPerCTA [2, 2], so element (0, 1) is warp 2's lane 0 and (1, 0) warp 0's lane 1. No shared "
      "memory lies between the first store and the reload (the conversion for the final store follows the "
      "reload), so no bar.sync: warp 2 may read (0, 1) before warp 0 stored it (out's uninitialised memory), or "
      "after warp 0 already stored the final value (x = ones: -1 in place of 1), and the negated store may land "
      "after the final one (-1 in place of 1).",
      transpose_twice("where"))
write("transpose_bf16_negate_twice_through_where_index_barrier_control", "hard/transpose_bf16",
      "CONTROL (correct): the same negated store, reload through a where index and negated store, with a barrier "
      "between the first store and the reload.", transpose_twice("where", barrier=True), outcome="ok")
write("transpose_bf16_negate_twice_through_same_pointer_n_aligned_m_not_no_barrier", "hard/transpose_bf16",
      "Written as a control (negated store, reload and final store all through out + write_offsets, no barrier), "
      "wrong in one specialization: at M not a multiple of 16 and N one (a launch compiles N alone "
      "divisible_by_16), Triton stores the [64, 64] tile 1 element a thread (threadsPerWarp [1, 32]) and widens the "
      "reload to 8 a thread (as the x tile's load): out[0, 1] is stored by thread 1 and reloaded by thread 0, "
      "with no barrier between (the team's layout check, round 34, reading the TTGIR of that variant).",
      transpose_twice("same"))


# ---------------------------------------------------------------------------------------------
# L3: gemm_bias_relu_f16, a dot's result: the epilogue stores -relu(acc + bias) through a where
# index (sizePerThread [1, 1] after the mma -> blocked conversion), reads it back through
# y + y_offsets (sizePerThread [1, 8]) and stores its negation there.

def gemm_negate_twice(barrier=False):
    g = golden("hard/gemm_bias_relu_f16")
    body = g["body"]
    st = body[-1]
    assert st["op"] == "store"
    mask = st["mask"]
    body[-1:] = [let("y_mask", mask),
                 store(add("y", where("y_mask", "y_offsets", 0)), op("cast", x=mul("activated", -1.0), dtype="f16"),
                       "y_mask")]
    if barrier:
        body.append(BARRIER)
    body += [let("negated", load(add("y", "y_offsets"), "y_mask")),
             store(add("y", "y_offsets"), mul("negated", -1.0), "y_mask")]
    return g


write("gemm_bias_relu_f16_epilogue_negated_through_where_index_then_reload_no_barrier", "hard/gemm_bias_relu_f16",
      "The epilogue stores -relu(acc + bias) as f16 through y + where(y_mask, y_offsets, 0), reads it back through "
      "y + y_offsets and stores its negation (exact) there, no barrier. One block shape ([128, 256]) and position "
      "for all three, so the interpreter sees one thread per element. Compiled for sm_90 (8 warps, M, N, K "
      "divisible_by_16 at the bench sizes), the dot's mma result is converted to the first store's layout: its "
      "where pointer has contiguity [1, 1], which Triton 3.6 orders [0, 1], and a store keeps its own width 1: "
      "sizePerThread [1, 1], threadsPerWarp [32, 1], warpsPerCTA [4, 2] (element (r, c): lane r % 32, warp "
      "(r / 32) % 4 + 4 (c % 2)); the reload and the last store, contiguous along dim 1 and aligned, get "
      "sizePerThread [1, 8] (16 bytes of f16), threadsPerWarp [1, 32], warpsPerCTA [8, 1] (element (r, c): lane "
      "(c / 8) % 32, warp r % 8). Element (0, 1) is stored by warp 4 and read back by warp 0, (1, 0) stored by "
      "warp 0 lane 1 and read by warp 1. No "
      "shared memory lies between the first store and the reload, so no bar.sync: a thread reads y's "
      "uninitialised memory or another thread's negated value too early, and the negated store may land after "
      "the final one, leaving -relu(...) (all outputs <= 0 where torch gives >= 0).",
      gemm_negate_twice())
write("gemm_bias_relu_f16_epilogue_negated_through_where_index_barrier_control", "hard/gemm_bias_relu_f16",
      "CONTROL (correct): the same negated store through a where index, a barrier, then the reload and the negation "
      "stored through y + y_offsets.", gemm_negate_twice(barrier=True), outcome="ok")


# ---------------------------------------------------------------------------------------------
# L4: col_sum_bf16, atomics then loads: a program adds its column sums (a reduction's result)
# into its own row of a zeroed scratch with relaxed atomics through a where index (sizePerThread
# [1]), reads the row back through scratch + cols (sizePerThread [2]) and adds it into out.

def col_sum_private_slot(barrier=False):
    g = golden("med/col_sum_bf16")
    body = g["body"]
    last = body[-1]
    assert last["op"] == "atomic_add"
    body[-1:] = [let("slot", add("partial", mul(pid(1), "N"))),
                 op("atomic_add", ptr=add("slot", where("col_in_bounds", "cols", 0)),
                    val=op("sum", x="partial_sums", axis=0), mask="col_in_bounds", sem="relaxed")]
    if barrier:
        body.append(BARRIER)
    body += [let("total", load(add("slot", "cols"), "col_in_bounds")),
             op("atomic_add", ptr=add("out", "cols"), val="total", mask="col_in_bounds", sem="relaxed")]
    return as_program(g, [{"name": "partial", "dtype": "f32", "shape": [op("cdiv", lhs="M", rhs=128), "N"],
                           "zero": True}], ["partial"], "col_sum_bf16")


write("col_sum_bf16_atomics_into_private_slot_then_load_no_barrier", "med/col_sum_bf16",
      "Program (c, r) atomically adds its 128 column sums (sum over axis 0 of its f32 partials) into its own row r "
      "of a zeroed f32 scratch through slot + where(col_in_bounds, cols, 0) (relaxed), loads them back through "
      "slot + cols and adds them into out, no barrier. No other program touches row r, so the race detector has "
      "nothing; inside the program the atomic and the load have one block shape ([128]) and position, so "
      "kernelgen/interp/barrier.py sees each lane loading what it added. Compiled for sm_90 (2 warps, M, N "
      "divisible_by_16 at the bench sizes) the atomic, whose where pointer has contiguity 1, keeps sizePerThread "
      "[1] (thread t: columns t and t+64), while the load and out's atomic, contiguous and aligned, get "
      "sizePerThread [2] (128 elements / 64 threads; thread t: 2t, 2t+1): column 64 is added by thread 0 (warp 0) "
      "and loaded by thread 32 (warp 1). A relaxed red.global of one warp is not ordered before another warp's "
      "ld.global without a bar.sync (the sum's shared-memory exchange is before the atomic, not between): the "
      "load may read the slot's 0, and column 64's 128 rows are lost from out (x = ones(4096, 4096): out[64] = "
      "3968 in place of 4096).",
      col_sum_private_slot())
write("col_sum_bf16_atomics_into_private_slot_barrier_then_load_control", "med/col_sum_bf16",
      "CONTROL (correct): the same atomics into the program's scratch row through a where index, a barrier, then the "
      "load through slot + cols and the atomic into out.", col_sum_private_slot(barrier=True), outcome="ok")


# ---------------------------------------------------------------------------------------------
# L5: one pointer expression is not one layout either. Coalesce raises a LOAD to the largest
# per-thread width among the memory ops of its slice (same shape and order), counted in elements,
# and caps a STORE (or atomic) at its own: (a) a bf16 load's 8 elements make an f32 reload 8 a
# thread while the f32 store through the same pointer keeps 4; (b) at an N that is not a multiple
# of 16 the row's pointers are only 4-byte aligned (width 1), but the weight vector's load is
# aligned (width 4): the reload through y_row + cols is raised, the store through y_row + cols not.

def add_layernorm_f32_scratch(barrier=False):
    g = golden("hard/add_layernorm_bf16")
    body = g["body"]
    body.insert(5, let("h32_row", add("h32", "row_start")))
    loop = body[8]
    assert loop["op"] == "for" and loop["carry"][0]["name"] == "partial_sums"
    lb = loop["body"]
    i = next(j for j, s in enumerate(lb) if s.get("name") == "new_partial_sums")
    stage = [store(add("h32_row", "cols"), "h_chunk", "in_row")]
    if barrier:
        stage.append(BARRIER)
    stage.append(let("h_exact", load(add("h32_row", "cols"), "in_row")))
    lb[i:i + 1] = stage + [let("new_partial_sums", add("partial_sums", "h_exact"))]
    for later in body[9:]:  # later loops read h32 instead of x + residual (after the sums' reductions)
        if later.get("op") != "for":
            continue
        lbody = later["body"]
        j = next(j for j, s in enumerate(lbody) if s.get("name") == "x_chunk")
        lbody[j:j + 2] = [let("h_again", load(add("h32_row", "cols"), "in_row"))]
        for s in lbody:
            if s.get("name") == "centered":
                s["value"]["x"] = op("sub", lhs="h_again", rhs="row_mean")
            if s.get("name") == "normalized":
                s["value"]["lhs"] = op("sub", lhs="h_again", rhs="row_mean")
    return as_program(g, [{"name": "h32", "dtype": "f32", "shape": ["M", "N"]}], ["h32"], "add_layernorm")


write("add_layernorm_bf16_f32_scratch_store_then_reload_same_pointer_no_barrier", "hard/add_layernorm_bf16",
      "The first loop keeps x + residual in f32 in a scratch row (store h32_row + cols) and reads it straight back "
      "through the SAME pointer h32_row + cols to accumulate the row sum (the later loops read h32 too, after the "
      "sums' reductions), no barrier between the store and the reload. Same shape, same position, same pointer "
      "expression: the interpreter sees one thread, and so would a rule 'same pointer expression, same thread'. "
      "Compiled for sm_90 at the bench sizes (M = 8192, N = 4096 divisible_by_16; 8 warps, BLOCK 4096), the "
      "coalesce pass puts the f32 reload in one slice with the bf16 loads of x and residual (8 a thread: 16 "
      "bytes) and raises it to 8 a thread (thread t: columns 8t..8t+7 of each 2048), while the f32 store is "
      "capped at its own 16 bytes, 4 a thread (thread t: 4t..4t+3 of each 1024): column 128 is stored by thread "
      "32 (warp 1) and reloaded by thread 16 (warp 0); nothing between them goes through shared memory, so no "
      "bar.sync: warp 0 may read h32's uninitialised memory, and the row's mean (and so y) is garbage.",
      add_layernorm_f32_scratch())
write("add_layernorm_bf16_f32_scratch_store_barrier_then_reload_control", "hard/add_layernorm_bf16",
      "CONTROL (correct): the same f32 scratch row, with a barrier between its store and the reload through the "
      "same pointer.", add_layernorm_f32_scratch(barrier=True), outcome="ok")


def rmsnorm_stage_then_weight(barrier=False):
    g = golden("med/rmsnorm_rows")
    loop = g["body"][-1]
    lb = loop["body"]
    assert lb[-1]["op"] == "store"
    lb[-1:] = [store(add("y_row", "cols"), mul("chunk", "inv_rms"), "in_row")]
    if barrier:
        lb.append(BARRIER)
    lb += [let("normalized", load(add("y_row", "cols"), "in_row")),
           store(add("y_row", "cols"), mul("normalized", "scale"), "in_row")]
    return g


write("rmsnorm_rows_stage_then_weight_same_pointer_unaligned_n_no_barrier", "med/rmsnorm_rows",
      "The output loop stores x * inv_rms into y_row + cols, reads it back through the SAME pointer y_row + cols, "
      "multiplies by the weight and stores it there again, no barrier. The interpreter sees one thread per element "
      "(one shape, one position, one pointer). On the GPU at an N that is not a multiple of 16 (any N the prompt "
      "allows: 1..8192; e.g. M = 4096, N = 4095, compiled without the divisible_by_16 specialization), the axis "
      "analysis knows y_row = y + pid * N only 4-byte aligned: the stores keep width 1 (thread t: columns t and "
      "t + 512 of a 1024 chunk, 16 warps), but the reload shares a slice with the weight's load, whose pointer "
      "weight + cols is 16-byte aligned (width 4, capped at 1024 / 512 = 2), and is raised to 2 a thread (thread "
      "t: 2t, 2t + 1). Column 64 is staged by thread 64 (warp 2) and read back by thread 32 (warp 1), with no "
      "bar.sync between (PTX: st.global.b32 x2, ld.global.b32 x2, then the conversion's bar.sync before the final "
      "store): warp 1 may read y's uninitialised memory and store garbage times the weight. At N = 4096 (the bench size, specialized) all widths are 2 and "
      "the kernel happens to be right.",
      rmsnorm_stage_then_weight())
write("rmsnorm_rows_stage_barrier_then_weight_same_pointer_control", "med/rmsnorm_rows",
      "CONTROL (correct): the same staging store, a barrier, then the reload through y_row + cols and the weighted "
      "store.", rmsnorm_stage_then_weight(barrier=True), outcome="ok")


# ---------------------------------------------------------------------------------------------
# L6: a plain store then atomics: the program zeroes its scratch row through a
# where index (width 1), then adds into it with relaxed atomics through slot + cols (width 2) and
# reads it back through slot + cols: the zero of column 64 (thread 0, warp 0) may land after warp
# 1's add into it.

def col_sum_zero_then_atomics(barrier=False):
    g = golden("med/col_sum_bf16")
    body = g["body"][:4]  # cols, col_in_bounds, first_row, end_row
    # per-lane column sums over the program's rows, one row a trip (a [BLOCK_N] carry: no reduction,
    # so no shared memory and no bar.sync anywhere in the program)
    body += [op("for", var="row", start="first_row", stop="end_row",
                carry=[{"name": "column_sums", "init": op("full", shape=["BLOCK_N"], value=0.0, dtype="f32"),
                        "next": "new_column_sums"}],
                body=[let("new_column_sums", add("column_sums", op("cast", x=load(
                    add("x", add(mul("row", "N"), "cols")), "col_in_bounds"), dtype="f32")))]),
             let("slot", add("partial", mul(pid(1), "N"))),
             store(add("slot", where("col_in_bounds", "cols", 0)),
                   op("full", shape=["BLOCK_N"], value=0.0, dtype="f32"), "col_in_bounds")]
    if barrier:
        body.append(BARRIER)
    body += [op("atomic_add", ptr=add("slot", "cols"), val="column_sums", mask="col_in_bounds", sem="relaxed"),
             # always a barrier here: where N is not a multiple of 16 the slot's atomics are 1 a thread and
             # its load 2 (raised by out's aligned atomic), so the load needs one in any case
             BARRIER,
             let("total", load(add("slot", "cols"), "col_in_bounds")),
             op("atomic_add", ptr=add("out", "cols"), val="total", mask="col_in_bounds", sem="relaxed")]
    g["body"] = body
    # zero: the checker wants an atomic's scratch zero-filled (or stored by an earlier launch); the
    # program zeroes its row once more, a plain store racing with its own atomics
    return as_program(g, [{"name": "partial", "dtype": "f32", "shape": [op("cdiv", lhs="M", rhs=128), "N"],
                           "zero": True}], ["partial"], "col_sum_bf16")


write("col_sum_bf16_zero_slot_through_where_index_then_atomics_no_barrier", "med/col_sum_bf16",
      "Program (c, r) sums its 128 rows of 128 columns per lane (one row a trip, a [128] f32 carry: no reduction, "
      "so no shared memory anywhere), zeroes its own row r of an f32 scratch (zero-filled already: the checker wants that for an "
      "atomic's scratch; the program zeroes it again, as a kernel reusing its buffer would) with a store through slot + "
      "where(col_in_bounds, cols, 0), adds its column sums into it with relaxed atomics through slot + cols, "
      "passes a barrier and loads the row back through slot + cols and adds it into out; no barrier between the "
      "zeroing store and the atomics. One shape and position for the "
      "store, the atomic and the load, so kernelgen/interp/barrier.py sees one thread per column (a zero stored "
      "before its lanes add into it is judged only across lanes). Compiled for sm_90 (2 warps; M, N "
      "divisible_by_16 at the bench sizes) the zeroing store keeps width 1 (thread t: columns t, t + 64) while "
      "the atomic and the load get width 2 (thread t: 2t, 2t + 1): column 64 is zeroed by thread 0 (warp 0) "
      "and added to and read by thread 32 (warp 1). Without a bar.sync the zero may land after warp 1's add "
      "(the column's 128 rows lost: x = ones(4096, 4096): out[64] = 3968 in place of 4096).",
      col_sum_zero_then_atomics())
write("col_sum_bf16_zero_slot_through_where_index_barrier_then_atomics_control", "med/col_sum_bf16",
      "CONTROL (correct): the same zeroing store through a where index, a barrier, then the atomics, a barrier, "
      "the load and the atomic into out (the second barrier is needed where N is not a multiple of 16: there "
      "the slot's atomics are 1 a thread and its load 2).", col_sum_zero_then_atomics(barrier=True), outcome="ok")


# ---------------------------------------------------------------------------------------------
# L7: a 2-D block, one order, other threads per dim: outer's [32, 32] tile staged (a broadcast
# down each row) through (out + 1) + (tile_offs - 1) (contiguous along dim 1 but only 4-byte
# aligned: sizePerThread [1, 1], threadsPerWarp [1, 32]) and reloaded through out + tile_offs
# (sizePerThread [1, 4], threadsPerWarp [4, 8]).

def outer_stage(kind, barrier=False):
    g = golden("easy/outer")
    g["meta"] = [{"name": "BLOCK_M", "value": 32}, {"name": "BLOCK_N", "value": 32}]
    body = g["body"]
    assert body[-1]["op"] == "store"
    stage_ptr = add(add("out", 1), sub("tile_offs", 1)) if kind == "shifted" else add("out", "tile_offs")
    body[-1:] = [store(stage_ptr, where("tile_mask", "a_col", 0.0), "tile_mask")]
    if barrier:
        body.append(BARRIER)
    body += [let("a_tile", load(add("out", "tile_offs"), "tile_mask")),
             store(add("out", "tile_offs"), mul("a_tile", "b_row"), "tile_mask")]
    return g


write("outer_stage_rows_through_shifted_base_then_scale_no_barrier", "easy/outer",
      "Each program ([32, 32] tiles, 4 warps) stages a[rows] broadcast along each row into its out tile through "
      "(out + 1) + (tile_offs - 1) (the same addresses as out + tile_offs), reads the tile back through out + "
      "tile_offs, multiplies by b[cols] and stores it there, no barrier. One shape and position: the interpreter "
      "sees one thread per element. Compiled for sm_90 (M, N divisible_by_16 at the bench sizes), the layouts "
      "have one order ([1, 0]) but other threads per dim: the staging store, 4-byte aligned only, keeps "
      "sizePerThread [1, 1], threadsPerWarp [1, 32], warpsPerCTA [4, 1] (element (r, c): warp r % 4, lane c), "
      "the reload and the last store get sizePerThread [1, 4], threadsPerWarp [4, 8], warpsPerCTA [4, 1] "
      "(element (r, c): warp (r / 4) % 4, lane 8 (r % 4) + c / 4). Element (1, 0) is staged by warp 1 lane 0 "
      "and reloaded and stored by warp 0 lane 8, with no bar.sync between: warp 0 may read out's uninitialised "
      "memory (garbage * b), and warp 1's staging store may land after warp 0's final store (a[1] in place of "
      "a[1] * b[0]).",
      outer_stage("shifted"))
write("outer_stage_rows_through_shifted_base_barrier_then_scale_control", "easy/outer",
      "CONTROL (correct): the same staging store through (out + 1) + (tile_offs - 1), a barrier, then the reload and "
      "the scaled store.", outer_stage("shifted", barrier=True), outcome="ok")


# ---------------------------------------------------------------------------------------------
# L8: controls where the layouts agree by the compiler's own arithmetic: a where-index staging
# store and a contiguous reload, but a [512] block under 16 warps (512 threads): every access's
# width is capped at 512 / 512 = 1, so each element is one thread's in all three. Correct on the
# GPU; a conservative rule (another pointer expression: another thread) would call it
# missing_barrier.

def normalize_block_512():
    g = normalize_stage("where")
    g["meta"] = [{"name": "BLOCK", "value": 512}]
    return g


write("normalize_rows_stage_through_where_index_block_equals_threads_control", "med/normalize_rows",
      "CONTROL (correct on the GPU, by Triton's layout arithmetic): the where-index staging store, contiguous reload "
      "and scaled store of normalize_rows_stage_through_where_index_then_scale_in_place_no_barrier, with BLOCK = "
      "512 under 16 warps: the coalesce pass caps every access at 512 elements / 512 threads = 1 a thread, so all "
      "three have sizePerThread [1] and element j is thread j's in each. 'ok' is right (a conservative rule "
      "would say missing_barrier; a kernel should not lean on this).",
      normalize_block_512(), outcome="ok")


# ---------------------------------------------------------------------------------------------
# L9: write after read with a value that does not come from the read: normalize_rows keeps x in an
# f32 scratch row (first loop), and the scaling loop loads it through scratch_row + cols (width 2),
# then clears it for reuse through scratch_row + where(in_row, cols, 0) (width 1, a constant 0: no
# layout conversion, so nothing makes that store wait for other threads' loads) and stores the
# scaled load to out. Thread 64 may clear column 64 before thread 32 has read it.

def normalize_clear_after_read(barrier=False):
    g = golden("med/normalize_rows")
    body = g["body"]
    body.insert(3, let("kept_row", add("kept", "row_start")))
    first = body[5]
    assert first["op"] == "for"
    first["body"].append(store(add("kept_row", "cols"), "chunk", op("lt", lhs="cols", rhs="N")))
    last = body[-1]
    lb = last["body"]  # cols, in_row, chunk (load x), store
    lb[2] = let("chunk", load(add("kept_row", "cols"), "in_row"))
    st = lb[3]
    lb[3:] = [store(add("kept_row", where("in_row", "cols", 0)), op("full", shape=["BLOCK"], value=0.0, dtype="f32"),
                    "in_row")]
    if barrier:
        lb.insert(3, BARRIER)
    lb.append(st)
    return as_program(g, [{"name": "kept", "dtype": "f32", "shape": ["M", "N"]}], ["kept"], "normalize")


write("normalize_rows_reload_kept_row_then_clear_it_through_where_index_no_barrier", "med/normalize_rows",
      "The squares loop also keeps each x chunk in an f32 scratch row (store kept_row + cols); the scaling loop "
      "(after the norm's sum, a bar.sync) loads the chunk back through kept_row + cols, clears it for reuse with a "
      "store of zeros through kept_row + where(in_row, cols, 0), and stores the scaled load into out, no barrier "
      "between the load and the clearing store. One shape and position: the interpreter sees each lane clearing "
      "what it has read. Compiled for sm_90 at the bench sizes (N = 4096 divisible_by_16; 16 warps, BLOCK "
      "1024), the load gets sizePerThread [2] (thread t: columns 2t, 2t + 1) and the clearing store, a where "
      "pointer, keeps [1] (thread t: t, t + 512): column 64 is read by thread 32 (warp 1) and cleared by thread "
      "64 (warp 2). The zeros are a constant, so no layout conversion (and no bar.sync) makes the clearing store "
      "wait for warp 1's load: the zero may land first, and out[64] = 0 (x = ones(1, 4096): 1/64 expected). "
      "Write after read where the write's value does not come from the read: a rule judging a load by its "
      "position against later writes (a write of a value computed from the load waits for it) misses it too.",
      normalize_clear_after_read())
write("normalize_rows_reload_kept_row_barrier_then_clear_it_control", "med/normalize_rows",
      "CONTROL (correct): the same kept row, reloaded, then a barrier, then cleared through a where index and the "
      "scaled values stored.", normalize_clear_after_read(barrier=True), outcome="ok")


# ---------------------------------------------------------------------------------------------
# L10: the same write after read with atomics around it: col_sum's program adds into its own
# scratch row (atomics through slot + cols), passes a barrier, loads the row (slot + cols, width
# 2) and clears it for reuse through a where index (width 1, constant zeros), then adds the loaded
# row into out.

def col_sum_read_then_clear(barrier=False):
    k = col_sum_zero_then_atomics(barrier=True)  # zero, barrier, atomics, barrier, load, atomic into out
    body = k["launches"][0]["body"]
    i = next(j for j, s in enumerate(body) if s.get("name") == "total")
    clear = [store(add("slot", where("col_in_bounds", "cols", 0)), op("full", shape=["BLOCK_N"], value=0.0, dtype="f32"),
                   "col_in_bounds")]
    if barrier:
        clear.insert(0, BARRIER)
    body[i + 1:i + 1] = clear
    return k


write("col_sum_bf16_load_slot_then_clear_it_through_where_index_no_barrier", "med/col_sum_bf16",
      "As col_sum_bf16_zero_slot_through_where_index_barrier_then_atomics_control (the program's own scratch row: "
      "zeroed, a barrier, its column sums added atomically, a barrier, the row loaded through slot + cols), then "
      "the row is cleared for the next use with a store of zeros through slot + where(col_in_bounds, cols, 0), "
      "no barrier after the load, and the loaded row added into out. One shape and position: the interpreter sees "
      "each lane clearing what it loaded. Compiled for sm_90 (2 warps; M, N divisible_by_16 at the bench sizes) "
      "the load is 2 a thread (thread t: columns 2t, 2t + 1) and the clearing store 1 (thread t: t, t + 64): "
      "column 64 is loaded by thread 32 (warp 1) and cleared by thread 0 (warp 0). The zeros are a constant: no "
      "layout conversion makes the clear wait for warp 1's load, so the zero may land first and out[64] loses "
      "the program's 128 rows (x = ones(4096, 4096): 3968 in place of 4096). Write after read, the write's value "
      "not computed from the read.",
      col_sum_read_then_clear())
write("col_sum_bf16_load_slot_barrier_then_clear_it_control", "med/col_sum_bf16",
      "CONTROL (correct): the same, with a barrier between the load of the row and the clearing store.",
      col_sum_read_then_clear(barrier=True), outcome="ok")


# ---------------------------------------------------------------------------------------------
# L11: the write-after-read of L9/L10 in 2-D, with the orders apart: transpose_bf16 stages the
# transposed tile in a bf16 scratch (one pointer, a barrier after), loads it back through
# scratch + write_offsets (order [1, 0], 8 a thread), clears it through a where index (order
# [0, 1], 1 a thread: constant zeros, no conversion) and stores the load to out.

def transpose_read_then_clear(barrier=False):
    g = golden("hard/transpose_bf16")
    body = g["body"]
    st = body[-1]
    assert st["op"] == "store"
    body[-1:] = [store(add("staged", "write_offsets"), op("trans", x="tile"), "write_mask"), BARRIER,
                 let("back", load(add("staged", "write_offsets"), "write_mask"))]
    if barrier:
        body.append(BARRIER)
    body += [store(add("staged", where("write_mask", "write_offsets", 0)),
                   op("full", shape=["BLOCK_N", "BLOCK_M"], value=0.0, dtype="bf16"), "write_mask"),
             store(add("out", "write_offsets"), "back", "write_mask")]
    return as_program(g, [{"name": "staged", "dtype": "bf16", "shape": ["N", "M"]}], ["staged"], "transpose")


write("transpose_bf16_stage_reload_then_clear_through_where_index_no_barrier", "hard/transpose_bf16",
      "Each program stores its transposed tile into a bf16 scratch through staged + write_offsets, passes a "
      "barrier, loads it back through the same pointer, clears the scratch tile for reuse with zeros through "
      "staged + where(write_mask, write_offsets, 0), and stores the loaded tile to out; no barrier between the "
      "load and the clear. One shape and position: the interpreter sees each lane clearing what it loaded. "
      "Compiled for sm_90 (4 warps; M, N divisible_by_16 at the bench sizes) the load has order [1, 0], "
      "sizePerThread [1, 8], threadsPerWarp [4, 8], warpsPerCTA [4, 1] (element (0, 1): warp 0, lane 0), the "
      "clearing store order [0, 1], sizePerThread [1, 1], threadsPerWarp [32, 1], warpsPerCTA [2, 2] (element "
      "(0, 1): warp 2, lane 0). The zeros are a constant, so no layout conversion (no bar.sync) makes the clear "
      "wait for warp 0's load: warp 2's zero may land first and out gets 0 there (x = ones: 0 in place of 1). "
      "Write after read, the write's value not computed from the read.",
      transpose_read_then_clear())
write("transpose_bf16_stage_reload_barrier_then_clear_control", "hard/transpose_bf16",
      "CONTROL (correct): the same, with a barrier between the reload and the clearing store.",
      transpose_read_then_clear(barrier=True), outcome="ok")


# ---------------------------------------------------------------------------------------------
# L12: a race in one specialization only. Triton specializes each integer argument on its own
# (divisible by 16 or not), so a launch at K = 4096, N = 4095 compiles a variant with K alone
# divisible_by_16. gemm_bias_relu_f16 with BLOCK_N = BLOCK_K = 64: the x tiles ([128, 64], through
# x + rows * K + ks) and the y tile ([128, 64]) are one shape and order, so y's reload is raised to
# x's width (8 f16 when K is a multiple of 16) while y's store keeps its own (1 when N is not):
# the same pointer y + y_offsets for store and reload, one thread each only where K and N are both
# multiples of 16 or both not.

def gemm_same_pointer_mixed_variant(barrier=False):
    g = golden("hard/gemm_bias_relu_f16")
    g["meta"] = [{"name": "BLOCK_M", "value": 128}, {"name": "BLOCK_N", "value": 64}, {"name": "BLOCK_K", "value": 64}]
    body = g["body"]
    st = body[-1]
    assert st["op"] == "store"
    body[-1:] = [let("y_mask", st["mask"]),
                 store(add("y", "y_offsets"), op("cast", x=mul("activated", -1.0), dtype="f16"), "y_mask")]
    if barrier:
        body.append(BARRIER)
    body += [let("negated", load(add("y", "y_offsets"), "y_mask")),
             store(add("y", "y_offsets"), mul("negated", -1.0), "y_mask")]
    return g


write("gemm_bias_relu_f16_negated_epilogue_same_pointer_k_aligned_n_not_no_barrier", "hard/gemm_bias_relu_f16",
      "BLOCK_N = BLOCK_K = 64; the epilogue stores -relu(acc + bias) as f16 through y + y_offsets, reloads it "
      "through the SAME pointer and stores its negation there, no barrier. In the variants the harness can see "
      "(no argument divisible by 16; all of them, as at the bench sizes 4096^3) the store and the reload share "
      "one layout (width 1, resp. 8). But Triton specializes each integer argument by itself: a launch at M = "
      "K = 4096, N = 4095 (prompt-allowed) compiles K alone divisible_by_16. There the x tiles (x + rows * K + "
      "ks, [128, 64], order [1, 0]) are 16-byte aligned and loaded 8 a thread, and y's reload, one shape and "
      "order with them, is raised to 8 (sizePerThread [1, 8], threadsPerWarp [4, 8], warpsPerCTA [8, 1]), while "
      "y's store, "
      "its row base y + rows * N only 2-byte aligned, keeps width 1 (sizePerThread [1, 1], threadsPerWarp "
      "[1, 32], warpsPerCTA [4, 2]: element (r, c) is warp 2 (r % 4) + (c / 32) % 2, lane c % 32; the reload's "
      "is warp (r / 4) % 8, lane 8 (r % 4) + c / 8): element (1, 0) is stored by warp 2 and reloaded by warp 0 "
      "lane 8. No bar.sync between the store and the reload (PTX of the K-only variant: st.global.b16 x32, "
      "ld.global.b16 x32): a thread reads y's uninitialised memory or the negated value "
      "of another's (then stores its negation: relu(...) < 0 in place of >= 0), and the negated store may land "
      "after the final one.",
      gemm_same_pointer_mixed_variant())
write("gemm_bias_relu_f16_negated_epilogue_same_pointer_barrier_control", "hard/gemm_bias_relu_f16",
      "CONTROL (correct): the same, with a barrier between the negated store and the reload.",
      gemm_same_pointer_mixed_variant(barrier=True), outcome="ok")
