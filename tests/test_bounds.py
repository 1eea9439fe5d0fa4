"""The bounds analysis of unmasked loads and stores (kernelgen.check.bounds): what it proves, what it
refuses and how it says so, and that what it proves holds when the kernel runs."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelgen.check.checker import check
from kernelgen.errors import SemanticError
from kernelgen.interp.execute import interpret
from kernelgen.lang.parse import kernel_from_obj

PID = {"op": "program_id"}


def op(kind: str, /, **fields: Any) -> dict[str, Any]:
    return {"op": kind, **fields}


def kernel(body: list[dict[str, Any]], grid: list[Any], *, out_shape: list[Any] | None = None,
           inputs: list[dict[str, Any]] | None = None, params: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A kernel over x[N] -> out[N] (unless told otherwise), with meta B = 16."""
    return {"name": "k", "inputs": inputs or [{"name": "x", "dtype": "f32", "shape": ["N"]}],
            "outputs": [{"name": "out", "dtype": "f32", "shape": out_shape or ["N"]}],
            "params": params or [{"name": "x"}, {"name": "out"}, {"name": "N"}],
            "meta": [{"name": "B", "value": 16}], "grid": grid, "body": body}


def load(offset: Any) -> dict[str, Any]:
    return op("load", ptr=op("add", lhs="x", rhs=offset))


def store(offset: Any, value: Any = 1.0) -> dict[str, Any]:
    return op("store", ptr=op("add", lhs="out", rhs=offset), value=value)


def diagnostics(doc: dict[str, Any]) -> list[tuple[str, str]]:
    try:
        check(kernel_from_obj(doc))
    except SemanticError as exc:
        return [(d.path, d.message) for d in exc.diagnostics]
    return []


LAST = op("sub", lhs="N", rhs=1)
BLOCK_OFFSETS = op("add", lhs=op("mul", lhs=PID, rhs="B"), rhs=op("arange", size="B"))
MATRIX = [{"name": "x", "dtype": "f32", "shape": ["M", "N"]}]
MATRIX_PARAMS = [{"name": "x"}, {"name": "out"}, {"name": "M"}, {"name": "N"}]

PROVEN = [
    pytest.param(kernel([store(PID, load(PID))], ["N"]), id="program-id-over-a-grid-of-N"),
    pytest.param(kernel([store(op("mul", lhs=PID, rhs=2))], [op("cdiv", lhs="N", rhs=2)]), id="even-elements-over-cdiv"),
    pytest.param(kernel([store(op("minimum", lhs=BLOCK_OFFSETS, rhs=LAST))], [op("cdiv", lhs="N", rhs="B")]),
                 id="block-clamped-with-minimum"),
    pytest.param(kernel([store(PID, load(op("clamp", x=op("sub", lhs=PID, rhs=3), lo=0, hi=LAST)))], ["N"]),
                 id="neighbour-clamped"),
    pytest.param(kernel([store(PID, load(op("rem", lhs=op("add", lhs=PID, rhs=5), rhs="N")))], ["N"]), id="rotated-by-rem"),
    pytest.param(kernel([store(PID, load(op("maximum", lhs=op("sub", lhs=PID, rhs=1), rhs=0)))], ["N"]),
                 id="previous-element-floored-at-0"),
    pytest.param(kernel([store(PID, load(op("where", cond=op("gt", lhs=PID, rhs=0), x=PID,
                                            y=op("minimum", lhs=op("add", lhs=PID, rhs=1), rhs=LAST))))], ["N"]),
                 id="where-of-two-proven-offsets"),
    pytest.param(kernel([op("for", var="i", stop="N", body=[store("i", load("i"))])], [1]), id="loop-variable-below-N"),
    pytest.param(kernel([op("for", var="i", start=PID, stop="N", step=op("num_programs"), body=[store("i")])], [4]),
                 id="grid-stride-loop"),
    pytest.param(kernel([op("for", var="i", start="N", stop="N", body=[store(op("add", lhs="i", rhs=100))])], [1]),
                 id="loop-that-never-runs"),
    pytest.param(kernel([store(PID)], [op("numel", of="x")]), id="grid-of-numel"),
    pytest.param(kernel([store(PID)], [op("cdiv", lhs="N", rhs=3)], out_shape=[op("cdiv", lhs="N", rhs=3)]),
                 id="output-shape-expression"),
    pytest.param(kernel([store(op("arange", size=16), load(op("arange", size=16)))], [1], out_shape=[16],
                        inputs=[{"name": "x", "dtype": "f32", "shape": [16]}], params=[{"name": "x"}, {"name": "out"}]),
                 id="fixed-size-tensor"),
    pytest.param(kernel([store(op("add", lhs=op("mul", lhs=op("program_id", axis=0), rhs="N"), rhs=op("program_id", axis=1)),
                               load(op("add", lhs=op("mul", lhs=op("program_id", axis=0), rhs="row_stride"),
                                       rhs=op("program_id", axis=1))))],
                        ["M", "N"], out_shape=["M", "N"], inputs=MATRIX,
                        params=MATRIX_PARAMS + [{"name": "row_stride", "value": op("stride", of="x", dim=0)}]),
                 id="matrix-element-per-program"),
    pytest.param(kernel([store(op("add", lhs=op("mul", lhs=op("program_id", axis=1), rhs="M"), rhs=op("program_id", axis=0)))],
                        ["M", "N"], out_shape=["N", "M"], inputs=MATRIX, params=MATRIX_PARAMS),
                 id="transposed-matrix-element"),
    pytest.param(kernel([store(PID, op("load", ptr=op("add", lhs="x", rhs=op("mul", lhs=PID, rhs=1000)),
                                      mask=op("lt", lhs=PID, rhs=0)))], ["N"]),
                 id="masked-access-is-not-judged"),
]


