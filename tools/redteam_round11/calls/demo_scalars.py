import sys, torch
sys.path.insert(0, "tools/redteam_round11/calls")
from demo import run
d = "tools/redteam_round11/calls/"
for args in ({"a": torch.tensor([0.0, 2.0]), "b": torch.tensor([0.0, 2.0]), "rtol": 0.0, "atol": 0.0},
             {"a": torch.tensor([0.0, 1.0]), "b": torch.tensor([0.0, 1.05]), "rtol": 0.1, "atol": 0.0},
             {"a": torch.tensor([0.0, 1.0]), "b": torch.tensor([0.0, 1.05]), "rtol": 0.1, "atol": 0.05}):
    got, exp = run(d + "isclose_error_over_allowed_ratio.json", args)
    print("isclose rtol", args["rtol"], "atol", args["atol"], "kernel", got["out"].tolist(), "torch", exp["out"].tolist())
for lambd in (0.0, 0.5):
    got, exp = run(d + "softshrink_prox_scaling_nan_at_lambd_zero.json", {"x": torch.tensor([0.0, -0.0, 1.0, -2.0]), "lambd": lambd})
    print("softshrink lambd", lambd, "kernel", got["y"].tolist(), "torch", exp["y"].tolist())
for k, s in ((5, 3), (8, None), (9, None), (10, 3)):
    x = torch.arange(24.).reshape(1, 24)
    got, exp = run(d + "avg_pool1d_stride_taps_capped_at_8.json", {"x": x, "kernel_size": k, "stride": s})
    print("avg_pool1d k", k, "stride", s, "kernel", [round(v, 4) for v in got["y"][0].tolist()], "torch", exp["y"][0].tolist())
