import json, copy, sys
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[4] / "tools"))
from kernelgen.task.spec import get_task
from kernelgen.lang.parse import kernel_to_json
def golden(tid):
    return json.loads(kernel_to_json(get_task(tid).golden))
def B(op, l, r): return {"op": op, "lhs": l, "rhs": r}
def write(name, task, outcome, why, kernel):
    json.dump({"task": task, "outcome": outcome, "why": why, "kernel": kernel}, open(f"{name}.json", "w"), indent=1)
    json.dump(kernel, open(f"{name}.kernel.json", "w"))
