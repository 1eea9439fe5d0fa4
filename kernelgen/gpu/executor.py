"""Run functions in a child process that may crash or hang without taking the caller along.

A kernel that faults poisons its CUDA context, and one that loops forever hangs its process.
So launches run in a child process that owns the CUDA context; the parent never touches CUDA.
A call whose function raises gets the exception back (its remote traceback attached as the
``__cause__``, as :mod:`concurrent.futures` does). A call whose child dies (a segfault,
``os._exit``, an abort) fails with :class:`LaunchError` ``executor_died``; one that outlasts
its timeout kills the child (SIGTERM, then SIGKILL after a grace period) and fails with
:class:`KernelTimeout` (the time the child spends waiting for its GPU turn, which it reports,
does not count: a job's limit is its own work); one that raises a CUDA error (:class:`LaunchError` ``cuda_error``)
retires the child, whose context is unusable. Every job ends by synchronizing the device, so a
fault CUDA reports late is charged to the job whose kernel caused it, never to the next one. In
each case the next call starts a fresh child.

The child is started with multiprocessing's "spawn" (a fork would inherit the parent's CUDA
state, if any, and its threads). Requests and replies are pickled with the standard pickler
and sent as bytes: CPU torch tensors cross by value, without torch's shared-memory reductions
(whose file descriptors die with a crashed child and whose /dev/shm is small in containers).
Functions cross by reference, so they must be importable (module-level).

Each executor owns one child at a time, so each pytest-xdist worker simply makes its own.
The child is a daemon (so that it never outlives the parent's exit): the functions it runs
cannot start multiprocessing children of their own (compile with ``in_process=True`` there).
"""

from __future__ import annotations

import io
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
import traceback
import weakref
from multiprocessing.connection import Connection
from typing import Any, Callable, Mapping

from kernelgen.errors import Diagnostic, KernelTimeout, LaunchError

DEFAULT_TIMEOUT_S = 60.0
# Starting a child that imports torch and initializes CUDA takes seconds, not minutes.
DEFAULT_START_TIMEOUT_S = 120.0
# How long a child asked to stop (end of input, or SIGTERM) gets before SIGKILL.
DEFAULT_GRACE_S = 1.0


