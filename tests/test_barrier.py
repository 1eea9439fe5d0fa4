"""The barrier statement (tl.debug_barrier): within one program a store is visible to another
thread's load only after a barrier. The interpreter judges that order (missing_barrier, per
program and per lane); the lowering makes gpu.barrier (bar.sync), the emitter tl.debug_barrier()."""

from __future__ import annotations

import json

import pytest
import torch
from test_emit import TritonInterpreter, check_in_triton_interpreter, let, o, triton_interpreter  # noqa: F401

from kernelgen.check.checker import check
from kernelgen.emit.module import emit_triton
from kernelgen.errors import InterpreterError, Outcome
from kernelgen.gpu.compile import compile_kernel
from kernelgen.harness.pipeline import Settings, evaluate_answer
from kernelgen.interp.execute import interpret
from kernelgen.lang.parse import kernel_from_obj, kernel_to_json
from kernelgen.model.prompt import system_prompt
from kernelgen.task.spec import get_task

R = o("arange", size=16)
ROWS, COLS = o("expand_dims", x=R, axis=1), o("expand_dims", x=R, axis=0)
TILE = o("add", lhs=o("mul", lhs=ROWS, rhs=16), rhs=COLS)  # [16, 16] row-major
TILE_T = o("add", lhs=o("mul", lhs=COLS, rhs=16), rhs=ROWS)  # the transposed positions


def through_scratch(first: list, second: list, grid: int = 1, between: list | None = None) -> dict:
    """x [grid*256] -> tmp through ``first`` statements, then ``between``, then ``second``; out
    gets what ``second`` stores. ``base`` is this program's 256 elements."""
    return {"name": "via_tmp", "inputs": [{"name": "x", "dtype": "f32", "shape": [grid * 256]}],
            "outputs": [{"name": "out", "dtype": "f32", "shape": [grid * 256]},
                        {"name": "tmp", "dtype": "f32", "shape": [grid * 256]}],
            "params": [{"name": "x"}, {"name": "out"}, {"name": "tmp"}], "grid": [grid],
            "body": [let("base", o("mul", lhs=o("program_id"), rhs=256)), *first, *(between or []), *second]}


def at(ptr: str, offsets: dict) -> dict:
    return o("add", lhs=o("add", lhs=ptr, rhs="base"), rhs=offsets)


STORE_ROWS = [o("store", ptr=at("tmp", TILE), value=o("load", ptr=at("x", TILE)))]
LOAD_TRANSPOSED = [o("store", ptr=at("out", TILE), value=o("load", ptr=at("tmp", TILE_T)))]


def run(kernel: dict, grid: int = 1) -> dict:
    return interpret(check(kernel_from_obj(kernel)), {"x": torch.randn(grid * 256)})


def missing(kernel: dict, grid: int = 1):
    with pytest.raises(InterpreterError) as raised:
        run(kernel, grid)
    [diagnostic] = raised.value.diagnostics
    assert diagnostic.code == "missing_barrier"
    return diagnostic


def test_a_load_from_another_lane_after_a_store_needs_a_barrier() -> None:
    diagnostic = missing(through_scratch(STORE_ROWS, LOAD_TRANSPOSED))
    assert diagnostic.path == "/body/2/value" and "tmp[1, 0]" not in diagnostic.message  # flat tmp: tmp[16]
    assert "lane [0, 1] of a [16, 16] block" in diagnostic.message
    out = run(through_scratch(STORE_ROWS, LOAD_TRANSPOSED, between=[o("barrier")]))
    assert torch.equal(out["out"].view(16, 16), out["tmp"].view(16, 16).T)


def test_the_same_lane_reads_its_own_store_without_a_barrier() -> None:
    same_lane = [o("store", ptr=at("out", TILE), value=o("load", ptr=at("tmp", TILE)))]
    out = run(through_scratch(STORE_ROWS, same_lane))
    assert torch.equal(out["out"], out["tmp"])


def test_another_block_shape_is_another_thread() -> None:
    """A [256] reload of a [16, 16] store: the same elements in the same order, other lanes."""
    flat = [o("store", ptr=at("out", o("arange", size=256)), value=o("load", ptr=at("tmp", o("arange", size=256))))]
    missing(through_scratch(STORE_ROWS, flat))


def test_a_store_over_another_lanes_load_or_store_needs_a_barrier() -> None:
    load_then_store = [let("v", o("load", ptr=at("x", TILE))), o("store", ptr=at("out", TILE), value="v"),
                       o("store", ptr=at("tmp", TILE), value="v")]
    read = [o("store", ptr=at("out", TILE), value=o("load", ptr=at("tmp", TILE)))]
    over_read = [o("store", ptr=at("tmp", TILE_T), value=o("full", shape=[16, 16], value=1.0, dtype="f32"))]
    assert missing(through_scratch(load_then_store + read, over_read)).message.split(" ")[2] == "stores"
    run(through_scratch(load_then_store + read, over_read, between=[o("barrier")]))
    over_write = [o("store", ptr=at("tmp", TILE_T), value=o("load", ptr=at("x", TILE))),
                  o("store", ptr=at("out", TILE), value=o("full", shape=[16, 16], value=0.0, dtype="f32"))]
    assert "stored it" in missing(through_scratch(STORE_ROWS, over_write)).message


