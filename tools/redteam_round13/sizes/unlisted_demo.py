"""Run a candidate file on a call by name (listed or unlisted, kernelgen.task.variants.unlisted_calls)
and compare with the task's reference, as round 12's demo.py does.
usage: python unlisted_demo.py FILE.json CALL_NAME 'python expr: dict of inputs'"""
import json, sys
import torch
from kernelgen.task.spec import get_task
from kernelgen.lang import nodes as L
from kernelgen.task.variants import bound_call, outputs_by_name, unlisted_calls
from kernelgen.host.plan import plan_launch, dtype_name
from kernelgen.interp.execute import execute_sequence
from kernelgen.task.verify import reference_call

entry = json.load(open(sys.argv[1]))
base = get_task(entry["task"])
calls = {t.variant.name: t for t in base.variant_tasks() + unlisted_calls(base)}
task = calls[sys.argv[2]]
args = eval(sys.argv[3], {"torch": torch, "inf": float("inf"), "nan": float("nan")})
kernel = L.Kernel.model_validate(entry["kernel"])
expected, _ = reference_call(task, {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in args.items()})
bound, checked = bound_call(task, kernel, dict(args))
got = outputs_by_name(task, bound.finish(execute_sequence(checked, [plan_launch(checked, bound.args)]).outputs))
print("call", sys.argv[2], "unlisted" if sys.argv[2] not in [t.variant.name for t in base.variant_tasks()] else "listed")
for name, want in expected.items():
    g = got[name]
    tol = task.tolerance_for(dtype_name(want.dtype))
    bad = ~torch.isclose(g.double(), want.double(), rtol=tol.rtol, atol=tol.atol, equal_nan=True)
    idx = bad.nonzero().tolist()
    print(f"{name}: shape {tuple(g.shape)}, {len(idx)} elements outside rtol={tol.rtol}, atol={tol.atol}")
    for i in idx[:3]:
        print(f"  at {i}: reference {want[tuple(i)].item()!r}, kernel {g[tuple(i)].item()!r}")
