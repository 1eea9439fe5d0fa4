"""GPU timing: CUDA events around each repetition, the L2 cache flushed before each.

One function, used wherever something is timed (the pipeline's kernels and PyTorch eager in
the executor, the baseline's answers in their sandbox, TritonBench's wrappers), so every time
in a report is measured the same way.
"""

from __future__ import annotations

from typing import Any, Callable

# Larger than any GPU's L2 (60 MB on an H200): writing it evicts the previous repetition's data.
L2_FLUSH_BYTES = 256 << 20


def flush_buffer() -> Any:
    import torch

    return torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")


def event_times(fn: Callable[[], Any], flush: Any, repetitions: int, warmup: int) -> list[float]:
    """Times (ms) of ``repetitions`` calls of ``fn`` after ``warmup`` untimed ones, each between
    CUDA events on the current stream with ``flush`` zeroed just before it."""
    import torch

    for _ in range(warmup):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repetitions)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repetitions)]
    for start, end in zip(starts, ends):
        flush.zero_()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return [start.elapsed_time(end) for start, end in zip(starts, ends)]
