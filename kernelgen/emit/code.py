"""The emitter's building blocks, shared by the kernel's emitter (:mod:`kernelgen.emit.module`) and the
launcher's (:mod:`kernelgen.emit.launcher`): dtype names in Triton and torch, Python's operator
precedence, an emitted expression (:class:`_Code`), how literals are written, and the
:class:`Namer` that turns AST names into Python names.

They are their own module so that both emitters use one set of them without importing each
other; :mod:`kernelgen.emit.module` re-exports them.
"""

from __future__ import annotations

import builtins
import keyword
import math
from dataclasses import dataclass
from typing import Union

MODULE_NAMES = ("torch", "triton", "tl")

TL_DTYPES = {"f32": "tl.float32", "f16": "tl.float16", "bf16": "tl.bfloat16", "f64": "tl.float64", "i32": "tl.int32",
             "i64": "tl.int64", "bool": "tl.int1", "f8e4m3": "tl.float8e4nv", "f8e5m2": "tl.float8e5",
             "i8": "tl.int8", "u8": "tl.uint8", "i16": "tl.int16"}
TORCH_DTYPES = {"f32": "torch.float32", "f16": "torch.float16", "bf16": "torch.bfloat16", "f64": "torch.float64",
                "i32": "torch.int32", "i64": "torch.int64", "bool": "torch.bool", "f8e4m3": "torch.float8_e4m3fn",
                "f8e5m2": "torch.float8_e5m2", "i8": "torch.int8", "u8": "torch.uint8", "i16": "torch.int16"}
FLOAT_DTYPES = ("f32", "f16", "bf16", "f64")
INT_DTYPES = ("i32", "i64")
NARROW_INT_DTYPES = ("i8", "u8", "i16")
FP8_DTYPES = ("f8e4m3", "f8e5m2")
# The smallest normal and the largest finite f32: a Python float outside this range becomes an
# f64 tensor when Triton makes a tensor of it on its own.
F32_TINY = 2.0 ** -126
F32_MAX = (2 - 2.0 ** -23) * 2.0 ** 127

# Python operator precedence, loosest first (only the levels the emitter writes).
COMPARE, BIT_OR, BIT_XOR, BIT_AND, ADD, MUL, UNARY, POSTFIX, ATOM = range(2, 11)

_BINARY_OPERATORS = {
    "add": ("+", ADD), "sub": ("-", ADD), "mul": ("*", MUL), "idiv": ("//", MUL), "rem": ("%", MUL),
    "lt": ("<", COMPARE), "le": ("<=", COMPARE), "gt": (">", COMPARE), "ge": (">=", COMPARE),
    "eq": ("==", COMPARE), "ne": ("!=", COMPARE),
    "and": ("&", BIT_AND), "or": ("|", BIT_OR), "xor": ("^", BIT_XOR),
}


@dataclass(frozen=True)
class _Code:
    """An emitted expression and what Triton will make of it.

    ``dtype`` is the dtype of the tensor it evaluates to, or None for a Python constant (a
    literal or a meta-parameter), which takes its dtype from the tensor next to it.
    ``may_be_number`` marks values of that dtype that may nevertheless be plain Python numbers
    when the kernel runs: integer params (Triton passes a 1 as a constant), loop variables and
    float params (Python numbers in Triton's interpreter). Python's own operators would apply
    to those (floor division, double precision), and they have no ``.to()``. ``value`` is a
    literal's value; ``nonnegative`` says the value is known to be >= 0.
    """

    text: str
    prec: int
    dtype: str | None
    pointer: bool = False
    may_be_number: bool = False
    value: Union[bool, int, float, None] = None
    nonnegative: bool = False

    def at(self, prec: int) -> str:
        """The text as an operand that binds at least as tightly as ``prec``."""
        return self.text if self.prec >= prec else f"({self.text})"


def round_to(value: float, dtype: str) -> float:
    """A float rounded to ``dtype`` (round to nearest even), as a Python float."""
    import torch

    from kernelgen.host.plan import torch_dtype

    return float(torch.tensor(value, dtype=torch.float64).to(torch_dtype(dtype)))


def _number(value: Union[int, float]) -> tuple[str, int]:
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")', POSTFIX
    text = repr(value)
    return text, UNARY if text.startswith("-") else ATOM


def _literal(value: Union[bool, int, float], dtype: str | None) -> tuple[str, int]:
    """A literal as it should be written where it stands for a value of ``dtype``."""
    if isinstance(value, bool):
        return repr(value), ATOM
    if dtype in ("f16", "bf16"):
        rounded = round_to(float(value), dtype)
        if rounded != value:
            return _number(rounded)
    elif dtype == "f32" and isinstance(value, float) and math.isfinite(value) and abs(value) > F32_MAX:
        rounded = round_to(value, "f32")
        if math.isinf(rounded):
            return _number(rounded)
    return _number(value)


class Namer:
    """Python names for AST names: the same name each time, never a keyword, builtin, module
    or other reserved name, and never another AST name."""

    def __init__(self, taken: set[str], reserved: set[str]) -> None:
        self.taken = set(taken)
        self.reserved = set(reserved) | set(dir(builtins)) | set(keyword.kwlist)
        self.names: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        if name not in self.names:
            candidate = name
            while candidate in self.reserved or (candidate != name and candidate in self.taken):
                candidate += "_"
            self.names[name] = candidate
            self.reserved.add(candidate)
        return self.names[name]

    def fresh(self, name: str) -> str:
        """A new Python name for ``name``, never given before, now what ``name`` maps to."""
        candidate = name
        while candidate in self.reserved or candidate in self.taken:
            candidate += "_"
        self.names[name] = candidate
        self.reserved.add(candidate)
        return candidate


def _wrap(text: str, prec: int, needed: int) -> str:
    return text if prec >= needed else f"({text})"
