"""Running a compiled kernel on the GPU: load its cubin with CuPy, launch it on torch's stream.

Data lives in torch tensors; CuPy is only the driver API (load a module from bytes, set a
function attribute, launch). What a launch must match is fixed by Triton's own launcher
(``triton/backends/nvidia/driver.py``), and a GPU test cross-checks the two on the same cubin:

* the kernel's parameters are the user's non-constexpr arguments in order, followed by TWO
  pointers: the global scratch and the profile scratch. Each is a buffer of
  ``size * programs`` bytes (the metadata gives the size per program and its alignment) or
  null when the size is 0;
* scalars are passed at their own width: i32 4 bytes, i64 8, f32 4, f16 and bf16 2 (their bit
  pattern), bool 1;
* block = 32 x num_warps threads; dynamic shared memory = ``metadata["shared"]``. Above 48 KB
  a kernel must opt in: the function's maximum dynamic shared memory is raised first;
* a grid with a zero dimension launches nothing.

A cubin is loaded from its bytes, never from a file path: the driver caches modules, and a
module loaded from a shared path can answer for another kernel. Loaded kernels are cached per
(cubin, parameters, specialization, device) within a process: two variants of one kernel can
compile to the same cubin (a ``divisible_by_16`` assumption that changed no instruction), and
the loaded kernel checks its own variant's assumptions at every launch.

A kernel that faults (an illegal address) poisons the CUDA context: every later CUDA call in
the process fails. Such errors become :class:`LaunchError` with code ``cuda_error``; the
executor (:mod:`kernelgen.gpu.executor`) replaces its process when it sees one.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import struct
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Collection, Mapping, Protocol, Sequence, Union

from kernelgen.check.checked import Checked
from kernelgen.errors import Diagnostic, LaunchError, require
from kernelgen.host.plan import LaunchPlan, plan_sequence

# A kernel may use this much dynamic shared memory without opting in to more.
DEFAULT_SHARED_LIMIT = 48 * 1024
# Kernels are compiled assuming every pointer argument is this aligned (tt.divisibility), and
# integer params named in ``divisible_by_16`` are multiples of it.
DIVISIBILITY = 16
# Loaded modules kept per process; the least recently used one is unloaded past this.
MAX_LOADED_KERNELS = 256

_SCALAR_CTYPES: dict[str, type[ctypes._SimpleCData]] = {
    "i32": ctypes.c_int32,
    "i64": ctypes.c_int64,
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
    "f16": ctypes.c_uint16,
    "bf16": ctypes.c_uint16,
    "bool": ctypes.c_uint8,
}
_INT_RANGES = {"i32": (-(2**31), 2**31 - 1), "i64": (-(2**63), 2**63 - 1)}


class KernelParameter(Protocol):
    """One parameter of a compiled kernel (:class:`kernelgen.lower.lowering.KernelParam`)."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...  # "ptr" or "scalar"

    @property
    def dtype(self) -> str: ...


class Launchable(Protocol):
    """What a launch needs from a compiled kernel (:class:`kernelgen.gpu.compile.CompiledKernel`
    has it): the cubin, Triton's metadata (with ``divisible_by_16``: the integer params the
    kernel was specialized on) and the parameters in order."""

    cubin: bytes

    @property
    def metadata(self) -> Mapping[str, Any]: ...

    @property
    def params(self) -> Sequence[KernelParameter]: ...


@dataclass(frozen=True)
class LaunchConfig:
    """How a kernel is launched, read from Triton's metadata."""

    name: str
    num_warps: int
    shared: int
    global_scratch_size: int
    global_scratch_align: int
    profile_scratch_size: int
    profile_scratch_align: int

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any]) -> LaunchConfig:
        if int(metadata.get("num_ctas", 1)) != 1:
            raise LaunchError(Diagnostic("", "unsupported_launch",
                                         f"kernel {metadata['name']} uses {metadata['num_ctas']} CTAs per "
                                         "program (thread block clusters); the launcher runs 1"))
        return cls(name=metadata["name"], num_warps=int(metadata["num_warps"]), shared=int(metadata["shared"]),
                   global_scratch_size=int(metadata.get("global_scratch_size", 0)),
                   global_scratch_align=int(metadata.get("global_scratch_align", 1)),
                   profile_scratch_size=int(metadata.get("profile_scratch_size", 0)),
                   profile_scratch_align=int(metadata.get("profile_scratch_align", 1)))

    @property
    def block_threads(self) -> int:
        return 32 * self.num_warps


