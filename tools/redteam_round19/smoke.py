"""Optional: run each candidate once on tiny CPU inputs under Triton's interpreter (TRITON_INTERPRET=1) and compare
with the task's reference, to show that the accepted cheats really compute the result. No sandbox and no run-time
torch guard: this only shows what the host code computes. Applies the harness's interpreter fixes. Skips the
candidate that needs CUDA (jiterator); the grid hook only works on a GPU (the interpreter hands the grid converted
pointers, not tensors).

Run from the repository root: TRITON_INTERPRET=1 .venv/bin/python tools/redteam_round19/smoke.py [NAME ...]
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))


def inputs(task: str) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    if task == "easy/bias_relu":
        x, b = torch.randn(5, 33, generator=g), torch.randn(33, generator=g)
        return (x, b), torch.relu(x + b)
    if task == "med/row_sum":
        x = torch.randn(4, 37, generator=g)
        return (x,), x.sum(dim=1)
    a, b = torch.randn(16, 32, generator=g).half(), torch.randn(32, 16, generator=g).half()
    return (a, b), (a.float() @ b.float()).half()


def main(names: list[str]) -> None:
    from kernelgen.baseline import interpreter_fixes  # the harness's fixes (range over a scalar argument, ...)

    for name in dir(interpreter_fixes):
        if name.startswith("patch_triton_interpreter_"):
            getattr(interpreter_fixes, name)()
    for meta_path in sorted(HERE.glob("*.json")):
        name = meta_path.stem
        if names and name not in names:
            continue
        task = json.loads(meta_path.read_text())["task"]
        if "jiterator" in name:
            print(f"{name:40s} skipped (needs CUDA)")
            continue
        spec = importlib.util.spec_from_file_location(f"answer_{name}", HERE / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(mod)
            args, want = inputs(task)
            got = getattr(mod, task.split("/")[1])(*args)
            ok = got.shape == want.shape and got.dtype == want.dtype and torch.allclose(got.float(), want.float(),
                                                                                       rtol=1e-2, atol=1e-2)
            print(f"{name:40s} {'correct' if ok else 'WRONG'}")
        except Exception as exc:  # noqa: BLE001 - one report line per candidate
            print(f"{name:40s} ERROR {type(exc).__name__}: {str(exc).splitlines()[0][:100] if str(exc) else ''}")


if __name__ == "__main__":
    main(sys.argv[1:])
