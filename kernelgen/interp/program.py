"""A chunk of a launch's programs, run statement by statement: the interpreter's evaluation.

:class:`_Run` evaluates one chunk of programs (:mod:`kernelgen.interp.execute` cuts a launch into
chunks, runs them and says what each construct means): values are torch tensors with a
leading program axis, pointers are :class:`Pointer` blocks into named buffers, and every access
goes through the launch's access log.
"""

from __future__ import annotations

import copy
import math
import struct
import time
from typing import Callable, Sequence

import torch

from kernelgen.interp import blocks as interpret_blocks
from kernelgen.lang import nodes as L
from kernelgen.interp.accesses import AccessLog
from kernelgen.interp.clock import LOOK_EVERY_S, interpreter_clock
from kernelgen.interp.atomics import apply_atomic
from kernelgen.interp.lanes import Lanes, select as select_lanes
from kernelgen.interp.orders import LOCKSTEP, Order
from kernelgen.interp.pipelining import Pipelines
from kernelgen.interp.trips import trip_counts
from kernelgen.interp.replicated import broadcast_loads_of
from kernelgen.lang import philox
from kernelgen.lang.limits import type_info
from kernelgen.check import tile_access as tiles
from kernelgen.check.checker import CheckedKernel, ValueType, child, literal_value
from kernelgen.check.checked import ANY_INT_DTYPES, FP8_DTYPES
from kernelgen.errors import Diagnostic, InterpreterError, InterpreterLimit
from kernelgen.check.hints import claim_of, violation
from kernelgen.host.plan import LaunchPlan, torch_dtype
from kernelgen.interp.masks import all_true, any_true
from kernelgen.interp.values import (BINARY as _BINARY, UNARY as _UNARY, Pointer, Value, bits_of, constant_as, fma_f64,
                                     round_tf32 as _round_tf32, special_binary, view_key)

# A node's evaluation: its value from a run and an environment (:meth:`_Run.evaluator`).
Evaluator = Callable[["_Run", dict[str, Value]], Value]


