"""Compilation: a checked kernel -> TTGIR -> LLVM IR -> PTX -> cubin, through Triton's backend.

The TTIR module that :func:`kernelgen.lower.lowering.lower` builds goes through the NVIDIA backend's
own stages, from ``make_ttir`` on (inliner, canonicalizer, CSE, loop unrolling, ...), exactly
as ``triton.compile`` runs them on a ``@triton.jit`` function; compiling a ``.ttir`` file
instead would skip ``make_ttir``. The target is always explicit, so no GPU is needed.

Three things make it cheap and safe to call for every case of a benchmark run:

* an on-disk cache keyed by the content (AST, meta values, target, options and the exact
  compiler: Triton's version and the source of the lowering), written atomically, so any
  number of processes can share it;
* a persistent worker process that does the lowering and compiling, so that a C++ crash
  (segfault, abort) inside Triton fails that kernel with ``compiler_crashed`` and the next
  compile gets a fresh worker;
* ``in_process=True`` for benchmarks and tests that want to time or debug the stages alone.

Two backend options differ from Triton's defaults, so that results match the interpreter and
PyTorch's CUDA kernels: floating-point contraction is off (``enable_fp_fusion=False``: the
language has an explicit ``fma``, and ``x * y + z`` means two roundings), and libdevice does
not flush denormals to zero (``enable_reflect_ftz=False``).

Masked accesses are vectorized only where Triton can prove the mask constant over groups of
lanes, which needs the bound (``offsets < n``) to be a multiple of 16: pass the integer params
known to be such (and nonzero) as ``divisible_by_16`` (see :func:`divisible_params`), as Triton
specializes its own arguments. The cache keys on it; a launcher must pick the variant that fits its values.
"""

from __future__ import annotations

import atexit
import ctypes.util
import functools
import hashlib
import json
import os
import re
import struct
import sys
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Callable, Collection, Sequence, Union

from kernelgen.check.checker import CheckedKernel, check_target
from kernelgen.check.checked import Checked, device_dependent, launches_of
from kernelgen.errors import CompileError, CompileTimeout, Diagnostic, KernelgenError, KernelTimeout, LaunchError
from kernelgen.gpu.executor import Executor
from kernelgen.host.plan import LaunchPlan

if TYPE_CHECKING:
    from kernelgen.lower.lowering import KernelParam

TARGETS = {"sm_80": 80, "sm_86": 86, "sm_89": 89, "sm_90": 90}
DEFAULT_TARGET = "sm_90"
STAGES = ("ttir", "ttgir", "llir", "ptx", "cubin")
# A compile that takes longer than this is stuck; its worker is replaced.
COMPILE_TIMEOUT_S = 300.0
_METADATA_KEYS = ("name", "num_warps", "num_ctas", "num_stages", "shared", "tmem_size",
                  "global_scratch_size", "global_scratch_align", "profile_scratch_size",
                  "profile_scratch_align", "arch", "ptx_version", "enable_fp_fusion")


@dataclass
class CompiledKernel:
    """Every stage's output of one kernel for one target, and what a launcher needs to know.

    ``metadata`` holds the launch facts (``num_warps``, ``shared`` memory bytes, the global and
    profile scratch sizes and alignments Triton 3.x kernels take as two extra trailing pointer
    arguments), ``divisible_by_16`` (the integer params this variant assumes multiples of 16)
    and ``params``: the kernel's own parameters in order, as ``[name, kind, dtype]``.
    """

    name: str
    target: str
    ttir: str
    ttgir: str
    llir: str
    ptx: str
    cubin: bytes
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def params(self) -> tuple[KernelParam, ...]:
        """``(name, kind, dtype)`` of each parameter in order; kind is "ptr" or "scalar"."""
        from kernelgen.lower.lowering import KernelParam

        return tuple(KernelParam(*p) for p in self.metadata["params"])

    def emit(self, stage: str) -> str | bytes:
        """The output of one stage by name (``ttir`` ... ``cubin``)."""
        return getattr(self, stage)


# ---------------------------------------------------------------------------------------------
# Options


