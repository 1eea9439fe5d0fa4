"""Hypothesis strategies for random, well-typed kernel ASTs that can be run.

:func:`kernels` draws a :class:`GeneratedKernel`: a kernel, the concrete sizes to run it with
and, per output, the tolerance a compiled kernel must meet against the interpreter. The
property tests check and interpret them; the GPU differential test compiles the same kernels
and compares the GPU's outputs with the interpreter's, so a generated kernel must have ONE
meaning that a correct compiler reproduces. The rules that make it so:

1. **Memory.** Every load and store is masked by ``offsets < size`` or provably inside its
   tensor (``x + minimum(offsets, N - 1)``, ``out + program_id`` over a grid of the output's
   length). Programs store to disjoint elements (their own tile, row or reversed tile; a
   per-program partial result at ``out + program_id``), and every output element is written
   exactly once (split stores use complementary masks), so the pre-fill never shows.
2. **Integers.** Divisors are ``|v| + k`` with ``k >= 1`` (or its negation), never zero;
   ``cdiv`` takes a non-negative dividend and a positive divisor; magnitudes stay below 2**30,
   so nothing overflows or wraps.
3. **Exactness.** Every value carries a bound on ``|GPU - interpreter|``. Exact values (bound
   0, bit-identical on both sides) are loads, literals, integer and boolean arithmetic, f32
   ``add``/``sub`` of exact values, and ``neg``, ``abs``, ``maximum``, ``minimum``, ``clamp``,
   ``where``, ``floor``, ``ceil``, float ``rem`` (C ``fmod``), ``max``/``min`` reductions and
   casts of exact values (rounding to nearest even is deterministic). Float ``mul`` (a GPU may
   fuse it into an FMA), ``div``, ``fma``, ``pow``, every math function, ``sum`` of floats and
   ``dot`` are approximate. Discrete operations (comparisons, ``where`` conditions, masks,
   ``argmax``/``argmin``, ``floor``/``ceil``, float ``rem``, casts to integers or bool) take
   exact operands only, so a 1-ulp difference can never flip an outcome.
4. **Domains.** ``log``, ``log2``, ``sqrt``, ``rsqrt`` and ``pow`` take ``|x| + c`` with
   ``c >= 0.5``; ``log1p`` takes ``|x|``; float divisors (``div``, ``rem``) are
   ``±(|x| + c)``; ``exp``, ``exp2``, ``sin`` and ``cos`` take arguments clamped to [-8, 8];
   ``pow`` exponents lie in [-2, 3]. No NaN or infinity is ever produced (``-inf`` appears
   only as the neutral element of a running maximum and as the ``other`` of the loads it
   reduces).
5. **Magnitudes.** Every number carries a bound on its absolute value, from the input ranges
   of :meth:`GeneratedKernel.arguments` (floats in [-8, 8], integers in [-64, 64)); a float
   above 1e4, or whose error bound exceeds 1% of its magnitude, is replaced by a simpler
   operand while generating, so nothing overflows on one side only and cancellation never
   amplifies rounding beyond a sane tolerance.
6. **Tolerance.** Each approximate operation adds a few ulps of its dtype times its magnitude
   bound to the error bound, and propagates its operands' bounds through its Lipschitz
   constant (``mul``: ``ea*|b| + eb*|a|``; ``div``: through ``1/lo``; ``exp``: times its value;
   sums: ``sqrt(n)`` ulps of the summed magnitude; ``tf32``: 2**-10 relative per operand). An
   output's :class:`Tolerance` is that bound times a safety factor, on top of
   :func:`comparison_tolerance` of its dtype; exact outputs must match bit for bit.

7. **Atomics.** Only atomics whose outputs do not depend on the order: in the tile template
   up to two atomics combine every row of every row block into ``col_acc0[col]`` (integer
   add/max/min/and/or/xor and float max/min exact; a float add's tolerance covers any
   summation order); in the elementwise ones each lane exchanges (``xchg``, or ``cas`` with
   lanes past the end compared with a value no element holds) its own element of an output
   with an ``init`` fill, and the old values, the fill where the lane is active, feed later
   lets. No old value of a contended atomic, nor of a masked-off lane, is ever used.

The kernel shapes ("templates"): 1-D elementwise (direct grid, or a grid-stride loop with
per-program trip counts and carried partial results), 2-D tiles (reductions inside the tile,
transposed outputs, row outputs), rows (loops over column chunks carrying partial sums,
running maxima, counts, argmax and a pointer; ragged per-program trip counts), tiled ``dot``
(f16/bf16/f32, ieee/tf32, with or without ``acc``, f32 or f16 accumulation), a 3-D grid, and
tiles whose outputs are each an operation across the tile (``blocks``).
Inside each, random ``let`` chains use every unary and binary operation, ``where``, ``fma``,
``clamp``, casts among all dtypes, reductions (with ``keepdims``), ``expand_dims``,
``reshape``, ``broadcast`` and ``trans``, and ifs on per-program scalar conditions (program ids,
comparisons of exact scalars) whose results join the values drawn from, with lets (and ifs) of
their own in each branch; 1-D stores are sometimes split by an if, the full block unmasked and
the tail masked; and operations across a block: scans (either direction), sort, top-k
(values of any operand; argsort/argtopk of exact ones), gather (indices ``rem(|i|, n)``) and 1-D
histograms (values in range, sometimes masked). Block offsets ``start + arange(B)`` with ``start`` a multiple of ``B``
often carry the (true) contiguity and alignment hint; loads and stores sometimes a cache or
eviction modifier (``cache``); the rows and dot templates draw the kernel's ``num_stages`` and loops
sometimes their own.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

from hypothesis import strategies as st

from kernelgen.draw_bits import FP8_DTYPES, constructs_of, float_bits, integer_bits, through_fp8
from kernelgen.draw_values import (ALL_DTYPES, DENORMAL, EPS, FLOAT_DTYPES, FLOAT_LIMIT, INT_DTYPES, INT_LIMIT,
                                   NUMBER_DTYPES, TF32_EPS, Val, broadcast_shape, broadcasts_to, let, numel, op,
                                   rounding)
from kernelgen.language import COMPARISON_OPS, Kernel
from kernelgen.parse import kernel_from_obj


# The ranges GeneratedKernel.arguments draws inputs from; every bound below starts here.
INPUT_FLOAT_BOUND = 8.0
INPUT_INT_LOW, INPUT_INT_HIGH = -64, 64
SCALAR_FLOAT_BOUND = 1.5  # kernelgen.inputs draws float scalars from [0.5, 1.5] and integers as 3
SCALAR_INT_BOUND = 3

RELATIVE_ERROR_LIMIT = 1e-2
SAFETY = 4.0

FLOAT_LITERALS = (0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.5, 3.0, 0.25, -0.125, 10.0)
INT_LITERALS = (0, 1, -1, 2, 3, -7, 5, 16, 100)
MAX_DETOUR_NUMEL = 4096
# Operations across a block, counted per kernel by GeneratedKernel.constructs.
BLOCK_OPS = ("cumsum", "cumprod", "cummax", "cummin", "sort", "argsort", "topk", "argtopk", "gather", "histogram")
MATH_FUNCTIONS = ("exp", "exp2", "log", "log2", "log1p", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "sin", "cos")


@dataclass(frozen=True)
class Tolerance:
    """``|actual - expected| <= atol + rtol * |expected|``; both 0: bit for bit."""

    rtol: float
    atol: float

    @property
    def exact(self) -> bool:
        return self.rtol == 0.0 and self.atol == 0.0


def comparison_tolerance(dtype: str) -> Tolerance:
    """The least tolerance for an approximate output of ``dtype`` (a few ulps relative, and
    an absolute floor for values near zero); exact dtypes compare bit for bit."""
    if dtype not in FLOAT_DTYPES:
        return Tolerance(0.0, 0.0)
    return Tolerance(4 * EPS[dtype], 4 * EPS[dtype] * 1e-3)


@dataclass(frozen=True)
class GeneratedKernel:
    """A random kernel with the sizes to run it and a tolerance per output."""

    kernel: Kernel
    sizes: dict[str, int]
    tolerances: dict[str, Tolerance]
    template: str

    @property
    def meta(self) -> dict[str, int]:
        return {m.name: m.value for m in self.kernel.meta}

    def constructs(self) -> set[str]:
        """The optional constructs the kernel uses (hint, cache, the kernel's and a
        loop's num_stages, an if with results or without: a store split at the tail, several
        launches, a zero-filled scratch, each atomic op, each operation across a block), so that a
        differential run can say how often each was exercised."""
        found = {"kernel num_stages"} if self.kernel.num_stages != 3 else set()
        found |= {f"{t.dtype} tensor" for t in (*self.kernel.inputs, *self.kernel.outputs) if t.dtype in FP8_DTYPES}
        if self.template == "dot" and self.kernel.inputs[0].dtype in FP8_DTYPES:
            found.add("fp8 dot")

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                if "cache" in node:
                    found.add("cache")
                if node.get("op") == "hint":
                    found.add("hint")
                if node.get("op") in BLOCK_OPS:
                    found.add(node["op"])
                if node.get("op") == "for" and "num_stages" in node:
                    found.add("loop num_stages")
                if node.get("op") == "if":
                    found.add("if results" if node.get("results") else "if")
                elif str(node.get("op", "")).startswith("atomic_"):
                    found.add(node["op"])
                found.update(constructs_of(node))
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        document = self.kernel.model_dump(exclude_none=True)
        walk([document.get("body", []), document.get("launches", [])])
        if self.kernel.is_program:
            found.add("several launches")
            if any(s.zero for s in self.kernel.scratch):
                found.add("zero scratch")
        return found

    def arguments(self, seed: int = 0) -> dict[str, Any]:
        """Call arguments (:func:`kernelgen.inputs.random_inputs`) kept in the ranges the
        bounds assume: floats within [-8, 8], integers within [-64, 64), scalars within
        +-1.5 (floats) and +-3 (integers)."""
        import torch

        from kernelgen.inputs import random_inputs

        args = random_inputs(self.kernel, self.sizes, seed=seed)
        for name, value in args.items():
            if isinstance(value, torch.Tensor):
                if value.is_floating_point() and value.dtype.itemsize == 1:  # fp8: no clamp in torch
                    args[name] = value.float().clamp(-INPUT_FLOAT_BOUND, INPUT_FLOAT_BOUND).to(value.dtype)
                elif value.is_floating_point():
                    args[name] = value.clamp(-INPUT_FLOAT_BOUND, INPUT_FLOAT_BOUND)
                elif value.dtype != torch.bool:
                    args[name] = value.clamp(INPUT_INT_LOW, INPUT_INT_HIGH - 1)
            elif isinstance(value, float):
                args[name] = min(max(value, -SCALAR_FLOAT_BOUND), SCALAR_FLOAT_BOUND)
            elif isinstance(value, int) and not isinstance(value, bool):
                args[name] = min(max(value, -SCALAR_INT_BOUND), SCALAR_INT_BOUND)
        return args

    def mismatches(self, expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
        """One line per output that differs beyond its tolerance (empty when all match)."""
        problems = []
        for name, tolerance in self.tolerances.items():
            want, got = expected[name].detach().cpu(), actual[name].detach().cpu()
            if want.shape != got.shape or want.dtype != got.dtype:
                problems.append(f"{name}: {got.dtype}{list(got.shape)} instead of {want.dtype}{list(want.shape)}")
                continue
            if tolerance.exact:
                bad = want != got
            else:
                w, g = want.double(), got.double()
                bad = ~((w - g).abs() <= tolerance.atol + tolerance.rtol * w.abs())
            if bad.any():
                index = tuple(bad.nonzero()[0].tolist())
                problems.append(f"{name}: {int(bad.sum())} of {want.numel()} elements differ, e.g. at {list(index)} "
                                f"expected {want[index].item()!r} got {got[index].item()!r} (tolerance {tolerance})")
        return problems


# ---------------------------------------------------------------------------------------------
# Values under construction




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
        that says so, which is then true (:class:`kernelgen.language.Hint`)."""
        offsets = op("add", lhs=start, rhs=op("arange", size=block))
        return op("hint", x=offsets, multiple_of=[size], max_contiguous=[size]) if self.chance(40) else offsets

    def modifiers(self, store: bool = False) -> dict[str, str]:
        """A load's or store's cache or eviction modifier (speed only), sometimes."""
        if not self.chance(20):
            return {}
        caches = ("wb", "cg", "cs", "wt") if store else ("ca", "cg", "cv")
        return {"cache": self.choose(caches + ("evict_first", "evict_last"))}

    def stages(self) -> dict[str, int]:
        """A loop's own pipelining depth, sometimes."""
        return {"num_stages": self.choose((1, 2, 3, 4))} if self.chance(30) else {}

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
                 "bits", "bits"]
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
            val = Val(op(self.choose(("floor", "ceil")), x=x.expr), dtype, x.shape, x.mag + 1.0)
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
        if fn in ("exp", "exp2", "sin", "cos") and x.mag > 8.0:
            x = Val(op("clamp", x=x.expr, lo=-8.0, hi=8.0), "f32", x.shape, 8.0, x.err)
        if fn == "log1p":
            x = Val(op("abs", x=x.expr), "f32", x.shape, x.mag, x.err)
        m, e = x.mag, x.err
        ulps = 8.0 * max(1.0, m)
        if fn in ("exp", "exp2"):
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
                return through_fp8(self, "bool", shape, d)
            return self.cast(self.value(self.choose(NUMBER_DTYPES), shape, d, exact=True), "bool")
        c, x, y = self.boolean(shape, d), self.boolean(shape, d), self.boolean(shape, d)
        return Val(op("where", cond=c.expr, x=x.expr, y=y.expr), "bool", broadcast_shape(c.shape, x.shape, y.shape))


