"""The static checker: names, dtypes, shapes, axes, dot, loops, stores and bounds.

It is also the type inference of the language: :func:`check` returns a
:class:`CheckedKernel` holding the type of every expression by its JSON path, and the
interpreter and the lowering read those types rather than working them out again.

Typing rules (Triton's, made strict where Triton would guess):

* A JSON integer literal is a *weak* i32 (i64 beyond i32's range), a JSON float (``1.0``,
  "inf", "nan") a weak f32; true/false are bool. A weak value takes the other operand's dtype
  (``mul(x_f16, 0.5)`` is f16) except that a float literal with integers gives f32; weak with
  weak stays weak (f32 if either is). A JSON float stays in f32's range, also as f64.
* A literal must fit the dtype it takes: ``x_i32 + 2147483648`` is an error (cast ``x`` to
  i64), and so is a float literal beyond the largest finite f16/bf16/f32 value; an integer
  literal beyond i64 is an error.
* Shapes broadcast as in NumPy (leading 1s are added to the shorter one). A load's mask and
  ``other``, and a store's value and mask, broadcast to the pointer's shape.
* Integers: ``program_id``, ``num_programs``, ``arange`` and meta names are i32; arithmetic
  wraps in its dtype, so offsets past 2**31 need i64 (cast one operand, or an i64 param).
* i8, u8, i16 (torch's int8, uint8, int16) compute elementwise (u8 unsigned); reductions,
  scans, sort, gather, histogram, offsets, loop bounds, umulhi, atomics need i32/i64
  (narrow_int; torch.sum of int8 gives i64). Dtypes never promote: cast (u8 with i8: i16).
* Block dims are powers of two, at most 2**20 elements per block.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Mapping, Union

from kernelgen.check import blocks as check_blocks

from kernelgen.check import tiles as check_tiles
from kernelgen.lang import nodes as L
from kernelgen.check import sequence
from kernelgen.check.bounds import unproven_accesses
from kernelgen.check.checked import (ANY_INT_DTYPES, DTYPE_BITS, ERROR_DTYPE, FLOAT_DTYPES, FP8_DTYPES, INT_DTYPES,
                               WIDE_FLOAT_DTYPES, Checked, CheckedKernel, HostTensor,
                               ParamBinding, ValueType, broadcast_shapes, broadcasts_to, child, is_literal,
                               is_power_of_two, literal_type, literal_value, _Invalid)
from kernelgen.check.dots import FP8_DOT_CAPABILITY, DotChecks
from kernelgen.check.host import HostChecks
from kernelgen.check.statements import StatementChecks
from kernelgen.errors import Diagnostic, SemanticError
from kernelgen.lang.generic import (bindings, bound_variables, declaration_problems, describe, instantiate,
                                     is_generic, resolve)
from kernelgen.check.hints import affine, claim_problem, refutation
from kernelgen.lang.limits import literal_problem, name_diagnostics, number_problem
from kernelgen.lang.rules import RULES

MAX_BLOCK_NUMEL = 1 << 20
MATH_OPS = ("exp", "exp2", "exp2_ftz", "log", "log2", "log1p", "sqrt", "rsqrt", "tanh", "sigmoid", "erf",
            "sin", "cos")

class _Checker(HostChecks, StatementChecks, DotChecks):
    def __init__(self, kernel: L.Kernel, meta: dict[str, int] | None, scratch: frozenset[str] | None = None) -> None:
        self.kernel = kernel
        # A launch of a program (kernelgen.check.sequence): its scratch tensors, and outputs that
        # other launches may write; None for a kernel of its own.
        self.scratch = scratch
        self.diagnostics: list[Diagnostic] = []
        self.types: dict[str, ValueType] = {}
        self.meta = {m.name: m.value for m in kernel.meta}
        self.meta_override = dict(meta or {})
        self.tensors: dict[str, HostTensor] = {}
        self.scalars: dict[str, str] = {}
        # Host values by name: 'int', 'float' or 'bool' (None: wrong, reported); later ones by name.
        self.host_values: dict[str, str | None] = {}
        self.later_host_values: set[str] = set()
        self.sizes: list[str] = []
        self.params: list[ParamBinding] = []
        self.stored: set[str] = set()
        self.operand_dtypes: dict[str, str] = {}
        self.lets: dict[str, L.Expr] = {}
        self.fp8_nodes: list[str] = []
        self.loop_depth = 0  # the fors around the statement being checked (a flattened nest is outermost)

    # -- reporting --------------------------------------------------------------------------

    def error(self, path: str, code: str, message: str) -> None:
        assert code in RULES, code
        self.diagnostics.append(Diagnostic(path, code, message))

    def fail(self, path: str, code: str, message: str) -> _Invalid:
        self.error(path, code, message)
        return _Invalid()

    def storage_only(self, operands: list[tuple[ValueType, str]], op: str) -> None:
        """fp8 values are only moved and converted: no fp8 arithmetic exists before a cast."""
        for t, p in operands:
            if t.dtype in FP8_DTYPES and not t.pointer:
                raise self.fail(p, "fp8_storage", f"{op} does not take {t.dtype} values; cast to f16 or f32 "
                                "first (fp8 is loaded, stored, cast, bitcast and multiplied by dot only)")

    def wide_int_only(self, operands: list[tuple[ValueType, str]], op: str) -> None:
        """8/16-bit integers are computed elementwise only: what works across a block, indexes or
        points takes i32/i64 (Triton widens narrow sums to i32 itself; torch.sum of int8 gives i64)."""
        for t, p in operands:
            if t.is_narrow_int:
                raise self.fail(p, "narrow_int", f"{op} does not take {t.dtype}; cast to i32 (or i64) first")

    # -- literals ---------------------------------------------------------------------------

    def number(self, expr: Union[int, float, str], path: str) -> None:
        """A JSON number that no dtype holds (past i64, not finite, past f32); "inf", "-inf"
        and "nan" are written as strings."""
        if isinstance(expr, str):
            return
        problem = number_problem(expr)
        if problem is not None:
            raise self.fail(path, "literal_out_of_range", problem)

    def adopt(self, t: ValueType, dtype: str, path: str) -> None:
        """A weak value (a literal, or computed from literals only) takes ``dtype``: it must
        fit there. An i64 one that is no longer a known literal only came from literals
        beyond i32."""
        if not t.weak or t.pointer or dtype == t.dtype and t.literal is None:
            return
        if t.literal is not None:
            problem = literal_problem(t.literal, dtype)
        elif t.dtype == "i64" and dtype == "i32":
            problem = "a value computed from literals beyond i32 does not fit in i32"
        else:
            return
        if problem is not None:
            raise self.fail(path, "literal_out_of_range",
                            f"{problem}, the dtype it takes here; cast to a wider dtype first")

    # -- dims -------------------------------------------------------------------------------

    def dim(self, dim: L.Dim, path: str) -> int:
        if isinstance(dim, str):
            if dim not in self.meta:
                raise self.fail(path, "not_constexpr",
                                f"block dimension {dim!r} is not a meta-parameter (declare it in 'meta')")
            value = self.meta[dim]
        else:
            value = dim
        if not is_power_of_two(value):
            raise self.fail(path, "not_power_of_two", f"block dimension {value} is not a power of two")
        return value

    def shape(self, dims: Iterable[L.Dim], path: str) -> tuple[int, ...]:
        shape = tuple(self.dim(d, child(path, i)) for i, d in enumerate(dims))
        numel = 1
        for d in shape:
            numel *= d
        if numel > MAX_BLOCK_NUMEL:
            raise self.fail(path, "block_too_large", f"a block of {numel} elements is over 2**20")
        return shape

    # -- expressions ------------------------------------------------------------------------

    def expr(self, expr: L.Expr, path: str, scope: dict[str, ValueType]) -> ValueType:
        t = self._expr(expr, path, scope)
        if t.numel > MAX_BLOCK_NUMEL:
            # Blocks also grow by arange and broadcasting, not only by written shapes.
            raise self.fail(path, "block_too_large", f"a block of {t.numel} elements is over 2**20")
        self.types[path] = t
        return t

    def _expr(self, e: L.Expr, path: str, scope: dict[str, ValueType]) -> ValueType:
        if is_literal(e):
            self.number(e, path)
            return literal_type(e)
        if isinstance(e, str):
            if e in scope:
                if scope[e].dtype == ERROR_DTYPE:
                    raise _Invalid()  # reported where it was bound
                return scope[e]
            if e in self.tensors or e in self.sizes or e in self.scalars:
                raise self.fail(path, "undefined_name",
                                f"{e!r} is a host name; bind it to a kernel param in 'params' to use it here")
            raise self.fail(path, "undefined_name", f"{e!r} is not defined here")
        method = getattr(self, f"_{type(e).__name__.lower()}")
        return method(e, path, scope)

    def _programid(self, e: L.ProgramId, path: str, scope) -> ValueType:
        if e.axis >= len(self.kernel.grid):
            raise self.fail(child(path, "axis"), "bad_axis",
                            f"the grid has {len(self.kernel.grid)} axes, no axis {e.axis}")
        return ValueType("i32")

    def _arange(self, e: L.Arange, path: str, scope) -> ValueType:
        return ValueType("i32", (self.dim(e.size, child(path, "size")),))

    def _full(self, e: L.Full, path: str, scope) -> ValueType:
        shape = self.shape(e.shape, child(path, "shape"))
        if e.dtype in FP8_DTYPES:
            raise self.fail(child(path, "dtype"), "fp8_storage", f"no {e.dtype} constants: cast an f32 full to {e.dtype}")
        self.fill_value(e.value, e.dtype, child(path, "value"), "block")
        return ValueType(e.dtype, shape)

    def fill_value(self, literal: Union[bool, int, float, str], dtype: str, path: str, what: str) -> None:
        """A value a block or an output is filled with: exactly of ``dtype``, in its range."""
        value = literal_value(literal)
        if dtype == "bool" and not isinstance(value, bool):
            raise self.fail(path, "bad_value", f"a bool {what} needs true or false, got {literal!r}")
        if dtype in ANY_INT_DTYPES and (isinstance(value, float) or isinstance(value, bool)):
            raise self.fail(path, "bad_value", f"an {dtype} {what} needs an integer, got {literal!r}")
        problem = literal_problem(value, dtype)
        if problem is not None:
            raise self.fail(path, "literal_out_of_range", problem)
        if dtype in FLOAT_DTYPES and isinstance(value, bool):
            raise self.fail(path, "bad_value", f"a float {what} needs a number, got {literal!r}")

    def _load(self, e: L.Load, path: str, scope) -> ValueType:
        ptr = self.expr(e.ptr, child(path, "ptr"), scope)
        if not ptr.pointer:
            raise self.fail(child(path, "ptr"), "not_a_pointer", f"load reads through a pointer, got {ptr}")
        if e.mask is not None:
            self.mask(e.mask, child(path, "mask"), ptr.shape, scope)
        if e.other is not None:
            if e.mask is None:
                self.error(child(path, "other"), "other_without_mask", "'other' is only read where a mask is false")
            other = self.expr(e.other, child(path, "other"), scope)
            self.fits(other, ValueType(ptr.dtype, ptr.shape), child(path, "other"), "other")
        return ValueType(ptr.dtype, ptr.shape)

    def _tileload(self, e: L.TileLoad, path: str, scope) -> ValueType:
        return check_tiles.tile_load(self, e, path, scope)

    def mask(self, expr: L.Expr, path: str, shape: tuple[int, ...], scope) -> None:
        mask = self.expr(expr, path, scope)
        if not mask.is_bool:
            raise self.fail(path, "needs_bool", f"a mask is bool, got {mask} (compare, e.g. lt offsets n)")
        if not broadcasts_to(mask.shape, shape):
            raise self.fail(path, "shape_mismatch", f"mask of shape {list(mask.shape)} does not broadcast "
                            f"to the pointer shape {list(shape)}")

    def fits(self, value: ValueType, target: ValueType, path: str, what: str) -> None:
        """A value written to (or standing in for) elements of ``target``'s dtype and shape."""
        if value.pointer:
            raise self.fail(path, "dtype_mismatch", f"{what} is a pointer; expected {target.dtype}")
        if value.dtype != target.dtype:
            ok_weak = value.weak and (target.dtype in FLOAT_DTYPES or
                                      (target.dtype in ANY_INT_DTYPES and value.dtype in INT_DTYPES))
            if not ok_weak:
                raise self.fail(path, "dtype_mismatch",
                                f"{what} is {value.dtype} but the pointer is to {target.dtype}; cast it")
        self.adopt(value, target.dtype, path)
        if not broadcasts_to(value.shape, target.shape):
            raise self.fail(path, "shape_mismatch", f"{what} of shape {list(value.shape)} does not broadcast "
                            f"to the pointer shape {list(target.shape)}")

    def unify(self, types: list[tuple[ValueType, str]], path: str, op: str) -> str:
        """The common dtype of operands, with weak literals taking their partners' dtype (and
        fitting in it)."""
        dtype = self._common_dtype(types, op)
        for t, p in types:
            self.adopt(t, dtype, p)
        return dtype

    def _common_dtype(self, types: list[tuple[ValueType, str]], op: str) -> str:
        strong = [(t, p) for t, p in types if not t.weak]
        if strong:
            first, _ = strong[0]
            for t, p in strong[1:]:
                if t.dtype != first.dtype:
                    raise self.fail(p, "dtype_mismatch",
                                    f"{op} mixes {first.dtype} and {t.dtype}; cast one operand")
            dtype = first.dtype
            if dtype in ANY_INT_DTYPES and any(t.weak and t.dtype == "f32" for t, _ in types):
                return "f32"
            if dtype == "bool" and any(t.weak for t, _ in types):
                t, p = next((t, p) for t, p in types if t.weak)
                raise self.fail(p, "dtype_mismatch", f"{op} mixes bool and a number; use true/false or cast")
            return dtype
        return "f32" if any(t.dtype == "f32" for t, _ in types) else max(
            (t.dtype for t, _ in types), key=INT_DTYPES.index)

    def broadcast(self, types: list[tuple[ValueType, str]], path: str, op: str) -> tuple[int, ...]:
        shape: tuple[int, ...] = ()
        for t, p in types:
            merged = broadcast_shapes(shape, t.shape)
            if merged is None:
                raise self.fail(path, "shape_mismatch",
                                f"{op}: shapes {[list(t.shape) for t, _ in types]} do not broadcast")
            shape = merged
        return shape

    def _unary(self, e: L.Unary, path: str, scope) -> ValueType:
        x = self.expr(e.x, child(path, "x"), scope)
        if x.pointer:
            raise self.fail(child(path, "x"), "bad_operand", f"{e.op} does not take a pointer")
        self.storage_only([(x, child(path, "x"))], e.op)
        if e.op == "not":
            if not x.is_bool:
                raise self.fail(child(path, "x"), "needs_bool", f"'not' takes bool, got {x}")
            return x
        if e.op in MATH_OPS:
            if e.op == "exp2_ftz" and x.dtype != "f32" and not x.weak:
                raise self.fail(child(path, "x"), "needs_f32", f"exp2_ftz takes f32 (ex2.approx.ftz.f32), got {x}; "
                                                               "cast it first, or use exp2")
            if x.dtype not in WIDE_FLOAT_DTYPES and not x.weak:
                raise self.fail(child(path, "x"), "needs_f32", f"{e.op} takes f32 or f64, got {x}; cast it first")
            return ValueType("f32" if x.weak else x.dtype, x.shape)
        if e.op in ("floor", "ceil", "round"):
            if not (x.is_float or x.weak):
                raise self.fail(child(path, "x"), "needs_float", f"{e.op} takes a float, got {x}")
            return ValueType("f32" if x.weak else x.dtype, x.shape)
        if x.is_bool:
            raise self.fail(child(path, "x"), "bad_operand", f"{e.op} does not take bool")
        return ValueType(x.dtype, x.shape, weak=x.weak)  # neg/abs of a literal is no longer it

    def _binary(self, e: L.Binary, path: str, scope) -> ValueType:
        lp, rp = child(path, "lhs"), child(path, "rhs")
        lhs = self.expr(e.lhs, lp, scope)
        rhs = self.expr(e.rhs, rp, scope)
        shape = self.broadcast([(lhs, lp), (rhs, rp)], path, e.op)
        if lhs.pointer or rhs.pointer:
            return self.pointer_arith(e, lhs, rhs, shape, path)
        self.storage_only([(lhs, lp), (rhs, rp)], e.op)
        dtype = self.unify([(lhs, lp), (rhs, rp)], path, e.op)
        self.operand_dtypes[path] = dtype
        weak = lhs.weak and rhs.weak
        if e.op in L.COMPARISON_OPS:
            if dtype == "bool" and e.op not in ("eq", "ne"):
                raise self.fail(path, "bad_operand", f"{e.op} does not compare bools")
            return ValueType("bool", shape)
        if e.op in L.LOGICAL_OPS:
            if dtype in FLOAT_DTYPES:
                raise self.fail(path, "bad_operand", f"{e.op} takes bool or integer operands, got {dtype}")
            return ValueType(dtype, shape, weak=weak)
        if dtype == "bool":
            raise self.fail(path, "bad_operand", f"{e.op} does not take bool; cast to a number first")
        if e.op in L.BIT_OPS and dtype not in ANY_INT_DTYPES:
            raise self.fail(path, "needs_int", f"{e.op} takes integers, got {dtype}; bitcast a float first")
        if e.op == "umulhi":
            self.wide_int_only([(lhs, lp), (rhs, rp)], e.op)
        if e.op == "div" and dtype not in FLOAT_DTYPES:
            raise self.fail(path, "needs_float", "div is true division of floats; use idiv (truncating) for integers")
        if e.op in ("idiv", "cdiv") and dtype not in ANY_INT_DTYPES:
            raise self.fail(path, "needs_int", f"{e.op} takes integers, got {dtype}; use div for floats")
        if e.op == "pow" and dtype not in WIDE_FLOAT_DTYPES:
            raise self.fail(path, "needs_f32", f"pow takes f32 or f64, got {dtype}; cast first")
        return ValueType(dtype, shape, weak=weak)

    def pointer_arith(self, e: L.Binary, lhs: ValueType, rhs: ValueType, shape, path: str) -> ValueType:
        ptr, offset, opath = (lhs, rhs, child(path, "rhs")) if lhs.pointer else (rhs, lhs, child(path, "lhs"))
        if e.op not in ("add", "sub") or (e.op == "sub" and not lhs.pointer):
            raise self.fail(path, "bad_operand", f"pointers take + and - of an integer offset, not {e.op}")
        self.wide_int_only([(offset, opath)], "a pointer offset")
        if offset.pointer or not offset.is_int:
            raise self.fail(opath, "needs_int", f"a pointer offset is an integer, got {offset}")
        return ValueType(ptr.dtype, shape, pointer=True, bases=ptr.bases)

    def _where(self, e: L.Where, path: str, scope) -> ValueType:
        cp, xp, yp = child(path, "cond"), child(path, "x"), child(path, "y")
        cond = self.expr(e.cond, cp, scope)
        x = self.expr(e.x, xp, scope)
        y = self.expr(e.y, yp, scope)
        if not cond.is_bool:
            raise self.fail(cp, "needs_bool", f"where's condition is bool, got {cond}")
        shape = self.broadcast([(cond, cp), (x, xp), (y, yp)], path, "where")
        if x.pointer or y.pointer:
            if not (x.pointer and y.pointer and x.dtype == y.dtype):
                raise self.fail(path, "dtype_mismatch", f"where between {x} and {y}")
            return ValueType(x.dtype, shape, pointer=True, bases=x.bases | y.bases)
        self.storage_only([(x, xp), (y, yp)], "where")
        dtype = self.unify([(x, xp), (y, yp)], path, "where")
        self.operand_dtypes[path] = dtype
        return ValueType(dtype, shape, weak=x.weak and y.weak)

    def _numeric(self, operands: list[tuple[ValueType, str]], path: str, op: str, floats: bool) -> ValueType:
        for t, p in operands:
            if t.pointer or t.is_bool:
                raise self.fail(p, "bad_operand", f"{op} takes numbers, got {t}")
        self.storage_only(operands, op)
        shape = self.broadcast(operands, path, op)
        dtype = self.unify(operands, path, op)
        if floats and dtype not in FLOAT_DTYPES:
            raise self.fail(path, "needs_float", f"{op} takes floats, got {dtype}")
        self.operand_dtypes[path] = dtype
        return ValueType(dtype, shape, weak=all(t.weak for t, _ in operands))

    def _fma(self, e: L.Fma, path: str, scope) -> ValueType:
        ops = [(self.expr(getattr(e, f), child(path, f), scope), child(path, f)) for f in "xyz"]
        return self._numeric(ops, path, "fma", floats=True)

    def _clamp(self, e: L.Clamp, path: str, scope) -> ValueType:
        ops = [(self.expr(getattr(e, f), child(path, f), scope), child(path, f)) for f in ("x", "lo", "hi")]
        return self._numeric(ops, path, "clamp", floats=False)

    def _cast(self, e: L.Cast, path: str, scope) -> ValueType:
        x = self.expr(e.x, child(path, "x"), scope)
        if x.pointer:
            raise self.fail(child(path, "x"), "bad_operand", "pointers cannot be cast")
        if (e.dtype in FP8_DTYPES or x.dtype in FP8_DTYPES) and e.dtype != x.dtype:
            self.fp8_nodes.append(path)
        return ValueType(e.dtype, x.shape)

    def _bitcast(self, e: L.Bitcast, path: str, scope) -> ValueType:
        x = self.expr(e.x, child(path, "x"), scope)
        if x.pointer or x.dtype not in DTYPE_BITS:
            raise self.fail(child(path, "x"), "bad_bitcast", f"bitcast takes a number's bits, got {x}")
        if e.dtype not in DTYPE_BITS or DTYPE_BITS[e.dtype] != DTYPE_BITS[x.dtype]:
            widths = sorted(d for d, bits in DTYPE_BITS.items() if bits == DTYPE_BITS[x.dtype] and d != x.dtype)
            raise self.fail(child(path, "dtype"), "bad_bitcast",
                            f"{x.dtype} has {DTYPE_BITS[x.dtype]} bits: bitcast it to {' or '.join(widths)}, not {e.dtype}")
        return ValueType(e.dtype, x.shape)

    def _random(self, e: L.Random, path: str, scope) -> ValueType:
        sp, op = child(path, "seed"), child(path, "offset")
        seed = self.expr(e.seed, sp, scope)
        offset = self.expr(e.offset, op, scope)
        if seed.shape:
            raise self.fail(sp, "needs_scalar", f"the seed is a scalar, got {seed}")
        for t, p, what in ((seed, sp, "seed"), (offset, op, "offset")):
            if not t.is_int:
                raise self.fail(p, "needs_int", f"the {what} is an integer (i32 or i64), got {t}")
        return ValueType("i32" if e.op == "randint" else "f32", offset.shape)

    def axis(self, axis: int, rank: int, path: str, inclusive: bool = False) -> None:
        top = rank + 1 if inclusive else rank
        if not 0 <= axis < top:
            raise self.fail(path, "bad_axis", f"axis {axis} is outside 0..{top - 1} for a value of rank {rank}")

    def _reduce(self, e: L.Reduce, path: str, scope) -> ValueType:
        x = self.expr(e.x, child(path, "x"), scope)
        if x.pointer or x.is_bool:
            raise self.fail(child(path, "x"), "bad_operand", f"{e.op} takes numbers, got {x}")
        self.storage_only([(x, child(path, "x"))], e.op)
        self.wide_int_only([(x, child(path, "x"))], e.op)
        if not x.shape:
            raise self.fail(child(path, "x"), "bad_axis", f"{e.op} reduces a block, got a scalar")
        self.axis(e.axis, len(x.shape), child(path, "axis"))
        if e.op == "sum" and x.dtype not in (*WIDE_FLOAT_DTYPES, *INT_DTYPES):
            raise self.fail(child(path, "x"), "needs_f32",
                            f"sum takes f32, f64, i32 or i64, got {x.dtype}; cast to f32 first")
        shape = list(x.shape)
        if e.keepdims:
            shape[e.axis] = 1
        else:
            del shape[e.axis]
        dtype = "i32" if e.op in ("argmax", "argmin") else ("f32" if x.weak else x.dtype)
        return ValueType(dtype, tuple(shape))

    def _scan(self, e: L.Scan, path: str, scope) -> ValueType:
        return check_blocks.scan(self, e, path, scope)

    def _sort(self, e: L.Sort, path: str, scope) -> ValueType:
        return check_blocks.sort(self, e, path, scope)

    def _topk(self, e: L.TopK, path: str, scope) -> ValueType:
        return check_blocks.topk(self, e, path, scope)

    def _gather(self, e: L.Gather, path: str, scope) -> ValueType:
        return check_blocks.gather(self, e, path, scope)

    def _histogram(self, e: L.Histogram, path: str, scope) -> ValueType:
        return check_blocks.histogram(self, e, path, scope)

    def _join(self, e: L.Join, path: str, scope) -> ValueType:
        return check_blocks.join(self, e, path, scope)

    def _expanddims(self, e: L.ExpandDims, path: str, scope) -> ValueType:
        x = self.expr(e.x, child(path, "x"), scope)
        self.axis(e.axis, len(x.shape), child(path, "axis"), inclusive=True)
        shape = list(x.shape)
        shape.insert(e.axis, 1)
        return x.with_shape(tuple(shape))

    def _reshape(self, e: L.Reshape, path: str, scope) -> ValueType:
        x = self.expr(e.x, child(path, "x"), scope)
        shape = self.shape(e.shape, child(path, "shape"))
        if e.op == "reshape":
            if x.numel != ValueType("f32", shape).numel:
                raise self.fail(child(path, "shape"), "shape_mismatch",
                                f"reshape of {list(x.shape)} to {list(shape)} changes the number of elements")
        elif not broadcasts_to(x.shape, shape):
            raise self.fail(child(path, "shape"), "shape_mismatch", f"{list(x.shape)} does not broadcast to {list(shape)}")
        return x.with_shape(shape)

    def _trans(self, e: L.Trans, path: str, scope) -> ValueType:
        x = self.expr(e.x, child(path, "x"), scope)
        dims = list(reversed(range(len(x.shape)))) if e.dims is None else e.dims
        if sorted(dims) != list(range(len(x.shape))):
            raise self.fail(child(path, "dims"), "bad_axis", f"{dims} is not a permutation of the axes of {x}")
        return x.with_shape(tuple(x.shape[d] for d in dims))

    def _hint(self, e: L.Hint, path: str, scope) -> ValueType:
        x = self.expr(e.x, child(path, "x"), scope)
        if x.pointer or not x.is_int:
            raise self.fail(child(path, "x"), "bad_hint", f"hints are stated on integer offsets, got {x}")
        problem = claim_problem(e, x.shape)
        if problem is not None:
            raise self.fail(child(path, problem[0]), "bad_hint", problem[1])
        scalars = {name for name, t in scope.items() if t.is_int and not t.shape and not t.pointer}
        false = refutation(e, x.shape, affine(e.x, self.lets, self.meta, scalars))
        if false is not None:
            raise self.fail(path, "bad_hint", f"the hint is false: {false}")
        return x

    def _typeinfo(self, e: L.TypeInfo, path: str, scope) -> ValueType:
        if e.op == "finfo" and e.dtype not in FLOAT_DTYPES + FP8_DTYPES:
            raise self.fail(child(path, "dtype"), "needs_float", f"finfo takes a float dtype, got {e.dtype}: use iinfo")
        if e.op == "iinfo" and e.dtype not in ANY_INT_DTYPES:
            raise self.fail(child(path, "dtype"), "needs_int", f"iinfo takes an integer dtype, got {e.dtype}")
        if e.op == "iinfo" and e.what not in ("max", "min"):
            raise self.fail(child(path, "what"), "bad_value", f"iinfo gives max or min, not {e.what}")
        return ValueType("f32" if e.dtype in FP8_DTYPES else e.dtype)

    def _tensorinfo(self, e: L.TensorInfo, path: str, scope) -> ValueType:
        raise self.fail(path, "host_only", f"{e.op} is a host expression; bind it to a param and use the param")

    def _deviceinfo(self, e: L.DeviceInfo, path: str, scope) -> ValueType:
        raise self.fail(path, "host_only", f"{e.op} is a host expression; bind it to a param and use the param "
                        "(a persistent loop steps by num_programs)")

    # -- the whole kernel -------------------------------------------------------------------

    def run(self) -> CheckedKernel:
        # Names first, alone: no later message should quote a name of megabytes.
        named = name_diagnostics(self.kernel)
        if named:
            raise SemanticError(named)
        self.check_host()
        scope: dict[str, ValueType] = {}
        for b in self.params:
            scope[b.name] = b.type
        for name in self.meta:
            scope[name] = ValueType("i32")
        if not self.diagnostics:
            self.block(self.kernel.body, "/body", scope)
        if not self.diagnostics and self.scratch is None:
            for i, out in enumerate(self.kernel.outputs):
                if out.name not in self.stored:
                    self.error(f"/outputs/{i}", "output_not_written",
                               f"no store or atomic writes output {out.name!r} (bind it to a param and store "
                               "through it)")
        # Later stages read host values inlined (kernelgen.lang.host_nodes.inline_host_values).
        table = L.host_value_table(self.kernel)
        params = [replace(b, value=L.inline_expr(b.value, table)) if b.value is not None else b for b in self.params]
        checked = CheckedKernel(L.inline_host_values(self.kernel), dict(self.meta), self.types, self.tensors,
                                tuple(self.sizes), params, self.operand_dtypes, self.fp8_nodes)
        if not self.diagnostics:
            self.diagnostics.extend(unproven_accesses(checked))
        if self.diagnostics:
            raise SemanticError(self.diagnostics)
        return checked