def f16_bits(value: float) -> int:
    """The IEEE half-precision bit pattern of ``value`` (out of range: infinity)."""
    try:
        return struct.unpack("<H", struct.pack("<e", value))[0]
    except OverflowError:
        return 0xFC00 if value < 0 else 0x7C00


def bf16_bits(value: float) -> int:
    """The bfloat16 bit pattern of ``value`` as f32, rounded to nearest even (as a GPU
    converts it); NaN stays a quiet NaN."""
    if value != value:
        return 0x7FC0
    bits = ctypes.c_uint32.from_buffer(ctypes.c_float(value)).value
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16


def pack_scalar(name: str, dtype: str, value: Union[int, float, bool]) -> ctypes._SimpleCData:
    """A scalar kernel argument at the width the kernel reads it."""
    if dtype in _INT_RANGES:
        low, high = _INT_RANGES[dtype]
        if isinstance(value, float) or not low <= int(value) <= high:
            raise LaunchError(Diagnostic("", "bad_argument", f"param {name} = {value!r} is not an {dtype}"))
        return _SCALAR_CTYPES[dtype](int(value))
    if dtype == "f32":
        return ctypes.c_float(float(value))
    if dtype == "f64":
        return ctypes.c_double(float(value))
    if dtype == "f16":
        return ctypes.c_uint16(f16_bits(float(value)))
    if dtype == "bf16":
        return ctypes.c_uint16(bf16_bits(float(value)))
    if dtype == "bool":
        return ctypes.c_uint8(1 if value else 0)
    raise LaunchError(Diagnostic("", "bad_argument", f"param {name} has the unknown dtype {dtype!r}"))


def pack_pointer(name: str, value: Any) -> ctypes.c_uint64:
    """A pointer argument: a CUDA tensor's address, or a raw device address; 16-byte aligned,
    as the kernel was compiled to assume (a misaligned vector access would fault)."""
    if isinstance(value, int):
        address = value
    else:
        device = getattr(value, "device", None)
        if getattr(device, "type", None) != "cuda":
            raise LaunchError(Diagnostic("", "bad_argument",
                                         f"param {name} must be a CUDA tensor, got {type(value).__name__}"
                                         + (f" on {device}" if device is not None else "")))
        address = value.data_ptr()
    return _aligned(name, address)


def _aligned(name: str, address: int) -> ctypes.c_uint64:
    if address % DIVISIBILITY:
        raise LaunchError(Diagnostic("", "misaligned_pointer",
                                     f"param {name} points to {address:#x}, which is not {DIVISIBILITY}-byte aligned"))
    return ctypes.c_uint64(address)


def pack_arguments(params: Sequence[KernelParameter], values: Sequence[Any],
                   divisible_by_16: Collection[str] = ()) -> list[ctypes._SimpleCData]:
    """The user's arguments of a kernel, each at its parameter's width (scratch not included).
    Params in ``divisible_by_16`` must be nonzero multiples of 16: the kernel was specialized on it."""
    names = [p.name for p in params]
    if len(params) != len(values):
        raise LaunchError(Diagnostic("", "bad_argument", f"the kernel takes {len(params)} arguments {names}, "
                                                         f"got {len(values)}"))
    for name, value in zip(names, values):
        if name in divisible_by_16 and (int(value) % DIVISIBILITY or not int(value)):
            raise LaunchError(Diagnostic("", "specialization_mismatch",
                                         f"param {name} = {value} is not a nonzero multiple of {DIVISIBILITY}, but "
                                         "the kernel was compiled assuming it is (divisible_by_16)"))
    return [pack_pointer(p.name, value) if p.kind == "ptr" else pack_scalar(p.name, p.dtype, value)
            for p, value in zip(params, values)]