# ---------------------------------------------------------------------------------------------
# Kernels


@dataclass
class _Spec:
    """The host side of a kernel being generated, and the tolerance of each output."""

    name: str
    sizes: dict[str, int]
    inputs: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    params: list[dict[str, Any]] = field(default_factory=list)
    meta: list[dict[str, Any]] = field(default_factory=list)
    tolerances: dict[str, Tolerance] = field(default_factory=dict)
    num_stages: int = 3

    def tensor(self, name: str, dtype: str, shape: list[Any]) -> tuple[str, str]:
        self.inputs.append({"name": name, "dtype": dtype, "shape": shape})
        self.params.append({"name": name})
        return name, dtype

    def scalar(self, name: str, dtype: str) -> None:
        self.inputs.append({"name": name, "dtype": dtype})
        self.params.append({"name": name})

    def output(self, name: str, dtype: str, shape: list[Any]) -> tuple[str, str]:
        self.outputs.append({"name": name, "dtype": dtype, "shape": shape})
        self.params.append({"name": name})
        return name, dtype

    def stored(self, name: str, val: Val) -> None:
        """Widen the output's tolerance to cover a value stored into it (rule 6)."""
        dtype = next(o["dtype"] for o in self.outputs if o["name"] == name)
        base = comparison_tolerance(dtype)
        atol = 0.0 if val.exact or base.exact else max(base.atol, SAFETY * val.err)
        atol = max(atol, self.tolerances.get(name, Tolerance(0.0, 0.0)).atol)
        self.tolerances[name] = Tolerance(base.rtol, atol) if atol else Tolerance(0.0, 0.0)

    def build(self, grid: list[Any], body: list[dict[str, Any]], num_warps: int, template: str) -> GeneratedKernel:
        kernel = kernel_from_obj({"name": self.name, "inputs": self.inputs, "outputs": self.outputs,
                                  "params": self.params, "meta": self.meta, "grid": grid,
                                  "num_warps": num_warps, "num_stages": self.num_stages, "body": body})
        return GeneratedKernel(kernel, dict(self.sizes), dict(self.tolerances), template)


