"""Round 31's value files: each c_*.py here writes its kernels (a golden, changed) into tests/redteam.
Run from the repository root: ``.venv/bin/python tools/redteam_round31/values/gen.py``."""
import json, yaml, copy, sys
from pathlib import Path
ROOT = Path(__file__).resolve().parents[3]
OUT = ROOT / "tests" / "redteam"
BENCH = ROOT / "bench"

def golden(task):
    return copy.deepcopy(yaml.safe_load((BENCH / f"{task}.yaml").read_text())["golden"])

def write(fname, task, why, kernel, outcome="wrong_result"):
    (OUT / f"{fname}.json").write_text(json.dumps({"task": task, "outcome": outcome, "why": why, "kernel": kernel}, indent=1) + "\n")
    print("wrote", fname)

def op(_op, **kw):
    d = {"op": _op}; d.update(kw); return d

CANDS = {}
def cand(f):
    CANDS[f.__name__] = f; return f

if __name__ == "__main__":
    import importlib.util
    for p in sorted(Path(__file__).parent.glob("c_*.py")):
        spec = importlib.util.spec_from_file_location(p.stem, p); m = importlib.util.module_from_spec(spec)
        sys.modules[p.stem] = m; spec.loader.exec_module(m)