def branch(cond: Any, then: list[dict[str, Any]], orelse: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return op("if", cond=cond, then=then, **({"else": orelse} if orelse is not None else {}))


FULL_BLOCK = op("le", lhs=op("mul", lhs=op("add", lhs=PID, rhs=1), rhs="B"), rhs="N")
TAIL = op("lt", lhs=BLOCK_OFFSETS, rhs="N")
PAST_N = [op("add", lhs="N", rhs=3)]  # three programs more than elements
PROVEN += [
    pytest.param(kernel([branch(FULL_BLOCK, [store(BLOCK_OFFSETS, load(BLOCK_OFFSETS))],
                                [op("store", ptr=op("add", lhs="out", rhs=BLOCK_OFFSETS), value=1.0, mask=TAIL)])],
                        [op("cdiv", lhs="N", rhs="B")]), id="full-blocks-unmasked-under-if"),
    pytest.param(kernel([op("let", name="pid", value=PID),
                         op("let", name="offs", value=op("add", lhs=op("mul", lhs="pid", rhs="B"),
                                                          rhs=op("arange", size="B"))),
                         op("let", name="full", value=op("le", lhs=op("add", lhs=op("mul", lhs="pid", rhs="B"), rhs="B"),
                                                         rhs="N")),
                         branch("full", [store("offs", load("offs"))],
                                [op("store", ptr=op("add", lhs="out", rhs="offs"), value=1.0,
                                    mask=op("lt", lhs="offs", rhs="N"))])],
                        [op("cdiv", lhs="N", rhs="B")]), id="full-blocks-through-lets"),
    pytest.param(kernel([branch(op("lt", lhs=PID, rhs="N"), [store(PID, load(PID))])], PAST_N), id="if-pid-below-n"),
    pytest.param(kernel([branch(op("ge", lhs=PID, rhs="N"), [], [store(PID, load(PID))])], PAST_N),
                 id="else-of-pid-at-least-n"),
    pytest.param(kernel([branch(op("not", x=op("or", lhs=op("ge", lhs=PID, rhs="N"), rhs=op("lt", lhs=PID, rhs=0))),
                                [store(PID)])], PAST_N), id="not-of-or"),
    pytest.param(kernel([op("for", var="i", stop=op("add", lhs="N", rhs=5), body=[
        branch(op("gt", lhs="N", rhs="i"), [store("i", load("i"))])])], [1]), id="loop-var-under-if"),
    pytest.param(kernel([branch(op("gt", lhs="N", rhs=1000), [store(1000, load(999))])], [1]),
                 id="int-param-large-enough"),
    # A launch gridded to no programs at small N (a split reduction's combine, needed only for
    # long rows): the last lane of a full block, in bounds wherever a program runs.
    pytest.param(kernel([store(op("add", lhs=op("mul", lhs=PID, rhs="B"), rhs=op("sub", lhs="B", rhs=1)))],
                        [op("idiv", lhs="N", rhs="B")]), id="empty-grid-at-small-sizes"),
]


@pytest.mark.parametrize("doc", PROVEN)
def test_accesses_proven_in_bounds_are_accepted(doc: dict[str, Any]) -> None:
    assert diagnostics(doc) == []


REFUSED = [
    pytest.param(kernel([store(op("minimum", lhs=PID, rhs=LAST), load(PID))], [op("add", lhs="N", rhs=1)]), "/body/0/value",
                 "unmasked load with offsets 0..1 where 'x' has 1 elements (with N=1); add a mask", id="grid-one-too-large"),
    pytest.param(kernel([op("for", var="i", stop=op("add", lhs="N", rhs=1), body=[store("i")])], [1]), "/body/0/body/0",
                 "unmasked store with offsets 0..1 where 'out' has 1 elements (with N=1)", id="loop-to-N-inclusive"),
    pytest.param(kernel([op("for", var="i", stop="N", step=4, body=[store(op("add", lhs="i", rhs=3))])], [1]),
                 "/body/0/body/0", "offsets 3..3 where 'out' has 1 elements (with N=1)", id="stepped-loop-reads-ahead"),
    pytest.param(kernel([store(BLOCK_OFFSETS)], [op("cdiv", lhs="N", rhs="B")]), "/body/0",
                 "offsets 0..15 where 'out' has 1 elements (with N=1)", id="block-tail"),
    pytest.param(kernel([store(PID, load(op("rem", lhs=op("sub", lhs=PID, rhs=5), rhs="N")))], ["N"]), "/body/0/value",
                 "offsets -1..1 where 'x' has 2 elements (with N=2)", id="rem-of-a-negative-dividend"),
    pytest.param(kernel([store(PID, load(op("cast", x=load(PID), dtype="i32")))], ["N"]), "/body/0/value",
                 "unbounded offsets (they depend on loaded or carried values, or on scalars)", id="offset-loaded-from-memory"),
    pytest.param(kernel([op("for", var="i", stop="N", carry=[{"name": "p", "init": "x", "next": op("add", lhs="p", rhs=1)}],
                            body=[store("i", op("load", ptr="p"))])], [1]), "/body/0/body/0/value",
                 "unbounded offsets", id="pointer-carried-around-a-loop"),
    pytest.param(kernel([store(PID, load(op("cast", x="s", dtype="i32")))], ["N"],
                        inputs=[{"name": "x", "dtype": "f32", "shape": ["N"]}, {"name": "s", "dtype": "f32"}],
                        params=[{"name": "x"}, {"name": "out"}, {"name": "N"}, {"name": "s"}]), "/body/0/value",
                 "unbounded offsets", id="offset-from-a-float-scalar"),
    pytest.param(kernel([store(op("arange", size=32))], [1], out_shape=[16], inputs=[{"name": "x", "dtype": "f32", "shape": [16]}],
                        params=[{"name": "x"}, {"name": "out"}]), "/body/0",
                 "offsets 0..31 where 'out' has 16 elements (with any sizes)", id="block-larger-than-fixed-tensor"),
    pytest.param(kernel([store(op("add", lhs=op("mul", lhs=op("program_id", axis=0), rhs="N"), rhs=op("program_id", axis=1)))],
                        ["N", "M"], out_shape=["M", "N"], inputs=MATRIX, params=MATRIX_PARAMS), "/body/0",
                 "where 'out' has", id="grid-axes-swapped"),
]


REFUSED += [
    pytest.param(kernel([branch(op("lt", lhs=op("mul", lhs=PID, rhs="B"), rhs="N"), [store(BLOCK_OFFSETS)])],
                        [op("cdiv", lhs="N", rhs="B")]), "/body/0/then/0", "offsets 0..15 where 'out' has 1 elements",
                 id="partial-block-taken-unmasked"),
    pytest.param(kernel([branch(FULL_BLOCK, [store(BLOCK_OFFSETS)], [store(BLOCK_OFFSETS)])],
                        [op("cdiv", lhs="N", rhs="B")]), "/body/0/else/0", "where 'out' has 1 elements",
                 id="tail-unmasked-in-else"),
    pytest.param(kernel([branch(op("or", lhs=op("lt", lhs=PID, rhs="N"), rhs=op("gt", lhs=PID, rhs=2)), [store(PID)])],
                        PAST_N), "/body/0/then/0", "where 'out' has", id="or-narrows-nothing-in-then"),
    # N * 2**30 wraps to -2**31 at N = 2, where every program takes the branch
    pytest.param(kernel([branch(op("ge", lhs=PID, rhs=op("mul", lhs="N", rhs=1 << 30)),
                                [store(op("add", lhs=PID, rhs=100))])], PAST_N),
                 "/body/0/then/0", "(with N=2)", id="bound-that-may-wrap-narrows-nothing"),
    pytest.param(kernel([branch(op("lt", lhs=op("cast", x=PID, dtype="f32"), rhs=op("cast", x="N", dtype="f32")),
                                [store(PID)])], PAST_N), "/body/0/then/0", "where 'out' has",
                 id="float-comparison-narrows-nothing"),
]


@pytest.mark.parametrize("doc,path,message", REFUSED)
def test_unprovable_accesses_are_refused_with_a_counterexample(doc: dict[str, Any], path: str, message: str) -> None:
    (found,) = diagnostics(doc)
    assert found[0] == path and message in found[1]


def test_every_unprovable_access_is_reported_once() -> None:
    doc = kernel([store(PID, load(PID)), store(op("add", lhs=PID, rhs=1))], [op("add", lhs="N", rhs=1)])
    assert [path for path, _ in diagnostics(doc)] == ["/body/0/value", "/body/0", "/body/1"]


# -- what is proven holds at run time -----------------------------------------------------------


def offsets(depth: int) -> st.SearchStrategy[Any]:
    """Integer index expressions of the kinds kernels use: program ids and block lanes shifted,
    scaled by small constants, clamped, wrapped around N or floored at 0 (scaling only by
    constants keeps them far from i32 overflow, which the analysis does not model)."""
    leaf = st.sampled_from([PID, op("arange", size="B"), op("mul", lhs=PID, rhs="B"), 0, 1, 3, "N", LAST])
    if depth == 0:
        return leaf
    inner = offsets(depth - 1)
    return st.one_of(
        leaf,
        st.builds(lambda kind, a, b: op(kind, lhs=a, rhs=b), st.sampled_from(["add", "sub", "maximum", "minimum"]),
                  inner, inner),
        st.builds(lambda kind, a, c: op(kind, lhs=a, rhs=c), st.sampled_from(["mul", "idiv"]), inner, st.integers(1, 3)),
        st.builds(lambda a: op("rem", lhs=a, rhs="N"), inner),
        st.builds(lambda a: op("clamp", x=a, lo=0, hi=LAST), inner),
    )


GRIDS = [["N"], [op("cdiv", lhs="N", rhs="B")], [1], [op("maximum", lhs=LAST, rhs=1)]]


def probe(offset: Any, grid: list[Any]) -> dict[str, Any]:
    """A kernel whose only questionable access is an unmasked load at ``offset``."""
    return kernel([op("let", name="value", value=load(offset)), store(op("minimum", lhs=PID, rhs=LAST))], grid)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(offsets(3), st.sampled_from(GRIDS), st.lists(st.integers(1, 300), min_size=1, max_size=3))
def test_accepted_unmasked_loads_stay_in_bounds_at_any_size(offset: Any, grid: list[Any], sizes: list[int]) -> None:
    """Whenever the analysis accepts an unmasked load, running the kernel at sizes it did not
    sample never leaves the tensor."""
    runs_in_bounds_if_accepted(probe(offset, grid), sizes)


def runs_in_bounds_if_accepted(doc: dict[str, Any], sizes: list[int]) -> None:
    """Run an accepted kernel at each N (an out_of_bounds error fails the test)."""
    if diagnostics(doc):
        return
    checked = check(kernel_from_obj(doc))
    for n in sizes:
        interpret(checked, [torch.zeros(n)])


def test_the_property_above_sees_accepted_kernels() -> None:
    """The generated offsets are often provable: the property is not vacuous."""
    accepted = []

    @settings(max_examples=100, deadline=None, derandomize=True, database=None)
    @given(offsets(3), st.sampled_from(GRIDS))
    def count(offset: Any, grid: list[Any]) -> None:
        accepted.append(not diagnostics(probe(offset, grid)))

    count()
    assert sum(accepted) >= 20


COMPARISONS = st.sampled_from(["lt", "le", "gt", "ge", "eq", "ne"])


def scalar(offset: Any) -> Any:
    return op("max", x=offset, axis=0) if "arange" in str(offset) else offset


def conditioned_probe(rel: str, lhs: Any, rhs: Any, offset: Any, tied: bool, in_else: bool,
                      grid: list[Any]) -> dict[str, Any]:
    """A kernel whose only questionable access is an unmasked load at ``offset`` in a branch
    of ``lhs rel rhs`` (``tied``: ``offset rel rhs and offset >= 0`` instead)."""
    cond = op(rel, lhs=offset if tied else scalar(lhs), rhs=scalar(rhs))
    if tied:
        cond = op("and", lhs=cond, rhs=op("ge", lhs=offset, rhs=0))
    body = [op("let", name="value", value=load(offset))]
    return kernel([branch(cond, [] if in_else else body, body if in_else else []),
                   store(op("minimum", lhs=PID, rhs=LAST))], grid)


SCALAR_OFFSETS = offsets(2).filter(lambda e: "arange" not in str(e))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(COMPARISONS, SCALAR_OFFSETS, offsets(2), SCALAR_OFFSETS, st.booleans(), st.booleans(), st.sampled_from(GRIDS),
       st.lists(st.integers(1, 300), min_size=1, max_size=3))
def test_accesses_proven_under_a_condition_stay_in_bounds(rel: str, lhs: Any, rhs: Any, offset: Any, tied: bool,
                                                          in_else: bool, grid: list[Any], sizes: list[int]) -> None:
    """An unmasked load in a branch, accepted thanks to the branch's condition or not, never
    leaves the tensor when the kernel runs at sizes the analysis did not sample."""
    runs_in_bounds_if_accepted(conditioned_probe(rel, lhs, rhs, offset, tied, in_else, grid), sizes)


def test_the_property_above_sees_loads_proven_by_their_condition() -> None:
    """Often the load is accepted only because of its branch's condition: not vacuous."""
    helped = []

    @settings(max_examples=200, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.filter_too_much])
    @given(st.sampled_from(["lt", "le"]), st.sampled_from(["N", LAST, 1, 3]), SCALAR_OFFSETS, st.sampled_from(GRIDS))
    def count(rel: str, rhs: Any, offset: Any, grid: list[Any]) -> None:
        doc = conditioned_probe(rel, 0, rhs, offset, True, False, grid)
        helped.append(not diagnostics(doc) and bool(diagnostics(probe(offset, grid))))

    count()
    assert sum(helped) >= 10
