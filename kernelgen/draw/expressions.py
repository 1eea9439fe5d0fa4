"""The random expressions of the kernel generator: :class:`_Gen` draws typed, bounded values
(exact or with an error bound, rules 2 to 6 of :mod:`kernelgen.draw.strategies`) over a pool of
named values, with lets, ifs, reductions, reshapes and operations across a block.

Kept apart from the templates (:mod:`kernelgen.draw.templates`), which lay out a kernel's
memory accesses and call this to fill the body. Draw order is the generated kernels' identity
(the differential test's seeded kernels): code moved here is unchanged.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Any, Callable

from hypothesis import strategies as st

from kernelgen.draw.bits import NARROW_INT_DTYPES, FP8_DTYPES, float_bits, integer_bits, through_fp8, through_narrow_int
from kernelgen.draw.values import (ALL_DTYPES, DENORMAL, EPS, FLOAT_DTYPES, FLOAT_LIMIT, INT_DTYPES, INT_LIMIT,
                                   NUMBER_DTYPES, Val, broadcast_shape, broadcasts_to, let, numel, op, rounding)
from kernelgen.lang.limits import type_info
from kernelgen.lang.nodes import COMPARISON_OPS


RELATIVE_ERROR_LIMIT = 1e-2
FLOAT_LITERALS = (0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.5, 3.0, 0.25, -0.125, 10.0)
INT_LITERALS = (0, 1, -1, 2, 3, -7, 5, 16, 100)
MAX_DETOUR_NUMEL = 4096
MATH_FUNCTIONS = ("exp", "exp2", "exp2_ftz", "log", "log2", "log1p", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "sin", "cos")


class _Gen:
    """Draws typed expressions over a pool of named values (the scope being generated)."""

    def __init__(self, draw: Callable[[st.SearchStrategy], Any]) -> None:
        self.draw = draw
        self.pool: list[Val] = []
        self.stmts: list[dict[str, Any]] = []
        self.counter = itertools.count()
        self.dims: tuple[int, ...] = (1,)
        self.level = 0  # how many ifs enclose this scope

    # -- drawing ----------------------------------------------------------------------------

    def choose(self, options: Any) -> Any:
        return self.draw(st.sampled_from(list(options)))

    def chance(self, percent: int) -> bool:
        return self.draw(st.integers(0, 99)) < percent

    def contiguous(self, start: Any, block: Any, size: int) -> dict[str, Any]:
        """``start + arange(block)`` (``start`` a multiple of the block), often with the hint
        that says so, which is then true (:class:`kernelgen.lang.nodes.Hint`)."""
        offsets = op("add", lhs=start, rhs=op("arange", size=block))
        return op("hint", x=offsets, multiple_of=[size], max_contiguous=[size]) if self.chance(40) else offsets

    def modifiers(self, store: bool = False) -> dict[str, str]:
        """A load's or store's cache or eviction modifier (speed only), sometimes."""
        if not self.chance(20):
            return {}
        caches = ("wb", "cg", "cs", "wt") if store else ("ca", "cg", "cv")
        return {"cache": self.choose(caches + ("evict_first", "evict_last"))}

    def loop_options(self) -> dict[str, int]:
        """A loop's own pipelining depth, sometimes; its unrolling, sometimes."""
        return {**({"num_stages": self.choose((1, 2, 3, 4))} if self.chance(30) else {}),
                **({"unroll": self.choose((2, 4))} if self.chance(20) else {})}

    def fresh(self, prefix: str = "v") -> str:
        return f"{prefix}{next(self.counter)}"

    def bind(self, val: Val, prefix: str = "v", pool: bool = True) -> Val:
        name = self.fresh(prefix)
        self.stmts.append(let(name, val.expr))
        named = replace(val, expr=name)
        if pool:
            self.pool.append(named)
        return named

    def nested(self, *visible: Val) -> _Gen:
        """A generator for a loop body: it sees this scope's values and ``visible``, binds
        fresh names of the same sequence, and collects its own statements."""
        inner = _Gen(self.draw)
        inner.counter, inner.dims, inner.level = self.counter, self.dims, self.level
        inner.pool = self.pool + list(visible)
        return inner

    def random_lets(self, shapes: list[tuple[int, ...]], count: int) -> None:
        for _ in range(count):
            if self.level < 2 and self.chance(12):
                self.branch(shapes)
                continue
            dtype = self.choose(("f32",) + ALL_DTYPES)
            self.bind(self.value(dtype, self.choose(shapes), self.draw(st.integers(1, 3))))

    def condition(self) -> Any:
        """A per-program bool scalar of exact values: a program id against a constant, or any
        scalar comparison (of scalar params, first elements, reductions of blocks)."""
        if self.chance(50):
            return op(self.choose(COMPARISON_OPS), lhs=op("program_id"), rhs=self.choose((0, 1, 2, 3)))
        return self.boolean((), 2).expr

    def branch(self, shapes: list[tuple[int, ...]]) -> None:
        """An if on :meth:`condition` whose results join the pool: each branch has lets of
        its own (nested ifs too) and gives each result a value of the result's one dtype and
        shape; a result is either value, so its bounds are the larger of the two."""
        sides = []
        for _ in range(2):
            side = self.nested()
            side.level += 1
            side.random_lets(shapes, self.draw(st.integers(0, 2)))
            sides.append(side)
        then, orelse = sides
        cond = self.condition()  # over this scope's values, not the results
        results = []
        for _ in range(self.draw(st.integers(1, 2))):
            dtype, shape = self.choose(("f32",) + ALL_DTYPES), self.choose(shapes)
            a, b = (side.exactly(side.value(dtype, shape, self.draw(st.integers(1, 3))), shape) for side in sides)
            name = self.fresh("r")
            results.append({"name": name, "then": a.expr, "else": b.expr})
            self.pool.append(Val(name, dtype, shape, max(a.mag, b.mag), max(a.err, b.err)))
        self.stmts.append(op("if", cond=cond, then=then.stmts, results=results,
                             **({"else": orelse.stmts} if orelse.stmts else {})))

    # -- any value --------------------------------------------------------------------------

    def value(self, dtype: str, shape: tuple[int, ...], depth: int, exact: bool = False) -> Val:
        """A value of ``dtype`` whose shape broadcasts to ``shape``."""
        if dtype == "bool":
            return self.boolean(shape, depth)
        if dtype in FP8_DTYPES:
            return through_fp8(self, dtype, shape, max(depth - 1, 0))  # stores of fp8: exact values only
        if dtype in NARROW_INT_DTYPES:
            return through_narrow_int(self, dtype, shape, max(depth - 1, 0))
        if dtype in INT_DTYPES:
            return self.integer(dtype, shape, depth)
        return self.floating(dtype, shape, depth, exact)

    def exactly(self, val: Val, shape: tuple[int, ...]) -> Val:
        """``val`` broadcast to exactly ``shape`` (reductions, carries and dot need it)."""
        if val.shape == shape:
            return val
        return replace(val, expr=op("broadcast", x=val.expr, shape=list(shape)), shape=shape)

    def literal(self, dtype: str) -> Val:
        """A JSON literal: weak, it takes its partner's dtype (always next to a strong value)."""
        if dtype in FLOAT_DTYPES:
            value: Any = self.choose(FLOAT_LITERALS)
        elif dtype in INT_DTYPES:
            value = self.choose(INT_LITERALS)
        else:
            value = self.choose((True, False))
        return Val(value, dtype, (), abs(float(value)))

    def operand(self, dtype: str, shape: tuple[int, ...], depth: int, exact: bool) -> Val:
        """The second operand of an operation: often a bare literal."""
        if self.chance(30):
            return self.literal(dtype)
        return self.value(dtype, shape, depth, exact)

    def full(self, dtype: str, shape: tuple[int, ...]) -> Val:
        lit = self.literal(dtype)
        dims = list(shape) if self.chance(50) else []
        return Val(op("full", shape=dims, value=lit.expr, dtype=dtype), dtype, tuple(dims), lit.mag)

    def leaf(self, dtype: str, shape: tuple[int, ...], exact: bool = False) -> Val:
        """A pool value fitted to ``shape`` (by broadcast, reshape, trans or expand_dims), a
        pool value of another dtype cast to ``dtype``, or a constant block."""
        same: list[Val] = []
        converted: list[Val] = []
        for v in self.pool:
            fitted = self.fit(v, shape)
            if fitted is None or (exact and not v.exact):
                continue
            if v.dtype == dtype:
                same.append(fitted)
            elif self.castable(v, dtype):
                converted.append(self.cast(fitted, dtype))
        if dtype == "i32":
            for size in set(self.dims):
                if shape and shape[-1] == size:
                    same.append(Val(op("arange", size=size), "i32", (size,), size - 1))
        if same and not self.chance(15):
            return self.choose(same)
        if converted and not self.chance(20):
            return self.choose(converted)
        return self.full(dtype, shape)

    @staticmethod
    def castable(v: Val, dtype: str) -> bool:
        """Casts to integers or bool take exact values only (rule 3); nothing may overflow."""
        if dtype in FLOAT_DTYPES:
            return v.dtype == "bool" or v.mag <= FLOAT_LIMIT
        return v.exact and (v.dtype == "bool" or v.mag < INT_LIMIT)

    @staticmethod
    def cast(v: Val, dtype: str) -> Val:
        expr = op("cast", x=v.expr, dtype=dtype)
        if v.dtype == "bool" or dtype == "bool":
            return Val(expr, dtype, v.shape, 1.0)
        err = v.err
        if v.err and dtype in FLOAT_DTYPES and EPS[dtype] > EPS.get(v.dtype, 0.0):
            err += rounding(dtype, v.mag, 1.0)  # a rounding to the coarser dtype may flip
        return Val(expr, dtype, v.shape, v.mag, err)

    def fit(self, v: Val, shape: tuple[int, ...]) -> Val | None:
        if broadcasts_to(v.shape, shape):
            return v
        if len(v.shape) == 2 and tuple(reversed(v.shape)) == shape:
            return replace(v, expr=op("trans", x=v.expr), shape=shape)
        if len(v.shape) == 3 and len(shape) == 3 and sorted(v.shape) == sorted(shape):
            for dims in itertools.permutations(range(3)):
                if tuple(v.shape[d] for d in dims) == shape and list(dims) != [0, 1, 2]:
                    return replace(v, expr=op("trans", x=v.expr, dims=list(dims)), shape=shape)
        if len(shape) == len(v.shape) + 1:
            for axis in range(len(shape)):
                if shape[:axis] + shape[axis + 1:] == v.shape:
                    expanded = op("expand_dims", x=v.expr, axis=axis)
                    return replace(v, expr=op("broadcast", x=expanded, shape=list(shape)), shape=shape)
        if v.shape and shape and numel(v.shape) == numel(shape):
            return replace(v, expr=op("reshape", x=v.expr, shape=list(shape)), shape=shape)
        return None

    def checked(self, val: Val, fallback: Callable[[], Val]) -> Val:
        """Keep ``val`` if its bounds are sane (rule 5), else a simpler value."""
        limit = FLOAT_LIMIT if val.dtype in FLOAT_DTYPES else INT_LIMIT
        if val.mag > limit or val.err > RELATIVE_ERROR_LIMIT * max(1.0, val.mag):
            return fallback()
        return val

    # -- shapes: reductions, reshapes and transposes that come back to the target shape -------

    def widened(self, shape: tuple[int, ...]) -> tuple[int, tuple[int, ...]] | None:
        """An axis and a shape with one more dimension there, for a reduction back to ``shape``."""
        options = []
        for axis in range(len(shape) + 1):
            for k in sorted(set(self.dims) | {1, 2, 4}):
                wide = shape[:axis] + (k,) + shape[axis:]
                if numel(wide) <= MAX_DETOUR_NUMEL and len(wide) <= 3:
                    options.append((axis, wide))
        return self.choose(options) if options else None

    def reduce(self, kind: str, source: Callable[[tuple[int, ...]], Val], shape: tuple[int, ...],
               result_dtype: str | None = None) -> Val | None:
        """``kind`` over an extra axis, with or without keepdims; None if no room."""
        widened = self.widened(shape)
        if widened is None:
            return None
        axis, wide = widened
        src = self.exactly(source(wide), wide)
        keep = bool(shape) and self.chance(30)
        expr: Any = op(kind, x=src.expr, axis=axis, **({"keepdims": True} if keep else {}))
        if keep:
            expr = op("reshape", x=expr, shape=list(shape))
        k = wide[axis]
        dtype = result_dtype or src.dtype
        if kind == "sum":
            mag = k * src.mag
            err = 0.0 if src.dtype in INT_DTYPES else k * src.err + rounding("f32", mag, 2 * math.sqrt(k))
        elif kind in ("argmax", "argmin"):
            mag, err = float(k - 1), 0.0
        else:
            mag, err = src.mag, src.err
        return Val(expr, dtype, shape, mag, err)

    def reshaped(self, make: Callable[[tuple[int, ...]], Val], shape: tuple[int, ...]) -> Val | None:
        """A value made in another shape of the same size, reshaped or transposed back."""
        if not shape or numel(shape) < 2:
            return None
        if len(shape) == 2 and self.chance(40):
            inner = self.exactly(make(shape[::-1]), shape[::-1])
            return replace(inner, expr=op("trans", x=inner.expr), shape=shape)
        if shape[-1] >= 2 and self.chance(25):  # two halves interleaved along the last axis
            half = shape[:-1] + (shape[-1] // 2,)
            a, b = self.exactly(make(half), half), self.exactly(make(half), half)
            return Val(op("reshape", x=op("join", lhs=a.expr, rhs=b.expr), shape=list(shape)), a.dtype, shape,
                       max(a.mag, b.mag), max(a.err, b.err))
        n = numel(shape)
        options = []
        for rank in (1, 2, 3):
            for dims in itertools.product([2**i for i in range(n.bit_length())], repeat=rank):
                if numel(dims) == n and dims != shape:
                    options.append(dims)
        other = self.choose(options)
        inner = self.exactly(make(other), other)
        return replace(inner, expr=op("reshape", x=inner.expr, shape=list(shape)), shape=shape)

    # -- operations across a block: scans, sort, top-k, gather, histogram ---------------------

    def across(self, dtype: str, shape: tuple[int, ...], make: Callable[[tuple[int, ...]], Val],
               exact: bool) -> Val | None:
        """A scan, sort, top-k or gather of values of ``dtype`` back to ``shape``. Sort, top-k,
        cummax/cummin and gather only rearrange or repeat values, so an operand's error bound
        carries over (sorting is 1-Lipschitz in the max norm); integer cumsum/cumprod are exact
        (they wrap alike); a float cumsum adds like a sum, a float cumprod of exact values rounds
        once per factor."""
        kind = self.choose(("scan", "scan", "sort", "topk", "gather"))
        if kind == "scan":
            axis = self.choose(range(len(shape)))
            n = shape[axis]
            ops = ["cummax", "cummin"]
            if dtype in INT_DTYPES:
                ops += ["cumsum", "cumprod"]
            elif dtype in ("f32", "f64") and not exact:
                ops += ["cumsum", "cumprod"]
            name = self.choose(ops)
            x = self.exactly(make(shape), shape)
            if name == "cumprod" and dtype in FLOAT_DTYPES and not x.exact:
                x = self.exactly(self.floating(dtype, shape, 1, exact=True), shape)
            if name == "cumprod":  # factors within [-2, 2] (floats [-1.5, 1.5]): products stay in range
                bound = 2 if dtype in INT_DTYPES else 1.5
                x = replace(x, expr=op("clamp", x=x.expr, lo=-bound, hi=bound), mag=min(x.mag, bound))
            reverse = {"reverse": True} if self.chance(50) else {}
            expr = op(name, x=x.expr, axis=axis, **reverse)
            if name == "cumsum":
                mag = n * x.mag
                err = 0.0 if dtype in INT_DTYPES else n * x.err + rounding(dtype, mag, 2 * math.sqrt(n))
            elif name == "cumprod":
                mag = max(1.0, x.mag) ** n if x.mag < 2 or n < 64 else math.inf
                err = 0.0 if dtype in INT_DTYPES else rounding(dtype, mag, 2.0 * n)
            else:
                mag, err = x.mag, x.err
            return Val(expr, dtype, shape, mag, err)
        if kind == "sort":
            x = self.exactly(make(shape), shape)
            return Val(op("sort", x=x.expr, descending=self.chance(50)), dtype, shape, x.mag, x.err)
        if kind == "topk":
            source = self.topk_source(shape)
            x = self.exactly(make(source), source)
            return Val(op("topk", x=x.expr, k=shape[-1]), dtype, shape, x.mag, x.err)
        axis = self.choose(range(len(shape)))
        sizes = [m for m in sorted(set(self.dims) | {1, 2, shape[axis]})
                 if numel(shape[:axis] + (m,) + shape[axis + 1:]) <= MAX_DETOUR_NUMEL]
        m = self.choose(sizes)
        source = shape[:axis] + (m,) + shape[axis + 1:]
        src = self.exactly(make(source), source)
        index = self.in_range(shape, m)
        return Val(op("gather", src=src.expr, index=index.expr, axis=axis), dtype, shape, src.mag, src.err)

    def topk_source(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """A shape whose top-k along the last axis has ``shape``: that axis as long or longer."""
        wider = [n for n in sorted(set(self.dims) | {shape[-1], 2 * shape[-1]})
                 if n >= shape[-1] and numel(shape[:-1] + (n,)) <= MAX_DETOUR_NUMEL]
        return shape[:-1] + (self.choose(wider),)

    def in_range(self, shape: tuple[int, ...], n: int) -> Val:
        """An exact integer block of ``shape`` with values in 0..n-1 (``rem(|i|, n)``, magnitudes
        below 2**30, or a reversed arange)."""
        if len(shape) == 1 and shape[0] == n and self.chance(25):
            return Val(op("sub", lhs=n - 1, rhs=op("arange", size=n)), "i32", shape, n - 1)
        dtype = self.choose(INT_DTYPES)
        i = self.exactly(self.integer(dtype, shape, 1), shape)
        return Val(op("rem", lhs=op("abs", x=i.expr), rhs=n), dtype, shape, n - 1)

    def order(self, shape: tuple[int, ...], depth: int) -> Val | None:
        """i32 indices: an argsort or argtopk of exact values (discrete: rule 3), or a 1-D
        histogram of values in range (counts up to the block's length)."""
        kind = self.choose(("argsort", "argtopk", "histogram", "histogram") if len(shape) == 1 else ("argsort", "argtopk"))
        if kind == "histogram":
            n = self.choose(sorted(set(self.dims) | {shape[0]}))
            x = self.in_range((n,), shape[0])
            mask = {"mask": self.exactly(self.boolean((n,), depth), (n,)).expr} if self.chance(50) else {}
            return Val(op("histogram", x=x.expr, bins=shape[0], **mask), "i32", shape, float(n))
        source_dtype = self.choose(("f32", "f16", "bf16", "i32"))
        if kind == "argsort":
            x = self.exactly(self.value(source_dtype, shape, depth, exact=True), shape)
            return Val(op("argsort", x=x.expr, descending=self.chance(50)), "i32", shape, float(shape[-1] - 1))
        source = self.topk_source(shape)
        x = self.exactly(self.value(source_dtype, source, depth, exact=True), source)
        return Val(op("argtopk", x=x.expr, k=shape[-1]), "i32", shape, float(source[-1] - 1))

    # -- floats -----------------------------------------------------------------------------

    def floating(self, dtype: str, shape: tuple[int, ...], depth: int, exact: bool = False) -> Val:
        if depth <= 0:
            return self.leaf(dtype, shape, exact)
        kinds = ["leaf", "neg", "abs", "maximum", "clamp", "where", "cast", "cast", "floor", "rem", "shape", "reduce",
                 "bits", "bits", "eps"]
        if shape:
            kinds += ["across", "across"]
        if dtype == "f32" or not exact:
            kinds += ["add", "add"]
        if not exact:
            kinds += ["mul", "mul", "div", "fma", "pow", "sum"] + ["math"] * 6
        kind = self.choose(kinds)
        d = depth - 1

        def sub(s: tuple[int, ...] = shape, ex: bool = exact, dt: str = dtype) -> Val:
            return self.floating(dt, s, d, ex)

        val: Val | None
        if kind == "leaf":
            return self.leaf(dtype, shape, exact)
        if kind == "bits":
            return self.checked(float_bits(self, dtype, shape, d, exact), lambda: self.leaf(dtype, shape, exact))
        if kind in ("neg", "abs"):
            x = sub()
            val = replace(x, expr=op(kind, x=x.expr))
        elif kind == "maximum":
            a, b = sub(), self.operand(dtype, shape, d, exact)
            val = Val(op(self.choose(("maximum", "minimum")), lhs=a.expr, rhs=b.expr), dtype,
                      broadcast_shape(a.shape, b.shape), max(a.mag, b.mag), max(a.err, b.err))
        elif kind == "clamp":
            val = self.clamped(sub(), d, exact)
        elif kind == "where":
            c, x, y = self.boolean(shape, d), sub(), self.operand(dtype, shape, d, exact)
            val = Val(op("where", cond=c.expr, x=x.expr, y=y.expr), dtype, broadcast_shape(c.shape, x.shape, y.shape),
                      max(x.mag, y.mag), max(x.err, y.err))
        elif kind == "cast":
            val = self.cast_to_float(dtype, shape, d, exact)
        elif kind == "floor":
            x = sub(ex=True)
            val = Val(op(self.choose(("floor", "ceil", "round")), x=x.expr), dtype, x.shape, x.mag + 1.0)
        elif kind == "eps":  # the dtype's own finfo eps: an exact scalar
            val = Val(op("finfo", dtype=dtype, what="eps"), dtype, (), type_info("finfo", dtype, "eps"))
        elif kind == "rem":
            val = self.float_rem(dtype, shape, d)
        elif kind == "shape":
            val = self.reshaped(lambda s: sub(s), shape)
        elif kind == "reduce":
            val = self.reduce(self.choose(("max", "min")), lambda s: sub(s), shape)
        elif kind == "across":
            val = self.across(dtype, shape, lambda s, ex=exact: sub(s, ex), exact)
        elif kind == "add":
            a, b = sub(), self.operand(dtype, shape, d, exact)
            mag = a.mag + b.mag
            both_exact = dtype == "f32" and a.exact and b.exact
            val = Val(op(self.choose(("add", "sub")), lhs=a.expr, rhs=b.expr), dtype, broadcast_shape(a.shape, b.shape),
                      mag, 0.0 if both_exact else a.err + b.err + rounding(dtype, mag))
        elif kind == "mul":
            a, b = sub(), self.operand(dtype, shape, d, False)
            mag = a.mag * b.mag
            val = Val(op("mul", lhs=a.expr, rhs=b.expr), dtype, broadcast_shape(a.shape, b.shape), mag,
                      a.err * b.mag + b.err * a.mag + a.err * b.err + rounding(dtype, mag))
        elif kind == "div":
            val = self.divided(dtype, shape, d)
        elif kind == "fma":
            x, y, z = sub(), sub(), self.operand(dtype, shape, d, False)
            mag = x.mag * y.mag + z.mag
            val = Val(op("fma", x=x.expr, y=y.expr, z=z.expr), dtype, broadcast_shape(x.shape, y.shape, z.shape), mag,
                      x.err * y.mag + y.err * x.mag + x.err * y.err + z.err + rounding(dtype, mag))
        elif kind == "math":
            val = self.in_f32(dtype, lambda: self.math(shape, d))
        elif kind == "pow":
            val = self.in_f32(dtype, lambda: self.power(shape, d))
        else:
            val = self.in_f32(dtype, lambda: self.reduce("sum", lambda s: self.floating("f32", s, d), shape))
        if val is None:
            return self.leaf(dtype, shape, exact)
        return self.checked(val, lambda: self.leaf(dtype, shape, exact))

    def in_f32(self, dtype: str, make: Callable[[], Val | None]) -> Val | None:
        """An f32-only computation, cast to ``dtype``."""
        val = make()
        if val is None or dtype == "f32":
            return val
        return Val(op("cast", x=val.expr, dtype=dtype), dtype, val.shape, val.mag,
                   val.err + rounding(dtype, val.mag, 1.0))

    def clamped(self, x: Val, depth: int, exact: bool) -> Val:
        """clamp with lo <= hi on both sides: ordered literals, or -|a| and |b|."""
        if self.chance(60):
            literals = FLOAT_LITERALS if x.dtype in FLOAT_DTYPES else INT_LITERALS
            lo, hi = sorted(self.draw(st.lists(st.sampled_from(literals), min_size=2, max_size=2, unique=True)))
            return Val(op("clamp", x=x.expr, lo=lo, hi=hi), x.dtype, x.shape, min(x.mag, max(abs(lo), abs(hi))), x.err)
        a = self.value(x.dtype, x.shape, depth, exact)
        b = self.value(x.dtype, x.shape, depth, exact)
        return Val(op("clamp", x=x.expr, lo=op("neg", x=op("abs", x=a.expr)), hi=op("abs", x=b.expr)), x.dtype,
                   broadcast_shape(x.shape, a.shape, b.shape), min(x.mag, max(a.mag, b.mag)), max(x.err, a.err, b.err))

    def cast_to_float(self, dtype: str, shape: tuple[int, ...], depth: int, exact: bool) -> Val:
        source = self.choose([t for t in ALL_DTYPES if t != dtype])
        return self.cast(self.value(source, shape, depth, exact), dtype)

    def positive(self, shape: tuple[int, ...], depth: int) -> tuple[Val, float]:
        """``|x| + c``: at least c on both sides, whatever x's error."""
        x = self.floating("f32", shape, depth)
        c = self.choose((0.5, 1.0, 2.0))
        mag = x.mag + c
        err = x.err if x.exact else x.err + rounding("f32", mag)
        return Val(op("add", lhs=op("abs", x=x.expr), rhs=c), "f32", x.shape, mag, err), c

    def divided(self, dtype: str, shape: tuple[int, ...], depth: int) -> Val | None:
        num = self.floating(dtype, shape, depth)
        den, lo = self.positive(shape, depth)
        if dtype != "f32":
            den = Val(op("cast", x=den.expr, dtype=dtype), dtype, den.shape, den.mag,
                      den.err + rounding(dtype, den.mag, 1.0))
            lo = lo * (1 - EPS[dtype])
        if self.chance(30):
            den = replace(den, expr=op("neg", x=den.expr))
        mag = num.mag / lo
        err = (num.err + mag * den.err) / lo + rounding(dtype, mag, 4.0)
        return Val(op("div", lhs=num.expr, rhs=den.expr), dtype, broadcast_shape(num.shape, den.shape), mag, err)

    def float_rem(self, dtype: str, shape: tuple[int, ...], depth: int) -> Val:
        """C ``fmod`` of exact f32 values by ``±(|y| + c)``: exact on both sides (the result is
        representable), but it jumps at multiples of the divisor, so its operands must be exact;
        f16 and bf16 take the f32 result rounded (deterministic)."""
        x = self.floating("f32", shape, depth, exact=True)
        y = self.floating("f32", shape, depth, exact=True)
        c = self.choose((0.5, 1.0, 2.0))
        divisor: Any = op("add", lhs=op("abs", x=y.expr), rhs=c)
        if self.chance(30):
            divisor = op("neg", x=divisor)
        val = Val(op("rem", lhs=x.expr, rhs=divisor), "f32", broadcast_shape(x.shape, y.shape), min(x.mag, y.mag + c))
        return val if dtype == "f32" else self.cast(val, dtype)

    def math(self, shape: tuple[int, ...], depth: int) -> Val:
        fn = self.choose(MATH_FUNCTIONS)
        if fn in ("log", "log2", "sqrt", "rsqrt"):
            x, lo = self.positive(shape, depth)
        else:
            x, lo = self.floating("f32", shape, depth), 0.0
        if fn in ("exp", "exp2", "exp2_ftz", "sin", "cos") and x.mag > 8.0:
            x = Val(op("clamp", x=x.expr, lo=-8.0, hi=8.0), "f32", x.shape, 8.0, x.err)
        if fn == "log1p":
            x = Val(op("abs", x=x.expr), "f32", x.shape, x.mag, x.err)
        m, e = x.mag, x.err
        ulps = 8.0 * max(1.0, m)
        if fn in ("exp", "exp2", "exp2_ftz"):
            mag = math.exp(m) if fn == "exp" else 2.0**m
            err = mag * (e + ulps * EPS["f32"]) + DENORMAL
        elif fn in ("log", "log2"):
            scale = 1.0 if fn == "log" else 1 / math.log(2)
            mag = scale * max(abs(math.log(lo)), math.log(m))
            err = scale * e / lo + rounding("f32", max(1.0, mag), 8.0)
        elif fn == "log1p":
            mag = math.log1p(m)
            err = e + rounding("f32", max(1.0, mag), 8.0)
        elif fn == "sqrt":
            mag = math.sqrt(m)
            err = e / (2 * math.sqrt(lo)) + rounding("f32", mag, 4.0)
        elif fn == "rsqrt":
            mag = 1 / math.sqrt(lo)
            err = 0.5 * e * lo**-1.5 + rounding("f32", mag, 4.0)
        else:
            lipschitz = {"tanh": 1.0, "sigmoid": 0.25, "erf": 1.13, "sin": 1.0, "cos": 1.0}[fn]
            mag = 1.0 if fn != "tanh" else min(1.0, m)
            err = lipschitz * e + rounding("f32", ulps)
        return Val(op(fn, x=x.expr), "f32", x.shape, mag, err)

    def power(self, shape: tuple[int, ...], depth: int) -> Val:
        """``(|x| + c) ** e`` with e in [-2, 3]: a literal, or a clamped value."""
        base, lo = self.positive(shape, depth)
        if self.chance(60):
            exponent: Any = self.choose((0.5, 2.0, -1.0, 1.5, -0.5, 3.0))
            top, e_err, e_shape = abs(exponent), 0.0, ()
        else:
            e = self.floating("f32", shape, depth)
            exponent, top, e_err, e_shape = op("clamp", x=e.expr, lo=-2.0, hi=2.0), 2.0, e.err, e.shape
        spread = max(base.mag, 1 / lo, 1.0)
        mag = spread**top
        log_spread = math.log(spread)
        err = mag * (top * base.err / lo + log_spread * e_err + 8 * EPS["f32"] * (1 + top * log_spread)) + DENORMAL
        return Val(op("pow", lhs=base.expr, rhs=exponent), "f32", broadcast_shape(base.shape, e_shape), mag, err)

    # -- integers ---------------------------------------------------------------------------

    def integer(self, dtype: str, shape: tuple[int, ...], depth: int) -> Val:
        if depth <= 0:
            return self.leaf(dtype, shape)
        kind = self.choose(["leaf", "neg", "add", "add", "mul", "divide", "divide", "maximum", "clamp", "where",
                            "bitwise", "cast", "cast", "shape", "reduce", "argmax", "bits", "bits"]
                           + (["across", "order"] if shape else []))
        d = depth - 1

        def sub(s: tuple[int, ...] = shape) -> Val:
            return self.integer(dtype, s, d)

        val: Val | None
        if kind == "leaf":
            return self.leaf(dtype, shape)
        if kind == "bits":
            return self.checked(integer_bits(self, dtype, shape, d), lambda: self.leaf(dtype, shape))
        if kind == "neg":
            x = sub()
            val = replace(x, expr=op(self.choose(("neg", "abs")), x=x.expr))
        elif kind in ("add", "mul", "maximum", "bitwise"):
            a, b = sub(), self.operand(dtype, shape, d, True)
            name = {"add": self.choose(("add", "sub")), "mul": "mul", "maximum": self.choose(("maximum", "minimum")),
                    "bitwise": self.choose(("and", "or", "xor"))}[kind]
            mag = {"add": a.mag + b.mag, "mul": a.mag * b.mag, "maximum": max(a.mag, b.mag),
                   "bitwise": 2.0 ** math.ceil(math.log2(max(a.mag, b.mag) + 1)) * 2}[kind]
            val = Val(op(name, lhs=a.expr, rhs=b.expr), dtype, broadcast_shape(a.shape, b.shape), mag)
        elif kind == "divide":
            val = self.int_divided(dtype, shape, d)
        elif kind == "clamp":
            val = self.clamped(sub(), d, True)
        elif kind == "where":
            c, x, y = self.boolean(shape, d), sub(), self.operand(dtype, shape, d, True)
            val = Val(op("where", cond=c.expr, x=x.expr, y=y.expr), dtype, broadcast_shape(c.shape, x.shape, y.shape),
                      max(x.mag, y.mag))
        elif kind == "cast":
            source = self.choose([t for t in ALL_DTYPES if t != dtype])
            val = self.cast(self.value(source, shape, d, exact=True), dtype)
        elif kind == "shape":
            val = self.reshaped(lambda s: sub(s), shape)
        elif kind == "reduce":
            val = self.reduce(self.choose(("sum", "max", "min")), lambda s: sub(s), shape)
        elif kind == "across":
            val = self.across(dtype, shape, lambda s: sub(s), True)
        elif kind == "order":
            val = self.order(shape, d)
            if val is not None and dtype != "i32":
                val = replace(val, expr=op("cast", x=val.expr, dtype=dtype), dtype=dtype)
        else:
            source = self.choose(NUMBER_DTYPES)
            val = self.reduce(self.choose(("argmax", "argmin")), lambda s: self.value(source, s, d, exact=True),
                              shape, "i32")
            if val is not None and dtype != "i32":
                val = replace(val, expr=op("cast", x=val.expr, dtype=dtype), dtype=dtype)
        if val is None:
            return self.leaf(dtype, shape)
        return self.checked(val, lambda: self.leaf(dtype, shape))

    def int_divided(self, dtype: str, shape: tuple[int, ...], depth: int) -> Val:
        """idiv and rem by ``±(|x| + k)``; cdiv of ``|x|`` by ``|y| + k``."""
        name = self.choose(("idiv", "rem", "cdiv"))
        num = self.integer(dtype, shape, depth)
        if name == "cdiv":
            num = replace(num, expr=op("abs", x=num.expr))
        den = self.integer(dtype, shape, depth)
        k = self.choose((1, 2, 3))
        den_expr: Any = op("add", lhs=op("abs", x=den.expr), rhs=k)
        if name != "cdiv" and self.chance(40):
            den_expr = op("neg", x=den_expr)
        mag = {"idiv": num.mag / k, "rem": min(num.mag, den.mag + k), "cdiv": num.mag / k + 1}[name]
        return Val(op(name, lhs=num.expr, rhs=den_expr), dtype, broadcast_shape(num.shape, den.shape), mag)

    # -- booleans ---------------------------------------------------------------------------

    def boolean(self, shape: tuple[int, ...], depth: int) -> Val:
        if depth <= 0:
            return self.leaf("bool", shape)
        kind = self.choose(["leaf", "compare", "compare", "compare", "logic", "not", "cast", "where", "equal"])
        d = depth - 1
        if kind == "leaf":
            return self.leaf("bool", shape)
        if kind == "compare":
            dtype = self.choose(NUMBER_DTYPES)
            a, b = self.value(dtype, shape, d, exact=True), self.operand(dtype, shape, d, True)
            return Val(op(self.choose(COMPARISON_OPS), lhs=a.expr, rhs=b.expr), "bool",
                       broadcast_shape(a.shape, b.shape))
        if kind in ("logic", "equal"):
            a, b = self.boolean(shape, d), self.operand("bool", shape, d, True)
            name = self.choose(("and", "or", "xor") if kind == "logic" else ("eq", "ne"))
            return Val(op(name, lhs=a.expr, rhs=b.expr), "bool", broadcast_shape(a.shape, b.shape))
        if kind == "not":
            x = self.boolean(shape, d)
            return Val(op("not", x=x.expr), "bool", x.shape)
        if kind == "cast":
            if self.chance(25):
                return (through_narrow_int if self.chance(40) else through_fp8)(self, "bool", shape, d)
            return self.cast(self.value(self.choose(NUMBER_DTYPES), shape, d, exact=True), "bool")
        c, x, y = self.boolean(shape, d), self.boolean(shape, d), self.boolean(shape, d)
        return Val(op("where", cond=c.expr, x=x.expr, y=y.expr), "bool", broadcast_shape(c.shape, x.shape, y.shape))
