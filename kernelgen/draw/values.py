"""The values a random kernel is drawn from: an expression under construction with bounds on
its magnitude and on the GPU's difference from the interpreter, and the small helpers that
build JSON nodes and bounds. The generator of :mod:`kernelgen.draw.strategies` (its
expressions, :mod:`kernelgen.draw.expressions`, and templates, :mod:`kernelgen.draw.templates`)
and :mod:`kernelgen.draw.bits` (bit operations, random numbers, fp8) draw with them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

FLOAT_DTYPES = ("f32", "f16", "bf16", "f64")
INT_DTYPES = ("i32", "i64")
NUMBER_DTYPES = FLOAT_DTYPES + INT_DTYPES
ALL_DTYPES = NUMBER_DTYPES + ("bool",)

FLOAT_LIMIT = 1e4
INT_LIMIT = 2**30
EPS = {"f32": 2.0**-23, "f16": 2.0**-10, "bf16": 2.0**-7, "f64": 2.0**-52}
TF32_EPS = 2.0**-10
DENORMAL = 1e-37  # a GPU may flush f32 subnormals to zero


@dataclass(frozen=True)
class Val:
    """An expression being generated: its JSON, dtype, block shape, a bound on its absolute
    value and a bound on the difference between a GPU's result and the interpreter's."""

    expr: Any
    dtype: str
    shape: tuple[int, ...]
    mag: float = 1.0
    err: float = 0.0

    @property
    def exact(self) -> bool:
        return self.err == 0.0


def op(kind: str, /, **fields: Any) -> dict[str, Any]:
    return {"op": kind, **fields}


def let(name: str, value: Any) -> dict[str, Any]:
    return op("let", name=name, value=value)


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for i, d in enumerate((1,) * (rank - len(s)) + tuple(s)):
            out[i] = max(out[i], d)
    return tuple(out)


def broadcasts_to(src: tuple[int, ...], dst: tuple[int, ...]) -> bool:
    if len(src) > len(dst):
        return False
    return all(a in (1, b) for a, b in zip((1,) * (len(dst) - len(src)) + tuple(src), dst))


def numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def rounding(dtype: str, mag: float, ulps: float = 2.0) -> float:
    return ulps * EPS[dtype] * mag + DENORMAL
