"""The kernel's part of the emitted module: a checked kernel's body as ``@triton.jit`` Python.

:class:`_KernelEmitter` writes statements and expressions, one Triton Python line or expression
per AST node, in the order and with the names that :mod:`kernelgen.emit.module` (which puts the
kernel, its helpers and its launcher together) gives it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Union

from kernelgen.emit import blocks as emit_blocks

from kernelgen.check import tile_access as tiles
from kernelgen.lang import nodes as L
from kernelgen.check.checker import CheckedKernel, child, is_literal, literal_value
from kernelgen.emit.code import (_BINARY_OPERATORS, ADD, ATOM, COMPARE, F32_TINY, FLOAT_DTYPES, FP8_DTYPES,
                                 INT_DTYPES, MODULE_NAMES, MUL, NARROW_INT_DTYPES, POSTFIX, TL_DTYPES, TORCH_DTYPES,
                                 UNARY, Namer, _Code, _literal, _number, round_to)  # noqa: F401
from kernelgen.lang.limits import INT_RANGES
from kernelgen.lower.blocks import walls_off_scans
from kernelgen.lang.limits import type_info

_TL_UNARY = {"exp": "tl.exp", "exp2": "tl.exp2", "log": "tl.log", "log2": "tl.log2",
             "sqrt": "tl.sqrt_rn", "rsqrt": "tl.rsqrt", "sin": "tl.sin", "cos": "tl.cos",
             "erf": "tl.erf", "sigmoid": "tl.sigmoid", "abs": "tl.abs"}
_HELPER_UNARY = {"tanh": "_tanh", "log1p": "_log1p", "round": "_round_even"}
# f64 versions where Triton's function takes fp32 only.
_TL_UNARY_F64 = {"sqrt": "tl.sqrt"}


def _referenced_names(expr: L.Expr) -> set[str]:
    if isinstance(expr, str):
        return set() if is_literal(expr) else {expr}
    if isinstance(expr, L.Node):
        found: set[str] = set()
        for field in type(expr).model_fields:
            value = getattr(expr, field)
            if field in ("op", "dtype", "precision"):
                continue
            for item in value if isinstance(value, list) else [value]:  # a tile's offsets
                if isinstance(item, (L.Node, str)):
                    found |= _referenced_names(item)
        return found
    return set()


class _KernelEmitter:
    def __init__(self, checked: CheckedKernel, names: Namer) -> None:
        self.checked = checked
        self.types = checked.types
        self.names = names
        self.helpers: set[str] = set()
        self.walled_scans = walls_off_scans(checked)
        self.lines: list[str] = []
        self.assigned: set[str] = set()

    def target(self, name: str) -> str:
        """The Python name a statement assigns ``name`` to: one assignment site per Python
        name, since Triton makes a name assigned in both branches of an ``if`` a result of it
        (a let bound in two sibling scopes gets a fresh name the second time)."""
        python = self.names(name)
        if python in self.assigned:
            python = self.names.fresh(name)
        self.assigned.add(python)
        return python

    # -- values ----------------------------------------------------------------------------

    def coerce(self, c: _Code, dtype: str, tensor: bool = False) -> _Code:
        """``c`` as an operand of dtype ``dtype`` (a tensor of it if ``tensor``)."""
        if c.pointer:
            return c
        if c.dtype is None and c.value is not None:
            text, prec = _literal(c.value, dtype)
            if text != c.text:
                c = replace(c, text=text, prec=prec)  # rounded to a narrow float type
            if dtype == "f64" and isinstance(c.value, float) and round_to(c.value, "f32") != c.value:
                tensor = True  # Triton would make an f32 constant of a Python float first
        elif c.dtype is not None and c.dtype != dtype:
            c = self.cast(c, dtype)
        return self.as_tensor(c, dtype) if tensor else c

    def cast(self, c: _Code, dtype: str) -> _Code:
        if dtype in NARROW_INT_DTYPES and (c.dtype in FLOAT_DTYPES or c.dtype is None and isinstance(c.value, float)):
            # Saturating, as the lowering: clamped in f32/f64 (exact bounds there), NaN to 0.
            x, (low, high) = self.as_tensor(c, c.dtype or "f32"), INT_RANGES[dtype]
            w = x.text if x.dtype in ("f32", "f64") else f"{x.at(POSTFIX)}.to(tl.float32)"
            return _Code(f"tl.where({w} == {w}, tl.minimum(tl.maximum({w}, {float(low)}), {float(high)}), 0.0)"
                         f".to({TL_DTYPES[dtype]})", POSTFIX, dtype)
        if c.dtype is None and dtype == "f64" and isinstance(c.value, float):
            return self.as_tensor(c, dtype)  # tl.cast would make an f32 constant of it first
        if c.dtype is None or c.may_be_number:
            return _Code(f"tl.cast({c.text}, {TL_DTYPES[dtype]})", POSTFIX, dtype)
        if dtype == "bool":
            return _Code(f"{c.at(COMPARE + 1)} != 0", COMPARE, "bool")
        return _Code(f"{c.at(POSTFIX)}.to({TL_DTYPES[dtype]})", POSTFIX, dtype)

    def literal_code(self, value: Union[bool, int, float]) -> _Code:
        text, prec = _number(value) if not isinstance(value, bool) else (repr(value), ATOM)
        return _Code(text, prec, None, value=value, nonnegative=not isinstance(value, bool) and value >= 0)

    def dims(self, dims: list[L.Dim], env: dict[str, _Code]) -> str:
        return "[" + ", ".join(str(d) if isinstance(d, int) else env[d].text for d in dims) + "]"

    def expr(self, e: L.Expr, path: str, env: dict[str, _Code]) -> _Code:
        if is_literal(e):
            return self.literal_code(literal_value(e))
        if isinstance(e, str):
            return env[e]
        return getattr(self, f"_{type(e).__name__.lower()}")(e, path, env)

    def operand(self, e: L.Expr, path: str, env, dtype: str, tensor: bool = False) -> _Code:
        return self.coerce(self.expr(e, path, env), dtype, tensor)

    def as_tensor(self, c: _Code, dtype: str) -> _Code:
        """``c`` as a Triton tensor: Python constants, and values that may be compile-time
        constants (on which Python's own operators would apply), become scalar tensors."""
        if c.pointer or not (c.dtype is None or c.may_be_number):
            return c
        if c.dtype is None:
            return _Code(f"tl.full([], {c.text}, {TL_DTYPES[dtype]})", POSTFIX, dtype, nonnegative=c.nonnegative)
        return _Code(f"tl.cast({c.text}, {TL_DTYPES[dtype]})", POSTFIX, dtype, nonnegative=c.nonnegative)

    def tensor_of_own_type(self, e: L.Expr, path: str, env) -> _Code:
        """A value as a tensor of its checked type (block operations take no constants)."""
        return self.as_tensor(self.expr(e, path, env), self.types[path].dtype)

    # -- expressions -----------------------------------------------------------------------

    def _programid(self, e: L.ProgramId, path: str, env) -> _Code:
        return _Code(f"tl.{e.op}({e.axis})", POSTFIX, "i32", nonnegative=True)

    def _arange(self, e: L.Arange, path: str, env) -> _Code:
        size = str(e.size) if isinstance(e.size, int) else env[e.size].text
        return _Code(f"tl.arange(0, {size})", POSTFIX, "i32", nonnegative=True)

    def _full(self, e: L.Full, path: str, env) -> _Code:
        value, _ = _literal(literal_value(e.value), e.dtype)
        return _Code(f"tl.full({self.dims(e.shape, env)}, {value}, {TL_DTYPES[e.dtype]})", POSTFIX, e.dtype)

    def _join(self, e: L.Join, path: str, env) -> _Code:
        dtype = self.checked.operand_dtypes[path]
        lhs, rhs = (self.operand(getattr(e, f), child(path, f), env, dtype, tensor=True) for f in ("lhs", "rhs"))
        return _Code(f"tl.join({lhs.text}, {rhs.text})", POSTFIX, dtype)

    def _typeinfo(self, e: L.TypeInfo, path: str, env) -> _Code:
        dtype = self.types[path].dtype
        value, _ = _literal(type_info(e.op, e.dtype, e.what), dtype)
        return _Code(f"tl.full([], {value}, {TL_DTYPES[dtype]})", POSTFIX, dtype)

    def _load(self, e: L.Load, path: str, env) -> _Code:
        t = self.types[path]
        args = [self.expr(e.ptr, child(path, "ptr"), env).text]
        if e.mask is not None:
            args.append(f"mask={self.expr(e.mask, child(path, 'mask'), env).text}")
            if e.other is not None:
                other = self.operand(e.other, child(path, "other"), env, t.dtype).text
            else:
                other = "False" if t.dtype == "bool" else "0.0" if t.dtype in FLOAT_DTYPES + FP8_DTYPES else "0"
            args.append(f"other={other}")
        args += _modifiers(e)
        return _Code(f"tl.load({', '.join(args)})", POSTFIX, t.dtype)

    def _tileload(self, e: L.TileLoad, path: str, env) -> _Code:
        """A tile as its masked load (:mod:`kernelgen.check.tile_access`): valid for any strides, where a
        ``tl.make_tensor_descriptor`` needs 16-byte multiples the launcher would have to check."""
        return self._load(tiles.as_load(e), child(path, tiles.AS_LOAD), env)

    def _unary(self, e: L.Unary, path: str, env) -> _Code:
        t = self.types[path]
        xpath = child(path, "x")
        if e.op == "neg":
            x = self.expr(e.x, xpath, env)
            x = self.coerce(x, t.dtype, tensor=x.dtype is None)
            if t.dtype in FLOAT_DTYPES:  # Triton's -x is 0 - x, which gives +0.0 for 0.0; IEEE's -1 * x flips every sign
                return _Code(f"{x.at(MUL)} * -1.0", MUL, t.dtype, may_be_number=x.may_be_number)
            return _Code(f"-{x.at(UNARY + 1)}", UNARY, t.dtype, may_be_number=x.may_be_number)
        if e.op == "not":
            # On a Python bool (a comparison of constants), ~ would give -2: a tensor first.
            x = self.operand(e.x, xpath, env, "bool", tensor=True)
            return _Code(f"~{x.at(UNARY + 1)}", UNARY, "bool")
        x = self.operand(e.x, xpath, env, t.dtype, tensor=True)
        if e.op in ("floor", "ceil") and t.dtype in ("f16", "bf16"):
            return _Code(f"tl.{e.op}({x.at(POSTFIX)}.to(tl.float32)).to({TL_DTYPES[t.dtype]})", POSTFIX, t.dtype)
        if e.op in ("floor", "ceil"):
            return _Code(f"tl.{e.op}({x.text})", POSTFIX, t.dtype)
        if e.op == "round" and t.dtype in ("f16", "bf16"):  # exact through f32, as the lowering
            self.helpers.add("_round_even")
            return _Code(f"_round_even({x.at(POSTFIX)}.to(tl.float32)).to({TL_DTYPES[t.dtype]})", POSTFIX, t.dtype)
        if e.op in _HELPER_UNARY:
            self.helpers.add(_HELPER_UNARY[e.op])
            return _Code(f"{_HELPER_UNARY[e.op]}({x.text})", POSTFIX, t.dtype)
        if e.op == "exp2_ftz":  # plain Triton, so that Triton's interpreter runs it too (no inline asm)
            return _Code(f"tl.where(({x.text}) < -126.0, 0.0, tl.exp2({x.text}))", POSTFIX, "f32")
        if t.dtype == "f64" and e.op == "rsqrt":  # as the lowering: tl.rsqrt of fp64 is rsqrt.approx.f64
            return _Code(f"1.0 / tl.sqrt({x.text})", MUL, "f64")
        function = _TL_UNARY_F64.get(e.op, _TL_UNARY[e.op]) if t.dtype == "f64" else _TL_UNARY[e.op]
        return _Code(f"{function}({x.text})", POSTFIX, t.dtype)

    def _binary(self, e: L.Binary, path: str, env) -> _Code:
        t = self.types[path]
        lhs = self.expr(e.lhs, child(path, "lhs"), env)
        rhs = self.expr(e.rhs, child(path, "rhs"), env)
        if t.pointer:
            symbol = "+" if e.op == "add" else "-"
            return _Code(f"{lhs.at(ADD)} {symbol} {rhs.at(ADD + 1)}", ADD, t.dtype, pointer=True)
        dtype = self.checked.operand_dtypes[path]
        lhs, rhs = self.coerce(lhs, dtype), self.coerce(rhs, dtype)
        # Operands that may both be Python numbers would be computed by Python: in double
        # precision for floats, with floor division for integers.
        python_numbers = all(c.dtype is None or (c.may_be_number and dtype in FLOAT_DTYPES) for c in (lhs, rhs))
        python_division = (e.op in ("idiv", "rem", "cdiv") and dtype in INT_DTYPES
                           and all(c.dtype is None or c.may_be_number for c in (lhs, rhs))
                           and not (lhs.nonnegative and rhs.nonnegative))
        if e.op in L.BIT_OPS:
            # Shift amounts outside the width are clamped as the interpreter says; umulhi of
            # signed values is of their unsigned bits (Triton's interpreter would sign-extend).
            helper = "_lshr" if e.op == "shr" and dtype == "u8" else f"_{e.op}"  # u8's shr is logical
            self.helpers.add(helper)
            return _Code(f"{helper}({self.as_tensor(lhs, dtype).text}, {self.as_tensor(rhs, dtype).text})",
                         POSTFIX, t.dtype)
        if python_numbers or python_division or e.op == "pow":
            lhs = self.as_tensor(lhs, dtype)
        if e.op == "pow":
            rhs = self.as_tensor(rhs, dtype)
            self.helpers.add("_pow")
            return _Code(f"_pow({lhs.text}, {rhs.text})", POSTFIX, t.dtype)
        nonnegative = lhs.nonnegative and rhs.nonnegative and e.op in ("add", "mul", "idiv", "cdiv", "rem")
        if e.op == "div":
            return self.divide(lhs, rhs, dtype)
        if e.op == "cdiv":
            return _Code(f"tl.cdiv({lhs.text}, {rhs.text})", POSTFIX, t.dtype, nonnegative=nonnegative)
        if e.op in ("maximum", "minimum"):
            nan = ", propagate_nan=tl.PropagateNan.ALL" if dtype in FLOAT_DTYPES else ""
            text = f"tl.{e.op}({lhs.text}, {rhs.text}{nan})"
            if dtype in ("f16", "bf16"):
                # Triton compares bf16 in f32, and f16 with a Python float too: the result is f32
                text += f".to({TL_DTYPES[dtype]})"
            either, both = lhs.nonnegative or rhs.nonnegative, lhs.nonnegative and rhs.nonnegative
            return _Code(text, POSTFIX, t.dtype, nonnegative=either if e.op == "maximum" else both)
        symbol, prec = _BINARY_OPERATORS[e.op]
        right = prec + 1 if prec != COMPARE else COMPARE + 1
        text = f"{lhs.at(prec if prec != COMPARE else COMPARE + 1)} {symbol} {rhs.at(right)}"
        number = all(c.dtype is None or c.may_be_number for c in (lhs, rhs))
        if e.op == "rem" and dtype in ("f16", "bf16"):
            # Triton computes f16/bf16 % in f32.
            return _Code(f"({text}).to({TL_DTYPES[dtype]})", POSTFIX, dtype)
        return _Code(text, prec, t.dtype, may_be_number=number, nonnegative=nonnegative)

    def divide(self, lhs: _Code, rhs: _Code, dtype: str) -> _Code:
        if dtype == "f64":  # Triton's fp64 division is correctly rounded (div.rn.f64); div_rn takes fp32
            return _Code(f"{lhs.at(MUL)} / {rhs.at(MUL + 1)}", MUL, "f64")

        def f32(c: _Code) -> str:
            if c.dtype is None:
                if c.value is not None and 0 < abs(c.value) < F32_TINY:
                    return self.coerce(c, "f32", tensor=True).text
                return c.text
            return c.text if c.dtype == "f32" else f"{c.at(POSTFIX)}.to(tl.float32)"

        quotient = f"tl.div_rn({f32(lhs)}, {f32(rhs)})"
        if dtype == "f32":
            return _Code(quotient, POSTFIX, "f32")
        # Division of f16/bf16 values in f32, rounded once to the narrow type, is exact.
        return _Code(f"{quotient}.to({TL_DTYPES[dtype]})", POSTFIX, dtype)

    def _where(self, e: L.Where, path: str, env) -> _Code:
        t = self.types[path]
        cond = self.operand(e.cond, child(path, "cond"), env, "bool")
        x = self.expr(e.x, child(path, "x"), env)
        y = self.expr(e.y, child(path, "y"), env)
        if not t.pointer:
            dtype = self.checked.operand_dtypes[path]
            x, y = self.coerce(x, dtype), self.coerce(y, dtype)
            if x.dtype is None and y.dtype is None:
                x = self.coerce(x, dtype, tensor=True)
        return _Code(f"tl.where({cond.text}, {x.text}, {y.text})", POSTFIX, t.dtype, pointer=t.pointer)

    def _fma(self, e: L.Fma, path: str, env) -> _Code:
        dtype = self.checked.operand_dtypes[path]
        x, y, z = (self.operand(getattr(e, f), child(path, f), env, dtype, tensor=True) for f in "xyz")
        return _Code(f"tl.fma({x.text}, {y.text}, {z.text})", POSTFIX, dtype)

    def _clamp(self, e: L.Clamp, path: str, env) -> _Code:
        dtype = self.checked.operand_dtypes[path]
        x, lo, hi = (self.operand(getattr(e, f), child(path, f), env, dtype) for f in ("x", "lo", "hi"))
        if x.dtype is None and lo.dtype is None and hi.dtype is None:
            x = self.coerce(x, dtype, tensor=True)
        nan = ", propagate_nan=tl.PropagateNan.ALL" if dtype in FLOAT_DTYPES else ""
        text = f"tl.minimum(tl.maximum({x.text}, {lo.text}{nan}), {hi.text}{nan})"
        return _Code(text + (f".to({TL_DTYPES[dtype]})" if dtype in ("f16", "bf16") else ""), POSTFIX, dtype)

    def _cast(self, e: L.Cast, path: str, env) -> _Code:
        x = self.expr(e.x, child(path, "x"), env)
        if x.dtype == e.dtype and not x.may_be_number:
            return x
        if x.dtype in FP8_DTYPES:
            # fp8 converts to floats only: through f32 (exact), then as an f32 value.
            x = _Code(f"{x.at(POSTFIX)}.to(tl.float32)", POSTFIX, "f32")
            if e.dtype == "f32":
                return x
        if e.dtype in FP8_DTYPES:
            # As the lowering: f16 as it is, others as f32 rounded to odd in f16, then fp8.
            if x.dtype != "f16" or x.may_be_number:
                if x.dtype != "f32" or x.may_be_number:
                    x = self.cast(x, "f32")
                self.helpers.add("_round_to_odd_f16")
                x = _Code(f"_round_to_odd_f16({x.text})", ATOM, "f16")
            return _Code(f"{x.at(POSTFIX)}.to({TL_DTYPES[e.dtype]})", POSTFIX, e.dtype)
        return self.cast(x, e.dtype)  # from fp8: as the f32 value

    def _bitcast(self, e: L.Bitcast, path: str, env) -> _Code:
        x = self.tensor_of_own_type(e.x, child(path, "x"), env)
        return _Code(f"{x.at(POSTFIX)}.to({TL_DTYPES[e.dtype]}, bitcast=True)", POSTFIX, e.dtype)

    def _random(self, e: L.Random, path: str, env) -> _Code:
        """Triton's own functions; randint's uint32 words are bitcast to the language's i32."""
        seed = self.tensor_of_own_type(e.seed, child(path, "seed"), env).text
        offset = self.tensor_of_own_type(e.offset, child(path, "offset"), env).text
        call = f"tl.{e.op}({seed}, {offset})" if e.word == 0 else f"tl.{e.op}4x({seed}, {offset})[{e.word}]"
        if e.op == "randint":
            return _Code(f"{call}.to(tl.int32, bitcast=True)", POSTFIX, "i32")
        return _Code(call, POSTFIX, "f32")

    def _reduce(self, e: L.Reduce, path: str, env) -> _Code:
        t = self.types[path]
        xt = self.types[child(path, "x")]
        is_index = e.op in ("argmax", "argmin")
        dtype = xt.dtype if is_index else t.dtype
        x = self.operand(e.x, child(path, "x"), env, dtype)
        keep = ", keep_dims=True" if e.keepdims else ""
        if e.op == "sum":
            return _Code(f"tl.sum({x.text}, axis={e.axis}{keep})", POSTFIX, t.dtype)
        if dtype in INT_DTYPES:
            if is_index:
                return _Code(f"tl.{e.op}({x.text}, axis={e.axis}, tie_break_left=True{keep})", POSTFIX, "i32",
                             nonnegative=True)
            return _Code(f"tl.{e.op}({x.text}, axis={e.axis}{keep})", POSTFIX, t.dtype)
        if not is_index:
            combine = "_maximum_propagating_nan" if e.op == "max" else "_minimum_propagating_nan"
            self.helpers.add(combine)
            return _Code(f"tl.reduce({x.text}, {e.axis}, {combine}{keep})", POSTFIX, t.dtype)
        combine = f"_{e.op}_combine"
        self.helpers.add(combine)
        index = f"tl.arange(0, {xt.shape[e.axis]})"
        if len(xt.shape) > 1:
            slots = ", ".join(":" if i == e.axis else "None" for i in range(len(xt.shape)))
            index = f"tl.broadcast_to({index}[{slots}], {list(xt.shape)})"
        return _Code(f"tl.reduce(({x.text}, {index}), {e.axis}, {combine}{keep})[1]", POSTFIX, "i32",
                     nonnegative=True)

    def _scan(self, e: L.Scan, path: str, env) -> _Code:
        t = self.types[path]
        x = self.operand(e.x, child(path, "x"), env, t.dtype, tensor=True)
        return _Code(emit_blocks.scan_call(e, x.text, t.dtype, self.helpers, self.walled_scans), POSTFIX, t.dtype)

    def _sort(self, e: Union[L.Sort, L.TopK], path: str, env) -> _Code:
        t, xt = self.types[path], self.types[child(path, "x")]
        x = self.operand(e.x, child(path, "x"), env, xt.dtype, tensor=True)
        k = t.shape[-1] if isinstance(e, L.TopK) else None
        descending = True if isinstance(e, L.TopK) else e.descending
        text = emit_blocks.sort_call(e.op, x.text, xt.dtype, xt.shape, descending, k, self.helpers)
        return _Code(text, POSTFIX, t.dtype, nonnegative=e.op.startswith("arg"))

    _topk = _sort

    def _gather(self, e: L.Gather, path: str, env) -> _Code:
        t, it = self.types[path], self.types[child(path, "index")]
        src = self.operand(e.src, child(path, "src"), env, t.dtype, tensor=True)
        index = self.operand(e.index, child(path, "index"), env, it.dtype, tensor=True)
        source = emit_blocks.widened_gather_source(src.text, self.types[child(path, "src")].shape, e.axis)
        return _Code(f"tl.gather({source}, {index.text}, {e.axis})", POSTFIX, t.dtype)

    def _histogram(self, e: L.Histogram, path: str, env) -> _Code:
        # i32 values: Triton's interpreter fails on an int64 histogram (NumPy's int64 counts);
        # a value that i32 changes is outside the bins, an error anyway
        x = self.operand(e.x, child(path, "x"), env, "i32", tensor=True)
        bins = self.types[path].shape[0]
        if e.mask is None:
            return _Code(f"tl.histogram({x.text}, {bins})", POSTFIX, "i32", nonnegative=True)
        mask = self.operand(e.mask, child(path, "mask"), env, "bool", tensor=True)
        self.helpers.add("_masked_histogram")
        return _Code(f"_masked_histogram({x.text}, {bins}, {mask.text})", POSTFIX, "i32", nonnegative=True)

    def _dot(self, e: L.Dot, path: str, env) -> _Code:
        a_dtype = self.types[child(path, "lhs")].dtype
        args = [self.expr(e.lhs, child(path, "lhs"), env).text, self.expr(e.rhs, child(path, "rhs"), env).text]
        if e.dtype == "i32" and a_dtype == "i32":  # the low bytes of i32 operands
            args = [f"({text}).to(tl.int8)" for text in args]
        if e.acc is not None:
            args.append(f"acc={self.operand(e.acc, child(path, 'acc'), env, e.dtype).text}")
        if a_dtype == "f32":
            args.append(f'input_precision="{e.precision}"')
        if e.dtype == "f16":
            args.append("out_dtype=tl.float16")
        if e.dtype == "i32":
            args.append("out_dtype=tl.int32")
        if a_dtype in FP8_DTYPES:  # as the lowering: the dot's K in the narrow accumulator, then f32
            args.append(f"max_num_imprecise_acc={self.types[child(path, 'lhs')].shape[1]}")
        return _Code(f"tl.dot({', '.join(args)})", POSTFIX, e.dtype)

    def _hint(self, e: L.Hint, path: str, env) -> _Code:
        t = self.types[path]
        x = self.operand(e.x, child(path, "x"), env, t.dtype, tensor=True)
        text = x.text
        for fn, values in (("multiple_of", e.multiple_of), ("max_contiguous", e.max_contiguous)):
            if values is not None:
                text = f"tl.{fn}({text}, {list(values)})"
        return _Code(text, POSTFIX, t.dtype, nonnegative=x.nonnegative)

    def _expanddims(self, e: L.ExpandDims, path: str, env) -> _Code:
        x = self.tensor_of_own_type(e.x, child(path, "x"), env)
        rank = len(self.types[child(path, "x")].shape)
        if rank == 0:
            return replace(x, text=f"tl.expand_dims({x.text}, 0)", prec=POSTFIX, may_be_number=False)
        slots = [":"] * rank
        slots.insert(e.axis, "None")
        return replace(x, text=f"{x.at(POSTFIX)}[{', '.join(slots)}]", prec=POSTFIX)

    def _reshape(self, e: L.Reshape, path: str, env) -> _Code:
        x = self.tensor_of_own_type(e.x, child(path, "x"), env)
        rank = len(self.types[child(path, "x")].shape)
        shape = self.dims(e.shape, env)
        if e.op == "reshape" and rank > 0:
            return replace(x, text=f"tl.reshape({x.text}, {shape})", prec=POSTFIX)
        missing = len(e.shape) - rank
        if rank > 0 and missing > 0:
            x = replace(x, text=f"{x.at(POSTFIX)}[{', '.join(['None'] * missing + [':'] * rank)}]", prec=POSTFIX)
        return replace(x, text=f"tl.broadcast_to({x.text}, {shape})", prec=POSTFIX, may_be_number=False)

    def _trans(self, e: L.Trans, path: str, env) -> _Code:
        x = self.expr(e.x, child(path, "x"), env)
        rank = len(self.types[child(path, "x")].shape)
        dims = list(reversed(range(rank))) if e.dims is None else list(e.dims)
        if dims == sorted(dims):
            return x
        if dims == [1, 0]:
            return replace(x, text=f"tl.trans({x.text})", prec=POSTFIX)
        return replace(x, text=f"tl.permute({x.text}, {tuple(dims)})", prec=POSTFIX)

    # -- statements ------------------------------------------------------------------------

    def line(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def block(self, stmts: list[L.Stmt], path: str, env: dict[str, _Code], depth: int) -> None:
        for i, s in enumerate(stmts):
            spath = child(path, i)
            if isinstance(s, L.Let):
                value = self.expr(s.value, child(spath, "value"), env)
                if value.value is not None:
                    # A literal stays a literal at each use: weak there, and rounded to the
                    # dtype it meets (Triton's interpreter makes an assigned constant a tensor).
                    env[s.name] = value
                    continue
                name = self.target(s.name)
                self.line(depth, f"{name} = {value.text}")
                env[s.name] = replace(value, text=name, prec=ATOM)
            elif isinstance(s, L.Store):
                self.store(s, spath, env, depth)
            elif isinstance(s, L.TileStore):
                block = self.types[child(spath, "value")].shape
                self.store(tiles.as_store(s, block), child(spath, tiles.AS_STORE), env, depth)
            elif isinstance(s, L.If):
                self.branch(s, spath, env, depth)
            elif isinstance(s, L.Atomic):
                self.atomic(s, spath, env, depth)
            elif isinstance(s, L.For):
                self.loop(s, spath, env, depth)
            else:
                self.line(depth, "tl.debug_barrier()")

    def store(self, s: L.Store, path: str, env, depth: int) -> None:
        pointee = self.types[child(path, "ptr")].dtype
        args = [self.expr(s.ptr, child(path, "ptr"), env).text,
                self.operand(s.value, child(path, "value"), env, pointee).text]
        if s.mask is not None:
            args.append(f"mask={self.expr(s.mask, child(path, 'mask'), env).text}")
        args += _modifiers(s)
        self.line(depth, f"tl.store({', '.join(args)})")

    def atomic(self, a: L.Atomic, path: str, env, depth: int) -> None:
        """``tl.atomic_*``; the old values bound to the statement's name, if any."""
        t = self.types[child(path, "ptr")]
        pointee = t.dtype
        args = [self.expr(a.ptr, child(path, "ptr"), env).text]
        if a.cmp is not None:  # tl.atomic_cas broadcasts nothing: cmp and val take the pointer's shape
            for name in ("cmp", "val"):
                x = self.operand(getattr(a, name), child(path, name), env, pointee, tensor=True)
                rank = len(self.types[child(path, name)].shape)
                if 0 < rank < len(t.shape):  # leading dims first: broadcast_to keeps the rank
                    slots = ["None"] * (len(t.shape) - rank) + [":"] * rank
                    x = replace(x, text=f"{x.at(POSTFIX)}[{', '.join(slots)}]", prec=POSTFIX)
                args.append(f"tl.broadcast_to({x.text}, {list(t.shape)})" if t.shape else x.text)
        else:
            args.append(self.operand(a.val, child(path, "val"), env, pointee, tensor=a.op == "atomic_xchg").text)
        if a.mask is not None:
            args.append(f"mask={self.expr(a.mask, child(path, 'mask'), env).text}")
        bits = {"f32": "tl.int32", "f64": "tl.int64"}.get(pointee) if a.op == "atomic_xchg" else None
        if bits is not None:
            # Triton's interpreter exchanges integers only: the float's bits, as the GPU does.
            args[0] = f"({args[0]}).to(tl.pointer_type({bits}), bitcast=True)"
            args[1] = f"({args[1]}).to({bits}, bitcast=True)"
        call = f"tl.{a.op}({', '.join(args)}, sem={a.sem!r}, scope={a.scope!r})"
        if bits is not None:
            call = f"{call}.to({TL_DTYPES[pointee]}, bitcast=True)"
        if a.name is None:
            self.line(depth, call)
            return
        name = self.names(a.name)
        self.line(depth, f"{name} = {call}")
        env[a.name] = _Code(name, ATOM, pointee)

    def loop(self, f: L.For, path: str, env: dict[str, _Code], depth: int) -> None:
        carried: list[tuple[str, _Code]] = []
        for i, c in enumerate(f.carry):
            t = self.types[child(path, "carry", i, "name")]
            init = self.expr(c.init, child(path, "carry", i, "init"), env)
            if not t.pointer:
                init = self.coerce(init, t.dtype)
            name = self.target(c.name)
            self.line(depth, f"{name} = {init.text}")
            carried.append((c.name, _Code(name, ATOM, t.dtype, pointer=t.pointer)))
        bounds = [self.expr(getattr(f, b), child(path, b), env).text for b in ("start", "stop", "step")]
        if bounds[2] == "1":
            bounds.pop()
            if bounds[0] == "0":
                bounds.pop(0)
        var = self.target(f.var)
        options = ([f"num_stages={f.num_stages}"] if f.num_stages is not None else []) + (["flatten=True"] if f.flatten else []) \
            + ([f"loop_unroll_factor={f.unroll}"] if f.unroll not in (None, 1) else [])
        if options:
            self.line(depth, f"for {var} in tl.range({', '.join(bounds + options)}):")
        else:
            self.line(depth, f"for {var} in range({', '.join(bounds)}):")
        inner = dict(env)
        inner.update(carried)
        # A Python int in Triton's interpreter, a tensor when compiled.
        start = self.expr(f.start, child(path, "start"), env)
        inner[f.var] = _Code(var, ATOM, self.types[child(path, "var")].dtype, may_be_number=True,
                             nonnegative=start.nonnegative)
        self.block(f.body, child(path, "body"), inner, depth + 1)
        updates = []
        for i, (c, (_, code)) in enumerate(zip(f.carry, carried)):
            nxt = self.expr(c.next, child(path, "carry", i, "next"), inner)
            if not code.pointer:
                nxt = self.coerce(nxt, code.dtype, tensor=nxt.dtype is None)
            updates.append((code.text, nxt.text))
        # Carries update together, as in the interpreter: where one's next reads another
        # carry, those carries are assigned in one tuple so that every next sees old values.
        carry_names = {c.name for c in f.carry}
        reads = {c.name: _referenced_names(c.next) & (carry_names - {c.name}) for c in f.carry}
        entangled = {c.name for c in f.carry if reads[c.name]} | set().union(*reads.values())
        for c, (name, value) in zip(f.carry, updates):
            if c.name not in entangled and name != value:
                self.line(depth + 1, f"{name} = {value}")
        together = [(name, value) for c, (name, value) in zip(f.carry, updates) if c.name in entangled]
        if together:
            self.line(depth + 1, f"{', '.join(n for n, _ in together)} = {', '.join(v for _, v in together)}")
        if not f.body and not any(name != value for name, value in updates):
            self.line(depth + 1, "pass")
        env.update(carried)

    def branch(self, s: L.If, path: str, env: dict[str, _Code], depth: int) -> None:
        """Python's ``if`` (Triton's scf.if on a scalar tensor; a static branch where the
        condition is a constant): each result assigned at the end of both branches, as a
        tensor cast to its one type (Triton requires the same type from both)."""
        cond = self.expr(s.cond, child(path, "cond"), env)
        types = [self.types[child(path, "results", i, "name")] for i in range(len(s.results))]
        names = [self.target(r.name) for r in s.results]
        self.line(depth, f"if {cond.text}:")
        for side, stmts in (("then", s.then), ("else", s.else_)):
            if side == "else":
                if not (stmts or s.results):
                    break
                self.line(depth, "else:")
            inner = dict(env)
            start = len(self.lines)
            self.block(stmts, child(path, side), inner, depth + 1)
            for i, (r, t, name) in enumerate(zip(s.results, types, names)):
                value = self.expr(r.then if side == "then" else r.else_, child(path, "results", i, side), inner)
                text = value.text
                if not t.pointer:
                    # Triton's own dtype of an expression may differ (it computes f16
                    # minimum with a Python float in f32, say): name it, as a store would.
                    text = f"{self.coerce(value, t.dtype, tensor=True).at(POSTFIX)}.to({TL_DTYPES[t.dtype]})"
                self.line(depth + 1, f"{name} = {text}")
            if len(self.lines) == start:
                self.line(depth + 1, "pass")
        for r, t, name in zip(s.results, types, names):
            env[r.name] = _Code(name, ATOM, t.dtype, pointer=t.pointer)


def _modifiers(access: Union[L.Load, L.Store]) -> list[str]:
    """A load's or store's ``cache`` as Triton's cache_modifier or eviction_policy keyword."""
    if access.cache is None:
        return []
    if access.cache.startswith("evict_"):
        return [f'eviction_policy="{access.cache}"']
    return [f'cache_modifier=".{access.cache}"']