@functools.lru_cache(maxsize=1)
def default_target() -> str:
    """The target of the GPU present, else sm_90 (compiling needs no GPU)."""
    # Without a CUDA driver there is no GPU to ask about: skip importing torch (seconds).
    if "torch" not in sys.modules and ctypes.util.find_library("cuda") is None:
        return DEFAULT_TARGET
    try:
        import torch
    except ImportError:
        return DEFAULT_TARGET
    if not torch.cuda.is_available():
        return DEFAULT_TARGET
    major, minor = torch.cuda.get_device_capability()
    name = f"sm_{major}{minor}"
    if name not in TARGETS:
        # A cubin for another target would not load here: say so now, not at launch.
        raise CompileError(Diagnostic("", "bad_target", f"the GPU here is {name}; kernelgen compiles for "
                                      f"{sorted(TARGETS)}: pass one explicitly to compile for another GPU"))
    return name


@dataclass(frozen=True)
class CompileOptions:
    target: str
    num_warps: int
    num_stages: int
    divisible_by_16: tuple[str, ...] = ()

    @property
    def capability(self) -> int:
        return TARGETS[self.target]


def resolve_options(checked: CheckedKernel, target: str | None, num_warps: int | None,
                    num_stages: int | None, divisible_by_16: Collection[str] = ()) -> CompileOptions:
    """Validated compile options; a bad one is a CompileError (``bad_target``, ``bad_option``)."""
    if target is None:
        target = default_target()
    else:
        spelled = re.fullmatch(r"sm_?(\d+)", target.strip().lower())
        target = f"sm_{spelled.group(1)}" if spelled else target
    if target not in TARGETS:
        raise CompileError(Diagnostic("", "bad_target", f"unknown target {target!r}; use one of {sorted(TARGETS)}"))
    warps = checked.kernel.num_warps if num_warps is None else num_warps
    if warps not in (1, 2, 4, 8, 16):
        raise CompileError(Diagnostic("/num_warps", "bad_option", f"num_warps is 1, 2, 4, 8 or 16, got {warps}"))
    num_stages = checked.kernel.num_stages if num_stages is None else num_stages
    if not 1 <= num_stages <= 8:
        raise CompileError(Diagnostic("", "bad_option", f"num_stages is between 1 and 8, got {num_stages}"))
    return CompileOptions(target, warps, num_stages, tuple(sorted(set(divisible_by_16))))


def divisible_params(plan: LaunchPlan) -> tuple[str, ...]:
    """The integer params whose values in this launch are nonzero multiples of 16: a kernel
    compiled with them as ``divisible_by_16`` is valid for this launch, vectorizes masked
    accesses, and divides by them without a guard for zero (which would hide their divisibility)."""
    return tuple(binding.name for binding, value in zip(plan.checked.params, plan.param_values)
                 if binding.tensor is None and binding.type.dtype in ("i32", "i64")
                 and isinstance(value, int) and value and value % 16 == 0 and not device_dependent(binding.value))


# ---------------------------------------------------------------------------------------------
# The backend stages, in this process


def compile_in_process(checked: CheckedKernel, options: CompileOptions) -> CompiledKernel:
    """Lower and compile in the calling process (no cache, no crash isolation)."""
    from triton.backends.compiler import GPUTarget, Language
    from triton.compiler.compiler import make_backend
    from triton.runtime.errors import PTXASError

    from kernelgen.lower.lowering import capture_native_output, lower, parse_mlir_diagnostics

    lowered = lower(checked, options.divisible_by_16)
    gpu = GPUTarget("cuda", options.capability, 32)
    backend = make_backend(gpu)
    triton_options = backend.parse_options({"num_warps": options.num_warps, "num_stages": options.num_stages,
                                            "enable_fp_fusion": False, "enable_reflect_ftz": False})
    stages: dict[str, Callable[[Any, dict], Any]] = {}
    backend.add_stages(stages, triton_options, Language.TRITON)
    metadata: dict[str, Any] = {"target": gpu, **triton_options.__dict__}
    outputs: dict[str, Any] = {}
    module: Any = lowered.module
    for stage in STAGES:
        with capture_native_output() as output:
            try:
                module = stages[stage](module, metadata)
                failure = None
            except PTXASError as exc:
                failure = CompileError(Diagnostic("", "ptxas_failed", str(exc).strip()))
            except Exception as exc:
                failure = exc
        if failure is not None:
            if isinstance(failure, KernelgenError):
                raise failure
            diagnostics = parse_mlir_diagnostics(output.text, f"{stage}_failed")
            if not diagnostics:
                diagnostics = [Diagnostic("", f"{stage}_failed", f"{type(failure).__name__}: {failure}")]
            raise CompileError(diagnostics) from failure
        outputs[stage] = module if isinstance(module, (str, bytes)) else str(module)
    facts = {key: metadata[key] for key in _METADATA_KEYS if key in metadata}
    facts["target"] = options.target
    facts["divisible_by_16"] = list(options.divisible_by_16)
    facts["params"] = [list(p) for p in lowered.params]
    return CompiledKernel(name=metadata["name"], target=options.target, ttir=outputs["ttir"],
                          ttgir=outputs["ttgir"], llir=outputs["llir"], ptx=outputs["ptx"],
                          cubin=outputs["cubin"], metadata=facts)


