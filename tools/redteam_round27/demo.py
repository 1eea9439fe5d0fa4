"""Each false pass of round 27 shown wrong on an input the task's prompt allows.
Run from the repository root: .venv/bin/python tools/redteam_round27/demo.py > tools/redteam_round27/demos.txt

* inputs built by hand (make_inputs at fixed sizes, then an allowed edit), run by the reference
  interpreter (kernelgen.interp.execute.execute_call) and compared with the task's reference by the
  harness's own kernelgen.task.verify.compare_outputs;
* order-dependent kernels: run under a program order a GPU may pick. Where the interpreter can express it
  (an Order: chunks of programs, each to completion), it runs under it (execute.LOCKSTEP swapped); the
  ticket-before-add interleaving (one program stopped between two of its statements) is not an Order, so
  its result is computed statement by statement in torch from the interpreter's own lockstep state.
"""
import json, sys
from pathlib import Path
import torch
from kernelgen.harness import pipeline as P
from kernelgen.interp import execute as X
from kernelgen.interp.orders import Order, LOCKSTEP
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


def judge(name, task, checked, inputs, sizes, order=LOCKSTEP):
    X.LOCKSTEP = order
    try:
        run = X.execute_call(checked, inputs, orders=False)
    except Exception as exc:  # noqa: BLE001 (a fault of the wrong kernel is its demo)
        print(f"  [{order.kind}] WRONG (faults): {type(exc).__name__}: {str(exc)[:240]}", flush=True)
        return None, None
    finally:
        X.LOCKSTEP = LOCKSTEP
    expected = V.run_reference(task, inputs)
    problems = V.compare_outputs(task, run.outputs, expected, inputs, sizes, run.written)
    verdict = "WRONG: " + "; ".join(str(p)[:260] for p in problems[:2]) if problems else "matches the reference"
    print(f"  [{order.kind}] {verdict}", flush=True)
    return run, expected


def col_sum_ticket_before_add():
    name = "col_sum_bf16_last_chunk_ticket_before_own_add"
    print(f"{name}: M=256, N=128 (grid 1 x 2: row chunks 0 and 1), x = randn bf16")
    task, checked = load(name)
    sizes = {"M": 256, "N": 128}
    inputs = V.make_inputs(task, sizes, 0)
    run, expected = judge(name, task, checked, inputs, sizes)
    # The GPU interleaving: program (0,0) executes its ticket atomic (ticket 0) and is delayed; program (0,1)
    # runs to completion: ticket 1 == num_programs(1) - 1, so it is 'last'; it adds its own column sums
    # (rows 128..255) to acc, reads acc back (atomic_add 0, bound 'total') and stores out; then (0,0) adds
    # rows 0..127 to acc, which nobody reads again.
    x = inputs["x"].float()
    acc = torch.zeros(128)
    acc += x[128:256].sum(0)          # (0,1)'s relaxed add
    out = acc.clone()                 # (0,1)'s read of acc and store
    acc += x[0:128].sum(0)            # (0,0)'s add, too late
    want = expected["out"]
    bad = ~torch.isclose(out, want.float(), rtol=1e-3, atol=1e-2)
    print(f"  [ticket 0 taken by (0,0), then (0,1) to completion, then (0,0)]: {int(bad.sum())} of 128 columns wrong,"
          f" e.g. out[0] = {out[0]:.4f}, reference {float(want[0]):.4f} (tolerance rtol 1e-3-ish); the result of "
          f"that schedule misses row chunk 0 entirely", flush=True)


def bincount_i16():
    name = "bincount_bytes_block_counts_i16_block_65536"
    print(f"{name}: N=65536, x all 7 (allowed: every value in [0, 255])")
    task, checked = load(name)
    sizes = {"N": 65536}
    inputs = {"x": torch.full((65536,), 7, dtype=torch.int32)}
    judge(name, task, checked, inputs, sizes)
    print(f"{name}: N=70000, x = 3 for the first 40000, random after")
    inputs = {"x": torch.cat([torch.full((40000,), 3, dtype=torch.int32), torch.randint(0, 256, (30000,), dtype=torch.int32)])}
    judge(name, task, checked, inputs, {"N": 70000})


def col_sum_ticket_on_entry():
    name = "col_sum_bf16_last_chunk_ticket_on_entry"
    print(f"{name}: M=256, N=128, x = randn bf16")
    task, checked = load(name)
    sizes = {"M": 256, "N": 128}
    inputs = V.make_inputs(task, sizes, 0)
    _, expected = judge(name, task, checked, inputs, sizes)
    # GPU: (0,0) draws ticket 0 and starts its row loop; (0,1) draws ticket 1 (last), sums rows 128..255,
    # adds them, reads acc (only its own share) and stores out; (0,0) adds later.
    x = inputs["x"].float()
    out = x[128:256].sum(0)
    want = expected["out"].float()
    bad = ~torch.isclose(out, want, rtol=1e-4, atol=1e-3)
    print(f"  [(0,0) draws ticket 0 and is still in its loop while (0,1) draws ticket 1 and finishes]: "
          f"{int(bad.sum())} of 128 columns wrong, e.g. out[0] = {out[0]:.4f}, reference {float(want[0]):.4f}", flush=True)


def bincount_u8():
    name = "bincount_bytes_block_256_counts_u8"
    task, checked = load(name)
    for n in (256, 1000):
        print(f"{name}: N={n}, x all 200 (allowed)")
        judge(name, task, checked, {"x": torch.full((n,), 200, dtype=torch.int32)}, {"N": n})


def col_sum_offset():
    name = "col_sum_bf16_first_chunk_offset_add_then_remove"
    print(f"{name}: M=256, N=128, x = randn bf16; lockstep, then reversed (program (0,1) alone to completion "
          "first, then (0,0): an order a GPU may run)")
    task, checked = load(name)
    sizes = {"M": 256, "N": 128}
    inputs = V.make_inputs(task, sizes, 0)
    judge(name, task, checked, inputs, sizes)
    judge(name, task, checked, inputs, sizes, Order("reversed"))
    judge(name, task, checked, inputs, sizes, Order("shuffled"))


def moe_i16():
    name = "moe_top2_routing_expert_totals_i16"
    print(f"{name}: T=32768, E=2 (every token picks both experts: counts = [32768, 32768])")
    task, checked = load(name)
    sizes = {"T": 32768, "E": 2}
    inputs = V.make_inputs(task, sizes, 0)
    judge(name, task, checked, inputs, sizes)
    print(f"{name}: T=40000, E=8, logits with expert 5 always largest (+10): expert 5 gets 40000 assignments")
    sizes = {"T": 40000, "E": 8}
    inputs = V.make_inputs(task, sizes, 0)
    inputs["logits"][:, 5] += 10.0
    judge(name, task, checked, inputs, sizes)


DEMOS = {"col_sum_bf16_last_chunk_ticket_before_own_add": col_sum_ticket_before_add,
         "col_sum_bf16_last_chunk_ticket_on_entry": col_sum_ticket_on_entry,
         "bincount_bytes_block_counts_i16_block_65536": bincount_i16,
         "bincount_bytes_block_256_counts_u8": bincount_u8,
         "col_sum_bf16_first_chunk_offset_add_then_remove": col_sum_offset,
         "moe_top2_routing_expert_totals_i16": moe_i16}

if __name__ == "__main__":
    for n in sys.argv[1:] or DEMOS:
        DEMOS[n]()
