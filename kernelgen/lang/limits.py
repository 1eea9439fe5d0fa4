"""The limits of the language that the schema does not express: the range of each dtype a
literal may take, and the length of names.

A literal is written in JSON, where numbers have no size; the dtype it ends up in is decided
by the checker (a *weak* literal takes its partner's dtype). A literal that does not fit that
dtype would otherwise reach the interpreter (torch refuses to convert it), the lowering (a raw
pybind error) or be silently rounded to infinity, so the checker refuses it with a path.
Names reach Triton's IR and PTX as symbols: a kernel named with five million characters ends in
``ptxas`` crashing, so names are short.
"""

from __future__ import annotations

import math
from typing import Any, Iterator, Union

from pydantic import BaseModel

from kernelgen.errors import Diagnostic
from kernelgen.lang.nodes import node_fields

MAX_NAME_LENGTH = 64
INT_RANGES = {"i32": (-(1 << 31), (1 << 31) - 1), "i64": (-(1 << 63), (1 << 63) - 1),
              "i8": (-128, 127), "u8": (0, 255), "i16": (-(1 << 15), (1 << 15) - 1)}
# The largest finite value of each float dtype: a literal beyond it would round to infinity
# (infinities are written "inf" and "-inf").
FLOAT_MAX = {"f64": 1.7976931348623157e308, "f32": 3.4028234663852886e38, "bf16": 3.3895313892515355e38, "f16": 65504.0,
             "f8e4m3": 448.0, "f8e5m2": 57344.0}
# Mantissa bits and the exponent of the smallest normal of each float dtype: torch.finfo's
# eps (2**-bits) and tiny.
FLOAT_BITS = {"f64": (52, -1022), "f32": (23, -126), "bf16": (7, -126), "f16": (10, -14), "f8e4m3": (3, -6),
              "f8e5m2": (2, -14)}
# Fields whose strings are data (a host argument's default and choices, a precondition's message), not names.
_DATA_FIELDS = ("default", "choices", "message")

Number = Union[bool, int, float]


def type_info(op: str, dtype: str, what: str) -> Union[int, float]:
    """torch.finfo(dtype).what (``op`` finfo: eps, max, min, tiny) or torch.iinfo's max/min."""
    if op == "iinfo":
        low, high = INT_RANGES[dtype]
        return high if what == "max" else low
    bits, tiny = FLOAT_BITS[dtype]
    return {"eps": 2.0**-bits, "max": FLOAT_MAX[dtype], "min": -FLOAT_MAX[dtype], "tiny": 2.0**tiny}[what]


def literal_problem(value: Number, dtype: str) -> str | None:
    """Why ``value`` cannot be a literal of ``dtype``, or None when it can."""
    if isinstance(value, bool) or dtype == "bool":
        return None
    if dtype in INT_RANGES:
        if isinstance(value, float):
            return None  # the checker's typing decides where floats go; not a range question
        low, high = INT_RANGES[dtype]
        if not low <= value <= high:
            return f"{_show(value)} does not fit in {dtype} ({low}..{high})"
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None  # "inf", "-inf" and "nan" are values of every float dtype
    if abs(value) > FLOAT_MAX[dtype]:
        return (f"{_show(value)} is beyond {dtype}'s largest finite value {FLOAT_MAX[dtype]:g} "
                "(write \"inf\" or \"-inf\" for infinities)")
    return None


def number_problem(value: Number) -> str | None:
    """Why a JSON number cannot be a literal of any dtype: an integer beyond i64, a float that
    is not finite (JSON's 1e400 decodes to infinity) or beyond f32."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return literal_problem(value, "i64")
    if not math.isfinite(value):
        return f"{value!r} is not a finite number; write \"inf\", \"-inf\" or \"nan\" for those values"
    return literal_problem(value, "f32")


def _show(value: Number) -> str:
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:10]}...{text[-4:]} ({len(text)} digits)"


def show_name(name: str) -> str:
    """A name as messages quote it: a long one is cut."""
    return repr(name) if len(name) <= MAX_NAME_LENGTH else f"{name[:24]!r}... ({len(name)} characters)"


def _strings(node: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string in an AST node (names, references, tags) with its JSON path, in document
    order, without recursion (the parser bounds depth, but a kernel may be built in code)."""
    stack: list[tuple[Any, str]] = [(node, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            yield where, item
        elif isinstance(item, BaseModel):
            fields = [(key, value) for key, value in node_fields(item) if key not in _DATA_FIELDS]
            stack.extend((value, f"{where}/{key}") for key, value in reversed(fields))
        elif isinstance(item, list):
            stack.extend((item[i], f"{where}/{i}") for i in reversed(range(len(item))))


def name_diagnostics(kernel: BaseModel) -> list[Diagnostic]:
    """Names longer than :data:`MAX_NAME_LENGTH` (each where it first appears), and a kernel name PTX does not take (the
    kernel's name is its PTX entry's: ``_`` must be followed by more characters there)."""
    found: list[Diagnostic] = []
    seen: set[str] = set()
    for path, name in _strings(kernel, ""):
        if len(name) > MAX_NAME_LENGTH and name not in seen:
            seen.add(name)  # once, where it first appears: its uses are not more findings
            found.append(Diagnostic(path, "name_too_long",
                                    f"names have at most {MAX_NAME_LENGTH} characters, got {show_name(name)}"))
    if getattr(kernel, "name", None) == "_":
        found.append(Diagnostic("/name", "bad_name", "the kernel's name is its PTX entry name, and PTX does not "
                                                     "take '_' alone; use a longer name"))
    return found
