"""demo_call.py FILE.json CALLNAME NAME=V ... [seed=S] [extreme=1]: variants.verify_call_cpu (the
harness's check of one listed call on one draw), and the outputs' worst element."""
import json, sys
import torch
from kernelgen.harness.pipeline import Case, Settings, stage_parse, stage_check
from kernelgen.task.spec import get_task
from kernelgen.task.variants import verify_call_cpu, bound_call, reference_call
from kernelgen.task.magnitude import checked_inputs
def main():
    e = json.load(open(sys.argv[1])); callname = sys.argv[2]
    kv = dict(a.split("=") for a in sys.argv[3:])
    seed = int(kv.pop("seed", 0)); extreme = bool(int(kv.pop("extreme", 0)))
    sizes = {k: int(v) for k, v in kv.items()}
    task = get_task(e["task"])
    case = Case(task, json.dumps(e["kernel"]), Settings(gpu=False)); stage_parse(case); stage_check(case)
    concrete = [t for t in task.variant_tasks() if t.variant.name == callname][0]
    try:
        verify_call_cpu(concrete, case.kernel, sizes, seed, extreme)
        print(callname, sizes, "verify_call_cpu: passes")
    except Exception as x:
        print(callname, sizes, "verify_call_cpu:", type(x).__name__, str(x)[:500])
if __name__ == "__main__":
    main()
