"""GPU timing: CUDA events around each repetition, the L2 cache flushed before each.

One function, used wherever something is timed (the pipeline's kernels and PyTorch eager in
the executor, the baseline's answers in their sandbox, TritonBench's wrappers), so every time
in a report is measured the same way. Its first two calls run outside any turn (the first may
compile or never end; the second says how long a call takes), so no turn is held while a
kernel compiles or runs away, and none for longer than :data:`TURN_LIMIT_S`.

Workers that share a GPU (``pytest -n 4`` on fewer GPUs) take turns: a timed window, and a
verification's launches, hold an exclusive lock on a file named for the GPU
(:func:`gpu_turn`, the path in ``KERNELGEN_GPU_LOCK``). Compiling, tuning's compiles and
torch.compile's own compile still overlap; only GPU work is serialized, so one worker's timed
launches never share the GPU with another's. torch.compile's autotuning benchmarks are timed
by it too, each wholly in a turn (:func:`inductor_timed_by_harness`); its first call also runs
the compiled code once, outside a turn. Without the variable (one process, or a GPU of its own) nothing is locked. A process
waiting for its turn tells its executor's parent (:func:`listen_for_waits`), whose clock for
the job stops meanwhile: waiting is not part of a job's limit. Nor is the harness's own work
inside a job (:func:`harness_work`: drawing the inputs, the reference, the comparison), which a
loaded machine can slow past a limit meant for the kernel.

Jobs also hold a shared slot of the machine (``KERNELGEN_ALONE_LOCK``): a job that timed out
while others ran is retried once alone (:func:`retried_alone`), every other worker's next job
waiting at the gate, before its timeout is a verdict.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import statistics
import sys
import threading
import time
import warnings
from typing import Any, Callable, Iterator

# Larger than any GPU's L2 (50 MB on an H200): writing it evicts the previous repetition's data.
L2_FLUSH_BYTES = 256 << 20
# timed_windows queues its repetitions behind a spin of the GPU: its length in cycles per second
# of wait (at or above the SM clock of current GPUs, 1.98 GHz on an H200, so the wait lasts at
# least as long as asked), its longest wait, the host time a call is assumed to take at least,
# and how many times the repetitions are taken at most when the wait proved too short.
_SPIN_HZ = 2.0e9
_MAX_WAIT_S = 5.0
_HOST_FLOOR_S = 50e-6
QUEUE_ATTEMPTS = 3
# A candidate (a tuning candidate, one of torch.compile's autotuner's) is timed with fewer
# repetitions than a reported time: the choice needs a ranking.
AUTOTUNE_WARMUP = 3
AUTOTUNE_REPETITIONS = 25


LOCK_VARIABLE = "KERNELGEN_GPU_LOCK"
# The longest a process waits for its turn; past it, it goes on without the lock (and says so
# once). A wait does not count against the job's limit (the executor's child reports it:
# listen_for_waits), and every turn is held by a job that has a limit of its own, so a wait
# this long means a turn that never ends.
LOCK_WAIT_S = 1800.0
# The longest one turn may last for timing: a function too slow to time within it times fewer
# repetitions, and one whose single call takes most of it is a timeout (outside the turn).
TURN_LIMIT_S = 60.0
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
    told = False
    try:
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return descriptor
            except BlockingIOError:
                if not told and _listener is not None:
                    _listener(True)  # the executor's parent stops the job's clock
                    told = True
                if time.monotonic() > start + LOCK_WAIT_S:
                    os.close(descriptor)
                    _warn_once(f"another process held the GPU lock {path} for over {LOCK_WAIT_S:.0f} s: "
                               "this turn runs without it, and its times may be contended")
                    return None
                time.sleep(_LOCK_POLL_S)
    finally:
        _waited_s += time.monotonic() - start  # taken or given up: the time waited
        if told:
            _listener(False)


# Told when this process starts waiting for a turn (True) and when the wait is over (False):
# the executor's child reports both to its parent, whose clock for the job stops in between.
_listener: Callable[[bool], None] | None = None


@contextlib.contextmanager
def harness_work() -> Iterator[None]:
    """The harness's own work inside a job (drawing inputs, running the reference, comparing),
    told to the executor's parent as a wait is, so that its clock for the job stops meanwhile:
    a job's limit is the kernel's. A draw of 200 million elements takes about 13 s of CPU to
    make and check, and several times that when 14 workers make theirs at once; that is not the
    kernel's time, and a correct kernel must not get ``timeout`` for it."""
    if _listener is not None:
        _listener(True)
    try:
        yield
    finally:
        if _listener is not None:
            _listener(False)


