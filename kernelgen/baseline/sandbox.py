"""Run a model's Triton answer in a subprocess that cannot do harm, and trust nothing it writes.

The raw-LLM baseline executes code a model wrote. :func:`run_in_sandbox` runs it in a child
process (``python -m kernelgen.baseline.child JOB_DIR``, :mod:`kernelgen.baseline.child`).

**The boundary is the operating system** (:mod:`kernelgen.baseline.wall`): the child runs in
bubblewrap's user, mount, PID and network namespaces as an unprivileged user, under a seccomp
filter, seeing only the system's files, Python and its packages read-only and its job folder
(the only thing it may write); the namespace's processes all die at the end of the case. Where
bubblewrap cannot run, the baseline refuses to start unless the run passed ``--unsafe-sandbox``
(a plain process, as before the wall: the rest of this list still holds, nothing more).

Inside, and never relied on alone:

* **Limits.** Hard rlimits the child sets before any answer code runs: ``RLIMIT_AS`` in
  interpreter mode (CUDA reserves far more address space than it uses, so on a GPU
  ``RLIMIT_DATA``, when asked for), ``RLIMIT_FSIZE``, ``RLIMIT_CPU``, ``RLIMIT_NPROC`` (for a child that
  is not root outside) and no core files. The wall clock starts once the child has imported torch
  and Triton; past ``timeout_s`` the namespace is killed: outcome ``timeout``. As in the
  pipeline, where compiling has a limit of its own apart from the runs, the time Triton's JIT
  spends compiling the answer's kernels (reported by the child) is not counted, up to
  ``compile_allowance_s`` in all: an answer that only claims to compile gains that much, no more.
* **An audit hook** (:func:`sys.addaudithook`) refusing sockets, processes (but, on a GPU,
  Triton's compilers) and writes outside the job folder, and **a torch function mode**
  (:class:`~kernelgen.baseline.child.TorchGuard`) refusing torch calls of the answer's own code
  beyond allocation and views: ``forbidden_construct``. Both live in the answer's process, so
  both are advisory: the static rules (:mod:`kernelgen.baseline.answer`) are what keep PyTorch
  from doing the work, and no verdict rests on the hook.
* **An environment from an allowlist**, without anything that looks like a credential;
  ``HOME`` and ``TMPDIR`` are the job folder.

**Nothing the child writes is trusted.** Its output (stdout and stderr), its status and its
results go to unnamed files this process created and passed as descriptors: never opened by
path (a link or a FIFO put in their place changes nothing), read only up to a bound (a sparse
file of a GiB costs nothing), and its results are raw tensors in a plain framing
(:func:`read_tensors`), every size declared up front and checked against the bound before a
byte is read (no pickle, no zip to inflate). Every call's inputs come back after the call and
this process compares them with what it sent (:attr:`SandboxResult.modified`). Times are
taken only when timing was asked for, and only as a well-formed list
(:mod:`kernelgen.baseline.ablation` then rejects a time the GPU's roofline cannot allow). Any
result that cannot be read is the answer's ``runtime_error``, never kernelgen's crash; what
is kept of the child's text is scrubbed of secrets (:func:`kernelgen.env.scrub`).

Without a GPU, the answer runs in Triton's interpreter (``TRITON_INTERPRET=1``) on CPU
tensors, patched where Triton 3.6's interpreter is wrong (:mod:`kernelgen.baseline.interpreter_fixes`);
with one, on the GPU, with a Triton cache of its own in the job folder (seeded from one a
trusted run built, :func:`seed_triton_cache`: no answer can plant a compiled kernel for a later
case). ``cuda_interpreter`` runs the patched interpreter on CUDA tensors (each launch copies its
arguments to the host and back), so GPU mode's second look
(:func:`kernelgen.baseline.ablation._in_the_interpreter`) takes the path an answer took on the GPU,
whether it branches on ``x.is_cuda`` or asserts it. Errors are classified: a ``SyntaxError`` is ``syntax_error``, a Triton
``CompilationError`` (or, in the interpreter, an exception raised by Triton's language
frontend) is ``compile_error``, a missing entry point is ``no_kernel``, anything else
``runtime_error`` with the exception and the tail of the child's output.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import json
import math
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Literal, Mapping, Sequence

from kernelgen.baseline.timed import CHECKED_REPETITIONS, Tools, checked_values
from kernelgen.baseline.wall import (JOB_MOUNT, SANDBOX_UID, SandboxUnavailable, Wall, on_gpu, require_wall,
                                     seccomp_file, unnamed_file, user_options, wall_command)
from kernelgen.env import SECRET_NAME, scrub
from kernelgen.errors import KernelgenError, Outcome
from kernelgen.gpu.compile import COMPILE_TIMEOUT_S

Device = Literal["interpreter", "cuda", "cuda_interpreter"]

DEFAULT_MEMORY_LIMIT_BYTES = 8 << 30
DEFAULT_FILE_SIZE_LIMIT_BYTES = 1 << 30
STDERR_TAIL_CHARS = 4000
STATUS_BYTES = 64 << 10
RECORD_HEADER_BYTES = 4096
PROCESS_LIMIT = 1024

# Environment variables the child may inherit; nothing else crosses.
INHERITED_ENVIRONMENT = ("PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH",
                         "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH",
                         "TRITON_LIBCUDA_PATH", "TRITON_LIBDEVICE_PATH", "LANG", "LC_ALL", "TZ",
                         "OMP_NUM_THREADS", "CUDA_DEVICE_ORDER", "KERNELGEN_GPU_LOCK")
# The dtypes a result may have, by name (what the child writes in a record's header).
DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "float8_e4m3fn", "float8_e5m2")


class SandboxError(KernelgenError):
    """The sandbox itself failed (it could not start the child, the child died before any
    answer code ran): the harness's fault, not the answer's."""

    stage = "sandbox"


@dataclass(frozen=True)
class SandboxResult:
    """What running an answer gave: ``outputs`` (CPU tensors, in the order returned) when
    ``outcome`` is ok, else ``error`` (the exception, one line) and the child's output tail
    (stdout and stderr together). With several calls, ``calls`` holds each call's outputs and
    ``modified`` the positions of the inputs each call wrote into (found here, comparing what
    came back with what was sent); ``times_ms`` holds the CUDA-event times of the timed call's
    repetitions. With a ``refill``, ``again`` holds the outputs of each call made on new values
    (some of the timed repetitions, where timed; else one call after the others),
    ``again_modified`` the inputs each wrote and ``again_inputs`` the values they were given. ``isolation`` says what walled it in."""

    outcome: Outcome
    outputs: tuple[Any, ...] = ()
    error: str = ""
    stderr_tail: str = ""
    duration_s: float = 0.0
    isolation: str = ""
    calls: tuple[tuple[Any, ...], ...] = ()
    modified: tuple[tuple[int, ...], ...] = ()
    times_ms: tuple[float, ...] = ()
    again: tuple[tuple[Any, ...], ...] = ()
    again_modified: tuple[tuple[int, ...], ...] = ()
    again_inputs: tuple[Any, ...] = ()

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.OK


class AnswerFault(Exception):
    """What the child left cannot be read back: the answer's runtime_error."""


