"""layernorm_stats_stats_stored_then_reloaded_no_barrier under one schedule a GPU may run: a warp
that does not hold thread 0 loads mean[row] and rstd[row] before thread 0's scalar stores land.
Written as the same kernel with the two loads moved before the two stores, the outputs holding 0
before the launch (memory as it was; the kindest garbage), run by the interpreter: the y that
warp stores."""
import sys, json, torch
sys.path.insert(0, "tools/redteam_round11/calls")
from demo import run
path = "tools/redteam_round11/calls/layernorm_stats_stats_stored_then_reloaded_no_barrier.json"
e = json.load(open(path))
body = e["kernel"]["body"]
stores = [s for s in body if s.get("op") == "store"]
loads = [s for s in body if s.get("op") == "let" and s["name"] in ("saved_mean", "saved_rstd")]
for s in stores + loads:
    body.remove(s)
body[-1:-1] = loads + stores
for o in e["kernel"]["outputs"][1:]:
    o["init"] = 0.0
json.dump(e, open("/tmp/layernorm_stats_schedule.json", "w"))
args = lambda: {"x": torch.tensor([[1., 2., 3., 4.]]), "weight": torch.ones(4), "bias": torch.zeros(4), "eps": 1e-5}
got, exp = run(path, args())
print("interpreter (lockstep): y =", [round(v, 4) for v in got["y"][0].tolist()], " torch:", [round(v, 4) for v in exp["y"][0].tolist()])
got, exp = run("/tmp/layernorm_stats_schedule.json", args())
print("loads before thread 0's stores: y =", got["y"][0].tolist(), " torch:", [round(v, 4) for v in exp["y"][0].tolist()])
