"""The reference interpreter: the meaning of every construct, written once, in torch on the CPU.

It runs a kernel's whole grid at once: every value carries a leading *program* axis (one row
per program instance), so an elementwise kernel over a million elements is a handful of torch
operations, not a Python loop over a thousand programs. Programs run in chunks to bound memory;
stores happen in program order within a chunk, which is one of the orders a GPU may choose.
Kernels whose programs race on one element have no single meaning, so the interpreter records
which program wrote and read each output element (:mod:`kernelgen.accesses`) and fails a race;
the same record says which elements no store wrote. Before running, the work a launch needs is
estimated and refused past a budget (:mod:`kernelgen.budget`); while running, a wall-clock
limit applies. Both end in ``timeout``, as a launch past its time limit does on a GPU.

Semantics, where Triton leaves a choice or a subtlety:

* integer ``idiv`` rounds toward zero and ``rem`` takes the dividend's sign (C, not Python);
  an integer division by zero gives 0 (the GPU gives garbage; the kernel is wrong either way);
* integer arithmetic wraps around (two's complement), and an integer literal outside its
  dtype's range wraps the same way (2**31 as an i32 is -2**31);
* within one launch an output element may be stored by one program only (which may store it
  again), and an element one program stores may not be loaded or atomically updated by
  another program, nor one programs update atomically stored or loaded by another (``race``,
  naming both programs and the element; :mod:`kernelgen.accesses`); masked-off lanes do not
  count;
* atomics run lane after lane in program order (:mod:`kernelgen.atomics`): integer results are
  exact, a float add is summed in f64 and rounded, the order-independent answer;
* every output element must be written (stored or atomically updated) by some program
  (``unwritten``), whatever its dtype, unless the output declares an ``init`` fill;
* an ``if`` runs each branch for the programs whose condition takes it (as a loop runs for
  the programs still iterating): the other programs' loads, stores and hints there do not
  happen; each result is the taken branch's value, per program;
* a masked load without ``other`` reads 0 (false) in masked-off lanes;
* comparisons are ordered (false with NaN) except ``ne``, which is true with NaN;
* ``maximum``/``minimum`` and the ``max``/``min`` reductions propagate NaN, as in PyTorch;
* ``argmax``/``argmin`` return the first index of the extremum;
* a float cast to an integer truncates toward zero, saturates at the integer's range and
  sends NaN to 0 (as the GPU's conversion does);
* ``dot`` accumulates in f32 (f16 when asked), ``tf32`` rounds f32 operands to 10-bit mantissas;
* ``fma`` rounds once (f64: within an ulp of it, exact where the sum cancels);
* every active lane of a load or store must lie inside its tensor, or the interpreter stops
  with an ``out_of_bounds`` error that names the node, the program and the offset;
* a launch must do work in proportion to its data: one whose programs x block elements x loop
  iterations are past the interpreter's budget is refused before it runs (``over_budget``),
  and one that runs past the time limit is stopped (``timeout``), as on a GPU.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence, Union

import torch

from kernelgen import interpret_blocks
from kernelgen import language as L
from kernelgen.accesses import AccessLog
from kernelgen.atomics import AtomicMemory, apply_atomic
from kernelgen.budget import check_budget
from kernelgen import philox, tiles
from kernelgen.check import FLOAT_DTYPES, CheckedKernel, ValueType, child, is_literal, literal_value
from kernelgen.checked import FP8_DTYPES, Checked
from kernelgen.errors import Diagnostic, InterpreterError, InterpreterLimit, KernelgenError
from kernelgen.hints import claim_of, violation
from kernelgen.host import LaunchPlan, plan_launch, plan_sequence, torch_dtype
from kernelgen.sequence import relocated

# The interpreter holds at most about this many elements per live value.
CHUNK_ELEMENTS = 1 << 22
MAX_LOOP_ITERATIONS = 1 << 20


def poison(dtype: str) -> Union[float, int, bool]:
    """The value outputs are pre-filled with, so an element no store writes is noticed."""
    if dtype in FLOAT_DTYPES or dtype in FP8_DTYPES:
        return math.nan
    if dtype == "bool":
        return True
    return torch.iinfo(torch_dtype(dtype)).min


def initial_fill(out: L.Output) -> Union[float, int, bool]:
    """What an output starts as before a launch: its declared ``init`` (the value atomics
    accumulate onto), else the poison (of a concrete dtype: a plan's kernel is one)."""
    if out.init is None:
        return poison(out.dtype)
    return literal_value(out.init)


def allocate_outputs(plan: LaunchPlan, device: Union[str, torch.device] = "cpu") -> dict[str, torch.Tensor]:
    return {out.name: torch.full(plan.output_shapes[out.name], initial_fill(out),
                                 dtype=torch_dtype(out.dtype), device=device)
            for out in plan.kernel.outputs}


def allocate_scratch(checked: Checked, plan: LaunchPlan,
                     device: Union[str, torch.device] = "cpu") -> dict[str, torch.Tensor]:
    """A program's scratch tensors for one call (``plan``: any launch's; they share the host
    values, and its kernel has the scratch's concrete dtypes): zeros where declared ``zero``,
    else poison-filled as outputs are."""
    declared = {s.name: s.zero for s in checked.kernel.scratch}
    return {out.name: torch.full(plan.output_shapes[out.name], 0 if declared[out.name] else poison(out.dtype),
                                 dtype=torch_dtype(out.dtype), device=device)
            for out in plan.kernel.outputs if out.name in declared}


@dataclass
class Pointer:
    """A block of pointers: which buffer each lane points into, and the element offset."""

    base: torch.Tensor
    offset: torch.Tensor


Value = Union[torch.Tensor, Pointer, bool, int, float]


def _round_tf32(x: torch.Tensor) -> torch.Tensor:
    bits = x.contiguous().view(torch.int32)
    rounded = (bits + 0x1000) & ~0x1FFF
    return torch.where(torch.isfinite(x), rounded.view(torch.float32), x)


def constant_as(value: Union[bool, int, float], dtype: str) -> Union[bool, int, float]:
    """A Python number as ``dtype`` holds it: integers wrap around (two's complement), floats
    out of a narrow dtype's range round to infinity (as a constant does on the GPU); torch
    would refuse both."""
    if dtype == "bool":
        return bool(value)
    if dtype in ("i32", "i64"):
        if isinstance(value, float):
            return value
        bits = 32 if dtype == "i32" else 64
        return (int(value) + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**1024:
        return math.inf if value > 0 else -math.inf
    return float(torch.tensor(float(value), dtype=torch.float64).to(torch_dtype(dtype)))


class _Run:
    """One chunk of programs (``programs``: their linear ids), run statement by statement.

    ``accesses`` records the chunk's output accesses for the race detector (None while the
    budget estimate evaluates loop bounds); ``deadline`` is a ``time.monotonic()`` value."""

    def __init__(self, plan: LaunchPlan, buffers: dict[str, torch.Tensor], programs: torch.Tensor,
                 accesses: AccessLog | None = None, deadline: float | None = None,
                 memory: AtomicMemory | None = None) -> None:
        self.plan = plan
        self.checked: CheckedKernel = plan.checked
        self.types = self.checked.types
        self.names = list(buffers)
        self.flat = [buffers[n].view(-1) for n in self.names]
        self.read_only = [n in plan.inputs for n in self.names]
        self.count = programs.numel()
        g0, g1, _ = plan.grid
        self.programs = programs
        self.pid = (programs % g0, (programs // g0) % g1, programs // (g0 * g1))
        self.accesses = accesses
        self.deadline = deadline
        self.memory = memory if memory is not None else AtomicMemory()

    # -- values -----------------------------------------------------------------------------

    def typed(self, value: Value, dtype: str, shape: Sequence[int] | None = None) -> torch.Tensor:
        """A value as a tensor of ``dtype`` with the program axis, broadcast to ``shape``."""
        if isinstance(value, torch.Tensor):
            out = value.to(torch_dtype(dtype))
        else:
            out = torch.full((self.count,), constant_as(value, dtype), dtype=torch_dtype(dtype))
        if shape is not None:
            out = self.expand(out, shape)
        return out

    def expand(self, value: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
        """Broadcast a per-program value to ``[programs, *shape]`` (NumPy rules on the block)."""
        block = value.shape[1:]
        missing = len(shape) - len(block)
        if missing:
            value = value.reshape((value.shape[0],) + (1,) * missing + tuple(block))
        return value.expand((self.count,) + tuple(shape))

    def eval(self, e: L.Expr, path: str, env: dict[str, Value]) -> Value:
        if is_literal(e):
            return literal_value(e)
        if isinstance(e, str):
            return env[e]
        return getattr(self, f"_{type(e).__name__.lower()}")(e, path, env)

    def eval_as(self, e: L.Expr, path: str, env: dict[str, Value], dtype: str,
                shape: Sequence[int] | None = None) -> torch.Tensor:
        return self.typed(self.eval(e, path, env), dtype, shape)

    def _programid(self, e: L.ProgramId, path: str, env) -> Value:
        if e.op == "program_id":
            return self.pid[e.axis].to(torch.int32)
        return torch.full((self.count,), self.plan.grid[e.axis], dtype=torch.int32)

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

    def _binary(self, e: L.Binary, path: str, env) -> Value:
        t = self.types[path]
        if t.pointer:
            return self.pointer_arith(e, path, env)
        dtype = self.checked.operand_dtypes[path]
        a = self.eval_as(e.lhs, child(path, "lhs"), env, dtype)
        b = self.eval_as(e.rhs, child(path, "rhs"), env, dtype)
        a, b = self.expand(a, t.shape), self.expand(b, t.shape)
        if e.op in ("idiv", "cdiv", "rem") and dtype in ("i32", "i64"):
            # Division by zero gives 0; by -1 it is negation (wrapping: the CPU's own division
            # of the minimum integer by -1 traps and kills the process).
            zero, minus_one = b == 0, b == -1
            safe = torch.where(zero | minus_one, torch.ones_like(b), b)
            if e.op == "rem":
                out = torch.where(minus_one, torch.zeros_like(a), torch.fmod(a, safe))
            else:
                if e.op == "cdiv":
                    a = a + b - 1  # cdiv(a, b) is (a + b - 1) / b, rounded toward zero
                out = torch.where(minus_one, -a, torch.div(a, safe, rounding_mode="trunc"))
            return torch.where(zero, torch.zeros_like(out), out)
        if e.op == "umulhi":
            return philox.umulhi(a, b)
        if e.op in L.BIT_OPS:
            return philox.shift(e.op, a, b)
        return _BINARY[e.op](a, b).to(torch_dtype(t.dtype))

    def pointer_arith(self, e: L.Binary, path: str, env) -> Pointer:
        t = self.types[path]
        lhs = self.eval(e.lhs, child(path, "lhs"), env)
        rhs = self.eval(e.rhs, child(path, "rhs"), env)
        ptr, off = (lhs, rhs) if isinstance(lhs, Pointer) else (rhs, lhs)
        offset = self.typed(off, "i64")
        if e.op == "sub":
            offset = -offset
        return Pointer(self.expand(ptr.base, t.shape), self.expand(ptr.offset, t.shape) + self.expand(offset, t.shape))

    def _where(self, e: L.Where, path: str, env) -> Value:
        t = self.types[path]
        cond = self.eval_as(e.cond, child(path, "cond"), env, "bool", t.shape)
        if t.pointer:
            x, y = self.eval(e.x, child(path, "x"), env), self.eval(e.y, child(path, "y"), env)
            return Pointer(torch.where(cond, self.expand(x.base, t.shape), self.expand(y.base, t.shape)),
                           torch.where(cond, self.expand(x.offset, t.shape), self.expand(y.offset, t.shape)))
        dtype = self.checked.operand_dtypes[path]
        x = self.eval_as(e.x, child(path, "x"), env, dtype, t.shape)
        y = self.eval_as(e.y, child(path, "y"), env, dtype, t.shape)
        return torch.where(cond, x, y)

    def _fma(self, e: L.Fma, path: str, env) -> Value:
        t = self.types[path]
        x, y, z = (self.eval_as(getattr(e, f), child(path, f), env, t.dtype, t.shape).double() for f in "xyz")
        if t.dtype == "f64":
            return _fma_f64(x, y, z)
        return (x * y + z).to(torch_dtype(t.dtype))

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
        if x.is_floating_point() and e.dtype in ("i32", "i64"):
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
        return out

    def _scan(self, e: L.Scan, path: str, env) -> Value:
        t = self.types[path]
        return interpret_blocks.scan(e.op, self.eval_as(e.x, child(path, "x"), env, t.dtype, t.shape), e.axis, e.reverse)

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
                           self._reshape_one(e, path, self.expand(x.offset, t.shape)))
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

    def lanes(self, path: str, what: str, ptr: Pointer, active: torch.Tensor) -> list[tuple[int, torch.Tensor]]:
        """The (buffer, lane mask) pairs of an access, after checking every active lane."""
        groups = []
        if not active.any():
            return groups
        first = ptr.base.reshape(-1)[0]
        # Most pointer blocks point into one tensor: skip the sort torch.unique would do.
        indices = [int(first)] if bool((ptr.base == first).all()) else torch.unique(ptr.base[active]).tolist()
        for index in indices:
            lanes = active & (ptr.base == index)
            numel = self.flat[index].numel()
            bad = lanes & ((ptr.offset < 0) | (ptr.offset >= numel))
            if bad.any():
                where = bad.nonzero()[0].tolist()
                program = int(self.programs[where[0]])
                offset = int(ptr.offset[tuple(where)])
                raise InterpreterError(Diagnostic(
                    path, "out_of_bounds",
                    f"{what} at offset {offset} of {self.names[index]!r}, which has {numel} elements "
                    f"(program {program}, lane {where[1:]})"))
            groups.append((index, lanes))
        return groups

    def active_mask(self, shape: Sequence[int], mask: L.Expr | None, path: str, env, active) -> torch.Tensor:
        lanes = torch.ones((self.count,) + tuple(shape), dtype=torch.bool)
        if mask is not None:
            lanes = lanes & self.eval_as(mask, child(path, "mask"), env, "bool", shape)
        if active is not None:
            lanes = lanes & self.expand(active, shape)
        return lanes

    def _tileload(self, e: L.TileLoad, path: str, env) -> Value:
        return self._load(tiles.as_load(e), child(path, tiles.AS_LOAD), env, where=path)

    def _load(self, e: L.Load, path: str, env, where: str | None = None) -> Value:
        """``where``: the path faults and races are reported at (a tile's, for its pointer form)."""
        t = self.types[path]
        ptr = self.eval(e.ptr, child(path, "ptr"), env)
        ptr = Pointer(self.expand(ptr.base, t.shape), self.expand(ptr.offset, t.shape))
        lanes = self.active_mask(t.shape, e.mask, path, env, env.get(_ACTIVE))
        if e.other is not None:
            out = self.eval_as(e.other, child(path, "other"), env, t.dtype, t.shape).clone()
        else:
            out = torch.zeros((self.count,) + t.shape, dtype=torch_dtype(t.dtype))
        where = path if where is None else where
        for index, sel in self.lanes(where, "load", ptr, lanes):
            offsets = ptr.offset[sel]
            if self.accesses is not None and not self.read_only[index]:
                self.accesses.loaded(self.names[index], offsets, self.lane_programs(sel), where)
            _bits(out)[sel] = _bits(self.flat[index][offsets].to(out.dtype))
        return out

    def lane_programs(self, sel: torch.Tensor) -> torch.Tensor:
        """The linear program id of each selected lane (in ``tensor[sel]`` order)."""
        return self.programs.view((self.count,) + (1,) * (sel.dim() - 1)).expand(sel.shape)[sel]

    def store(self, s: L.Store, path: str, env, where: str | None = None) -> None:
        """``where``: as :meth:`_load`'s."""
        ptr = self.eval(s.ptr, child(path, "ptr"), env)
        t = self.types[child(path, "ptr")]
        ptr = Pointer(self.expand(ptr.base, t.shape), self.expand(ptr.offset, t.shape))
        value = self.eval_as(s.value, child(path, "value"), env, t.dtype, t.shape)
        lanes = self.active_mask(t.shape, s.mask, path, env, env.get(_ACTIVE))
        where = path if where is None else where
        for index, sel in self.lanes(where, "store", ptr, lanes):
            if self.read_only[index]:
                raise InterpreterError(Diagnostic(where, "store_to_input",
                                                  f"store into input {self.names[index]!r}"))
            offsets = ptr.offset[sel]
            if self.accesses is not None:
                self.accesses.stored(self.names[index], offsets, self.lane_programs(sel), where)
            _bits(self.flat[index])[offsets] = _bits(value.to(self.flat[index].dtype))[sel]

    def atomic(self, a: L.Atomic, path: str, env) -> None:
        """Each active lane's read-modify-write, in lane order (see :mod:`kernelgen.atomics`)."""
        t = self.types[child(path, "ptr")]
        ptr = self.eval(a.ptr, child(path, "ptr"), env)
        ptr = Pointer(self.expand(ptr.base, t.shape), self.expand(ptr.offset, t.shape))
        val = self.eval_as(a.val, child(path, "val"), env, t.dtype, t.shape)
        cmp = None if a.cmp is None else self.eval_as(a.cmp, child(path, "cmp"), env, t.dtype, t.shape)
        lanes = self.active_mask(t.shape, a.mask, path, env, env.get(_ACTIVE))
        old = torch.zeros((self.count,) + t.shape, dtype=torch_dtype(t.dtype))
        for index, sel in self.lanes(path, a.op, ptr, lanes):
            if self.read_only[index]:
                raise InterpreterError(Diagnostic(path, "store_to_input", f"{a.op} into input {self.names[index]!r}"))
            offsets = ptr.offset[sel]
            if self.accesses is not None:
                self.accesses.atomic(self.names[index], offsets, self.lane_programs(sel), path,
                                     within_program=a.scope == "cta")
            old[sel] = apply_atomic(a.op, self.flat[index], offsets, val[sel], None if cmp is None else cmp[sel],
                                    self.memory, index, t.dtype)
        if a.name is not None:
            env[a.name] = old

    # -- statements -------------------------------------------------------------------------

    def block(self, stmts: list[L.Stmt], path: str, env: dict[str, Value]) -> None:
        for i, s in enumerate(stmts):
            spath = child(path, i)
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise InterpreterLimit(Diagnostic(spath, "timeout", "the interpreter's wall-clock limit ran out "
                                                  "here; the kernel does too much work for its sizes"))
            if isinstance(s, L.Let):
                env[s.name] = self.eval(s.value, child(spath, "value"), env)
            elif isinstance(s, L.Store):
                self.store(s, spath, env)
            elif isinstance(s, L.TileStore):
                block = self.types[child(spath, "value")].shape
                self.store(tiles.as_store(s, block), child(spath, tiles.AS_STORE), env, where=spath)
            elif isinstance(s, L.If):
                self.branch(s, spath, env)
            elif isinstance(s, L.Atomic):
                self.atomic(s, spath, env)
            else:
                self.loop(s, spath, env)

    def loop(self, f: L.For, path: str, env: dict[str, Value]) -> None:
        var_dtype = self.types[child(path, "var")].dtype
        start, stop, step = (self.eval_as(getattr(f, n), child(path, n), env, "i64") for n in ("start", "stop", "step"))
        if (step <= 0).any():
            raise InterpreterError(Diagnostic(child(path, "step"), "bad_loop",
                                              f"loop step must be positive, got {int(step.min())}"))
        trips = torch.clamp(torch.div(stop - start + step - 1, step, rounding_mode="floor"), min=0)
        outer_active = env.get(_ACTIVE)
        if outer_active is not None:
            trips = torch.where(outer_active, trips, torch.zeros_like(trips))
        most = int(trips.max()) if trips.numel() else 0
        if most > MAX_LOOP_ITERATIONS:
            raise InterpreterError(Diagnostic(child(path, "stop"), "bad_loop",
                                              f"a loop of {most} iterations is beyond the interpreter's limit"))
        uniform = bool((trips == most).all())
        carry_types = {c.name: self.types[child(path, "carry", i, "name")] for i, c in enumerate(f.carry)}
        carries = {c.name: self._materialize(self.eval(c.init, child(path, "carry", i, "init"), env),
                                             carry_types[c.name])
                   for i, c in enumerate(f.carry)}
        for i in range(most):
            inner = dict(env)
            inner.update(carries)
            inner[f.var] = (start + i * step).to(torch_dtype(var_dtype))
            active = None if uniform else trips > i
            if active is not None:
                inner[_ACTIVE] = active if outer_active is None else active & outer_active
            self.block(f.body, child(path, "body"), inner)
            for j, c in enumerate(f.carry):
                t = carry_types[c.name]
                nxt = self._materialize(self.eval(c.next, child(path, "carry", j, "next"), inner), t)
                carries[c.name] = nxt if active is None else self._select(active, nxt, carries[c.name], t)
        env.update(carries)

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
            if not active.any():
                continue
            inner = dict(env)
            if outer is not None or not active.all():
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

    def _materialize(self, value: Value, t: ValueType) -> Value:
        if isinstance(value, Pointer):
            return Pointer(self.expand(value.base, t.shape), self.expand(value.offset, t.shape))
        return self.typed(value, t.dtype, t.shape)

    def _select(self, active: torch.Tensor, new: Value, old: Value, t: ValueType) -> Value:
        mask = self.expand(active, t.shape)
        if isinstance(new, Pointer):
            return Pointer(torch.where(mask, new.base, old.base), torch.where(mask, new.offset, old.offset))
        return torch.where(mask, new, old)

    def initial_env(self) -> dict[str, Value]:
        """The values every program starts with: its params and the meta-parameters."""
        env: dict[str, Value] = {}
        for binding, value in zip(self.checked.params, self.plan.param_values):
            if binding.tensor is not None:
                index = self.names.index(binding.tensor)
                env[binding.name] = Pointer(torch.full((self.count,), index, dtype=torch.int64),
                                            torch.zeros(self.count, dtype=torch.int64))
            else:
                env[binding.name] = self.typed(value, binding.type.dtype)
        for name, value in self.checked.meta.items():
            env[name] = self.typed(value, "i32")
        return env

    def run(self) -> None:
        self.block(self.checked.kernel.body, "/body", self.initial_env())


_ACTIVE = "\0active"  # the programs still iterating a loop with per-program trip counts, or in a branch


def _bits(x: torch.Tensor) -> torch.Tensor:
    """fp8 tensors as their bytes, where torch lacks fp8 kernels (masked_fill); others as they are."""
    return x.view(torch.uint8) if x.dtype in (torch.float8_e4m3fn, torch.float8_e5m2) else x


def _fma_f64(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """``x * y + z`` of f64 tensors nearly rounded once (f64 has no wider type to compute in):
    the product as the exact sum ``p + e`` (Dekker), ``p + z`` as the exact sum ``s + t``
    (Knuth), then ``s + (t + e)``: within an ulp of the fma, and exact where ``p + z`` cancels."""
    p = x * y
    split = 134217729.0  # 2**27 + 1

    def halves(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        c = split * a
        high = c - (c - a)
        return high, a - high

    (xh, xl), (yh, yl) = halves(x), halves(y)
    e = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl
    s = p + z
    b = s - p
    t = (p - (s - b)) + (z - b)
    compensated = s + (t + e)
    return torch.where(torch.isfinite(compensated), compensated, s)


def _sigmoid(x: torch.Tensor) -> torch.Tensor:
    return 1.0 / (1.0 + torch.exp(-x))


def _exp2_ftz(x: torch.Tensor) -> torch.Tensor:
    """exp2 with results below the smallest normal f32 (2**-126) flushed to 0, as
    ex2.approx.ftz.f32 gives them (NaN stays NaN: it compares false)."""
    result = torch.exp2(x)
    return result.masked_fill(result < 2.0**-126, 0.0)


_UNARY = {
    "exp": torch.exp, "exp2": torch.exp2, "exp2_ftz": _exp2_ftz, "log": torch.log, "log2": torch.log2, "log1p": torch.log1p,
    "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "tanh": torch.tanh, "sigmoid": _sigmoid, "erf": torch.erf,
    "sin": torch.sin, "cos": torch.cos, "abs": torch.abs, "neg": torch.neg, "floor": torch.floor,
    "ceil": torch.ceil, "not": torch.logical_not,
}

_BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "rem": torch.fmod,
    "pow": torch.pow, "maximum": torch.maximum, "minimum": torch.minimum,
    "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
    "and": torch.bitwise_and, "or": torch.bitwise_or, "xor": torch.bitwise_xor,
}


def _max_block_numel(checked: CheckedKernel) -> int:
    return max((max(t.numel, 1) for t in checked.types.values()), default=1)


@dataclass
class Execution:
    """A launch's outputs and, per output, where some program stored (a bool tensor)."""

    outputs: dict[str, torch.Tensor]
    written: dict[str, torch.Tensor]
    # Per output some program loaded from: where one did (a bool tensor of its shape).
    read: dict[str, torch.Tensor] = field(default_factory=dict)


def execute(plan: LaunchPlan, outputs: Mapping[str, torch.Tensor] | None = None,
            timeout_s: float | None = None) -> Execution:
    """Run every program of the grid on the CPU, after the budget check and under a wall-clock
    limit of ``timeout_s`` (none when None); the outputs are poison-filled first."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    outs = dict(outputs) if outputs is not None else allocate_outputs(plan)
    buffers: dict[str, torch.Tensor] = {}
    for inp in plan.kernel.inputs:
        if inp.name in plan.inputs:
            buffers[inp.name] = plan.inputs[inp.name].detach().cpu().contiguous()
    for name, tensor in outs.items():
        if not tensor.is_contiguous():
            raise InterpreterError(Diagnostic("/outputs", "bad_arguments", f"output {name} is not contiguous"))
        buffers[name] = tensor
    total = plan.num_programs
    accesses = AccessLog(outs, plan.grid, initialised={out.name for out in plan.kernel.outputs if out.init is not None})
    memory = AtomicMemory()  # float atomic adds' f64 sums, across chunks
    chunk = max(1, CHUNK_ELEMENTS // _max_block_numel(plan.checked))
    with torch.no_grad():
        if total:
            ends = torch.tensor([0, total - 1], dtype=torch.int64).unique()
            check_budget(plan, _Run(plan, buffers, ends), -(-total // chunk))
        for first in range(0, total, chunk):
            programs = torch.arange(first, min(first + chunk, total), dtype=torch.int64)
            _Run(plan, buffers, programs, accesses, deadline, memory).run()
    return Execution(outs, accesses.written(), accesses.read())


def execute_sequence(checked: Checked, plans: Sequence[LaunchPlan], timeout_s: float | None = None) -> Execution:
    """Run a document's launches in order on shared tensors (:mod:`kernelgen.sequence`):
    outputs and scratch are allocated once, poison-filled (a ``zero`` scratch with zeros); each
    launch is judged for races and bounds alone; across the sequence, a launch that loads an
    element no launch up to it wrote (nor zero-filled) fails with ``read_before_write``, and an
    output element is written when any launch wrote it. ``timeout_s`` covers the whole sequence."""
    kernel = checked.kernel
    if not kernel.is_program:
        return execute(plans[0], timeout_s=timeout_s)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    outputs = [o.name for o in kernel.outputs]
    buffers = {n: t for n, t in allocate_outputs(plans[0]).items() if n in outputs}
    buffers |= allocate_scratch(checked, plans[0])
    zero = {s.name for s in kernel.scratch if s.zero}
    written = {n: torch.full(t.shape, n in zero, dtype=torch.bool) for n, t in buffers.items()}
    for i, plan in enumerate(plans):
        left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        try:
            run = execute(plan, buffers, left)
        except KernelgenError as error:
            raise relocated(kernel, i, error) from None
        for name, read in run.read.items():
            unwritten = read & ~(written[name] | run.written[name])
            if bool(unwritten.any()):
                element = unwritten.nonzero()[0].tolist()
                raise InterpreterError(Diagnostic(
                    f"/launches/{i}", "read_before_write",
                    f"launch {i} ({plan.kernel.name}) loads {name}{element}, which no launch up to it wrote"
                    + ("" if name in outputs else " (declare the scratch zero, or write it first)")))
        for name, mask in run.written.items():
            written[name] |= mask
    return Execution({n: buffers[n] for n in outputs}, {n: written[n] for n in outputs})


def execute_call(checked: Checked, args: Union[Sequence[Any], Mapping[str, Any]],
                 timeout_s: float | None = None) -> Execution:
    """A checked document (one kernel or a program) run on a call's arguments."""
    return execute_sequence(checked, plan_sequence(checked, args), timeout_s)


def run_plan(plan: LaunchPlan, outputs: Mapping[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
    """Run every program of the grid on the CPU; return the outputs (poison-filled first)."""
    return execute(plan, outputs).outputs


def interpret(checked: Checked, args: Union[Sequence[Any], Mapping[str, Any]]) -> dict[str, torch.Tensor]:
    """Run a checked kernel or program on a call's arguments (CPU torch tensors and scalars)."""
    return execute_call(checked, args).outputs
