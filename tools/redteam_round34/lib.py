"""Round 34's file builders (constructs/make.py, values/make.py): a task's golden, and a catalogue file
written to $OUT (default tools/redteam_round34/open/)."""
import copy, json, os
from pathlib import Path
import yaml

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
OUT = Path(os.environ.get("OUT", Path(__file__).resolve().parent / "open"))


def golden(task):
    return copy.deepcopy(yaml.safe_load((BENCH / f"{task}.yaml").read_text())["golden"])


def write(fname, task, why, kernel, outcome="wrong_result", compile=False, **extra):
    """``compile``: the file is judged with the compile stage (constructs/: the bugs are in the compiled
    layouts, which kernelgen/gpu/layouts.py reads off the TTGIR when the compile stage runs)."""
    d = {"task": task, "outcome": outcome, "why": why}
    if compile:
        d["compile"] = True
    d.update(extra)
    d["kernel"] = kernel
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{fname}.json").write_text(json.dumps(d, indent=1) + "\n")
    print("wrote", fname)


def op(_op, **kw):
    d = {"op": _op}
    d.update(kw)
    return d


def find(body, pred):
    """The first statement (depth first, through for/if bodies) for which pred holds."""
    for s in body:
        if pred(s):
            return s
        for key in ("body", "then", "else"):
            if isinstance(s.get(key), list):
                hit = find(s[key], pred)
                if hit is not None:
                    return hit
    return None


def let(body, name):
    s = find(body, lambda s: s.get("op") == "let" and s.get("name") == name)
    assert s is not None, name
    return s
