"""Which structure a row-reduction golden should have: plain Triton kernels of the two shapes
most med goldens take, timed over rows per program, reduction block, warps and load eviction.

Issue 33: Inductor reduces 4096 x 4096 f32 rows with 8 rows per program, 256-wide chunks,
4 warps and ``evict_first`` loads (one pass), and ``evict_last`` then ``evict_first`` over a row
read twice; the goldens take one row per program, a 1024-wide chunk and no hint. The kernels here
are the two shapes written once with every such choice a parameter: ``sum`` (one pass, a row
sum) and ``center`` (two passes: the row's mean, then x - mean written out). Each configuration
is timed with the harness's timer (CUDA events, L2 flushed; :func:`kernelgen.gpu.timing.event_times`)
next to torch.compile of the same eager code, so the figures compare as the bench's do.

Run on a GPU machine, from the repository root::

    python tools/row_reduction_configs.py --out rows.json [--m 4096 --n 4096 --dtype float32]

It prints the fastest configurations of each shape and writes every one's median time.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from pathlib import Path
from typing import Any


def kernels() -> dict[str, Any]:
    import triton
    import triton.language as tl

    @triton.jit
    def row_sum(x, out, M, N, ROWS: tl.constexpr, BLOCK: tl.constexpr, EVICT: tl.constexpr):
        rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]
        cols = tl.arange(0, BLOCK)[None, :]
        acc = tl.zeros([ROWS, BLOCK], tl.float32)
        for start in tl.range(0, N, BLOCK):
            mask = (rows < M) & (start + cols < N)
            v = tl.load(x + rows * N + start + cols, mask=mask, other=0.0, eviction_policy=EVICT)
            acc += v.to(tl.float32)
        tl.store(out + rows, tl.sum(acc, 1)[:, None], mask=rows < M)

    @triton.jit
    def row_center(x, out, M, N, ROWS: tl.constexpr, BLOCK: tl.constexpr, FIRST: tl.constexpr,
                   SECOND: tl.constexpr):
        rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]
        cols = tl.arange(0, BLOCK)[None, :]
        acc = tl.zeros([ROWS, BLOCK], tl.float32)
        for start in tl.range(0, N, BLOCK):
            mask = (rows < M) & (start + cols < N)
            acc += tl.load(x + rows * N + start + cols, mask=mask, other=0.0, eviction_policy=FIRST).to(tl.float32)
        mean = tl.sum(acc, 1)[:, None] / N
        for start in tl.range(0, N, BLOCK):
            mask = (rows < M) & (start + cols < N)
            v = tl.load(x + rows * N + start + cols, mask=mask, other=0.0, eviction_policy=SECOND).to(tl.float32)
            tl.store(out + rows * N + start + cols, (v - mean).to(out.dtype.element_ty), mask=mask)

    return {"sum": row_sum, "center": row_center}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--m", type=int, default=4096)
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--repetitions", type=int, default=30)
    args = parser.parse_args(argv)
    import torch
    import triton

    from kernelgen.gpu.timing import event_times, flush_buffer

    m, n = args.m, args.n
    x = torch.randn(m, n, device="cuda", dtype=getattr(torch, args.dtype))
    flush = flush_buffer()
    ks = kernels()
    results: list[dict[str, Any]] = []

    def timed(label: dict[str, Any], fn: Any) -> None:
        try:
            fn()
            label["ms"] = statistics.median(event_times(fn, flush, args.repetitions, 3))
        except Exception as exc:  # noqa: BLE001 - a configuration that does not compile or fit is recorded
            label["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        results.append(label)

    eager = {"sum": lambda t: t.float().sum(1), "center": lambda t: t - t.float().mean(1, keepdim=True)}
    for shape, fn in eager.items():
        torch._dynamo.reset()
        compiled = torch.compile(fn, mode="max-autotune-no-cudagraphs")
        timed({"shape": shape, "config": "torch.compile"}, lambda: compiled(x))
        timed({"shape": shape, "config": "eager"}, lambda: fn(x))
    out_sum = torch.empty(m, device="cuda", dtype=torch.float32)
    out_center = torch.empty_like(x)
    evictions = ["", "evict_first", "evict_last"]
    for rows, block, warps in itertools.product([1, 4, 8, 16], [256, 1024, 2048, 4096], [4, 8, 16]):
        if rows * block > 16384 or rows * block < 32 * warps or block > triton.next_power_of_2(n):
            continue
        grid = (triton.cdiv(m, rows),)
        for evict in evictions[:2]:
            timed({"shape": "sum", "rows": rows, "block": block, "warps": warps, "evict": evict},
                  lambda: ks["sum"][grid](x, out_sum, m, n, ROWS=rows, BLOCK=block, EVICT=evict, num_warps=warps))
        for first, second in [("", ""), ("evict_last", "evict_first")]:
            timed({"shape": "center", "rows": rows, "block": block, "warps": warps, "evict": f"{first}/{second}"},
                  lambda: ks["center"][grid](x, out_center, m, n, ROWS=rows, BLOCK=block, FIRST=first, SECOND=second,
                                            num_warps=warps))
        args.out.write_text(json.dumps(results, indent=1))
    args.out.write_text(json.dumps(results, indent=1))
    for shape in ("sum", "center"):
        ranked = sorted((r for r in results if r["shape"] == shape and "ms" in r), key=lambda r: r["ms"])
        print(f"== {shape} {m}x{n} {args.dtype}")
        golden_like = [r for r in ranked if "config" in r or (r["rows"], r["block"], r["warps"]) == (1, 1024, 4)]
        for r in ranked[:12] + [r for r in golden_like if r not in ranked[:12]]:
            print("  ", {k: v for k, v in r.items() if k != "shape"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