# ---------------------------------------------------------------------------------------------
# The parent side


def default_device() -> Device:
    import torch

    return "cuda" if torch.cuda.is_available() else "interpreter"


def sandbox_environment(parent: Mapping[str, str], home: Path | str, device: Device,
                        triton_cache: Path | str) -> dict[str, str]:
    """The child's environment: the allowlisted variables of ``parent`` without anything that
    looks like a credential, and the sandbox's own settings."""
    env = {name: parent[name] for name in INHERITED_ENVIRONMENT
           if name in parent and not SECRET_NAME.search(name)}
    env.setdefault("PATH", os.defpath)
    env.update({
        "HOME": str(home),
        "TMPDIR": str(home),
        "PYTHONPATH": os.pathsep.join(_import_roots()),
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "TRITON_CACHE_DIR": str(triton_cache),
    })
    if device != "cuda":  # Triton's interpreter, on CPU or CUDA tensors
        env.update({"TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1"})
    if not on_gpu(device):
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def _import_roots() -> list[str]:
    """Where the child finds kernelgen, torch and Triton (without importing them here)."""
    roots = [str(Path(__file__).resolve().parents[2])]
    for module in ("torch", "triton", "numpy"):
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.origin:
            root = str(Path(spec.origin).resolve().parent.parent)
            if root not in roots:
                roots.append(root)
    return roots


