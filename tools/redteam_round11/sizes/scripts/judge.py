import json, sys, time
from kernelgen.harness.pipeline import Settings, evaluate_answer
from kernelgen.task.spec import get_task
def main():
  for p in sys.argv[1:]:
      e = json.load(open(p))
      t = time.time()
      r = evaluate_answer(get_task(e["task"]), json.dumps(e["kernel"]), Settings(gpu=False))
      print(p, "expected", e["outcome"], "got", r.outcome.value, f"{time.time()-t:.1f}s", "FALSE PASS" if r.outcome.value == "ok" and e["outcome"] != "ok" else "")
      print("  first:", str(r.first_diagnostic())[:300])
      print("  sizes:", r.sizes_checked)
      print("  unjudged:", r.extra.get("unjudged_draws"))

if __name__ == "__main__":
    main()