def listen_for_waits(listener: Callable[[bool], None] | None) -> None:
    """Have ``listener`` told when a turn must be waited for (True) and when the wait ends (False)."""
    global _listener
    _listener = listener


def fitted_repetitions(call_s: float, repetitions: int, warmup: int) -> tuple[int, int]:
    """The repetitions and warm-up calls of a function whose call takes ``call_s`` seconds that
    fit one turn (:data:`TURN_LIMIT_S`): as asked where they fit, else fewer (at least 3 timed,
    1 warm-up); a call too slow for even that is a :class:`~kernelgen.errors.KernelTimeout`."""
    from kernelgen.errors import Diagnostic, KernelTimeout

    if call_s * (repetitions + warmup) <= TURN_LIMIT_S:
        return repetitions, warmup
    if call_s * 4 > TURN_LIMIT_S:
        raise KernelTimeout(Diagnostic("", "timeout", f"one call takes {call_s:.1f} s: too slow to time 3 repetitions "
                                                      f"within a GPU turn's limit of {TURN_LIMIT_S:g} s"))
    return max(min(repetitions, 3), min(repetitions, int(TURN_LIMIT_S / call_s) - 1)), 1


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
                release_cached_memory()
                _held = None
                os.close(descriptor)  # closing releases the lock


def release_cached_memory() -> None:
    """Give the memory that PyTorch's and CuPy's caching allocators keep after a turn back to
    the GPU, so that the next process's turn has all of it. Workers share one GPU: on the H200
    (2026-12-02, 14 workers) one worker's cache kept 83 GiB after its largest draw, and five
    others' cases ended in CUDA out of memory. Only a process that imported them has caches."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()


def turn_taken_elsewhere() -> bool:
    """Whether another process holds the GPU turn named by ``KERNELGEN_GPU_LOCK`` now (False
    without one): what makes a reported wait for the turn true."""
    path = os.environ.get(LOCK_VARIABLE)
    try:
        descriptor = os.open(path, os.O_RDONLY) if path else None
    except OSError:
        return False
    return _held_elsewhere(descriptor)


def _held_elsewhere(descriptor: int | None) -> bool:
    """Whether another open file holds a lock on ``descriptor``'s file (False for None); closes it."""
    import fcntl

    if descriptor is None:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)


def waited_seconds() -> float:
    """The seconds this process has spent waiting for its turns so far: a duration measured
    around work that took turns (torch.compile's first call) subtracts what it waited."""
    return _waited_s


# Added to torch.compile's cache key tag (autotuning's .best_config files, the FX graph cache):
# configurations kept by another benchmarker (Inductor's own, in an earlier run or another tool
# on the machine) are not reused, nor are this harness's choices outside it.
CACHE_KEY_TAG = "kernelgen-timed-v1"