def test_a_replicated_block_is_loaded_by_every_thread_after_one_thread_stored_it() -> None:
    """A scalar (or a block of fewer elements than the program's threads) is stored by one thread
    and loaded by all: a program reading back its own scalar and using it across a block (a row's
    mean stored, loaded and subtracted) reads, in the other threads, what the memory held before
    (red-team round 32)."""
    scalar = o("add", lhs="tmp", rhs="base")
    store_sum = [o("store", ptr=scalar, value=o("sum", x=o("load", ptr=at("x", R)), axis=0))]
    use_it = [o("store", ptr=at("out", R), value=o("sub", lhs=o("load", ptr=at("x", R)), rhs=o("load", ptr=scalar)))]
    diagnostic = missing(through_scratch(store_sum, use_it))
    assert "loads tmp[0] from every thread" in diagnostic.message and "lane [] of a [] block" in diagnostic.message
    run(through_scratch(store_sum, use_it, between=[o("barrier")]))
    one = o("arange", size=1)  # a [1] block: as replicated as a scalar, here through a let and a loop bound
    as_blocks = [o("store", ptr=at("tmp", one), value=o("load", ptr=at("x", one)))]
    read_back = [let("t", o("load", ptr=at("tmp", one))),
                 o("store", ptr=at("out", R), value=o("add", lhs=o("load", ptr=at("x", R)), rhs="t"))]
    missing(through_scratch(as_blocks, read_back))
    bound = [o("for", var="i", stop=o("cast", x=o("load", ptr=scalar), dtype="i32"),
               body=[o("store", ptr=at("out", R), value=0.0)])]
    missing(through_scratch(store_sum, bound))


def test_a_replicated_value_carried_into_the_next_trip_is_followed_there() -> None:
    """A loop carries a scalar it read back at the end of a trip into the next trip's block store:
    the carry holds the load's value from the second trip on."""
    scalar = o("add", lhs="tmp", rhs="base")
    trip = [o("store", ptr=at("out", R), value=o("add", lhs=o("load", ptr=at("x", R)), rhs="c")),
            o("store", ptr=scalar, value=o("sum", x=o("load", ptr=at("x", R)), axis=0))]
    loop = {"op": "for", "var": "i", "stop": 2, "carry": [{"name": "c", "init": 0.0, "next": o("load", ptr=scalar)}],
            "body": trip}
    assert "every thread" in missing(through_scratch([loop], [])).message


def test_a_replicated_block_whose_storing_thread_alone_uses_it_needs_no_barrier() -> None:
    """A scalar loaded back and stored at its own place again (its stale copies in the other
    threads are never stored), a block stored again at the positions it was loaded from, and a
    [256] block under 4 warps (128 threads: each element held once) are no hazard."""
    scalar = o("add", lhs="tmp", rhs="base")
    rmw = [o("store", ptr=scalar, value=o("load", ptr=o("add", lhs="x", rhs="base"))),
           o("store", ptr=scalar, value=o("add", lhs=o("load", ptr=scalar), rhs=1.0))]
    run(through_scratch(rmw, [o("store", ptr=o("add", lhs="out", rhs="base"), value=1.0)]))
    whole = o("arange", size=256)
    own = [o("store", ptr=at("tmp", whole), value=o("load", ptr=at("x", whole)))]
    again = [o("store", ptr=at("out", whole), value=o("load", ptr=at("tmp", whole)))]
    run(through_scratch(own, again))
    run({**through_scratch(own, again), "num_warps": 16})  # 512 threads: replicated, but stored as loaded
    summed = [o("store", ptr=o("add", lhs="out", rhs="base"), value=o("sum", x=o("load", ptr=at("tmp", whole)), axis=0))]
    assert "every thread" in missing({**through_scratch(own, summed), "num_warps": 16}).message
    run(through_scratch(own, summed))  # 4 warps: not replicated, each thread sums what it stored


ADD_TILE = [o("atomic_add", ptr=at("tmp", TILE), val=o("load", ptr=at("x", TILE)))]


def adding(kernel: dict) -> dict:
    """``kernel`` with tmp filled with zeros before the launch (atomics add into it)."""
    kernel["outputs"][1]["init"] = 0.0
    return kernel


