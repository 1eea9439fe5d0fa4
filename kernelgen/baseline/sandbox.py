"""Run a model's Triton answer in a subprocess that cannot do harm.

The raw-LLM baseline executes code a model wrote. :func:`run_in_sandbox` runs it in a child
process (``python -m kernelgen.baseline.child JOB_DIR``, :mod:`kernelgen.baseline.child`) with these walls, each tested:

* **A time limit.** The clock starts once the child has imported torch and Triton (their
  import time depends on the machine's load, not on the answer); past ``timeout_s`` the
  child's whole process group is killed: outcome ``timeout``. A CPU-time limit backs it up in
  case the parent dies first.
* **A memory limit.** ``RLIMIT_AS`` caps the address space in interpreter mode. CUDA reserves
  far more virtual address space than it uses, so on a GPU the limit applies to
  ``RLIMIT_DATA`` (private writable memory) and only when asked for; the GPU's own memory is
  bounded by the device. ``RLIMIT_FSIZE`` caps every file it writes. The child sets the
  limits on itself before any answer code runs (a ``preexec_fn`` is unsafe when the parent
  has threads).
* **No network.** The child runs in a new network namespace (``unshare -n``, or ``unshare -rn``
  without root) where one is allowed: no interface but a down loopback. Always, an audit hook
  (:func:`sys.addaudithook`, which cannot be removed) refuses sockets other than Unix ones,
  connections, binds and name lookups.
* **No writes outside its own temporary directory.** The same hook refuses opening a file for
  writing, and removing, renaming, linking or changing files, anywhere but the job's
  directory (and, on a GPU, Triton's cache), resolving symlinks first. The directory is
  deleted afterwards.
* **No processes.** The hook refuses ``os.system``, ``exec``, ``fork``, ``spawn``, signals to
  other processes and ``subprocess``; on a GPU, only the compilers Triton runs (``ptxas``,
  ``cc``, ...) may be started.
* **PyTorch does not do the work.** The static rules refuse torch computing in the launcher
  where they can see it; names are resolved at run time, so the child also runs the answer
  (its import and every call) under a torch function mode (:class:`~kernelgen.baseline.child.TorchGuard`) that refuses any
  torch function or tensor method the answer's own code calls other than those the rules allow
  (allocation, shapes, views that keep the element order), a copy to another dtype or device,
  and reading a tensor on the host (``.numpy()``, ``.tolist()``). Torch calls that Triton makes
  (its launcher, autotuner and interpreter) are allowed: the innermost frame outside torch and
  the standard library decides whose call it is. A refusal is ``forbidden_construct``, even
  when the answer catches the exception.
* **No secrets.** The environment is built from an allowlist (``PATH``, CUDA and Triton
  locations, the locale), with anything that looks like a credential dropped even from that;
  ``HOME`` and ``TMPDIR`` are the job's directory.

The hook is defense in depth, not a wall against arbitrary code (``ctypes`` could step
around it): :mod:`kernelgen.baseline.answer`'s static rules run first and refuse the imports and
builtins that would. A harness running as root should run as an unprivileged user for the
operating system's own file permissions to apply.

Without a GPU, the answer runs in Triton's interpreter (``TRITON_INTERPRET=1``) on CPU
tensors, patched where Triton 3.6's interpreter is wrong (loop bounds with NumPy >= 2.4, fp8
rounding, atomics of broadcast values: :mod:`kernelgen.baseline.interpreter_fixes`); with
one, on the GPU. Inputs go in and outputs come back through ``torch.save``
files loaded with ``weights_only=True``. Errors are classified: a ``SyntaxError`` is
``syntax_error``, a Triton ``CompilationError`` (or, in the interpreter, an exception raised
by Triton's language frontend, which is where a GPU compile would have failed) is
``compile_error``, a missing entry point is ``no_kernel``, anything else ``runtime_error``
with the exception and the tail of the child's output.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

from kernelgen.errors import KernelgenError, Outcome

Device = Literal["interpreter", "cuda"]

DEFAULT_MEMORY_LIMIT_BYTES = 8 << 30
DEFAULT_FILE_SIZE_LIMIT_BYTES = 1 << 30
STDERR_TAIL_CHARS = 4000

# Environment variables the child may inherit; nothing else crosses.
INHERITED_ENVIRONMENT = ("PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH",
                         "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH",
                         "TRITON_LIBCUDA_PATH", "TRITON_LIBDEVICE_PATH", "LANG", "LC_ALL", "TZ",
                         "OMP_NUM_THREADS", "CUDA_DEVICE_ORDER", "KERNELGEN_GPU_LOCK")
# Names that look like credentials are dropped, even where allowlisted above.
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|^WANDB_|^HF_|^AWS_"
                         r"|^OPENAI|^ANTHROPIC|^GEMINI|^GOOGLE_|^AZURE_", re.IGNORECASE)
# Programs Triton runs to compile for a GPU: the only ones the child may start.


class SandboxError(KernelgenError):
    """The sandbox itself failed (it could not start the child, the child died before any
    answer code ran): the harness's fault, not the answer's."""

    stage = "sandbox"


@dataclass(frozen=True)
class SandboxResult:
    """What running an answer gave: ``outputs`` (CPU tensors, in the order returned) when
    ``outcome`` is ok, else ``error`` (the exception, one line) and the child's output tail
    (stdout and stderr together). With several calls, ``calls`` holds each call's outputs and
    ``modified`` the positions of the inputs each call wrote into; ``times_ms`` holds the
    CUDA-event times of the timed call's repetitions. With a ``refill``, ``again`` holds the
    outputs of the call made on refilled tensors and ``again_modified`` the inputs it wrote."""

    outcome: Outcome
    outputs: tuple[Any, ...] = ()
    error: str = ""
    stderr_tail: str = ""
    duration_s: float = 0.0
    network_isolation: str = ""
    calls: tuple[tuple[Any, ...], ...] = ()
    modified: tuple[tuple[int, ...], ...] = ()
    times_ms: tuple[float, ...] = ()
    again: tuple[Any, ...] = ()
    again_modified: tuple[int, ...] = ()

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.OK


# ---------------------------------------------------------------------------------------------
# The parent side


def default_device() -> Device:
    import torch

    return "cuda" if torch.cuda.is_available() else "interpreter"


@functools.lru_cache(maxsize=1)
def network_namespace_command() -> tuple[str, ...]:
    """The command prefix that runs a program without network (a new network namespace), or
    () where the system allows none (the audit hook is then the only guard)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return ()
    for flags in ("-n", "-rn"):
        try:
            probe = subprocess.run([unshare, flags, "true"], capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return (unshare, flags)
    return ()


def sandbox_environment(parent: Mapping[str, str], home: Path, device: Device,
                        triton_cache: Path) -> dict[str, str]:
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
    if device == "interpreter":
        env.update({"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"})
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


def default_triton_cache() -> Path:
    """Triton's compile cache for GPU runs, kept between runs (building Triton's launcher
    takes seconds): the only place outside its directory a GPU child may write."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kernelgen" / "sandbox-triton"


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
                         repetitions: int = 100, warmup: int = 10, memory_limit_bytes: int | None = None,
                         file_size_limit_bytes: int = DEFAULT_FILE_SIZE_LIMIT_BYTES,
                         startup_timeout_s: float = 300.0, triton_cache: Path | None = None) -> SandboxResult:
    """Call ``entry`` once per input list of ``calls`` in one sandboxed process (starting one
    costs seconds), noting which inputs each call modified; with ``timed_inputs`` on a GPU,
    then time ``entry(*timed_inputs)``: ``warmup`` calls, then ``repetitions`` calls each
    between CUDA events with the L2 cache flushed before it. With ``refill`` (values for each
    argument of the timed call where there is one, else of call ``refill_call``), the tensors of that
    call are then refilled in place with those values and ``entry`` called once more on them
    (``again``): an answer that keeps its results between calls, keyed by the tensors or their
    addresses, returns stale ones there (a timing cheat: the repetitions would do no work).

    ``memory_limit_bytes`` defaults to 8 GiB of address space in interpreter mode and to no
    limit on a GPU (see the module docstring).
    """
    import torch

    device = device or default_device()
    if memory_limit_bytes is None and device == "interpreter":
        memory_limit_bytes = DEFAULT_MEMORY_LIMIT_BYTES
    isolation = network_namespace_command()
    job_dir = Path(tempfile.mkdtemp(prefix="kernelgen-sandbox-"))
    try:
        cache = job_dir / ".triton" if device == "interpreter" else (triton_cache or default_triton_cache())
        cache.mkdir(parents=True, exist_ok=True)
        (job_dir / "answer.py").write_text(code)
        torch.save([list(inputs) for inputs in calls], job_dir / "inputs.pt")
        timed = timed_inputs is not None and device == "cuda"
        if timed:
            torch.save(list(timed_inputs), job_dir / "timed_inputs.pt")
        if refill is not None:
            torch.save(list(refill), job_dir / "refill.pt")
        ready_read, ready_write = os.pipe()
        job = {"entry": entry, "device": device, "ready_fd": ready_write,
               "repetitions": repetitions if timed else 0, "warmup": warmup, "refill": refill is not None,
               "refill_call": refill_call,
               "write_roots": [str(job_dir.resolve()), str(cache.resolve()), os.devnull],
               "torch_allowed": sorted(runtime_allowed_torch_names()),
               "compiler_tools": device == "cuda",
               "memory_limit_bytes": memory_limit_bytes, "file_size_limit_bytes": file_size_limit_bytes,
               "cpu_seconds": int(2 * (timeout_s + startup_timeout_s)) + 10}
        (job_dir / "job.json").write_text(json.dumps(job))
        command = [*isolation, sys.executable, "-s", "-B", "-m", "kernelgen.baseline.child", str(job_dir)]
        with open(job_dir / "output.log", "wb") as log:
            try:
                process = subprocess.Popen(command, cwd=job_dir, stdin=subprocess.DEVNULL, stdout=log,
                                           stderr=subprocess.STDOUT, pass_fds=(ready_write,),
                                           env=sandbox_environment(os.environ, job_dir, device, cache),
                                           start_new_session=True)
            finally:
                os.close(ready_write)
            try:
                result = _supervise(process, ready_read, job_dir, timeout_s, startup_timeout_s,
                                    "network namespace" if isolation else "audit hook")
                if refill is not None and result.ok:  # the refilled call is the last
                    return dataclasses.replace(result, calls=result.calls[:-1], modified=result.modified[:-1],
                                               again=result.calls[-1], again_modified=result.modified[-1])
                return result
            finally:
                os.close(ready_read)
                if process.poll() is None:
                    _kill_group(process)
    finally:
        shutil.rmtree(job_dir, ignore_errors=True)


def runtime_allowed_torch_names() -> frozenset[str]:
    """The torch functions and tensor methods the answer's code may call while it runs: those
    the static rules allow (:mod:`kernelgen.baseline.answer`), by their last name."""
    from kernelgen.baseline.answer import ALLOWED_TENSOR_METHODS, ALLOWED_TORCH_CALLS

    return frozenset({c.rsplit(".", 1)[1] for c in ALLOWED_TORCH_CALLS} | ALLOWED_TENSOR_METHODS)


def _supervise(process: subprocess.Popen, ready_fd: int, job_dir: Path, timeout_s: float,
               startup_timeout_s: float, isolation: str) -> SandboxResult:
    readable, _, _ = select.select([ready_fd], [], [], startup_timeout_s)
    if not readable or os.read(ready_fd, len(b"ready\n")) != b"ready\n":
        _kill_group(process)
        why = "did not start in time" if not readable else f"exited with status {process.wait()} before starting"
        raise SandboxError(f"the sandboxed process {why}: {_tail(job_dir)}", code="sandbox_start")
    started = time.monotonic()
    returncode = _wait_within(process, ready_fd, timeout_s)
    if returncode is None:
        _kill_group(process)
        return SandboxResult(Outcome.TIMEOUT, error=f"no result after {timeout_s:g} s", stderr_tail=_tail(job_dir),
                             duration_s=time.monotonic() - started, network_isolation=isolation)
    duration = time.monotonic() - started
    status = _read_status(job_dir / "status.json")
    if status is None:
        if returncode < 0:
            why = f"killed by {signal.Signals(-returncode).name}"
        else:
            why = f"exited with status {returncode}"
        return SandboxResult(Outcome.RUNTIME_ERROR, error=f"the process {why} without a result",
                             stderr_tail=_tail(job_dir), duration_s=duration, network_isolation=isolation)
    outcome, error, modified, times = status
    calls: tuple[tuple[Any, ...], ...] = ()
    if outcome is Outcome.OK:
        try:
            calls = _load_outputs(job_dir / "outputs.pt")
        except (OSError, RuntimeError, ValueError, TypeError, EOFError) as exc:
            outcome, error = Outcome.RUNTIME_ERROR, f"unreadable outputs: {type(exc).__name__}: {exc}"
    return SandboxResult(outcome, calls[0] if calls else (), error, _tail(job_dir), duration, isolation,
                         calls, modified, times)


_POLL_S = 0.1


def _wait_within(process: subprocess.Popen, ready_fd: int, timeout_s: float) -> int | None:
    """The child's exit status, or None past ``timeout_s`` seconds of its work: the time it
    reports waiting for its GPU turn (``wait`` ... ``turn`` on the ready pipe) does not count
    while another process really holds the turn (the lock cannot be taken here), so an answer
    that claims to wait gains nothing."""
    from kernelgen.gpu.timing import LOCK_WAIT_S, turn_taken_elsewhere

    left, waiting, waited = timeout_s, False, 0.0
    pending = b""
    while True:
        step = min(_POLL_S, max(left, 0.0))
        started = time.monotonic()
        readable, _, _ = select.select([ready_fd], [], [], step)
        if readable:
            data = os.read(ready_fd, 4096)
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                waiting = {b"wait": True, b"turn": False}.get(line, waiting)
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
        else:
            left -= spent
        if left <= 0:
            return None


def _read_status(path: Path) -> tuple[Outcome, str, tuple[tuple[int, ...], ...], tuple[float, ...]] | None:
    """The child's verdict, trusting nothing in it but a known outcome, a string, lists of
    input positions and a list of times."""
    try:
        data = json.loads(path.read_text())
        outcome = Outcome(data["outcome"])
        modified = tuple(tuple(int(i) for i in call) for call in data.get("modified", ()))
        times = tuple(float(t) for t in data.get("times_ms", ()))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if outcome not in _CHILD_OUTCOMES:
        return None
    return outcome, str(data.get("error", ""))[:STDERR_TAIL_CHARS], modified, times


def _load_outputs(path: Path) -> tuple[tuple[Any, ...], ...]:
    import torch

    calls = torch.load(path, weights_only=True, map_location="cpu")
    if not isinstance(calls, list) or not all(
            isinstance(outputs, list) and all(isinstance(t, torch.Tensor) for t in outputs) for outputs in calls):
        raise TypeError("outputs are not lists of tensors")
    return tuple(tuple(outputs) for outputs in calls)


def _tail(job_dir: Path) -> str:
    try:
        with open(job_dir / "output.log", "rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(0, log.tell() - STDERR_TAIL_CHARS))
            return log.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


_CHILD_OUTCOMES = (Outcome.OK, Outcome.RUNTIME_ERROR, Outcome.COMPILE_ERROR, Outcome.SYNTAX_ERROR, Outcome.NO_KERNEL,
                   Outcome.FORBIDDEN_CONSTRUCT, Outcome.TIMEOUT)
