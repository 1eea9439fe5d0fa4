"""Judge one file at another seed (Settings.seed, the harness's kg_seed): python seed_check.py FILE.json SEED ..."""
import json, sys
from pathlib import Path
from kernelgen.harness.pipeline import Settings, evaluate_answer
from kernelgen.task.spec import get_task

if __name__ == "__main__":
    e = json.loads(Path(sys.argv[1]).read_text())
    for seed in map(int, sys.argv[2:]):
        r = evaluate_answer(get_task(e["task"]), json.dumps(e["kernel"]), Settings(gpu=False, seed=seed))
        print(f"{Path(sys.argv[1]).stem} seed {seed}: {r.outcome.value}  {str(r.first_diagnostic())[:160]}", flush=True)
