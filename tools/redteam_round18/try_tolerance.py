"""Judge a task's golden and candidate files (CPU mode, as redteam_verdicts.py does) under a changed tolerance,
without editing the task's YAML: python tools/redteam_round18/try_tolerance.py TASK 'TOLERANCE_JSON' [FILE.json ...]
e.g. try_tolerance.py med/row_mean_bf16 '{"steps": true}' tools/redteam_round18/row_mean_bf16_sum_bf16_before_divide.json"""
import json, sys, time
import yaml
from pathlib import Path
from kernelgen.harness.pipeline import Settings, evaluate_answer
from kernelgen.task.spec import Tolerance, get_task

ROOT = Path(__file__).resolve().parents[2]


def main():
    task_id, tol = sys.argv[1], json.loads(sys.argv[2])
    task = get_task(task_id)
    task = task.model_copy(update={"tolerance": Tolerance(**tol)})
    gold = json.dumps(yaml.safe_load((ROOT / "bench" / f"{task_id}.yaml").read_text())["golden"])
    for name, answer in [("GOLDEN", gold)] + [(Path(f).stem, json.dumps(json.loads(Path(f).read_text())["kernel"]))
                                              for f in sys.argv[3:]]:
        t = time.time()
        r = evaluate_answer(task, answer, Settings(gpu=False))
        print(f"{task_id} {tol}: {name}: {r.outcome.value} ({time.time() - t:.1f}s)\n    {str(r.first_diagnostic())[:300]}",
              flush=True)


if __name__ == "__main__":
    main()
