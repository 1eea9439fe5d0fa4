"""Re-judge some files at seeds 1..3 (Settings(seed=...)). Run from the repository root:
.venv/bin/python tools/redteam_round33/values/seeds.py NAME ... (after make.py; reads $OUT, default tools/redteam_round33/open/)"""
import json, os, sys
from pathlib import Path
from kernelgen.harness.pipeline import Settings, evaluate_answer
from kernelgen.task.spec import get_task


def main(names):
    for name in names:
        e = json.load(open(Path(os.environ.get("OUT", Path(__file__).resolve().parents[1] / "open")) / f"{name}.json"))
        for seed in (1, 2, 3):
            r = evaluate_answer(get_task(e["task"]), json.dumps(e["kernel"]), Settings(gpu=False, seed=seed))
            print(name, "seed", seed, r.outcome.value, str(r.first_diagnostic())[:200], flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
