"""The host side of a kernel: from a call's arguments to a launch.

A kernel's AST says what its call takes (inputs with symbolic shapes), what it returns
(outputs with shapes as host expressions), the grid and what each kernel parameter is bound
to. :func:`plan_launch` turns concrete arguments into a :class:`LaunchPlan` (size values,
output shapes, grid, parameter values); the interpreter, the GPU runtime and the bounds
analysis all start from it, so the three agree on what a call means.

Host expressions (output and scratch shapes, grids, param values), evaluated before the launch:

* integer literals, size names, scalar inputs, meta names (not params), host values,
  ``stride``/``numel``, ``num_sms``, and ``add sub mul idiv cdiv rem maximum minimum`` of
  integers (needs_int); comparisons give bool, ``and``/``or`` take bools (needs_bool), ``where``
  of a bool cond picks x or y of one kind (dtype_mismatch); anything else is device_only; a tensor
  name only as a param's whole value;
* integers are unbounded; ``idiv`` truncates, ``cdiv`` is ``(a + b - 1) idiv b``,
  a division by zero is division_by_zero.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence, Union

from kernelgen.lang import nodes as L
from kernelgen.check.checker import CheckedKernel, is_literal, literal_value
from kernelgen.check.checked import Checked, launches_of
from kernelgen.check.sequence import relocated
from kernelgen.errors import Diagnostic, HostError

Scalar = Union[int, float, bool]

# What one call's outputs and scratch may take together, checked before anything is allocated:
# past it a call is refused (too_large) instead of being left to the allocator (a harness crash
# on the CPU, an out-of-memory failure on a GPU). The interpreter keeps about as much again in
# its access records, and a GPU's verification holds the scratch of its two runs at once.
MEMORY_BUDGET = {"cpu": 2 << 30, "gpu": 32 << 30}

# ``num_sms`` where no GPU runs the launch (the interpreter, the bounds analysis's plans):
# small, so that a persistent kernel's loops walk several tiles at the interpreter's sizes.
INTERPRETER_NUM_SMS = 3

TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64", "i32": "int32",
                "i64": "int64", "bool": "bool", "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2",
                "i8": "int8", "u8": "uint8", "i16": "int16"}


@functools.lru_cache(maxsize=None)  # the interpreter asks for every value it converts
def torch_dtype(dtype: str):
    import torch

    return getattr(torch, TORCH_DTYPES[dtype])


@functools.lru_cache(maxsize=None)
def is_fp8(torch_dtype_obj: Any) -> bool:
    """Whether a torch dtype is one of the 1-byte floats (fp8), which torch cannot compare,
    clamp, unique or promote with other dtypes."""
    return torch_dtype_obj.is_floating_point and torch_dtype_obj.itemsize == 1


def dtype_name(torch_dtype_obj: Any) -> str | None:
    text = str(torch_dtype_obj).removeprefix("torch.")
    return next((k for k, v in TORCH_DTYPES.items() if v == text), None)


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for dim in reversed(shape):
        strides.append(step)
        step *= max(dim, 1)
    return tuple(reversed(strides))


@dataclass
class HostEnv:
    """The values host expressions are evaluated in."""

    sizes: dict[str, int]
    scalars: dict[str, Scalar]
    meta: dict[str, int]
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    strides: dict[str, tuple[int, ...]] = field(default_factory=dict)
    num_sms: int = INTERPRETER_NUM_SMS


def device_num_sms(device: Any) -> int:
    """``num_sms`` for launches on ``device``: its multiprocessor count on a CUDA device,
    :data:`INTERPRETER_NUM_SMS` elsewhere."""
    import torch

    device = torch.device(device)
    if device.type != "cuda":
        return INTERPRETER_NUM_SMS
    return _cuda_num_sms(device.index if device.index is not None else torch.cuda.current_device())


@functools.lru_cache(maxsize=None)
def _cuda_num_sms(index: int) -> int:
    import torch

    return torch.cuda.get_device_properties(index).multi_processor_count


def eval_host(expr: L.Expr, env: HostEnv, path: str = "") -> Union[Scalar, str]:
    """Evaluate a host expression; a tensor name evaluates to itself."""
    if is_literal(expr):
        return literal_value(expr)
    if isinstance(expr, str):
        for table in (env.sizes, env.scalars, env.meta):
            if expr in table:
                return table[expr]
        if expr in env.shapes:
            return expr
        raise HostError(Diagnostic(path, "undefined_name", f"{expr!r} has no value on the host"))
    if isinstance(expr, L.DeviceInfo):
        return env.num_sms
    if isinstance(expr, L.TensorInfo):
        if expr.op == "numel":
            return math.prod(env.shapes[expr.of])
        return env.strides[expr.of][expr.dim]
    if isinstance(expr, L.Binary):
        a = eval_host(expr.lhs, env, path + "/lhs")
        b = eval_host(expr.rhs, env, path + "/rhs")
        if expr.op in ("idiv", "cdiv", "rem") and b == 0:
            raise HostError(Diagnostic(path, "division_by_zero", f"{expr.op} by zero on the host"))
        return _HOST_OPS[expr.op](a, b)
    if isinstance(expr, L.Where):
        taken = "x" if eval_host(expr.cond, env, path + "/cond") else "y"
        return eval_host(getattr(expr, taken), env, f"{path}/{taken}")
    raise HostError(Diagnostic(path, "device_only", f"{getattr(expr, 'op', expr)!r} is not a host expression"))


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_HOST_OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "idiv": _trunc_div,
    "cdiv": lambda a, b: _trunc_div(a + b - 1, b),
    "rem": lambda a, b: a - b * _trunc_div(a, b),
    "maximum": max,
    "minimum": min,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "and": lambda a, b: bool(a and b),
    "or": lambda a, b: bool(a or b),
}


@dataclass
class LaunchPlan:
    """Everything needed to run a kernel on concrete arguments."""

    checked: CheckedKernel
    env: HostEnv
    inputs: dict[str, Any]
    output_shapes: dict[str, tuple[int, ...]]
    grid: tuple[int, int, int]
    param_values: list[Union[Scalar, str]]

    @property
    def kernel(self) -> L.Kernel:
        return self.checked.kernel

    @property
    def num_programs(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


def _bind_args(kernel: L.Kernel, args: Union[Sequence[Any], Mapping[str, Any]]) -> dict[str, Any]:
    """The kernel's own arguments (tensors and scalars; host-only arguments are consumed by
    :mod:`kernelgen.host.wrapper` before this)."""
    plain = [i for i in kernel.inputs if i.is_plain]
    names = [i.name for i in plain]
    if isinstance(args, Mapping):
        names += float_items(kernel)  # a floats argument's scalars, bound by name
        args = {**{i.name: i.default for i in plain if i.optional and i.name not in args}, **args}
        missing = [n for n in names if n not in args]
        extra = [n for n in args if n not in names]
        if missing or extra:
            raise HostError(Diagnostic("/inputs", "bad_arguments",
                                       f"missing {missing}, unexpected {extra} (inputs are {names})"))
        return {n: args[n] for n in names}
    if len(args) != len(names):
        raise HostError(Diagnostic("/inputs", "bad_arguments",
                                   f"{kernel.name} takes {len(names)} arguments {names}, got {len(args)}"))
    return dict(zip(names, args))


def float_items(kernel: L.Kernel) -> list[str]:
    """The scalars role ``floats`` arguments name, one per item."""
    return [item for i in kernel.inputs if i.role == "floats" for item in i.items or ()]


def sizes_from_shapes(kernel: L.Kernel, shapes: Mapping[str, Sequence[int]]) -> dict[str, int]:
    """Bind each size name from the input shapes, checking that they agree."""
    sizes: dict[str, int] = {}
    for i, inp in enumerate(kernel.inputs):
        if inp.shape is None or not inp.is_plain:
            continue
        shape = tuple(shapes[inp.name])
        if len(shape) != len(inp.shape):
            raise HostError(Diagnostic(f"/inputs/{i}/shape", "bad_arguments",
                                       f"{inp.name} has rank {len(shape)}, the kernel expects {len(inp.shape)}"))
        for j, (dim, actual) in enumerate(zip(inp.shape, shape)):
            where = f"/inputs/{i}/shape/{j}"
            if isinstance(dim, int):
                if dim != actual:
                    raise HostError(Diagnostic(where, "bad_arguments",
                                               f"{inp.name}.shape[{j}] is {actual}, the kernel expects {dim}"))
            elif sizes.setdefault(dim, actual) != actual:
                raise HostError(Diagnostic(where, "bad_arguments",
                                           f"size {dim} is {sizes[dim]} elsewhere but {inp.name}.shape[{j}] is {actual}"))
    return sizes


def plan_for_sizes(checked: CheckedKernel, sizes: Mapping[str, int],
                   scalars: Mapping[str, Scalar] | None = None) -> LaunchPlan:
    """A plan from size values alone (no tensors): for the bounds analysis and for drawing
    inputs of a given shape."""
    kernel = checked.kernel
    # A floats argument's items: sizes alone do not say them, and no size or shape depends on them.
    scalars = {**{item: 0.0 for item in float_items(kernel)}, **(scalars or {})}
    env = HostEnv(dict(sizes), scalars, dict(checked.meta))
    for inp in kernel.inputs:
        if inp.is_plain and inp.shape is not None:
            shape = tuple(d if isinstance(d, int) else env.sizes[d] for d in inp.shape)
            env.shapes[inp.name] = shape
            env.strides[inp.name] = contiguous_strides(shape)
    return _finish_plan(checked, env, {})


def _finish_plan(checked: CheckedKernel, env: HostEnv, inputs: dict[str, Any]) -> LaunchPlan:
    kernel = checked.kernel
    output_shapes: dict[str, tuple[int, ...]] = {}
    for i, out in enumerate(kernel.outputs):
        shape = tuple(int(eval_host(d, env, f"/outputs/{i}/shape/{j}")) for j, d in enumerate(out.shape))
        if any(d < 0 for d in shape):
            raise HostError(Diagnostic(f"/outputs/{i}/shape", "bad_arguments",
                                       f"output {out.name} would have the negative shape {list(shape)}"))
        output_shapes[out.name] = shape
        env.shapes[out.name] = shape
        env.strides[out.name] = contiguous_strides(shape)
    grid = [int(eval_host(g, env, f"/grid/{i}")) for i, g in enumerate(kernel.grid)]
    if any(g < 0 for g in grid) or any(g > limit for g, limit in zip(grid, (2**31 - 1, 65535, 65535))):
        raise HostError(Diagnostic("/grid", "bad_grid", f"grid {grid} is outside what a GPU can launch"))
    grid += [1] * (3 - len(grid))
    values: list[Union[Scalar, str]] = []
    for i, binding in enumerate(checked.params):
        if binding.tensor is not None:
            values.append(binding.tensor)
            continue
        value = eval_host(binding.value, env, f"/params/{i}/value")
        if binding.type.dtype == "i32" and not -(2**31) <= int(value) < 2**31:
            raise HostError(Diagnostic(f"/params/{i}", "bad_arguments",
                                       f"param {binding.name} = {value} does not fit in i32; declare it i64"))
        values.append(float(value) if binding.type.dtype in ("f32", "f64") else int(value))
    return LaunchPlan(checked, env, inputs, output_shapes, (grid[0], grid[1], grid[2]), values)


def plan_launch(checked: CheckedKernel, args: Union[Sequence[Any], Mapping[str, Any]]) -> LaunchPlan:
    """Bind a call's arguments (torch tensors and Python scalars) to the kernel.

    Tensors are made contiguous (the kernel sees contiguous strides); shapes, ranks and dtypes
    are checked against the declared inputs, with a :class:`HostError` naming the input.
    """
    kernel = checked.kernel
    bound = _bind_args(kernel, args)
    inputs: dict[str, Any] = {}
    scalars: dict[str, Scalar] = {}
    for i, inp in enumerate(kernel.inputs):
        if not inp.is_plain:
            continue
        value = bound[inp.name]
        if inp.shape is None:
            if hasattr(value, "shape"):
                if getattr(value, "numel", lambda: 0)() != 1:
                    raise HostError(Diagnostic(f"/inputs/{i}", "bad_arguments",
                                               f"{inp.name} is a scalar, got a tensor of shape {list(value.shape)}"))
                value = value.item()
            scalars[inp.name] = value
            continue
        if not hasattr(value, "shape"):
            raise HostError(Diagnostic(f"/inputs/{i}", "bad_arguments",
                                       f"{inp.name} is a tensor, got {type(value).__name__}"))
        if dtype_name(value.dtype) != inp.dtype:
            raise HostError(Diagnostic(f"/inputs/{i}/dtype", "bad_arguments",
                                       f"{inp.name} is declared {inp.dtype}, got {value.dtype}"))
        inputs[inp.name] = value.contiguous()
    scalars.update((item, float(bound[item])) for item in float_items(kernel))
    shapes = {n: tuple(t.shape) for n, t in inputs.items()}
    env = HostEnv(sizes_from_shapes(kernel, shapes), scalars, dict(checked.meta), shapes,
                  {n: contiguous_strides(s) for n, s in shapes.items()}, _launch_num_sms(inputs.values()))
    plan = _finish_plan(checked, env, inputs)
    _within_memory(plan, "cpu" if _on_cpu(inputs.values()) else "gpu")
    return plan


def _on_cpu(tensors: Any) -> bool:
    """Whether a call on these tensors runs in the interpreter (CPU tensors; none at all in a
    process that has not started CUDA), not on a GPU (CUDA tensors, or meta ones: shapes of a
    GPU call)."""
    import torch

    devices = {t.device.type for t in tensors}
    return devices == {"cpu"} or (not devices and not torch.cuda.is_initialized())


def _within_memory(plan: LaunchPlan, where: str) -> None:
    """Refuse a call whose outputs and scratch (a launch's outputs) exceed :data:`MEMORY_BUDGET`."""
    sizes = {out.name: math.prod(plan.output_shapes[out.name]) * torch_dtype(out.dtype).itemsize
             for out in plan.kernel.outputs}
    total, budget = sum(sizes.values()), MEMORY_BUDGET[where]
    if total <= budget:
        return
    index, out = max(enumerate(plan.kernel.outputs), key=lambda item: sizes[item[1].name])
    raise HostError(Diagnostic(f"/outputs/{index}/shape", "too_large",
                               f"the outputs and scratch of this call take {total:.3g} bytes ({out.name} "
                               f"{list(plan.output_shapes[out.name])}: {sizes[out.name]:.3g}), more than the "
                               f"{budget / 2**30:g} GiB a call may allocate {'in the interpreter' if where == 'cpu' else 'on a GPU'}; "
                               f"size them from the inputs"))


# The num_sms a verification runs under (kernelgen.task.draws.NUM_SMS_CHECKED), where one sets it.
_VERIFIED_NUM_SMS: contextvars.ContextVar[int | None] = contextvars.ContextVar("kernelgen_num_sms", default=None)


@contextlib.contextmanager
def verified_num_sms(value: int | None) -> Iterator[None]:
    """Within it, ``num_sms`` of every launch planned from a call's arguments is ``value``
    (None: the device's own): a persistent kernel is verified under SM counts of other GPUs. The
    compiled code never assumes num_sms (``device_dependent``), so one binary serves them all."""
    token = _VERIFIED_NUM_SMS.set(value)
    try:
        yield
    finally:
        _VERIFIED_NUM_SMS.reset(token)


def _launch_num_sms(tensors: Any) -> int:
    """``num_sms`` for a launch on these tensors: the verified value where one is set
    (:func:`verified_num_sms`), else their GPU's, else (no tensor input) that of the current GPU
    of a process that uses CUDA already; the interpreter's otherwise."""
    forced = _VERIFIED_NUM_SMS.get()
    if forced is not None:
        return forced
    for tensor in tensors:
        return device_num_sms(tensor.device)
    import torch

    return device_num_sms("cuda") if torch.cuda.is_initialized() else INTERPRETER_NUM_SMS


def plan_sequence(checked: Checked, args: Union[Sequence[Any], Mapping[str, Any]]) -> list[LaunchPlan]:
    """A plan per launch of a checked document, in launch order (one for a single kernel); the
    launches of a program share the call's host values, so scratch shapes agree among them."""
    plans = []
    for i, each in enumerate(launches_of(checked)):
        try:
            plans.append(plan_launch(each, args))
        except HostError as error:
            raise relocated(checked.kernel, i, error) from None
    return plans


def sequence_for_sizes(checked: Checked, sizes: Mapping[str, int],
                       scalars: Mapping[str, Scalar] | None = None) -> list[LaunchPlan]:
    """:func:`plan_for_sizes` for each launch of a checked document."""
    plans = []
    for i, each in enumerate(launches_of(checked)):
        try:
            plans.append(plan_for_sizes(each, sizes, scalars))
        except HostError as error:
            raise relocated(checked.kernel, i, error) from None
    return plans
