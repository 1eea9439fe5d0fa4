"""The checker's statements: lets, stores, atomics, for loops and their carries, ifs and their results.

A mixin that :class:`kernelgen.check.checker._Checker` inherits, kept apart so that checker.py holds the
expression typing and the statement rules (scopes, writes to outputs, loop carries, the types
both sides of an if agree on) read in one place. It calls the checker's own methods
(``expr``, ``fail``, ``adopt`` ...) through ``self`` and does not import checker.py back.
"""

from __future__ import annotations

from kernelgen.check import tiles as check_tiles

from kernelgen.check import tile_access as tiles
from kernelgen.lang import nodes as L
from kernelgen.check.checked import ATOMIC_DTYPES, ERROR_DTYPE, FLOAT_DTYPES, INT_DTYPES, ValueType, _Invalid, child
from kernelgen.check.sequence import nodes


class StatementChecks:
    """The statement half of the checker: needs the attributes :class:`kernelgen.check.checker._Checker` sets."""

    # -- statements -------------------------------------------------------------------------

    def bind(self, name: str, t: ValueType, path: str, scope: dict[str, ValueType]) -> None:
        if name in scope:
            self.error(path, "duplicate_name", f"{name!r} is already bound; names are never rebound "
                       "(use a new name, or a loop carry for values updated in a loop)")
        scope[name] = t

    def block(self, stmts: list[L.Stmt], path: str, scope: dict[str, ValueType]) -> None:
        for i, stmt in enumerate(stmts):
            spath = child(path, i)
            try:
                if isinstance(stmt, L.Let):
                    t = self.expr(stmt.value, child(spath, "value"), scope)
                    self.bind(stmt.name, t, child(spath, "name"), scope)
                    self.lets[stmt.name] = stmt.value  # for the hints' refuter
                elif isinstance(stmt, L.Store):
                    self.store(stmt, spath, scope)
                elif isinstance(stmt, L.TileStore):
                    check_tiles.tile_store(self, stmt, spath, scope)
                elif isinstance(stmt, L.If):
                    self.branch(stmt, spath, scope)
                elif isinstance(stmt, L.Atomic):
                    self.atomic(stmt, spath, scope)
                elif isinstance(stmt, L.For):
                    self.loop(stmt, spath, scope)
                # A barrier is valid anywhere: every condition and trip count is per program,
                # so all of a program's threads reach it; what it orders is judged when run.
            except _Invalid:
                # The names a failed statement binds are marked as errors (already reported),
                # so their later uses are not reported again as undefined.
                if isinstance(stmt, L.Let) or isinstance(stmt, L.Atomic) and stmt.name is not None:
                    scope.setdefault(stmt.name, ValueType(ERROR_DTYPE))
                elif isinstance(stmt, (L.For, L.If)):
                    for c in (stmt.carry if isinstance(stmt, L.For) else stmt.results):
                        scope.setdefault(c.name, ValueType(ERROR_DTYPE))

    def store(self, s: L.Store, path: str, scope) -> None:
        ptr = self.output_pointer(s.ptr, path, scope, "store")
        value = self.expr(s.value, child(path, "value"), scope)
        self.fits(value, ValueType(ptr.dtype, ptr.shape), child(path, "value"), "the stored value")
        if s.mask is not None:
            self.mask(s.mask, child(path, "mask"), ptr.shape, scope)
        self.stored |= ptr.bases

    def output_pointer(self, expr: L.Expr, path: str, scope, what: str) -> ValueType:
        """The pointer a store or an atomic writes through: into outputs only."""
        ptr = self.expr(expr, child(path, "ptr"), scope)
        if not ptr.pointer:
            raise self.fail(child(path, "ptr"), "not_a_pointer", f"{what} writes through a pointer, got {ptr}")
        inputs = sorted(b for b in ptr.bases if not self.tensors[b].is_output)
        if inputs:
            raise self.fail(child(path, "ptr"), "store_to_input",
                            f"this pointer may point into input {inputs[0]!r}; inputs are read-only")
        return ptr

    def atomic(self, a: L.Atomic, path: str, scope) -> None:
        ptr = self.output_pointer(a.ptr, path, scope, a.op)
        target = ValueType(ptr.dtype, ptr.shape)
        allowed = ATOMIC_DTYPES[a.op]
        if ptr.dtype not in allowed:
            raise self.fail(child(path, "ptr"), "atomic_dtype",
                            f"Triton's {a.op} takes {'/'.join(allowed)} pointees, not {ptr.dtype}")
        if a.op == "atomic_cas":
            if a.cmp is None:
                raise self.fail(path, "bad_atomic", "atomic_cas needs 'cmp', the value the old one is compared with")
            if a.mask is not None:
                raise self.fail(child(path, "mask"), "bad_atomic",
                                "Triton's atomic_cas has no mask: fold it into the pointer or the values")
            self.fits(self.expr(a.cmp, child(path, "cmp"), scope), target, child(path, "cmp"), "cmp")
        elif a.cmp is not None:
            raise self.fail(child(path, "cmp"), "bad_atomic", f"'cmp' goes with atomic_cas, not {a.op}")
        self.fits(self.expr(a.val, child(path, "val"), scope), target, child(path, "val"), "the atomic's value")
        if a.mask is not None:
            self.mask(a.mask, child(path, "mask"), ptr.shape, scope)
        self.stored |= ptr.bases
        if a.name is not None:
            self.bind(a.name, target, child(path, "name"), scope)
            self.types[child(path, "name")] = target

    def loop(self, f: L.For, path: str, scope: dict[str, ValueType]) -> None:
        bounds = []
        for name in ("start", "stop", "step"):
            t = self.expr(getattr(f, name), child(path, name), scope)
            if t.shape:
                raise self.fail(child(path, name), "needs_scalar", f"loop {name} is a scalar, got {t}")
            self.wide_int_only([(t, child(path, name))], f"a loop {name}")
            if not t.is_int:
                raise self.fail(child(path, name), "needs_int", f"loop {name} is an integer, got {t}")
            bounds.append(t)
        if isinstance(f.step, int) and f.step <= 0:
            raise self.fail(child(path, "step"), "bad_value", f"loop step must be positive, got {f.step}")
        if f.flatten:
            self.flattened_nest(f, path)
        var_dtype = "i64" if any(b.dtype == "i64" and not b.weak for b in bounds) else "i32"
        for name, t in zip(("start", "stop", "step"), bounds):
            self.adopt(t, var_dtype, child(path, name))
        inner = dict(scope)
        self.bind(f.var, ValueType(var_dtype), child(path, "var"), inner)
        self.types[child(path, "var")] = ValueType(var_dtype)
        carried: list[tuple[str, ValueType]] = []
        for i, c in enumerate(f.carry):
            cpath = child(path, "carry", i)
            t = self.expr(c.init, child(cpath, "init"), scope)
            if t.weak:
                t = t.concrete()
            self.bind(c.name, t, child(cpath, "name"), inner)
            self.types[child(cpath, "name")] = t
            carried.append((c.name, t))
        self.loop_depth += 1
        try:
            self.block(f.body, child(path, "body"), inner)
        finally:
            self.loop_depth -= 1
        for i, (c, (name, t)) in enumerate(zip(f.carry, carried)):
            npath = child(path, "carry", i, "next")
            try:
                nxt = self.expr(c.next, npath, inner)
            except _Invalid:
                continue
            same = nxt.same_kind(t) or (nxt.weak and nxt.shape == t.shape and not t.pointer
                                        and (t.dtype in FLOAT_DTYPES or nxt.dtype in INT_DTYPES))
            if not same:
                self.error(npath, "loop_carry_type",
                           f"carry {name!r} starts as {t} but next is {nxt}; the type must stay the same")
                continue
            try:
                self.adopt(nxt, t.dtype, npath)
            except _Invalid:
                continue
        for i, (name, t) in enumerate(carried):
            self.bind(name, ValueType(t.dtype, t.shape, t.pointer, False, t.bases),
                      child(path, "carry", i, "name"), scope)

    def flattened_nest(self, f: L.For, path: str) -> None:
        """A flattened for heads a nest of exactly two loops, the only shape Triton's
        fuse-nested-loops pass fuses (any other, it leaves as it is, silently)."""
        where = child(path, "flatten")
        if self.loop_depth:
            raise self.fail(where, "flatten_nest", "a flattened for is the outermost loop of its nest; "
                            "this one is inside another for")
        direct = [s for s in f.body if isinstance(s, L.For)]
        if len(direct) != 1:
            raise self.fail(where, "flatten_nest", "flatten fuses this for with the one for directly in its body; "
                            f"this body has {len(direct)} (a for inside an if is not directly in it)")
        if any(isinstance(node, L.For) for node, _ in nodes(direct[0].body, path)):
            raise self.fail(where, "flatten_nest", "flatten fuses two levels of loops; the for in this body "
                            "holds another for")
        varying = {f.var, *(c.name for c in f.carry)}  # and what the body binds before the inner for
        for s in f.body:
            if isinstance(s, (L.Let, L.Atomic)) and s.name is not None:
                varying.add(s.name)
            elif isinstance(s, L.If):
                varying.update(r.name for r in s.results)
        bounds = set().union(*(tiles.names_read(getattr(direct[0], b)) for b in ("start", "stop", "step")))
        read = sorted(bounds & varying)
        if read:
            raise self.fail(where, "flatten_nest", f"the inner for's bounds read {', '.join(map(repr, read))}, "
                            "which this loop binds; Triton fuses only inner bounds fixed outside the nest")
        # Unrolling runs before the fusion and leaves it no nest of two loops to fuse.
        inner_path = child(path, "body", f.body.index(direct[0]))
        for loop, at in ((f, path), (direct[0], inner_path)):
            if loop.unroll not in (None, 1):
                raise self.fail(child(at, "unroll"), "flatten_nest", "a flattened nest's loops are not unrolled: "
                                "drop unroll or flatten")

    def branch(self, s: L.If, path: str, scope: dict[str, ValueType]) -> None:
        """An if: a bool scalar condition, each branch in its own scope, and results of one
        type from both (as Triton's scf.if yields them)."""
        cpath = child(path, "cond")
        try:  # a wrong condition is reported; the branches are still checked
            cond = self.expr(s.cond, cpath, scope)
            if cond.shape:
                self.error(cpath, "needs_scalar", f"an if's condition is a scalar, got {cond}; reduce the block "
                           "(max/min of a cast) or use where/masks for per-lane choices")
            elif not cond.is_bool:
                self.error(cpath, "needs_bool", f"an if's condition is bool, got {cond} (compare, e.g. ne x 0)")
        except _Invalid:
            pass
        scopes = {}
        for side, stmts in (("then", s.then), ("else", s.else_)):
            scopes[side] = dict(scope)
            self.block(stmts, child(path, side), scopes[side])
        results: list[tuple[str, ValueType, str]] = []
        for i, r in enumerate(s.results):
            rpath = child(path, "results", i)
            try:
                sides = [(self.expr(getattr(r, "then" if side == "then" else "else_"), child(rpath, side), scopes[side]),
                          child(rpath, side)) for side in ("then", "else")]
                results.append((r.name, self.result_type(r.name, sides, rpath), child(rpath, "name")))
            except _Invalid:
                results.append((r.name, ValueType(ERROR_DTYPE), child(rpath, "name")))
        for name, t, npath in results:
            self.types[npath] = t
            self.bind(name, t, npath, scope)

    def result_type(self, name: str, sides: list[tuple[ValueType, str]], path: str) -> ValueType:
        """The one type of an if's result: equal shapes and dtypes, a weak side taking the
        other's dtype (both weak: concrete), or pointers of one dtype (either base)."""
        (a, ap), (b, bp) = sides
        if a.pointer or b.pointer:
            if not (a.pointer and b.pointer and a.dtype == b.dtype and a.shape == b.shape):
                raise self.fail(path, "if_result_type", f"result {name!r} is {a} in then but {b} in else")
            return ValueType(a.dtype, a.shape, pointer=True, bases=a.bases | b.bases)
        if a.shape != b.shape:
            raise self.fail(path, "if_result_type", f"result {name!r} has shape {list(a.shape)} in then but "
                            f"{list(b.shape)} in else; broadcast one (the shapes must be equal)")
        if a.weak and b.weak:
            dtype = self._common_dtype(sides, "if")
        elif a.weak or b.weak:
            strong, weak = (b, a) if a.weak else (a, b)
            if weak.is_float and not strong.is_float or strong.is_bool:
                raise self.fail(path, "if_result_type", f"result {name!r} is {a} in then but {b} in else; cast one")
            dtype = strong.dtype
        elif a.dtype != b.dtype:
            raise self.fail(path, "if_result_type", f"result {name!r} is {a.dtype} in then but {b.dtype} in else; "
                            "cast one")
        else:
            dtype = a.dtype
        for t, p in sides:
            self.adopt(t, dtype, p)
        self.operand_dtypes[path] = dtype
        return ValueType(dtype, a.shape)
