"""Run round 31's TMA files on a GPU and count the wrong elements of each of 10 calls (its README).

    python3 tools/redteam_round31/gpu_check.py      # from the repository root, on a machine with a GPU

Each kernel runs through kernelgen's own sm_90 lowering (kernelgen.gpu.function.wrapper): the three wrong
ones read or overwrite what a TMA copy of the same launch wrote, unordered; the two controls do not. A
count of 0 for a wrong one means the race did not show in those calls, not that the kernel is right.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from kernelgen.gpu.function import wrapper

CATALOGUE = Path(__file__).resolve().parents[2] / "tests" / "redteam"


def counts(stem: str, want: torch.Tensor, *args) -> None:
    kernel = json.loads((CATALOGUE / f"{stem}.json").read_text())["kernel"]
    run = wrapper(json.dumps(kernel), kernel["name"])
    wrong = [int((~torch.isclose(run(*args), want, rtol=1e-4, atol=1e-2)).sum()) for _ in range(10)]
    print(f"{stem}: {wrong}", flush=True)


x = torch.randn(8192, 1024, device="cuda")
sums = torch.cumsum(x.double(), 1).float()
for stem in ("row_cumsum_long_prefix_read_back_from_tma_tile_store", "row_cumsum_long_prefix_tma_tile_load_of_plain_stores",
             "row_cumsum_long_carried_prefix_tma_tile_store_control"):
    counts(stem, sums, x)
y, mask = torch.randn(1 << 22, device="cuda"), torch.rand(1 << 22, device="cuda") < 0.5
for stem in ("masked_fill_tma_tile_copy_then_plain_store_fill", "masked_fill_tma_tile_store_of_where_control"):
    counts(stem, y.masked_fill(mask, 2.5), y, mask, 2.5)
