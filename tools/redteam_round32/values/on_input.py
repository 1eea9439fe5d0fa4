"""Run a kernel file on given inputs in the interpreter and print it beside the reference and the harness's
comparison. Usage (from the repository root): .venv/bin/python tools/redteam_round32/values/on_input.py FILE.json SIZES_JSON 'python dict of inputs'"""
import json, sys, math
import torch
from kernelgen.task.spec import get_task
from kernelgen.check.checker import check
from kernelgen.lang.parse import parse_kernel
from kernelgen.interp.execute import execute_call
from kernelgen.task.verify import run_reference, compare_outputs
inf, nan = math.inf, math.nan
e = json.load(open(sys.argv[1])); task = get_task(e["task"])
sizes = json.loads(sys.argv[2])
inputs = eval(sys.argv[3], {"torch": torch, "inf": inf, "nan": nan})
checked = check(parse_kernel(json.dumps(e["kernel"])))
expected = run_reference(task, inputs)
run = execute_call(checked, {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()})
for name in expected:
    print(name, "torch:", expected[name].flatten()[:8].tolist(), " kernel:", run.outputs[name].flatten()[:8].tolist())
probs = compare_outputs(task, run.outputs, expected, inputs, sizes, run.written, 1.0)
print("harness comparison:", "ok" if not probs else [str(p)[:200] for p in probs])