def seed_cache_dir() -> Path:
    """Where the trusted seed of the children's Triton caches lives (GPU mode)."""
    import triton

    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "kernelgen" / f"sandbox-triton-seed-{triton.__version__}"


def run_in_sandbox(code: str, entry: str, inputs: Sequence[Any], timeout_s: float = 60.0,
                   device: Device | None = None, **options: Any) -> SandboxResult:
    """Run ``entry(*inputs)`` of the Python module ``code`` in a sandboxed subprocess.

    ``inputs`` are CPU tensors and Python scalars (moved to the GPU in ``cuda`` mode);
    ``device`` defaults to the GPU where there is one, else Triton's interpreter. The
    ``options`` are :func:`run_calls_in_sandbox`'s. Raises :class:`SandboxError` when the
    sandbox itself fails; every failure of the answer is an outcome.
    """
    return run_calls_in_sandbox(code, entry, [inputs], timeout_s, device, **options)


def run_calls_in_sandbox(code: str, entry: str, calls: Sequence[Sequence[Any]], timeout_s: float = 60.0,
                         device: Device | None = None, *, timed_inputs: Sequence[Any] | None = None,
                         refill: Sequence[Any] | None = None, refill_call: int = -1,
                         mixed: Sequence[bool] | None = None, repetitions: int = 100, warmup: int = 10,
                         memory_limit_bytes: int | None = None,
                         file_size_limit_bytes: int | None = None, output_bytes_limit: int | None = None,
                         startup_timeout_s: float = 300.0, unsafe: bool = False,
                         keep_triton_cache: Path | None = None,
                         compile_allowance_s: float = COMPILE_TIMEOUT_S) -> SandboxResult:
    """Call ``entry`` once per input list of ``calls`` in one sandboxed process (starting one
    costs seconds), noting which inputs each call modified; with ``timed_inputs`` on a GPU,
    then time ``entry(*timed_inputs)``: ``warmup`` calls, then ``repetitions`` calls each
    between CUDA events with the L2 cache flushed before it, each on the inputs as drawn with
    their floats varied afresh (:mod:`kernelgen.baseline.timed`). With ``refill`` (another draw
    of the arguments of the timed call where there is one, else of call ``refill_call``), the
    tensors of that call hold new values in more calls (``again``): with timing, some of the
    timed repetitions chosen at random, on values varied with the refill as every timed call's
    are (:func:`~kernelgen.baseline.timed.checked_values`); without, the refill, in one call
    made after the others. ``mixed`` names, per timed input, those not floating whose elements a
    timed call may take from the refill, one by one (their task's domain holds element by
    element: :func:`~kernelgen.baseline.timed.mix`). ``again_inputs`` holds what those calls
    were given. An answer that keeps its results between calls, keyed by the tensors, their
    addresses or the number of calls, returns stale ones there (a timing cheat: the repetitions
    would do no work).

    ``memory_limit_bytes`` defaults to 8 GiB of address space in interpreter mode and to no
    limit on a GPU (see the module docstring); ``output_bytes_limit`` (the most bytes all calls'
    outputs may take together) to four times the inputs' bytes plus 64 MiB. ``unsafe`` runs the
    child without the operating system's wall where the wall cannot stand (else
    :class:`~kernelgen.baseline.wall.SandboxUnavailable`); ``keep_triton_cache`` copies the
    child's Triton cache there afterwards (only for trusted code: :func:`seed_triton_cache`).
    """
    import torch

    device = device or default_device()
    wall = require_wall(unsafe)
    if memory_limit_bytes is None and not on_gpu(device):
        memory_limit_bytes = DEFAULT_MEMORY_LIMIT_BYTES
    def dense(values: Sequence[Any]) -> list[Any]:
        """The tensors in their own memory, as the child gets them on every device (copying an
        expanded tensor to a GPU makes it contiguous; the child refills each in place)."""
        return [v.contiguous() if isinstance(v, torch.Tensor) else v for v in values]

    sent = [dense(inputs) for inputs in calls]
    timed = timed_inputs is not None and device == "cuda" and repetitions > 0
    timed_inputs = dense(timed_inputs) if timed_inputs is not None else None
    refill = dense(refill) if refill is not None else None
    again_sent = checked = None
    if refill is not None and timed:  # the checked repetitions' values: the timed ones varied with the refill
        checked = again_sent = checked_values(timed_inputs, refill, _parent_tools(), mixed)
    elif refill is not None:  # what the call made again receives: the refill where a tensor was
        again_sent = [new if isinstance(old, torch.Tensor) else old for old, new in zip(sent[refill_call], refill)]
    # the calls made on the refill: some of the timed repetitions (kernelgen.baseline.timed), else one
    checks = (CHECKED_REPETITIONS if timed else 1) if again_sent is not None else 0
    expected = sent + [again_sent] * checks
    input_bytes = sum(_nbytes(x) for inputs in expected for x in inputs)
    outputs_limit = output_bytes_limit if output_bytes_limit is not None else 4 * input_bytes + (64 << 20)
    stream_limit = outputs_limit + input_bytes + RECORD_HEADER_BYTES * (1 + sum(len(i) + 16 for i in expected))
    file_limit = max(file_size_limit_bytes or DEFAULT_FILE_SIZE_LIMIT_BYTES, stream_limit)
    job_dir = Path(tempfile.mkdtemp(prefix="kernelgen-sandbox-"))
    inside = Path(JOB_MOUNT) if wall is not None else job_dir  # the job folder as the child sees it
    fds: list[int] = []
    try:
        (job_dir / ".triton").mkdir()
        # the seed's own run starts empty; the interpreter on CUDA tensors needs the driver's helpers
        if on_gpu(device) and keep_triton_cache is None:
            _copy_tree(seed_triton_cache(unsafe), job_dir / ".triton")
        (job_dir / "answer.py").write_text(code)
        torch.save(sent, job_dir / "inputs.pt")
        if timed:
            torch.save(list(timed_inputs), job_dir / "timed_inputs.pt")
        if refill is not None:
            torch.save(list(refill), job_dir / "refill.pt")
        if checked is not None:
            torch.save(list(checked), job_dir / "checks.pt")
        status_fd, outputs_fd, log_fd = unnamed_file(), unnamed_file(), unnamed_file()
        ready_read, ready_write = os.pipe()
        info_read, info_write = os.pipe()
        fds += [status_fd, outputs_fd, log_fd, ready_read, ready_write, info_read, info_write]
        job = {"entry": entry, "device": device, "ready_fd": ready_write, "status_fd": status_fd,
               "outputs_fd": outputs_fd, "repetitions": repetitions if timed else 0, "warmup": warmup,
               "refill": refill is not None, "checks": checked is not None, "refill_call": refill_call,
               "mixed": [bool(m) for m in mixed] if mixed is not None else None,
               "write_roots": [str(inside), os.devnull],
               "torch_allowed": sorted(runtime_allowed_torch_names()),
               "compiler_tools": device == "cuda",
               "memory_limit_bytes": memory_limit_bytes, "file_size_limit_bytes": file_limit,
               "process_limit": PROCESS_LIMIT if wall is not None and wall.as_user is not None else None,
               "cpu_seconds": int(2 * (timeout_s + startup_timeout_s + compile_allowance_s)) + 10}
        (job_dir / "job.json").write_text(json.dumps(job))
        if wall is not None and wall.as_user is not None:
            for path in (job_dir, *job_dir.rglob("*")):
                os.chown(path, SANDBOX_UID, SANDBOX_UID)
        environment = sandbox_environment(os.environ, inside, device, inside / ".triton")
        command = [sys.executable, "-s", "-B", "-m", "kernelgen.baseline.child", str(inside)]
        passed = [status_fd, outputs_fd, ready_write]
        options: dict[str, Any] = {}
        mounts = None
        if wall is not None:
            seccomp = seccomp_file(processes=on_gpu(device))
            fds.append(seccomp)
            lock = [os.environ["KERNELGEN_GPU_LOCK"]] if device == "cuda" and os.environ.get("KERNELGEN_GPU_LOCK") \
                else []
            command, mounts = wall_command(wall, job_dir=job_dir, device=device, command=command, environ=os.environ,
                                           seccomp_fd=seccomp, info_fd=info_write, extra_readonly=lock)
            passed += [seccomp, info_write, *mounts.fds]
            options = user_options(wall)
        try:
            process = subprocess.Popen(command, cwd=job_dir if wall is None else "/", stdin=subprocess.DEVNULL,
                                       stdout=log_fd, stderr=log_fd, pass_fds=passed, env=environment,
                                       start_new_session=True, **options)
        finally:
            if mounts is not None:
                mounts.close()
            for fd in (ready_write, info_write):
                os.close(fd)
                fds.remove(fd)
        child = _Child(process, info_read if wall is not None else None)
        try:
            result = _supervise(child, ready_read, timeout_s, compile_allowance_s, startup_timeout_s, status_fd,
                                outputs_fd, log_fd, expected, outputs_limit, stream_limit, repetitions if timed else 0,
                                wall.describe() if wall is not None else "none (--unsafe-sandbox: audit hook only)")
        finally:
            child.kill()
        if keep_triton_cache is not None and result.ok:
            _copy_tree(job_dir / ".triton", keep_triton_cache)
        if checks and result.ok:  # the calls on the refill are the last
            return dataclasses.replace(result, calls=result.calls[:-checks], modified=result.modified[:-checks],
                                       again=result.calls[-checks:], again_modified=result.modified[-checks:],
                                       again_inputs=tuple(again_sent))
        return result
    finally:
        for fd in fds:
            os.close(fd)
        shutil.rmtree(job_dir, ignore_errors=True)