def _loaded(expr: Any, dtype: str, shape: tuple[int, ...], other: Any = None) -> Val:
    """A loaded value: exact, within the input range (or the literal read in masked lanes)."""
    if dtype == "bool":
        return Val(expr, dtype, shape)
    bound = INPUT_FLOAT_BOUND if dtype in FLOAT_DTYPES + FP8_DTYPES else float(max(-INPUT_INT_LOW, INPUT_INT_HIGH))
    if other is not None:
        bound = max(bound, abs(float(other)))
    return Val(expr, dtype, shape, bound)


def _load(g: _Gen, ptr: Any, mask: Any, dtype: str, shape: tuple[int, ...]) -> Val:
    """A masked load, reading 0 or a literal (drawn) in masked-off lanes."""
    other = None if g.chance(50) or dtype in FP8_DTYPES else g.literal(dtype).expr
    load = op("load", ptr=ptr, mask=mask, **({} if other is None else {"other": other}), **g.modifiers())
    return _loaded(load, dtype, shape, other)


def _store(g: _Gen, spec: _Spec, out: str, dtype: str, shape: tuple[int, ...], ptr: Any, mask: Any = None) -> None:
    val = g.value(dtype, shape, g.draw(st.integers(1, 4)))
    spec.stored(out, val)
    g.stmts.append(op("store", ptr=ptr, value=val.expr, **({} if mask is None else {"mask": mask}),
                      **g.modifiers(store=True)))


def _scalar_inputs(g: _Gen, spec: _Spec) -> None:
    if g.chance(40):
        spec.scalar("alpha", "f32")
        g.pool.append(Val("alpha", "f32", (), SCALAR_FLOAT_BOUND))
    if g.chance(30):
        spec.scalar("count", "i32")
        g.pool.append(Val("count", "i32", (), float(SCALAR_INT_BOUND)))


def _tensors(g: _Gen, spec: _Spec, shape: list[Any], most_inputs: int = 3,
             most_outputs: int = 3) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    inputs = [spec.tensor(f"x{i}", _tensor_dtype(g), shape) for i in range(g.draw(st.integers(1, most_inputs)))]
    outputs = [spec.output(f"y{i}", _tensor_dtype(g), shape) for i in range(g.draw(st.integers(1, most_outputs)))]
    return inputs, outputs


def _tensor_dtype(g: _Gen) -> str:
    """Any dtype of the language; fp8 (storage only) now and then."""
    return g.choose(FP8_DTYPES) if g.chance(8) else g.choose(ALL_DTYPES)


def _matrix_index(rows: str, stride: str, cols: str) -> dict[str, Any]:
    """``rows[:, None] * stride + cols[None, :]``: the offsets of a tile of a row-major matrix."""
    return op("add", lhs=op("mul", lhs=op("expand_dims", x=rows, axis=1), rhs=stride),
              rhs=op("expand_dims", x=cols, axis=0))


def _chunk_loop(g: _Gen, n: int, block: int, stop: Any) -> _Gen:
    """The body of a loop over a row's column chunks: ``cols`` and ``in_row`` (cols < stop)."""
    loop = g.nested(Val("chunk_start", "i32", (), n), Val("cols", "i32", (block,), n + block),
                    Val("in_row", "bool", (block,)))
    loop.stmts += [let("cols", g.contiguous("chunk_start", "BLOCK", block)),
                   let("in_row", op("lt", lhs="cols", rhs=stop))]
    return loop


def _accumulated(carry: Val, term: Val, trips: int) -> Val:
    """The bounds of a carry after ``trips`` iterations of ``carry + term``."""
    mag = carry.mag + trips * term.mag
    if carry.dtype not in FLOAT_DTYPES:
        return replace(carry, mag=mag)
    return replace(carry, mag=mag, err=carry.err + trips * term.err + rounding(carry.dtype, mag, 2 * math.sqrt(trips)))