class _Run:
    """One chunk of programs (``programs``: their linear ids), run statement by statement.

    ``accesses`` records the chunk's output accesses for the race detector (None while the
    budget estimate evaluates loop bounds); ``deadline`` is a value of :mod:`kernelgen.interp.clock`'s clock.
    ``programs`` may come in any order: atomics apply lanes in that order, and a program's
    lanes in ``order``'s (:meth:`~kernelgen.interp.orders.Order.lanes`)."""

    def __init__(self, plan: LaunchPlan, buffers: dict[str, torch.Tensor], programs: torch.Tensor,
                 accesses: AccessLog | None = None, deadline: float | None = None, order: Order = LOCKSTEP) -> None:
        self.plan = plan
        self.order = order
        self.checked: CheckedKernel = plan.checked
        self.types = self.checked.types
        self.names = list(buffers)
        self.flat = [buffers[n].view(-1) for n in self.names]
        self.sizes = [f.numel() for f in self.flat]
        self.read_only = [n in plan.inputs for n in self.names]
        self.count = programs.numel()
        g0, g1, _ = plan.grid
        self.programs = programs
        self.pid = (programs % g0, (programs // g0) % g1, programs // (g0 * g1))
        self.accesses = accesses
        self.deadline = deadline
        self.next_look = 0.0  # the wall clock's value before which out_of_time does not look
        # The offsets of every parameter's pointer (zeros): arithmetic on such a pointer, recognised
        # by this very tensor, skips adding them, a pass over a whole block per access otherwise.
        self.origin = torch.zeros(self.count, dtype=torch.int64)
        self.constants: dict[tuple, torch.Tensor] = {}  # :meth:`typed`'s tensors of constants
        self.evaluators: dict[str, Evaluator] = {}  # by node path (:meth:`evaluator`)
        self.statement_paths: dict[str, list[str]] = {}  # by a block's path, its statements'
        self.pipelines = Pipelines()  # the pipelined loops running (kernelgen.interp.pipelining)

    # -- values -----------------------------------------------------------------------------

    def typed(self, value: Value, dtype: str, shape: Sequence[int] | None = None) -> torch.Tensor:
        """A value as a tensor of ``dtype`` with the program axis, broadcast to ``shape``. A
        constant's tensor is made once per run (values are never written in place): a loop
        iteration over small blocks would otherwise spend more on building it than on using it."""
        if isinstance(value, torch.Tensor):
            target = torch_dtype(dtype)
            out = value if value.dtype == target else value.to(target)
            return out if shape is None else self.expand(out, shape)
        key = (dtype, value if type(value) is not float else struct.pack("<d", value),  # -0.0 is not 0.0
               () if shape is None else tuple(shape))
        out = self.constants.get(key)
        if out is None:
            out = torch.full((self.count,), constant_as(value, dtype), dtype=torch_dtype(dtype))
            out = self.constants[key] = self.expand(out, key[2])
        return out

    def expand(self, value: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
        """Broadcast a per-program value to ``[programs, *shape]`` (NumPy rules on the block)."""
        full = (self.count, *shape)
        if value.shape == full:
            return value
        return self.align(value, len(shape)).expand(full)

    @staticmethod
    def align(value: torch.Tensor, rank: int) -> torch.Tensor:
        """A per-program value with leading 1s added to its block up to ``rank`` axes, so that
        torch broadcasts it as NumPy's rules do on the block (the program axis stays first)."""
        missing = rank + 1 - value.dim()
        if not missing:
            return value
        return value.reshape((value.shape[0],) + (1,) * missing + tuple(value.shape[1:]))

    def eval(self, e: L.Expr, path: str, env: dict[str, Value]) -> Value:
        """The value of ``e``, the node at ``path``."""
        fn = self.evaluators.get(path)
        return (fn or self.evaluator(e, path))(self, env)

    def evaluator(self, e: L.Expr, path: str) -> Evaluator:
        """The function computing ``e`` (the node at ``path``) from a run and an environment, made
        once per path: what a node's evaluation looks up (its types, its children's paths and
        evaluators) is the same on every loop iteration, and looking it up again was most of
        the time of a loop over small blocks. Names, literals and binary ops (most of a
        kernel's nodes) are evaluated right here; other nodes by their ``_<node>`` method."""
        fn = self.evaluators.get(path)
        if fn is not None:
            return fn
        if isinstance(e, str) and e not in L.FLOAT_LITERAL_NAMES:
            def fn(run: _Run, env: dict[str, Value]) -> Value:
                return env[e]
        elif isinstance(e, (str, bool, int, float)):  # a literal (inf and nan by name)
            value = literal_value(e)

            def fn(run: _Run, env: dict[str, Value]) -> Value:
                return value
        elif isinstance(e, L.Binary):
            fn = self._binary(e, path)
        else:
            method = f"_{type(e).__name__.lower()}"  # looked up per call: tests replace methods

            def fn(run: _Run, env: dict[str, Value]) -> Value:
                return getattr(run, method)(e, path, env)
        self.evaluators[path] = fn
        return fn

    def eval_as(self, e: L.Expr, path: str, env: dict[str, Value], dtype: str,
                shape: Sequence[int] | None = None) -> torch.Tensor:
        return self.typed(self.eval(e, path, env), dtype, shape)

    def _programid(self, e: L.ProgramId, path: str, env) -> Value:
        if e.op == "program_id":
            return self.pid[e.axis].to(torch.int32)
        return torch.full((self.count,), self.plan.grid[e.axis], dtype=torch.int32)

    def _typeinfo(self, e: L.TypeInfo, path: str, env) -> Value:
        return torch.full((self.count,), type_info(e.op, e.dtype, e.what), dtype=torch_dtype(self.types[path].dtype))

    def _arange(self, e: L.Arange, path: str, env) -> Value:
        n = self.types[path].shape[0]
        return torch.arange(n, dtype=torch.int32).expand(self.count, n)

    def _full(self, e: L.Full, path: str, env) -> Value:
        t = self.types[path]
        return torch.full((self.count,) + t.shape, constant_as(literal_value(e.value), t.dtype),
                          dtype=torch_dtype(t.dtype))

    def _unary(self, e: L.Unary, path: str, env) -> Value:
        t = self.types[path]
        x = self.eval_as(e.x, child(path, "x"), env, t.dtype if e.op != "not" else "bool")
        return _UNARY[e.op](x)

    def _binary(self, e: L.Binary, path: str) -> Evaluator:
        """A binary op's evaluator (see :meth:`evaluator`)."""
        t = self.types[path]
        lhs, rhs = self.evaluator(e.lhs, child(path, "lhs")), self.evaluator(e.rhs, child(path, "rhs"))
        if t.pointer:
            def pointer(run: _Run, env: dict[str, Value]) -> Value:
                return run.pointer_arith(e.op, lhs(run, env), rhs(run, env), t.shape)
            return pointer
        dtype = self.checked.operand_dtypes[path]
        plain = _BINARY.get(e.op)
        if plain is None or (e.op == "rem" and dtype in ANY_INT_DTYPES):
            def special(run: _Run, env: dict[str, Value]) -> Value:
                a, b = run.typed(lhs(run, env), dtype, t.shape), run.typed(rhs(run, env), dtype, t.shape)
                return special_binary(e.op, dtype, a, b)
            return special
        rank, operand, target = len(t.shape), torch_dtype(dtype), torch_dtype(t.dtype)

        def binary(run: _Run, env: dict[str, Value]) -> Value:
            a, b = lhs(run, env), rhs(run, env)
            if type(a) is not torch.Tensor or a.dtype != operand:  # (:meth:`typed`, without a call per operand)
                a = run.typed(a, dtype)
            if type(b) is not torch.Tensor or b.dtype != operand:
                b = run.typed(b, dtype)
            # torch broadcasts the aligned operands itself: expanding them first costs two calls.
            out = run.expand(plain(run.align(a, rank), run.align(b, rank)), t.shape)
            return out if out.dtype == target else out.to(target)  # a no-op conversion costs a torch call
        return binary

    def pointer_arith(self, op: str, lhs: Value, rhs: Value, shape: tuple[int, ...]) -> Pointer:
        """A pointer plus or minus an offset (either operand the pointer), of block ``shape``."""
        ptr, off = (lhs, rhs) if isinstance(lhs, Pointer) else (rhs, lhs)
        offset = self.expand(self.typed(off, "i64"), shape)
        if ptr.offset is self.origin and op == "add":  # a parameter's own pointer: nothing to add
            return Pointer(self.typed(ptr.buffer, "i64", shape), offset, ptr.buffer)  # its base, made once
        start = self.expand(ptr.offset, shape)
        return Pointer(self.expand(ptr.base, shape), start - offset if op == "sub" else start + offset, ptr.buffer)

    def _where(self, e: L.Where, path: str, env) -> Value:
        t = self.types[path]
        cond = self.eval_as(e.cond, child(path, "cond"), env, "bool", t.shape)
        if t.pointer:
            x, y = self.eval(e.x, child(path, "x"), env), self.eval(e.y, child(path, "y"), env)
            return Pointer(torch.where(cond, self.expand(x.base, t.shape), self.expand(y.base, t.shape)),
                           torch.where(cond, self.expand(x.offset, t.shape), self.expand(y.offset, t.shape)),
                           x.buffer if x.buffer == y.buffer else None)
        dtype = self.checked.operand_dtypes[path]
        x = self.eval_as(e.x, child(path, "x"), env, dtype, t.shape)
        y = self.eval_as(e.y, child(path, "y"), env, dtype, t.shape)
        return torch.where(cond, x, y)

    def _fma(self, e: L.Fma, path: str, env) -> Value:
        t = self.types[path]
        operands = [self.eval_as(getattr(e, f), child(path, f), env, t.dtype) for f in "xyz"]
        wide = {view_key(v): v.double() for v in operands}  # x * x: one conversion; a row: N, not M * N
        x, y, z = (self.expand(wide[view_key(v)], t.shape) for v in operands)
        if t.dtype == "f64":
            return fma_f64(x, y, z)
        # The product of two narrower floats is exact in f64, so z + x * y rounds there once, fused
        # or not: addcmul computes it in one pass over the block, not two.
        return torch.addcmul(z, x, y).to(torch_dtype(t.dtype))

    def _clamp(self, e: L.Clamp, path: str, env) -> Value:
        t = self.types[path]
        x, lo, hi = (self.eval_as(getattr(e, f), child(path, f), env, t.dtype, t.shape) for f in ("x", "lo", "hi"))
        return torch.minimum(torch.maximum(x, lo), hi)

    def _cast(self, e: L.Cast, path: str, env) -> Value:
        x = self.eval(e.x, child(path, "x"), env)
        src = self.types[child(path, "x")]
        if not isinstance(x, torch.Tensor):
            # A float literal is f32, except that cast to f64 it is the f64 value (as it adopts f64).
            x = self.typed(x, ("f64" if e.dtype == "f64" else "f32") if isinstance(x, float) else src.dtype)
        if e.dtype == "bool":
            return x != 0
        if e.dtype in FP8_DTYPES:
            return philox.to_fp8(x, e.dtype)
        if x.is_floating_point() and e.dtype in ANY_INT_DTYPES:
            # The GPU's conversion (cvt.rzi) saturates and sends NaN to 0; so does the language.
            info = torch.iinfo(torch_dtype(e.dtype))
            x = torch.nan_to_num(x.double(), nan=0.0).clamp(info.min, info.max).trunc()
        return x.to(torch_dtype(e.dtype))

    def _bitcast(self, e: L.Bitcast, path: str, env) -> Value:
        src = self.types[child(path, "x")]
        x = self.eval_as(e.x, child(path, "x"), env, src.dtype, src.shape)
        return x.contiguous().view(torch_dtype(e.dtype))

    def _random(self, e: L.Random, path: str, env) -> Value:
        t = self.types[path]
        seed = self.eval_as(e.seed, child(path, "seed"), env, self.types[child(path, "seed")].dtype)
        offset = self.eval_as(e.offset, child(path, "offset"), env, self.types[child(path, "offset")].dtype, t.shape)
        seed = seed.reshape((self.count,) + (1,) * len(t.shape))
        return philox.random(e.op, seed, offset, e.word)

    def _reduce(self, e: L.Reduce, path: str, env) -> Value:
        t = self.types[path]
        xt = self.types[child(path, "x")]
        x = self.eval_as(e.x, child(path, "x"), env, t.dtype if e.op not in ("argmax", "argmin") else xt.dtype,
                         xt.shape)
        axis = e.axis + 1
        if e.op == "sum":
            out = x.sum(dim=axis, keepdim=e.keepdims, dtype=x.dtype)
        elif e.op == "max":
            out = x.amax(dim=axis, keepdim=e.keepdims)
        elif e.op == "min":
            out = x.amin(dim=axis, keepdim=e.keepdims)
        else:
            fn = torch.argmax if e.op == "argmax" else torch.argmin
            out = fn(x, dim=axis, keepdim=e.keepdims).to(torch.int32)
        self._barrier(env, across=path)
        return out

    def _scan(self, e: L.Scan, path: str, env) -> Value:
        t = self.types[path]
        x = self.eval_as(e.x, child(path, "x"), env, t.dtype, t.shape)
        self._barrier(env, across=path)
        return interpret_blocks.scan(e.op, x, e.axis, e.reverse)

    def _barrier(self, env, across: str | None = None) -> None:
        """The active programs pass a barrier: a barrier statement, or (``across``) a reduction or scan
        the compiled kernel makes between warps (:class:`kernelgen.interp.barrier.Layouts`)."""
        if self.accesses is not None and (across is None or across in self.accesses.order.barriers):
            active = env.get(_ACTIVE)
            self.accesses.barrier(self.programs if active is None else self.programs[active])

    def _sort(self, e: L.Sort, path: str, env) -> Value:
        xt = self.types[child(path, "x")]
        x = self.eval_as(e.x, child(path, "x"), env, xt.dtype, xt.shape)
        return interpret_blocks.sort(e.op, x, xt.dtype, e.descending)

    def _topk(self, e: L.TopK, path: str, env) -> Value:
        xt = self.types[child(path, "x")]
        x = self.eval_as(e.x, child(path, "x"), env, xt.dtype, xt.shape)
        return interpret_blocks.sort(e.op, x, xt.dtype, True, self.types[path].shape[-1])

    def _gather(self, e: L.Gather, path: str, env) -> Value:
        t, st, it = self.types[path], self.types[child(path, "src")], self.types[child(path, "index")]
        src = self.eval_as(e.src, child(path, "src"), env, t.dtype, st.shape)
        index = self.eval_as(e.index, child(path, "index"), env, it.dtype, it.shape)
        return interpret_blocks.gather(src, index, e.axis, path, self.programs, env.get(_ACTIVE))

    def _histogram(self, e: L.Histogram, path: str, env) -> Value:
        xt = self.types[child(path, "x")]
        x = self.eval_as(e.x, child(path, "x"), env, xt.dtype, xt.shape)
        counted = self.active_mask(xt.shape, e.mask, path, env, env.get(_ACTIVE))
        if counted is None:
            counted = torch.ones((self.count,) + xt.shape, dtype=torch.bool)
        return interpret_blocks.histogram(x, self.types[path].shape[0], counted, path, self.programs)

    def _dot(self, e: L.Dot, path: str, env) -> Value:
        if e.dtype == "i32":
            return self._int_dot(e, path, env)
        a_t = self.types[child(path, "lhs")]
        a = self.eval_as(e.lhs, child(path, "lhs"), env, a_t.dtype, a_t.shape).float()
        b_t = self.types[child(path, "rhs")]  # of lhs's dtype, or another fp8
        b = self.eval_as(e.rhs, child(path, "rhs"), env, b_t.dtype, b_t.shape).float()
        if e.precision == "tf32":
            a, b = _round_tf32(a), _round_tf32(b)
        out = torch.bmm(a, b)
        if e.acc is not None:
            out = out + self.eval_as(e.acc, child(path, "acc"), env, e.dtype, self.types[path].shape).float()
        return out.to(torch_dtype(e.dtype))

    def _int_dot(self, e: L.Dot, path: str, env) -> Value:
        """The operands' low bytes as int8, summed exactly in i64 (|sums| <= 2**14 * K), then
        saturated to i32 as the tensor cores' ``.satfinite`` adds do (exact where no partial sum
        leaves i32, which the language asks of a kernel)."""
        shape = self.types[path].shape
        a = self.eval_as(e.lhs, child(path, "lhs"), env, "i32", self.types[child(path, "lhs")].shape)
        b = self.eval_as(e.rhs, child(path, "rhs"), env, "i32", self.types[child(path, "rhs")].shape)
        a, b = a.to(torch.int8).long(), b.to(torch.int8).long()
        out = torch.bmm(a, b)
        if e.acc is not None:
            out = out + self.eval_as(e.acc, child(path, "acc"), env, "i32", shape).long()
        return out.clamp(-2**31, 2**31 - 1).to(torch.int32)

    def _block(self, e, path: str, env) -> Value:
        t = self.types[child(path, "x")]
        x = self.eval(e.x, child(path, "x"), env)
        if isinstance(x, Pointer):
            return Pointer(self._reshape_one(e, path, self.expand(x.base, t.shape)),
                           self._reshape_one(e, path, self.expand(x.offset, t.shape)), x.buffer)
        return self._reshape_one(e, path, self.typed(x, t.dtype, t.shape))

    def _reshape_one(self, e, path: str, x: torch.Tensor) -> torch.Tensor:
        out = self.types[path]
        if isinstance(e, L.ExpandDims):
            return x.unsqueeze(e.axis + 1)
        if isinstance(e, L.Trans):
            dims = list(reversed(range(x.dim() - 1))) if e.dims is None else e.dims
            return x.permute(0, *[d + 1 for d in dims])
        if e.op == "reshape":
            return x.reshape((self.count,) + out.shape)
        return self.expand(x, out.shape)

    def _join(self, e: L.Join, path: str, env) -> Value:
        t, dtype = self.types[path], self.checked.operand_dtypes[path]
        a, b = (self.eval_as(getattr(e, f), child(path, f), env, dtype, t.shape[:-1]) for f in ("lhs", "rhs"))
        return torch.stack([a, b], dim=-1)

    _expanddims = _block
    _reshape = _block
    _trans = _block

    # -- memory -----------------------------------------------------------------------------

    def _hint(self, e: L.Hint, path: str, env) -> Value:
        """The identity, once the claim the compiler will trust holds on these values."""
        t = self.types[path]
        x = self.eval_as(e.x, child(path, "x"), env, t.dtype, t.shape)
        active = env.get(_ACTIVE)  # programs whose loop has ended do not run this on a GPU
        problem = violation(claim_of(e, t.shape), x if active is None else x[active])
        if problem is not None:
            raise InterpreterError(Diagnostic(path, "hint_violated", f"the hint is false: {problem}"))
        return x

    def lanes(self, path: str, what: str, ptr: Pointer, active: torch.Tensor | None) -> list[Lanes]:
        """The active lanes of an access by buffer, after checking every one (``active``: the
        lane mask, None when all are active)."""
        return select_lanes(ptr.base, ptr.offset, active, self.sizes, self.names, self.programs, path, what,
                            ptr.buffer)

    def active_mask(self, shape: Sequence[int], mask: L.Expr | None, path: str, env, active) -> torch.Tensor | None:
        """The lanes an access or histogram takes, of ``[programs, *shape]``: ``mask``'s, of the
        programs in ``active`` (None: all of them); None when every lane is taken."""
        lanes = None if mask is None else self.eval_as(mask, child(path, "mask"), env, "bool", shape)
        if active is not None:
            lanes = self.expand(active, shape) if lanes is None else lanes & self.expand(active, shape)
        return lanes

    def _tileload(self, e: L.TileLoad, path: str, env) -> Value:
        return self._load(tiles.as_load(e), child(path, tiles.AS_LOAD), env, where=path)

    def _load(self, e: L.Load, path: str, env, where: str | None = None) -> Value:
        """``where``: the path faults and races are reported at (a tile's, for its pointer form:
        then the access is a tile access)."""
        t = self.types[path]
        ptr = self.eval(e.ptr, child(path, "ptr"), env)
        ptr = self._materialize(ptr, t)
        lanes = self.active_mask(t.shape, e.mask, path, env, env.get(_ACTIVE))
        other = None if e.other is None else self.eval_as(e.other, child(path, "other"), env, t.dtype, t.shape)
        where = path if where is None else where
        selected = self.lanes(where, "load", ptr, lanes)
        dtype = torch_dtype(t.dtype)
        if len(selected) == 1 and selected[0].positions is None:
            out = None  # every lane loads: the gathered values are the block
        elif other is None:
            out = torch.zeros((self.count,) + t.shape, dtype=dtype)
        else:  # a fresh copy, written below (fp8 as bytes: torch lacks some fp8 kernels)
            out = bits_of(other).clone(memory_format=torch.contiguous_format)
            out = out if out.dtype == dtype else out.view(dtype)
        for sel in selected:
            if self.accesses is not None and not self.read_only[sel.index]:
                self.accesses.loaded(self.names[sel.index], sel.offsets, self.lane_programs(sel, t.shape), where,
                                     self.lane_numbers(sel, t.shape, path), tile=where != path,
                                     every=path in broadcast_loads_of(self.checked, self.plan.kernel.num_warps))
            if self.pipelines.loops and not self.read_only[sel.index]:
                self.pipelines.check(sel.index, self.lane_programs(sel, t.shape), sel.offsets, self.sizes[sel.index],
                                     self.names[sel.index], where)
            loaded = self.flat[sel.index][sel.offsets]
            loaded = loaded if loaded.dtype == dtype else loaded.to(dtype)
            if out is None:
                return loaded.view((self.count,) + t.shape)
            sel.put(bits_of(out), bits_of(loaded))
        return out

    def lane_programs(self, sel: Lanes, shape: Sequence[int]) -> torch.Tensor:
        """The linear program id of each of an access's lanes (of block ``shape``)."""
        return self.programs[sel.rows(self.count, math.prod(shape))]

    def lane_numbers(self, sel: Lanes, shape: Sequence[int], path: str) -> torch.Tensor:
        """Each of the lanes of the access at ``path`` as the barrier record numbers it
        (:mod:`kernelgen.interp.barrier`)."""
        return self.accesses.order.lanes(shape, sel.in_block(self.count, math.prod(shape)), path)

    def store(self, s: L.Store, path: str, env, where: str | None = None) -> None:
        """``where``: as :meth:`_load`'s."""
        ptr = self.eval(s.ptr, child(path, "ptr"), env)
        t = self.types[child(path, "ptr")]
        ptr = self._materialize(ptr, t)
        value = self.eval_as(s.value, child(path, "value"), env, t.dtype, t.shape)
        lanes = self.active_mask(t.shape, s.mask, path, env, env.get(_ACTIVE))
        where = path if where is None else where
        for sel in self.lanes(where, "store", ptr, lanes):
            if self.read_only[sel.index]:
                raise InterpreterError(Diagnostic(where, "store_to_input",
                                                  f"store into input {self.names[sel.index]!r}"))
            values = sel.take(bits_of(value.to(self.flat[sel.index].dtype)))  # fp8 as bytes: torch cannot index fp8
            if self.accesses is not None:
                self.accesses.stored(self.names[sel.index], sel.offsets, self.lane_programs(sel, t.shape), where,
                                     values, self.lane_numbers(sel, t.shape, path), tile=where != path)
            bits_of(self.flat[sel.index])[sel.offsets] = values
            if self.pipelines.loops:  # (the lanes' programs are not computed for every store otherwise)
                self.pipelines.stored(sel.index, self.lane_programs(sel, t.shape), sel.offsets, self.sizes[sel.index])

    def atomic(self, a: L.Atomic, path: str, env) -> None:
        """Each active lane's read-modify-write, in lane order (see :mod:`kernelgen.interp.atomics`)."""
        t = self.types[child(path, "ptr")]
        ptr = self.eval(a.ptr, child(path, "ptr"), env)
        ptr = self._materialize(ptr, t)
        val = self.eval_as(a.val, child(path, "val"), env, t.dtype, t.shape)
        cmp = None if a.cmp is None else self.eval_as(a.cmp, child(path, "cmp"), env, t.dtype, t.shape)
        lanes = self.active_mask(t.shape, a.mask, path, env, env.get(_ACTIVE))
        old = torch.zeros((self.count,) + t.shape, dtype=torch_dtype(t.dtype))
        for sel in self.lanes(path, a.op, ptr, lanes):
            if self.read_only[sel.index]:
                raise InterpreterError(Diagnostic(path, "store_to_input", f"{a.op} into input {self.names[sel.index]!r}"))
            values, compare = sel.take(val), None if cmp is None else sel.take(cmp)
            if self.accesses is not None:
                # An exchange whose old values are not bound is a store: it reads nothing.
                self.accesses.atomic(self.names[sel.index], sel.offsets, self.lane_programs(sel, t.shape), path,
                                     within_program=a.scope == "cta", op=a.op, values=values,
                                     reads=a.op != "atomic_xchg" or a.name is not None,
                                     compare=compare, sem=a.sem, bound=a.name is not None,
                                     lanes=self.lane_numbers(sel, t.shape, path), one_thread=math.prod(t.shape) == 1)
            block = math.prod(t.shape)
            sequence = None if self.order == LOCKSTEP or sel.offsets.numel() < 2 else self.order.sequence(
                sel.rows(self.count, block), sel.in_block(self.count, block), block)
            sel.put(old, apply_atomic(a.op, self.flat[sel.index], sel.offsets, values, compare, t.dtype,
                                      lambda: self.out_of_time(path), sequence))
            if self.pipelines.loops:  # (the lanes' programs are not computed for every store otherwise)
                self.pipelines.stored(sel.index, self.lane_programs(sel, t.shape), sel.offsets, self.sizes[sel.index])
        if a.name is not None:
            env[a.name] = old

    # -- statements -------------------------------------------------------------------------

    def out_of_time(self, path: str) -> None:
        """Stop when the time limit has run out (``timeout`` at ``path``). The CPU-time clock is a
        system call (0.7 us idle, more on a loaded machine: segment_sum_csr's one-row-per-step control
        made 1.1 million looks, 1.6 s of its 52 idle); it is read only once :data:`LOOK_EVERY_S`
        of the wall clock (a cheap one) has passed since the last look, and a thread's CPU time
        cannot grow faster than the wall clock, so the limit is still met within that much."""
        if self.deadline is None:
            return
        now = time.perf_counter()
        if now < self.next_look:
            return
        self.next_look = now + LOOK_EVERY_S
        if interpreter_clock() > self.deadline:
            raise InterpreterLimit(Diagnostic(path, "timeout", "the interpreter's time limit (the CPU time of its "
                                              "thread, whatever the machine's load) ran out here; the kernel does "
                                              "too much work for its sizes"))

    def block(self, stmts: list[L.Stmt], path: str, env: dict[str, Value]) -> None:
        paths = self.statement_paths.get(path)
        if paths is None:
            paths = self.statement_paths[path] = [child(path, i) for i in range(len(stmts))]
        for s, spath in zip(stmts, paths):
            self.out_of_time(spath)
            if isinstance(s, L.Let):
                value = self.evaluators.get(spath)  # a let's own path holds its value's evaluator
                if value is None:
                    value = self.evaluators[spath] = self.evaluator(s.value, child(spath, "value"))
                env[s.name] = value(self, env)
            elif isinstance(s, L.Store):
                self.store(s, spath, env)
            elif isinstance(s, L.TileStore):
                block = self.types[child(spath, "value")].shape
                self.store(tiles.as_store(s, block), child(spath, tiles.AS_STORE), env, where=spath)
            elif isinstance(s, L.If):
                self.branch(s, spath, env)
            elif isinstance(s, L.Atomic):
                self.atomic(s, spath, env)
            elif isinstance(s, L.For):
                self.loop(s, spath, env)
            else:  # a barrier: the active programs' earlier accesses are ordered
                self._barrier(env)

    def loop(self, f: L.For, path: str, env: dict[str, Value]) -> None:
        start, stop, step = (self.eval_as(getattr(f, n), child(path, n), env, "i64") for n in ("start", "stop", "step"))
        trips, most = trip_counts(start, stop, step, env.get(_ACTIVE), path)
        carry_types = {c.name: self.types[child(path, "carry", i, "name")] for i, c in enumerate(f.carry)}
        carries = {c.name: self._materialize(self.eval(c.init, child(path, "carry", i, "init"), env),
                                             carry_types[c.name])
                   for i, c in enumerate(f.carry)}
        pipelined = self.pipelines.enter(f, path, self.checked.kernel.num_stages)
        try:
            self._iterate(f, path, env, carries, carry_types, (start, step, trips), 0, most)
        finally:
            if pipelined:
                self.pipelines.exit()
        env.update(carries)

    def _iterate(self, f: L.For, path: str, env: dict[str, Value], carries: dict[str, Value],
                 carry_types: dict[str, ValueType], bounds: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
                 first: int, most: int) -> None:
        """Iterations ``first`` to ``most`` of loop ``f`` (``bounds``: each program's start, step
        and trips), updating ``carries``. Once at most one program in :data:`_FEW` still
        iterates (the last programs of a persistent loop, the few long rows of a ragged batch),
        those run the rest alone, as a branch few programs take does (:meth:`_run_alone`): the
        others' values no longer change, and computing their rows was most of the work."""
        start, step, trips = bounds
        uniform = all_true(trips == most)
        var_dtype = torch_dtype(self.types[child(path, "var")].dtype)
        for i in range(first, most):
            active = None if uniform else trips > i
            if active is not None and int(active.sum()) * _FEW <= self.count:
                rows = active.nonzero().flatten()
                sub, mine = self._subset(rows)
                alone = {name: mine(value) for name, value in carries.items()}
                sub._iterate(f, path, {name: mine(value) for name, value in env.items() if name != _ACTIVE}, alone,
                             carry_types, (start[rows], step[rows], trips[rows]), i, most)
                for name, t in carry_types.items():
                    carries[name] = self._select(active, self._at_rows(rows, alone[name], t), carries[name], t)
                return
            inner = dict(env)
            inner.update(carries)
            var = torch.add(start, step, alpha=i)  # start + i * step, in one call
            inner[f.var] = var if var.dtype == var_dtype else var.to(var_dtype)
            if active is not None:
                inner[_ACTIVE] = active  # trips > i only where the enclosing loop or branch is active
            if self.pipelines.loops and self.pipelines.loops[-1].path == path:
                self.pipelines.next_trip()
            self.block(f.body, child(path, "body"), inner)
            for j, c in enumerate(f.carry):
                t = carry_types[c.name]
                nxt = self._materialize(self.eval(c.next, child(path, "carry", j, "next"), inner), t)
                carries[c.name] = nxt if active is None else self._select(active, nxt, carries[c.name], t)

    def branch(self, s: L.If, path: str, env: dict[str, Value]) -> None:
        """Each program takes one branch: a branch runs for the programs (of those active)
        whose condition selects it, as a loop runs for those still iterating, and is skipped
        when none does; each result is then selected per program."""
        cond = self.eval_as(s.cond, child(path, "cond"), env, "bool")
        outer = env.get(_ACTIVE)
        types = [self.types[child(path, "results", i, "name")] for i in range(len(s.results))]
        taken: dict[str, list[Value]] = {}
        for side, stmts, chosen in (("then", s.then, cond), ("else", s.else_, ~cond)):
            active = chosen if outer is None else chosen & outer
            if not any_true(active):
                continue
            if int(active.sum()) * _FEW <= self.count:
                taken[side] = self._run_alone(active, s, side, stmts, types, path, env)
                continue
            inner = dict(env)
            if outer is not None or not all_true(active):
                inner[_ACTIVE] = active
            self.block(stmts, child(path, side), inner)
            taken[side] = [self._materialize(self.eval(r.then if side == "then" else r.else_,
                                                       child(path, "results", i, side), inner), t)
                           for i, (r, t) in enumerate(zip(s.results, types))]
        for i, (r, t) in enumerate(zip(s.results, types)):
            if len(taken) == 2:
                env[r.name] = self._select(cond, taken["then"][i], taken["else"][i], t)
            elif taken:
                env[r.name] = next(iter(taken.values()))[i]
            else:  # no program is active here: the value is never observed
                env[r.name] = self._materialize(0, t) if not t.pointer else Pointer(
                    torch.zeros((self.count,) + t.shape, dtype=torch.int64),
                    torch.zeros((self.count,) + t.shape, dtype=torch.int64))

    def _run_alone(self, active: torch.Tensor, s: L.If, side: str, stmts: list[L.Stmt], types: list[ValueType],
                   path: str, env: dict[str, Value]) -> list[Value]:
        """A branch few programs of the chunk take (the last program to arrive finishing a
        reduction), run by those programs alone, in the chunk's order: the same accesses and
        atomics as when run masked over every program, without computing every program's rows.
        Its results come back at those programs' rows (zeros elsewhere, never selected)."""
        rows = active.nonzero().flatten()
        sub, mine = self._subset(rows)
        inner = {name: mine(value) for name, value in env.items() if name != _ACTIVE}
        sub.block(stmts, child(path, side), inner)
        results = []
        for i, (r, t) in enumerate(zip(s.results, types)):
            value = sub._materialize(sub.eval(r.then if side == "then" else r.else_,
                                              child(path, "results", i, side), inner), t)
            results.append(self._at_rows(rows, value, t))
        return results

    def _subset(self, rows: torch.Tensor) -> tuple[_Run, Callable[[Value], Value]]:
        """This run over the chunk's ``rows`` alone (in the chunk's order), and the function
        taking a value of this run at those rows."""
        sub = copy.copy(self)
        sub.programs, sub.count, sub.constants = self.programs[rows], int(rows.numel()), {}
        g0, g1, _ = self.plan.grid
        sub.pid = (sub.programs % g0, (sub.programs // g0) % g1, sub.programs // (g0 * g1))

        def mine(value: Value) -> Value:
            if isinstance(value, Pointer):
                return Pointer(mine(value.base), mine(value.offset), value.buffer)
            return value[rows] if isinstance(value, torch.Tensor) and value.dim() and value.shape[0] == self.count \
                else value

        return sub, mine

    def _at_rows(self, rows: torch.Tensor, value: Value, t: ValueType) -> Value:
        if isinstance(value, Pointer):
            return Pointer(self._at_rows(rows, value.base, t), self._at_rows(rows, value.offset, t))
        full = torch.zeros((self.count,) + t.shape, dtype=value.dtype)
        full[rows] = value
        return full

    def _materialize(self, value: Value, t: ValueType) -> Value:
        if isinstance(value, Pointer):
            return Pointer(self.expand(value.base, t.shape), self.expand(value.offset, t.shape), value.buffer)
        return self.typed(value, t.dtype, t.shape)

    def _select(self, active: torch.Tensor, new: Value, old: Value, t: ValueType) -> Value:
        mask = self.expand(active, t.shape)
        if isinstance(new, Pointer):
            return Pointer(torch.where(mask, new.base, old.base), torch.where(mask, new.offset, old.offset),
                           new.buffer if new.buffer == old.buffer else None)
        return torch.where(mask, new, old)

    def initial_env(self) -> dict[str, Value]:
        """The values every program starts with: its params and the meta-parameters."""
        env: dict[str, Value] = {}
        for binding, value in zip(self.checked.params, self.plan.param_values):
            if binding.tensor is not None:
                index = self.names.index(binding.tensor)
                env[binding.name] = Pointer(torch.full((self.count,), index, dtype=torch.int64), self.origin, index)
            else:
                env[binding.name] = self.typed(value, binding.type.dtype)
        for name, value in self.checked.meta.items():
            env[name] = self.typed(value, "i32")
        return env

    def run(self) -> None:
        self.block(self.checked.kernel.body, "/body", self.initial_env())


# A branch taken by at most one program in this many of a chunk runs by those programs alone.
_FEW = 4


_ACTIVE = "\0active"  # the programs still iterating a loop with per-program trip counts, or in a branch
