"""Run a model's Triton answer in a subprocess that cannot do harm.

The raw-LLM baseline executes code a model wrote. :func:`run_in_sandbox` runs it in a child
process (``python -m kernelgen.sandbox JOB_DIR``) with these walls, each tested:

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
  (its import and every call) under a torch function mode (:class:`TorchGuard`) that refuses any
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
around it): :mod:`kernelgen.baseline`'s static rules run first and refuse the imports and
builtins that would. A harness running as root should run as an unprivileged user for the
operating system's own file permissions to apply.

Without a GPU, the answer runs in Triton's interpreter (``TRITON_INTERPRET=1``) on CPU
tensors, patched where Triton 3.6's interpreter is wrong (loop bounds with NumPy >= 2.4, fp8
rounding, atomics of broadcast values: the ``patch_triton_interpreter_*`` functions); with
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
from kernelgen.timing import event_times, flush_buffer

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
COMPILER_TOOLS = frozenset({"ptxas", "ptxas-blackwell", "cuobjdump", "nvdisasm", "cc", "gcc", "g++", "clang",
                            "clang++", "ldconfig"})


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
    roots = [str(Path(__file__).resolve().parent.parent)]
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
        command = [*isolation, sys.executable, "-s", "-B", "-m", "kernelgen.sandbox", str(job_dir)]
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


def _supervise(process: subprocess.Popen, ready_fd: int, job_dir: Path, timeout_s: float,
               startup_timeout_s: float, isolation: str) -> SandboxResult:
    readable, _, _ = select.select([ready_fd], [], [], startup_timeout_s)
    if not readable or os.read(ready_fd, 16) != b"ready\n":
        _kill_group(process)
        why = "did not start in time" if not readable else f"exited with status {process.wait()} before starting"
        raise SandboxError(f"the sandboxed process {why}: {_tail(job_dir)}", code="sandbox_start")
    started = time.monotonic()
    try:
        returncode = process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
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
                   Outcome.FORBIDDEN_CONSTRUCT)


# ---------------------------------------------------------------------------------------------
# The child side


def patch_triton_interpreter_index() -> None:
    """Make Triton 3.6's interpreter run loops whose bounds are kernel arguments with NumPy >= 2.4.

    The interpreter turns a scalar (a one-element array) into a Python int with ``int()``,
    which NumPy 2.4 refuses for arrays of rank 1 (triton-lang/triton#9171), so
    ``range(0, N, BLOCK)`` fails. The interpreter installs its tensor methods on each launch;
    this adds the fixed ``__index__`` after them (and is undone with them).
    """
    from triton.runtime import interpreter

    if getattr(interpreter._patch_lang_tensor, "kernelgen_index_fix", False):
        return
    install = interpreter._patch_lang_tensor

    def install_with_index(tensor, scope) -> None:
        install(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    install_with_index.kernelgen_index_fix = True
    interpreter._patch_lang_tensor = install_with_index


# fp8 limits and torch's dtypes of the conversions patch_triton_interpreter_fp8 takes over.
_FP8_MAX = {"fp8e4nv": 448.0, "fp8e5": 57344.0}


def patch_triton_interpreter_fp8() -> None:
    """Make Triton 3.6's interpreter round f16/bf16/f32 -> fp8 (e4m3, e5m2) casts as the GPU does.

    Its bit-level conversion adds the first cut-off bit to the mantissa without carrying into
    the exponent and without ties-to-even (f16 124.0 -> e4m3 64.0, 1.95 -> 1.0; the GPU and
    torch give 128.0 and 2.0), so a correct quantization kernel fails in the baseline's CPU
    mode. These casts go through torch instead: round to nearest even, saturating at the
    format's largest finite value (inf too, as cvt.rn.satfinite), NaN as the canonical 0x7f
    (as the H200 gives it). Other conversions
    keep the interpreter's code.
    """
    import numpy as np
    import torch
    from triton.runtime import interpreter

    if getattr(interpreter._convert_float, "kernelgen_fp8_fix", False):
        return
    convert = interpreter._convert_float
    sources = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    targets = {"fp8e4nv": torch.float8_e4m3fn, "fp8e5": torch.float8_e5m2}

    def convert_fp8(input, input_dtype, output_dtype, rounding_mode):
        source, target = sources.get(input_dtype.name), targets.get(output_dtype.name)
        if source is None or target is None:
            return convert(input, input_dtype, output_dtype, rounding_mode)
        array = np.ascontiguousarray(input)
        values = torch.frombuffer(bytearray(array.tobytes()), dtype=source).reshape(array.shape).float()
        limit = _FP8_MAX[output_dtype.name]
        bits = values.clamp(-limit, limit).to(target).view(torch.uint8)
        return torch.where(values.isnan(), torch.tensor(0x7F, dtype=torch.uint8), bits).numpy()

    convert_fp8.kernelgen_fp8_fix = True
    convert_fp8.original = convert
    interpreter._convert_float = convert_fp8


def patch_triton_interpreter_atomics() -> None:
    """Make Triton 3.6's interpreter apply an atomic with each lane's own value where the value
    (or the pointers, mask or compared values) is a broadcast view.

    Its C++ ``atomic_rmw`` and ``atomic_cas`` (python/src/interpreter.cc) reshape each operand to
    one dimension and then read ``reshaped.data()`` as a dense buffer, lane ``i`` at element
    ``i``. NumPy reshapes without a copy where it can, so a block that is a broadcast of fewer
    elements (``np.broadcast_to`` is how the interpreter broadcasts: a [1, 1] value made [2, 1],
    a [1] one made [4]) keeps stride 0, and the lanes after the first read the memory past its
    element: garbage, so a kernel correct on the GPU fails (a random tile kernel xor-ing one
    value per column into ``col_acc0`` from two rows of each block; ``tl.load`` and ``tl.store``
    index by strides and are right). These two builder methods pass dense copies instead.
    """
    import dataclasses

    import numpy as np
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    if getattr(builder.create_atomic_rmw, "kernelgen_atomics_fix", False):
        return
    rmw, cas = builder.create_atomic_rmw, builder.create_atomic_cas

    def dense(handle):
        return dataclasses.replace(handle, data=np.ascontiguousarray(handle.data))

    def create_atomic_rmw(self, rmw_op, ptr, val, mask, sem, scope):
        return rmw(self, rmw_op, dense(ptr), dense(val), dense(mask), sem, scope)

    def create_atomic_cas(self, ptr, cmp, val, sem, scope):
        return cas(self, dense(ptr), dense(cmp), dense(val), sem, scope)

    for patched, original in ((create_atomic_rmw, rmw), (create_atomic_cas, cas)):
        patched.kernelgen_atomics_fix = True
        patched.original = original
    builder.create_atomic_rmw = create_atomic_rmw
    builder.create_atomic_cas = create_atomic_cas


def patch_triton_interpreter_reduce() -> None:
    """Make Triton 3.6's interpreter reduce with a custom combine function in log2(n) block
    steps instead of one Python call per element.

    ``tl.reduce`` with a combine function other than Triton's own sum, min, max and argmin/argmax
    (kernelgen's NaN-propagating maximum, its argmax with torch's tie order) calls the combine
    function once per element, each call a dozen interpreted operations: a 1024-lane reduction
    costs about 0.3 s, and a row kernel seconds per program (the baseline's row_top2 spent 55 s
    there). Triton requires the combine function to be associative and the GPU combines in a
    tree; this combines neighbouring pairs as blocks (the earlier one on the left, an odd last
    element carried over), so an associative function gives the sequential result. A combine
    function that takes a block's truth (Python control flow on its arguments, which the GPU
    compiles as scalar code, and which the interpreter answers True for any block) or raises
    reduces the interpreter's own way.
    """
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    operations = interpreter.ReduceOps
    if getattr(operations.generic_reduce, "kernelgen_reduce_fix", False):
        return
    sequential = operations.generic_reduce

    def combine_pairs(self, data: list, dtypes: list) -> list:
        """Each operand's data, reduced along its first axis to one element there."""
        while data[0].shape[0] > 1:
            even = 2 * (data[0].shape[0] // 2)
            combined = self.combine_fn.fn(*[self.to_tensor(d[0:even:2], t) for d, t in zip(data, dtypes)],
                                          *[self.to_tensor(d[1:even:2], t) for d, t in zip(data, dtypes)])
            combined = combined if isinstance(combined, tuple) else (combined,)
            data = [np.concatenate([np.broadcast_to(c.handle.data if hasattr(c, "handle")
                                                    else np.asarray(getattr(c, "value", c)), d[0:even:2].shape)
                                    .astype(d.dtype), d[even:]]) for c, d in zip(combined, data)]
        return data

    def scalar_truth(self) -> bool:
        if self.handle.data.size != 1:
            raise TypeError("the truth of a block")
        return bool(self.handle.data)

    def tree_reduce(self, input):
        blocks, axis = self.unravel(input, self.axis)
        dtypes = [block.dtype for block in blocks]
        truth = tl.core.tensor.__bool__
        tl.core.tensor.__bool__ = scalar_truth
        try:
            data = combine_pairs(self, [np.moveaxis(block.handle.data, axis, 0) for block in blocks], dtypes)
        except Exception:  # noqa: BLE001 - the sequential reduction raises what is really wrong
            data = None
        finally:
            tl.core.tensor.__bool__ = truth
        if data is None:
            return sequential(self, input)
        results = []
        for d, t in zip(data, dtypes):
            d = d[0]
            if self.keep_dims:
                d = np.expand_dims(d, axis)
            elif self.axis is None:
                d = d.item()
            results.append(self.to_tensor(d, t))
        return results

    tree_reduce.kernelgen_reduce_fix = True
    tree_reduce.original = sequential
    operations.generic_reduce = tree_reduce


def load_module(path: Path, name: str = "answer"):
    """Import a Python file as a module (Triton reads a kernel's source from its file)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def returned_tensors(result: Any) -> list[Any]:
    """An entry point's result as a list of tensors (one tensor, or a tuple or list of them)."""
    import torch

    values = list(result) if isinstance(result, (tuple, list)) else [result]
    if not values or not all(isinstance(v, torch.Tensor) for v in values):
        kinds = ", ".join(type(v).__name__ for v in values) or "nothing"
        raise TypeError(f"the entry point must return a tensor or a tuple of tensors, returned {kinds}")
    return values


def classify(exc: BaseException) -> Outcome:
    """The outcome of an exception raised while running an answer."""
    if isinstance(exc, SyntaxError):
        return Outcome.SYNTAX_ERROR
    try:
        from triton.compiler.errors import CompilationError
    except ImportError:
        return Outcome.RUNTIME_ERROR
    cause = exc
    while cause is not None:
        if isinstance(cause, CompilationError):
            return Outcome.COMPILE_ERROR
        cause = cause.__cause__
    # In the interpreter, Triton's frontend raises the errors a compile would have: the
    # innermost frame is then inside triton/language.
    innermost = exc.__cause__ or exc
    frames = []
    tb = innermost.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    language = os.sep + os.path.join("triton", "language") + os.sep
    if frames and language in frames[-1]:
        return Outcome.COMPILE_ERROR
    return Outcome.RUNTIME_ERROR


class _Guard:
    """The audit hook: refuses network access, process creation and writes outside
    ``write_roots``. It cannot be removed once installed."""

    _WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    _PATH_EVENTS = {  # event -> indices of its path arguments
        "os.remove": (0,), "os.rmdir": (0,), "os.mkdir": (0,), "os.rename": (0, 1), "os.link": (0, 1),
        "os.symlink": (1,), "os.truncate": (0,), "os.chmod": (0,), "os.chown": (0,), "os.utime": (0,),
        "os.chflags": (0,), "os.setxattr": (0,), "os.removexattr": (0,), "shutil.copyfile": (1,),
        "shutil.copytree": (1,), "shutil.move": (1,), "shutil.rmtree": (0,), "shutil.chown": (0,),
        "shutil.unpack_archive": (1,), "shutil.copymode": (1,), "shutil.copystat": (1,),
    }
    _DENIED = {"os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.kill",
               "os.killpg", "signal.pthread_kill", "socket.connect", "socket.bind", "socket.sendto",
               "socket.sendmsg", "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr",
               "socket.getnameinfo", "socket.sethostname", "pty.spawn"}

    def __init__(self, write_roots: Sequence[str], compiler_tools: bool) -> None:
        self.write_roots = [os.path.realpath(r) for r in write_roots]
        self.compiler_tools = compiler_tools
        self.busy = False

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if self.busy:
            return
        if event == "open":
            self.check_open(args)
        elif event in self._PATH_EVENTS:
            for i in self._PATH_EVENTS[event]:
                if i < len(args):
                    self.check_write(args[i], event)
        elif event == "subprocess.Popen":
            self.check_process(args)
        elif event == "os.posix_spawn":
            # subprocess starts an allowed compiler with posix_spawn (path, argv, env): the
            # same check as its Popen event, which comes first.
            self.check_process(args)
        elif event == "socket.__new__":
            import socket

            if len(args) > 1 and args[1] not in (socket.AF_UNIX, -1):
                raise PermissionError("the sandbox has no network")
        elif event in self._DENIED:
            raise PermissionError(f"the sandbox does not allow {event}")

    def check_open(self, args: tuple[Any, ...]) -> None:
        path, mode, flags = (tuple(args) + (None, None, 0))[:3]
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
                  (isinstance(flags, int) and flags & self._WRITE_FLAGS)
        if writing:
            self.check_write(path, "writing")

    def check_write(self, path: Any, what: str) -> None:
        if isinstance(path, int) or path is None:
            return
        self.busy = True
        try:
            resolved = os.path.realpath(os.fsdecode(os.fspath(path)))
        finally:
            self.busy = False
        if not any(resolved == root or resolved.startswith(root + os.sep) for root in self.write_roots):
            raise PermissionError(f"the sandbox does not allow {what} {resolved!r} (outside its directory)")

    def check_process(self, args: tuple[Any, ...]) -> None:
        executable, argv = (tuple(args) + (None, None))[:2]
        program = executable or (argv[0] if isinstance(argv, (list, tuple)) and argv else argv)
        name = os.path.basename(os.fsdecode(program)) if isinstance(program, (str, bytes, os.PathLike)) else ""
        if not (self.compiler_tools and name in COMPILER_TOOLS):
            raise PermissionError(f"the sandbox does not allow starting {name or 'a process'}")


class TorchComputeRefused(RuntimeError):
    """Raised in the child where the answer's own code calls torch to compute."""


# Tensor attributes that reorder the elements (the static rules' reordering attributes).
_REORDERING_GETTERS = frozenset({"T", "mT", "H", "mH"})
# Calls whose value argument must be a number, not a tensor (filling from an input's element).
_VALUE_CALLS = frozenset({"fill_", "full", "full_like", "new_full", "tensor"})


def _torch_function_name(func: Any) -> str:
    """``exp`` for torch.exp and Tensor.exp; ``get:shape`` for the getter of ``.shape``."""
    name = getattr(func, "__name__", "") or ""
    if name == "__get__":
        return "get:" + str(getattr(getattr(func, "__self__", None), "__name__", ""))
    return name


class TorchGuard:
    """PyTorch at run time: which torch calls of the answer's own code are allowed (see the
    module docstring). ``refused`` holds the first refusal, kept even where the answer catches
    the exception; :meth:`mode` is the torch function mode that applies it."""

    def __init__(self, answer_file: str, allowed: frozenset[str]) -> None:
        import torch
        import triton

        self.answer_file = os.path.realpath(answer_file)
        self.allowed = allowed
        self.torch_dir = os.path.dirname(os.path.realpath(torch.__file__)) + os.sep
        self.triton_dir = os.path.dirname(os.path.realpath(triton.__file__)) + os.sep
        self.stdlib_dir = os.path.dirname(os.path.realpath(os.__file__)) + os.sep
        self.refused: str | None = None
        self._files: dict[str, str] = {}

    def _kind(self, filename: str) -> str:
        kind = self._files.get(filename)
        if kind is None:
            path = os.path.realpath(filename) if not filename.startswith("<") else filename
            if path.startswith(self.triton_dir):
                kind = "triton"
            elif path.startswith(self.torch_dir) or path == os.path.realpath(__file__):
                kind = "skip"
            elif path.startswith(self.stdlib_dir) and os.sep + "site-packages" + os.sep not in path \
                    and os.sep + "dist-packages" + os.sep not in path:
                kind = "skip"
            else:
                kind = "answer"  # the answer's module, and any other code it reaches
            self._files[filename] = kind
        return kind

    def from_answer(self) -> bool:
        """Whether the torch call being made comes from the answer's code: the innermost frame
        outside torch, the standard library and this module is not Triton's."""
        frame = sys._getframe(2)
        while frame is not None:
            kind = self._kind(frame.f_code.co_filename)
            if kind != "skip":
                return kind == "answer"
            frame = frame.f_back
        return False

    def refusal(self, func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str | None:
        import torch

        name = _torch_function_name(func)
        if name.startswith("get:"):
            attribute = name[4:]
            return f".{attribute} reorders a tensor" if attribute in _REORDERING_GETTERS else None
        if name not in self.allowed:
            return f"{name}() computes with PyTorch"
        values = [*args[1:], *kwargs.values()] if name != "tensor" else [*args, *kwargs.values()]
        if name in _VALUE_CALLS and any(isinstance(v, torch.Tensor) for v in values):
            return f"{name}() takes its value from a tensor"
        return None

    def check_result(self, func: Any, args: tuple[Any, ...], result: Any) -> str | None:
        import torch

        name = _torch_function_name(func)
        if name in ("to", "cuda", "type") and args and isinstance(args[0], torch.Tensor) \
                and isinstance(result, torch.Tensor) and result is not args[0] \
                and (result.dtype != args[0].dtype or result.device != args[0].device):
            return f".{name}() converts a tensor to {result.dtype} on {result.device}"
        return None

    def refuse(self, why: str) -> TorchComputeRefused:
        message = (f"{why} in the answer's code while it runs: the kernel must do the work (the launcher "
                   "only allocates, reshapes and launches)")
        self.refused = self.refused or message
        return TorchComputeRefused(message)

    def mode(self):
        from torch.overrides import TorchFunctionMode

        guard = self

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                checked = guard.from_answer()
                if checked:
                    why = guard.refusal(func, args, kwargs)
                    if why is not None:
                        raise guard.refuse(why)
                result = func(*args, **kwargs)
                if checked:
                    why = guard.check_result(func, args, result)
                    if why is not None:
                        raise guard.refuse(why)
                return result

        return Mode()


def runtime_allowed_torch_names() -> frozenset[str]:
    """The torch functions and tensor methods the answer's code may call while it runs: those
    the static rules allow (:mod:`kernelgen.baseline`), by their last name."""
    from kernelgen.baseline import ALLOWED_TENSOR_METHODS, ALLOWED_TORCH_CALLS

    return frozenset({c.rsplit(".", 1)[1] for c in ALLOWED_TORCH_CALLS} | ALLOWED_TENSOR_METHODS)


def install_guard(write_roots: Sequence[str], compiler_tools: bool) -> None:
    """Install the audit hook in this process, for good: no network, no processes (but
    Triton's compilers if ``compiler_tools``), no writes outside ``write_roots``."""
    sys.addaudithook(_Guard(write_roots, compiler_tools))


def _apply_limits(job: Mapping[str, Any]) -> None:
    import resource

    limits = [(resource.RLIMIT_CORE, 0), (resource.RLIMIT_FSIZE, job["file_size_limit_bytes"]),
              (resource.RLIMIT_CPU, job["cpu_seconds"])]
    if job["memory_limit_bytes"] is not None:
        kind = resource.RLIMIT_AS if job["device"] == "interpreter" else resource.RLIMIT_DATA
        limits.append((kind, job["memory_limit_bytes"]))
    for kind, value in limits:
        _, hard = resource.getrlimit(kind)
        resource.setrlimit(kind, (value if hard == resource.RLIM_INFINITY else min(value, hard), hard))


def _same_bytes(before: Any, after: Any) -> bool:
    """Whether an input came back bit for bit (NaN payloads and -0.0 included); with functions
    taken before the answer was imported (it could replace torch's)."""
    return _EQUAL(_VIEW(_RESHAPE(before, (-1,)), _UINT8), _VIEW(_RESHAPE(after, (-1,)), _UINT8))


def _child_main(job_dir: Path) -> int:
    global _EQUAL, _VIEW, _RESHAPE, _UINT8
    job = json.loads((job_dir / "job.json").read_text())
    _apply_limits(job)
    import torch
    import triton  # imported before the guard: its import is trusted

    # What the child itself uses after the answer is imported, taken before: the answer runs
    # in this process and could replace torch's functions.
    _EQUAL, _VIEW, _RESHAPE, _UINT8 = torch.equal, torch.Tensor.view, torch.reshape, torch.uint8
    clone, detach, to_cpu, save, synchronize = (torch.Tensor.clone, torch.Tensor.detach, torch.Tensor.cpu,
                                                torch.save, torch.cuda.synchronize)
    is_tensor, copy = torch.is_tensor, torch.Tensor.copy_
    cuda = job["device"] == "cuda"
    if cuda:
        # Start CUDA and Triton's driver (which builds its helpers) before the guard.
        torch.cuda.init()
        triton.runtime.driver.active.get_current_device()
    else:
        patch_triton_interpreter_index()
        patch_triton_interpreter_fp8()
        patch_triton_interpreter_atomics()
        patch_triton_interpreter_reduce()
    def placed(inputs: list[Any]) -> list[Any]:
        return [x.cuda() if cuda and isinstance(x, torch.Tensor) else x for x in inputs]

    calls = [placed(inputs) for inputs in torch.load(job_dir / "inputs.pt", weights_only=True)]
    timed = placed(torch.load(job_dir / "timed_inputs.pt", weights_only=True)) if job["repetitions"] else None
    refill = placed(torch.load(job_dir / "refill.pt", weights_only=True)) if job.get("refill") else None
    # named by the parent: the child imports no more of kernelgen than this module (the rules
    # need the language, and pydantic with it, which a GPU runner's sandbox may not reach)
    torch_guard = TorchGuard(str(job_dir / "answer.py"), frozenset(job["torch_allowed"]))
    from torch.overrides import _get_current_function_mode_stack

    install_guard(job["write_roots"], job["compiler_tools"])
    os.write(job["ready_fd"], b"ready\n")
    os.close(job["ready_fd"])

    def guarded(function, *args):
        """``function(*args)`` under the torch guard, which must still be in place after it."""
        mode = torch_guard.mode()
        with mode:
            value = function(*args)
            if not _get_current_function_mode_stack() or _get_current_function_mode_stack()[-1] is not mode:
                torch_guard.refuse("changing PyTorch's function modes")
        if torch_guard.refused:
            raise TorchComputeRefused(torch_guard.refused)
        return value

    def checked_call(inputs: list[Any]) -> tuple[list[Any], list[int]]:
        """One call: its outputs on the CPU, and the positions of the inputs it modified."""
        before = [clone(x) if is_tensor(x) else x for x in inputs]
        outputs = returned_tensors(guarded(entry, *inputs))
        if cuda:
            synchronize()
        modified = [i for i, (old, new) in enumerate(zip(before, inputs)) if is_tensor(old) and not _same_bytes(old, new)]
        return [to_cpu(detach(t)) for t in outputs], modified

    status = job_dir / "status.json"
    try:
        module = guarded(load_module, job_dir / "answer.py")
        entry = getattr(module, job["entry"], None)
        if not callable(entry):
            status.write_text(json.dumps({"outcome": Outcome.NO_KERNEL.value,
                                          "error": f"the answer defines no function {job['entry']!r}"}))
            return 0
        results, modified = [], []
        for inputs in calls:
            outputs, changed = checked_call(inputs)
            results.append(outputs)
            modified.append(changed)
        times = (event_times(lambda: entry(*timed), flush_buffer(), job["repetitions"], job["warmup"])
                 if timed is not None else [])
        if refill is not None:
            # The same tensors as before (the timed call's, else call refill_call's), their
            # values replaced in place: an answer that keeps results between calls (keyed by
            # data_ptr) returns stale ones.
            again = timed if timed is not None else calls[job["refill_call"]]
            for old, new in zip(again, refill):
                if is_tensor(old):
                    copy(old, new)
            outputs, changed = checked_call(again)
            results.append(outputs)
            modified.append(changed)
        save(results, job_dir / "outputs.pt")
        status.write_text(json.dumps({"outcome": Outcome.OK.value, "modified": modified, "times_ms": times}))
    except BaseException as exc:  # the answer's failure, whatever it is, is its outcome
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        if torch_guard.refused:  # refused, whatever the answer made of it
            status.write_text(json.dumps({"outcome": Outcome.FORBIDDEN_CONSTRUCT.value,
                                          "error": torch_guard.refused}))
            return 0
        shown = exc.__cause__ if type(exc).__name__ == "InterpreterError" and exc.__cause__ else exc
        message = " ".join(f"{type(shown).__name__}: {shown}".splitlines())[:2000]
        status.write_text(json.dumps({"outcome": classify(exc).value, "error": message}))
    return 0


_EQUAL = _VIEW = _RESHAPE = _UINT8 = None


if __name__ == "__main__":
    sys.exit(_child_main(Path(sys.argv[1])))
