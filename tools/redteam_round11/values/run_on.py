"""Run a catalogue-format candidate on hand-made inputs and compare with the reference.
usage: python run_on.py FILE.json 'python expr: dict of inputs' [VARIANT_INDEX]
Prints inputs, the reference's outputs, the kernel's, and the harness's comparison."""
import json, sys
import torch
from kernelgen.task.spec import get_task
from kernelgen.task.case import Case, Settings
from kernelgen.harness.pipeline import stage_parse, stage_check
from kernelgen.task.verify import run_reference, compare_outputs
from kernelgen.interp.execute import execute_call

torch.set_printoptions(precision=8)
entry = json.load(open(sys.argv[1]))
task = get_task(entry["task"])
inputs = eval(sys.argv[2], {"torch": torch, "inf": float("inf"), "nan": float("nan")})
vi = int(sys.argv[3]) if len(sys.argv) > 3 else 0
case = Case(task=task, answer=json.dumps(entry["kernel"]), settings=Settings())
stage_parse(case)
stage_check(case)
checked = case.calls_checked[vi] if case.calls_checked else case.checked
vtask = task.variant_tasks()[vi] if task.variants else task
sizes = {}
for spec in vtask.signature.inputs:
    if spec.shape is not None and isinstance(inputs.get(spec.name), torch.Tensor):
        for d, n in zip(spec.shape, inputs[spec.name].shape):
            if isinstance(d, str):
                sizes[d] = n
print("sizes", sizes)
expected = run_reference(vtask, inputs)
run = execute_call(checked, inputs)
for k in expected:
    print("reference", k, expected[k])
    print("kernel   ", k, run.outputs[k])
problems = compare_outputs(vtask, run.outputs, expected, inputs, sizes, run.written, 1.0)
print("harness comparison:", [str(p)[:300] for p in problems] or "agree")
