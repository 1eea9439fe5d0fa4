"""Each wrong kernel of this folder shown wrong on a hand-made input the task's prompt allows: inputs made by the
harness's make_inputs at fixed sizes, then edited; run by kernelgen's interpreter (execute_call) and compared
with the task's reference by the harness's own compare_outputs. Controls run on the same inputs.
Run from the repository root, after make.py: .venv/bin/python tools/redteam_round33/values/demo.py > tools/redteam_round33/values/demos.txt
(it reads the files from $OUT, default tools/redteam_round33/open/)"""
import json, math, os
from pathlib import Path
import torch
from kernelgen.harness import pipeline as P
from kernelgen.interp import execute as X
from kernelgen.task import verify as V
from kernelgen.task.case import Case, Settings
from kernelgen.task.spec import get_task

HERE = Path(os.environ.get("OUT", Path(__file__).resolve().parents[1] / "open"))


def load(name):
    e = json.loads((HERE / f"{name}.json").read_text())
    task = get_task(e["task"])
    case = Case(task, json.dumps(e["kernel"]), Settings(gpu=False))
    P.stage_parse(case); P.stage_check(case)
    return task, case.checked


def judge(name, sizes, edit, show):
    task, checked = load(name)
    inputs = V.make_inputs(task, sizes, 0)
    inputs = edit(dict(inputs))
    run = X.execute_call(checked, inputs, orders=False)
    expected = V.run_reference(task, inputs)
    problems = V.compare_outputs(task, run.outputs, expected, inputs, sizes, run.written)
    verdict = "WRONG: " + "; ".join(str(p)[:300] for p in problems[:2]) if problems else "matches the reference"
    print(f"{name} {sizes}\n  {verdict}\n  {show(run.outputs, expected)}", flush=True)


def bmm(inputs):
    inputs["a"] = torch.full_like(inputs["a"], 16.0)
    inputs["b"] = torch.full_like(inputs["b"], 16.0)
    return inputs


def starts_skewed(name, count, long_at):
    def edit(inputs):
        offs = torch.arange(count, dtype=inputs[name].dtype)
        offs[-1] = long_at  # segment count-2 covers rows count-2 .. long_at-1, the last one long_at .. total-1
        inputs[name] = offs
        return inputs
    return edit


def rank1(inputs):
    inputs["u"] = torch.tensor([0.0, 1.0])
    inputs["v"] = torch.tensor([math.inf, 2.0])
    inputs["alpha"] = 1.0
    return inputs


def gemm_relu(inputs):
    inputs["bias"] = inputs["bias"].clone()
    inputs["bias"][0] = -math.inf
    return inputs


def first(key, idx):
    return lambda got, want: f"{key}{list(idx)}: kernel {float(got[key][idx]):.6g}, reference {float(want[key][idx]):.6g}"


def last_row(key):
    return lambda got, want: (f"{key}[-1, :3]: kernel {got[key][-1, :3].tolist()}, reference "
                              f"{[round(x, 4) for x in want[key][-1, :3].tolist()]}")


def top2(inputs):
    inputs["x"] = torch.tensor([[-1e35, -2e35, -3e35]])
    return inputs


def fp8_tiny(inputs):
    inputs["x"] = torch.full_like(inputs["x"], 1e-5)  # f16 1.0014e-05, a subnormal: amax 1e-5 < the 1e-4 floor
    return inputs


def prelu_inf(inputs):
    inputs["x"] = torch.tensor([[0.0, 1.0, -1.0, 0.5]])
    inputs["weight"] = torch.tensor([math.inf, math.inf, 0.25, math.nan])
    return inputs


def moe_skewed(inputs):
    inputs["logits"] = inputs["logits"].clone()
    inputs["logits"][:, 0] += 10.0  # every token's first choice is expert 0
    return inputs


def gelu_large(inputs):
    inputs["x"] = torch.tensor([[300.0, -300.0, 1.0]], dtype=inputs["x"].dtype)
    inputs["grad_y"] = torch.tensor([[1.0, 1.0, 1.0]], dtype=inputs["x"].dtype)
    return inputs


def row(key, r):
    return lambda got, want: (f"{key}[{r}]: kernel {got[key][r].tolist()}, reference {want[key][r].tolist()}")


if __name__ == "__main__":
    for name in ("bmm_f16_saturating_store_clamps_to_65504", "bmm_f16_clamp_only_below_65520_control"):
        judge(name, {"B": 1, "M": 16, "N": 16, "K": 256}, bmm, first("c", (0, 0, 0)))
    for name in ("segment_sum_csr_rows_capped_at_8x_average_segment", "segment_sum_csr_rows_capped_at_e_control"):
        judge(name, {"E": 3000, "D": 8, "S": 100}, starts_skewed("offsets", 100, 500), last_row("out"))
    judge("embedding_bag_sum_tokens_capped_at_8x_average_bag", {"T": 2000, "B": 64, "V": 600, "D": 8},
          starts_skewed("offsets", 64, 500), last_row("out"))
    for name in ("rank1_update_zero_rows_of_u_skip_the_product", "rank1_update_zero_rows_skip_only_finite_v_control"):
        judge(name, {"M": 2, "N": 2}, rank1, first("out", (0, 0)))
    judge("gemm_bias_relu_f16_relu_as_z_times_mask_nan_at_minus_inf", {"M": 4, "N": 4, "K": 16}, gemm_relu,
          first("y", (0, 0)))
    for name in ("row_top2_masked_lanes_padded_with_minus_1e30", "row_top2_masked_lanes_padded_with_lowest_finite_control"):
        judge(name, {"M": 1, "N": 3}, top2, lambda got, want: (f"values {got['values'].tolist()} indices "
              f"{got['indices'].tolist()}; reference {want['values'].tolist()} {want['indices'].tolist()}"))
    judge("fp8_quantize_blockwise_floor_only_for_all_zero_blocks", {"M": 1, "NB": 1}, fp8_tiny,
          lambda got, want: (f"scale kernel {float(got['scale'][0, 0]):.4g}, reference {float(want['scale'][0, 0]):.4g}; "
                             f"q[0,0,0] kernel {float(got['q'][0, 0, 0].float())}, reference {float(want['q'][0, 0, 0].float())}"))
    for name in ("prelu_channels_ge_zero_keeps_zero_at_infinite_slope", "prelu_channels_max_plus_slope_min_nan_at_infinite_slope"):
        judge(name, {"M": 1, "N": 4}, prelu_inf, row("y", 0))
    judge("moe_top2_routing_counts_capped_at_twice_balanced_load", {"T": 1000, "E": 8}, moe_skewed, 
          lambda got, want: f"counts kernel {got['counts'].tolist()}, reference {want['counts'].tolist()}")