def inductor_timed_by_harness() -> str:
    """Make torch.compile's autotuner time its candidates with this harness's timer
    (:func:`timed_windows`: queued behind a spin so the host's launch time never reaches a
    window), each candidate wholly in this process's turn, ranking them by the median of
    :data:`AUTOTUNE_REPETITIONS`.

    ``max-autotune`` times candidate kernels while it compiles (block sizes, warps, coordinate
    descent). Its own benchmarker queues each repetition from the host behind an L2 flush of
    20 us: for a kernel of tens of microseconds the host falls behind, and its windows measure
    Python's launch time. On the H200 (2026-12-03, ``tools/timing_noise.py``) it timed
    bce_logits_rows's five reduction configurations at 0.17-0.33 ms on an idle host, where they
    take 0.04-0.33 ms (the fastest 0.04); under host load it kept one that takes 124 us for the
    39 us one, and a 12-worker bench run had kept a 79 us row_var for the 22 us one. Its choices
    were a draw from host noise, and torch.compile's time with them. Timed as the harness times
    everything, its autotuner keeps what is fastest on the GPU: torch.compile at its best, the
    same in every run (its cache keys carry :data:`CACHE_KEY_TAG`, so choices another
    benchmarker kept are not read back).

    Where torch offers its hook (``set_gpu_benchmark_lock_context``, torch 2.13), its other GPU
    benchmarks take the turn too. Returns ``timed``, or ``none`` where this torch has no
    benchmarker to replace (its benchmarks then run untimed by the harness, and unlocked)."""
    try:
        from torch._inductor.runtime import benchmarking
    except ImportError:  # torch before 2.5 has no benchmarking module
        return "none"

    install = getattr(benchmarking, "set_gpu_benchmark_lock_context", None)
    if install is not None:
        install(gpu_turn)
    instance = getattr(benchmarking, "benchmarker", None)
    if instance is None or not hasattr(instance, "benchmark_gpu"):
        return "none"
    if not getattr(instance, "_kernelgen_timed", False):
        instance.benchmark_gpu = _autotune_benchmark
        instance._kernelgen_timed = True
    _tag_compile_caches()
    return "timed"


def _tag_compile_caches() -> None:
    """Add :data:`CACHE_KEY_TAG` to torch.compile's cache key tag (once; a user's own tag kept)."""
    try:
        from torch.compiler import config
    except ImportError:  # torch before 2.6: no tag, its caches are keyed without it
        return
    tag = getattr(config, "cache_key_tag", None)
    if isinstance(tag, str) and CACHE_KEY_TAG not in tag.split("+"):
        config.cache_key_tag = "+".join(filter(None, (tag, CACHE_KEY_TAG)))


def _autotune_benchmark(fn: Callable[[], Any], *_: Any, return_mode: str | None = None, **__: Any) -> Any:
    """Inductor's ``benchmark_gpu``, by :func:`timed_windows` in one turn (the candidate's first
    two calls too: Inductor compiled it before it asks): the median (ms), whatever statistic it
    names, or every repetition for ``return_mode="all"``; a call too slow to time within a turn
    is ``inf`` (``[inf]`` for all), which Inductor's autotuners pass over. Its other arguments
    (the repetitions and warm-up it asks for, in counts or milliseconds) are this harness's."""
    from kernelgen.errors import KernelTimeout

    with gpu_turn():
        try:
            times = timed_windows(fn, flush_buffer(), AUTOTUNE_REPETITIONS, AUTOTUNE_WARMUP).times
        except KernelTimeout:
            times = [float("inf")]
    return list(times) if return_mode == "all" else statistics.median(times)


def flush_buffer() -> Any:
    import torch

    return torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")


@dataclasses.dataclass(frozen=True)
class Windows:
    """What :func:`timed_windows` measured: each repetition's time (ms), how many times the
    repetitions were queued (1 to :data:`QUEUE_ATTEMPTS`), and how many windows of the attempt
    kept the GPU had entered before the host had queued their call. Those may hold host time:
    a time with late windows is an upper bound on the GPU's, which a report can flag."""

    times: list[float]
    attempts: int
    late: int


def has_own_memory(tensor: Any) -> bool:
    """Whether every element of ``tensor`` is its own memory (an expanded tensor's, a zero
    stride, are not: no call writes it in place, and it can be neither set back nor refilled)."""
    return not any(stride == 0 and size > 1 for stride, size in zip(tensor.stride(), tensor.shape))


def restoring(*arguments: Any) -> Callable[[], None]:
    """A ``prepare`` (:func:`timed_windows`) that sets every tensor among ``arguments``
    (tensors, or lists, tuples and dicts of them) back to its values now: an in-place call
    writes its arguments, where the next timed call would find the previous call's results
    (and values drifting over a hundred repetitions). A copy of each is kept meanwhile; an
    expanded tensor (a zero stride), which no call writes in place, is left as it is."""
    import torch

    def tensors(value: Any) -> Iterator[Any]:
        if isinstance(value, torch.Tensor):
            if has_own_memory(value):
                yield value
        elif isinstance(value, (list, tuple)):
            for item in value:
                yield from tensors(item)
        elif isinstance(value, dict):
            for item in value.values():
                yield from tensors(item)

    with torch.no_grad():
        kept = [(tensor, tensor.clone()) for tensor in tensors(list(arguments))]

    def restore() -> None:
        with torch.no_grad():
            for tensor, original in kept:
                tensor.copy_(original)

    return restore


