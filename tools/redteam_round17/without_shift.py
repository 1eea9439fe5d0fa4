"""Judge files as redteam_verdicts.py does, but with the shift draws turned off (shift_draws returns
no draws), to see which wrong kernels only the shift draws catch. Run from the repository root:
.venv/bin/python tools/redteam_round17/without_shift.py tools/redteam_round17/*.json"""
import json, sys
from pathlib import Path
import kernelgen.task.draws as draws
from kernelgen.harness.pipeline import Settings, evaluate_answer
from kernelgen.task.spec import get_task

draws.shift_draws = lambda task, seed: []  # at import, so that a spawned worker has it too


def main(paths):
    for p in map(Path, paths):
        e = json.loads(p.read_text())
        r = evaluate_answer(get_task(e["task"]), json.dumps(e["kernel"]), Settings(gpu=False))
        got = r.outcome.value
        note = "  <== passes without shift draws" if got == "ok" and e["outcome"] != "ok" else ""
        print(f"{p.stem}: expected {e['outcome']}, without shift draws {got}{note}\n    "
              f"{str(r.first_diagnostic())[:200]}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
