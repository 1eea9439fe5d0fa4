"""The lowering's reductions: sum, max, min, argmax and argmin along an axis as ``tt.reduce``,
and the combine regions that scans (:mod:`kernelgen.lower.blocks`) share.

A mixin that :class:`kernelgen.lower.lowering._Lowering` inherits, kept apart because the reductions
build regions of their own and carry a workaround (argmax/argmin as two one-operand
reductions) that the rest of the lowering does not need to know. It calls the lowering's own
methods through ``self`` and does not import lowering.py back.
"""

from __future__ import annotations

from typing import Any, Callable

from kernelgen.lang import nodes as L
from kernelgen.check.checked import FLOAT_DTYPES, ValueType, child


def wide_dtype(dtype: str) -> str:
    """The float dtype a value of ``dtype`` computes in where f16/bf16 are widened: f64 for f64,
    else f32."""
    return "f64" if dtype == "f64" else "f32"


class ReductionLowering:
    """Reductions and combine regions: needs the attributes and methods :class:`kernelgen.lower.lowering._Lowering` has."""

    def _reduce(self, e: L.Reduce, path: str, env) -> Any:
        t = self.types[path]
        xp = child(path, "x")
        xt = self.types[xp]
        with_index = e.op in ("argmax", "argmin")
        dtype = xt.dtype if with_index else t.dtype
        x = self.operand(e.x, xp, env, dtype, xt.shape)
        self.at(path)
        b = self.builder
        values = ValueType(dtype, xt.shape)
        if dtype in FLOAT_DTYPES and e.op != "sum":
            x, values = self.widen_float(x, values), ValueType(wide_dtype(dtype), xt.shape)
        if with_index:
            result = self.first_index_of_extremum(e.op, x, values, e.axis)
        else:
            result = self.reduce_one(e.op, x, values, e.axis)
        out_shape = tuple(d for i, d in enumerate(xt.shape) if i != e.axis)
        if not with_index and values.dtype != t.dtype:
            result = self.narrow_float(result, out_shape, t.dtype, values.dtype)
        if e.keepdims:
            result = (b.create_expand_dims(result, e.axis) if out_shape
                      else self.splat(result, ValueType(t.dtype), (1,)))
        return result

    def axis_index(self, shape: tuple[int, ...], axis: int) -> Any:
        """The i32 block of ``shape`` whose elements are their own index along ``axis``."""
        b = self.builder
        n = shape[axis]
        index = b.create_make_range(b.get_block_ty(b.get_int32_ty(), [n]), 0, n)
        for _ in range(axis):
            index = b.create_expand_dims(index, 0)
        for rank in range(axis + 1, len(shape)):
            index = b.create_expand_dims(index, rank)
        current = tuple(1 if i != axis else n for i in range(len(shape)))
        return b.create_broadcast(index, list(shape)) if current != shape else index

    def combine_region(self, op: Any, arg_types: list[Any], combine: Callable[[list[Any]], list[Any]],
                       returns: Callable[..., Any] | None = None) -> None:
        """The combine region of a ``tt.reduce`` (or, with ``returns=create_scan_ret``, a ``tt.scan``)."""
        b = self.builder
        saved = b.get_insertion_point()
        block = b.create_block_with_parent(op.get_region(0), arg_types)
        b.set_insertion_point_to_start(block)
        args = [block.arg(i) for i in range(len(arg_types))]
        (returns or b.create_reduce_ret)(*combine(args))
        b.restore_insertion_point(saved)

    def reduce_combine(self, op: str, args: list[Any], dtype: str) -> Any:
        b = self.builder
        a, c = args
        if op == "sum":
            return b.create_fadd(a, c) if dtype in FLOAT_DTYPES else b.create_add(a, c)
        return self.extremum("maximum" if op == "max" else "minimum", a, c, ValueType(dtype))

    def reduce_one(self, op: str, x: Any, values: ValueType, axis: int) -> Any:
        """``sum``, ``max`` or ``min`` of ``x`` along ``axis`` (one-operand ``tt.reduce``)."""
        element = self.scalar_type(values.dtype)
        reduce = self.builder.create_reduce([x], axis)
        self.combine_region(reduce, [element, element], lambda args: [self.reduce_combine(op, args, values.dtype)])
        return reduce.get_result(0)

    def first_index_of_extremum(self, op: str, x: Any, values: ValueType, axis: int) -> Any:
        """argmax/argmin as two one-operand reductions: the extremum, then the least index
        holding it (NaN counts as the extremum, as in torch).

        A single two-operand reduce of (value, index) pairs gives wrong indices on an H200
        when the values come from a ``tt.reshape`` and span several warps (seen with Triton
        3.6: argmax of a [16, 32] tile reshaped to [512]); this form uses only elementwise ops
        and one-operand reductions, the paths every max and sum takes.
        """
        b = self.builder
        shape = values.shape
        extremum = self.reduce_one("max" if op == "argmax" else "min", x, values, axis)
        if len(shape) == 1:  # reduced to a scalar
            spread = self.splat(extremum, ValueType(values.dtype), shape)
        else:
            spread = b.create_broadcast(b.create_expand_dims(extremum, axis), list(shape))
        if values.dtype in FLOAT_DTYPES:
            both_nan = b.create_and(b.create_fcmpUNE(x, x), b.create_fcmpUNE(spread, spread))
            holds = b.create_or(b.create_fcmpOEQ(x, spread), both_nan)
        else:
            holds = b.create_icmpEQ(x, spread)
        index = self.axis_index(shape, axis)
        past_the_end = self.constant(shape[axis], "i32", shape)
        candidates = b.create_select(holds, index, past_the_end)
        return self.reduce_one("min", candidates, ValueType("i32", shape), axis)
