import json, sys
from kernelgen.harness.pipeline import Settings, evaluate_answer
from kernelgen.task.spec import get_task
def main():
    e = json.load(open(sys.argv[1]))
    for s in sys.argv[2:]:
        r = evaluate_answer(get_task(e["task"]), json.dumps(e["kernel"]), Settings(gpu=False, seed=int(s)))
        print(sys.argv[1].split('/')[-1], "seed", s, r.outcome.value, str(r.first_diagnostic())[:150])
if __name__ == "__main__":
    main()
