"""For each candidate (make.py's names, or those given): whether it parses and checks, what
size_conditions finds in it, and whether any of today's CPU draws lies where its wrong path is
taken (make.py's WRONG, called with the draw's sizes, its scalar inputs as scalar_values draws them
and "num_sms"). Cheap: no kernel runs. Run from the repository root:
.venv/bin/python tools/redteam_round21/reach.py [NAME ...]; output in reach.txt."""
import json, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from make import CANDIDATES, WRONG, OUT  # noqa: E402
from kernelgen.harness import pipeline as P
from kernelgen.task.case import Case, Settings
from kernelgen.task.spec import get_task
from kernelgen.task import draws as D
from kernelgen.task.verify import scalar_values
from kernelgen.task.size_conditions import size_conditions
from kernelgen.task.size_reads import block_extent

for name in sys.argv[1:] or list(CANDIDATES):
    e = json.loads((OUT / f"{name}.json").read_text())
    task = get_task(e["task"])
    case = Case(task, json.dumps(e["kernel"]), Settings(gpu=False))
    try:
        P.stage_parse(case); P.stage_check(case)
    except Exception as exc:  # noqa: BLE001
        print(f"{name}: does not check: {exc!r}"[:400], flush=True); continue
    s = case.settings
    every = D.case_draws(task, case.checked, s.shapes, s.seed, False)
    cross = size_conditions(task, case.checked)

    def env(d):
        return {**d.sizes, **scalar_values(task, d.sizes, s.seed, d.extreme), "num_sms": d.num_sms or 3}

    hits = [(d.kind, env(d)) for d in every if name in WRONG and WRONG[name](env(d))]
    crossing = [d.sizes for d in every if d.kind == "crossing"]
    print(f"{name}: extent {block_extent(case.checked)}, {len(cross)} conditions on "
          f"{sorted({tuple(sorted(c.names)) for c in cross})}, {len(every)} draws; crossing draws {crossing}; "
          f"in the wrong region: {hits if name in WRONG else 'n/a'}", flush=True)
