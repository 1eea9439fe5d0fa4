"""Scan: catalogue controls (and goldens) whose task gets nonfinite draws and has a float input of lower rank
than another (a vector beside a matrix, which nonfinite.py fills with finite specials only), run with NaN and
+-inf placed densely in those lower-rank inputs too. A control or golden that then differs from PyTorch is
wrong on an input the prompt says is checked ("IEEE special values are checked: ... among the values of ...").
Run from the repository root: .venv/bin/python tools/redteam_round33/values/scan_vectors.py > scan_vectors.txt"""
import json, math, sys
from pathlib import Path
import torch, yaml
from kernelgen.harness import pipeline as P
from kernelgen.interp import execute as X
from kernelgen.task import verify as V
from kernelgen.task.case import Case, Settings
from kernelgen.task.nonfinite import NORMAL_VALUES, _values_for
from kernelgen.task.spec import get_task

ROOT = Path(__file__).resolve().parents[3]


def sizes_for(task, n):
    return {k: max(r.min, min(r.max, n)) for k, r in task.sizes.items()}


def judge(task_id, kernel, seeds=4):
    task = get_task(task_id)
    names = task.nonfinite_inputs()
    if not names:
        return None
    case = Case(task, json.dumps(kernel), Settings(gpu=False))
    P.stage_parse(case); P.stage_check(case)
    if case.checked is None:
        return "did not check"
    bad = []
    for n in (3, 5):
        sizes = sizes_for(task, n)
        base = V.make_inputs(task, sizes, 0)
        tensors = {k: v for k, v in base.items() if k in names and isinstance(v, torch.Tensor) and v.numel()}
        if not tensors:
            continue
        rank = max(v.dim() for v in tensors.values())
        low = [k for k, v in tensors.items() if v.dim() < rank]
        if not low:
            return None
        for seed in range(seeds):
            g = torch.Generator().manual_seed(seed)
            inputs = dict(base)
            for k in low:  # dense specials, infinities and NaN included, in the lower-rank inputs only
                values = _values_for(task, k, sizes)
                v = inputs[k].clone()
                pick = torch.randint(0, 2 * len(values), v.shape, generator=g)
                for i, s in enumerate(values):
                    v = torch.where(pick == i, torch.tensor(s, dtype=v.dtype), v)
                inputs[k] = v
            for k in tensors:  # and the finite specials sparsely in the others, as nonfinite.py does
                if k in low:
                    continue
                v = inputs[k].clone()
                pick = torch.randint(0, 8, v.shape, generator=g)
                for i, s in enumerate((0.0, -0.0, 1.0, -1.0)):
                    v = torch.where(pick == i, torch.tensor(s, dtype=v.dtype), v)
                inputs[k] = v
            try:
                expected = V.run_reference(task, inputs)
            except Exception:  # noqa: BLE001
                continue
            try:
                run = X.execute_call(case.checked, inputs, orders=False)
            except Exception as exc:  # noqa: BLE001
                bad.append(f"{sizes} seed {seed}: faults {type(exc).__name__}: {str(exc)[:120]}")
                continue
            problems = V.compare_outputs(task, run.outputs, expected, inputs, sizes, run.written)
            if problems:
                bad.append(f"{sizes} seed {seed}: {str(problems[0])[:220]}")
    return bad


if __name__ == "__main__":
    files = sorted((ROOT / "tests/redteam").glob("*_control.json"))
    for p in files:
        e = json.loads(p.read_text())
        try:
            bad = judge(e["task"], e["kernel"]) if "kernel" in e else None
        except Exception as exc:  # noqa: BLE001
            bad = [f"scan error {type(exc).__name__}: {str(exc)[:150]}"]
        if bad is None:
            continue
        print(f"{'WRONG' if bad else 'ok   '} control {p.stem} ({e['task']})" + ("".join(f"\n      {b}" for b in bad[:2])), flush=True)
    for y in sorted((ROOT / "bench").glob("*/*.yaml")):
        tid = f"{y.parent.name}/{y.stem}"
        try:
            golden = yaml.safe_load(y.read_text())["golden"]
            bad = judge(tid, golden)
        except Exception as exc:  # noqa: BLE001
            bad = [f"scan error {type(exc).__name__}: {str(exc)[:150]}"]
        if bad is None:
            continue
        print(f"{'WRONG' if bad else 'ok   '} golden {tid}" + ("".join(f"\n      {b}" for b in bad[:2])), flush=True)
