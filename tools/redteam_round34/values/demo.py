"""Each wrong kernel of this folder shown wrong on a hand-made input the task's prompt allows: inputs made by the
harness's make_inputs at fixed sizes, then replaced; run by kernelgen's interpreter (execute_call) and compared
with the task's reference by the harness's own compare_outputs. Each control runs on the same input and matches.
Run from the repository root, after make.py:
    OUT=/tmp/r34 .venv/bin/python tools/redteam_round34/values/demo.py > tools/redteam_round34/values/demos.txt
(it reads the files from $OUT, default tools/redteam_round34/open/)."""
import json, math, os
from pathlib import Path
import torch
from kernelgen.harness import pipeline as P
from kernelgen.interp import execute as X
from kernelgen.task import verify as V
from kernelgen.task.case import Case, Settings
from kernelgen.task.spec import get_task

HERE = Path(os.environ.get("OUT", Path(__file__).resolve().parents[1] / "open"))
NEG_NAN = torch.tensor([0xFFC00000], dtype=torch.int64).to(torch.int32).view(torch.float32)[0].item()


def load(name, call=None):
    e = json.loads((HERE / f"{name}.json").read_text())
    task = get_task(e["task"])
    case = Case(task, json.dumps(e["kernel"]), Settings(gpu=False))
    P.stage_parse(case); P.stage_check(case)
    if call is None:
        return task, case.checked
    tasks = task.variant_tasks()
    i = [t.variant.name for t in tasks].index(call)
    return tasks[i], case.calls_checked[i]


def judge(name, sizes, edit, show, call=None):
    task, checked = load(name, call)
    inputs = edit(dict(V.make_inputs(task, sizes, 0)))
    run = X.execute_call(checked, inputs, orders=False)
    expected = V.run_reference(task, inputs)
    problems = V.compare_outputs(task, run.outputs, expected, inputs, sizes, run.written)
    verdict = "WRONG: " + "; ".join(str(p)[:300] for p in problems[:2]) if problems else "matches the reference"
    print(f"{name}{' (call ' + call + ')' if call else ''} {sizes}\n  {verdict}\n  {show(run.outputs, expected)}",
          flush=True)


def setting(**values):
    def edit(inputs):
        for key, value in values.items():
            inputs[key] = value() if callable(value) else value
        return inputs
    return edit


def both(key):
    return lambda got, want: f"{key}: kernel {got[key].tolist()}, reference {want[key].tolist()}"


f32 = lambda rows: torch.tensor(rows, dtype=torch.float32)  # noqa: E731

if __name__ == "__main__":
    print(f"(-nan below is the f32 NaN with its sign bit set, bits 0xFFC00000: {NEG_NAN}, "
          f"signbit {math.copysign(1.0, NEG_NAN) < 0})")
    for name in ("row_argmax_int_key_negative_nan_ranks_lowest", "row_argmax_int_key_nan_clause_control"):
        judge(name, {"M": 1, "N": 3}, setting(x=f32([[1.0, NEG_NAN, 3.0]])), both("out"))
    for name in ("top1_mask_within_1e-12_of_row_max", "top1_mask_difference_not_positive_control"):
        judge(name, {"M": 1, "N": 3}, setting(x=f32([[1e-13, 0.0, -5e-13]])), both("out"))
    for name in ("softmax_f16_all_minus_inf_row_gives_zeros", "softmax_f16_all_minus_inf_row_gives_nan_control"):
        judge(name, {"M": 2, "N": 3}, setting(x=torch.tensor([[-math.inf] * 3, [1.0, 2.0, 3.0]], dtype=torch.float16)),
              both("out"))
    for name in ("f32_to_f16_inf_above_65504_before_rounding", "f32_to_f16_inf_from_65520_control"):
        judge(name, {"N": 5}, setting(x=f32([65504.0, 65510.0, 65519.0, 65520.0, -65515.0])), both("y"))
    for name in ("frac_trunc_through_i64_saturates_past_2e63", "frac_trunc_through_i64_below_2e23_control"):
        judge(name, {"N": 5}, setting(x=f32([1e20, -3e19, 2.75, math.inf, 1e18])), both("y"))
    for name in ("count_positive_subnormals_flushed", "count_positive_from_least_subnormal_control"):
        judge(name, {"M": 1, "N": 3}, setting(x=f32([[1e-40, 2.0, -1e-40]])), both("out"))
    for name in ("row_any_above_compares_in_f16", "row_any_above_compares_in_f64_control"):
        judge(name, {"M": 1, "N": 2}, setting(x=f32([[2.0005, 1.0]]), threshold=2.0), both("out"))
    for name in ("softmax_temperature_safe_softmax_masked_rows_zero",
                 "softmax_temperature_safe_softmax_masked_rows_nan_control"):
        judge(name, {"M": 2, "N": 2}, setting(x=f32([[-math.inf, -math.inf], [1.0, 2.0]]), temperature=1.0),
              both("out"))
    for name in ("round_half_even_floor_plus_half_f64_just_below_half",
                 "round_half_even_floor_plus_half_below_half_zero_control"):
        judge(name, {"M": 1, "N": 4}, setting(x=torch.tensor([[0.49999999999999994, -0.49999999999999994, 2.5, -0.0]],
                                                             dtype=torch.float64)),
              lambda got, want: f"y: kernel {got['y'].tolist()}, reference {want['y'].tolist()}", call="f64")
    for name in ("isclose_computed_in_f64", "isclose_f64_rounded_to_f32_each_step_control"):
        judge(name, {"N": 2}, setting(a=f32([-1e-8, 0.5]), b=f32([1.0, 1.0]), rtol=0.0, atol=1.0), both("out"))
    for name in ("addcmul_tensor_product_first_overflows", "addcmul_value_times_t1_first_unfused_control"):
        judge(name, {"N": 2}, setting(x=f32([0.0, 1.0]), t1=f32([2e19, 3.0]), t2=f32([2e19, 4.0]), value=0.5),
              both("out"))
    for name in ("softmax_temperature_reciprocal_inf_for_subnormal_temperature",
                 "softmax_temperature_reciprocal_where_finite_control"):
        judge(name, {"M": 1, "N": 2}, setting(x=f32([[1e-38, 0.0]]), temperature=1e-39), both("out"))
    for name in ("dropout_residual_layernorm_mask_then_scale_nan_at_p_one",
                 "dropout_residual_layernorm_mask_then_scale_guarded_control"):
        judge(name, {"M": 1, "N": 4}, setting(x=f32([[1.0, -2.0, 0.5, 3.0]]), residual=f32([[0.1, 0.2, 0.3, 0.4]]),
                                             weight=f32([1.0, 1.0, 1.0, 1.0]), bias=f32([0.0, 0.0, 0.0, 0.0]),
                                             p=1.0, seed=1234, eps=1e-5),
              lambda got, want: f"h: kernel {got['h'].tolist()}, reference {want['h'].tolist()}; "
                                f"y: kernel {got['y'].tolist()}, reference {[round(v, 4) for v in want['y'][0].tolist()]}")
