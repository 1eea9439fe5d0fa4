"""Hypothesis strategies for random programs of two launches (:mod:`kernelgen.check.sequence`).

They follow the rules of :mod:`kernelgen.draw.strategies` (masked or provably inside accesses,
every output element written once, an error bound carried by every value) and add what only a
sequence has: a value crosses the launch boundary through a scratch tensor, loaded with the
magnitude and error bound its store had, so the tolerance of what the second launch computes
from it covers the first launch's rounding too. Two shapes:

* **map**: launch 1 computes a block per program over ``N`` elements and stores it into scratch
  ``s`` (all of it, or with ``zero`` only where a drawn predicate holds, the rest staying 0);
  launch 2, on a grid of another block size, loads ``s`` reversed, so each of its programs
  reads elements other programs of launch 1 wrote, with the inputs, and writes the outputs;
* **reduce**: launch 1 stores one partial sum per program into ``s``; launch 2, one program,
  loads the partials under a mask and reduces them into a one-element output (a two-phase
  reduction).

:func:`documents` draws a single kernel most of the time and a program otherwise, so one
differential run covers both and counts the programs (``several launches`` among its
constructs, ``zero scratch`` where one is zero-filled).
"""

from __future__ import annotations

import math
from typing import Any, Callable

from hypothesis import strategies as st

from kernelgen.draw.strategies import kernels
from kernelgen.draw.expressions import _Gen
from kernelgen.draw.kernel import GeneratedKernel
from kernelgen.draw.templates import _load, _scalar_inputs, _Spec, _store
from kernelgen.draw.values import FLOAT_DTYPES, INT_DTYPES, NUMBER_DTYPES, Val, let, op, rounding
from kernelgen.lang.parse import kernel_from_obj

PROGRAM_PERCENT = 20  # of documents() draws


def _offsets(g: _Gen, block: int, meta: str) -> None:
    g.stmts += [let("offsets", g.contiguous(op("mul", lhs=op("program_id"), rhs=meta), meta, block)),
                let("in_bounds", op("lt", lhs="offsets", rhs="N"))]
    g.pool += [Val("offsets", "i32", (block,), 1000.0), Val("in_bounds", "bool", (block,))]


def _phase(g: _Gen, block: int) -> _Gen:
    """A fresh scope for the next launch: it sees the scalar inputs, nothing the last bound."""
    inner = _Gen(g.draw)
    inner.counter, inner.dims = g.counter, (block,)
    inner.pool = [v for v in g.pool if v.expr in ("alpha", "count")]
    return inner


def _load_inputs(g: _Gen, inputs: list[tuple[str, str]], block: int) -> None:
    for ptr, dtype in inputs:
        g.bind(_load(g, op("add", lhs=ptr, rhs="offsets"), "in_bounds", dtype, (block,)), ptr + "_")


