"""How many compile processes this process may keep busy: the cores, shared among the processes
compiling at this moment rather than among all of a run's xdist workers.

A fixed share (:func:`devices.cpu_threads`, cores // workers) leaves cores idle at a run's end:
at ``-n 12`` on 16 cores each worker compiled its tuning candidates one at a time, so the last
task with four tuned calls (hard/linear_optional_bias, 72 candidates of 128 x 256 x 64 tiles)
searched for over nine minutes while eleven workers sat finished (H100, 2026-12-07).

Each process that compiles holds an exclusive ``flock`` on a file of its own in the temporary
directory (``kernelgen-compiling-<pid>.lock``) for as long as it compiles; the number of such
files whose lock is held is the number of processes compiling now. The lock goes with the process
if it dies, so a killed worker is not counted; its file is removed by the next count.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Callable, Iterator

from kernelgen.gpu import devices

PREFIX = "kernelgen-compiling-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def compiling_now(directory: str | None = None) -> int:
    """How many processes hold their compiling lock in ``directory`` (the temporary directory by
    default). A file whose lock is free and whose process is gone is removed."""
    import fcntl

    held = 0
    for path in Path(directory or tempfile.gettempdir()).glob(f"{PREFIX}*.lock"):
        try:
            descriptor = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            held += 1
        else:
            pid = path.stem[len(PREFIX):]
            if pid.isdigit() and not _alive(int(pid)):
                with contextlib.suppress(OSError):
                    path.unlink()
        finally:
            os.close(descriptor)
    return held


@contextlib.contextmanager
def compiling(limit: int, directory: str | None = None) -> Iterator[Callable[[], int]]:
    """Mark this process as compiling while the block runs; yields a function giving the compile
    processes it may keep busy now: its share of the cores among the processes compiling, at
    least 1 and at most ``limit``. Where the lock file cannot be made, the share counts this
    process as one more compiling."""
    import fcntl

    path = Path(directory or tempfile.gettempdir()) / f"{PREFIX}{os.getpid()}.lock"
    descriptor = None
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
        fcntl.flock(descriptor, fcntl.LOCK_EX)  # a count holds it shared for a moment at most
    except OSError:
        if descriptor is not None:
            os.close(descriptor)
        descriptor = None
    uncounted = 1 if descriptor is None else 0

    def share() -> int:
        return max(1, min(limit, devices.cores() // max(1, compiling_now(directory) + uncounted)))

    try:
        yield share
    finally:
        if descriptor is not None:
            with contextlib.suppress(OSError):
                path.unlink()
            os.close(descriptor)
