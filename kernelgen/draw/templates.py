"""The kernel generator's templates: the kernel shapes :func:`kernelgen.draw.strategies.kernels`
draws from (elementwise, tile, rows, dot, 3-D grid, operations across a block), each laying out
the host side (:class:`_Spec`), the loads, stores and atomics that keep memory accesses safe
and every output written once (rules 1 and 7 of :mod:`kernelgen.draw.strategies`), and filling
the body with :class:`kernelgen.draw.expressions._Gen`.

Kept apart from the expression drawing, which is the bulk of the generator; the draw order of
the code moved here is unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from hypothesis import strategies as st

from kernelgen.draw.bits import FP8_DTYPES
from kernelgen.draw.expressions import _Gen
from kernelgen.draw.kernel import (INPUT_FLOAT_BOUND, INPUT_INT_HIGH, INPUT_INT_LOW, SAFETY, SCALAR_FLOAT_BOUND,
                                   SCALAR_INT_BOUND, GeneratedKernel, Tolerance, comparison_tolerance)
from kernelgen.draw.values import (ALL_DTYPES, EPS, FLOAT_DTYPES, INT_DTYPES, INT_LIMIT, NUMBER_DTYPES, TF32_EPS, Val,
                                   let, op, rounding)
from kernelgen.lang.parse import kernel_from_obj


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


def _tile(base: str, shape: list[Any], block: list[Any], offsets: list[Any]) -> dict[str, Any]:
    """A tile of a row-major tensor (kernelgen.check.tile_access)."""
    return op("tile_load", base=base, shape=shape, strides=[shape[1], 1], block=block, offsets=offsets)


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
    if g.chance(20):
        _aliased(g, spec, block)
    if g.chance(25):
        _exchanged(g, spec, block, size)


def _aliased(g: _Gen, spec: _Spec, block: int) -> None:
    """An output that is an input's memory (Output ``alias``, no param for the input): each
    program loads its block of it (the input's values) and stores into the lanes a predicate
    picks; the others keep the input's values, which both sides must leave there."""
    dtype = _tensor_dtype(g)
    spec.inputs.append({"name": "xa", "dtype": dtype, "shape": ["N"]})
    spec.output("ya", dtype, ["N"])
    spec.outputs[-1].update(into="xa", alias=True)
    ptr = op("add", lhs="ya", rhs="offsets")
    g.bind(_loaded(op("load", ptr=ptr, mask="in_bounds"), dtype, (block,)), "ya_")
    _store(g, spec, "ya", dtype, (block,), ptr, op("and", lhs="in_bounds", rhs=g.boolean((block,), 2).expr))


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


def _program_ids_as(by_axis: dict[int, Any], node: Any) -> Any:
    """``node`` with each program id replaced by ``by_axis[its axis]``: a grid's body made the body
    of a loop that walks its blocks (it reads no grid size, and no other axis, to remap)."""
    if isinstance(node, dict):
        assert node.get("op") != "num_programs" and (node.get("op") != "program_id" or node.get("axis", 0) in by_axis)
        if node.get("op") == "program_id":
            return by_axis[node.get("axis", 0)]
        return {key: _program_ids_as(by_axis, value) for key, value in node.items()}
    return [_program_ids_as(by_axis, value) for value in node] if isinstance(node, list) else node


@st.composite
def elementwise_kernels(draw: Callable[[st.SearchStrategy], Any]) -> GeneratedKernel:
    """1-D kernels over N elements: one block per program, or a grid-stride loop in which the
    programs run different numbers of iterations and each stores a carried partial result (or,
    over a grid of num_sms programs, only the elementwise outputs)."""
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

    # A persistent grid of the GPU's SMs (num_sms: 3 in the interpreter, 132 on an H200) stores no
    # per-program partial: their number is the GPU's, and outputs may not depend on it.
    persistent = g.chance(25)
    grid = op("minimum", lhs=blocks, rhs=op("num_sms") if persistent else programs)
    block_count = -(-n // block)
    trips = -(-block_count // min(programs, block_count))  # the most iterations a program runs
    g.stmts.append(let("pid", op("program_id")))
    # Which program runs a block, and how many there are, is the GPU's under num_sms: neither is a
    # value there, and a branch on the program id reads the block's index instead.
    ids = [] if persistent else [Val("pid", "i32", (), n), Val(op("num_programs"), "i32", (), programs)]
    body = g.nested(*ids, Val("start", "i32", (), n), Val("offsets", "i32", (block,), n + block),
                    Val("in_bounds", "bool", (block,)))
    body.stmts += [let("offsets", g.contiguous("start", "BLOCK", block)),
                   let("in_bounds", op("lt", lhs="offsets", rhs=size))]
    _elementwise(body, spec, inputs, outputs, size, block, "start")
    step = op("mul", lhs="BLOCK", rhs=op("num_programs"))
    if persistent:
        g.stmts.append(op("for", var="start", start=op("mul", lhs="pid", rhs="BLOCK"), stop=size, step=step,
                          body=_program_ids_as({0: op("idiv", lhs="start", rhs="BLOCK")}, body.stmts), **g.loop_options()))
        return spec.build([grid], g.stmts, g.choose([1, 2, 4, 8]), "grid_stride")
    partial, dtype = spec.output("partial", g.choose(("f32", "i32")), [grid])
    term = body.value(dtype, (), 2)
    if _accumulated(Val("total", dtype, (), 0.0), term, trips).mag > INT_LIMIT:
        term = Val(op("full", shape=[], value=1, dtype=dtype), dtype, (), 1.0)
    term = body.bind(term, "term", pool=False)
    zero = op("full", shape=[], value=0 if dtype == "i32" else 0.0, dtype=dtype)
    g.stmts.append(op("for", var="start", start=op("mul", lhs="pid", rhs="BLOCK"), stop=size, step=step,
                      carry=[{"name": "total", "init": zero, "next": op("add", lhs="total", rhs=term.expr)}],
                      body=body.stmts, **g.loop_options()))
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
                      **g.loop_options()))
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
                ("f16", "ieee", "f16"), ("f8e4m3", "ieee", "f32"), ("f8e5m2", "ieee", "f32"), ("i32", "ieee", "i32")]
