"""Run round 29's answers on a real GPU at realistic sizes, outside the harness (torch and
triton only), and count how often each one is wrong.

    python3 tools/redteam_round29/gpu_demo.py [REPEATS] [NAME ...]

Each answer runs in its own subprocess (a spin that never ends is killed at its time limit and
reported as a hang). Per answer: REPEATS calls (default 10) on the same inputs, checked against
a PyTorch reference; prints the number of wrong calls, the largest error seen and the seconds.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIMIT_S = 60
# RT29_CPU=1 (with TRITON_INTERPRET=1): a dry run of this script in Triton's interpreter at small sizes
CPU = os.environ.get("RT29_CPU") == "1"


def S(n: int) -> int:
    """A size: as given on a GPU, at most 96 (at least 8) in a CPU dry run."""
    return max(8, min(n, 96)) if CPU else n


def load_answer(name: str) -> types.ModuleType:
    text = (HERE / f"{name}.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    path = Path("/tmp") / f"rt29_{name}.py"  # triton.jit needs the source in a file
    path.write_text(code)
    module = types.ModuleType(f"rt29_{name}")
    module.__file__ = str(path)
    exec(compile(code, str(path), "exec"), module.__dict__)
    return module


def cases(task: str):
    """(arguments, reference outputs, compare(got, want) -> error or None)."""
    import torch
    import torch.nn.functional as F

    dev = "cpu" if CPU else "cuda"
    g = torch.Generator(device=dev).manual_seed(29)

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g, device=dev, dtype=torch.float32).to(dtype)

    def close(rtol, atol):
        def compare(got, want):
            got, want = got.float(), want.float()
            bad = ~torch.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
            return None if not bad.any() else f"{int(bad.sum())} bad, max err {float((got - want).abs().nan_to_num(1e30).max()):.3g}"
        return compare

    def exact(got, want):
        bad = got != want
        return None if not bad.any() else f"{int(bad.sum())} of {bad.numel()} differ"

    if task == "bincount_bytes":
        x = torch.randint(0, 256, (S(16 * 2**20),), generator=g, device=dev, dtype=torch.int32)
        return (x,), torch.bincount(x, minlength=256), exact
    if task == "index_add_rows":
        V, D, T = S(32768), S(128), S(65536)
        x, src = randn(V, D), randn(T, D)
        index = torch.randint(0, S(2048), (T,), generator=g, device=dev, dtype=torch.int32)
        return (x, index, src), x.index_add(0, index.long(), src), close(1e-4, 1e-3)
    if task == "splitk_gemm_f32out":
        a, b = randn(16, S(8192), dtype=torch.float16), randn(S(8192), S(4096), dtype=torch.float16)
        return (a, b), a.float() @ b.float(), close(1e-3, 2e-2)
    if task == "matvec":
        x, v = randn(S(4096), S(4096)), randn(S(4096))
        return (x, v), (x.double() @ v.double()).float(), close(1e-4, 1e-2)
    if task == "vecmat":
        v, x = randn(S(8192)), randn(S(8192), S(4096))
        return (v, x), (v.double() @ x.double()).float(), close(1e-4, 1e-2)
    if task == "row_cumsum_long":
        x = randn(S(256), S(32768))
        return (x,), torch.cumsum(x.double(), 1).float(), close(1e-4, 5e-2)
    if task == "row_cumprod_long":
        x = 1.0 + 1e-3 * randn(S(64), S(32768))
        return (x,), torch.cumprod(x.double(), 1).float(), close(1e-3, 0)
    if task == "row_l2_norm":
        x = randn(S(4096), S(8192))
        return (x,), torch.linalg.vector_norm(x.double(), dim=1).float(), close(1e-4, 1e-3)
    if task == "row_sum":
        x = randn(S(4096), S(8192))
        return (x,), x.double().sum(1).float(), close(1e-4, 1e-2)
    if task == "logsumexp_rows":
        x = 4 * randn(S(4096), S(8192))
        return (x,), torch.logsumexp(x.double(), 1).float(), close(1e-4, 1e-3)
    if task == "splitk_gemv_f16":
        x, w = randn(4, S(8192), dtype=torch.float16), randn(S(4096), S(8192), dtype=torch.float16)
        return (x, w), (x.double() @ w.double().T).half(), close(2e-3, 2e-2)
    if task == "row_topk8":
        x = randn(S(1024), S(32768))
        v, i = torch.topk(x, 8, dim=1)
        return (x,), (v, i), lambda got, want: exact(got[0], want[0]) or exact(got[1], want[1])
    if task == "cosine_similarity":
        x, y = randn(S(4096), S(8192)), randn(S(4096), S(8192))
        return (x, y), F.cosine_similarity(x.double(), y.double(), dim=1).float(), close(1e-4, 1e-5)
    if task == "col_argmin":
        x = torch.randint(-20, 21, (S(8192), S(1024)), generator=g, device=dev).float()  # many ties
        return (x,), torch.argmin(x, dim=0), exact
    if task == "col_max":
        x = randn(S(4096), S(1000) - 3)
        return (x,), x.amax(0), exact
    if task == "embedding_bag_sum":
        T, B, V, D = S(262144), S(16384) // 4, S(100000), S(128)
        ids = torch.randint(0, V, (T,), generator=g, device=dev, dtype=torch.int32)
        offsets = torch.sort(torch.randint(0, T, (B,), generator=g, device=dev, dtype=torch.int32)).values
        offsets[0] = 0
        weight = randn(V, D)
        ref = F.embedding_bag(ids.long(), weight, offsets.long(), mode="sum")
        return (ids, offsets, weight), ref, close(1e-4, 1e-3)
    if task == "softmax_temperature":
        x = randn(S(4096), S(8192))
        return (x, 0.7), torch.softmax(x / 0.7, 1), close(1e-4, 1e-6)
    if task == "count_positive":
        x = randn(S(8192), S(8192))
        return (x,), (x > 0).sum(1).int(), exact
    if task == "index_fill_inplace":
        x = randn(S(4096), S(4096))
        index = torch.randint(0, S(64), (S(64),), generator=g, device=dev)  # repeats
        return (0, x, index, 3.5), x.clone().index_fill_(0, index, 3.5), exact
    if task == "matmul_f32_ieee":
        a, b = randn(S(1000) - 5, S(1000) - 7), randn(S(1000) - 7, S(1000) - 3)
        return (a, b), (a.double() @ b.double()).float(), close(1e-4, 1e-3)
    raise KeyError(task)


def run_one(name: str, task: str, repeats: int) -> str:
    import torch

    if CPU:  # Triton 3.6's interpreter needs kernelgen's loop-bound fix under NumPy >= 2.4
        sys.path.insert(0, str(HERE.parents[1]))
        from kernelgen.baseline.interpreter_fixes import patch_triton_interpreter_index
        patch_triton_interpreter_index()
    module = load_answer(name)
    launcher = getattr(module, task)
    args, want, compare = cases(task)
    if task == "index_fill_inplace":  # in place: a fresh copy each call
        original = args[1].clone()
    wrong, errors = 0, []
    for _ in range(repeats):
        if task == "index_fill_inplace":
            args[1].copy_(original)
        got = launcher(*args)
        if not CPU:
            torch.cuda.synchronize()
        error = compare(got, want)
        if error:
            wrong += 1
            errors.append(error)
    return f"{wrong}/{repeats} wrong" + (f"; first: {errors[0]}" if errors else "")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--one"]:
        print(run_one(argv[1], argv[2], int(argv[3])), flush=True)
        return 0
    repeats = int(argv[0]) if argv and argv[0].isdigit() else 10
    names = [a for a in argv if not a.isdigit()]
    import torch
    import triton
    print(f"# {'CPU dry run' if CPU else torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}", flush=True)
    for entry in json.loads((HERE / "manifest.json").read_text()):
        if names and entry["name"] not in names:
            continue
        start = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, __file__, "--one", entry["name"], entry["task"], str(repeats)],
                                  capture_output=True, text=True, timeout=LIMIT_S)
            lines = done.stdout.strip().splitlines()
            verdict = lines[-1] if done.returncode == 0 and lines else \
                "error: " + " | ".join((done.stderr.strip().splitlines() or ["?"])[-2:])[:300]
        except subprocess.TimeoutExpired:
            verdict = f"hang: killed after {LIMIT_S} s"
        print(f"{entry['name']}\t{entry['expected']}\t{verdict}\t{time.perf_counter() - start:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
