"""row_argmax_first_cas_lane_claims with the lanes of every atomic statement applied in reverse lane
order (an order a GPU may take), against torch.argmax."""
import sys, torch
sys.path.insert(0, "tools/redteam_round11/calls")
import kernelgen.interp.program as P
from kernelgen.interp.atomics import apply_atomic
from demo import run

def reversed_lanes(op, buffer, offsets, val, cmp, dtype, deadline=None):
    flip = lambda t: None if t is None else t.flip(0)
    return apply_atomic(op, buffer, flip(offsets), flip(val), flip(cmp), dtype, deadline).flip(0)

x = torch.tensor([[5., 5., 1., 5.], [2., -3., 2., 2.]])
for label, fn in (("interpreter lane order", apply_atomic), ("reversed lane order", reversed_lanes)):
    P.apply_atomic = fn
    got, exp = run("tools/redteam_round11/calls/row_argmax_first_cas_lane_claims.json", {"x": x.clone()})
    print(label, "kernel", got["out"].tolist(), "torch", exp["out"].tolist())
