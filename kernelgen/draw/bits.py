"""Random draws of bit operations, Philox random numbers and fp8 values for the kernel
generator (:mod:`kernelgen.draw.strategies`), under its rules (its module docstring):

* Shifts, ``umulhi`` and bitcasts are exact (integer bits, deterministic on both sides). Shift
  amounts are literals (some past the width: 0 or the sign's fill) or ``b & mask`` of a drawn
  integer; ``shl`` moves at most 7 places, and ``lshr`` of a possibly negative value by at
  least width - 8 places, so magnitudes stay bounded. ``umulhi`` of values below 2**30 is at
  most ``|a| + |b| + 1`` (a negative one reads as 2**w - |a|). Float bits appear as the
  exponent field (``shr(bitcast(x), 23)``) and in sign-bit identities (``abs``/``neg`` of x
  through its bits), of exact values only.
* ``rand`` and ``randint`` are bit-exact (Philox is integer arithmetic; the uniform float is
  one conversion and one multiply); ``randint`` is narrowed by a mask or a logical shift.
  ``randn`` goes through log/sqrt/cos/sin: its bound is a few dozen ulps of its largest value
  (Box-Muller with u1 >= 1e-7 stays below 5.7).
* fp8 casts (rounded once, saturating) are deterministic, so a cast of an exact value
  is exact; values reach fp8 and come back (to any dtype, sometimes through the other fp8).
* 8/16-bit integers are exact too: an exact value cast there (saturating from floats, wrapping
  from integers), sometimes combined with another in wrapping arithmetic, bitwise ops or shifts
  by any amount, sometimes cast on to another narrow one, then cast to any dtype (an i16 masked
  to 12 bits first where it becomes a float, so magnitudes stay within the floats' bound).
"""

from __future__ import annotations

from typing import Any, Protocol

from kernelgen.draw.values import ALL_DTYPES, INT_DTYPES, Val, broadcast_shape, op, rounding

FP8_DTYPES = ("f8e4m3", "f8e5m2")
FP8_MAX = {"f8e4m3": 448.0, "f8e5m2": 57344.0}
NARROW_INT_DTYPES = ("i8", "u8", "i16")
NARROW_MAX = {"i8": 128.0, "u8": 255.0, "i16": 32768.0}
NARROW_OPS = ("add", "sub", "mul", "and", "or", "xor", "maximum", "minimum", "shl", "shr", "lshr")
SEEDS = (0, 1, 42, -7, 123456789, 2**33 + 5)
RANDN_BOUND = 5.7
BITS = {"i32": 32, "i64": 64}
FLOAT_OF = {"i32": "f32", "i64": "f64"}
MANTISSA = {"f32": 23, "f64": 52}


class Drawer(Protocol):
    """What these draws need of the generator (:class:`kernelgen.draw.expressions._Gen`)."""

    def choose(self, options: Any) -> Any: ...
    def chance(self, percent: int) -> bool: ...
    def value(self, dtype: str, shape: tuple[int, ...], depth: int, exact: bool = False) -> Val: ...
    def integer(self, dtype: str, shape: tuple[int, ...], depth: int) -> Val: ...
    def floating(self, dtype: str, shape: tuple[int, ...], depth: int, exact: bool = False) -> Val: ...


def _amount(g: Drawer, dtype: str, shape: tuple[int, ...], depth: int, literals: tuple[int, ...], mask: int) -> Val:
    if g.chance(60):
        k = g.choose(literals)
        return Val(k, dtype, (), float(abs(k)))
    b = g.integer(dtype, shape, depth)
    return Val(op("and", lhs=b.expr, rhs=mask), dtype, b.shape, float(mask))