def _parent_tools() -> Tools:
    """The timed calls' tools in this process, for the checked calls' values: their randomness
    from os.urandom, as the child's (nothing the answer can foresee)."""
    import random

    import torch

    generator = torch.Generator()
    generator.manual_seed(int.from_bytes(os.urandom(8), "little"))
    return Tools.taken(generator, random.Random(os.urandom(16)))


def runtime_allowed_torch_names() -> frozenset[str]:
    """The torch functions and tensor methods the answer's code may call while it runs: those
    the static rules allow (:mod:`kernelgen.baseline.answer`), by their last name."""
    from kernelgen.baseline.answer import ALLOWED_TENSOR_METHODS, ALLOWED_TORCH_CALLS

    return frozenset({c.rsplit(".", 1)[1] for c in ALLOWED_TORCH_CALLS} | ALLOWED_TENSOR_METHODS)


class _Child:
    """The started child and, inside the wall, its PID namespace's init (whose end takes every
    process of the namespace with it), held by a pidfd so that no recycled pid is ever hit."""

    def __init__(self, process: subprocess.Popen, info_fd: int | None) -> None:
        self.process = process
        self.info_fd = info_fd
        self.init_fd: int | None = None

    def read_info(self) -> None:
        """bwrap's ``--info-fd`` JSON, written before the child runs: the init's pid."""
        if self.info_fd is None or self.init_fd is not None:
            return
        readable, _, _ = select.select([self.info_fd], [], [], 0)
        if readable:
            try:
                self.init_fd = os.pidfd_open(int(json.loads(os.read(self.info_fd, 4096))["child-pid"]))
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                pass

    def kill(self) -> None:
        """Kill the namespace (its init, then bwrap) or, without the wall, the process group;
        return once they are gone."""
        if self.process.returncode is not None and self.init_fd is None:
            return  # killed before, or never walled
        self.read_info()
        init, self.info_fd = self.init_fd, None
        if init is not None:
            _quietly(lambda: signal.pidfd_send_signal(init, signal.SIGKILL))
        if self.process.poll() is None:
            _quietly(lambda: os.killpg(self.process.pid, signal.SIGKILL))
        self.process.wait()
        if init is not None:  # readable once the init has exited, its namespace emptied
            select.select([init], [], [], 5.0)
            os.close(init)
            self.init_fd = None


