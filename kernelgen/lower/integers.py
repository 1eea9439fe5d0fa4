"""The lowering's comparisons and integer arithmetic, where TTIR's signless integers need the
signedness the language's dtypes carry: u8 compares, divides, takes remainders and extrema
with the unsigned ops (``arith.cmpi ult``, ``divui``, ``remui``, ``maxui``), the signed
integers with the signed ones. Division by zero gives 0, as the interpreter says.

A mixin that :class:`kernelgen.lower.lowering._Lowering` inherits; it calls ``constant`` and
``widen_float`` through ``self`` and does not import lowering.py back.
"""

from __future__ import annotations

from typing import Any

from kernelgen.check.checked import FLOAT_DTYPES, UNSIGNED_DTYPES, ValueType


class IntegerLowering:
    """Comparisons, integer arithmetic and extrema: needs ``builder``, ``constant`` and
    ``widen_float`` of :class:`kernelgen.lower.lowering._Lowering`."""

    def compare(self, op: str, a: Any, c: Any, t: ValueType) -> Any:
        b = self.builder
        if t.dtype in FLOAT_DTYPES:
            a, c = self.widen_float(a, t), self.widen_float(c, t)
            predicate = {"eq": "OEQ", "ne": "UNE", "lt": "OLT", "le": "OLE", "gt": "OGT", "ge": "OGE"}[op]
            return getattr(b, f"create_fcmp{predicate}")(a, c)
        predicate = {"eq": "EQ", "ne": "NE", "lt": "SLT", "le": "SLE", "gt": "SGT", "ge": "SGE"}[op]
        if t.dtype in UNSIGNED_DTYPES:
            predicate = predicate.replace("S", "U")
        return getattr(b, f"create_icmp{predicate}")(a, c)

    def int_arith(self, op: str, a: Any, c: Any, t: ValueType, nonzero_divisor: bool = False) -> Any:
        """``nonzero_divisor``: ``c`` is a param the kernel is specialized on being a nonzero
        multiple of 16, so a division needs no guard; the guard's selects would hide the
        divisor's divisibility from Triton's axis analysis, and ``offs % N`` (a column gathered
        by a flat offset, Inductor's form) would load one element at a time."""
        b = self.builder
        simple = {"add": b.create_add, "sub": b.create_sub, "mul": b.create_mul}
        if op in ("maximum", "minimum"):
            return self.extremum(op, a, c, t)
        unsigned = t.dtype in UNSIGNED_DTYPES
        divide, remainder = (b.create_udiv, b.create_urem) if unsigned else (b.create_sdiv, b.create_srem)
        if op in simple:
            return simple[op](a, c)
        if nonzero_divisor:
            if op == "cdiv":
                a = b.create_sub(b.create_add(a, c), self.constant(1, t.dtype, t.shape))
            return remainder(a, c) if op == "rem" else divide(a, c)
        zero = self.constant(0, t.dtype, t.shape)
        divisor_is_zero = b.create_icmpEQ(c, zero)
        divisor = b.create_select(divisor_is_zero, self.constant(1, t.dtype, t.shape), c)
        if op == "idiv":
            result = divide(a, divisor)
        elif op == "rem":
            result = remainder(a, divisor)
        else:  # cdiv
            dividend = b.create_sub(b.create_add(a, divisor), self.constant(1, t.dtype, t.shape))
            result = divide(dividend, divisor)
        return b.create_select(divisor_is_zero, zero, result)

    def extremum(self, op: str, a: Any, c: Any, t: ValueType) -> Any:
        b = self.builder
        if t.dtype in FLOAT_DTYPES:
            return (b.create_maximumf if op == "maximum" else b.create_minimumf)(a, c)
        if t.dtype in UNSIGNED_DTYPES:
            return (b.create_maxui if op == "maximum" else b.create_minui)(a, c)
        return (b.create_maxsi if op == "maximum" else b.create_minsi)(a, c)
