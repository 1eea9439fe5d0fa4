import sys, json; sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from lib import *
T = "med/absmax_quantize"
def rename(node, old, new):
    if isinstance(node, dict):
        return {k: (new if v == old and k not in ("name", "op") else rename(v, old, new)) for k, v in node.items()}
    if isinstance(node, list):
        return [rename(v, old, new) for v in node]
    return node
def make(barrier):
    k = golden(T)
    iff = k["body"][5]
    th = iff["then"]
    i = next(j for j, s in enumerate(th) if s["op"] == "store")
    extra = ([op("barrier")] if barrier else []) + [op("let", name="saved_scale1", value=op("load", ptr=op("add", lhs="scale", rhs="row")))]
    th[i + 1:] = extra + rename(th[i + 1:], "row_scale1", "saved_scale1")
    el = iff["else"]
    i = next(j for j, s in enumerate(el) if s["op"] == "store")
    extra = ([op("barrier")] if barrier else []) + [op("let", name="saved_scale", value=op("load", ptr=op("add", lhs="scale", rhs="row")))]
    el[i + 1:] = extra + rename(el[i + 1:], "row_scale", "saved_scale")
    return k
why = ("Each row's scale is stored to scale[row] and read back from there (a plain scalar load right after the store, no "
       "barrier) for the quantisation, on both paths. A scalar store is executed by thread 0 of the program only (Triton's "
       "redundant-data mask for a rank-0 value; the PTX is @p st.global with p = tid == 0), a scalar load by all 512 threads "
       "of the 16 warps, and no bar.sync lies between them (the last is inside the max reduction, before the store): warps "
       "1-15 may divide by the uninitialised scale and store garbage q for their columns. The interpreter counts a shape-[] "
       "store and a shape-[] load as one lane (kernelgen/interp/barrier.py: same block shape, same position), so no "
       "missing_barrier; every value it computes is exact.")
write("absmax_quantize_scale_read_back_from_output_no_barrier", T, why, make(False))
write("absmax_quantize_scale_read_back_after_barrier_control", T,
      "CONTROL: the same read-back of scale[row], after a barrier: thread 0's store is visible to all threads.", make(True), outcome="ok")