def scratch_bytes(size_per_program: int, grid: Sequence[int]) -> int:
    """The bytes of a scratch buffer: one slice per program of the grid, as Triton allocates."""
    return size_per_program * grid[0] * grid[1] * grid[2]


def is_cuda_error(exc: BaseException) -> bool:
    """Whether ``exc`` reports a CUDA error: from the driver or runtime through CuPy, or from
    torch (``torch.AcceleratorError``, a RuntimeError "CUDA error: ..." before torch 2.8)."""
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(exc, (cupy.cuda.driver.CUDADriverError, cupy.cuda.runtime.CUDARuntimeError)):
        return True
    return isinstance(exc, RuntimeError) and "CUDA error" in str(exc)


class cuda_errors:  # noqa: N801 -- used as a context manager, like contextlib's
    """Turn CUDA errors raised inside the block into :class:`LaunchError` (``cuda_error``).
    A class rather than a generator: it wraps every launch, and costs a fraction of one."""

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: BaseException | None, traceback: Any) -> None:
        if exc is not None and isinstance(exc, Exception) and not isinstance(exc, LaunchError) \
                and is_cuda_error(exc):
            raise LaunchError(Diagnostic("", "cuda_error", f"{self.what}: {exc}")) from exc


class GpuKernel:
    """A cubin loaded into one device's context, ready to launch.

    Get one through :func:`load_kernel`, which keeps them per :func:`loaded_key`; the CuPy
    module unloads when the object is dropped.
    """

    def __init__(self, kernel: Launchable, device: int) -> None:
        cupy = require("cupy", "running kernels on the GPU", "gpu")
        self.config = LaunchConfig.from_metadata(kernel.metadata)
        self.params = tuple(kernel.params)
        self.divisible_by_16 = frozenset(kernel.metadata.get("divisible_by_16", ()))
        self.device = device
        self._cupy = cupy
        with cuda_errors(f"loading kernel {self.config.name}"), _current_device(cupy, device):
            self._module = cupy.cuda.Module()
            self._module.load(bytes(kernel.cubin))
            self._function = self._module.get_function(self.config.name).ptr
            if self.config.shared > DEFAULT_SHARED_LIMIT:
                self._opt_in_shared_memory(cupy)

    def _opt_in_shared_memory(self, cupy: Any) -> None:
        runtime, driver = cupy.cuda.runtime, cupy.cuda.driver
        limit = runtime.deviceGetAttribute(runtime.cudaDevAttrMaxSharedMemoryPerBlockOptin, self.device)
        static = driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, self._function)
        if self.config.shared + static > limit:
            raise LaunchError(Diagnostic("", "out_of_shared_memory",
                                         f"kernel {self.config.name} needs {self.config.shared + static} bytes of "
                                         f"shared memory per block; this GPU allows {limit}: use smaller blocks "
                                         "or fewer pipeline stages"))
        driver.funcSetAttribute(self._function, driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                self.config.shared)

    def launch(self, grid: Sequence[int], args: Sequence[Any], stream: int | None = None) -> None:
        """Launch on ``stream`` (default: torch's current stream of the kernel's device), with
        ``args`` matching :attr:`params` (CUDA tensors for pointers, numbers for scalars).
        Asynchronous, like any launch: faults surface at the next synchronization."""
        grid = _grid3(grid)
        packed = pack_arguments(self.params, args, self.divisible_by_16)
        if 0 not in grid:
            self.launch_packed(grid, packed, stream)

    def prepare(self, grid: Sequence[int], sources: Sequence[tuple[str, Any]]) -> PreparedLaunch:
        """Launches of ``grid`` with the scalars of ``sources`` (:func:`argument_sources`),
        checked and packed now: see :class:`PreparedLaunch`."""
        return PreparedLaunch(self, grid, sources)

    def launch_packed(self, grid: tuple[int, int, int], packed: list[ctypes._SimpleCData],
                      stream: int | None = None) -> None:
        """Launch with arguments already packed (scratch pointers not included)."""
        import torch

        cupy = self._cupy
        if stream is None:
            # torch's current stream of the device as a raw handle: what Triton's own launcher
            # asks for (torch.cuda.current_stream builds a Python Stream object per call).
            stream = torch._C._cuda_getCurrentRawStream(self.device)
        config = self.config
        # Kept referenced until the launch returns; later work on the stream is ordered after
        # the kernel, so the caching allocator may reuse them once they are dropped.
        global_scratch = _scratch(torch, config.global_scratch_size, config.global_scratch_align, grid, self.device)
        profile_scratch = _scratch(torch, config.profile_scratch_size, config.profile_scratch_align, grid, self.device)
        packed = packed + [global_scratch[1], profile_scratch[1]]
        pointers = _pointer_array(len(packed))(*map(ctypes.addressof, packed))
        with cuda_errors(f"launching kernel {config.name}"), _current_device(cupy, self.device):
            cupy.cuda.driver.launchKernel(self._function, grid[0], grid[1], grid[2], config.block_threads, 1, 1,
                                          config.shared, stream, ctypes.addressof(pointers), 0)


