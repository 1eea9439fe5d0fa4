"""Bounds of unmasked memory accesses, shown by interval arithmetic over sample sizes.

An unmasked load, store or atomic must stay inside its tensor for every size the kernel may
be called with. Sizes are runtime values, so the analysis evaluates each access's offsets as an interval
under a fixed set of size assignments; the diagnostic names an assignment where it fails,
which tells a model exactly what to mask.

Bounds: what the checker proves about an unmasked load, store or atomic:

* its offsets lie in ``[0, numel)`` of every tensor the pointer may point into, for each size
  in 1, 2, 3, 7, 16, 17, 100, 127, 128, 129, 1000, 1024, 4099, 720720, equal and mixed
  (unproven_bounds otherwise);
* ``num_sms`` takes the same values as a size (a grid and a scratch of num_sms agree);
* known intervals: literals, meta, int params bound to host expressions,
  ``program_id`` over the grid, ``arange``, loop vars over ``[start, stop - 1]``, and
  ``+ - * idiv cdiv rem maximum minimum clamp where``, integer casts, ``max``/``min`` of
  these; anything loaded, carried, a scalar input or another op is unknown: mask it;
* intervals forget correlations (``i - i`` is not 0), so ``pid * B + arange(B)`` under a
  ``cdiv(N, B)`` grid needs a mask (``N`` need not be a multiple of ``B``), while
  ``minimum(o, N - 1)`` or ``o rem N`` need none;
* inside an ``if``, an integer comparison of its condition (``and`` of them in then, ``or``
  in else, ``not``) that is ``k * v + rest`` against a known bound, ``v`` a program id, loop
  var or int param, narrows ``v`` and what is computed from it: full blocks
  ``if (pid + 1) * B <= N`` need no mask;
* sizes where the grid has no programs (an axis of 0: a launch a program skips) prove nothing
  and refuse nothing;
* masked accesses are checked when run: an active lane outside its tensor is out_of_bounds.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from typing import Iterator, Optional, Union

from kernelgen.lang import nodes as L
from kernelgen.check.checked import CheckedKernel, child, device_dependent, is_literal, literal_value
from kernelgen.errors import Diagnostic
from kernelgen.check.sequence import nodes

INF = math.inf
# 720720 is a multiple of every integer up to 16: an offset rounded down to a multiple of a
# block (``(N idiv 6) * 6``) reaches its largest value there.
SAMPLE_SIZES = (1, 2, 3, 7, 16, 17, 100, 127, 128, 129, 1000, 1024, 4099, 720720)
# num_sms's key among the assigned sizes: not an identifier, so no size of a kernel has it.
_NUM_SMS = "{num_sms}"


@dataclass(frozen=True)
class Interval:
    lo: float
    hi: float

    @property
    def known(self) -> bool:
        return self.lo > -INF and self.hi < INF

    def __or__(self, other: Interval) -> Interval:
        return Interval(min(self.lo, other.lo), max(self.hi, other.hi))


TOP = Interval(-INF, INF)
# The range of a comparison's operand dtype: a condition narrows nothing where values may wrap.
_RANGES = {"i32": (-2**31, 2**31 - 1), "i64": (-2**63, 2**63 - 1)}
# What a comparison says when it is false, and with its operands swapped.
_NEGATED = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq"}
_SWAPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
# A value a condition may narrow: ("name", a bound name) or ("pid", a grid axis).
Atom = tuple[str, Union[str, int]]


def point(v: float) -> Interval:
    return Interval(v, v)


@dataclass(frozen=True)
class Pointer:
    bases: frozenset[str]
    offset: Interval


Abstract = Union[Interval, Pointer]


def _mul(a: Interval, b: Interval) -> Interval:
    if not (a.known and b.known):
        return TOP
    products = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
    return Interval(min(products), max(products))


def _div(a: Interval, b: Interval, ceil: bool) -> Interval:
    """Integer division by a positive divisor interval (anything else is unknown)."""
    if not (a.known and b.known) or b.lo <= 0:
        return TOP
    if ceil:
        a = Interval(a.lo + b.lo - 1, a.hi + b.hi - 1)
    quotients = [math.trunc(x / y) for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
    return Interval(min(quotients), max(quotients))


def _rem(a: Interval, b: Interval) -> Interval:
    if not b.known or b.lo <= 0:
        return TOP
    top = b.hi - 1
    if a.lo >= 0:
        return Interval(0, min(top, a.hi)) if a.known else Interval(0, top)
    return Interval(-top, top)


def _binary(op: str, a: Interval, b: Interval) -> Interval:
    if op == "add":
        return Interval(a.lo + b.lo, a.hi + b.hi) if a.known and b.known else TOP
    if op == "sub":
        return Interval(a.lo - b.hi, a.hi - b.lo) if a.known and b.known else TOP
    if op == "mul":
        return _mul(a, b)
    if op in ("idiv", "cdiv"):
        return _div(a, b, ceil=op == "cdiv")
    if op == "rem":
        return _rem(a, b)
    if op == "maximum":
        return Interval(max(a.lo, b.lo), max(a.hi, b.hi))
    if op == "minimum":
        return Interval(min(a.lo, b.lo), min(a.hi, b.hi))
    return TOP


def _loading(node: object, found: set[int]) -> bool:
    """Whether ``node``'s subtree holds an unmasked load; the ids of the nodes whose subtrees do
    go into ``found`` (visit_loads skips the others: most expressions hold none)."""
    if isinstance(node, list):
        return any([_loading(item, found) for item in node])
    if not isinstance(node, L.Node):
        return False
    hit = isinstance(node, L.Load) and node.mask is None
    for _, value in L.node_fields(node):
        hit = _loading(value, found) or hit
    if hit:
        found.add(id(node))
    return hit


class _Analysis:
    def __init__(self, checked: CheckedKernel, sizes: dict[str, int], loading: set[int]) -> None:
        self.checked = checked
        self.loading = loading
        self.kernel = checked.kernel
        self.sizes = sizes
        self.meta = checked.meta
        self.numel: dict[str, float] = {}
        self.findings: list[tuple[str, str, Interval, str]] = []
        shapes: dict[str, tuple[Interval, ...]] = {}
        for inp in self.kernel.inputs:
            if inp.shape is not None:
                shapes[inp.name] = tuple(point(d) if isinstance(d, int) else point(sizes[d]) for d in inp.shape)
        self.shapes = shapes
        for out in self.kernel.outputs:
            shapes[out.name] = tuple(self.host(d) for d in out.shape)
        for name, dims in shapes.items():
            numel = 1.0
            for d in dims:
                numel = numel * d.lo if d.known and d.lo == d.hi else INF
            self.numel[name] = numel
        self.grid = [self.host(g) for g in self.kernel.grid]
        # Program ids narrowed by the conditions of the branches being analysed.
        self.pids: dict[int, Interval] = {}
        # The lets in scope, in order, with their paths: a branch's facts recompute them.
        self.lets: list[tuple[str, L.Expr, str]] = []

    def host(self, expr: L.Expr) -> Interval:
        if is_literal(expr):
            v = literal_value(expr)
            return point(v) if isinstance(v, int) else TOP
        if isinstance(expr, str):
            if expr in self.sizes:
                return point(self.sizes[expr])
            if expr in self.meta:
                return point(self.meta[expr])
            return TOP
        if isinstance(expr, L.DeviceInfo):  # assigned like a size where the kernel reads it
            return point(self.sizes[_NUM_SMS])
        if isinstance(expr, L.TensorInfo):
            dims = self.shapes.get(expr.of)
            if dims is None or not all(d.known and d.lo == d.hi for d in dims):
                return TOP
            values = [int(d.lo) for d in dims]
            if expr.op == "numel":
                return point(math.prod(values))
            return point(math.prod(max(v, 1) for v in values[expr.dim + 1:]))
        if isinstance(expr, L.Binary):
            return _binary(expr.op, self.host(expr.lhs), self.host(expr.rhs))
        if isinstance(expr, L.Where):  # either branch
            return self.host(expr.x) | self.host(expr.y)
        return TOP

    def params(self) -> dict[str, Abstract]:
        env: dict[str, Abstract] = {}
        for b in self.checked.params:
            if b.tensor is not None:
                env[b.name] = Pointer(frozenset([b.tensor]), point(0))
            elif b.type.dtype in ("i32", "i64"):
                env[b.name] = self.host(b.value)
            else:
                env[b.name] = TOP
        for name, value in self.meta.items():
            env[name] = point(value)
        return env

    # -- expressions ------------------------------------------------------------------------

    def expr(self, e: L.Expr, env: dict[str, Abstract]) -> Abstract:
        if is_literal(e):
            v = literal_value(e)
            return point(v) if isinstance(v, int) and not isinstance(v, bool) else TOP
        if isinstance(e, str):
            return env.get(e, TOP)
        if isinstance(e, L.ProgramId):
            g = self.grid[e.axis] if e.axis < len(self.grid) else TOP
            if not g.known:
                return self.pids.get(e.axis, Interval(0, INF)) if e.op == "program_id" else Interval(0, INF)
            return self.pids.get(e.axis, Interval(0, g.hi - 1)) if e.op == "program_id" else g
        if isinstance(e, L.Arange):
            n = self.meta[e.size] if isinstance(e.size, str) else e.size
            return Interval(0, n - 1)
        if isinstance(e, L.Full):
            v = literal_value(e.value)
            return point(v) if isinstance(v, int) and not isinstance(v, bool) else TOP
        if isinstance(e, L.Binary):
            a, b = self.expr(e.lhs, env), self.expr(e.rhs, env)
            if isinstance(a, Pointer) or isinstance(b, Pointer):
                ptr, off = (a, b) if isinstance(a, Pointer) else (b, a)
                if not isinstance(off, Interval):
                    return Pointer(ptr.bases, TOP)
                if e.op == "sub":
                    off = Interval(-off.hi, -off.lo)
                return Pointer(ptr.bases, _binary("add", ptr.offset, off))
            return _binary(e.op, a, b)
        if isinstance(e, L.Where):
            x, y = self.expr(e.x, env), self.expr(e.y, env)
            if isinstance(x, Pointer) and isinstance(y, Pointer):
                return Pointer(x.bases | y.bases, x.offset | y.offset)
            if isinstance(x, Interval) and isinstance(y, Interval):
                return x | y
            return TOP
        if isinstance(e, L.Clamp):
            x, lo, hi = (self.expr(v, env) for v in (e.x, e.lo, e.hi))
            if all(isinstance(v, Interval) for v in (x, lo, hi)):
                return _binary("minimum", _binary("maximum", x, lo), hi)
            return TOP
        if isinstance(e, (L.ExpandDims, L.Reshape, L.Trans, L.Hint)):
            return self.expr(e.x, env)
        if isinstance(e, L.Cast) and e.dtype in ("i32", "i64"):
            # Float values are never bounded here, so a cast keeps an integer's interval.
            x = self.expr(e.x, env)
            return x if isinstance(x, Interval) else TOP
        if isinstance(e, L.Reduce) and e.op in ("max", "min"):
            return self.expr(e.x, env)
        if isinstance(e, L.Reduce) and e.op in ("argmax", "argmin"):
            return TOP
        if isinstance(e, (L.Sort, L.TopK)) and e.op in ("sort", "topk") or \
                isinstance(e, L.Scan) and e.op in ("cummax", "cummin"):
            return self.expr(e.x, env)  # values of x, rearranged or repeated
        if isinstance(e, L.Gather):
            return self.expr(e.src, env)
        return TOP

    # -- statements -------------------------------------------------------------------------

    def access(self, kind: str, ptr_expr: L.Expr, path: str, env: dict[str, Abstract]) -> None:
        ptr = self.expr(ptr_expr, env)
        if not isinstance(ptr, Pointer):
            return
        for base in sorted(ptr.bases):
            numel = self.numel.get(base, INF)
            off = ptr.offset
            if not off.known or off.lo < 0 or numel == INF or off.hi > numel - 1:
                self.findings.append((path, kind, off, base))
                return

    def block(self, stmts: list[L.Stmt], path: str, env: dict[str, Abstract]) -> None:
        for i, s in enumerate(stmts):
            spath = child(path, i)
            if isinstance(s, L.Let):
                env[s.name] = self.expr(s.value, env)
                self.lets.append((s.name, s.value, child(spath, "value")))
                self.visit_loads(s.value, child(spath, "value"), env)
            elif isinstance(s, L.Store):
                for name in ("ptr", "value", "mask"):
                    if getattr(s, name) is not None:
                        self.visit_loads(getattr(s, name), child(spath, name), env)
                if s.mask is None:
                    self.access("store", s.ptr, spath, env)
            elif isinstance(s, L.If):
                self.branch(s, spath, env)
            elif isinstance(s, L.Atomic):
                for name in ("ptr", "val", "cmp", "mask"):
                    if getattr(s, name) is not None:
                        self.visit_loads(getattr(s, name), child(spath, name), env)
                if s.mask is None:
                    self.access(s.op, s.ptr, spath, env)
                if s.name is not None:
                    env[s.name] = TOP  # the old values: loaded from memory
            elif isinstance(s, L.TileStore):  # masked by its shape: judged when run
                self.visit_loads(s, spath, env)
            elif isinstance(s, L.For):
                self.loop(s, spath, env)

    def loop(self, f: L.For, path: str, env: dict[str, Abstract]) -> None:
        start, stop = self.expr(f.start, env), self.expr(f.stop, env)
        for i, c in enumerate(f.carry):
            self.visit_loads(c.init, child(path, "carry", i, "init"), env)
        if isinstance(start, Interval) and isinstance(stop, Interval) and stop.hi <= start.lo:
            body_runs = False
        else:
            body_runs = True
        inner = dict(env)
        if isinstance(start, Interval) and isinstance(stop, Interval):
            inner[f.var] = Interval(start.lo, stop.hi - 1)
        else:
            inner[f.var] = TOP
        for c in f.carry:
            init = self.expr(c.init, env)
            inner[c.name] = Pointer(init.bases, TOP) if isinstance(init, Pointer) else TOP
        if body_runs:
            mark = len(self.lets)
            self.block(f.body, child(path, "body"), inner)
            for i, c in enumerate(f.carry):
                self.visit_loads(c.next, child(path, "carry", i, "next"), inner)
            del self.lets[mark:]
        for c in f.carry:
            env[c.name] = inner[c.name]

    def branch(self, s: L.If, path: str, env: dict[str, Abstract]) -> None:
        """Each branch under what its condition says (a branch it rules out is not judged);
        a result is either branch's value."""
        self.visit_loads(s.cond, child(path, "cond"), env)
        values: list[list[Abstract]] = []
        for side, stmts, holds in (("then", s.then, True), ("else", s.else_, False)):
            saved_pids, mark = dict(self.pids), len(self.lets)
            inner = self.narrowed(self.facts(s.cond, child(path, "cond"), holds, env), env)
            if inner is not None:
                self.block(stmts, child(path, side), inner)
                results = []
                for i, r in enumerate(s.results):
                    value = r.then if side == "then" else r.else_
                    self.visit_loads(value, child(path, "results", i, side), inner)
                    results.append(self.expr(value, inner))
                values.append(results)
            self.pids = saved_pids
            del self.lets[mark:]
        for i, r in enumerate(s.results):
            env[r.name] = _join([v[i] for v in values])

    def facts(self, cond: L.Expr, path: str, holds: bool, env: dict[str, Abstract],
              depth: int = 0) -> list[tuple[Atom, Interval]]:
        """Bounds on atoms that hold where ``cond`` is ``holds`` (none where unsure)."""
        if depth > 32:
            return []
        if isinstance(cond, str):
            found = next(((e, p) for name, e, p in reversed(self.lets) if name == cond), None)
            return [] if found is None else self.facts(found[0], found[1], holds, env, depth + 1)
        if isinstance(cond, L.Unary) and cond.op == "not":
            return self.facts(cond.x, child(path, "x"), not holds, env, depth + 1)
        if not isinstance(cond, L.Binary):
            return []
        if cond.op in ("and", "or"):
            if (cond.op == "and") != holds:
                return []
            return (self.facts(cond.lhs, child(path, "lhs"), holds, env, depth + 1)
                    + self.facts(cond.rhs, child(path, "rhs"), holds, env, depth + 1))
        dtype = self.checked.operand_dtypes.get(path)
        if cond.op not in _NEGATED or dtype not in _RANGES:
            return []
        op = cond.op if holds else _NEGATED[cond.op]
        low, high = _RANGES[dtype]
        found = []
        for side, other, rel in ((cond.lhs, cond.rhs, op), (cond.rhs, cond.lhs, _SWAPPED[op])):
            linear = self.linear(side, env, (low, high))
            bound = self.expr(other, env)
            # A bound computed past the dtype's range may have wrapped: it says nothing.
            if (linear is not None and isinstance(bound, Interval) and (bound.lo == -INF or bound.lo >= low)
                    and (bound.hi == INF or bound.hi <= high)):
                found += _solve(*linear, rel, bound)
        return found

    def linear(self, e: L.Expr, env: dict[str, Abstract], limits: tuple[int, int],
               depth: int = 0) -> Optional[tuple[Atom, int, Interval]]:
        """``e`` as ``k * atom + rest`` (``rest`` an interval), every part inside ``limits``
        (no wrapping), or None."""
        value = self.expr(e, env)
        if depth > 32 or not isinstance(value, Interval) or not (limits[0] <= value.lo and value.hi <= limits[1]):
            return None
        if isinstance(e, L.ProgramId) and e.op == "program_id":
            return ("pid", e.axis), 1, point(0)
        if isinstance(e, str) and not is_literal(e):
            found = next((x for name, x, _ in reversed(self.lets) if name == e), None)
            deeper = None if found is None else self.linear(found, env, limits, depth + 1)
            return deeper or (("name", e), 1, point(0))
        if isinstance(e, (L.Hint, L.Cast)) and not (isinstance(e, L.Cast) and e.dtype not in _RANGES):
            return self.linear(e.x, env, limits, depth + 1)
        if not isinstance(e, L.Binary) or e.op not in ("add", "sub", "mul"):
            return None
        for a, b, swapped in ((e.lhs, e.rhs, False), (e.rhs, e.lhs, True)):
            inner = self.linear(a, env, limits, depth + 1)
            other = self.expr(b, env)
            if inner is None or not isinstance(other, Interval) or not other.known:
                continue
            atom, k, rest = inner
            if e.op == "mul":
                if other.lo != other.hi or other.lo == 0:
                    continue
                return atom, int(k * other.lo), _mul(rest, other)
            if e.op == "add":
                return atom, k, _binary("add", rest, other)
            if not swapped:
                return atom, k, _binary("sub", rest, other)
            return atom, -k, _binary("sub", other, rest)
        return None

    def narrowed(self, facts: list[tuple[Atom, Interval]], env: dict[str, Abstract]) -> Optional[dict[str, Abstract]]:
        """``env`` under the facts, the lets in scope recomputed from the narrowed atoms; None
        when the facts rule the branch out."""
        inner = dict(env)
        if not facts:
            return inner
        for (kind, key), bound in facts:
            if kind == "pid":
                g = self.grid[key] if key < len(self.grid) else TOP
                current = self.pids.get(key, Interval(0, g.hi - 1 if g.known else INF))
                self.pids[key] = _meet(current, bound)
            elif isinstance(inner.get(key), Interval):
                inner[key] = _meet(inner[key], bound)
        for name, value, _ in self.lets:
            if name in inner:
                inner[name] = _meet(self.expr(value, inner), inner[name])
        if any(v.lo > v.hi for v in self.pids.values()) or any(
                isinstance(v, Interval) and v.lo > v.hi for v in inner.values()):
            return None
        return inner

    def visit_loads(self, e: L.Expr, path: str, env: dict[str, Abstract]) -> None:
        """Judge every unmasked load inside an expression."""
        if id(e) not in self.loading:
            return
        if isinstance(e, L.Load) and e.mask is None:
            self.access("load", e.ptr, path, env)
        for name in type(e).model_fields:
            value = getattr(e, name)
            if isinstance(value, L.Node):
                self.visit_loads(value, child(path, name), env)
            elif isinstance(value, list):  # a tile's offsets
                for i, item in enumerate(value):
                    self.visit_loads(item, child(path, name, i), env)


