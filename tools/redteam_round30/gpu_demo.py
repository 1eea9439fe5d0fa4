"""Show on a GPU that a pipelined loop reads back its own stores stale (round 30, its README).

    python3 tools/redteam_round30/gpu_demo.py

A column sum accumulated through memory, as tests/redteam/col_sum_bf16_running_sums_through_memory_pipelined.json
writes it (each trip, a row, loads the running sums the trip before stored in out and stores them plus its row),
written in Triton directly, run with the loop's num_stages 1 (nothing pipelined), 2, 3 and 4, and with 3 and a
barrier after the store (Triton then leaves the loop's loads in place). Prints, per variant, the largest error
against torch's column sum and how many of the columns are off by more than 1e-3 (torch and triton only).
Not yet run on a GPU: the session that wrote it had no device time left (Triton's CPU interpreter does not
take this tl.range). What it would show was read off the compiled kernel instead (the round's README).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _col_sum_through_memory(x, out, M, N, STAGES: tl.constexpr, BARRIER: tl.constexpr, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = cols < N
    for m in tl.range(0, M, num_stages=STAGES):
        so_far = tl.load(out + cols, mask=inside)
        tl.store(out + cols, so_far + tl.load(x + m * N + cols, mask=inside).to(tl.float32), mask=inside)
        if BARRIER:
            tl.debug_barrier()


def main() -> None:
    torch.manual_seed(0)
    m, n, block = 4096, 4096, 256
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    expected = x.float().sum(dim=0)
    print(f"{torch.cuda.get_device_name()}, x {m} x {n} bf16, {block} columns a program")
    for stages, barrier in ((1, False), (2, False), (3, False), (4, False), (3, True)):
        out = torch.zeros(n, device="cuda", dtype=torch.float32)
        _col_sum_through_memory[(triton.cdiv(n, block),)](x, out, m, n, stages, barrier, block)
        error = (out - expected).abs()
        print(f"num_stages {stages}{' with a barrier' if barrier else ''}: max error {error.max().item():.4g}, "
              f"{int((error > 1e-3).sum())} of {n} columns off by more than 1e-3")


if __name__ == "__main__":
    main()
