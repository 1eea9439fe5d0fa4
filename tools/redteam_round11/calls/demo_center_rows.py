"""center_rows_lane_atomics_then_load_no_barrier under one schedule a GPU may run: the warps owning
lanes 0..63 (16 warps x 32 threads, 2 lanes per thread) do their atomic_add and then their load of
row_sum before the other warps' atomic adds land. Written as the same kernel with the atomic split
(lanes < 64, the load, lanes >= 64) and run by the interpreter: the mean that those warps use."""
import sys, json, copy, torch
sys.path.insert(0, "tools/redteam_round11/calls")
from demo import run
B = lambda op, l, r: {"op": op, "lhs": l, "rhs": r}
e = json.load(open("tools/redteam_round11/calls/center_rows_lane_atomics_then_load_no_barrier.json"))
body = e["kernel"]["launches"][0]["body"]
i = [k for k, s in enumerate(body) if s.get("op") == "atomic_add"][0]
early = copy.deepcopy(body[i]); early["mask"] = B("lt", "lanes", 64)
late = copy.deepcopy(body[i]); late["mask"] = B("ge", "lanes", 64)
body[i:i + 2] = [early, body[i + 1], late]
json.dump(e, open("/tmp/center_rows_schedule.json", "w"))
x = 4 * torch.ones(1, 1024)
got, exp = run("tools/redteam_round11/calls/center_rows_lane_atomics_then_load_no_barrier.json", {"x": x.clone()})
print("interpreter (lockstep):      out[0,:4] =", got["out"][0, :4].tolist(), " torch:", exp["out"][0, :4].tolist())
got, exp = run("/tmp/center_rows_schedule.json", {"x": x.clone()})
print("warps 0-1 load before others' adds: out[0,:4] =", got["out"][0, :4].tolist(), " torch:", exp["out"][0, :4].tolist())