def check(kernel: L.Kernel, meta: dict[str, int] | None = None,
          dtypes: Mapping[str, str] | None = None, capability: int | None = None) -> Checked:
    """Check a kernel for the given meta values (default: the kernel's own).

    Returns the typed kernel; raises :class:`SemanticError` with every diagnostic found. A
    generic kernel (dtype variables) is checked in every variant and its default variant is
    returned, or only the variant ``dtypes`` binds (:mod:`kernelgen.lang.generic`). A program of
    several launches is checked launch by launch, then as a sequence (:mod:`kernelgen.check.sequence`).
    With a target's ``capability`` (90 for sm_90) every launch must also compile for it
    (:func:`check_target`).
    """
    form = sequence.form_diagnostics(kernel)
    if form:
        raise SemanticError(form)
    if not kernel.is_program:
        return _check_one(kernel, meta, dtypes, None, capability)
    named = name_diagnostics(kernel) + sequence.launch_name_diagnostics(kernel)
    if named:
        raise SemanticError(named)
    diagnostics: list[Diagnostic] = []
    launches: list[CheckedKernel] = []
    for i in range(len(kernel.launches)):
        try:
            launches.append(_check_one(sequence.launch_kernel(kernel, i), meta, dtypes, sequence.scratch_names(kernel),
                                       capability))
        except SemanticError as error:
            for d in sequence.relocate(kernel, i, error.diagnostics):
                if d not in diagnostics:  # the document's shared parts, found once per launch
                    diagnostics.append(d)
    if not diagnostics:
        diagnostics = sequence.sequence_diagnostics(kernel, launches)
    if diagnostics:
        raise SemanticError(diagnostics)
    return sequence.program_of(kernel, launches)


