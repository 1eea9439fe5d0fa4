import math

import torch
import triton
import triton.language as tl


@triton.jit
def bias_relu_kernel(x_ptr, b_ptr, y_ptr, M, N, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * stride_m + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=cols < N, other=0.0)
    v = x + b[None, :]
    tl.store(y_ptr + offs, tl.where(v < 0.0, 0.0, v), mask=mask)


def bias_relu(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    b = b.contiguous()
    M, N = x.shape
    y = torch.empty_like(x)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 128))
    bias_relu_kernel[grid](x, b, y, M, N, x.stride(0), BLOCK_M=32, BLOCK_N=128)
    return y
