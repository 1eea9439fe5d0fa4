import sys, json; sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from lib import *
T = "hard/layernorm_stats"
def one(x):  # a [1] block of a scalar
    return op("reshape", x=x, shape=[1])
def make(store_block):
    k = golden(T)
    body = k["body"]
    for s in body:
        if s.get("op") == "store" and store_block:
            base = s["ptr"]["lhs"]
            s["ptr"] = op("add", lhs=op("add", lhs=base, rhs="row"), rhs=op("arange", size=1))
            s["value"] = one(s["value"])
    loop = body[-1]
    ld = lambda n: op("sum", axis=0, x=op("load", ptr=op("add", lhs=op("add", lhs=n, rhs="row"), rhs=op("arange", size=1))))
    pre = [op("let", name="saved_mean", value=ld("mean")), op("let", name="saved_rstd", value=ld("rstd"))]
    for s in loop["body"]:
        if s.get("name") == "normalized":
            s["value"] = op("mul", lhs=op("sub", lhs="chunk", rhs="saved_mean"), rhs="saved_rstd")
    body[-1:-1] = pre
    return k
why_a = ("As layernorm_stats_stats_read_back_from_outputs_no_barrier, with one-element blocks instead of scalars: mean and "
         "rstd are stored as [1] blocks (mean + row + arange(1)) and read back as [1] blocks (then summed to scalars), no "
         "barrier. A [1] block's layout replicates its element over all 128 threads; Triton's store masks the replicas "
         "(only thread 0 writes), its load does not (every thread reads): warps 1-3 may read the uninitialised outputs "
         "before thread 0's st.global. Same shape, same position: one lane to kernelgen/interp/barrier.py.")
write("layernorm_stats_stats_read_back_as_one_element_blocks_no_barrier", T, why_a, make(True))
why_b = ("Probe: scalar stores of mean/rstd, read back as [1] blocks (another block shape) with no barrier: wrong on a GPU "
         "as the scalar version; the interpreter's lane model sees two shapes here.")
write("layernorm_stats_scalar_stats_read_back_as_one_element_blocks_no_barrier", T, why_b, make(False))