def _quietly(send) -> None:
    try:
        send()
    except (ProcessLookupError, PermissionError):
        pass


def _supervise(child: _Child, ready_fd: int, timeout_s: float, compile_allowance_s: float, startup_timeout_s: float,
               status_fd: int,
               outputs_fd: int, log_fd: int, expected: list[list[Any]], outputs_limit: int, stream_limit: int,
               repetitions: int, isolation: str) -> SandboxResult:
    process = child.process
    readable, _, _ = select.select([ready_fd], [], [], startup_timeout_s)
    first = os.read(ready_fd, 16) if readable else b""
    if not first.startswith(b"ready\n"):
        child.kill()
        why = "did not start in time" if not readable else f"exited with status {process.wait()} before starting"
        raise SandboxError(f"the sandboxed process {why}: {_tail(log_fd)}", code="sandbox_start")
    child.read_info()
    started = time.monotonic()
    # what came after "ready" in the same read (a compile at once) is the first of its reports
    returncode = _wait_within(process, ready_fd, timeout_s, compile_allowance_s, pending=first[len(b"ready\n"):])
    if returncode is None:
        child.kill()
        return SandboxResult(Outcome.TIMEOUT, error=f"no result after {timeout_s:g} s (Triton's compiles not counted, "
                             f"up to {compile_allowance_s:g} s)", stderr_tail=_tail(log_fd),
                             duration_s=time.monotonic() - started, isolation=isolation)
    child.kill()  # whatever the answer left running in the namespace
    duration = time.monotonic() - started
    status = _read_status(status_fd)
    if status is None:
        if returncode < 0:
            why = f"killed by {signal.Signals(-returncode).name}"
        else:
            why = f"exited with status {returncode}"
        return SandboxResult(Outcome.RUNTIME_ERROR, error=f"the process {why} without a result",
                             stderr_tail=_tail(log_fd), duration_s=duration, isolation=isolation)
    outcome, error, times = status
    calls: tuple[tuple[Any, ...], ...] = ()
    modified: tuple[tuple[int, ...], ...] = ()
    if outcome is Outcome.OK:
        try:
            calls, modified = _results(outputs_fd, expected, outputs_limit, stream_limit)
            times = _checked_times(times, repetitions)
        except AnswerFault as fault:
            outcome, error, calls, modified, times = Outcome.RUNTIME_ERROR, str(fault), (), (), ()
    else:
        times = ()
    return SandboxResult(outcome, calls[0] if calls else (), scrub(error), _tail(log_fd), duration, isolation,
                         calls, modified, times)


