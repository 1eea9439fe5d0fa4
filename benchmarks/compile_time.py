"""Compile time: kernelgen's AST -> cubin against ``triton.compile`` of the same kernel written
with ``@triton.jit``, for a vector add, a row softmax and a tiled f16 matmul.

Both run in this process with every cache off (kernelgen's ``cache=False``; Triton's
``always_compile`` knob, its cache directory a fresh temporary one), with the same backend
options (target, warps, stages, no FP contraction, no denormal flushing) and pointer
arguments marked 16-byte aligned on both sides. Timings alternate between the two compilers,
so load on the machine hits both alike; the median of the repetitions is reported.

Also measured: the first compile in a fresh process (imports included), the cost of going
through the compile worker process, and a cache hit.

    python benchmarks/compile_time.py [--repeat 15] [--target sm_90]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
TARGET_RATIO = 1.3
TARGET_CACHE_HIT_MS = 1.0


# The @triton.jit twins of examples/vector_add.json, softmax.json and matmul.json (same
# meta-parameters, same loads, masks and loops), defined when the benchmark runs.
TRITON_SOURCE = '''
import triton
import triton.language as tl


@triton.jit
def vector_add(x, y, out, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@triton.jit
def softmax(x, out, N, BLOCK: tl.constexpr):
    row_start = tl.program_id(0) * N
    x_row = x + row_start
    out_row = out + row_start
    lanes = tl.arange(0, BLOCK)
    row_max = tl.full([], float("-inf"), tl.float32)
    row_sum = tl.full([], 0.0, tl.float32)
    for chunk_start in range(0, N, BLOCK):
        cols = chunk_start + lanes
        in_row = cols < N
        chunk = tl.load(x_row + cols, mask=in_row, other=float("-inf"))
        new_max = tl.maximum(row_max, tl.max(chunk, 0))
        row_sum = row_sum * tl.exp(row_max - new_max) + tl.sum(tl.exp(chunk - new_max), 0)
        row_max = new_max
    for chunk_start in range(0, N, BLOCK):
        cols = chunk_start + lanes
        in_row = cols < N
        chunk = tl.load(x_row + cols, mask=in_row)
        tl.store(out_row + cols, tl.exp(chunk - row_max) / row_sum, mask=in_row)


@triton.jit
def matmul(a, b, c, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    row_in_bounds = rows[:, None] < M
    col_in_bounds = cols[None, :] < N
    acc = tl.full([BLOCK_M, BLOCK_N], 0.0, tl.float32)
    for k_start in range(0, K, BLOCK_K):
        ks = k_start + tl.arange(0, BLOCK_K)
        a_tile = tl.load(a + rows[:, None] * K + ks[None, :], mask=row_in_bounds & (ks[None, :] < K))
        b_tile = tl.load(b + ks[:, None] * N + cols[None, :], mask=(ks[:, None] < K) & col_in_bounds)
        acc = tl.dot(a_tile, b_tile, acc)
    tl.store(c + rows[:, None] * N + cols[None, :], acc, mask=row_in_bounds & col_in_bounds)
'''

SIGNATURES = {
    "vector_add": {"x": "*fp32", "y": "*fp32", "out": "*fp32", "N": "i32"},
    "softmax": {"x": "*fp32", "out": "*fp32", "N": "i32"},
    "matmul": {"a": "*fp16", "b": "*fp16", "c": "*fp32", "M": "i32", "N": "i32", "K": "i32"},
}


def triton_kernels(directory: Path) -> Any:
    """The module of @triton.jit kernels (Triton reads a jit function's source from its file)."""
    import importlib.util

    path = directory / "compile_time_kernels.py"
    path.write_text(textwrap.dedent(TRITON_SOURCE))
    spec = importlib.util.spec_from_file_location("compile_time_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def triton_compiler(module: Any, name: str, meta: dict[str, int], capability: int, num_warps: int,
                    num_stages: int) -> Callable[[], Any]:
    import triton
    from triton.backends.compiler import GPUTarget

    signature = dict(SIGNATURES[name], **{k: "constexpr" for k in meta})
    pointers = [i for i, t in enumerate(SIGNATURES[name].values()) if t.startswith("*")]
    attrs = {(i,): [["tt.divisibility", 16]] for i in pointers}
    source = triton.compiler.ASTSource(getattr(module, name), signature, dict(meta), attrs)
    target = GPUTarget("cuda", capability, 32)
    options = {"num_warps": num_warps, "num_stages": num_stages, "enable_fp_fusion": False,
               "enable_reflect_ftz": False}
    return lambda: triton.compile(source, target=target, options=options)


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def timed(function: Callable[[], Any]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


FIRST_COMPILE = {
    "kernelgen": """
import time
start = time.perf_counter()
from kernelgen.check.checker import check
from kernelgen.gpu.compile import compile_kernel
from kernelgen.lang.parse import parse_kernel
checked = check(parse_kernel(open({example!r}).read()))
compile_kernel(checked, {target!r}, cache=False, in_process=True)
print(time.perf_counter() - start)
""",
    "triton": """
import sys, time
start = time.perf_counter()
sys.path.insert(0, {directory!r})
import compile_time_kernels
sys.path.insert(0, {benchmarks!r})
from compile_time import triton_compiler
triton_compiler(compile_time_kernels, "vector_add", {{"BLOCK": 1024}}, {capability}, 4, 3)()
print(time.perf_counter() - start)
""",
}


def first_compile_seconds(which: str, directory: Path, target: str, capability: int) -> float:
    """A fresh interpreter's import + first compile of the vector add."""
    code = FIRST_COMPILE[which].format(example=str(EXAMPLES / "vector_add.json"), target=target,
                                       directory=str(directory), benchmarks=str(Path(__file__).parent),
                                       capability=capability)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return float(result.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="timed compiles per kernel and compiler")
    parser.add_argument("--target", default="sm_90")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="kernelgen-compile-time-"))
    os.environ["TRITON_CACHE_DIR"] = str(scratch / "triton-cache")
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    sys.path.insert(0, str(ROOT))

    from triton import knobs

    from kernelgen.check.checker import check
    from kernelgen.gpu.compile import TARGETS, compile_kernel, compiler_process
    from kernelgen.lang.parse import parse_kernel

    knobs.compilation.always_compile = True
    capability = TARGETS[args.target]
    module = triton_kernels(scratch)

    print(f"compile time, AST -> cubin for {args.target}, median of {args.repeat} (ms)")
    print(f"{'kernel':<12}{'kernelgen':>12}{'triton':>12}{'ratio':>8}")
    ratios = []
    for name in SIGNATURES:
        checked = check(parse_kernel((EXAMPLES / f"{name}.json").read_text()))
        warps = checked.kernel.num_warps

        def ours() -> Any:
            return compile_kernel(checked, args.target, warps, 3, cache=False, in_process=True)

        theirs = triton_compiler(module, name, checked.meta, capability, warps, 3)
        ours()
        theirs()
        samples: dict[str, list[float]] = {"ours": [], "theirs": []}
        for _ in range(args.repeat):
            samples["ours"].append(timed(ours))
            samples["theirs"].append(timed(theirs))
        ratio = median_ms(samples["ours"]) / median_ms(samples["theirs"])
        ratios.append(ratio)
        print(f"{name:<12}{median_ms(samples['ours']):>12.1f}{median_ms(samples['theirs']):>12.1f}{ratio:>8.2f}")
    geomean = statistics.geometric_mean(ratios)
    verdict = "meets" if geomean <= TARGET_RATIO else "misses"
    print(f"geometric-mean ratio {geomean:.2f} ({verdict} the {TARGET_RATIO}x target)")

    checked = check(parse_kernel((EXAMPLES / "vector_add.json").read_text()))
    compile_kernel(checked, args.target, cache=False)
    through_worker = [timed(lambda: compile_kernel(checked, args.target, cache=False)) for _ in range(args.repeat)]
    in_process = [timed(lambda: compile_kernel(checked, args.target, cache=False, in_process=True))
                  for _ in range(args.repeat)]
    print(f"vector_add through the worker process: {median_ms(through_worker):.1f} ms "
          f"(in process {median_ms(in_process):.1f} ms)")
    compiler_process().close()

    cache = scratch / "kernelgen-cache"
    compile_kernel(checked, args.target, cache_dir=cache, in_process=True)
    hits = [timed(lambda: compile_kernel(checked, args.target, cache_dir=cache)) for _ in range(200)]
    verdict = "meets" if median_ms(hits) < TARGET_CACHE_HIT_MS else "misses"
    print(f"cache hit: {median_ms(hits):.3f} ms median, {max(hits) * 1000:.3f} ms max "
          f"({verdict} the {TARGET_CACHE_HIT_MS} ms target)")

    first_ours = first_compile_seconds("kernelgen", scratch, args.target, capability)
    first_theirs = first_compile_seconds("triton", scratch, args.target, capability)
    print(f"first compile in a fresh process (imports included): kernelgen {first_ours:.2f} s, "
          f"triton {first_theirs:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
