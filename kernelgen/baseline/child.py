"""The sandbox's child: ``python -m kernelgen.baseline.child JOB_DIR`` runs a model's answer.

It sets its own (hard) resource limits, patches Triton's interpreter where Triton 3.6 is wrong
and makes it judge races between a launch's programs (CPU mode), installs the audit hook
(:class:`_Guard`) and the torch function mode (:class:`TorchGuard`), imports the answer and
calls its entry point on each call's inputs, and writes each call's outputs and inputs
(:class:`TensorWriter`), then the times and its outcome, to descriptors the parent (:mod:`kernelgen.baseline.sandbox`) passed it. Everything here runs in
the answer's process: the hook and the guard are advisory, and the parent trusts none of what
it reads (what each wall is for is said there; the boundary is :mod:`kernelgen.baseline.wall`).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import random
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from kernelgen.baseline import interpreter_fixes, interpreter_races
from kernelgen.baseline.interpreter_fixes import (patch_triton_interpreter_atomics, patch_triton_interpreter_dot,
                                                   patch_triton_interpreter_fp8, patch_triton_interpreter_index,
                                                   patch_triton_interpreter_reduce)
from kernelgen.baseline.interpreter_races import RACES, RaceFound, Spinning, patch_triton_interpreter_races
from kernelgen.baseline.timed import TimedCalls, Tools
from kernelgen.baseline.wall import on_gpu
from kernelgen.errors import KernelTimeout, Outcome
from kernelgen.gpu.timing import event_times, flush_buffer, has_own_memory, listen_for_waits

COMPILER_TOOLS = frozenset({"ptxas", "ptxas-blackwell", "cuobjdump", "nvdisasm", "cc", "gcc", "g++", "clang",
                            "clang++", "ldconfig"})
# Compiler options that run another program or load code: no compile Triton makes uses them.
COMPILER_RUNS_OTHERS = ("-wrapper", "--wrapper", "-B", "-specs", "--specs", "-fplugin", "-load", "-Xclang")

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
    if isinstance(exc, KernelTimeout):  # too slow to time within a GPU turn (kernelgen.gpu.timing)
        return Outcome.TIMEOUT
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
        if isinstance(argv, (list, tuple)) and any(
                isinstance(a, (str, bytes)) and os.fsdecode(a).startswith(COMPILER_RUNS_OTHERS) for a in argv[1:]):
            raise PermissionError(f"the sandbox does not allow {name} to run other programs")


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


# This module and the interpreter patches it installs (their frames run inside Triton's).
_OWN_FILES = frozenset(os.path.realpath(path) for path in (__file__, interpreter_fixes.__file__,
                                                           interpreter_races.__file__))


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
            elif path.startswith(self.torch_dir) or path in _OWN_FILES:
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
        if name == "copy_" and len(args) >= 2 and all(isinstance(a, torch.Tensor) for a in args[:2]) \
                and (args[1].dtype != args[0].dtype or args[1].device != args[0].device):
            # a move, as .to() is, not a conversion: an f32 result rounded to the f16 output on the host
            # (round 19) is the kernel's last step done by PyTorch
            return f"copy_() converts a tensor from {args[1].dtype} on {args[1].device} to {args[0].dtype} on " \
                   f"{args[0].device}"
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


def install_guard(write_roots: Sequence[str], compiler_tools: bool) -> None:
    """Install the audit hook in this process, for good: no network, no processes (but
    Triton's compilers if ``compiler_tools``), no writes outside ``write_roots``."""
    sys.addaudithook(_Guard(write_roots, compiler_tools))


def _apply_limits(job: Mapping[str, Any]) -> None:
    """Hard limits (soft = hard): lowering a hard limit cannot be undone without
    CAP_SYS_RESOURCE in the initial user namespace, which the sandbox never has."""
    import resource

    limits = [(resource.RLIMIT_CORE, 0), (resource.RLIMIT_FSIZE, job["file_size_limit_bytes"]),
              (resource.RLIMIT_CPU, job["cpu_seconds"])]
    if job["memory_limit_bytes"] is not None:
        kind = resource.RLIMIT_DATA if on_gpu(job["device"]) else resource.RLIMIT_AS
        limits.append((kind, job["memory_limit_bytes"]))
    if job.get("process_limit"):
        limits.append((resource.RLIMIT_NPROC, job["process_limit"]))
    for kind, value in limits:
        _, hard = resource.getrlimit(kind)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(kind, (value, value))


class TensorWriter:
    """Writes tensors to the results descriptor the parent passed, as records the parent reads
    with :func:`kernelgen.baseline.sandbox.read_tensors`: a 4-byte little-endian header length,
    a JSON header (call, role, position, dtype, shape), the raw bytes. Each is written as soon
    as its call returns (a later call may change the tensors). The torch functions it uses are
    taken when it is made, before the answer is imported."""

    def __init__(self, fd: int) -> None:
        import torch

        self.file = open(fd, "wb", closefd=False, buffering=1 << 20)
        self.uint8, self.is_tensor = torch.uint8, torch.is_tensor
        self.detach, self.cpu, self.contiguous = torch.Tensor.detach, torch.Tensor.cpu, torch.Tensor.contiguous
        self.reshape, self.view, self.numpy = torch.Tensor.reshape, torch.Tensor.view, torch.Tensor.numpy

    def write(self, call: int, role: str, position: int, tensor: Any) -> None:
        tensor = self.contiguous(self.cpu(self.detach(tensor)))
        header = json.dumps({"call": call, "role": role, "position": position,
                             "dtype": str(tensor.dtype).removeprefix("torch."), "shape": list(tensor.shape)}).encode()
        self.file.write(len(header).to_bytes(4, "little") + header)
        self.file.write(self.numpy(self.view(self.reshape(tensor, (-1,)), self.uint8)).data)

    def close(self) -> None:
        self.file.flush()


def report_compiles(tell: Callable[[bytes], Any]) -> None:
    """Have Triton's compiles told to the parent (``compile`` ... ``compiled``), whose clock for
    the answer's run stops meanwhile, up to a compile allowance: the pipeline gives compiling a
    limit of its own, apart from its runs, and a correct answer whose kernels take Triton 40 s
    each to compile (a top-k of 256 64-bit keys, once per specialization of its sizes) must not
    end in ``timeout`` for it. Triton's JIT looks ``triton.compiler.compile`` up when a kernel is
    first launched, so the wrapper is in place before the answer is imported."""
    import triton.compiler

    compile_ = triton.compiler.compile

    @functools.wraps(compile_)
    def reported(*args: Any, **kwargs: Any) -> Any:
        tell(b"compile\n")
        try:
            return compile_(*args, **kwargs)
        finally:
            tell(b"compiled\n")

    triton.compiler.compile = reported


def timed_and_checked(call: Callable[[], Any], timed: list[Any], other: list[Any] | None, checks: list[Any] | None,
                      tools: Tools, writer: TensorWriter, number: int, timer: Callable[..., list[float]],
                      synchronize: Callable[[], None] | None = None, mixed: list[bool] | None = None) -> list[float]:
    """The times of ``call`` (``entry(*timed)``) by ``timer`` (given the timed function, its
    prepare and its series: :func:`~kernelgen.gpu.timing.event_times`), its inputs varied (and
    those ``mixed`` names mixed) with ``other`` (another draw); with ``checks``, the checked
    repetitions' outputs and inputs after them written as calls ``number``, ``number + 1``, ...
    (:mod:`kernelgen.baseline.timed`)."""
    calls = TimedCalls(call, timed, other, checks, tools, returned_tensors, mixed)
    times = timer(calls, calls.prepare, calls.series)
    checked = calls.finish()
    if synchronize is not None:
        synchronize()
    for index, (outputs, after) in enumerate(checked, number):
        for position, tensor in enumerate(outputs):
            writer.write(index, "output", position, tensor)
        for position, value in enumerate(after):
            if writer.is_tensor(value):
                writer.write(index, "input", position, value)
    return times


def _child_main(job_dir: Path) -> int:
    job = json.loads((job_dir / "job.json").read_text())
    _apply_limits(job)
    import torch
    import triton  # imported before the guard: its import is trusted

    # What the child itself uses after the answer is imported, taken before: the answer runs
    # in this process and could replace torch's functions (advisory: the parent checks).
    synchronize, is_tensor, copy = torch.cuda.synchronize, torch.is_tensor, torch.Tensor.copy_
    cuda = on_gpu(job["device"])  # the tensors live on the GPU, compiled or interpreted
    if cuda:
        # Start CUDA and Triton's driver (which builds its helpers) before the guard.
        torch.cuda.init()
        triton.runtime.driver.active.get_current_device()
    if job["device"] == "cuda":
        report_compiles(lambda line: os.write(job["ready_fd"], line))
    else:
        patch_triton_interpreter_index()
        patch_triton_interpreter_fp8()
        patch_triton_interpreter_atomics()
        patch_triton_interpreter_reduce()
        patch_triton_interpreter_dot()
        patch_triton_interpreter_races()
        # Memory torch.empty hands out is NaN (integers: their largest value) instead of what
        # the host's allocator had there, often zeros: an element no program stores reads as
        # garbage, as on a GPU (only in the interpreter: a fill is a kernel, which a GPU would time).
        # torch.use_deterministic_algorithms would import Inductor, which sets a variable.
        torch._C._set_deterministic_algorithms(True, warn_only=True)
        torch._C._set_deterministic_fill_uninitialized_memory(True)
    def placed(inputs: list[Any]) -> list[Any]:
        return [x.cuda() if cuda and isinstance(x, torch.Tensor) else x for x in inputs]

    calls = [placed(inputs) for inputs in torch.load(job_dir / "inputs.pt", weights_only=True)]
    timed = placed(torch.load(job_dir / "timed_inputs.pt", weights_only=True)) if job["repetitions"] else None
    refill = placed(torch.load(job_dir / "refill.pt", weights_only=True)) if job.get("refill") else None
    checks = placed(torch.load(job_dir / "checks.pt", weights_only=True)) if job.get("checks") else None
    if timed is not None:  # none of it foreseeable by the answer (see kernelgen.baseline.timed)
        generator = torch.Generator(device="cuda")
        generator.manual_seed(int.from_bytes(os.urandom(8), "little"))
        tools = Tools.taken(generator, random.Random(os.urandom(16)))
    writer = TensorWriter(job["outputs_fd"])
    status_fd = job["status_fd"]
    # named by the parent: the child imports no more of kernelgen than this module (the rules
    # need the language, and pydantic with it, which a GPU runner's sandbox may not reach)
    torch_guard = TorchGuard(str(job_dir / "answer.py"), frozenset(job["torch_allowed"]))
    from torch.overrides import _get_current_function_mode_stack

    # The ready pipe stays open: a wait for the GPU turn is reported on it (the parent's clock
    # stops while another worker holds the turn; the parent checks that one does).
    ready_fd, write = job["ready_fd"], os.write
    listen_for_waits(lambda waiting: write(ready_fd, b"wait\n" if waiting else b"turn\n"))
    install_guard(job["write_roots"], job["compiler_tools"])
    os.write(ready_fd, b"ready\n")

    def report(status: dict[str, Any]) -> None:
        os.pwrite(status_fd, json.dumps(status).encode(), 0)

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

    def checked_call(number: int, inputs: list[Any]) -> None:
        """One call: its outputs and then its inputs as they are after it, for the parent."""
        outputs = returned_tensors(guarded(entry, *inputs))
        if RACES.found:  # an answer that caught RaceFound
            raise RaceFound(RACES.found)
        if RACES.spinning:  # or Spinning
            raise Spinning(RACES.spinning)
        if cuda:
            synchronize()
        for position, tensor in enumerate(outputs):
            writer.write(number, "output", position, tensor)
        for position, value in enumerate(inputs):
            if is_tensor(value):
                writer.write(number, "input", position, value)

    try:
        module = guarded(load_module, job_dir / "answer.py")
        entry = getattr(module, job["entry"], None)
        if not callable(entry):
            report({"outcome": Outcome.NO_KERNEL.value, "error": f"the answer defines no function {job['entry']!r}"})
            return 0
        for number, inputs in enumerate(calls):
            checked_call(number, inputs)
        times: list[float] = []
        if timed is not None:
            # Under the torch guard too: an answer that found it gone would compute with
            # PyTorch in the timed calls alone.
            times = timed_and_checked(
                lambda: guarded(entry, *timed), timed, refill, checks, tools, writer, len(calls),
                lambda fn, prepare, series: event_times(fn, flush_buffer(), job["repetitions"], job["warmup"], prepare,
                                                        series), synchronize, job.get("mixed"))
        elif refill is not None:
            # The same tensors as call refill_call's, their values replaced in place: an answer
            # that keeps results between calls (keyed by data_ptr) returns stale ones.
            again = calls[job["refill_call"]]
            for old, new in zip(again, refill):
                if is_tensor(old) and has_own_memory(old):
                    copy(old, new)
            checked_call(len(calls), again)
        writer.close()
        report({"outcome": Outcome.OK.value, "times_ms": times})
    except BaseException as exc:  # the answer's failure, whatever it is, is its outcome
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        if torch_guard.refused:  # refused, whatever the answer made of it
            report({"outcome": Outcome.FORBIDDEN_CONSTRUCT.value, "error": torch_guard.refused})
            return 0
        if RACES.found:  # found, whatever the answer made of the exception
            report({"outcome": Outcome.WRONG_RESULT.value, "error": RACES.found})
            return 0
        if RACES.spinning:  # the interpreter cannot run it: not judged without a GPU, as a timeout is
            report({"outcome": Outcome.TIMEOUT.value, "error": RACES.spinning})
            return 0
        shown = exc.__cause__ if type(exc).__name__ == "InterpreterError" and exc.__cause__ else exc
        message = " ".join(f"{type(shown).__name__}: {shown}".splitlines())[:2000]
        report({"outcome": classify(exc).value, "error": message})
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(Path(sys.argv[1])))