class RemoteTraceback(Exception):
    """The traceback of an exception raised in the executor's child, as text."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text


def poisons_process(exc: BaseException) -> bool:
    """Whether a process that raised ``exc`` must not run anything else: a CUDA error leaves
    the context unusable."""
    return isinstance(exc, LaunchError) and exc.code == "cuda_error"


def _describe(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def _exit_status(exitcode: int | None) -> str:
    if exitcode is None:
        return "is still running"
    if exitcode < 0:
        try:
            return f"was killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"exited with status {exitcode}"


class Executor:
    """Calls functions in a child process, one call at a time, with a timeout per call.

    ``name`` says what the child is in messages and process listings; ``env`` is set in the
    child before anything else runs there (``CUDA_VISIBLE_DEVICES``...);
    ``initializer`` runs in each new child before its first call (e.g. initializing CUDA), so
    that a call's timeout does not pay for it. Use it as a context manager, or call
    :meth:`close`; a forgotten executor still stops its child when it is garbage collected or
    at interpreter exit.
    """

    def __init__(self, *, name: str = "executor", env: Mapping[str, str] | None = None,
                 initializer: Callable[[], None] | None = None,
                 default_timeout: float = DEFAULT_TIMEOUT_S, start_timeout: float = DEFAULT_START_TIMEOUT_S,
                 grace: float = DEFAULT_GRACE_S) -> None:
        self.name = name
        self.env = dict(env or {})
        self.initializer = initializer
        self.default_timeout = default_timeout
        self.start_timeout = start_timeout
        self.grace = grace
        self._context = multiprocessing.get_context("spawn")
        self._process: multiprocessing.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self._stop_child: weakref.finalize | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The running child's process id (None before the first call and after a failure)."""
        return self._process.pid if self._process is not None else None

    def call(self, fn: Callable[..., Any], /, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` in the child; its result, or its exception re-raised here.

        ``timeout`` (seconds, default :attr:`default_timeout`) counts from sending the call to
        the first byte of its reply; it is a keyword of the executor, never passed to ``fn``.
        """
        from kernelgen.gpu.timing import job_slot

        timeout = self.default_timeout if timeout is None else timeout
        request = dumps((fn, args, kwargs))
        with self._lock, job_slot():  # one of the machine's jobs (none while one runs alone)
            conn = self._ensure_child()
            try:
                conn.send_bytes(request)
                reply = _reply_within(conn, timeout)
            except (EOFError, OSError):
                exitcode = self._stop(kill=True)
                raise LaunchError(Diagnostic("", "executor_died",
                                             f"the {self.name} process {_exit_status(exitcode)} while running "
                                             f"{_describe(fn)}")) from None
            except BaseException:
                # Interrupted (Ctrl-C) mid-call: the child's late reply would answer the next call.
                self._stop(kill=True)
                raise
            if reply is None:
                self._stop(kill=True)
                raise KernelTimeout(Diagnostic("", "timeout", f"{_describe(fn)} did not finish within {timeout:g} s; "
                                                              "its process was killed"))
            status, *payload = pickle.loads(reply)
            if status == "ok":
                return payload[0]
            exc, remote_traceback = payload
            if poisons_process(exc):
                self._stop(kill=False)
            raise exc from RemoteTraceback(remote_traceback)

    def close(self) -> None:
        """Stop the child: it finishes its current call, sees its input end and exits."""
        with self._lock:
            self._stop(kill=False)

    def _ensure_child(self) -> Connection:
        if self._process is not None and self._process.is_alive():
            assert self._conn is not None
            return self._conn
        self._stop(kill=True)
        parent_end, child_end = self._context.Pipe(duplex=True)
        process = self._context.Process(target=_serve, args=(child_end, self.env, self.initializer),
                                        name=f"kernelgen-{self.name}", daemon=True)
        process.start()
        # Only the child may hold its end: the parent sees EOF when the child dies.
        child_end.close()
        self._process, self._conn = process, parent_end
        self._stop_child = weakref.finalize(self, _stop_process, process, parent_end, self.grace, True)
        try:
            if not parent_end.poll(self.start_timeout):
                self._stop(kill=True)
                raise LaunchError(Diagnostic("", "executor_start_timeout",
                                             f"the {self.name} process did not start within {self.start_timeout:g} s"))
            status, *payload = pickle.loads(parent_end.recv_bytes())
        except (EOFError, OSError):
            exitcode = self._stop(kill=True)
            raise LaunchError(Diagnostic("", "executor_died",
                                         f"the {self.name} process {_exit_status(exitcode)} while starting")) from None
        if status != "ready":
            self._stop(kill=True)
            exc, remote_traceback = payload
            raise exc from RemoteTraceback(remote_traceback)
        return parent_end

    def _stop(self, *, kill: bool) -> int | None:
        """Stop the child, if any; its exit code. ``kill``: it may be stuck, SIGTERM it at once;
        otherwise close its input and let it exit on its own first."""
        stop, self._stop_child = self._stop_child, None
        self._process = self._conn = None
        detached = stop.detach() if stop is not None else None
        if detached is None:
            return None
        _, _, (process, conn, grace, _), _ = detached
        return _stop_process(process, conn, grace, kill)


# What a child sends while it waits for its GPU turn (kernelgen.gpu.timing.gpu_turn), and when it
# has it: the parent's clock for the call stops in between.
WAITING, TURN = b"kernelgen:waiting", b"kernelgen:turn"
# The longest a child may wait for a turn without the parent giving up on it: past every job's
# own limit (a turn is held by a job that has one), so only a wait that never ends reaches it.
TURN_WAIT_LIMIT_S = 3600.0


def _reply_within(conn: Connection, timeout: float) -> bytes | None:
    """The call's reply, or None when the child ran for more than ``timeout`` seconds; the time
    it spent waiting for its GPU turn (between a WAITING and a TURN message; threads of the
    child may wait at once) does not count: another worker's timed window is not this call's
    work."""
    left, waiting = timeout, 0
    while True:
        started = time.monotonic()
        if not conn.poll(TURN_WAIT_LIMIT_S if waiting else max(left, 0.0)):
            return None
        message = conn.recv_bytes()
        if not waiting:
            left -= time.monotonic() - started
        if message == WAITING:
            waiting += 1
        elif message == TURN:
            waiting = max(waiting - 1, 0)
        else:
            return message


def _stop_process(process: multiprocessing.process.BaseProcess, conn: Connection, grace: float, kill: bool) -> int | None:
    """Stop a child and reap it (no zombie is left); its exit code."""
    conn.close()
    if not kill:
        process.join(grace)
    if process.is_alive():
        process.terminate()
        process.join(grace)
    if process.is_alive():
        process.kill()
        process.join()
    exitcode = process.exitcode
    process.close()
    return exitcode


# ---------------------------------------------------------------------------------------------
# Pickling


class _Pickler(pickle.Pickler):
    """The standard pickler, except for fp8 tensors: PyTorch pickles them but cannot unpickle
    them (``UntypedStorage has no attribute 'dtype'``, torch 2.11 to 2.13), so they cross as
    their bytes and are viewed back."""

    def reducer_override(self, obj: Any) -> Any:
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(obj, torch.Tensor) and obj.dtype.is_floating_point \
                and obj.dtype.itemsize == 1:  # the fp8 dtypes
            return _view_as, (obj.view(torch.uint8), str(obj.dtype).removeprefix("torch."))
        return NotImplemented


def _view_as(raw: Any, dtype: str) -> Any:
    import torch

    return raw.view(getattr(torch, dtype))


def dumps(obj: Any) -> bytes:
    """``obj`` pickled for the other end of an executor (see :class:`_Pickler`)."""
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------
# The child


def _settle_device() -> None:
    """Wait for the job's GPU work to end. A fault its kernel caused that no call has reported
    yet (CUDA reports them asynchronously, at a later call) is raised here, in the job that
    caused it, never in the next job the process runs."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def _charged_to_job(exc: BaseException, fn: Any) -> BaseException:
    """``exc`` as the job's failure. A CUDA error that reached the job's end outside any
    :class:`~kernelgen.gpu.launch.cuda_errors` block (torch's ``AcceleratorError`` from a copy
    made after the kernel faulted) is the kernel's: the context was sound when the job began
    (every job ends with :func:`_settle_device`) and the harness's own CUDA work does not fault.
    A failed job's pending fault is looked for too, so the next job starts sound."""
    from kernelgen.gpu.launch import is_cuda_error

    if not is_cuda_error(exc):
        try:
            _settle_device()
        except Exception as fault:
            if is_cuda_error(fault):  # the job's kernel faulted, whatever the job raised after
                exc = fault
    if isinstance(exc, Exception) and not isinstance(exc, LaunchError) and is_cuda_error(exc):
        return LaunchError(Diagnostic("", "cuda_error", f"{_describe(fn) if fn is not None else 'a job'}: {exc}"))
    return exc


def _failure(exc: BaseException) -> bytes:
    """A pickled failure reply. An exception that does not survive pickling is replaced by a
    RuntimeError naming it, so the parent always learns what happened."""
    remote_traceback = "".join(traceback.format_exception(exc))
    try:
        data = dumps(("raised", exc, remote_traceback))
        pickle.loads(data)
        return data
    except Exception as pickling_error:
        substitute = RuntimeError(f"{type(exc).__module__}.{type(exc).__qualname__}: {exc} "
                                  f"(the exception itself could not be pickled: {pickling_error})")
        return dumps(("raised", substitute, remote_traceback))


def _serve(conn: Connection, env: Mapping[str, str], initializer: Callable[[], None] | None) -> None:
    """The child's loop: one request in, one reply out, until the parent closes its end."""
    os.environ.update(env)
    # Ctrl-C reaches the whole process group; the parent handles it and stops the child.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sending = threading.Lock()  # a turn may be taken on another thread (Inductor's benchmarks)

    def tell(waiting: bool) -> None:
        with sending:
            conn.send_bytes(WAITING if waiting else TURN)

    from kernelgen.gpu.timing import listen_for_waits

    listen_for_waits(tell)
    try:
        if initializer is not None:
            initializer()
        conn.send_bytes(pickle.dumps(("ready", os.getpid())))
    except BaseException as exc:
        conn.send_bytes(_failure(exc))
        return
    while True:
        try:
            request = conn.recv_bytes()
        except (EOFError, OSError):
            return
        fn: Any = None
        try:
            fn, args, kwargs = pickle.loads(request)
            result = fn(*args, **kwargs)
            _settle_device()
            reply = dumps(("ok", result))
        except BaseException as raised:
            exc = _charged_to_job(raised, fn)
            reply = _failure(exc)
            if poisons_process(exc):
                with sending:
                    conn.send_bytes(reply)
                return
        with sending:
            conn.send_bytes(reply)