class PreparedLaunch:
    """Launches of one loaded kernel with one grid and fixed scalars, checked and packed once.

    A wrapper called again with the same shapes and numbers launches the same way; per call,
    only its tensors' addresses change. Packing every argument (range and multiple-of-16 checks,
    ctypes conversions) was a third of a wrapper's 80-100 µs of Python per call on the H200.
    Each address is still checked for the alignment the kernel was compiled to assume.
    """

    def __init__(self, kernel: GpuKernel, grid: Sequence[int], sources: Sequence[tuple[str, Any]]) -> None:
        if len(sources) != len(kernel.params):
            raise LaunchError(Diagnostic("", "bad_argument", f"the kernel takes {len(kernel.params)} arguments "
                                                             f"{[p.name for p in kernel.params]}, got {len(sources)}"))
        self.kernel = kernel
        self.grid = _grid3(grid)
        self._template: list[Any] = []
        self._pointers: list[tuple[int, str, str]] = []  # (position, param, tensor name)
        for position, (param, (kind, source)) in enumerate(zip(kernel.params, sources)):
            if kind == "tensor":
                self._pointers.append((position, param.name, source))
                self._template.append(None)
            else:
                self._template.append(pack_arguments([param], [source], kernel.divisible_by_16)[0])

    @property
    def tensor_names(self) -> tuple[str, ...]:
        """The names of the tensors a launch takes (its pointer arguments), in order."""
        return tuple(name for _, _, name in self._pointers)

    def __call__(self, tensors: Mapping[str, Any]) -> None:
        """Launch on torch's current stream with ``tensors`` (the kernel's inputs and outputs
        by name: CUDA tensors on the kernel's device)."""
        if 0 in self.grid:
            return
        packed = list(self._template)
        for position, param, name in self._pointers:
            tensor = tensors.get(name)
            if tensor is None:
                raise LaunchError(Diagnostic("/params", "bad_argument", f"no tensor {name!r} was given for this launch"))
            packed[position] = _aligned(param, tensor.data_ptr())
        self.kernel.launch_packed(self.grid, packed)


def _grid3(grid: Sequence[int]) -> tuple[int, int, int]:
    return tuple(int(g) for g in grid) + (1,) * (3 - len(grid))  # type: ignore[return-value]


class _current_device:  # noqa: N801 -- a context manager, entered on every launch
    """Make the device's primary context (torch's) current on this thread, and the previous
    device current again afterwards. Setting the device even when it is already the current
    one is what makes the context current on a thread that has not used CUDA yet."""

    def __init__(self, cupy: Any, device: int) -> None:
        self.runtime, self.device = cupy.cuda.runtime, device

    def __enter__(self) -> None:
        self.previous = self.runtime.getDevice()
        self.runtime.setDevice(self.device)

    def __exit__(self, *exc_info: Any) -> None:
        if self.previous != self.device:
            self.runtime.setDevice(self.previous)


_NULL = ctypes.c_uint64(0)  # never written: one object serves every launch


@functools.lru_cache(maxsize=None)
def _pointer_array(length: int) -> type:
    """The ctypes array type of a launch's argument pointers (made once per length)."""
    return ctypes.c_void_p * length