def integer_bits(g: Drawer, dtype: str, shape: tuple[int, ...], depth: int) -> Val:
    """A shift, umulhi, a float's exponent field or a narrowed randint, of ``dtype``."""
    width = BITS[dtype]
    kind = g.choose(("shl", "shr", "lshr", "umulhi", "exponent", "randint", "fp8", "fp8", "narrow"))
    if kind == "fp8":
        return through_fp8(g, dtype, shape, depth)
    if kind == "narrow":
        return through_narrow_int(g, dtype, shape, depth)
    if kind == "exponent":
        x = g.floating(FLOAT_OF[dtype], shape, depth, exact=True)
        bits = op("bitcast", x=x.expr, dtype=dtype)
        return Val(op("shr", lhs=bits, rhs=MANTISSA[FLOAT_OF[dtype]]), dtype, x.shape, 2.0 ** (width - MANTISSA[FLOAT_OF[dtype]]))
    if kind == "randint":
        return random_integer(g, dtype, shape, depth)
    a = g.integer(dtype, shape, depth)
    if kind == "umulhi":
        b = g.integer(dtype, shape, depth)
        return Val(op("umulhi", lhs=a.expr, rhs=b.expr), dtype, broadcast_shape(a.shape, b.shape), a.mag + b.mag + 1)
    if kind == "shl":
        k = _amount(g, dtype, shape, depth, (0, 1, 3, 7, width, width + 9), 7)
        mag = a.mag * 2.0 ** min(k.mag, 7)
    elif kind == "shr":
        k = _amount(g, dtype, shape, depth, (1, 4, width - 1, width, width + 9, -1), width - 1)
        mag = a.mag
    else:
        k = _amount(g, dtype, shape, depth, (width - 8, width - 4, width - 1, width, width + 3), 7)
        if not isinstance(k.expr, int):
            k = Val(op("add", lhs=k.expr, rhs=width - 8), dtype, k.shape, float(width - 8))
        mag = max(a.mag, 2.0 ** 8)
    return Val(op(kind, lhs=a.expr, rhs=k.expr), dtype, broadcast_shape(a.shape, k.shape), mag)


def _philox(g: Drawer, kind: str, shape: tuple[int, ...], depth: int) -> tuple[dict[str, Any], tuple[int, ...]]:
    """``kind`` at an exact integer offset (i32 or i64) with a literal seed, any word."""
    offset = g.integer(g.choose(INT_DTYPES), shape, depth)
    word = {"word": g.choose((1, 2, 3))} if g.chance(40) else {}
    return op(kind, seed=g.choose(SEEDS), offset=offset.expr, **word), offset.shape


def random_integer(g: Drawer, dtype: str, shape: tuple[int, ...], depth: int) -> Val:
    """randint's 32 bits narrowed to 10 (a mask) or 8 (a logical shift), as ``dtype``."""
    expr, at = _philox(g, "randint", shape, depth)
    narrowed = op("and", lhs=expr, rhs=1023) if g.chance(50) else op("lshr", lhs=expr, rhs=24)
    if dtype != "i32":
        narrowed = op("cast", x=narrowed, dtype=dtype)
    return Val(narrowed, dtype, at, 1023.0)


def random_float(g: Drawer, dtype: str, shape: tuple[int, ...], depth: int, exact: bool) -> Val:
    """rand (exact, in [0, 1)) or, where an approximate value may go, randn, as ``dtype``."""
    kind = "rand" if exact else g.choose(("rand", "randn"))
    expr, at = _philox(g, kind, shape, depth)
    mag = 1.0 if kind == "rand" else RANDN_BOUND
    err = 0.0 if kind == "rand" else rounding("f32", mag, 64.0)
    if dtype != "f32":
        expr = op("cast", x=expr, dtype=dtype)
        err = err and err + rounding(dtype, mag, 1.0)
    return Val(expr, dtype, at, mag, err)