def event_times(fn: Callable[[], Any], flush: Any, repetitions: int, warmup: int,
                prepare: Callable[[], Any] | None = None, series: Callable[[int], Any] | None = None) -> list[float]:
    """The times (ms) of :func:`timed_windows`."""
    return timed_windows(fn, flush, repetitions, warmup, prepare, series).times


def timed_windows(fn: Callable[[], Any], flush: Any, repetitions: int, warmup: int,
                  prepare: Callable[[], Any] | None = None, series: Callable[[int], Any] | None = None) -> Windows:
    """The times (ms) of ``repetitions`` calls of ``fn`` after ``warmup`` untimed ones, each between
    CUDA events on the current stream with ``flush`` zeroed just before it, in this process's
    turn on the GPU (:func:`gpu_turn`), and how they were queued (:class:`Windows`).
    ``prepare``, where given, runs before every call (before the flush: outside the window), to
    reset what one call must not find of another (a kernel's outputs and scratch poisoned again:
    otherwise a kernel may find its previous call's results there and skip the work).
    ``series``, where given, is told the number of repetitions before each series of them is
    queued (the last series is the one whose times are returned), so that a caller can check
    some of them (:mod:`kernelgen.baseline.timed`).

    The GPU time of each call, not the host's: the repetitions are queued behind a spin kernel
    (``torch.cuda._sleep``) that lasts longer than the host takes to queue them all, so a
    window never waits for the host to launch its work. Without it, a short kernel's window
    measured the host too wherever the host fell behind (a busy CPU: other workers compiling;
    a program launching several kernels from Python): 0.07-0.21 ms for a 0.07 ms kernel in a
    ``pytest -n 2`` run. A repetition whose window the GPU reached before the host had queued
    its call is the evidence that the wait was too short: the repetitions are then taken again
    behind a longer one (:data:`QUEUE_ATTEMPTS` in all), unless the first was late already (a
    call that synchronizes with the GPU)."""
    import torch

    # Outside the turn: the first call (which may compile, or never end) and a second one that
    # says how long a call takes, so that no turn is held while a kernel compiles or runs away,
    # and none for longer than TURN_LIMIT_S (a slow function times fewer repetitions).
    def call() -> None:
        if prepare is not None:
            prepare()
        fn()

    call()
    torch.cuda.synchronize()
    started = time.perf_counter()
    call()
    torch.cuda.synchronize()
    call_s = time.perf_counter() - started
    repetitions, warmup = fitted_repetitions(call_s, repetitions, warmup)
    with gpu_turn():
        torch.cuda.synchronize()  # work queued before the turn is not timed
        host_s = []
        for _ in range(warmup):
            started = time.perf_counter()
            call()
            host_s.append(time.perf_counter() - started)
        torch.cuda.synchronize()
        # How long the host takes to queue the repetitions, going by the warmup's median call
        # (its first may compile or autotune), at least _HOST_FLOOR_S a call (the flush and the
        # events are queued too), with a margin.
        typical_s = sorted(host_s)[len(host_s) // 2] if host_s else 0.0
        wait_s = 2 * repetitions * (typical_s + _HOST_FLOOR_S)
        spin = getattr(torch.cuda, "_sleep", None)  # private (torch's own tests use it): without it, no head start
        for attempt in range(1, QUEUE_ATTEMPTS + 1):
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(repetitions)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(repetitions)]
            if spin is not None:
                spin(int(min(wait_s, _MAX_WAIT_S) * _SPIN_HZ))
            late = []
            if series is not None:
                series(repetitions)
            for start, end in zip(starts, ends):
                if prepare is not None:
                    prepare()
                flush.zero_()
                start.record()
                fn()
                end.record()
                late.append(start.query())  # the GPU is already in this window: it may wait for the host
            torch.cuda.synchronize()
            # Late from the first call on: the call waits for the GPU itself (a host sync), so no
            # wait queues it ahead, and its windows rightly hold that wait.
            if not any(late) or late[0] or spin is None:
                break
            wait_s *= 4
    return Windows([start.elapsed_time(end) for start, end in zip(starts, ends)], attempt, sum(late))



