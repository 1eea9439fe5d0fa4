"""Judge red-team kernel files one at a time, as tests/test_redteam.py does (CPU mode), and print
each file's expected outcome beside today's verdict (FALSE PASS where a wrong kernel gets ok).

Run from the repository root: ``python tools/redteam_verdicts.py FILE.json ...`` (default: every
file in tests/redteam/)."""
import json, sys, time
from pathlib import Path
from kernelgen.harness.pipeline import Settings, evaluate_answer
from kernelgen.task.spec import get_task

NEEDS_COMPILE = {"compile_error", "lowering_error"}
here = Path(__file__).resolve().parents[1] / "tests" / "redteam"
files = [Path(a) for a in sys.argv[1:]] or sorted(here.glob("*.json"))
for p in files:
    e = json.loads(p.read_text())
    answer = e["answer"] if "answer" in e else json.dumps(e["kernel"])
    s = Settings(gpu=False, compile=e["outcome"] in NEEDS_COMPILE or e.get("compile", False))
    t = time.time()
    try:
        r = evaluate_answer(get_task(e["task"]), answer, s)
        got, first = r.outcome.value, r.first_diagnostic()
    except Exception as exc:
        got, first = "CRASH", repr(exc)[:300]
    flag = "" if got == e["outcome"] else ("  <== FALSE PASS" if got == "ok" else "  <== DIFFERS")
    print(f"{p.stem}: expected {e['outcome']}, got {got} ({time.time()-t:.1f}s){flag}\n    {str(first)[:300]}", flush=True)
