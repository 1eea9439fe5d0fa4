"""The lowering's statements and control flow: a block of statements, ``scf.for`` with its
carries, ``scf.if`` with its results, and the ``scf.yield`` that ends their regions.

A mixin that :class:`kernelgen.lower.lowering._Lowering` inherits, kept apart from the expressions:
these methods move the builder's insertion point between regions and thread the environment
of names through them. They call the lowering's own methods through ``self`` and do not
import lowering.py back.
"""

from __future__ import annotations

from typing import Union

from triton._C.libtriton import ir

from kernelgen.lang import nodes as L
from kernelgen.check.checked import ValueType, child

Scalar = Union[bool, int, float]
# A lowered expression: an MLIR value, or a literal kept as a Python number until an operation
# says which dtype it takes (the interpreter keeps literals the same way).
Lowered = Union[ir.value, Scalar]


class ControlLowering:
    """Statements, loops and ifs: needs the attributes and methods :class:`kernelgen.lower.lowering._Lowering` has."""

    def block(self, stmts: list[L.Stmt], path: str, env: dict[str, Lowered]) -> None:
        for i, stmt in enumerate(stmts):
            spath = child(path, i)
            if isinstance(stmt, L.Let):
                env[stmt.name] = self.expr(stmt.value, child(spath, "value"), env)
            elif isinstance(stmt, L.Store):
                self.guarded(spath, lambda: self.store(stmt, spath, env))
            elif isinstance(stmt, L.TileStore):
                self.guarded(spath, lambda: self.tile_store(stmt, spath, env))
            elif isinstance(stmt, L.If):
                self.guarded(spath, lambda: self.branch(stmt, spath, env))
            elif isinstance(stmt, L.Atomic):
                old = self.guarded(spath, lambda: self.atomic(stmt, spath, env))
                if stmt.name is not None:
                    env[stmt.name] = old
            elif isinstance(stmt, L.For):
                self.guarded(spath, lambda: self.loop(stmt, spath, env))
            else:  # a barrier: gpu.barrier (bar.sync), as tl.debug_barrier makes it
                self.at(spath)
                self.builder.create_barrier()

    def loop(self, f: L.For, path: str, env: dict[str, Lowered]) -> None:
        b = self.builder
        var_type = self.types[child(path, "var")]
        lower, upper, step = (self.operand(getattr(f, name), child(path, name), env, var_type.dtype)
                              for name in ("start", "stop", "step"))
        carry_types = [self.types[child(path, "carry", i, "name")] for i in range(len(f.carry))]
        inits = [self.operand(c.init, child(path, "carry", i, "init"), env, t.dtype, t.shape)
                 for i, (c, t) in enumerate(zip(f.carry, carry_types))]
        self.at(path)
        if not (isinstance(f.step, int) and not isinstance(f.step, bool) and f.step > 0):
            positive = b.create_icmpSGT(step, self.constant(0, var_type.dtype))
            upper = b.create_select(positive, upper, lower)
        for_op = b.create_for_op(lower, upper, step, inits)
        if f.num_stages is not None:  # as Triton's code generator lowers tl.range(..., num_stages=)
            for_op.set_attr("tt.num_stages", b.get_int32_attr(f.num_stages))
        if f.unroll not in (None, 1):  # as tl.range(..., loop_unroll_factor=): Triton's loop-unroll pass reads it
            for_op.set_attr("tt.loop_unroll_factor", b.get_int32_attr(f.unroll))
        if f.flatten:  # as tl.range(..., flatten=True): Triton's fuse-nested-loops pass reads it on sm_80+
            for_op.set_attr("tt.flatten", b.get_unit_attr())
        saved = b.get_insertion_point()
        body = for_op.get_body(0)
        b.set_insertion_point_to_start(body)
        inner = dict(env)
        inner[f.var] = for_op.get_induction_var()
        for i, c in enumerate(f.carry):
            inner[c.name] = body.arg(i + 1)
        self.block(f.body, child(path, "body"), inner)
        self.yield_values([(c.next, child(path, "carry", i, "next")) for i, c in enumerate(f.carry)],
                          carry_types, inner, path)
        b.restore_insertion_point(saved)
        for i, c in enumerate(f.carry):
            env[c.name] = for_op.get_result(i)

    def yield_values(self, exprs: list[tuple[L.Expr, str]], types: list[ValueType], env: dict[str, Lowered],
                     path: str) -> None:
        """End a region with ``scf.yield`` of the expressions (none: the implicit terminator)."""
        values = [self.operand(e, p, env, t.dtype, t.shape) for (e, p), t in zip(exprs, types)]
        if values:
            self.at(path)
            self.builder.create_yield_op(values)

    def branch(self, s: L.If, path: str, env: dict[str, Lowered]) -> None:
        """An ``scf.if`` yielding the results (as Triton's code generator builds one for an
        ``if`` on a scalar tensor); without results it has no yields, and no else block when
        the else branch is empty."""
        b = self.builder
        cond = self.operand(s.cond, child(path, "cond"), env, "bool")
        types = [self.types[child(path, "results", i, "name")] for i in range(len(s.results))]
        self.at(path)
        if_op = b.create_if_op([self.ir_type(t) for t in types], cond, bool(s.results or s.else_))
        saved = b.get_insertion_point()
        for side, stmts, block in (("then", s.then, if_op.get_then_block()), ("else", s.else_, None)):
            if side == "else":
                if not (s.results or s.else_):
                    break
                block = if_op.get_else_block()
            b.set_insertion_point_to_start(block)
            inner = dict(env)
            self.block(stmts, child(path, side), inner)
            self.yield_values([(r.then if side == "then" else r.else_, child(path, "results", i, side))
                               for i, r in enumerate(s.results)], types, inner, path)
        b.restore_insertion_point(saved)
        for i, r in enumerate(s.results):
            env[r.name] = if_op.get_result(i)
