"""A pipelined loop's loads are issued trips ahead of their use (Triton's software pipeliner), so a
load of what the same program stored in a recent trip reads the value from before that store on
the GPU: the interpreter, which runs the trips in order, judges it ``stale_pipelined_load``
(:mod:`kernelgen.interp.pipelining`). A column sum accumulated through memory, each trip reading
back the partial sums the last one stored, is right in order and wrong pipelined; the lowering
really does copy that load ahead (its TTGIR)."""

from __future__ import annotations

import pytest
import torch
from test_emit import let, o

from kernelgen.check.checker import check
from kernelgen.errors import InterpreterError
from kernelgen.gpu.compile import compile_kernel
from kernelgen.interp.execute import interpret
from kernelgen.interp.pipelining import pipeline_window
from kernelgen.lang import nodes as L
from kernelgen.lang.parse import kernel_from_obj


def col_sums(stages: int | None = 3, *, back: int = 1, unroll: int | None = None, barrier: bool = False,
             kernel_stages: int = 3, dot: bool = False) -> dict:
    """out[n] = sum over m of x[m, n], one trip per row; trip m reads the partial sums of trip
    m - back from out (rows before the first as zeros) and stores its own at out + (m % back) * N:
    with back = 1 the running sums are read back from the last trip."""
    slot = o("mul", lhs=o("rem", lhs="m", rhs=back), rhs="N")
    so_far = o("load", ptr=o("add", lhs="out", rhs=o("add", lhs=slot, rhs="cols")),
               mask=o("and", lhs=o("lt", lhs="cols", rhs="N"), rhs=o("ge", lhs="m", rhs=back)), other=0.0)
    row = o("load", ptr=o("add", lhs="x", rhs=o("add", lhs=o("mul", lhs="m", rhs="N"), rhs="cols")),
            mask=o("lt", lhs="cols", rhs="N"), other=0.0)
    if dot:  # the row through an identity product (16 copies of it, their mean): a dot in the loop's body
        eye = o("cast", x=o("eq", lhs=o("expand_dims", x=o("arange", size=16), axis=1),
                            rhs=o("expand_dims", x=o("arange", size=16), axis=0)), dtype="f32")
        rows = o("mul", lhs=o("full", shape=[16, 16], value=1.0, dtype="f32"), rhs=o("expand_dims", x=row, axis=0))
        row = o("div", lhs=o("sum", x=o("dot", lhs=rows, rhs=eye), axis=0), rhs=16.0)
    body = [let("so_far", so_far), let("row", row),
            o("store", ptr=o("add", lhs="out", rhs=o("add", lhs=slot, rhs="cols")),
              value=o("add", lhs="so_far", rhs="row"), mask=o("lt", lhs="cols", rhs="N"))]
    if barrier:
        body.append(o("barrier"))
    loop = o("for", var="m", stop="M", body=body, **({} if stages is None else {"num_stages": stages}),
             **({} if unroll is None else {"unroll": unroll}))
    # slots: one row of partial sums per trip back (its values unused; it sizes out)
    return {"name": "col_sums", "inputs": [{"name": "x", "dtype": "f32", "shape": ["M", "N"]},
                                           {"name": "slots", "dtype": "f32", "shape": ["K", "N"]}],
            "outputs": [{"name": "out", "dtype": "f32", "shape": ["K", "N"]}],
            "params": [{"name": "x"}, {"name": "out"}, {"name": "M"}, {"name": "N"}],
            "meta": [{"name": "B", "value": 16}], "grid": [1], "num_stages": kernel_stages,
            "body": [let("cols", o("arange", size="B")), loop]}


def run(kernel: dict, m: int = 6, n: int = 16, slots: int = 1, x: torch.Tensor | None = None) -> torch.Tensor:
    x = torch.randn(m, n) if x is None else x
    return interpret(check(kernel_from_obj(kernel)), {"x": x, "slots": torch.zeros(slots, x.shape[1])})["out"]


def stale(kernel: dict, **sizes: int) -> InterpreterError:
    with pytest.raises(InterpreterError) as raised:
        run(kernel, **sizes)
    return raised.value


def test_a_loop_reading_back_its_last_trip_is_right_in_order() -> None:
    x = torch.randn(6, 16)
    torch.testing.assert_close(run(col_sums(None), x=x)[0], x.sum(dim=0))


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_pipelined_it_is_a_stale_load_at_the_load(stages: int) -> None:
    error = stale(col_sums(stages))
    [diagnostic] = error.diagnostics
    assert (diagnostic.code, diagnostic.path) == ("stale_pipelined_load", "/body/1/body/0/value")
    assert "out[" in diagnostic.message and "/body/1" in diagnostic.message and "carry" in diagnostic.message


def test_the_lowering_copies_that_load_ahead_of_the_store() -> None:
    """The hazard is Triton's: the pipelined loop's read of out is an async copy issued before the
    loop (its first trips') and after each trip's store for a later trip; without num_stages a
    plain load follows the store."""
    piped = compile_kernel(check(kernel_from_obj(col_sums(3))), "sm_90", in_process=True, cache=False).ttgir
    plain = compile_kernel(check(kernel_from_obj(col_sums(None))), "sm_90", in_process=True, cache=False).ttgir
    assert "async_copy_global_to_local" in piped
    assert "async_copy_global_to_local" not in plain and "tt.load" in plain


def test_a_barrier_in_the_loop_keeps_its_loads_in_place() -> None:
    """Triton does not pipeline a loop with a barrier in it (a plain tt.load in its TTGIR)."""
    kernel = col_sums(3, barrier=True)
    assert "async_copy_global_to_local" not in compile_kernel(check(kernel_from_obj(kernel)), "sm_90", in_process=True, cache=False).ttgir
    x = torch.randn(6, 16)
    torch.testing.assert_close(run(kernel, x=x)[0], x.sum(dim=0))


def test_one_stage_pipelines_nothing() -> None:
    run(col_sums(1))


@pytest.mark.parametrize("back, stages, unroll, is_stale", [
    (2, 2, None, False),  # stored two trips before, two stages: the copy was issued after that store
    (2, 3, None, True),
    (3, 3, None, False),
    (3, 2, 2, True),  # two copies of the body a trip: the pipeliner's trips are two of the loop's
])
def test_the_window_is_the_stages_times_the_unroll(back: int, stages: int, unroll: int | None, is_stale: bool) -> None:
    kernel = col_sums(stages, back=back, unroll=unroll)
    if is_stale:
        assert stale(kernel, slots=back).diagnostics[0].code == "stale_pipelined_load"
    else:
        run(kernel, slots=back)


def test_a_loop_with_a_dot_is_pipelined_by_the_kernel_s_stages() -> None:
    assert stale(col_sums(None, dot=True)).diagnostics[0].code == "stale_pipelined_load"
    run(col_sums(None, dot=True, kernel_stages=1))


def test_pipeline_window_reads_the_loop() -> None:
    def loop(**fields) -> L.For:
        return kernel_from_obj(col_sums(**fields)).body[1]

    assert pipeline_window(loop(stages=None), 3) == 0  # no dot: only its own num_stages pipelines it
    assert pipeline_window(loop(stages=4), 3) == 4
    assert pipeline_window(loop(stages=2, unroll=4), 3) == 8
    assert pipeline_window(loop(stages=4, barrier=True), 3) == 0
    assert pipeline_window(loop(stages=None, dot=True), 5) == 5
