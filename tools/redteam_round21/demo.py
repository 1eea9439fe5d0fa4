"""Each wrong candidate verified at make.py's DEMO sizes (allowed by the task, past its hidden
condition; SCALARS: the scalar inputs fixed there, SMS: num_sms there): it must raise WrongResult.
Run from the repository root: .venv/bin/python tools/redteam_round21/demo.py [NAME ...]; output in
demos.txt."""
import json, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from make import CANDIDATES, DEMO, OUT, SCALARS, SMS  # noqa: E402
from kernelgen.harness import pipeline as P
from kernelgen.task import verify as V
from kernelgen.task.case import Case, Settings
from kernelgen.task.spec import get_task

drawn_scalars = V.scalar_values
for name in sys.argv[1:] or [n for n in CANDIDATES if n in DEMO]:
    e = json.loads((OUT / f"{name}.json").read_text())
    task = get_task(e["task"])
    sizes = DEMO[name]
    assert all(task.sizes[k].min <= v <= task.sizes[k].max for k, v in sizes.items()), sizes
    fixed = SCALARS.get(name, {})
    assert all(task.scalar_ranges[k].holds(v) for k, v in fixed.items()), fixed
    # the scalar inputs as drawn, those the candidate names fixed at its values (allowed: asserted above)
    V.scalar_values = lambda *a, **k: {**drawn_scalars(*a, **k), **fixed}
    case = Case(task, json.dumps(e["kernel"]), Settings(gpu=False))
    P.stage_parse(case); P.stage_check(case)
    t = time.time()
    try:
        P.verify_cpu(task, case.checked, sizes, 0, extreme=False, timeout_s=300, num_sms=SMS.get(name), sampled=[])
        got = "ok (NOT wrong here)"
    except Exception as exc:  # noqa: BLE001
        got = f"{type(exc).__name__}: {str(exc)[:240]}"
    extra = "".join(f", {k} = {v}" for k, v in fixed.items()) + (f", num_sms = {SMS[name]}" if name in SMS else "")
    print(f"{name} at {sizes}{extra}: {got} ({time.time() - t:.1f}s)", flush=True)