# -- a timeout under load is retried once alone ---------------------------------------------

ALONE_VARIABLE = "KERNELGEN_ALONE_LOCK"
_slots = threading.local()  # per thread: how deep in job_slot (or alone) it is


def _lock_file(suffix: str = "") -> int | None:
    path = os.environ.get(ALONE_VARIABLE)
    if not path:
        return None
    try:
        return os.open(path + suffix, os.O_RDONLY | os.O_CREAT, 0o644)
    except OSError:
        return None


@contextlib.contextmanager
def job_slot() -> Iterator[None]:
    """One job of this process among the workers sharing ``KERNELGEN_ALONE_LOCK`` (a shared lock
    on it): taken after any job that runs alone (:func:`alone`) has finished, and its waiting
    time is before the job's clock starts. Nothing without the variable; re-entrant."""
    import fcntl

    depth = getattr(_slots, "depth", 0)
    if depth:
        _slots.depth = depth + 1
        try:
            yield
        finally:
            _slots.depth = depth
        return
    gate, slots = _lock_file(".gate"), _lock_file()
    try:
        if gate is not None and slots is not None:
            fcntl.flock(gate, fcntl.LOCK_EX)  # no job starts while one runs alone
            fcntl.flock(slots, fcntl.LOCK_SH)
            fcntl.flock(gate, fcntl.LOCK_UN)
        _slots.depth = 1
        yield
    finally:
        _slots.depth = 0
        for descriptor in (gate, slots):
            if descriptor is not None:
                os.close(descriptor)


@contextlib.contextmanager
def alone() -> Iterator[None]:
    """Run with no other job of the workers sharing ``KERNELGEN_ALONE_LOCK``: new jobs wait at
    the gate, running ones finish first (this process's own jobs within it take no slot)."""
    import fcntl

    depth = getattr(_slots, "depth", 0)
    gate, slots = _lock_file(".gate"), _lock_file()
    try:
        if gate is not None and slots is not None:
            fcntl.flock(gate, fcntl.LOCK_EX)
            fcntl.flock(slots, fcntl.LOCK_EX)
        _slots.depth = depth + 1
        yield
    finally:
        _slots.depth = depth
        for descriptor in (slots, gate):
            if descriptor is not None:
                os.close(descriptor)


def others_running() -> bool:
    """Whether another process holds a job slot now (this one holds none)."""
    return _held_elsewhere(_lock_file())


def retried_alone(attempt: Callable[[], Any], timed_out: Callable[[Any], bool] | None = None) -> Any:
    """``attempt()`` in a job slot; where it times out (raises
    :class:`~kernelgen.errors.KernelTimeout`, or returns a result ``timed_out`` says is one)
    while other workers' jobs ran, once more alone (:func:`alone`) before that is the verdict:
    a correct kernel slowed past its limit by a loaded machine is not a timeout. Without
    ``KERNELGEN_ALONE_LOCK`` (one process) it runs once. The same for
    :class:`~kernelgen.errors.OutOfMemory`: other workers' inputs and CUDA contexts held part of
    the card."""
    from kernelgen.errors import Diagnostic, KernelTimeout, OutOfMemory

    loaded = others_running()
    try:
        with job_slot():
            result = attempt()
    except (KernelTimeout, OutOfMemory):
        if not (loaded or others_running()):
            raise
    else:
        if timed_out is None or not timed_out(result) or not (loaded or others_running()):
            return result
    with alone():
        try:
            return attempt()
        except (KernelTimeout, OutOfMemory) as error:
            raise type(error)([Diagnostic(d.path, d.code, f"{d.message} (also when retried alone)")
                               for d in error.diagnostics]) from None


def call_retried_alone(executor: Any, fn: Callable[..., Any], *args: Any, timeout: float, **kwargs: Any) -> Any:
    """``executor.call(fn, *args, timeout=timeout, **kwargs)``, retried once alone after a
    timeout under load (:func:`retried_alone`)."""
    return retried_alone(lambda: executor.call(fn, *args, timeout=timeout, **kwargs))