_POLL_S = 0.1


def _wait_within(process: subprocess.Popen, ready_fd: int, timeout_s: float,
                 compile_allowance_s: float = 0.0, pending: bytes = b"") -> int | None:
    """The child's exit status, or None past ``timeout_s`` seconds of its work: the time it
    reports waiting for its GPU turn (``wait`` ... ``turn`` on the ready pipe) does not count
    while another process really holds the turn (the lock cannot be taken here), so an answer
    that claims to wait gains nothing; the time it reports compiling (``compile`` ...
    ``compiled``) does not count up to ``compile_allowance_s`` in all, which bounds what an
    answer that claims to compile gains."""
    from kernelgen.gpu.timing import LOCK_WAIT_S, turn_taken_elsewhere

    left, waiting, waited = timeout_s, False, 0.0
    compiling, compile_left = False, compile_allowance_s

    def told(data: bytes) -> None:
        nonlocal pending, waiting, compiling
        pending += data
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            waiting = {b"wait": True, b"turn": False}.get(line, waiting)
            compiling = {b"compile": True, b"compiled": False}.get(line, compiling)
        pending = pending[-64:]  # no line is longer: a stream without newlines is held to this

    told(b"")
    while True:
        step = min(_POLL_S, max(left, 0.0))
        started = time.monotonic()
        readable, _, _ = select.select([ready_fd], [], [], step)
        if readable:
            data = os.read(ready_fd, 4096)
            told(data)
            if not data:  # the child closed the pipe: it exits
                try:
                    return process.wait(timeout=max(left, 0.0) + 1.0)
                except subprocess.TimeoutExpired:
                    return None
        code = process.poll()
        if code is not None:
            return code
        spent = time.monotonic() - started
        if waiting and waited < LOCK_WAIT_S and turn_taken_elsewhere():
            waited += spent
        elif compiling and compile_left > 0:
            compile_left -= spent
        else:
            left -= spent
        if left <= 0:
            return None


