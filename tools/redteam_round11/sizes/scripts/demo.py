"""demo.py FILE.json NAME=V ... [seed=S] [extreme=1]: the harness's own single-draw check
(pipeline.verify_cpu, as each draw is judged) at chosen sizes, plus the worst mismatch."""
import json, sys, time
import torch
from kernelgen.harness.pipeline import Case, Settings, stage_parse, stage_check, verify_cpu
from kernelgen.task.spec import get_task
from kernelgen.task.verify import run_reference
from kernelgen.harness.pipeline import checked_inputs
from kernelgen.interp.execute import execute_call
def main():
    e = json.load(open(sys.argv[1]))
    kv = dict(a.split("=") for a in sys.argv[2:])
    seed = int(kv.pop("seed", 0)); extreme = bool(int(kv.pop("extreme", 0)))
    sizes = {k: int(v) for k, v in kv.items()}
    task = get_task(e["task"])
    case = Case(task, json.dumps(e["kernel"]), Settings(gpu=False))
    stage_parse(case); stage_check(case)
    inputs, _ = checked_inputs(task, sizes, seed, extreme)
    exp = run_reference(task, inputs)
    run = execute_call(case.checked, inputs)
    for name, want in exp.items():
        got = run.outputs[name]
        d = (got.double() - want.double()).abs()
        bad = ~torch.isclose(got.double(), want.double(), rtol=1e-3, atol=1e-3, equal_nan=True)
        print(f"{name}: shape {list(want.shape)}, elements differing {int(bad.sum())}")
        if bad.any():
            idx = bad.nonzero()[0].tolist()
            print(f"  first at {idx}: kernel {got[tuple(idx)].item()} reference {want[tuple(idx)].item()}")
    t = time.time()
    try:
        verify_cpu(task, case.checked, sizes, seed, extreme)
        print("verify_cpu: passes")
    except Exception as x:
        print("verify_cpu:", type(x).__name__, str(x)[:400])
if __name__ == "__main__":
    main()
