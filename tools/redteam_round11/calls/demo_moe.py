"""moe_top2_routing_block_rank_by_lane_tickets: run with the lanes of every atomic statement applied
in reverse lane order (an order a GPU may pick: the lanes of one tl.atomic_add hit one address in no
defined order), and compare 'order' with the reference. The golden, under the same patch, stays right."""
import sys, torch
sys.path.insert(0, "tools/redteam_round11/calls")
import kernelgen.interp.program as P
from kernelgen.interp.atomics import apply_atomic
from demo import run

def reversed_lanes(op, buffer, offsets, val, cmp, dtype, deadline=None):
    flip = lambda t: None if t is None else t.flip(0)
    return apply_atomic(op, buffer, flip(offsets), flip(val), flip(cmp), dtype, deadline).flip(0)

torch.manual_seed(0)
T, E = 6, 4
logits = torch.randn(T, E)
logits[:, 0] += 5; logits[:, 1] += 4   # every token picks experts 0 and 1
for label, patch in (("interpreter lane order", False), ("reversed lane order", True)):
    P.apply_atomic = reversed_lanes if patch else apply_atomic
    got, exp = run("tools/redteam_round11/calls/moe_top2_routing_block_rank_by_lane_tickets.json", {"logits": logits.clone()})
    print(label, "kernel order", got["order"].flatten().tolist())
    print(label, "torch  order", exp["order"].flatten().tolist())
# control: the golden under reversed lanes
import json, yaml
g = yaml.safe_load(open("bench/expert/moe_top2_routing.yaml"))["golden"]
json.dump({"task": "expert/moe_top2_routing", "kernel": g}, open("/tmp/moe_golden.json", "w"))
P.apply_atomic = reversed_lanes
got, exp = run("/tmp/moe_golden.json", {"logits": logits.clone()})
print("golden reversed lanes order", got["order"].flatten().tolist(), "equal:", torch.equal(got["order"], exp["order"]))