# The share of K the tensor cores sum in their narrower fp8 accumulator before the f32 one
# takes it (kernelgen.lower.lowering: each dot's K, 32 or 64 here) keeps about 14 bits (measured on Hopper by others).
FP8_ACCUMULATION_EPS = 2.0**-13


def _dot_bounds(k: int, block_k: int, precision: str, acc_dtype: str, fp8: bool = False) -> tuple[float, float]:
    """Magnitude and error bounds of a K-loop of dots over inputs in [-8, 8] (int8 dots: the
    operands' low bytes, summed exactly)."""
    terms = -(-k // block_k) * block_k
    if acc_dtype == "i32":
        return terms * 128.0**2, 0.0
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
    if dtype in FP8_DTYPES or acc_dtype == "i32":
        bk = g.choose([32, 64])  # 8-bit MMA takes K in steps of 32
    b_transposed = g.chance(40)
    # Tiles (kernelgen.check.tile_access) are TMA copies where the row strides are multiples of 16 bytes: sizes
    # rounded up to 16 take that path, others the pointer form.
    tiled = g.chance(40)
    if tiled and g.chance(50):
        n, k = -(-n // 16) * 16, -(-k // 16) * 16
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
    first_row, first_col = (op("mul", lhs=op("program_id", axis=axis), rhs=size)
                            for axis, size in ((0, "BM"), (1, "BN")))
    if tiled:
        body = [let("a_tile", _tile("a", ["M", "K"], ["BM", "BK"], [first_row, "k0"]))]
        b_view = (["N", "K"], ["BN", "BK"], [first_col, "k0"]) if b_transposed else (["K", "N"], ["BK", "BN"],
                                                                                      ["k0", first_col])
        body.append(let("b_tile", _tile("b", *b_view)))
        if b_transposed:
            body[-1]["value"] = op("trans", x=body[-1]["value"])
    elif b_transposed:
        b_load = op("load", ptr=op("add", lhs="b", rhs=_matrix_index("cols", "K", "ks")),
                    mask=op("and", lhs=op("trans", x="col_ok"), rhs=row("k_ok")))
        body.append(let("b_tile", op("trans", x=b_load)))
    else:
        body.append(let("b_tile", op("load", ptr=op("add", lhs="b", rhs=_matrix_index("ks", "N", "cols")),
                                     mask=op("and", lhs=column("k_ok"), rhs="col_ok"))))
    fused = g.choose((True, False))
    dot = op("dot", lhs="a_tile", rhs="b_tile", **({"acc": "acc"} if fused else {}),
             **({"dtype": acc_dtype} if acc_dtype != "f32" else {}),
             **({"precision": "tf32"} if precision == "tf32" else {}))
    g.stmts.append(op("for", var="k0", stop="K", step="BK", body=body, **g.loop_options(), carry=[
        {"name": "acc", "init": op("full", shape=["BM", "BN"], value=0 if acc_dtype == "i32" else 0.0, dtype=acc_dtype),
         "next": dot if fused else op("add", lhs="acc", rhs=dot)}]))
    mag, err = _dot_bounds(k, bk, precision, acc_dtype, dtype in FP8_DTYPES)
    acc = Val("acc", acc_dtype, (bm, bn), mag, err)
    g.pool += [acc, Val("rows", "i32", (bm,), m + bm), Val("cols", "i32", (bn,), n + bn)]
    if g.chance(50):
        spec.tensor("bias", "f32", ["N"])
        bias = op("load", ptr=op("add", lhs="bias", rhs="cols"), mask=op("lt", lhs="cols", rhs="N"))
        g.bind(_loaded(bias, "f32", (bn,)), "bias_")
    # i32 sums reach 2**20: f16 would overflow them
    widened = ("f32", "i64") if acc_dtype == "i32" else ("f32", "f16", "bf16")
    out, out_dtype = spec.output("c", g.choose(widened) if g.chance(40) else acc_dtype, ["M", "N"])
    ptr = op("add", lhs=out, rhs=_matrix_index("rows", "N", "cols"))
    mask = op("and", lhs="row_ok", rhs="col_ok")
    if g.chance(30):
        val = acc if out_dtype == acc_dtype else g.cast(acc, out_dtype)
        spec.stored(out, val)
        g.stmts.append(op("store", ptr=ptr, value=val.expr, mask=mask))
    elif tiled and g.chance(50):
        val = g.exactly(g.value(out_dtype, (bm, bn), draw(st.integers(1, 4))), (bm, bn))
        spec.stored(out, val)
        g.stmts.append(op("tile_store", base=out, shape=["M", "N"], strides=["N", 1], offsets=[first_row, first_col],
                          value=val.expr))
    else:
        _store(g, spec, out, out_dtype, (bm, bn), ptr, mask)
    grid = [op("cdiv", lhs="M", rhs="BM"), op("cdiv", lhs="N", rhs="BN")]
    if g.chance(30):
        grid, g.stmts = _persistent(g, spec, g.stmts)
    return spec.build(grid, g.stmts, g.choose([4, 8]), "dot")


def _persistent(g: _Gen, spec: _Spec, body: list[dict[str, Any]]) -> tuple[list[Any], list[dict[str, Any]]]:
    """The tile kernel ``body`` made persistent: PROGRAMS programs (fewer or more than the tiles), or
    ``minimum(tiles, num_sms)``, walk the tiles in a loop, flattened with the K loop in it most of the
    time; the tile's program ids become the loop's tile coordinates."""
    tiles_n = op("cdiv", lhs="N", rhs="BN")
    tiles = op("mul", lhs=op("cdiv", lhs="M", rhs="BM"), rhs=tiles_n)
    if g.chance(40):  # one program per SM of the GPU (3 in the interpreter)
        grid, step = [op("minimum", lhs=tiles, rhs=op("num_sms"))], op("num_programs")
    else:
        spec.meta.append({"name": "PROGRAMS", "value": g.choose([1, 2, 4])})
        grid, step = ["PROGRAMS"], "PROGRAMS"
    flatten = g.chance(70)
    if flatten:  # a flattened nest's loops are not unrolled (flatten_nest)
        body = [{k: v for k, v in s.items() if k != "unroll"} if s.get("op") == "for" else s for s in body]
    walk = op("for", var="tile", start=op("program_id"), stop=tiles, step=step,
              body=[let("tile_m", op("idiv", lhs="tile", rhs=tiles_n)),
                    let("tile_n", op("rem", lhs="tile", rhs=tiles_n)),
                    *_program_ids_as({0: "tile_m", 1: "tile_n"}, body)],
              **({"flatten": True} if flatten else {}))
    return grid, [walk]


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