def _elementwise(g: _Gen, spec: _Spec, inputs: list[tuple[str, str]], outputs: list[tuple[str, str]], size: str,
                 block: int, start: Any) -> None:
    """Loads, random lets and stores over the 1-D block ``offsets`` (``start + arange``, valid
    where ``in_bounds``) of tensors of ``size`` elements; loads and stores go straight, reversed,
    clamped (unmasked) or under an extra predicate, and a store may be split in two by
    complementary masks, or by an if: a full block unmasked, the tail masked."""
    last = op("sub", lhs=size, rhs=1)
    reverse = op("sub", lhs=last, rhs="offsets")
    for ptr, dtype in inputs:
        how = g.choose(["direct", "direct", "reverse", "clamped", "predicated", "first"])
        if how == "first":
            g.bind(_loaded(op("load", ptr=ptr), dtype, ()), ptr + "_first")
        elif how == "clamped":
            clamped = op("add", lhs=ptr, rhs=op("minimum", lhs="offsets", rhs=last))
            g.bind(_loaded(op("load", ptr=clamped), dtype, (block,)), ptr + "_")
        else:
            mask: Any = "in_bounds"
            if how == "predicated":
                mask = op("and", lhs="in_bounds", rhs=g.boolean((block,), 2).expr)
            index = reverse if how == "reverse" else "offsets"
            g.bind(_load(g, op("add", lhs=ptr, rhs=index), mask, dtype, (block,)), ptr + "_")
    g.random_lets([(block,), ()], g.draw(st.integers(0, 4)))
    for out, dtype in outputs:
        how = g.choose(["direct", "direct", "reverse", "split", "tail"])
        ptr = op("add", lhs=out, rhs=reverse if how == "reverse" else "offsets")
        if how == "tail":
            then, orelse = g.nested(), g.nested()
            _store(then, spec, out, dtype, (block,), ptr)
            _store(orelse, spec, out, dtype, (block,), ptr, "in_bounds")
            full_block = op("le", lhs=op("add", lhs=start, rhs="BLOCK"), rhs=size)
            g.stmts.append(op("if", cond=full_block, then=then.stmts, **{"else": orelse.stmts}))
        elif how == "split":
            chosen = g.boolean((block,), 2).expr
            _store(g, spec, out, dtype, (block,), ptr, op("and", lhs="in_bounds", rhs=chosen))
            _store(g, spec, out, dtype, (block,), ptr, op("and", lhs="in_bounds", rhs=op("not", x=chosen)))
        else:
            _store(g, spec, out, dtype, (block,), ptr, "in_bounds")
    if g.chance(25):
        _exchanged(g, spec, block, size)


# Atomics whose final values do not depend on the order the programs run in (rule 7).
_INT_ATOMICS = ("add", "max", "min", "and", "or", "xor")
ORDER_FREE_ATOMICS = {"f32": ("add", "max", "min"), "f64": ("add", "max", "min"), "f16": ("add",), "bf16": ("add",),
                      "i32": _INT_ATOMICS, "i64": _INT_ATOMICS}
ATOMIC_INITS = {"add": (0, 3, -5), "max": ("-inf", -7, 0), "min": ("inf", 7, 0), "and": (-1, 127), "or": (0, 64),
                "xor": (0, 5)}


def _atomic_options(g: _Gen) -> dict[str, str]:
    return {"sem": g.choose(["relaxed", "acquire", "release", "acq_rel"]), "scope": g.choose(["gpu", "sys"])}


def _column_atomic(g: _Gen, spec: _Spec, bm: int, bn: int, rows: int, name: str) -> None:
    """Every row of every row block combined into ``name[col]`` by one order-free atomic
    (lanes of one program and of many programs hit each element); a float add's tolerance
    covers any summation order: ``rows`` additions, each rounding a partial of up to ``rows``
    times the value bound."""
    kind = g.choose(ATOMIC_INITS)  # the op first: each is drawn as often as the others
    dtype = g.choose([d for d in NUMBER_DTYPES if kind in ORDER_FREE_ATOMICS[d]])
    init = g.choose(ATOMIC_INITS[kind])
    if dtype in INT_DTYPES and isinstance(init, str):
        init = -(2**30) if init == "-inf" else 2**30
    elif dtype in FLOAT_DTYPES and isinstance(init, int):
        init = float(init)
    float_add = kind == "add" and dtype in FLOAT_DTYPES
    val = g.exactly(g.value(dtype, (bm, bn), g.draw(st.integers(1, 3)), exact=not float_add), (bm, bn))
    if float_add and dtype in ("f16", "bf16") and rows * (val.mag + abs(float(init))) > 3e4:
        # A partial sum could pass f16's largest finite value in one order and not another.
        dtype = "f32"
        val = g.exactly(g.value(dtype, (bm, bn), g.draw(st.integers(1, 3))), (bm, bn))
    out, _ = spec.output(name, dtype, ["N"])
    spec.outputs[-1]["init"] = init
    if float_add:
        base = comparison_tolerance(dtype)
        bound = rows * (val.mag + abs(float(init)))
        spec.tolerances[out] = Tolerance(base.rtol, base.atol + SAFETY * (rows * val.err + rows * EPS[dtype] * bound))
    else:
        spec.tolerances[out] = Tolerance(0.0, 0.0)
    cols = op("broadcast", x=op("expand_dims", x="cols", axis=0), shape=["BM", "BN"])
    g.stmts.append(op(f"atomic_{kind}", ptr=op("add", lhs=out, rhs=cols), val=val.expr, mask="tile_ok",
                      **_atomic_options(g)))


def _exchanged(g: _Gen, spec: _Spec, block: int, size: str) -> None:
    """An output whose elements each lane exchanges once: it ends as the values, and the old
    values (the init fill where the lane is active) join the pool as exact values. ``xchg``
    masks the lanes past the end; ``cas``, which has no mask, clamps their pointers to the
    last element and compares them with a value no element holds (magnitudes stay below
    2**30, rule 2), so they never swap; an active lane compares with the init fill (it swaps)
    or with another value (it does not)."""
    kind = g.choose(("xchg", "cas"))
    dtype = g.choose(("f32", "f64", "i32", "i64") if kind == "xchg" else INT_DTYPES)
    init = g.choose((0, 2, -3))
    out, _ = spec.output("swapped", dtype, ["N"])
    spec.outputs[-1]["init"] = float(init) if dtype in FLOAT_DTYPES else init
    val = g.value(dtype, (block,), g.draw(st.integers(1, 3)), exact=True)
    name = g.fresh("old")
    if kind == "xchg":
        spec.stored(out, val)
        g.stmts.append(op("atomic_xchg", ptr=op("add", lhs=out, rhs="offsets"), val=val.expr, mask="in_bounds",
                          name=name, **_atomic_options(g)))
    else:
        swaps = g.chance(70)
        spec.stored(out, val if swaps else Val(init, dtype, (), abs(init)))
        cmp = op("where", cond="in_bounds", x=init if swaps else init + 1, y=-(2**31))
        ptr = op("add", lhs=out, rhs=op("minimum", lhs="offsets", rhs=op("sub", lhs=size, rhs=1)))
        g.stmts.append(op("atomic_cas", ptr=ptr, cmp=cmp, val=val.expr, name=name, **_atomic_options(g)))
    # Masked-off lanes' old values are undefined on a GPU: replaced before any use.
    g.bind(Val(op("where", cond="in_bounds", x=name, y=init), dtype, (block,), float(abs(init))), "old")