@st.composite
def programs(draw: Callable[[st.SearchStrategy], Any]) -> GeneratedKernel:
    """A random two-launch program (the module's docstring)."""
    g = _Gen(draw)
    n = draw(st.integers(1, 600))
    block1 = g.choose([b for b in (16, 32, 64, 128) if -(-n // b) <= 40])
    block2 = g.choose((16, 32, 64, 128))
    spec = _Spec("two_phase", {"N": n})
    inputs = [spec.tensor(f"x{i}", g.choose(NUMBER_DTYPES + ("bool",)), ["N"]) for i in range(g.draw(st.integers(1, 2)))]
    spec.params.append({"name": "N"})
    spec.meta += [{"name": "BLOCK", "value": block1}, {"name": "BLOCK2", "value": block2}]
    _scalar_inputs(g, spec)
    shape = g.choose(("map", "reduce"))
    zero = shape == "map" and g.chance(40)
    scratch_dtype = g.choose(("f32", "i32")) if shape == "reduce" else g.choose(NUMBER_DTYPES)
    common = [p for p in spec.params]  # inputs, N and the scalars: every launch takes them

    # launch 1
    _offsets(g, block1, "BLOCK")
    _load_inputs(g, inputs, block1)
    g.random_lets([(block1,), ()], g.draw(st.integers(0, 3)))
    value = g.value(scratch_dtype, (block1,), g.draw(st.integers(1, 3)))
    value = g.exactly(value, (block1,))
    if shape == "map":
        mask: Any = "in_bounds"
        if zero:
            mask = op("and", lhs="in_bounds", rhs=g.boolean((block1,), 2).expr)
        g.stmts.append(op("store", ptr=op("add", lhs="s", rhs="offsets"), value=value.expr, mask=mask))
        scratch = {"name": "s", "dtype": scratch_dtype, "shape": ["N"], **({"zero": True} if zero else {})}
        stored = value
    else:
        zero_value = 0 if scratch_dtype in INT_DTYPES else 0.0
        masked = op("where", cond="in_bounds", x=value.expr, y=zero_value)
        g.stmts.append(op("store", ptr=op("add", lhs="s", rhs=op("program_id")), value=op("sum", x=masked, axis=0)))
        scratch = {"name": "s", "dtype": scratch_dtype, "shape": [op("cdiv", lhs="N", rhs="BLOCK")]}
        mag = block1 * value.mag
        err = 0.0 if scratch_dtype in INT_DTYPES else block1 * value.err + rounding("f32", mag, 2 * math.sqrt(block1))
        stored = Val("s", scratch_dtype, (), mag, err)
    first = {"name": "produce", "params": [*common, {"name": "s"}], "grid": [op("cdiv", lhs="N", rhs="BLOCK")],
             "body": g.stmts}

    # launch 2
    h = _phase(g, block2)
    spec.params = []
    if shape == "map":
        outputs = [spec.output(f"y{i}", g.choose(NUMBER_DTYPES + ("bool",)), ["N"])
                   for i in range(g.draw(st.integers(1, 2)))]
        _offsets(h, block2, "BLOCK2")
        reverse = op("sub", lhs=op("sub", lhs="N", rhs=1), rhs="offsets")
        loaded = op("load", ptr=op("add", lhs="s", rhs=reverse), mask="in_bounds")
        h.bind(Val(loaded, scratch_dtype, (block2,), stored.mag, stored.err), "s_")
        _load_inputs(h, inputs, block2)
        h.random_lets([(block2,), ()], g.draw(st.integers(0, 3)))
        for out, dtype in outputs:
            _store(h, spec, out, dtype, (block2,), op("add", lhs=out, rhs="offsets"), "in_bounds")
        grid2: list[Any] = [op("cdiv", lhs="N", rhs="BLOCK2")]
    else:
        count = -(-n // block1)
        partials = 1 << max(0, (count - 1).bit_length())
        spec.meta.append({"name": "PARTIALS", "value": partials})
        (out, dtype) = spec.output("total", scratch_dtype, [1])
        lanes = op("arange", size="PARTIALS")
        loaded = op("load", ptr=op("add", lhs="s", rhs=lanes),
                    mask=op("lt", lhs=lanes, rhs=op("cdiv", lhs="N", rhs="BLOCK")))
        mag = count * stored.mag
        err = 0.0 if dtype in INT_DTYPES else count * stored.err + rounding("f32", mag, 2 * math.sqrt(count))
        spec.stored(out, Val(out, dtype, (), mag, err))
        h.stmts.append(op("store", ptr=out, value=op("sum", x=loaded, axis=0)))
        grid2 = [1]
    second = {"name": "consume", "params": [*common, {"name": "s"}, *spec.params], "grid": grid2, "body": h.stmts}
    kernel = kernel_from_obj({"name": spec.name, "inputs": spec.inputs, "outputs": spec.outputs, "meta": spec.meta,
                              "scratch": [scratch], "launches": [first, second]})
    assert scratch_dtype in FLOAT_DTYPES + INT_DTYPES
    return GeneratedKernel(kernel, dict(spec.sizes), dict(spec.tolerances), f"two_phase_{shape}")


def documents() -> st.SearchStrategy[GeneratedKernel]:
    """Random kernels (:func:`kernelgen.draw.strategies.kernels`), and two-launch programs about
    one draw in five."""
    return st.integers(0, 99).flatmap(lambda roll: programs() if roll < PROGRAM_PERCENT else kernels())
