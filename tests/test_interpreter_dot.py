"""``tl.dot`` of f32 blocks multiplies in TF32 on NVIDIA GPUs unless asked otherwise, and Triton's
interpreter, which takes the same default, multiplied exactly: an answer that left the default
passed the baseline's CPU mode on a task asking for exact f32 products.
:func:`kernelgen.baseline.interpreter_fixes.patch_triton_interpreter_dot` rounds the operands
to TF32 there, as kernelgen's interpreter does."""

from __future__ import annotations

import numpy as np
import pytest
import triton.language as tl
from triton._C.libtriton import ir
from triton.runtime import interpreter

from kernelgen.baseline.interpreter_fixes import patch_triton_interpreter_dot

# 1 + 2**-12 is not a TF32 value (10 mantissa bits): it rounds to 1
ONE_AND_A_BIT = np.float32(1 + 2.0 ** -12)


def _dot(create_dot, precision) -> float:
    a = interpreter.TensorHandle(np.full((16, 16), ONE_AND_A_BIT, dtype=np.float32), tl.float32)
    b = interpreter.TensorHandle(np.eye(16, dtype=np.float32), tl.float32)
    acc = interpreter.TensorHandle(np.zeros((16, 16), dtype=np.float32), tl.float32)
    return float(create_dot(interpreter.interpreter_builder, a, b, acc, precision, 0).data[0, 0])


def test_the_unpatched_interpreter_multiplies_a_tf32_dot_exactly() -> None:
    """Why the patch exists (if Triton rounds, this fails and the patch can go)."""
    builder = interpreter.InterpreterBuilder
    original = getattr(builder.create_dot, "original", builder.create_dot)
    assert _dot(original, ir.INPUT_PRECISION.TF32) == ONE_AND_A_BIT


def test_the_patched_interpreter_rounds_only_a_tf32_dots_operands() -> None:
    patch_triton_interpreter_dot()
    patch_triton_interpreter_dot()  # idempotent
    create_dot = interpreter.InterpreterBuilder.create_dot
    assert _dot(create_dot, ir.INPUT_PRECISION.TF32) == 1.0
    assert _dot(create_dot, ir.INPUT_PRECISION.IEEE) == ONE_AND_A_BIT
    assert _dot(create_dot, ir.INPUT_PRECISION.TF32x3) == ONE_AND_A_BIT


MATMUL = '''```python
import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a, b, c, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(a + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        y = tl.load(b + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(x, yPRECISION)
    tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul_f32_ieee(a, b):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=torch.float32, device=a.device)
    matmul_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](a, b, c, M, N, K, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
    return c
```'''


@pytest.mark.parametrize("precision, outcome", [("", "wrong_result"), (', input_precision="ieee"', "ok")],
                         ids=["default_tf32", "ieee"])
def test_the_baseline_judges_a_default_f32_dot_as_the_gpu_computes_it(precision: str, outcome: str) -> None:
    """Through the harness, in the sandbox: matmul_f32_ieee asks for exact f32 products; the
    answer that leaves tl.dot's default multiplies in TF32 on the GPU, and now in CPU mode too."""
    from kernelgen.baseline.ablation import evaluate_baseline
    from kernelgen.harness.pipeline import Settings
    from kernelgen.task.spec import get_task

    result = evaluate_baseline(get_task("matmul_f32_ieee"), MATMUL.replace("PRECISION", precision),
                               Settings(gpu=False))
    assert result.outcome.value == outcome, result.diagnostics
