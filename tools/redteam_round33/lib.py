"""Round 33's file builders (constructs/make.py, values/make.py): a task's golden, and a catalogue file
written to $OUT (default tools/redteam_round33/open/)."""
import copy, json, os
from pathlib import Path
import yaml

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
OUT = Path(os.environ.get("OUT", Path(__file__).resolve().parent / "open"))


def golden(task):
    return copy.deepcopy(yaml.safe_load((BENCH / f"{task}.yaml").read_text())["golden"])


def write(fname, task, why, kernel, outcome="wrong_result"):
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{fname}.json").write_text(json.dumps({"task": task, "outcome": outcome, "why": why, "kernel": kernel},
                                                  indent=1) + "\n")
    print("wrote", fname)


def op(_op, **kw):
    d = {"op": _op}
    d.update(kw)
    return d
