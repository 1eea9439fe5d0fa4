"""Each wrong candidate run at make.py's demo point (sizes allowed by the task; the scalar inputs
fixed there, within scalar_ranges; extreme inputs where it says): it must raise WrongResult (for a
task with variants, in at least one call, each call run as the harness does: verify_call_cpu).
Also prints the scalar settings scalar_conditions picks for every candidate (its conditions found),
with the harness's cap (SCALAR_CROSSINGS) and the checked kernel the harness passes.
Run from the repository root: .venv/bin/python tools/redteam_round24/demo.py [NAME ...]; output in
demos.txt."""
import json, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from make import CANDIDATES, OUT  # noqa: E402
from kernelgen.harness import pipeline as P
from kernelgen.task import verify as V
from kernelgen.task import variants as VA
from kernelgen.task.case import Case, Settings
from kernelgen.task.draws import CPU_JOINT_BUDGET, SCALAR_CROSSINGS, _together
from kernelgen.task.scalar_conditions import scalar_settings
from kernelgen.task.spec import get_task

drawn_scalars = V.scalar_values
for name in sys.argv[1:] or list(CANDIDATES):
    e = json.loads((OUT / f"{name}.json").read_text())
    task = get_task(e["task"])
    case = Case(task, json.dumps(e["kernel"]), Settings(gpu=False))
    P.stage_parse(case); P.stage_check(case)
    calls = task.variant_tasks() if task.variants else [task]
    for call in calls:
        joint = _together(call, CPU_JOINT_BUDGET) if call.sizes else {}
        settings = scalar_settings(call, case.checked, joint, SCALAR_CROSSINGS, 0) if joint is not None else []
        print(f"{name} [{call.id}]: settings at {joint}: {settings}", flush=True)
    demo = CANDIDATES[name][4]
    if demo is None:
        continue
    sizes, fixed, extreme = demo
    assert all(task.sizes[k].min <= v <= task.sizes[k].max for k, v in sizes.items()), sizes
    assert all(task.scalar_ranges[k].holds(v) for k, v in fixed.items()), fixed
    V.scalar_values = lambda *a, **k: {**drawn_scalars(*a, **k), **fixed}
    for call in calls:
        t = time.time()
        try:
            if task.variants or task.in_place:
                VA.verify_call_cpu(call, case.kernel, sizes, 0, extreme=extreme, timeout_s=300)
            else:
                P.verify_cpu(call, case.checked, sizes, 0, extreme=extreme, timeout_s=300, sampled=[])
            got = "ok (NOT wrong here)"
        except Exception as exc:  # noqa: BLE001
            got = f"{type(exc).__name__}: {str(exc)[:200]}"
        print(f"    demo [{call.id}] at {sizes}, {fixed}, extreme={extreme}: {got} ({time.time() - t:.1f}s)", flush=True)
    V.scalar_values = drawn_scalars