def _read_status(fd: int) -> tuple[Outcome, str, Any] | None:
    """The child's verdict, trusting nothing in it but a known outcome and a string (times are
    checked where they are used): at most :data:`STATUS_BYTES` of its status file."""
    try:
        data = json.loads(os.pread(fd, STATUS_BYTES, 0))
        outcome = Outcome(data["outcome"])
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    if outcome not in _CHILD_OUTCOMES:
        return None
    return outcome, str(data.get("error", ""))[:STDERR_TAIL_CHARS], data.get("times_ms", [])


def _checked_times(times: Any, repetitions: int) -> tuple[float, ...]:
    """The repetitions' times when timing was asked for (none otherwise, whatever the child
    says), each a finite number of milliseconds, one per repetition: ``repetitions`` of them,
    or as few as 3 where a call is too slow for all of them to fit a GPU turn
    (:func:`kernelgen.gpu.timing.fitted_repetitions`); a median of 0 is the caller's
    implausible time."""
    if not repetitions:
        return ()
    if not isinstance(times, list) or not min(3, repetitions) <= len(times) <= repetitions or not all(
            isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and t >= 0 for t in times):
        raise AnswerFault(f"the timed call's times are not {min(3, repetitions)} to {repetitions} numbers of "
                          "milliseconds (finite, >= 0)")
    return tuple(float(t) for t in times)


def _results(fd: int, expected: list[list[Any]], outputs_limit: int,
             stream_limit: int) -> tuple[tuple[tuple[Any, ...], ...], tuple[tuple[int, ...], ...]]:
    """Each call's outputs, and which of its inputs changed (compared here with what was sent),
    from the child's results."""
    outputs: list[dict[int, Any]] = [{} for _ in expected]
    unchanged: list[set[int]] = [set() for _ in expected]  # inputs compared as they are read, then dropped
    total = 0
    for (call, role, position), tensor in read_tensors(fd, stream_limit):
        if not 0 <= call < len(expected) or not 0 <= position < (len(expected[call]) if role == "input" else 1 << 16):
            raise AnswerFault(f"the results name call {call}, argument {position}: there were {len(expected)} calls")
        if role == "output":
            outputs[call][position] = tensor
            total += _nbytes(tensor)
            if total > outputs_limit:
                raise AnswerFault(f"the outputs take more than the {outputs_limit} bytes allowed")
        elif _is_tensor(expected[call][position]) and _same(expected[call][position], tensor):
            unchanged[call].add(position)
    calls, modified = [], []
    for i, sent in enumerate(expected):
        if sorted(outputs[i]) != list(range(len(outputs[i]))) or not outputs[i]:
            raise AnswerFault(f"call {i} came back without its outputs")
        calls.append(tuple(outputs[i][j] for j in range(len(outputs[i]))))
        modified.append(tuple(j for j, old in enumerate(sent) if _is_tensor(old) and j not in unchanged[i]))
    return tuple(calls), tuple(modified)


def read_tensors(fd: int, limit: int) -> Iterator[tuple[tuple[int, str, int], Any]]:
    """The tensors of a results file the child wrote (:class:`kernelgen.baseline.child.TensorWriter`),
    one at a time: records of a 4-byte little-endian header length, a JSON header (``call``,
    ``role`` ``output`` or ``input``, ``position``, ``dtype``, ``shape``) and the raw bytes.
    Every size is checked against ``limit`` (and the file's size) before its bytes are read."""
    import torch

    size = os.fstat(fd).st_size
    offset, total, seen = 0, 0, set()
    while offset < size:
        header_length = int.from_bytes(_pread_exact(fd, 4, offset), "little")
        if not 0 < header_length <= RECORD_HEADER_BYTES:
            raise AnswerFault(f"the results hold a record header of {header_length} bytes")
        try:
            header = json.loads(_pread_exact(fd, header_length, offset + 4))
            key = (int(header["call"]), str(header["role"]), int(header["position"]))
            dtype, shape = str(header["dtype"]), [int(n) for n in header["shape"]]
        except (ValueError, KeyError, TypeError, RecursionError) as error:
            raise AnswerFault(f"the results hold a malformed record header: {error}") from None
        if dtype not in DTYPES or key[1] not in ("output", "input") or len(shape) > 8 or any(n < 0 for n in shape) \
                or key in seen:
            raise AnswerFault(f"the results hold a record of dtype {dtype!r}, shape {shape}, role {key[1]!r}")
        element = getattr(torch, dtype).itemsize
        nbytes = math.prod(shape) * element
        total += nbytes + header_length + 4
        if total > limit or offset + 4 + header_length + nbytes > size:
            raise AnswerFault(f"the results are larger than the {limit} bytes allowed, or cut short")
        buffer = bytearray(nbytes)
        _preadinto(fd, buffer, offset + 4 + header_length)
        tensor = torch.frombuffer(buffer, dtype=torch.uint8) if nbytes else torch.empty(0, dtype=torch.uint8)
        seen.add(key)
        offset += 4 + header_length + nbytes
        yield key, tensor.view(getattr(torch, dtype)).reshape(shape)


