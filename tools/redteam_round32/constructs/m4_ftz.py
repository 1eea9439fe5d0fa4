import sys, json; sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from lib import *
T = "easy/maximum_generic"
def make(xchg):
    k = golden(T)
    k["outputs"][0]["init"] = 0
    st = k["body"][-1]
    k["body"][-1] = op("atomic_xchg" if xchg else "atomic_add", ptr=st["ptr"], val=st["value"], mask=st["mask"], sem="relaxed")
    return k
why = ("The result is written by atomic_add (relaxed) into the output declared init 0, instead of a store: 0 + v is v "
       "for every dtype (NaN, infinities; -0.0 becomes +0.0, which the task does not compare), so the interpreter's "
       "atomics (kernelgen/interp/atomics.py: 'f32 and f64 add in their own precision', torch.add, subnormals kept) "
       "give torch.maximum exactly. On an H100 the f32 variant's atomic_add is atom.global.add.f32 (Triton emits no "
       ".noftz for f32; only f16/bf16 have atom.add.noftz), and PTX's atom/red .add.f32 'flushes subnormal inputs and "
       "results to sign-preserving zero': every f32 maximum below 2**-126 in magnitude is stored as 0, against the "
       "task's exact tolerance (rtol = atol = 0). CPU mode's spread draw puts f32 inputs down to 2**-149, so the "
       "subnormal results are drawn; only the interpreter's atomic add does not flush them.")
write("maximum_generic_f32_atomic_add_into_zero_flushes_subnormals", T, why, make(False))
write("maximum_generic_atomic_xchg_into_zero_control", T,
      "CONTROL: the same, written by atomic_xchg (a bitwise exchange: no flush of subnormals on the GPU) into the "
      "init-0 output: every element gets max(a, b)'s bits.", make(True), outcome="ok")