def _solve(atom: Atom, k: int, rest: Interval, rel: str, bound: Interval) -> list[tuple[Atom, Interval]]:
    """Bounds on ``atom`` from ``k * atom + rest rel bound`` (integers)."""
    upper = {"lt": bound.hi - 1, "le": bound.hi, "eq": bound.hi}.get(rel, INF)
    lower = {"gt": bound.lo + 1, "ge": bound.lo, "eq": bound.lo}.get(rel, -INF)
    found = []
    if upper < INF and rest.lo > -INF:  # k * atom <= upper - rest.lo
        room = int(upper - rest.lo)
        found.append(Interval(-INF, room // k) if k > 0 else Interval(-(-room // k), INF))
    if lower > -INF and rest.hi < INF:  # k * atom >= lower - rest.hi
        room = int(lower - rest.hi)
        found.append(Interval(-(-room // k), INF) if k > 0 else Interval(-INF, room // k))
    return [(atom, f) for f in found]


def _meet(a: Abstract, b: Abstract) -> Abstract:
    """What is known from both (an empty interval where they exclude each other)."""
    if isinstance(a, Interval) and isinstance(b, Interval):
        return Interval(max(a.lo, b.lo), min(a.hi, b.hi))
    if isinstance(a, Pointer) and isinstance(b, Pointer) and a.bases == b.bases:
        return Pointer(a.bases, Interval(max(a.offset.lo, b.offset.lo), min(a.offset.hi, b.offset.hi)))
    return a


def _join(values: list[Abstract]) -> Abstract:
    """A value that is one of ``values``."""
    if not values:
        return TOP
    first = values[0]
    for v in values[1:]:
        if isinstance(first, Interval) and isinstance(v, Interval):
            first = first | v
        elif isinstance(first, Pointer) and isinstance(v, Pointer):
            first = Pointer(first.bases | v.bases, first.offset | v.offset)
        else:
            return TOP
    return first


def _assignments(names: tuple[str, ...]) -> Iterator[dict[str, int]]:
    for v in SAMPLE_SIZES:
        yield {n: v for n in names}
    if len(names) > 1:
        rng = random.Random(len(names))
        for _ in range(24):
            yield {n: rng.choice(SAMPLE_SIZES) for n in names}
        for combo in itertools.islice(itertools.product((1, 17, 1000), repeat=len(names)), 27):
            yield dict(zip(names, combo))


def _describe(off: Interval) -> str:
    if not off.known:
        return "unbounded offsets (they depend on loaded or carried values, or on scalars)"
    return f"offsets {int(off.lo)}..{int(off.hi)}"


def unproven_accesses(checked: CheckedKernel) -> list[Diagnostic]:
    """Every unmasked load or store whose offsets cannot be shown inside its tensor."""
    reported: dict[str, Diagnostic] = {}
    kernel = checked.kernel
    loading: set[int] = set()
    unmasked_writes = any(isinstance(node, (L.Store, L.Atomic)) and node.mask is None
                          for node, _ in nodes(kernel.body, "/body"))
    if not _loading(kernel.body, loading) and not unmasked_writes:
        return []  # every access is masked: nothing to prove
    host = [*kernel.grid, *(b.value for b in checked.params), *(d for out in kernel.outputs for d in out.shape)]
    names = tuple(checked.sizes) + ((_NUM_SMS,) if any(map(device_dependent, host)) else ())
    for sizes in _assignments(names):
        analysis = _Analysis(checked, sizes, loading)
        if any(g.known and g.hi < 1 for g in analysis.grid):
            continue  # no program runs at these sizes (a launch gridded to nothing when not needed)
        analysis.block(kernel.body, "/body", analysis.params())
        for path, kind, off, base in analysis.findings:
            if path in reported:
                continue
            numel = analysis.numel.get(base, INF)
            size_text = ", ".join(f"{k.strip('{}')}={v}" for k, v in sizes.items()) or "any sizes"
            bound = f"{base!r} has {int(numel)} elements" if numel < INF else f"the size of {base!r} is unknown"
            reported[path] = Diagnostic(
                path, "unproven_bounds",
                f"unmasked {kind} with {_describe(off)} where {bound} (with {size_text}); add a mask")
    return list(reported.values())
