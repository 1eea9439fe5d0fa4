"""Lowering: a checked kernel AST -> Triton IR (TTIR), built with Triton's own MLIR builder.

Triton's bindings (``triton._C.libtriton.ir``) are the only Python MLIR bindings that register
the ``tt`` dialect, so the module built here is really verified, and it is exactly what
``triton.compile`` would hand to its backend. Every op carries the location of the AST node it
comes from (a file-line-column location whose "file" is the node's JSON path), so MLIR's
diagnostics, which it writes to the C++ stderr, read ``/body/3/value: error: ...`` and are
turned into :class:`~kernelgen.errors.LoweringError` diagnostics with that path.

The meaning of every construct is :mod:`kernelgen.interp.execute`'s; the choices that make the GPU
agree with it:

* Operands are converted the way the interpreter's ``eval_as`` converts them: a literal
  becomes a constant of the operation's dtype directly (``checked.operand_dtypes``), a value
  of another dtype is converted (int -> float via f32, as torch does), and blocks broadcast
  NumPy-style (``tt.expand_dims`` to equal rank, then ``tt.broadcast``; scalars ``tt.splat``).
* Integer ``idiv``/``cdiv``/``rem`` divide by a divisor made safe (1 where it is 0) and give 0
  where it was 0, as the interpreter does; this also keeps LLVM free of division-by-zero UB.
* ``div`` and ``sqrt`` are correctly rounded (``tt.precise_divf``, ``tt.precise_sqrt``), like
  torch's CUDA kernels; Triton's plain ``arith.divf`` lowers to the 2-ulp ``div.full.f32``.
  f16/bf16 division and float ``rem`` go through f32 (exact for these formats).
* Float ``rem`` is C ``fmod`` (libdevice ``__nv_fmodf``), exact; LLVM's ``frem`` expansion on
  NVPTX is not. ``pow``, ``tanh`` and ``log1p`` are libdevice calls (``__nv_powf``,
  ``__nv_tanhf``, ``__nv_log1pf``) as ``triton.language.extra.libdevice`` makes them; the
  backend links libdevice. ``sigmoid`` is ``1 / (1 + exp(-x))``, the interpreter's formula.
  The other functions are the ``math`` dialect ops ``tl.exp`` & co. emit: ``exp``, ``exp2``
  and ``rsqrt`` become the hardware's approximations (``ex2.approx.f32``, ``rsqrt.approx.f32``;
  ``exp`` first rounds ``x*log2(e)``, so its error grows with ``|x|``), ``log``, ``log2``,
  ``sin``, ``cos`` and ``erf`` libdevice calls. Measured on an H200 against float64 (4M random
  inputs each): ``exp`` 2.4 ulp for ``|x| < 1`` and 63 ulp near 88; ``exp2``, ``rsqrt``,
  ``log``, ``log2``, ``log1p``, ``tanh``, ``sin``, ``cos``, ``erf``, ``pow`` at most 2.5 ulp.
* f64 computes in f64 throughout: its math functions, ``pow`` and ``rem`` are libdevice's
  double versions (``__nv_exp``, ``__nv_pow``, ``__nv_fmod``...) except ``rsqrt``, which is
  ``1 / sqrt(x)`` (libdevice's is the unrefined ``rsqrt.approx.f64``); its division ``arith.divf``
  (``div.rn.f64``); f64 to f16/bf16 rounds through f32, as torch's conversion does; an integer
  converts to f64 directly (exact up to 2**53).
* ``maximum``/``minimum``, ``clamp`` and the ``max``/``min`` reductions use the NaN-propagating
  ``arith.maximumf``/``minimumf``; comparisons are ordered except ``ne`` (``UNE``).
* ``argmax``/``argmin`` take the extremum, then the least index holding it; NaN counts as the
  extremum, as in ``torch.argmax``/``argmin``.
* Reductions and comparisons of f16/bf16 values run in f32 (exact), as Triton's own ``tl.max``
  does for bf16, which has no hardware max or compare before sm_90.
* bool tensors live in memory as bytes: bool pointers are ``!tt.ptr<i8>``, loads compare with 0
  and stores zero-extend, as Triton does for ``*i1``.
* A masked load without ``other`` passes an explicit zero ``other``: masked-off lanes read 0.
* Shifts select 0 (``shr``: shift by width - 1) for amounts outside 0..width-1 (LLVM's are
  poison there); ``umulhi`` is ``tt.mulhiui``; random numbers are :mod:`kernelgen.lower.bits`.
* fp8 casts round once, as torch's: other sources than f16 become f32 (f64 and integers rounded
  there, as torch converts them), which is rounded to odd in f16 (:func:`kernelgen.lower.bits.round_to_odd_f16`),
  then ``tt.fp_to_fp`` RTNE (``cvt.rn.satfinite``) on every target. Triton 3.6 itself converts
  f32 directly on sm_90 (``cvt.rn.satfinite.e4m3x2.f32``) but on sm_89 truncates to f16 first
  (``cvt.rz.f16.f32``), which rounds twice; one route keeps both GPUs equal to the interpreter,
  for five integer/float instructions per element. fp8 widens through f32 (exact). An fp8 constant is a
  bitcast byte. An fp8 dot passes ``max_num_imprecise_acc`` = its own K: its products are summed
  in the tensor cores' narrower accumulator and added to ``acc`` in f32, once per dot. Triton's
  sm_90 default (2**30) keeps a whole K loop in the narrow accumulator (measured: out of bf16
  tolerance at K = 2931); promoting every 32 (one wgmma's K) waited on each wgmma and ran
  fp8_gemm_rowwise 1.2x and fp8_gemm_blockwise 1.4x slower than once per 128-deep dot (H200).
* A ``for`` whose step is not a positive literal runs zero times when the step is not positive
  (the interpreter rejects such a loop; ``scf.for`` would otherwise never end).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Collection, Literal, NamedTuple, Sequence

from triton._C.libtriton import ir, nvidia

from kernelgen.lang import nodes as L
from kernelgen.lang.limits import type_info
from kernelgen.lower import blocks as lower_blocks
from kernelgen.check.checker import (FLOAT_DTYPES, INT_DTYPES, CheckedKernel, ValueType, child, is_literal,
                             literal_value)
from kernelgen.check.checked import (ANY_INT_DTYPES, DTYPE_BITS, FP8_DTYPES, NARROW_INT_DTYPES, UNSIGNED_DTYPES,
                                     WIDE_FLOAT_DTYPES)
from kernelgen.lang.limits import INT_RANGES
from kernelgen.errors import Diagnostic, KernelgenError, LoweringError
from kernelgen.lower.control import ControlLowering, Lowered, Scalar
from kernelgen.lower.memory import MemoryLowering
from kernelgen.lower.native import (NativeOutput, capture_native_output, parse_mlir_diagnostics,  # noqa: F401
                                    set_native_output_sink)  # NativeOutput and the sink: re-exported
from kernelgen.lower.bits import RandomLowering, lower_bit_op, round_to_odd_f16
from kernelgen.lower.integers import IntegerLowering
from kernelgen.lower.reduce import ReductionLowering, wide_dtype


# Every pointer argument is 16-byte aligned (torch allocations are), and integer parameters
# named in ``divisible_by_16`` are nonzero multiples of 16 (Triton's own specialization of such
# arguments, without 0, so that dividing by one needs no guard): with this attribute Triton's
# axis analysis proves contiguous accesses aligned, masks like ``offsets < n`` constant over
# groups of lanes and ``offsets % n`` contiguous, and vectorizes loads and stores.
DIVISIBILITY = 16


class KernelParam(NamedTuple):
    """One parameter of the compiled kernel, in launch order: ``(name, kind, dtype)``, kind
    ``"ptr"`` (``dtype`` is the pointee's) or ``"scalar"``."""

    name: str
    kind: Literal["ptr", "scalar"]
    dtype: str


@dataclass
class LoweredKernel:
    """A verified TTIR module. The module belongs to ``context``: keep both alive together."""

    name: str
    module: Any
    context: Any
    ttir: str
    params: tuple[KernelParam, ...]


# ---------------------------------------------------------------------------------------------
# The lowering


class _Lowering(MemoryLowering, ReductionLowering, ControlLowering, IntegerLowering, lower_blocks.JoinLowering):
    def __init__(self, checked: CheckedKernel, context: Any, divisible_by_16: Collection[str]) -> None:
        self.checked = checked
        self.divisible_by_16 = frozenset(divisible_by_16)
        self.types = checked.types
        self.context = context
        self.builder = ir.builder(context)
        self._locs: dict[str, Any] = {}
        self.walled_scans = lower_blocks.walls_off_scans(checked)

    # -- locations and errors ---------------------------------------------------------------

    def at(self, path: str) -> None:
        """Give the ops created from now on the location of the AST node at ``path``."""
        loc = self._locs.get(path)
        if loc is None:
            loc = self._locs[path] = self.builder.create_loc(path or "/", 0, 0)
        self.builder.set_loc(loc)

    def guarded(self, path: str, build: Callable[[], Any]) -> Any:
        """Run ``build``; a Python-side failure becomes a LoweringError at ``path``."""
        try:
            return build()
        except KernelgenError:
            raise
        except Exception as exc:
            raise LoweringError(Diagnostic(path, "lowering_failed",
                                           f"cannot lower this node: {type(exc).__name__}: {exc}")) from exc

    # -- types and constants ----------------------------------------------------------------

    def scalar_type(self, dtype: str, memory: bool = False) -> Any:
        b = self.builder
        if dtype == "bool":
            return b.get_int8_ty() if memory else b.get_int1_ty()
        return {"f32": b.get_float_ty, "f16": b.get_half_ty, "bf16": b.get_bf16_ty, "f64": b.get_double_ty,
                "i32": b.get_int32_ty, "i64": b.get_int64_ty, "f8e4m3": b.get_fp8e4nv_ty,
                "f8e5m2": b.get_fp8e5_ty, "i8": b.get_int8_ty, "u8": b.get_int8_ty, "i16": b.get_int16_ty}[dtype]()

    def element_type(self, t: ValueType) -> Any:
        if t.pointer:
            return self.builder.get_ptr_ty(self.scalar_type(t.dtype, memory=True), 1)
        return self.scalar_type(t.dtype)

    def ir_type(self, t: ValueType) -> Any:
        element = self.element_type(t)
        return self.builder.get_block_ty(element, list(t.shape)) if t.shape else element

    def constant(self, value: Scalar, dtype: str, shape: Sequence[int] = ()) -> Any:
        b = self.builder
        if dtype in FP8_DTYPES:
            # No fp8 constant builder: the byte a cast gives (kernelgen.interp.execute), bitcast, so
            # that a constant needs no conversion instruction (none exists before sm_89).
            byte = fp8_byte(value, dtype)
            bits = b.get_int8(byte - 256 if byte > 127 else byte)
            if shape:
                bits = b.create_splat(b.get_block_ty(b.get_int8_ty(), list(shape)), bits)
            return b.create_bitcast(bits, self.ir_type(ValueType(dtype, tuple(shape))))
        if dtype in FLOAT_DTYPES:
            make = {"f32": b.get_fp32, "f16": b.get_fp16, "bf16": b.get_bf16, "f64": b.get_fp64}[dtype]
            scalar = make(float(value))
        elif dtype == "bool":
            scalar = b.get_int1(bool(value))
        else:  # TTIR integers are signless: a u8 constant is the i8 of its bits
            bits = DTYPE_BITS[dtype]
            signed = (int(value) + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
            scalar = {8: b.get_int8, 16: b.get_int16, 32: b.get_int32, 64: b.get_int64}[bits](signed)
        return self.splat(scalar, ValueType(dtype), tuple(shape))

    def splat(self, scalar: Any, t: ValueType, shape: tuple[int, ...]) -> Any:
        if not shape:
            return scalar
        return self.builder.create_splat(self.ir_type(t.with_shape(shape)), scalar)

    # -- conversions ------------------------------------------------------------------------

    def broadcast(self, value: Any, t: ValueType, shape: tuple[int, ...]) -> Any:
        """NumPy broadcasting of ``value`` (of type ``t``) to ``shape``."""
        if t.shape == shape:
            return value
        if not t.shape:
            return self.splat(value, t, shape)
        current = list(t.shape)
        while len(current) < len(shape):
            value = self.builder.create_expand_dims(value, 0)
            current.insert(0, 1)
        if tuple(current) != shape:
            value = self.builder.create_broadcast(value, list(shape))
        return value

    def convert(self, value: Any, t: ValueType, dtype: str) -> Any:
        """Elementwise ``value.to(dtype)`` with torch's meaning (``!= 0`` for bool)."""
        src = t.dtype
        if src == dtype:
            return value
        b = self.builder
        shape = t.shape

        def ty(d: str) -> Any:
            return self.ir_type(ValueType(d, shape))

        if src in FP8_DTYPES:
            # Exact in f32 (sm_90 has no direct fp8 to bf16 or integer conversion); then as f32.
            wide = b.create_fp_to_fp(value, ty("f32"), None)
            return self.convert(wide, ValueType("f32", shape), dtype)
        if dtype in FP8_DTYPES:
            # f16 exactly; others as f32 (f64 and integers rounded there, as torch converts), then
            # rounded to odd in f16, so cvt.rn.satfinite rounds the f32 value once.
            if src != "f16":
                wide = self.convert(value, t, "f32")
                value = round_to_odd_f16(b, wide, ty("f16"), ty("f32"),
                                         b.get_block_ty(b.get_int16_ty(), list(shape)) if shape else b.get_int16_ty())
            return b.create_fp_to_fp(value, ty(dtype), ir.ROUNDING_MODE.RTNE)
        if dtype == "bool":
            zero = self.constant(0, src, shape)
            return b.create_fcmpUNE(value, zero) if src in FLOAT_DTYPES else b.create_icmpNE(value, zero)
        via = wide_dtype(dtype)
        unsigned = src in UNSIGNED_DTYPES
        if src == "bool":
            if dtype in ANY_INT_DTYPES:
                return b.create_int_cast(value, ty(dtype), False)
            return self.narrow_float(b.create_ui_to_fp(value, ty(via)), shape, dtype, via)
        if src in ANY_INT_DTYPES and dtype in ANY_INT_DTYPES:
            return b.create_int_cast(value, ty(dtype), not unsigned)  # u8 zero-extends
        if src in ANY_INT_DTYPES:
            # torch converts an integer to f16/bf16 through f32 (two roundings); so do we.
            to_float = b.create_ui_to_fp if unsigned else b.create_si_to_fp
            return self.narrow_float(to_float(value, ty(via)), shape, dtype, via)
        wide = self.widen_float(value, t)
        if dtype in NARROW_INT_DTYPES:
            # Clamped in the float (its bounds are exact there), NaN to 0: no conversion is out of range.
            (low, high), via = INT_RANGES[dtype], wide_dtype(src)
            clamped = b.create_minimumf(b.create_maximumf(wide, self.constant(low, via, shape)), self.constant(high, via, shape))
            word = b.create_select(b.create_fcmpUNE(wide, wide), self.constant(0, "i32", shape),
                                   b.create_fp_to_si(clamped, ty("i32")))
            return b.create_int_cast(word, ty(dtype), True)
        if dtype in INT_DTYPES:
            return b.create_fp_to_si(wide, ty(dtype))
        return self.narrow_float(wide, shape, dtype, wide_dtype(src))

    def widen_float(self, value: Any, t: ValueType) -> Any:
        """An f16/bf16 value as f32 (exact); f32 and f64 as they are (see :func:`wide_dtype`)."""
        if t.dtype in WIDE_FLOAT_DTYPES:
            return value
        return self.builder.create_fp_ext(value, self.ir_type(ValueType("f32", t.shape)))

    def narrow_float(self, value: Any, shape: tuple[int, ...], dtype: str, source: str = "f32") -> Any:
        """A value of ``source`` (f32 or f64) as ``dtype``: rounded to nearest even where it is
        narrower (f64 to f16/bf16 through f32, as torch converts), exact where it is wider."""
        if dtype == source:
            return value
        b = self.builder
        if source == "f64" and dtype != "f32":
            value, source = self.narrow_float(value, shape, "f32", "f64"), "f32"
        target = self.ir_type(ValueType(dtype, shape))
        return b.create_fp_ext(value, target) if dtype == "f64" else b.create_fp_trunc(value, target)

    def materialize(self, value: Lowered, t: ValueType, dtype: str | None = None,
                    shape: tuple[int, ...] | None = None) -> Any:
        """A lowered value as an MLIR value of ``dtype`` broadcast to ``shape`` (the
        interpreter's ``typed``): a literal becomes a constant of ``dtype`` directly."""
        dtype = t.dtype if dtype is None or t.pointer else dtype
        shape = t.shape if shape is None else shape
        if isinstance(value, (bool, int, float)):
            return self.constant(value, dtype, shape)
        if not t.pointer:
            value = self.convert(value, t, dtype)
        return self.broadcast(value, ValueType(dtype, t.shape, t.pointer), shape)

    def operand(self, e: L.Expr, path: str, env: dict[str, Lowered], dtype: str | None = None,
                shape: tuple[int, ...] | None = None) -> Any:
        value = self.expr(e, path, env)
        self.at(path)
        return self.guarded(path, lambda: self.materialize(value, self.types[path], dtype, shape))

    # -- expressions ------------------------------------------------------------------------

    def expr(self, e: L.Expr, path: str, env: dict[str, Lowered]) -> Lowered:
        if is_literal(e):
            return literal_value(e)
        if isinstance(e, str):
            if e not in env:
                raise LoweringError(Diagnostic(path, "lowering_failed", f"{e!r} has no value here"))
            return env[e]
        method = getattr(self, f"_{type(e).__name__.lower()}", None)
        if method is None:
            raise LoweringError(Diagnostic(path, "lowering_failed", f"{e.op!r} is not a kernel operation"))
        return self.guarded(path, lambda: method(e, path, env))

    def _programid(self, e: L.ProgramId, path: str, env) -> Any:
        self.at(path)
        if e.op == "program_id":
            return self.builder.create_get_program_id(e.axis)
        return self.builder.create_get_num_programs(e.axis)

    def _typeinfo(self, e: L.TypeInfo, path: str, env) -> Any:
        self.at(path)
        return self.constant(type_info(e.op, e.dtype, e.what), self.types[path].dtype)

    def _arange(self, e: L.Arange, path: str, env) -> Any:
        t = self.types[path]
        self.at(path)
        return self.builder.create_make_range(self.ir_type(t), 0, t.shape[0])

    def _full(self, e: L.Full, path: str, env) -> Any:
        t = self.types[path]
        self.at(path)
        return self.constant(literal_value(e.value), t.dtype, t.shape)

    def _unary(self, e: L.Unary, path: str, env) -> Any:
        t = self.types[path]
        b = self.builder
        if e.op == "not":
            x = self.operand(e.x, child(path, "x"), env, "bool")
            self.at(path)
            return b.create_xor(x, self.constant(True, "bool", t.shape))
        x = self.operand(e.x, child(path, "x"), env, t.dtype)
        self.at(path)
        if t.dtype == "f64" and e.op == "rsqrt":  # libdevice's is rsqrt.approx.f64, unrefined
            return b.create_fdiv(self.constant(1.0, "f64", t.shape), self.libdevice_f64("sqrt", [x], t))
        if t.dtype == "f64" and e.op in _LIBDEVICE_F64:
            return self.libdevice_f64(e.op, [x], t)
        if e.op in _MATH:
            return getattr(b, _MATH[e.op])(x)
        if e.op == "exp2_ftz":  # one instruction; math.exp2 without ftz is four (denormal results kept)
            return b.create_inline_asm("ex2.approx.ftz.f32 $0, $1;", "=f,f", [x], [self.ir_type(t)], True, 1) \
                .get_result(0)
        if e.op in _LIBDEVICE:
            return b.create_extern_elementwise("", "", _LIBDEVICE[e.op], [x], self.ir_type(t), True)
        if e.op == "sigmoid":
            one = self.constant(1.0, t.dtype, t.shape)
            negated = self.negate(x, t)
            if t.dtype == "f64":
                return b.create_fdiv(one, b.create_fadd(one, self.libdevice_f64("exp", [negated], t)))
            denominator = b.create_fadd(one, b.create_exp(negated))
            return b.create_precise_divf(one, denominator)
        if e.op == "neg":
            return self.negate(x, t)
        if e.op == "abs":
            return b.create_fabs(x) if t.dtype in FLOAT_DTYPES else x if t.dtype in UNSIGNED_DTYPES else b.create_iabs(x)
        # floor, ceil, round (libdevice rint: cvt.rni, half to even): exact through f32 (bf16 has
        # no rounding instruction before sm_90).
        wide = self.widen_float(x, t)
        if e.op == "round":
            rounded = b.create_extern_elementwise("", "", "__nv_rint" if t.dtype == "f64" else "__nv_rintf", [wide],
                                                  self.ir_type(ValueType(wide_dtype(t.dtype), t.shape)), True)
        else:
            rounded = b.create_floor(wide) if e.op == "floor" else b.create_ceil(wide)
        return self.narrow_float(rounded, t.shape, t.dtype, wide_dtype(t.dtype))

    def libdevice_f64(self, op: str, args: list[Any], t: ValueType) -> Any:
        """libdevice's double version of a function (``__nv_exp``) on f64 values of ``t``'s shape."""
        return self.builder.create_extern_elementwise("", "", _LIBDEVICE_F64[op], args,
                                                      self.ir_type(ValueType("f64", t.shape)), True)

    def negate(self, x: Any, t: ValueType) -> Any:
        if t.dtype in FLOAT_DTYPES:
            # -0.0 - x flips the sign of every x, zeros included (0.0 - x would not).
            return self.builder.create_fsub(self.constant(-0.0, t.dtype, t.shape), x)
        return self.builder.create_sub(self.constant(0, t.dtype, t.shape), x)

    def _binary(self, e: L.Binary, path: str, env) -> Any:
        t = self.types[path]
        if t.pointer:
            return self.pointer_arith(e, path, env)
        dtype = self.checked.operand_dtypes[path]
        a = self.operand(e.lhs, child(path, "lhs"), env, dtype, t.shape)
        c = self.operand(e.rhs, child(path, "rhs"), env, dtype, t.shape)
        self.at(path)
        operands = ValueType(dtype, t.shape)
        if e.op in L.COMPARISON_OPS:
            return self.compare(e.op, a, c, operands)
        if e.op in L.LOGICAL_OPS:
            return getattr(self.builder, f"create_{e.op}")(a, c)
        if e.op in L.BIT_OPS:
            return lower_bit_op(self.builder, e.op, a, c, dtype, t.shape, self.constant)
        if dtype in FLOAT_DTYPES:
            return self.float_arith(e.op, a, c, operands)
        # names are never rebound: a name of a specialized param is that param
        specialized = isinstance(e.rhs, str) and e.rhs in self.divisible_by_16
        return self.int_arith(e.op, a, c, operands, nonzero_divisor=specialized)

    def float_arith(self, op: str, a: Any, c: Any, t: ValueType) -> Any:
        b = self.builder
        if op in ("add", "sub", "mul"):
            return {"add": b.create_fadd, "sub": b.create_fsub, "mul": b.create_fmul}[op](a, c)
        if op in ("maximum", "minimum"):
            return (b.create_maximumf if op == "maximum" else b.create_minimumf)(a, c)
        if t.dtype == "f64":
            return b.create_fdiv(a, c) if op == "div" else self.libdevice_f64(op, [a, c], t)
        if op == "pow":
            return b.create_extern_elementwise("", "", "__nv_powf", [a, c], self.ir_type(t), True)
        wide = ValueType("f32", t.shape)
        a, c = self.widen_float(a, t), self.widen_float(c, t)
        if op == "div":
            result = b.create_precise_divf(a, c)
        else:  # rem
            result = b.create_extern_elementwise("", "", "__nv_fmodf", [a, c], self.ir_type(wide), True)
        return self.narrow_float(result, t.shape, t.dtype)

    def pointer_arith(self, e: L.Binary, path: str, env) -> Any:
        t = self.types[path]
        lp, rp = child(path, "lhs"), child(path, "rhs")
        if self.types[lp].pointer:
            (ptr_expr, ptr_path), (offset_expr, offset_path) = (e.lhs, lp), (e.rhs, rp)
        else:
            (ptr_expr, ptr_path), (offset_expr, offset_path) = (e.rhs, rp), (e.lhs, lp)
        ptr = self.operand(ptr_expr, ptr_path, env, shape=t.shape)
        offset_type = self.types[offset_path]
        offset = self.operand(offset_expr, offset_path, env, offset_type.dtype, t.shape)
        self.at(path)
        if e.op == "sub":
            offset = self.builder.create_sub(self.constant(0, offset_type.dtype, t.shape), offset)
        return self.builder.create_addptr(ptr, offset)

    def _where(self, e: L.Where, path: str, env) -> Any:
        t = self.types[path]
        cond = self.operand(e.cond, child(path, "cond"), env, "bool", t.shape)
        dtype = None if t.pointer else self.checked.operand_dtypes[path]
        x = self.operand(e.x, child(path, "x"), env, dtype, t.shape)
        y = self.operand(e.y, child(path, "y"), env, dtype, t.shape)
        self.at(path)
        return self.builder.create_select(cond, x, y)

    def _fma(self, e: L.Fma, path: str, env) -> Any:
        t = self.types[path]
        x, y, z = (self.operand(getattr(e, f), child(path, f), env, t.dtype, t.shape) for f in "xyz")
        self.at(path)
        return self.builder.create_fma(x, y, z)

    def _clamp(self, e: L.Clamp, path: str, env) -> Any:
        t = self.types[path]
        x, lo, hi = (self.operand(getattr(e, f), child(path, f), env, t.dtype, t.shape) for f in ("x", "lo", "hi"))
        self.at(path)
        return self.extremum("minimum", self.extremum("maximum", x, lo, t), hi, t)

    def _cast(self, e: L.Cast, path: str, env) -> Any:
        xp = child(path, "x")
        src = self.types[xp]
        x = self.expr(e.x, xp, env)
        self.at(path)
        if isinstance(x, (bool, int, float)):
            src = ValueType(("f64" if e.dtype == "f64" else "f32") if isinstance(x, float) else src.dtype)
            x = self.constant(x, src.dtype)
        return self.convert(x, src, e.dtype)

    def _bitcast(self, e: L.Bitcast, path: str, env) -> Any:
        t = self.types[path]
        xp = child(path, "x")
        x = self.operand(e.x, xp, env, self.types[xp].dtype, t.shape)
        self.at(path)
        return self.builder.create_bitcast(x, self.ir_type(t))

    def _random(self, e: L.Random, path: str, env) -> Any:
        t = self.types[path]
        sp, op = child(path, "seed"), child(path, "offset")
        seed_dtype, offset_dtype = self.types[sp].dtype, self.types[op].dtype
        seed = self.operand(e.seed, sp, env, seed_dtype, ())
        offset = self.operand(e.offset, op, env, offset_dtype, t.shape)
        self.at(path)
        random = RandomLowering(self.builder, t.shape, self.ir_type(ValueType("i32", t.shape)),
                                self.ir_type(ValueType("i64", t.shape)), self.ir_type(ValueType("f32", t.shape)),
                                self.constant, lambda scalar, dtype: self.splat(scalar, ValueType(dtype), t.shape))
        return random.lower(e.op, e.word, seed, seed_dtype, offset, offset_dtype)

    def _scan(self, e: L.Scan, path: str, env) -> Any:
        t = self.types[path]
        x = self.operand(e.x, child(path, "x"), env, t.dtype, t.shape)
        self.at(path)
        return lower_blocks.scan(self, e, x, t, self.walled_scans)

    def _sort(self, e: L.Sort, path: str, env) -> Any:
        xt = self.types[child(path, "x")].concrete()
        x = self.operand(e.x, child(path, "x"), env, xt.dtype, xt.shape)
        self.at(path)
        return lower_blocks.sort(self, e.op, x, xt, e.descending)

    def _topk(self, e: L.TopK, path: str, env) -> Any:
        xt = self.types[child(path, "x")].concrete()
        x = self.operand(e.x, child(path, "x"), env, xt.dtype, xt.shape)
        self.at(path)
        return lower_blocks.sort(self, e.op, x, xt, True, self.types[path].shape[-1])

    def _gather(self, e: L.Gather, path: str, env) -> Any:
        t, it = self.types[path], self.types[child(path, "index")]
        src = self.operand(e.src, child(path, "src"), env, t.dtype)
        index = self.operand(e.index, child(path, "index"), env, it.dtype, it.shape)
        self.at(path)
        src = lower_blocks.widened_gather_source(self, src, self.types[child(path, "src")].shape, e.axis)
        return self.builder.create_gather(src, index, e.axis)

    def _histogram(self, e: L.Histogram, path: str, env) -> Any:
        xt = self.types[child(path, "x")]
        # counted as i32, as the emitter does (a value that changes is outside the bins anyway)
        x = self.operand(e.x, child(path, "x"), env, "i32", xt.shape)
        mask = self.operand(e.mask, child(path, "mask"), env, "bool", xt.shape) if e.mask is not None else None
        self.at(path)
        bins = self.types[path].shape[0]
        if mask is None:
            return self.builder.create_histogram(x, bins, None)
        return lower_blocks.masked_histogram(self, x, mask, bins, xt.shape)

    def _dot(self, e: L.Dot, path: str, env) -> Any:
        t = self.types[path]
        lp, rp = child(path, "lhs"), child(path, "rhs")
        a = self.operand(e.lhs, lp, env)
        c = self.operand(e.rhs, rp, env)
        acc = (self.operand(e.acc, child(path, "acc"), env, t.dtype, t.shape) if e.acc is not None else None)
        self.at(path)
        if acc is None:
            acc = self.constant(0.0, t.dtype, t.shape)
        if t.dtype == "i32":  # i8 operands (or i32 ones' low bytes) on the integer tensor cores, i32 sums
            b = self.builder
            if self.types[lp].dtype == "i32":
                a, c = (b.create_int_cast(x, b.get_block_ty(b.get_int8_ty(), list(self.types[p].shape)), True)
                        for x, p in ((a, lp), (c, rp)))
            return self.builder.create_dot(a, c, acc, ir.INPUT_PRECISION.IEEE, 0)
        precision = ir.INPUT_PRECISION.TF32 if e.precision == "tf32" else ir.INPUT_PRECISION.IEEE
        # fp8 on sm_90's wgmma: the dot's own K is summed in the tensor cores' narrower
        # accumulator and added to the f32 one once (Triton's default, 2**30, would sum all of a
        # loop's K there).
        imprecise = self.types[lp].shape[1] if path in self.checked.fp8_nodes else 0  # fp8 dots only
        return self.builder.create_dot(a, c, acc, precision, imprecise)

    def _hint(self, e: L.Hint, path: str, env) -> Any:
        """Triton's tl.multiple_of / tl.max_contiguous: attributes on the value's defining op (a
        loop variable's go on its loop as ``tt.divisibility_arg0``; on a kernel param Triton's
        set_attr drops them, as it does for tl.multiple_of of an argument)."""
        t = self.types[path]
        x = self.operand(e.x, child(path, "x"), env, t.dtype, t.shape)
        self.at(path)
        if e.multiple_of is not None:
            x.set_attr("tt.divisibility", ir.make_attr(list(e.multiple_of), self.context))
        if e.max_contiguous is not None:
            x.set_attr("tt.contiguity", ir.make_attr(list(e.max_contiguous), self.context))
        return x

    def _expanddims(self, e: L.ExpandDims, path: str, env) -> Any:
        t = self.types[path]
        x = self.operand(e.x, child(path, "x"), env)
        self.at(path)
        if len(t.shape) == 1:
            return self.splat(x, t, t.shape)
        return self.builder.create_expand_dims(x, e.axis)

    def _reshape(self, e: L.Reshape, path: str, env) -> Any:
        t = self.types[path]
        xp = child(path, "x")
        xt = self.types[xp]
        x = self.operand(e.x, xp, env)
        self.at(path)
        if e.op == "broadcast":
            return self.broadcast(x, xt, t.shape)
        if xt.shape == t.shape:
            return x
        if not xt.shape:
            return self.splat(x, t, t.shape)
        if not t.shape:
            return self.builder.create_unsplat(x)
        return self.builder.create_reshape(x, list(t.shape), False)

    def _trans(self, e: L.Trans, path: str, env) -> Any:
        xp = child(path, "x")
        rank = len(self.types[xp].shape)
        x = self.operand(e.x, xp, env)
        self.at(path)
        order = list(reversed(range(rank))) if e.dims is None else list(e.dims)
        if order == list(range(rank)):
            return x
        return self.builder.create_trans(x, order)

    # -- the kernel -------------------------------------------------------------------------

    def kernel(self) -> tuple[Any, tuple[KernelParam, ...]]:
        b = self.builder
        kernel = self.checked.kernel
        self.at("")
        module = b.create_module()
        params = tuple(KernelParam(p.name, "ptr" if p.type.pointer else "scalar", p.type.dtype)
                       for p in self.checked.params)
        arg_types = [self.element_type(p.type) for p in self.checked.params]
        fn = b.get_or_insert_function(module, kernel.name, b.get_function_ty(arg_types, []), "public", False)
        module.push_back(fn)
        entry = fn.add_entry_block()
        env: dict[str, Lowered] = {}
        for i, p in enumerate(self.checked.params):
            if p.type.pointer or p.name in self.divisible_by_16:
                fn.set_arg_attr(i, "tt.divisibility", DIVISIBILITY)
            env[p.name] = fn.args(i)
        b.set_insertion_point_to_start(entry)
        for i, m in enumerate(kernel.meta):
            self.at(f"/meta/{i}")
            env[m.name] = b.get_int32(self.checked.meta[m.name])
        for i, inp in enumerate(kernel.inputs):
            if inp.role == "choice":  # a meta name too: the index of the call's choice
                self.at(f"/inputs/{i}")
                env[inp.name] = b.get_int32(self.checked.meta[inp.name])
            elif inp.present is not None:  # 1 when the call passes the optional tensor, else 0
                self.at(f"/inputs/{i}")
                env[inp.present] = b.get_int32(self.checked.meta[inp.present])
            elif inp.role == "ints":  # one meta per item: the call's ints (a variant per tuple)
                for j, item in enumerate(inp.items or ()):
                    self.at(f"/inputs/{i}/items/{j}")
                    env[item] = b.get_int32(self.checked.meta[item])
        self.tile_descriptors(kernel.body, env)
        self.block(kernel.body, "/body", env)
        self.at("/body")
        b.ret([])
        fn.finalize()
        return module, params


_MATH = {"exp": "create_exp", "exp2": "create_exp2", "log": "create_log", "log2": "create_log2",
         "sqrt": "create_precise_sqrt", "rsqrt": "create_rsqrt", "sin": "create_sin", "cos": "create_cos",
         "erf": "create_erf"}
_LIBDEVICE = {"tanh": "__nv_tanhf", "log1p": "__nv_log1pf"}
# f64 functions: libdevice's double versions (the math dialect's approximations are f32 only).
_LIBDEVICE_F64 = {op: f"__nv_{op}" for op in ("exp", "exp2", "log", "log2", "log1p", "sqrt", "tanh", "erf",
                                               "sin", "cos", "pow")} | {"rem": "__nv_fmod"}


def fp8_byte(value: Scalar, dtype: str) -> int:
    """The bits of ``value`` cast to fp8 as the language casts (:func:`kernelgen.lang.philox.to_fp8`)."""
    import torch

    from kernelgen.lang.philox import to_fp8

    return int(to_fp8(torch.tensor([float(value)]), dtype).view(torch.uint8)[0])


def new_context() -> Any:
    """A fresh MLIR context with Triton's and the NVIDIA backend's dialects loaded.

    One context per kernel: reusing a builder after a lowering can crash Triton.
    """
    context = ir.context()
    ir.load_dialects(context)
    nvidia.load_dialects(context)
    return context


def lower(checked: CheckedKernel, divisible_by_16: Collection[str] = ()) -> LoweredKernel:
    """Build and verify the TTIR module of a checked kernel.

    ``divisible_by_16`` names integer parameters whose values the caller guarantees to be
    nonzero multiples of 16 (a specialization: the kernel is wrong for other values).

    Raises :class:`LoweringError` with the AST path of the node at fault when the builder
    fails or MLIR's verifier rejects the module.
    """
    integer_params = {p.name for p in checked.params if not p.type.pointer and p.type.dtype in INT_DTYPES}
    unknown = sorted(set(divisible_by_16) - integer_params)
    if unknown:
        raise LoweringError(Diagnostic("/params", "bad_specialization",
                                       f"divisible_by_16 names {unknown}, which are not integer params "
                                       f"(those are {sorted(integer_params)})"))
    context = new_context()
    lowering = _Lowering(checked, context, divisible_by_16)
    error: LoweringError | None = None
    with capture_native_output() as output:
        try:
            module, params = lowering.guarded("", lowering.kernel)
            module.context = context
            verified = module.verify()
        except LoweringError as exc:
            error = exc
    if error is not None:
        raise LoweringError(error.diagnostics + parse_mlir_diagnostics(output.text, "mlir_error")) from error
    if not verified:
        diagnostics = parse_mlir_diagnostics(output.text, "mlir_verify", "/body")
        raise LoweringError(diagnostics or [Diagnostic("/body", "mlir_verify",
                                                       "MLIR's verifier rejected the module and said nothing")])
    return LoweredKernel(checked.kernel.name, module, context, str(module), params)