def float_bits(g: Drawer, dtype: str, shape: tuple[int, ...], depth: int, exact: bool) -> Val:
    """An identity through a float's bits (f32/f64), an fp8 round trip or a random float."""
    kind = g.choose(("bits", "fp8", "fp8", "random", "narrow"))
    if kind == "random":
        return random_float(g, dtype, shape, depth, exact)
    if kind == "narrow":
        return through_narrow_int(g, dtype, shape, depth)
    if kind == "bits" and dtype in FLOAT_OF.values():
        width_int = "i32" if dtype == "f32" else "i64"
        x = g.floating(dtype, shape, depth, exact)
        bits: Any = op("bitcast", x=x.expr, dtype=width_int)
        sign = -(2 ** (BITS[width_int] - 1))
        bits = g.choose((bits, op("and", lhs=bits, rhs=-sign - 1), op("xor", lhs=bits, rhs=sign)))
        return Val(op("bitcast", x=bits, dtype=dtype), dtype, x.shape, x.mag, x.err)
    return through_fp8(g, dtype, shape, depth)


def through_fp8(g: Drawer, dtype: str, shape: tuple[int, ...], depth: int) -> Val:
    """An exact value of any dtype cast to fp8 (sometimes on to the other fp8), then to
    ``dtype`` (fp8 itself: left there)."""
    source = g.choose(ALL_DTYPES + (NARROW_INT_DTYPES if depth > 0 else ()))
    x = g.value(source, shape, depth, exact=True)
    first = dtype if dtype in FP8_DTYPES and g.chance(50) else g.choose(FP8_DTYPES)
    expr: Any = op("cast", x=x.expr, dtype=first)
    mag = min(1.0 if source == "bool" else x.mag * 1.125, FP8_MAX[first])
    if first != dtype and (dtype in FP8_DTYPES or g.chance(25)):
        second = dtype if dtype in FP8_DTYPES else next(f for f in FP8_DTYPES if f != first)
        expr, mag = op("cast", x=expr, dtype=second), min(mag * 1.25, FP8_MAX[second])
        first = second
    if first != dtype:
        expr = op("cast", x=expr, dtype=dtype)
        mag = 1.0 if dtype == "bool" else mag
    return Val(expr, dtype, x.shape, mag)


def through_narrow_int(g: Drawer, dtype: str, shape: tuple[int, ...], depth: int) -> Val:
    """An exact value of any dtype cast to i8, u8 or i16, sometimes combined there with
    another, sometimes cast on to another narrow one, then cast to ``dtype`` (a narrow one:
    left there)."""
    narrow = dtype if dtype in NARROW_INT_DTYPES and g.chance(50) else g.choose(NARROW_INT_DTYPES)
    sources = ALL_DTYPES + (FP8_DTYPES if depth > 0 else ())

    def cast_there(target: str) -> Val:
        x = g.value(g.choose(sources), shape, max(depth - 1, 0), exact=True)
        return Val(op("cast", x=x.expr, dtype=target), target, x.shape)

    first = cast_there(narrow)
    expr, at = first.expr, first.shape
    if g.chance(40):
        other = cast_there(narrow)
        expr, at = op(g.choose(NARROW_OPS), lhs=expr, rhs=other.expr), broadcast_shape(at, other.shape)
    if narrow != dtype and (dtype in NARROW_INT_DTYPES or g.chance(25)):
        narrow = dtype if dtype in NARROW_INT_DTYPES else g.choose([d for d in NARROW_INT_DTYPES if d != narrow])
        expr = op("cast", x=expr, dtype=narrow)
    mag = NARROW_MAX[narrow]
    if narrow == "i16" and dtype not in INT_DTYPES + NARROW_INT_DTYPES + ("bool",):
        expr, mag = op("and", lhs=expr, rhs=4095), 4095.0
    if narrow != dtype:
        expr = op("cast", x=expr, dtype=dtype)
    return Val(expr, dtype, at, 1.0 if dtype == "bool" else mag)


def constructs_of(node: dict[str, Any]) -> set[str]:
    """The constructs of this module a JSON node uses, for the differential run's counts."""
    kind = node.get("op")
    found = set()
    if kind in ("shl", "shr", "lshr", "umulhi", "bitcast", "rand", "randn", "randint"):
        found.add(kind + (" 4x word" if node.get("word") else ""))
    if kind == "cast" and node.get("dtype") in FP8_DTYPES:
        found.add(f"cast to {node['dtype']}")
    return found
