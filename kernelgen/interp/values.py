"""The values the interpreter computes with, and what the language's elementwise ops mean on them.

Split from :mod:`kernelgen.interp.program`, which evaluates statements and nodes: pointers into
a launch's buffers, constants as a dtype holds them, and the torch functions behind each unary
and binary op, fma, and tf32 rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

import torch

from kernelgen.check.checked import ANY_INT_DTYPES, DTYPE_BITS, UNSIGNED_DTYPES
from kernelgen.host.plan import torch_dtype
from kernelgen.lang import philox


@dataclass
class Pointer:
    """A block of pointers: which buffer each lane points into, and the element offset.
    ``buffer``: the one buffer every lane points into, where that is known without looking at
    ``base`` (a parameter's pointer and arithmetic on it): an access then skips finding its
    buffers, which on a small block cost more than the access itself."""

    base: torch.Tensor
    offset: torch.Tensor
    buffer: int | None = None


Value = Union[torch.Tensor, Pointer, bool, int, float]


def round_tf32(x: torch.Tensor) -> torch.Tensor:
    bits = x.contiguous().view(torch.int32)
    rounded = (bits + 0x1000) & ~0x1FFF
    return torch.where(torch.isfinite(x), rounded.view(torch.float32), x)


def constant_as(value: Union[bool, int, float], dtype: str) -> Union[bool, int, float]:
    """A Python number as ``dtype`` holds it: integers wrap around (two's complement), floats
    out of a narrow dtype's range round to infinity (as a constant does on the GPU); torch
    would refuse both."""
    if dtype == "bool":
        return bool(value)
    if dtype in ANY_INT_DTYPES:
        if isinstance(value, float):
            return value
        bits = DTYPE_BITS[dtype]
        if dtype in UNSIGNED_DTYPES:
            return int(value) % (1 << bits)
        return (int(value) + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**1024:
        return math.inf if value > 0 else -math.inf
    return float(torch.tensor(float(value), dtype=torch.float64).to(torch_dtype(dtype)))


def bits_of(x: torch.Tensor) -> torch.Tensor:
    """fp8 tensors as their bytes, where torch lacks fp8 kernels (masked_fill); others as they are."""
    return x.view(torch.uint8) if x.dtype in (torch.float8_e4m3fn, torch.float8_e5m2) else x


def view_key(x: torch.Tensor) -> tuple:
    """Equal for views of the same memory with the same layout (the same values)."""
    return x.data_ptr(), x.dtype, tuple(x.shape), x.stride()


def fma_f64(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """``x * y + z`` of f64 tensors nearly rounded once (f64 has no wider type to compute in):
    the product as the exact sum ``p + e`` (Dekker), ``p + z`` as the exact sum ``s + t``
    (Knuth), then ``s + (t + e)``: within an ulp of the fma, and exact where ``p + z`` cancels."""
    p = x * y
    split = 134217729.0  # 2**27 + 1

    def halves(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        c = split * a
        high = c - (c - a)
        return high, a - high

    (xh, xl), (yh, yl) = halves(x), halves(y)
    e = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl
    s = p + z
    b = s - p
    t = (p - (s - b)) + (z - b)
    compensated = s + (t + e)
    return torch.where(torch.isfinite(compensated), compensated, s)


def _sigmoid(x: torch.Tensor) -> torch.Tensor:
    return 1.0 / (1.0 + torch.exp(-x))


def _exp2_ftz(x: torch.Tensor) -> torch.Tensor:
    """exp2 with results below the smallest normal f32 (2**-126) flushed to 0, as
    ex2.approx.ftz.f32 gives them (NaN stays NaN: it compares false)."""
    result = torch.exp2(x)
    return result.masked_fill(result < 2.0**-126, 0.0)


UNARY = {
    "exp": torch.exp, "exp2": torch.exp2, "exp2_ftz": _exp2_ftz, "log": torch.log, "log2": torch.log2, "log1p": torch.log1p,
    "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "tanh": torch.tanh, "sigmoid": _sigmoid, "erf": torch.erf,
    "sin": torch.sin, "cos": torch.cos, "abs": torch.abs, "neg": torch.neg, "floor": torch.floor,
    "ceil": torch.ceil, "round": torch.round, "not": torch.logical_not,
}

BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "rem": torch.fmod,
    "pow": torch.pow, "maximum": torch.maximum, "minimum": torch.minimum,
    "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
    "and": torch.bitwise_and, "or": torch.bitwise_or, "xor": torch.bitwise_xor,
}


def special_binary(op: str, dtype: str, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The binary ops torch has no one function for, on operands of the result's shape: integer
    division and remainder, ``umulhi`` and the shifts."""
    if op in ("idiv", "cdiv", "rem"):  # of integers: the checker admits idiv and cdiv on integers only
        # Division by zero gives 0; by -1 it is negation (wrapping: the CPU's own division
        # of the minimum integer by -1 traps and kills the process). u8 has no -1.
        zero = b == 0
        minus_one = torch.zeros_like(zero) if dtype in UNSIGNED_DTYPES else b == -1
        safe = torch.where(zero | minus_one, torch.ones_like(b), b)
        if op == "rem":
            out = torch.where(minus_one, torch.zeros_like(a), torch.fmod(a, safe))
        else:
            if op == "cdiv":
                a = a + b - 1  # cdiv(a, b) is (a + b - 1) / b, rounded toward zero
            out = torch.where(minus_one, -a, torch.div(a, safe, rounding_mode="trunc"))
        return torch.where(zero, torch.zeros_like(out), out)
    if op == "umulhi":
        return philox.umulhi(a, b)
    return philox.shift(op, a, b)
