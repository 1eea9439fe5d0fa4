"""GPU timing: CUDA events around each repetition, the L2 cache flushed before each.

One function, used wherever something is timed (the pipeline's kernels and PyTorch eager in
the executor, the baseline's answers in their sandbox, TritonBench's wrappers), so every time
in a report is measured the same way.

Workers that share a GPU (``pytest -n 4`` on fewer GPUs) take turns: a timed window, and a
verification's launches, hold an exclusive lock on a file named for the GPU
(:func:`gpu_turn`, the path in ``KERNELGEN_GPU_LOCK``). Compiling, tuning's compiles and
torch.compile's own compile still overlap; only GPU work is serialized, so one worker's
launches never land inside another's timed window. Without the variable (one process, or a
GPU of its own) nothing is locked.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Iterator

# Larger than any GPU's L2 (60 MB on an H200): writing it evicts the previous repetition's data.
L2_FLUSH_BYTES = 256 << 20


LOCK_VARIABLE = "KERNELGEN_GPU_LOCK"
_turns_held = 0  # nesting depth in this process: the lock is taken once, at the outermost turn


@contextlib.contextmanager
def gpu_turn() -> Iterator[None]:
    """This process's exclusive turn on its GPU among the processes sharing the lock file named
    by ``KERNELGEN_GPU_LOCK`` (none named: no lock). Re-entrant within a process; the lock
    goes with the process if it dies (``flock``)."""
    global _turns_held
    path = os.environ.get(LOCK_VARIABLE)
    if not path or _turns_held:
        _turns_held += 1
        try:
            yield
        finally:
            _turns_held -= 1
        return
    import fcntl

    descriptor = os.open(path, os.O_RDONLY)  # made by the worker (devices.gpu_lock_path): read-only here
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        _turns_held += 1
        try:
            yield
        finally:
            _turns_held -= 1
    finally:
        os.close(descriptor)  # closing releases the lock


def flush_buffer() -> Any:
    import torch

    return torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")


def event_times(fn: Callable[[], Any], flush: Any, repetitions: int, warmup: int) -> list[float]:
    """Times (ms) of ``repetitions`` calls of ``fn`` after ``warmup`` untimed ones, each between
    CUDA events on the current stream with ``flush`` zeroed just before it, in this process's
    turn on the GPU (:func:`gpu_turn`)."""
    import torch

    with gpu_turn():
        torch.cuda.synchronize()  # work queued before the turn is not timed
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