@st.composite
def elementwise_kernels(draw: Callable[[st.SearchStrategy], Any]) -> GeneratedKernel:
    """1-D kernels over N elements: one block per program, or a grid-stride loop in which the
    programs run different numbers of iterations and each stores a carried partial result."""
    g = _Gen(draw)
    n = draw(st.integers(1, 600))
    programs = g.choose([1, 2, 3])
    # At most 24 iterations per program in the grid-stride form (the interpreter's time).
    block = g.choose([b for b in (1, 2, 4, 8, 16, 32, 64, 128, 256) if -(-n // b) <= 24 * programs or b == 256])
    g.dims = (block,)
    spec = _Spec("elementwise", {"N": n})
    inputs, outputs = _tensors(g, spec, ["N"])
    size = "N"
    if g.chance(30):
        spec.params.append({"name": "n", "value": op("numel", of=inputs[0][0])})
        size = "n"
    else:
        spec.params.append({"name": "N"})
    spec.meta.append({"name": "BLOCK", "value": block})
    _scalar_inputs(g, spec)
    blocks = op("cdiv", lhs="N", rhs="BLOCK")
    if g.chance(60):
        g.stmts += [let("offsets", g.contiguous(op("mul", lhs=op("program_id"), rhs="BLOCK"), "BLOCK", block)),
                    let("in_bounds", op("lt", lhs="offsets", rhs=size))]
        g.pool += [Val("offsets", "i32", (block,), n + block), Val("in_bounds", "bool", (block,)),
                   Val(op("program_id"), "i32", (), n)]
        _elementwise(g, spec, inputs, outputs, size, block, op("mul", lhs=op("program_id"), rhs="BLOCK"))
        return spec.build([blocks], g.stmts, g.choose([1, 2, 4, 8]), "elementwise")

    grid = op("minimum", lhs=blocks, rhs=programs)
    block_count = -(-n // block)
    trips = -(-block_count // min(programs, block_count))  # the most iterations a program runs
    partial, dtype = spec.output("partial", g.choose(("f32", "i32")), [grid])
    g.stmts.append(let("pid", op("program_id")))
    body = g.nested(Val("pid", "i32", (), n), Val(op("num_programs"), "i32", (), programs), Val("start", "i32", (), n),
                    Val("offsets", "i32", (block,), n + block), Val("in_bounds", "bool", (block,)))
    body.stmts += [let("offsets", g.contiguous("start", "BLOCK", block)),
                   let("in_bounds", op("lt", lhs="offsets", rhs=size))]
    _elementwise(body, spec, inputs, outputs, size, block, "start")
    term = body.value(dtype, (), 2)
    if _accumulated(Val("total", dtype, (), 0.0), term, trips).mag > INT_LIMIT:
        term = Val(op("full", shape=[], value=1, dtype=dtype), dtype, (), 1.0)
    term = body.bind(term, "term", pool=False)
    zero = op("full", shape=[], value=0 if dtype == "i32" else 0.0, dtype=dtype)
    g.stmts.append(op("for", var="start", start=op("mul", lhs="pid", rhs="BLOCK"), stop=size,
                      step=op("mul", lhs="BLOCK", rhs=op("num_programs")),
                      carry=[{"name": "total", "init": zero, "next": op("add", lhs="total", rhs=term.expr)}],
                      body=body.stmts, **g.stages()))
    spec.stored(partial, _accumulated(Val("total", dtype, (), 0.0), term, trips))
    g.stmts.append(op("store", ptr=op("add", lhs=partial, rhs="pid"), value="total"))
    return spec.build([grid], g.stmts, g.choose([1, 2, 4, 8]), "grid_stride")


@st.composite
def tile_kernels(draw: Callable[[st.SearchStrategy], Any]) -> GeneratedKernel:
    """2-D kernels over [M, N] tiles: reductions inside a tile broadcast back, a transposed
    output, and (when one tile spans a whole row) per-row outputs."""
    g = _Gen(draw)
    m, n = draw(st.integers(1, 70)), draw(st.integers(1, 70))
    row_outputs = n <= 32 and g.chance(40)
    bm = g.choose([1, 2, 4, 8, 16, 32])
    bn = 1 << (n - 1).bit_length() if row_outputs else g.choose([1, 2, 4, 8, 16, 32])
    g.dims = (bm, bn)
    spec = _Spec("tile", {"M": m, "N": n})
    inputs, outputs = _tensors(g, spec, ["M", "N"], most_outputs=2)
    spec.params += [{"name": "M"}, {"name": "N"}, {"name": "row_stride", "value": op("stride", of=inputs[0][0], dim=0)}]
    spec.meta += [{"name": "BM", "value": bm}, {"name": "BN", "value": bn}]
    bias = spec.tensor("bias", g.choose(NUMBER_DTYPES), ["N"]) if g.chance(50) else None
    _scalar_inputs(g, spec)
    g.stmts += [
        let("rows", op("add", lhs=op("mul", lhs=op("program_id", axis=0), rhs="BM"), rhs=op("arange", size="BM"))),
        let("cols", op("add", lhs=op("mul", lhs=op("program_id", axis=1), rhs="BN"), rhs=op("arange", size="BN"))),
        let("col_ok", op("lt", lhs="cols", rhs="N")),
        let("tile_ok", op("and", lhs=op("expand_dims", x=op("lt", lhs="rows", rhs="M"), axis=1),
                          rhs=op("expand_dims", x="col_ok", axis=0))),
        let("tile", _matrix_index("rows", "row_stride", "cols"))]
    g.pool += [Val("rows", "i32", (bm,), m + bm), Val("cols", "i32", (bn,), n + bn), Val("tile_ok", "bool", (bm, bn)),
               Val("col_ok", "bool", (bn,))]
    for ptr, dtype in inputs:
        g.bind(_load(g, op("add", lhs=ptr, rhs="tile"), "tile_ok", dtype, (bm, bn)), ptr + "_")
    if bias:
        g.bind(_load(g, op("add", lhs="bias", rhs="cols"), "col_ok", bias[1], (bn,)), "bias_")
    g.random_lets([(bm, bn), (bm, bn), (bm,), (bn,), ()], draw(st.integers(1, 4)))
    for out, dtype in outputs:
        _store(g, spec, out, dtype, (bm, bn), op("add", lhs=out, rhs="tile"), "tile_ok")
    if g.chance(50):
        out, dtype = spec.output("transposed", g.choose(ALL_DTYPES), ["N", "M"])
        val = g.exactly(g.value(dtype, (bm, bn), draw(st.integers(1, 4))), (bm, bn))
        spec.stored(out, val)
        index = _matrix_index("cols", "M", "rows")
        g.stmts.append(op("store", ptr=op("add", lhs=out, rhs=index), value=op("trans", x=val.expr),
                          mask=op("trans", x="tile_ok")))
    for i in range(g.choose([0, 1, 1, 2])):
        _column_atomic(g, spec, bm, bn, m, f"col_acc{i}")
    if row_outputs:
        out, dtype = spec.output("per_row", g.choose(ALL_DTYPES), ["M"])
        _store(g, spec, out, dtype, (bm,), op("add", lhs=out, rhs="rows"), op("lt", lhs="rows", rhs="M"))
    grid = [op("cdiv", lhs="M", rhs="BM"), op("cdiv", lhs="N", rhs="BN")]
    return spec.build(grid, g.stmts, g.choose([1, 2, 4]), "tile")


@st.composite
def block_op_kernels(draw: Callable[[st.SearchStrategy], Any]) -> GeneratedKernel:
    """2-D tiles (as the tile template) whose every output is an operation across the tile: a
    scan, sort, top-k or gather of numbers, or an argsort/argtopk; and sometimes each program's
    histogram of an exact integer tile (values in range), at row ``pid0 * grid1 + pid1`` of a
    ``[programs, bins]`` output. Masked-off lanes take part (they hold the load's ``other``, on
    both sides alike)."""
    g = _Gen(draw)
    m, n = draw(st.integers(1, 24)), draw(st.integers(1, 24))
    bm, bn = g.choose([1, 2, 4, 8]), g.choose([1, 2, 4, 8, 16])  # Triton's interpreter sorts slowly
    g.dims = (bm, bn)
    spec = _Spec("blocks", {"M": m, "N": n})
    inputs = [spec.tensor(f"x{i}", g.choose(ALL_DTYPES), ["M", "N"]) for i in range(draw(st.integers(1, 2)))]
    outputs = [spec.output(f"y{i}", g.choose(NUMBER_DTYPES), ["M", "N"]) for i in range(draw(st.integers(1, 2)))]
    spec.params += [{"name": "M"}, {"name": "N"}, {"name": "row_stride", "value": op("stride", of=inputs[0][0], dim=0)}]
    spec.meta += [{"name": "BM", "value": bm}, {"name": "BN", "value": bn}]
    g.stmts += [
        let("rows", op("add", lhs=op("mul", lhs=op("program_id", axis=0), rhs="BM"), rhs=op("arange", size="BM"))),
        let("cols", op("add", lhs=op("mul", lhs=op("program_id", axis=1), rhs="BN"), rhs=op("arange", size="BN"))),
        let("tile_ok", op("and", lhs=op("expand_dims", x=op("lt", lhs="rows", rhs="M"), axis=1),
                          rhs=op("expand_dims", x=op("lt", lhs="cols", rhs="N"), axis=0))),
        let("tile", _matrix_index("rows", "row_stride", "cols"))]
    g.pool += [Val("rows", "i32", (bm,), m + bm), Val("cols", "i32", (bn,), n + bn), Val("tile_ok", "bool", (bm, bn))]
    for ptr, dtype in inputs:
        g.bind(_load(g, op("add", lhs=ptr, rhs="tile"), "tile_ok", dtype, (bm, bn)), ptr + "_")
    g.random_lets([(bm, bn), (bm,), (bn,)], draw(st.integers(0, 2)))
    shape = (bm, bn)
    for out, dtype in outputs:
        depth = draw(st.integers(1, 3))
        if dtype in INT_DTYPES and g.chance(40):
            val = g.order(shape, depth)
            val = val if val is None or dtype == "i32" else g.cast(val, dtype)
        else:
            val = g.across(dtype, shape, lambda s, d=dtype, k=depth: g.value(d, s, k), dtype not in FLOAT_DTYPES)
        val = g.checked(val, lambda d=dtype: g.leaf(d, shape)) if val is not None else g.leaf(dtype, shape)
        spec.stored(out, val)
        g.stmts.append(op("store", ptr=op("add", lhs=out, rhs="tile"), value=val.expr, mask="tile_ok"))
    grid = [op("cdiv", lhs="M", rhs="BM"), op("cdiv", lhs="N", rhs="BN")]
    if g.chance(50):
        bins = g.choose([1, 2, 4, 8, 16])
        counts, _ = spec.output("counts", "i32", [op("mul", lhs=grid[0], rhs=grid[1]), bins])
        values = g.in_range(shape, bins)
        mask = {"mask": op("reshape", x="tile_ok", shape=[bm * bn])} if g.chance(50) else {}
        hist = op("histogram", x=op("reshape", x=values.expr, shape=[bm * bn]), bins=bins, **mask)
        program = op("add", lhs=op("mul", lhs=op("program_id", axis=0), rhs=op("num_programs", axis=1)),
                     rhs=op("program_id", axis=1))
        spec.stored(counts, Val(hist, "i32", (bins,), float(bm * bn)))
        g.stmts.append(op("store", ptr=op("add", lhs=op("add", lhs=counts, rhs=op("mul", lhs=program, rhs=bins)),
                                          rhs=op("arange", size=bins)), value=hist))
    return spec.build(grid, g.stmts, g.choose([1, 2, 4]), "blocks")


def _running_max(g: _Gen, loop: _Gen, dtype: str, n: int, carries: list[dict[str, Any]]) -> list[Val]:
    """Carry the row's maximum and the first column where it occurs, over exact values: masked
    lanes read the dtype's lowest value, so they never win."""
    lowest = "-inf" if dtype in FLOAT_DTYPES else -(2**31) if dtype == "i32" else -(2**62)
    guarded = op("load", ptr=op("add", lhs="x_row", rhs="cols"), mask="in_row", other=lowest)
    loop.stmts += [let("chunk_max", op("max", x=guarded, axis=0)),
                   let("chunk_arg", op("add", lhs=op("argmax", x=guarded, axis=0), rhs="chunk_start")),
                   let("better", op("gt", lhs="chunk_max", rhs="best"))]
    carries += [{"name": "best", "init": op("full", shape=[], value=lowest, dtype=dtype),
                 "next": op("where", cond="better", x="chunk_max", y="best")},
                {"name": "best_col", "init": 0, "next": op("where", cond="better", x="chunk_arg", y="best_col")}]
    return [_loaded("best", dtype, ()), Val("best_col", "i32", (), float(n))]


@st.composite
def row_kernels(draw: Callable[[st.SearchStrategy], Any]) -> GeneratedKernel:
    """One program per row of an [M, N] input, looping over column chunks and carrying a
    running maximum with its argmax, partial sums, a count and a pointer; when ragged, row r
    reads only its first min(N, r + 1) columns, so programs loop different numbers of times.
    Per-row outputs follow, and optionally a second loop writing per-element outputs."""
    g = _Gen(draw)
    m, n = draw(st.integers(1, 40)), draw(st.integers(1, 300))
    block = g.choose([b for b in (1, 2, 4, 8, 16, 32, 64) if -(-n // b) <= 16 or b == 64])
    g.dims = (block,)
    ragged = g.chance(40)
    spec = _Spec("rows", {"M": m, "N": n}, num_stages=g.choose((1, 2, 3, 4)))
    dtype = g.choose(NUMBER_DTYPES)
    spec.tensor("x", dtype, ["M", "N"])
    spec.params += [{"name": "N"}, {"name": "row_stride", "value": op("stride", of="x", dim=0)}]
    spec.meta.append({"name": "BLOCK", "value": block})
    _scalar_inputs(g, spec)
    g.stmts += [let("row", op("program_id")),
                let("x_row", op("add", lhs="x", rhs=op("mul", lhs="row", rhs="row_stride"))),
                let("lanes", op("arange", size="BLOCK"))]
    stop = "N"
    if ragged:
        g.stmts.append(let("stop", op("minimum", lhs="N", rhs=op("add", lhs="row", rhs=1))))
        stop = "stop"
    columns = min(n, m) if ragged else n
    trips = -(-columns // block)
    g.pool += [Val("row", "i32", (), m), Val("lanes", "i32", (block,), block)]

    loop = _chunk_loop(g, n, block, stop)
    loop.bind(_load(loop, op("add", lhs="x_row", rhs="cols"), "in_row", dtype, (block,)), "chunk")
    carries: list[dict[str, Any]] = []
    after: list[Val] = []
    if dtype in FLOAT_DTYPES or g.chance(50):
        after += _running_max(g, loop, dtype, n, carries)
    if g.chance(60):
        term = loop.bind(loop.exactly(loop.floating("f32", (block,), 2), (block,)), "term", pool=False)
        carries.append({"name": "partial", "init": op("full", shape=["BLOCK"], value=0.0, dtype="f32"),
                        "next": op("add", lhs="partial", rhs=term.expr)})
        after.append(_accumulated(Val("partial", "f32", (block,), 0.0), term, trips))
    if g.chance(50):
        hit = loop.boolean((block,), 2)
        hits = op("sum", x=op("cast", x=op("and", lhs=hit.expr, rhs="in_row"), dtype="i32"), axis=0)
        carries.append({"name": "hits", "init": 0, "next": op("add", lhs="hits", rhs=hits)})
        after.append(Val("hits", "i32", (), float(columns)))
    if g.chance(40):
        walked = op("load", ptr=op("add", lhs="cursor", rhs="lanes"), mask="in_row")
        loop.bind(_loaded(walked, dtype, (block,)), "walked")
        carries.append({"name": "cursor", "init": "x_row", "next": op("add", lhs="cursor", rhs="BLOCK")})
    if not carries:
        carries.append({"name": "steps", "init": 0, "next": op("add", lhs="steps", rhs=1)})
        after.append(Val("steps", "i32", (), float(trips)))
    loop.random_lets([(block,), ()], draw(st.integers(0, 2)))
    g.stmts.append(op("for", var="chunk_start", stop=stop, step="BLOCK", carry=carries, body=loop.stmts,
                      **g.stages()))
    g.pool += after

    for i in range(draw(st.integers(1, 2))):
        out, out_dtype = spec.output(f"per_row{i}", g.choose(ALL_DTYPES), ["M"])
        _store(g, spec, out, out_dtype, (), op("add", lhs=out, rhs="row"))
    if g.chance(60):
        out, out_dtype = spec.output("per_element", g.choose(ALL_DTYPES), ["M", "N"])
        second = _chunk_loop(g, n, block, "N")
        value = op("load", ptr=op("add", lhs="x_row", rhs="cols"), mask="in_row")
        second.bind(_loaded(value, dtype, (block,)), "value")
        second.random_lets([(block,), ()], draw(st.integers(0, 2)))
        index = op("add", lhs=op("mul", lhs="row", rhs="N"), rhs="cols")
        _store(second, spec, out, out_dtype, (block,), op("add", lhs=out, rhs=index), "in_row")
        g.stmts.append(op("for", var="chunk_start", stop="N", step="BLOCK", body=second.stmts))
    return spec.build(["M"], g.stmts, g.choose([1, 2, 4]), "rows_ragged" if ragged else "rows")


# (operand dtype, precision, accumulator dtype)
DOT_VARIANTS = [("f16", "ieee", "f32"), ("bf16", "ieee", "f32"), ("f32", "ieee", "f32"), ("f32", "tf32", "f32"),
                ("f16", "ieee", "f16"), ("f8e4m3", "ieee", "f32"), ("f8e5m2", "ieee", "f32")]
# The share of K the tensor cores sum in their narrower fp8 accumulator before the f32 one
# takes it (kernelgen.lower: 32 at a time) keeps about 14 bits (measured on Hopper by others).
FP8_ACCUMULATION_EPS = 2.0**-13


def _dot_bounds(k: int, block_k: int, precision: str, acc_dtype: str, fp8: bool = False) -> tuple[float, float]:
    """Magnitude and error bounds of a K-loop of dots over inputs in [-8, 8]."""
    terms = -(-k // block_k) * block_k
    mag = terms * INPUT_FLOAT_BOUND**2
    err = rounding("f32", mag, 2 * math.sqrt(terms))
    if precision == "tf32":
        err += 2 * TF32_EPS * mag  # rounded here, truncated by tensor cores
    if acc_dtype == "f16":
        err += rounding("f16", mag, 2 * math.sqrt(terms))
    if fp8:
        err += FP8_ACCUMULATION_EPS * mag
    return mag, err


@st.composite
def dot_kernels(draw: Callable[[st.SearchStrategy], Any]) -> GeneratedKernel:
    """Tiled [M, K] x [K, N] with a K loop over every variant of :data:`DOT_VARIANTS`, with
    acc passed to dot or added after it, B optionally stored transposed, and a random epilogue."""
    g = _Gen(draw)
    m, n, k = draw(st.integers(1, 70)), draw(st.integers(1, 70)), draw(st.integers(1, 80))
    bm, bn, bk = (g.choose([16, 32]) for _ in range(3))
    g.dims = (bm, bn)
    dtype, precision, acc_dtype = g.choose(DOT_VARIANTS)
    if dtype in FP8_DTYPES:
        bk = g.choose([32, 64])  # fp8 MMA takes K in steps of 32
    b_transposed = g.chance(40)
    spec = _Spec("dot", {"M": m, "N": n, "K": k}, num_stages=g.choose((1, 2, 3, 4)))
    spec.tensor("a", dtype, ["M", "K"])
    spec.tensor("b", dtype, ["N", "K"] if b_transposed else ["K", "N"])
    spec.params += [{"name": "M"}, {"name": "N"}, {"name": "K"}]
    spec.meta += [{"name": "BM", "value": bm}, {"name": "BN", "value": bn}, {"name": "BK", "value": bk}]

    def column(x: str) -> dict[str, Any]:
        return op("expand_dims", x=x, axis=1)

    def row(x: str) -> dict[str, Any]:
        return op("expand_dims", x=x, axis=0)

    g.stmts += [
        let("rows", op("add", lhs=op("mul", lhs=op("program_id", axis=0), rhs="BM"), rhs=op("arange", size="BM"))),
        let("cols", op("add", lhs=op("mul", lhs=op("program_id", axis=1), rhs="BN"), rhs=op("arange", size="BN"))),
        let("row_ok", column(op("lt", lhs="rows", rhs="M"))),
        let("col_ok", row(op("lt", lhs="cols", rhs="N")))]
    body = [let("ks", g.contiguous("k0", "BK", bk)),
            let("k_ok", op("lt", lhs="ks", rhs="K")),
            let("a_tile", op("load", ptr=op("add", lhs="a", rhs=_matrix_index("rows", "K", "ks")),
                             mask=op("and", lhs="row_ok", rhs=row("k_ok"))))]
    if b_transposed:
        b_load = op("load", ptr=op("add", lhs="b", rhs=_matrix_index("cols", "K", "ks")),
                    mask=op("and", lhs=op("trans", x="col_ok"), rhs=row("k_ok")))
        body.append(let("b_tile", op("trans", x=b_load)))
    else:
        body.append(let("b_tile", op("load", ptr=op("add", lhs="b", rhs=_matrix_index("ks", "N", "cols")),
                                     mask=op("and", lhs=column("k_ok"), rhs="col_ok"))))
    fused = g.choose((True, False))
    dot = op("dot", lhs="a_tile", rhs="b_tile", **({"acc": "acc"} if fused else {}),
             **({"dtype": "f16"} if acc_dtype == "f16" else {}),
             **({"precision": "tf32"} if precision == "tf32" else {}))
    g.stmts.append(op("for", var="k0", stop="K", step="BK", body=body, **g.stages(), carry=[
        {"name": "acc", "init": op("full", shape=["BM", "BN"], value=0.0, dtype=acc_dtype),
         "next": dot if fused else op("add", lhs="acc", rhs=dot)}]))
    mag, err = _dot_bounds(k, bk, precision, acc_dtype, dtype in FP8_DTYPES)
    acc = Val("acc", acc_dtype, (bm, bn), mag, err)
    g.pool += [acc, Val("rows", "i32", (bm,), m + bm), Val("cols", "i32", (bn,), n + bn)]
    if g.chance(50):
        spec.tensor("bias", "f32", ["N"])
        bias = op("load", ptr=op("add", lhs="bias", rhs="cols"), mask=op("lt", lhs="cols", rhs="N"))
        g.bind(_loaded(bias, "f32", (bn,)), "bias_")
    out, out_dtype = spec.output("c", g.choose(("f32", "f16", "bf16")) if g.chance(40) else acc_dtype, ["M", "N"])
    ptr = op("add", lhs=out, rhs=_matrix_index("rows", "N", "cols"))
    mask = op("and", lhs="row_ok", rhs="col_ok")
    if g.chance(30):
        val = acc if out_dtype == acc_dtype else g.cast(acc, out_dtype)
        spec.stored(out, val)
        g.stmts.append(op("store", ptr=ptr, value=val.expr, mask=mask))
    else:
        _store(g, spec, out, out_dtype, (bm, bn), ptr, mask)
    grid = [op("cdiv", lhs="M", rhs="BM"), op("cdiv", lhs="N", rhs="BN")]
    return spec.build(grid, g.stmts, g.choose([4, 8]), "dot")


@st.composite
def grid3d_kernels(draw: Callable[[st.SearchStrategy], Any]) -> GeneratedKernel:
    """Elementwise over [P, Q, R] on a 3-D grid, addressing through the first input's strides."""
    g = _Gen(draw)
    p, q, r = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 100))
    block = g.choose([1, 4, 16, 64])
    g.dims = (block,)
    spec = _Spec("grid3d", {"P": p, "Q": q, "R": r})
    inputs, outputs = _tensors(g, spec, ["P", "Q", "R"], most_inputs=2, most_outputs=2)
    first = inputs[0][0]
    spec.params += [{"name": "R"}, {"name": "stride_p", "value": op("stride", of=first, dim=0)},
                    {"name": "stride_q", "value": op("stride", of=first, dim=1)}]
    spec.meta.append({"name": "BLOCK", "value": block})
    _scalar_inputs(g, spec)
    g.stmts += [
        let("lanes", g.contiguous(op("mul", lhs=op("program_id", axis=2), rhs="BLOCK"), "BLOCK", block)),
        let("base", op("add", lhs=op("mul", lhs=op("program_id", axis=0), rhs="stride_p"),
                       rhs=op("mul", lhs=op("program_id", axis=1), rhs="stride_q"))),
        let("offsets", op("add", lhs="base", rhs="lanes")),
        let("in_bounds", op("lt", lhs="lanes", rhs="R"))]
    g.pool += [Val("lanes", "i32", (block,), r + block), Val("in_bounds", "bool", (block,)),
               Val(op("program_id", axis=1), "i32", (), q)]
    for ptr, dtype in inputs:
        g.bind(_load(g, op("add", lhs=ptr, rhs="offsets"), "in_bounds", dtype, (block,)), ptr + "_")
    g.random_lets([(block,), ()], draw(st.integers(0, 3)))
    for out, dtype in outputs:
        _store(g, spec, out, dtype, (block,), op("add", lhs=out, rhs="offsets"), "in_bounds")
    grid = ["P", "Q", op("cdiv", lhs="R", rhs="BLOCK")]
    return spec.build(grid, g.stmts, g.choose([1, 2, 4]), "grid3d")


TEMPLATES = {"elementwise": elementwise_kernels, "tile": tile_kernels, "rows": row_kernels, "dot": dot_kernels,
             "grid3d": grid3d_kernels, "blocks": block_op_kernels}


def kernels() -> st.SearchStrategy[GeneratedKernel]:
    """Random well-typed kernels of every template (see the module docstring for the rules)."""
    return st.sampled_from(sorted(TEMPLATES)).flatmap(lambda name: TEMPLATES[name]())
