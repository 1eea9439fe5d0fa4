"""Judge every candidate of this round through the whole baseline pipeline (static rules, the sandbox and its
run-time torch guard, CPU mode's Triton interpreter, the checks against the reference), as the ablation suite does:
.venv/bin/python tools/redteam_round19/full.py [NAME ...]   (output of the full run: full.txt)"""
import json, sys, time
from pathlib import Path

from kernelgen.baseline.ablation import evaluate_baseline
from kernelgen.task.case import Settings
from kernelgen.task.spec import get_task

HERE = Path(__file__).resolve().parent


def main() -> None:
    names = sys.argv[1:] or sorted(p.stem for p in HERE.glob("*.json"))
    for name in names:
        meta = json.loads((HERE / f"{name}.json").read_text())
        start = time.time()
        result = evaluate_baseline(get_task(meta["task"]), (HERE / f"{name}.py").read_text(), Settings(gpu=False))
        got = result.outcome.value
        cheat = meta["expected"] == "refused"
        flag = "  <== PASSES" if cheat and got == "ok" else ("  <== CONTROL FAILS" if not cheat and got != "ok" else "")
        print(f"{name:40s} {meta['task']:18s} {got} ({time.time() - start:.1f}s){flag}\n    "
              f"{str(result.first_diagnostic())[:240]}", flush=True)


if __name__ == "__main__":
    main()