# ---------------------------------------------------------------------------------------------
# The cache


def cache_directory(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """``cache_dir``, else ``compile/`` in kernelgen's cache folder (:func:`kernelgen.env.cache_root`)."""
    from kernelgen.env import cache_root

    return Path(cache_dir) if cache_dir is not None else cache_root() / "compile"


@functools.lru_cache(maxsize=1)
def compiler_fingerprint() -> str:
    """What the output depends on besides the input: Triton's version and kernelgen's own
    lowering and compiling code (hashed, so an edit to them invalidates the cache)."""
    from importlib.metadata import version

    import kernelgen

    digest = hashlib.sha256()
    digest.update(f"triton={version('triton')};kernelgen={kernelgen.__version__};".encode())
    package = Path(__file__).resolve().parents[1]
    # Every module of the stages a compiled kernel depends on, by package, so that a new one
    # cannot be forgotten here (the block lowering once was), and this module.
    paths = [p for stage in ("lang", "check", "lower") for p in (package / stage).glob("*.py")]
    for path in sorted(paths) + [Path(__file__).resolve()]:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_key(checked: CheckedKernel, options: CompileOptions) -> str:
    kernel = json.dumps(checked.kernel.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    meta = json.dumps(checked.meta, sort_keys=True)
    text = "\n".join([kernel, meta, options.target, str(options.num_warps), str(options.num_stages),
                      ",".join(options.divisible_by_16), compiler_fingerprint()])
    return hashlib.sha256(text.encode()).hexdigest()


# A cache entry: a 4-byte big-endian header length, a JSON header (name, target, metadata and
# each stage's [offset, length]), then the stages' bytes. Reading one is a file read and a
# small JSON parse; no pickle, so a cache directory is only data.
_HEADER = struct.Struct(">I")


def _encode_entry(kernel: CompiledKernel) -> bytes:
    blobs = [(stage, kernel.cubin if stage == "cubin" else getattr(kernel, stage).encode()) for stage in STAGES]
    sections, offset = {}, 0
    for stage, blob in blobs:
        sections[stage] = [offset, len(blob)]
        offset += len(blob)
    header = json.dumps({"name": kernel.name, "target": kernel.target, "metadata": kernel.metadata,
                         "sections": sections}).encode()
    return _HEADER.pack(len(header)) + header + b"".join(blob for _, blob in blobs)


def _decode_entry(data: bytes) -> CompiledKernel | None:
    try:
        (size,) = _HEADER.unpack_from(data)
        header = json.loads(data[_HEADER.size:_HEADER.size + size])
        body = memoryview(data)[_HEADER.size + size:]
        stages: dict[str, Any] = {}
        for stage in STAGES:
            offset, length = header["sections"][stage]
            if offset + length > len(body):
                return None
            blob = bytes(body[offset:offset + length])
            stages[stage] = blob if stage == "cubin" else blob.decode()
        return CompiledKernel(name=header["name"], target=header["target"], metadata=header["metadata"], **stages)
    except (ValueError, KeyError, TypeError, struct.error, UnicodeDecodeError):
        return None


def _entry_path(directory: Path, key: str) -> Path:
    return directory / key[:2] / f"{key}.kgc"


def cache_load(directory: Path, key: str) -> CompiledKernel | None:
    """The cached kernel, or None (absent, or unreadable: it will be rewritten)."""
    try:
        data = _entry_path(directory, key).read_bytes()
    except OSError:
        return None
    return _decode_entry(data)


def cache_store(directory: Path, key: str, kernel: CompiledKernel) -> None:
    """Write an entry atomically: a private temporary file, then ``os.replace``. Concurrent
    writers of one key write the same bytes; the last rename wins and readers never see a
    partial file. A cache that cannot be written is skipped, not an error."""
    path = _entry_path(directory, key)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(temporary, "wb") as handle:
            handle.write(_encode_entry(kernel))
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------------
# The worker process


_WORKER_LOG: BinaryIO | None = None  # in the worker: where its output and native captures go


def _start_worker(log_path: str) -> None:
    """The worker's initializer: its stdout and stderr go to ``log_path`` for its whole life,
    and every capture of native output writes there too, so what Triton printed before a crash
    can be reported."""
    global _WORKER_LOG
    from kernelgen.lower.lowering import set_native_output_sink

    _WORKER_LOG = open(log_path, "w+b")
    for fd in (1, 2):
        os.dup2(_WORKER_LOG.fileno(), fd)
    set_native_output_sink(_WORKER_LOG)


def compile_job(function: Callable[..., Any], args: tuple[Any, ...]) -> tuple[str, Any]:
    """One job in the worker, its log emptied first. An error comes back as a value, its class
    and diagnostics, which the parent rebuilds: error classes may take other constructor
    arguments than their diagnostics, so they are not pickled themselves."""
    if _WORKER_LOG is not None:
        _WORKER_LOG.seek(0)
        _WORKER_LOG.truncate()
    try:
        return "ok", function(*args)
    except KernelgenError as exc:
        return "error", (type(exc), exc.diagnostics)
    except (Exception, SystemExit) as exc:  # a sys.exit() in the compiler must not end the caller
        return "error", (CompileError, [Diagnostic("", "compiler_error", f"{type(exc).__name__}: {exc}")])


def job_result(status: str, value: Any) -> Any:
    """The value of a :func:`compile_job`, or its error raised again."""
    if status == "ok":
        return value
    error_type, diagnostics = value
    # Rebuilt through the base initializer: subclasses may take other arguments.
    error = error_type.__new__(error_type)
    KernelgenError.__init__(error, diagnostics)
    raise error


class CompilerProcess:
    """A persistent spawned process that runs compile jobs one at a time: an
    :class:`~kernelgen.gpu.executor.Executor` whose child keeps what it prints in a log file.

    :meth:`call` runs a picklable function there. When the process dies during a job (a
    segfault or abort in C++), the job fails with ``compiler_crashed`` and the next call
    starts a fresh process; a job that runs past its timeout is killed the same way
    (``compile_timeout``, outcome ``timeout``). Either message ends with what the compiler printed last.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._executor: Any = None
        self._log_path: str | None = None

    @property
    def pid(self) -> int | None:
        return self._executor.pid if self._executor is not None else None

    def close(self) -> None:
        with self._lock:
            if self._executor is not None:
                self._executor.close()
            if self._log_path is not None:
                Path(self._log_path).unlink(missing_ok=True)
            self._executor = self._log_path = None

    def call(self, function: Callable[..., Any], *args: Any, timeout: float = COMPILE_TIMEOUT_S) -> Any:
        with self._lock:
            if self._executor is None:
                handle, self._log_path = tempfile.mkstemp(prefix="kernelgen-compiler-", suffix=".log")
                os.close(handle)
                self._executor = Executor(name="compiler", initializer=functools.partial(_start_worker, self._log_path))
            try:
                status, value = self._executor.call(compile_job, function, args, timeout=timeout)
            except KernelTimeout:
                raise CompileTimeout(Diagnostic("", "compile_timeout", self._with_output(
                    f"the compiler ran for more than {timeout:g} s and was stopped"))) from None
            except LaunchError as exc:
                raise CompileError(Diagnostic("", "compiler_crashed", self._with_output(
                    exc.diagnostics[0].message))) from None
        return job_result(status, value)

    def _with_output(self, message: str) -> str:
        """``message`` and the tail of what the stopped worker printed during its last job."""
        try:
            printed = Path(self._log_path or "").read_bytes()[-4000:].decode("utf-8", errors="replace").strip()
        except OSError:
            printed = ""
        return f"{message}; its last output:\n{printed}" if printed else message


_WORKER = CompilerProcess()
# Before multiprocessing's own exit handler (handlers run last-registered first): stop the
# worker and remove its log file.
atexit.register(_WORKER.close)


def compiler_process() -> CompilerProcess:
    """This process's compile worker (started on first use)."""
    return _WORKER


# ---------------------------------------------------------------------------------------------
# The entry point


def compile_kernel(checked: CheckedKernel, target: str | None = None, num_warps: int | None = None,
                   num_stages: int | None = None, *, divisible_by_16: Collection[str] = (), cache: bool = True,
                   cache_dir: str | os.PathLike[str] | None = None, in_process: bool = False) -> CompiledKernel:
    """Compile a checked kernel to cubin for ``target`` (``sm_80``, ``sm_86``, ``sm_89``,
    ``sm_90``; default: the GPU present, else sm_90).

    ``num_warps`` and ``num_stages`` default to the kernel's own; ``divisible_by_16`` names integer params whose
    values are nonzero multiples of 16 (a specialization, see :func:`divisible_params`). Compiling
    happens in this process's worker (one job at a time), or with ``in_process=True`` in the
    calling thread, which must then be the only one compiling (output capture is per process).
    Results are cached on disk (``cache_dir``, else ``compile/`` in ``$KERNELGEN_CACHE_DIR``,
    else in ``~/.cache/kernelgen``) unless ``cache=False``.
    Raises :class:`~kernelgen.errors.LoweringError` or :class:`CompileError`.
    """
    options = resolve_options(checked, target, num_warps, num_stages, divisible_by_16)
    check_target(checked, options.capability)
    if not cache:
        return _compile(checked, options, in_process)
    directory = cache_directory(cache_dir)
    key = cache_key(checked, options)
    compiled = cache_load(directory, key)
    if compiled is None:
        compiled = _compile(checked, options, in_process)
        cache_store(directory, key, compiled)
    return compiled


def _compile(checked: CheckedKernel, options: CompileOptions, in_process: bool) -> CompiledKernel:
    """Lower and compile; a kernel whose ``flatten`` loops make Triton fail is compiled again
    without them (:func:`without_flatten`), and its metadata says so (``flatten_dropped``)."""
    run = compile_in_process if in_process else functools.partial(_WORKER.call, compile_in_process)
    try:
        return run(checked, options)
    except CompileError as error:
        # flatten is a speed hint: Triton 3.6's fuse-nested-loops pass crashes on some nests the
        # language allows (an inner loop of two or more trips carrying a scalar it computes from
        # constants, touching no memory), and a correct kernel must not fail for asking.
        if not has_flatten(checked):
            raise
        compiled = run(without_flatten(checked), options)
        why = " ".join(error.diagnostics[0].message.split())[:200]
        compiled.metadata["flatten_dropped"] = f"compiled without flatten: with it Triton failed ({error.code}: {why})"
        return compiled


def has_flatten(checked: CheckedKernel) -> bool:
    from kernelgen.check.sequence import nodes
    from kernelgen.lang import nodes as L

    return any(isinstance(node, L.For) and node.flatten for node, _ in nodes(checked.kernel.body, "/body"))


def without_flatten(checked: CheckedKernel) -> CheckedKernel:
    """The checked kernel with every ``flatten`` off: the same loops, pipelined one by one (paths,
    and so the checker's types, do not change)."""
    import dataclasses

    from kernelgen.lang.parse import kernel_from_obj

    def plain(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: (False if k == "flatten" and node.get("op") == "for" else plain(v)) for k, v in node.items()}
        if isinstance(node, list):
            return [plain(v) for v in node]
        return node

    document = checked.kernel.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return dataclasses.replace(checked, kernel=kernel_from_obj(plain(document)))


def document_text(compiled: Union[CompiledKernel, Sequence[CompiledKernel]], key: str) -> str:
    """A compiled document's ``ttir`` or ``ptx`` as one text: a kernel's own, or each launch's
    of a program under a ``// launch i: name`` line."""
    if not isinstance(compiled, (list, tuple)):
        return getattr(compiled, key)
    return "\n".join(f"// launch {i}: {each.name}\n{getattr(each, key)}" for i, each in enumerate(compiled))


def compile_document(checked: Checked, target: str | None = None, plans: Sequence[LaunchPlan] | None = None,
                     **options: Any) -> Union[CompiledKernel, list[CompiledKernel]]:
    """:func:`compile_kernel` for a checked document: a kernel's variant, or the list of a
    program's (one per launch, in order; each cached under its own kernel). With ``plans``
    (one per launch), each launch's multiples of 16 are specialized as :func:`divisible_params`
    finds them; ``options`` are compile_kernel's (num_warps, num_stages apply to every launch)."""
    launches = launches_of(checked)
    built = [compile_kernel(each, target=target, **options,
                            **({} if plans is None else {"divisible_by_16": divisible_params(plan)}))
             for each, plan in zip(launches, plans or [None] * len(launches))]
    return built if checked.kernel.is_program else built[0]
