"""A checked kernel: the types the checker infers, and the small facts about literals, shapes
and JSON paths that the checker and every later stage (bounds, interpreter, lowering, emitter,
host) share.

It is its own module so that :mod:`kernelgen.check.bounds`, which the checker runs last, reads the
checker's results without importing the checker back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection, Union

from kernelgen.lang import nodes as L

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
FLOAT_DTYPES = ("f32", "f16", "bf16", "f64")
# The dtypes the math functions, pow and float sums compute in (others are cast first).
WIDE_FLOAT_DTYPES = ("f32", "f64")
INT_DTYPES = ("i32", "i64")
# 8- and 16-bit integers (torch.int8, uint8, int16): loaded, stored, cast, bitcast, computed
# elementwise with wrapping (u8 unsigned: its division, shr, comparisons, extrema and casts),
# and i8 multiplied by dot; reductions, scans, sorts, indices, offsets and atomics take i32/i64
# (narrow_int: cast first). No u16/u32: torch 2.x leaves their arithmetic unimplemented on the
# CPU ("add_stub" not implemented for 'UInt16') and refuses to promote them with other dtypes.
NARROW_INT_DTYPES = ("i8", "u8", "i16")
UNSIGNED_DTYPES = ("u8",)
ANY_INT_DTYPES = INT_DTYPES + NARROW_INT_DTYPES
# The pointee dtypes Triton 3.6 takes for each atomic (language/semantic.py): f16 and bf16
# only add (atom_red_typechecking_impl), floats max/min through a bitcast to i32/i64, no
# 1-bit one; and/or/xor on floats fail in LLVM. cas takes 16-bit and float elements too, but
# compares bits (-0.0 != 0.0, NaN == NaN of its payload), which the language leaves out.
ATOMIC_DTYPES: dict[str, tuple[str, ...]] = {
    "atomic_add": ("f16", "bf16", "f32", "f64", "i32", "i64"),
    "atomic_max": ("f32", "f64", "i32", "i64"),
    "atomic_min": ("f32", "f64", "i32", "i64"),
    "atomic_xchg": ("f32", "f64", "i32", "i64"),
    "atomic_and": INT_DTYPES, "atomic_or": INT_DTYPES, "atomic_xor": INT_DTYPES, "atomic_cas": INT_DTYPES,
}
# Storage-only floats: loaded, stored, cast, bitcast and multiplied by dot, never computed with.
FP8_DTYPES = ("f8e4m3", "f8e5m2")
# Bits per element, for bitcasts (bool has no bit pattern of its own in the language).
# The dtype a name gets when its value failed to check: later uses are not reported again.
ERROR_DTYPE = "<error>"


class _Invalid(Exception):
    """Raised inside the checker (kernelgen.check.checker and its mixins kernelgen.check.host and
    kernelgen.check.statements) when an expression is wrong; it has been reported already."""


DTYPE_BITS = {"f64": 64, "i64": 64, "f32": 32, "i32": 32, "f16": 16, "bf16": 16, "f8e4m3": 8, "f8e5m2": 8,
              "i16": 16, "i8": 8, "u8": 8}


@dataclass(frozen=True)
class ValueType:
    """The type of a kernel value: element dtype (the pointee for pointers) and block shape.

    ``shape == ()`` is a scalar. ``weak`` marks a literal that adopts its partner's dtype.
    ``bases`` names the tensors a pointer may point into. ``literal``: the value of a weak
    literal (also through the names bound to it), so the dtype it takes can be checked.
    """

    dtype: str
    shape: tuple[int, ...] = ()
    pointer: bool = False
    weak: bool = False
    bases: frozenset[str] = frozenset()
    literal: Union[bool, int, float, None] = field(default=None, compare=False)

    @property
    def is_float(self) -> bool:
        return not self.pointer and self.dtype in FLOAT_DTYPES

    @property
    def is_int(self) -> bool:
        return not self.pointer and self.dtype in INT_DTYPES

    @property
    def is_narrow_int(self) -> bool:
        return not self.pointer and self.dtype in NARROW_INT_DTYPES

    @property
    def is_bool(self) -> bool:
        return not self.pointer and self.dtype == "bool"

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def with_shape(self, shape: tuple[int, ...]) -> ValueType:
        return ValueType(self.dtype, tuple(shape), self.pointer, self.weak, self.bases, self.literal)

    def with_dtype(self, dtype: str) -> ValueType:
        return ValueType(dtype, self.shape, False, False)

    def concrete(self) -> ValueType:
        return ValueType(self.dtype, self.shape, self.pointer, False, self.bases)

    def same_kind(self, other: ValueType) -> bool:
        return (self.dtype, self.shape, self.pointer) == (other.dtype, other.shape, other.pointer)

    def __str__(self) -> str:
        elem = f"ptr<{self.dtype}>" if self.pointer else self.dtype
        return f"{elem}[{','.join(map(str, self.shape))}]" if self.shape else elem


@dataclass(frozen=True)
class HostTensor:
    name: str
    dtype: str
    shape: tuple[Union[int, str], ...]
    is_output: bool


@dataclass(frozen=True)
class ParamBinding:
    """How the host fills a kernel parameter: ``tensor`` (its data pointer) or ``value``
    (a host expression evaluated to a number of ``type.dtype``)."""

    name: str
    type: ValueType
    tensor: str | None
    value: L.Expr | None


@dataclass
class CheckedKernel:
    """A kernel that passed the checker, with everything later stages need to know."""

    kernel: L.Kernel
    meta: dict[str, int]
    types: dict[str, ValueType]
    tensors: dict[str, HostTensor]
    sizes: tuple[str, ...]
    params: list[ParamBinding]
    # The dtype an operation computes in, by the operation's path, where its operands may
    # differ from it (a weak literal, an integer with a float literal): binary operations,
    # where, fma and clamp. Comparisons compute in it and return bool.
    operand_dtypes: dict[str, str] = field(default_factory=dict)
    # The paths of fp8 dots and of casts to or from fp8: Triton 3.6 compiles them for sm_89 and
    # later only (fp8 loads, stores and bitcasts move bytes and compile everywhere).
    fp8_nodes: list[str] = field(default_factory=list)

    def type_at(self, path: str) -> ValueType:
        return self.types[path]



@dataclass
class CheckedProgram:
    """A document of several launches that passed the checker (:mod:`kernelgen.check.sequence`):
    ``kernel`` is the document, ``launches`` each launch checked as its projected kernel (the
    document's outputs followed by its scratch tensors)."""

    kernel: L.Kernel
    launches: list[CheckedKernel]
    meta: dict[str, int]
    sizes: tuple[str, ...]

    @property
    def scratch(self) -> list[L.Scratch]:
        return list(self.kernel.scratch)


Checked = Union[CheckedKernel, CheckedProgram]


def launches_of(checked: Checked) -> list[CheckedKernel]:
    """The kernels a checked document launches, in order: a single kernel is a program of one."""
    return list(checked.launches) if isinstance(checked, CheckedProgram) else [checked]


def is_power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def broadcast_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """NumPy broadcasting of two shapes, or None if they do not broadcast (a size-1 axis takes
    the other's size, zero included)."""
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + a
    b = (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            return None
        out.append(y if x == 1 else x)
    return tuple(out)


def broadcasts_to(src: tuple[int, ...], dst: tuple[int, ...]) -> bool:
    return len(src) <= len(dst) and broadcast_shapes(src, dst) == dst


def literal_type(value: Union[bool, int, float, str]) -> ValueType:
    if isinstance(value, bool):
        return ValueType("bool")
    number = literal_value(value)
    if isinstance(number, int):
        return ValueType("i32" if INT32_MIN <= number <= INT32_MAX else "i64", weak=True, literal=number)
    return ValueType("f32", weak=True, literal=number)


def is_literal(expr: L.Expr) -> bool:
    # Only a string can be a literal's name: ``in`` would compare a node with each (slowly).
    return isinstance(expr, (bool, int, float)) or (isinstance(expr, str) and expr in L.FLOAT_LITERAL_NAMES)


def literal_value(expr: Union[bool, int, float, str]) -> Union[bool, int, float]:
    if isinstance(expr, str):
        return float(expr)
    return expr


def child(path: str, *parts: Union[str, int]) -> str:
    if len(parts) == 1:  # the common case, without the join's generator
        return f"{path}/{parts[0]}"
    return path + "".join(f"/{p}" for p in parts)


def device_dependent(expr: L.Expr) -> bool:
    """Whether a host expression reads ``num_sms``: its value is known only on the GPU that runs
    the launch, so no compile-time assumption (divisibility) may rest on it."""
    if isinstance(expr, L.DeviceInfo):
        return True
    if isinstance(expr, L.Binary):
        return device_dependent(expr.lhs) or device_dependent(expr.rhs)
    if isinstance(expr, L.Where):
        return device_dependent(expr.cond) or device_dependent(expr.x) or device_dependent(expr.y)
    return False


def nonnegative_host(expr: L.Expr, scalars: Collection[str]) -> bool:
    """Whether a host expression is never negative: sizes, meta, tensor strides and numels,
    literals >= 0, and their sums, products, divisions and maxima (a scalar input may be
    anything, a difference anything)."""
    if isinstance(expr, bool):
        return True
    if isinstance(expr, (int, float)):
        return expr >= 0
    if isinstance(expr, str):
        return not is_literal(expr) and expr not in scalars
    if isinstance(expr, (L.TensorInfo, L.DeviceInfo)):
        return True
    if isinstance(expr, L.Where):
        return nonnegative_host(expr.x, scalars) and nonnegative_host(expr.y, scalars)
    if isinstance(expr, L.Binary) and expr.op in ("eq", "ne", "lt", "le", "gt", "ge", "and", "or"):
        return True  # a bool
    if isinstance(expr, L.Binary):
        lhs, rhs = nonnegative_host(expr.lhs, scalars), nonnegative_host(expr.rhs, scalars)
        if expr.op == "maximum":
            return lhs or rhs
        if expr.op == "sub":
            return False
        return lhs and rhs
    return False
