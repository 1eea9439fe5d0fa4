import sys; sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from lib import *
T = "hard/layernorm_stats"
def make(barrier):
    k = golden(T)
    body = k["body"]
    # find the second loop (last statement)
    i = len(body) - 1
    loop = body[i]
    pre = [op("let", name="saved_mean", value=op("load", ptr=op("add", lhs="mean", rhs="row"))),
           op("let", name="saved_rstd", value=op("load", ptr=op("add", lhs="rstd", rhs="row")))]
    if barrier:
        pre = [op("barrier")] + pre
    for s in loop["body"]:
        if s.get("name") == "normalized":
            s["value"] = op("mul", lhs=op("sub", lhs="chunk", rhs="saved_mean"), rhs="saved_rstd")
    body[i:i] = pre
    return k
why = ("The row's mean and rstd are stored to the outputs mean[row] and rstd[row], then read back from there "
       "(plain scalar loads, no barrier) for the normalisation loop, instead of kept in registers. On a GPU a scalar "
       "store is executed by thread 0 of the program only (Triton's redundant-data mask: 'a scalar ... only thread 0 "
       "can write'), while a scalar load is executed by every thread of the 4 warps; nothing orders thread 0's st.global "
       "before the other warps' ld.global (no bar.sync between them: the last one is inside the tl.sum reductions, "
       "before the stores), so warps 1-3 may read mean/rstd as the uninitialised torch.empty memory and write their "
       "columns of y from garbage. The interpreter's barrier model (kernelgen/interp/barrier.py) counts two accesses "
       "of one block shape at one position as one thread, and a scalar store and a scalar load are both shape [] "
       "position 0, so no missing_barrier.")
write("layernorm_stats_stats_read_back_from_outputs_no_barrier", T, why, make(False))
write("layernorm_stats_stats_read_back_after_barrier_control", T,
      "CONTROL: as the wrong kernel, with a barrier between the scalar stores of mean/rstd and their loads: thread 0's "
      "stores are visible to every thread after bar.sync.", make(True), outcome="ok")
