"""GPU timing: CUDA events around each repetition, the L2 cache flushed before each.

One function, used wherever something is timed (the pipeline's kernels and PyTorch eager in
the executor, the baseline's answers in their sandbox, TritonBench's wrappers), so every time
in a report is measured the same way.

Workers that share a GPU (``pytest -n 4`` on fewer GPUs) take turns: a timed window, and a
verification's launches, hold an exclusive lock on a file named for the GPU
(:func:`gpu_turn`, the path in ``KERNELGEN_GPU_LOCK``). Compiling, tuning's compiles and
torch.compile's own compile still overlap; only GPU work is serialized, so one worker's timed
launches never share the GPU with another's. torch.compile's autotuning benchmarks take turns
too (:func:`inductor_takes_turns`); its first call also runs the compiled code once, outside a
turn. Without the variable (one process, or a GPU of its own) nothing is locked.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import warnings
from typing import Any, Callable, Iterator

# Larger than any GPU's L2 (60 MB on an H200): writing it evicts the previous repetition's data.
L2_FLUSH_BYTES = 256 << 20


LOCK_VARIABLE = "KERNELGEN_GPU_LOCK"
# The longest a process waits for its turn. Past it, it goes on without the lock (and says so
# once) rather than spend a caller's time limit waiting: a slow kernel timed by another worker
# must not turn this worker's correct kernel into a timeout.
LOCK_WAIT_S = 20.0
_LOCK_POLL_S = 0.002
_turns_held = 0  # nesting depth in this process: the lock is taken once, at the outermost turn
_held: int | None = None  # the descriptor holding the lock, while a turn holds it
# Threads of one process take turns too (Inductor may benchmark from a worker thread): the
# turn's state above belongs to the thread holding this re-entrant lock.
_threads = threading.RLock()
_waited_s = 0.0  # the seconds this process has spent waiting for turns (see waited_seconds)
_warned: set[str] = set()


def _warn_once(what: str) -> None:
    if what not in _warned:
        _warned.add(what)
        warnings.warn(f"kernelgen: {what}", RuntimeWarning, stacklevel=3)


def _forget_turn_in_child() -> None:
    """A forked child does not own its parent's turn: it drops the shared descriptor (closing
    it there leaves the parent's lock in place) and starts with no turn."""
    global _turns_held, _held, _threads
    if _held is not None:
        os.close(_held)
    _turns_held, _held, _threads = 0, None, threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_turn_in_child)


def _take_lock(path: str) -> int | None:
    """The locked descriptor of ``path``, or None where the turn cannot be had (the file is gone
    or unreadable, or another process held it past :data:`LOCK_WAIT_S`)."""
    import fcntl

    try:
        descriptor = os.open(path, os.O_RDONLY)  # made by the worker (devices.gpu_lock_path)
    except OSError as error:
        _warn_once(f"the GPU lock {path} cannot be opened ({error}): timing without turns")
        return None
    global _waited_s
    start = time.monotonic()
    try:
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return descriptor
            except BlockingIOError:
                if time.monotonic() > start + LOCK_WAIT_S:
                    os.close(descriptor)
                    _warn_once(f"another process held the GPU lock {path} for over {LOCK_WAIT_S:.0f} s: "
                               "this turn runs without it, and its times may be contended")
                    return None
                time.sleep(_LOCK_POLL_S)
    finally:
        _waited_s += time.monotonic() - start  # taken or given up: the time waited


@contextlib.contextmanager
def gpu_turn() -> Iterator[None]:
    """This process's exclusive turn on its GPU among the processes sharing the lock file named
    by ``KERNELGEN_GPU_LOCK`` (none named: no lock). Re-entrant within a thread, and the
    process's threads take turns; the lock goes with the process if it dies (``flock``); a
    wait for another process is bounded (:data:`LOCK_WAIT_S`)."""
    global _turns_held, _held
    with _threads:
        path = os.environ.get(LOCK_VARIABLE)
        descriptor = _take_lock(path) if path and not _turns_held else None
        if descriptor is not None:
            _held = descriptor
        _turns_held += 1
        try:
            yield
        finally:
            _turns_held -= 1
            if descriptor is not None:
                _held = None
                os.close(descriptor)  # closing releases the lock


def waited_seconds() -> float:
    """The seconds this process has spent waiting for its turns so far: a duration measured
    around work that took turns (torch.compile's first call) subtracts what it waited."""
    return _waited_s


def inductor_takes_turns() -> str:
    """Make torch.compile's GPU benchmarks take this process's turn (:func:`gpu_turn`).

    ``max-autotune`` times candidate kernels on the GPU while it compiles, outside any timed window
    of this process; on a GPU shared by workers those runs would land in another worker's timed
    window. Only the benchmarks hold the turn, not the compile, so compiling still overlaps. torch
    2.13 has a hook for this (``set_gpu_benchmark_lock_context``). Older versions get the turn
    around the benchmarker's ``benchmark_gpu``, which Inductor's autotuners call. Returns how the
    turn was installed: ``hook``, ``wrapped``, or ``none`` where this torch offers neither."""
    try:
        from torch._inductor.runtime import benchmarking
    except ImportError:  # torch before 2.5 has no benchmarking module: its benchmarks run unlocked
        return "none"

    install = getattr(benchmarking, "set_gpu_benchmark_lock_context", None)
    if install is not None:
        install(gpu_turn)
        return "hook"
    instance = getattr(benchmarking, "benchmarker", None)
    if instance is None or not hasattr(instance, "benchmark_gpu"):
        return "none"
    if not getattr(instance, "_kernelgen_turns", False):
        unlocked = instance.benchmark_gpu

        def benchmark_gpu(*args: Any, **kwargs: Any) -> Any:
            with gpu_turn():
                return unlocked(*args, **kwargs)

        instance.benchmark_gpu = benchmark_gpu
        instance._kernelgen_turns = True
    return "wrapped"


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
