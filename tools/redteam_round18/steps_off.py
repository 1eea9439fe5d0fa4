"""Run a candidate and its task's golden on the same inputs and count, per output, the elements that differ from
the reference's (rounded) value, and by how many representable steps of the output dtype.
usage: python tools/redteam_round18/steps_off.py FILE.json 'python expr: dict of inputs' [VARIANT_INDEX]"""
import json, sys
import torch
import yaml
from pathlib import Path
from kernelgen.task.spec import get_task
from kernelgen.task.case import Case, Settings
from kernelgen.harness.pipeline import stage_parse, stage_check
from kernelgen.task.verify import run_reference
from kernelgen.interp.execute import execute_call

ROOT = Path(__file__).resolve().parents[2]


def steps_between(a, b):
    """|a - b| in representable steps of a's dtype (f16/bf16 via the integer order of the bit patterns)."""
    if a.dtype in (torch.float16, torch.bfloat16):
        def order(t):
            i = t.view(torch.int16).to(torch.int32)
            return torch.where(i < 0, -(i & 0x7FFF), i)
        return (order(a) - order(b.to(a.dtype))).abs()
    return (a.double() - b.double()).abs()


def run(answer, task, vi, inputs):
    case = Case(task=task, answer=answer, settings=Settings())
    stage_parse(case)
    stage_check(case)
    checked = case.calls_checked[vi] if case.calls_checked else case.checked
    return execute_call(checked, {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()})


def main():
    entry = json.load(open(sys.argv[1]))
    task = get_task(entry["task"])
    inputs = eval(sys.argv[2], {"torch": torch, "inf": float("inf"), "nan": float("nan")})
    vi = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    vtask = task.variant_tasks()[vi] if task.variants else task
    expected = run_reference(vtask, {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()})
    gold = json.dumps(yaml.safe_load((ROOT / "bench" / f"{entry['task']}.yaml").read_text())["golden"])
    for name, answer in (("golden", gold), ("candidate", json.dumps(entry["kernel"]))):
        out = run(answer, task, vi, inputs).outputs
        for k, ref in expected.items():
            got = out[k]
            d = steps_between(got, ref).reshape(-1)
            n = d.numel()
            print(f"{name:9} {k}: {int((d >= 1).sum())} of {n} elements off by >= 1 step, "
                  f"{int((d >= 2).sum())} by >= 2, max {float(d.max()) if n else 0:g}")
            idx = (d == d.max()).nonzero()[:1].reshape(-1) if n and d.max() > 0 else []
            for i in idx:
                print(f"          worst at flat {int(i)}: got {got.reshape(-1)[i].item():.8g}, "
                      f"reference {ref.reshape(-1)[i].item():.8g}")


if __name__ == "__main__":
    main()
