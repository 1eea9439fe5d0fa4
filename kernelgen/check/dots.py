"""The checker's rules for ``dot``: shapes, the operand and result dtypes each tensor-core path
takes (f16/bf16/f32 with tf32 or ieee precision, fp8 on sm_89+, int8 with i32 sums), and ``acc``.

A mixin of :mod:`kernelgen.check.checker`'s ``_Checker`` (it reads ``expr``, ``fail`` and
``fp8_nodes`` there), kept apart so the checker stays one concern per module.
"""

from __future__ import annotations

from typing import Any

from kernelgen.lang import nodes as L
from kernelgen.check.checked import FP8_DTYPES, ValueType, child

# Triton's fp64 dot (mma.m8n8k4.f64) is not part of the language: f64 dots are refused.
DOT_DTYPES = ("f16", "bf16", "f32")
# The first compute capability with fp8 tensor-core instructions (Ada's mma.sync e4m3/e5m2).
FP8_DOT_CAPABILITY = 89


class DotChecks:
    expr: Any
    fail: Any
    fp8_nodes: list[str]

    def _dot(self, e: L.Dot, path: str, scope) -> ValueType:
        lhs = self.expr(e.lhs, child(path, "lhs"), scope)
        rhs = self.expr(e.rhs, child(path, "rhs"), scope)
        if len(lhs.shape) != 2 or len(rhs.shape) != 2:
            raise self.fail(path, "dot_shape", f"dot takes 2-D blocks, got {lhs} and {rhs}")
        (m, k), (k2, n) = lhs.shape, rhs.shape
        if k != k2:
            raise self.fail(path, "dot_shape", f"dot of [{m},{k}] and [{k2},{n}]: inner dims differ")
        if min(m, n, k) < 16:
            raise self.fail(path, "dot_shape", f"dot needs M, N, K >= 16, got M={m} N={n} K={k}")
        if lhs.dtype in FP8_DTYPES or rhs.dtype in FP8_DTYPES:
            return self.fp8_dot(e, lhs, rhs, (m, n, k), path, scope)
        if e.dtype == "i32":
            return self.int8_dot(e, lhs, rhs, (m, n, k), path, scope)
        if lhs.pointer or rhs.pointer or lhs.dtype != rhs.dtype or lhs.dtype not in DOT_DTYPES:
            raise self.fail(path, "dot_dtype", f"dot needs both operands f16, bf16 or f32 (not f64), "
                            f"got {lhs} and {rhs}")
        if e.dtype == "f16" and lhs.dtype != "f16":
            raise self.fail(child(path, "dtype"), "dot_dtype", f"an f16 result needs f16 operands, got {lhs.dtype}")
        if e.precision == "tf32" and lhs.dtype != "f32":
            raise self.fail(child(path, "precision"), "dot_dtype", "tf32 precision applies to f32 operands only")
        out = ValueType(e.dtype, (m, n))
        if e.acc is not None:
            acc = self.expr(e.acc, child(path, "acc"), scope)
            if acc.shape != (m, n):
                raise self.fail(child(path, "acc"), "dot_shape", f"acc must be [{m},{n}], got {list(acc.shape)}")
            if acc.dtype != e.dtype or acc.pointer:
                raise self.fail(child(path, "acc"), "dot_dtype", f"acc must be {e.dtype} (the dot's dtype), got {acc}")
        return out

    def fp8_dot(self, e: L.Dot, lhs: ValueType, rhs: ValueType, mnk: tuple[int, int, int], path: str,
                scope) -> ValueType:
        """fp8 x fp8 (e4m3 and e5m2 mix) on tensor cores, f32 results; Triton's fp8 MMA takes
        K in steps of 32."""
        if lhs.pointer or rhs.pointer or lhs.dtype not in FP8_DTYPES or rhs.dtype not in FP8_DTYPES:
            raise self.fail(path, "dot_dtype", f"an fp8 dot needs both operands fp8, got {lhs} and {rhs}")
        if e.dtype != "f32":
            raise self.fail(child(path, "dtype"), "dot_dtype", "an fp8 dot accumulates in f32")
        self.fp8_nodes.append(path)
        return self.byte_dot_result(e, "fp8", "f32", mnk, path, scope)

    def byte_dot_result(self, e: L.Dot, kind: str, dtype: str, mnk: tuple[int, int, int], path: str,
                        scope) -> ValueType:
        """What fp8 and int8 dots share: 8-bit MMAs take K in steps of 32; acc in the dot's dtype."""
        m, n, k = mnk
        if k < 32:
            raise self.fail(path, "dot_shape", f"an {kind} dot needs K >= 32, got K={k}")
        if e.precision != "ieee":
            raise self.fail(child(path, "precision"), "dot_dtype", "tf32 precision applies to f32 operands only")
        if e.acc is not None:
            acc = self.expr(e.acc, child(path, "acc"), scope)
            if acc.shape != (m, n) or acc.dtype != dtype or acc.pointer:
                raise self.fail(child(path, "acc"), "dot_dtype", f"acc must be {dtype}[{m},{n}], got {acc}")
        return ValueType(dtype, (m, n))

    def int8_dot(self, e: L.Dot, lhs: ValueType, rhs: ValueType, mnk: tuple[int, int, int], path: str,
                 scope) -> ValueType:
        """i8 x i8 on the integer tensor cores (mma/wgmma .s8, K in steps of 32), i32 sums. The
        older form takes the low bytes of i32 operands (int8 data packed in i32 words)."""
        if lhs.pointer or rhs.pointer or lhs.dtype != rhs.dtype or lhs.dtype not in ("i8", "i32"):
            raise self.fail(path, "dot_dtype", f"an int8 dot (dtype i32) takes two i8 operands (or two i32 "
                            f"ones: their low bytes), got {lhs} and {rhs}")
        return self.byte_dot_result(e, "int8", "i32", mnk, path, scope)