def _scratch(torch: Any, size: int, align: int, grid: Sequence[int], device: int) -> tuple[Any, ctypes.c_uint64]:
    """A scratch buffer (kept alive by the caller) and its aligned address; null when unused."""
    total = scratch_bytes(size, grid)
    if total == 0:
        return None, _NULL
    buffer = torch.empty(total + align, dtype=torch.uint8, device=torch.device("cuda", device))
    return buffer, ctypes.c_uint64(-(-buffer.data_ptr() // align) * align)


_loaded: OrderedDict[tuple[Any, ...], GpuKernel] = OrderedDict()
_loaded_lock = threading.Lock()


def loaded_key(kernel: Launchable, device: int) -> tuple[Any, ...]:
    """What a loaded kernel is reused for: everything :class:`GpuKernel` takes from ``kernel``
    (the cubin, its entry's name, the parameters and the params assumed multiples of 16), and
    the device. The cubin alone is not enough: variants specialized on different params can
    compile to the same bytes, and a launch of one must not be checked against the other's
    assumptions (a correct kernel then failed with ``specialization_mismatch``)."""
    return (hashlib.sha256(kernel.cubin).hexdigest(), str(kernel.metadata["name"]),
            tuple((p.name, p.kind, p.dtype) for p in kernel.params),
            frozenset(kernel.metadata.get("divisible_by_16", ())), device)


def load_kernel(kernel: Launchable, device: int | None = None) -> GpuKernel:
    """The kernel loaded on ``device`` (default: torch's current device), loading it once per
    process."""
    import torch

    if device is None:
        device = torch.cuda.current_device()
    key = loaded_key(kernel, device)
    with _loaded_lock:
        if key in _loaded:
            _loaded.move_to_end(key)
            return _loaded[key]
        loaded = _loaded[key] = GpuKernel(kernel, device)
        if len(_loaded) > MAX_LOADED_KERNELS:
            # A launch of the evicted kernel may still be running: let it finish before its
            # module is unloaded.
            with cuda_errors("unloading a kernel"):
                torch.cuda.synchronize()
            _loaded.popitem(last=False)
        return loaded


def argument_sources(kernel: Launchable, plan: LaunchPlan) -> list[tuple[str, Any]]:
    """Where each of the kernel's arguments comes from, for launches of ``plan`` (and of any
    call with the same shapes and numbers): ``("tensor", name)`` for a pointer, bound to an
    input of the plan or to an output, ``("value", number)`` for a scalar."""
    names = [binding.name for binding in plan.checked.params]
    compiled_names = [p.name for p in kernel.params]
    if names != compiled_names:
        raise LaunchError(Diagnostic("/params", "param_mismatch",
                                     f"the compiled kernel takes {compiled_names}, the plan binds {names}: "
                                     "they come from different kernels"))
    outputs = {out.name for out in plan.kernel.outputs}
    sources: list[tuple[str, Any]] = []
    for param, value in zip(kernel.params, plan.param_values):
        if param.kind != "ptr":
            sources.append(("value", value))
        elif value in outputs or value in plan.inputs:
            sources.append(("tensor", value))
        else:
            raise LaunchError(Diagnostic("/params", "bad_argument", f"param {param.name} is bound to {value!r}, "
                                         "which is neither an input nor an output"))
    return sources


def resolve_arguments(sources: Sequence[tuple[str, Any]], tensors: Mapping[str, Any]) -> list[Any]:
    """The arguments of one launch: ``sources`` (:func:`argument_sources`) with the call's
    tensors (inputs and outputs by name)."""
    try:
        return [tensors[source] if kind == "tensor" else source for kind, source in sources]
    except KeyError as missing:
        raise LaunchError(Diagnostic("/params", "bad_argument",
                                     f"no tensor {missing.args[0]!r} was given for this launch")) from None


def plan_arguments(kernel: Launchable, plan: LaunchPlan, outputs: Mapping[str, Any]) -> list[Any]:
    """The kernel's arguments for a launch plan: the tensor a pointer parameter is bound to
    (an input of the plan or one of ``outputs``), the value of a scalar."""
    return resolve_arguments(argument_sources(kernel, plan), {**plan.inputs, **outputs})


def sequence_runner(kernels: Sequence[Launchable], plans: Sequence[LaunchPlan], outputs: Mapping[str, Any],
                    scratch: Callable[[], Mapping[str, Any]] | None = None) -> Callable[[], None]:
    """A call of a document's launches, in order on torch's current stream (one kernel: a
    sequence of one): each run takes fresh tensors from ``scratch`` (a program's scratch is
    allocated per call), then launches each kernel with the plan's inputs, ``outputs`` and
    the scratch. Arguments are resolved once; asynchronous, as :func:`launch`."""
    if len(kernels) != len(plans):
        raise LaunchError(Diagnostic("/launches", "param_mismatch",
                                     f"{len(kernels)} compiled kernels for {len(plans)} launches"))
    loaded = [load_kernel(kernel) for kernel in kernels]
    sources = [argument_sources(kernel, plan) for kernel, plan in zip(kernels, plans)]
    fixed = {**plans[0].inputs, **outputs}
    resolved = None if scratch is not None else [resolve_arguments(each, fixed) for each in sources]

    def run() -> None:
        if resolved is None:
            tensors = {**fixed, **scratch()}
            arguments = [resolve_arguments(each, tensors) for each in sources]
        else:
            arguments = resolved
        for kernel, plan, args in zip(loaded, plans, arguments):
            kernel.launch(plan.grid, args)
    return run


def launch(kernel: Launchable, plan: LaunchPlan, outputs: Mapping[str, Any]) -> None:
    """Launch ``kernel`` on the plan's grid, on torch's current stream, with the plan's inputs
    and ``outputs`` (name -> CUDA tensor). Asynchronous: synchronize to see faults."""
    load_kernel(kernel).launch(plan.grid, plan_arguments(kernel, plan, outputs))


def run_on_gpu(kernel: Union[Launchable, Sequence[Launchable]], checked: Checked,
               args: Union[Sequence[Any], Mapping[str, Any]], *, to_cpu: bool = False) -> dict[str, Any]:
    """Run a kernel (or a program: its compiled launches, in order) on a call's arguments:
    inputs move to the current GPU, outputs are allocated there pre-filled with poison (NaN for
    floats, so an element no store writes is noticed), scratch per call, and the launches are
    synchronized. ``to_cpu`` returns the outputs on the CPU (what crosses the executor's
    process boundary)."""
    import torch

    from kernelgen.interp.execute import allocate_outputs, allocate_scratch

    device = torch.device("cuda", torch.cuda.current_device())
    with cuda_errors(f"running kernel {checked.kernel.name}"):
        def to_device(value: Any) -> Any:
            return value.to(device) if isinstance(value, torch.Tensor) else value

        if isinstance(args, Mapping):
            moved: Union[list[Any], dict[str, Any]] = {name: to_device(value) for name, value in args.items()}
        else:
            moved = [to_device(value) for value in args]
        plans = plan_sequence(checked, moved)
        names = {out.name for out in checked.kernel.outputs}
        outputs = {n: t for n, t in allocate_outputs(plans[0], device=device).items() if n in names}
        kernels = list(kernel) if isinstance(kernel, (list, tuple)) else [kernel]
        sequence_runner(kernels, plans, outputs, lambda: allocate_scratch(checked, plans[0], device))()
        torch.cuda.synchronize(device)
        if to_cpu:
            outputs = {name: tensor.cpu() for name, tensor in outputs.items()}
    return outputs


def prepare_gpu() -> None:
    """Make torch's current device ready (CUDA initialized, CuPy imported): an executor's
    initializer, so a call's timeout does not pay for starting CUDA."""
    import torch

    require("cupy", "running kernels on the GPU", "gpu")
    with cuda_errors("initializing CUDA"):
        torch.cuda.init()
        torch.empty(1, device="cuda")


def device_target() -> str:
    """The current GPU's compile target, e.g. ``sm_90``."""
    import torch

    with cuda_errors("reading the GPU's compute capability"):
        major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"
