"""Run each round-12 kernel on the call and sizes its ``why`` names, through the interpreter as
verify_call_cpu / verify_cpu do, and print where it differs from the task's reference.
Run from the repository root: ``.venv/bin/python tools/redteam_round12/calls/demo.py [NAME ...]``."""
import json, sys, math
from pathlib import Path
import torch
from kernelgen.task.spec import get_task
from kernelgen.lang import nodes as L
from kernelgen.task.variants import bound_call, outputs_by_name, unlisted_calls
from kernelgen.host.plan import plan_launch, plan_sequence, dtype_name
from kernelgen.interp.execute import execute_sequence
from kernelgen.task.verify import reference_call

HERE = Path(__file__).resolve().parent


def call_task(task, name):
    if name is None:
        return task
    for t in task.variant_tasks() + unlisted_calls(task):
        if t.variant.name == name:
            return t
    raise KeyError(name)


def run(file, args, call=None):
    entry = json.loads((HERE / file).read_text())
    task = call_task(get_task(entry["task"]), call)
    kernel = L.Kernel.model_validate(entry["kernel"])
    ref_in = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in args.items()}
    expected, _ = reference_call(task, ref_in)
    if task.variants or task.variant is not None:
        bound, checked = bound_call(task, kernel, dict(args))
        out = execute_sequence(checked, [plan_launch(checked, bound.args)])
        got = outputs_by_name(task, bound.finish(out.outputs))
    else:
        from kernelgen.check.checker import check
        checked = check(kernel)
        out = execute_sequence(checked, plan_sequence(checked, dict(args)))
        got = {o.name: out.outputs[o.name] for o in task.signature.outputs}
    return task, got, expected


def report(file, args, call=None, show=None):
    task, got, expected = run(file, args, call)
    print(f"== {file} ({task.id}, call {call or '-'})")
    for name, want in expected.items():
        g = got[name]
        tol = task.tolerance_for(dtype_name(want.dtype))
        bad = ~torch.isclose(g.double(), want.double(), rtol=tol.rtol, atol=tol.atol, equal_nan=True)
        idx = bad.nonzero().tolist()
        print(f"  {name}: shape {tuple(g.shape)}, {len(idx)} elements outside rtol={tol.rtol}, atol={tol.atol}"
              + (f"; first {idx[:3]}" if idx else ""))
        for i in (idx[:3] if show is None else show):
            print(f"    at {i}: reference {want[tuple(i)].item()!r}, kernel {g[tuple(i)].item()!r}")


DEMOS = {}


def demo(fn):
    DEMOS[fn.__name__] = fn
    return fn


@demo
def layer_norm():
    torch.manual_seed(0)
    n = 4100
    x = (torch.randn(1, n) * 0.01).half()
    report("layer_norm_optional_f16_no_weight_long_rows_bias_first_chunk.json",
           {"x": x, "weight": None, "bias": torch.ones(n, dtype=torch.float16), "eps": 1e-5}, "unlisted_f16_no_weight")
    # control: the same sizes on the listed bf16 call without a weight
    report("layer_norm_optional_f16_no_weight_long_rows_bias_first_chunk.json",
           {"x": x.bfloat16(), "weight": None, "bias": torch.ones(n, dtype=torch.bfloat16), "eps": 1e-5}, "bf16_bias_only")


@demo
def linear():
    torch.manual_seed(0)
    x, w = torch.randn(2, 3), torch.randn(130, 3)
    report("linear_optional_bias_f32_bias_first_column_tile_only.json", {"x": x, "weight": w, "bias": torch.ones(130)},
           "unlisted_f32")


@demo
def amax():
    x = torch.zeros(130, 2)
    x[129] = 100.0
    report("amax_keepdim_dim0_no_keepdim_first_128_rows.json", {"x": x, "dim": 0, "keepdim": False},
           "unlisted_rows_dim_0_keepdim_false")
    report("amax_keepdim_dim0_no_keepdim_first_128_rows.json", {"x": x, "dim": 0, "keepdim": True}, "cols_keepdim")


@demo
def maximum():
    torch.manual_seed(0)
    a, b = torch.randn(1, 600), torch.randn(1, 600)
    report("maximum_generic_f32_half_blocks.json", {"a": a, "b": b}, "unlisted_f32")
    report("maximum_generic_f32_half_blocks.json", {"a": a.double(), "b": b.double()}, "f64")


@demo
def relu():
    x = torch.ones(2048)
    x[0] = float("nan")
    report("relu_even_n_path_nan_to_zero.json", {"x": x})
    x = torch.ones(2049)
    x[0] = float("nan")
    report("relu_even_n_path_nan_to_zero.json", {"x": x})


@demo
def linear_tall():
    torch.manual_seed(0)
    x, w = torch.randn(300, 1).half(), torch.randn(257, 1).half()
    report("linear_optional_bias_tall_m_over_n_bias_first_256_columns.json",
           {"x": x, "weight": w, "bias": torch.ones(257, dtype=torch.float16)}, "f16_bias")
    # control: M <= N at the same N
    report("linear_optional_bias_tall_m_over_n_bias_first_256_columns.json",
           {"x": x[:257], "weight": w, "bias": torch.ones(257, dtype=torch.float16)}, "f16_bias")


if __name__ == "__main__":
    for name in sys.argv[1:] or list(DEMOS):
        DEMOS[name]()
