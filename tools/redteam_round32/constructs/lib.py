"""Round 32, constructs: builds each file from a task's golden (run from the repository root:
.venv/bin/python tools/redteam_round32/constructs/m1_scalar.py, ... m9_smem.py); files go to $OUT (default
tools/redteam_round32/open/; those in the catalogue were copied from there into tests/redteam)."""
import json, os, yaml, copy
from pathlib import Path
ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / "bench"
OUT = Path(os.environ.get("OUT", ROOT / "tools/redteam_round32/open"))
def golden(task):
    return copy.deepcopy(yaml.safe_load((BENCH / f"{task}.yaml").read_text())["golden"])
def write(fname, task, why, kernel, outcome="wrong_result"):
    (OUT / f"{fname}.json").write_text(json.dumps({"task": task, "outcome": outcome, "why": why, "kernel": kernel}, indent=1) + "\n")
    print("wrote", fname)
def op(_op, **kw):
    d = {"op": _op}; d.update(kw); return d
