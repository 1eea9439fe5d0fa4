"""count_positive_zero_store_then_lane_atomics_no_barrier under one schedule a GPU may run: the warp
owning lanes 0..127 (8 warps x 32 threads x 4 lanes) finishes its row loop and adds before the
thread holding the scalar zero store has stored it. Written as the same kernel reordered (the
lanes < 128 adds, the zero store, the other adds) and run by the interpreter."""
import sys, json, copy, torch
sys.path.insert(0, "tools/redteam_round11/calls")
from demo import run
B = lambda op, l, r: {"op": op, "lhs": l, "rhs": r}
path = "tools/redteam_round11/calls/count_positive_zero_store_then_lane_atomics_no_barrier.json"
e = json.load(open(path))
body = e["kernel"]["body"]
store = [s for s in body if s.get("op") == "store"][0]
atomic = body[-1]
body.remove(store); body.pop()
early = copy.deepcopy(atomic); early["mask"] = B("lt", "lanes", 128)
late = copy.deepcopy(atomic); late["mask"] = B("ge", "lanes", 128)
body += [early, store, late]
e["kernel"]["outputs"][0]["init"] = 0  # what the memory held before: even 0, the kindest garbage
json.dump(e, open("/tmp/count_positive_schedule.json", "w"))
x = torch.ones(1, 1024)
got, exp = run(path, {"x": x.clone()})
print("interpreter (lockstep):", got["out"].tolist(), " torch:", exp["out"].tolist())
got, exp = run("/tmp/count_positive_schedule.json", {"x": x.clone()})
print("one warp's adds before the zero store:", got["out"].tolist(), " torch:", exp["out"].tolist())