def _pread_exact(fd: int, n: int, offset: int) -> bytes:
    data = os.pread(fd, n, offset)
    if len(data) != n:
        raise AnswerFault("the results are cut short")
    return data


def _preadinto(fd: int, buffer: bytearray, offset: int) -> None:
    view, done = memoryview(buffer), 0
    while done < len(buffer):
        n = os.preadv(fd, [view[done:done + (64 << 20)]], offset + done)
        if n <= 0:
            raise AnswerFault("the results are cut short")
        done += n


def _is_tensor(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Tensor)


def _nbytes(value: Any) -> int:
    return value.numel() * value.element_size() if _is_tensor(value) else 0


def _same(sent: Any, back: Any) -> bool:
    """Whether an input came back bit for bit (NaN payloads and -0.0 included)."""
    import torch

    if not _is_tensor(back) or back.dtype != sent.dtype or back.shape != sent.shape:
        return False
    flat = [t.detach().cpu().contiguous().reshape(-1).view(torch.uint8) for t in (sent, back)]
    return torch.equal(*flat)


def _tail(log_fd: int) -> str:
    """The last :data:`STDERR_TAIL_CHARS` bytes of the child's output, scrubbed of secrets."""
    try:
        size = os.fstat(log_fd).st_size
        data = os.pread(log_fd, STDERR_TAIL_CHARS, max(0, size - STDERR_TAIL_CHARS))
    except OSError:
        return ""
    return scrub(data.decode("utf-8", errors="replace"))


def _copy_tree(source: Path, target: Path) -> None:
    if source.is_dir():
        shutil.copytree(source, target, dirs_exist_ok=True, symlinks=True)


# kernelgen's own correct answer (a vector add): what builds the GPU children's Triton cache seed.
SEED_KERNEL = """\
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 128),)](x, y, out, x.numel(), BLOCK=128)
    return out
"""


@functools.lru_cache(maxsize=None)
def seed_triton_cache(unsafe: bool = False) -> Path:
    """The seed of every GPU child's Triton cache: Triton's driver helpers and a launcher,
    built once per machine by a child running kernelgen's own kernel (never a model's), so
    that a case does not spend seconds compiling them; each child gets a copy, so nothing an
    answer writes reaches another case. An empty folder where the trusted run fails."""
    import torch
    from filelock import FileLock

    seed = seed_cache_dir()
    seed.mkdir(parents=True, exist_ok=True)
    with FileLock(str(seed) + ".lock"):
        if not (seed / "complete").exists():
            x = torch.arange(256, dtype=torch.float32)
            run = run_calls_in_sandbox(SEED_KERNEL, "vector_add", [[x, x]], device="cuda", unsafe=unsafe,
                                       keep_triton_cache=seed / "triton")
            if run.ok:
                (seed / "complete").write_text("built by kernelgen's own seed kernel\n")
    return seed / "triton"


# wrong_result: a race Triton's interpreter ran through (kernelgen.baseline.interpreter_races)
_CHILD_OUTCOMES = (Outcome.OK, Outcome.RUNTIME_ERROR, Outcome.COMPILE_ERROR, Outcome.SYNTAX_ERROR, Outcome.NO_KERNEL,
                   Outcome.FORBIDDEN_CONSTRUCT, Outcome.TIMEOUT, Outcome.WRONG_RESULT)

__all__ = ["SandboxError", "SandboxResult", "SandboxUnavailable", "Wall", "run_in_sandbox", "run_calls_in_sandbox",
           "read_tensors", "sandbox_environment", "seed_triton_cache"]