@pytest.mark.parametrize("read", [
    o("atomic_add", ptr=o("add", lhs="tmp", rhs="base"), val=0.0, name="total"),  # a scalar's: thread 0
    o("atomic_xchg", ptr=o("add", lhs="tmp", rhs="base"), val=0.0, name="total"),
    o("atomic_add", ptr=at("tmp", TILE_T), val=o("full", shape=[16, 16], value=0.0, dtype="f32"), name="total"),
])
def test_an_atomic_read_of_other_lanes_atomic_updates_needs_a_barrier(read: dict) -> None:
    """Lanes add into tmp, then a scalar atomic (thread 0's) or an add of 0 reads back what other
    lanes' atomics made: thread 0 may run ahead of warp 3's adds (round 33). After a barrier it may."""
    scalar = read["val"] == 0.0
    use = [read, o("store", ptr=o("add", lhs="out", rhs="base") if scalar else at("out", TILE), value="total")]
    assert "reads back atomically" in missing(adding(through_scratch(ADD_TILE, use))).message
    run(adding(through_scratch(ADD_TILE, use, between=[o("barrier")])))


def test_a_block_that_claims_slots_after_other_lanes_needs_no_barrier() -> None:
    """Lanes add 1 to counters other lanes incremented: the slot each one gets is right in any order."""
    claim = [o("atomic_add", ptr=at("tmp", TILE_T), val=o("full", shape=[16, 16], value=1.0, dtype="f32"), name="slot"),
             o("store", ptr=at("out", TILE), value="slot")]
    run(adding(through_scratch(ADD_TILE, claim)))


def test_a_barrier_in_a_branch_orders_only_the_programs_that_take_it() -> None:
    """An if is per program: program 0 passes the barrier, program 1 does not."""
    branch = [o("if", cond=o("eq", lhs=o("program_id"), rhs=0), then=[o("barrier")])]
    diagnostic = missing(through_scratch(STORE_ROWS, LOAD_TRANSPOSED, grid=2, between=branch), grid=2)
    assert diagnostic.message.startswith("program 1 loads")


def test_a_barrier_in_a_loop_orders_each_iteration() -> None:
    """Each iteration stores a row and reads the rows before it as columns: a barrier per row."""
    def kernel(barrier: bool) -> dict:
        step = [o("store", ptr=at("tmp", o("add", lhs=o("mul", lhs="i", rhs=16), rhs=R)),
                  value=o("load", ptr=at("x", o("add", lhs=o("mul", lhs="i", rhs=16), rhs=R)))),
                o("store", ptr=at("out", o("add", lhs=o("mul", lhs="i", rhs=16), rhs=R)),
                  value=o("load", ptr=at("tmp", o("add", lhs=o("mul", lhs=R, rhs=16), rhs="i")),
                          mask=o("le", lhs=R, rhs="i")))]
        return through_scratch([o("for", var="i", stop=16, body=step + ([o("barrier")] if barrier else []))], [])
    missing(kernel(False))
    out = run(kernel(True))
    x, got = out["tmp"].view(16, 16), out["out"].view(16, 16)
    assert torch.equal(got, torch.where(torch.arange(16)[None, :] <= torch.arange(16)[:, None], x.T, 0.0))


def test_the_emitted_barrier_runs_in_tritons_interpreter(triton_interpreter: TritonInterpreter) -> None:
    checked = check(kernel_from_obj(through_scratch(STORE_ROWS, LOAD_TRANSPOSED, grid=2, between=[o("barrier")])))
    assert "    tl.debug_barrier()" in emit_triton(checked).splitlines()
    check_in_triton_interpreter(triton_interpreter, checked, {"x": torch.randn(512)})


def test_it_lowers_to_gpu_barrier_and_bar_sync() -> None:
    compiled = {barrier: compile_kernel(check(kernel_from_obj(through_scratch(
        STORE_ROWS, LOAD_TRANSPOSED, between=[o("barrier")] if barrier else []))), "sm_90", in_process=True,
        cache=False) for barrier in (True, False)}
    assert "gpu.barrier" in compiled[True].ttir and "gpu.barrier" not in compiled[False].ttir
    # The transposed load's layout change synchronizes through shared memory too: one bar.sync more.
    assert compiled[True].ptx.count("bar.sync") == compiled[False].ptx.count("bar.sync") + 1


def test_the_cholesky_golden_without_its_barrier_fails() -> None:
    """The careless factorization: columns stored, then read back by other lanes unordered."""
    task = get_task("cholesky_batched")
    answer = json.loads(kernel_to_json(task.golden))
    loop = answer["body"][-1]
    assert loop["body"][-1] == {"op": "barrier"}
    loop["body"].pop()
    result = evaluate_answer(task, json.dumps(answer), Settings(shapes=1, seed=0))
    assert result.outcome != Outcome.OK
    first = result.first_diagnostic()
    assert (first.code, first.path) == ("missing_barrier", f"/body/{len(answer['body']) - 1}/body/0/value")
    assert evaluate_answer(task, kernel_to_json(task.golden), Settings(shapes=1, seed=0)).ok


def test_the_manual_states_the_barrier() -> None:
    prompt = system_prompt(())
    assert "Barrier {\"op\":\"barrier\"}" in prompt and "missing_barrier:" in prompt