def _check_one(kernel: L.Kernel, meta: dict[str, int] | None, dtypes: Mapping[str, str] | None,
               scratch: frozenset[str] | None, capability: int | None) -> CheckedKernel:
    if dtypes is not None or is_generic(kernel):
        checked = _check_generic(kernel, meta, dtypes, scratch)
    else:
        checked = check_concrete(kernel, meta, scratch)
    if capability is not None:
        check_target(checked, capability)
    return checked


def check_target(checked: CheckedKernel, capability: int) -> None:
    """What a target lacks, as the checker's diagnostics: fp8 dots and fp8 conversions need sm_89
    (Triton 3.6's frontend refuses e4m3 below it: "type fp8e4nv not supported in this
    architecture", and its backend fails on our e4m3 conversions in ConvertTritonGPUToLLVM)."""
    if capability < FP8_DOT_CAPABILITY and checked.fp8_nodes:
        raise SemanticError([Diagnostic(path, "fp8_target", f"fp8 dots and casts to or from fp8 need "
                                        f"sm_{FP8_DOT_CAPABILITY} or later; this compile is for sm_{capability}")
                             for path in checked.fp8_nodes])


def _check_generic(kernel: L.Kernel, meta: dict[str, int] | None, binding: Mapping[str, str] | None,
                   scratch: frozenset[str] | None = None) -> CheckedKernel:
    """Every variant of a generic kernel (each diagnostic names its binding), returning the
    default one; or ``binding``'s variant alone."""
    problems = declaration_problems(kernel)
    if problems:
        raise SemanticError(problems)
    if binding is not None:
        unknown = sorted(set(binding) - {v.name for v in bound_variables(kernel)})
        if unknown:
            derived = [name for name in unknown if name in {v.name for v in kernel.dtypes}]
            raise SemanticError(Diagnostic("/dtypes", "bad_dtype_variable",
                                           f"{', '.join(derived)}: derived, a binding names only declared (of) "
                                           f"variables" if derived else
                                           f"the kernel declares no dtype variable {', '.join(unknown)}"))
        for variable in bound_variables(kernel):
            if binding.get(variable.name) not in variable.of:
                raise SemanticError(Diagnostic("/dtypes", "bad_dtype_variable",
                                               f"{variable.name} takes one of {variable.of}, "
                                               f"got {binding.get(variable.name)!r}"))
        return check_concrete(instantiate(kernel, binding), meta, scratch)
    diagnostics: list[Diagnostic] = []
    default: CheckedKernel | None = None
    for each in bindings(kernel):
        try:
            checked = check_concrete(instantiate(kernel, each), meta, scratch)
        except SemanticError as error:
            diagnostics += [Diagnostic(d.path, d.code, f"with {describe(resolve(kernel, each))}: {d.message}")
                            for d in error.diagnostics]
            continue
        default = default or checked
    if diagnostics or default is None:
        raise SemanticError(diagnostics)
    return default


def check_concrete(kernel: L.Kernel, meta: dict[str, int] | None = None,
                   scratch: frozenset[str] | None = None) -> CheckedKernel:
    """Check a kernel without dtype variables (``scratch``: as a launch of a program)."""
    return _Checker(kernel, meta, scratch).run()
