"""Each wrong candidate of round 28 shown wrong on an input the task's prompt allows.
Run from the repository root: .venv/bin/python tools/redteam_round28/demo.py > tools/redteam_round28/demos.txt

Inputs built by hand, run by the reference interpreter (kernelgen.interp.execute.execute_call, lockstep) and
compared with the task's reference by the harness's own kernelgen.task.verify.compare_outputs (as round 27)."""
import json, sys
from pathlib import Path
import torch
from kernelgen.harness import pipeline as P
from kernelgen.interp import execute as X
from kernelgen.interp.orders import LOCKSTEP
from kernelgen.task import verify as V
from kernelgen.task.case import Case, Settings
from kernelgen.task.spec import get_task

HERE = Path(__file__).resolve().parent


def load(name):
    e = json.loads((HERE / f"{name}.json").read_text())
    task = get_task(e["task"])
    case = Case(task, json.dumps(e["kernel"]), Settings(gpu=False))
    P.stage_parse(case); P.stage_check(case)
    return task, case.checked


def judge(task, checked, inputs, sizes, order=LOCKSTEP):
    X.LOCKSTEP = order
    try:
        run = X.execute_call(checked, inputs, orders=False)
    except Exception as exc:  # noqa: BLE001
        print(f"  [{order.kind}] WRONG (faults): {type(exc).__name__}: {str(exc)[:240]}", flush=True)
        return
    finally:
        X.LOCKSTEP = LOCKSTEP
    expected = V.run_reference(task, inputs)
    problems = V.compare_outputs(task, run.outputs, expected, inputs, sizes, run.written)
    print(f"  [{order.kind}] " + ("WRONG: " + "; ".join(str(p)[:260] for p in problems[:2]) if problems
                                 else "matches the reference"), flush=True)


def topk_band(name, n, threes, cap_read):
    """-4 everywhere, 3 at columns 0..threes-1 (the threshold becomes 3), the row's only 4 at its last column:
    found = threes + 1 candidates, between the slots read and CAP; the 4 takes the last slot (lockstep: column order)."""
    task, checked = load(name)
    x = torch.full((2, n), -4.0)
    x[:, :threes] = 3.0
    x[:, -1] = 4.0
    print(f"{name}: M=2, N={n}, x = -4 except 3 at columns 0..{threes - 1} and 4 at column {n - 1} "
          f"({threes + 1} candidates, the finish reads {cap_read} slots)")
    judge(task, checked, {"x": x}, {"M": 2, "N": n})
    ctrl = name.rsplit("_finish", 1)[0] + "_control"
    task, checked = load(ctrl)
    print(f"{ctrl}: same input")
    judge(task, checked, {"x": x}, {"M": 2, "N": n})


def top2():
    name = "row_top2_chunk_win_forgets_running_best"
    task, checked = load(name)
    sizes = {"M": 4, "N": 3000}
    inputs = V.make_inputs(task, sizes, 0)  # ordinary domain (normal, quarter ties)
    print(f"{name}: M=4, N=3000, the ordinary domain's draw, then row 0's maximum moved to column 2500")
    judge(task, checked, inputs, sizes)
    x = inputs["x"]
    x[0, 2500] = x[0].max() + 1.0
    judge(task, checked, inputs, sizes)


DEMOS = {"row_topk8_cap_128_finish_reads_64_slots": lambda: topk_band("row_topk8_cap_128_finish_reads_64_slots", 800, 70, 64),
         "row_topk64_cap_512_finish_reads_256_slots": lambda: topk_band("row_topk64_cap_512_finish_reads_256_slots", 3000, 300, 256),
         "row_top2_chunk_win_forgets_running_best": top2}

if __name__ == "__main__":
    for n in sys.argv[1:] or DEMOS:
        DEMOS[n]()
