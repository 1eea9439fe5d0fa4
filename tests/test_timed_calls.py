"""No timed call finds what an earlier call of the same timing left in memory
(:func:`kernelgen.gpu.case.kernel_call`, :func:`kernelgen.gpu.function.prepared_outputs`).

A kernel that read its previous results from its outputs or scratch, at the bench sizes only
(the interpreter refuses such a read as read_before_write, but only at the sizes it runs), and
skipped its work when it found them, passed the verification (poisoned memory on every call)
and was timed faster than any correct kernel: the timed repetitions reused one output buffer,
and a wrapper's call got its previous call's memory back from the caching allocator. These
kernels count instead of skipping: each adds one to what it finds, so after any number of
timed calls the result is the poison plus one, where a carried state would count them all."""

from __future__ import annotations

from typing import Any

import pytest

from kernelgen.check.checker import check
from kernelgen.interp.execute import allocate_scratch, poison
from kernelgen.lang.parse import kernel_from_obj

POISON = poison("i32")


def op(kind: str, /, **fields: Any) -> dict[str, Any]:
    return {"op": kind, **fields}


OFFS = {"op": "let", "name": "offs", "value": op("add", lhs=op("mul", lhs=op("program_id"), rhs=16),
                                                  rhs=op("arange", size=16))}
OK = op("lt", lhs="offs", rhs="N")


def incremented(target: str, source: str) -> dict[str, Any]:
    """target[offs] = source[offs] + 1, for the elements below N."""
    return op("store", ptr=op("add", lhs=target, rhs="offs"),
              value=op("add", lhs=op("load", ptr=op("add", lhs=source, rhs="offs"), mask=OK), rhs=1), mask=OK)


def output_counter() -> dict[str, Any]:
    """One kernel: y = y + 1 (x only gives the size)."""
    return {"name": "output_counter", "inputs": [{"name": "x", "dtype": "f32", "shape": ["N"]}],
            "outputs": [{"name": "y", "dtype": "i32", "shape": ["N"]}],
            "params": [{"name": "x"}, {"name": "y"}, {"name": "N"}], "grid": [op("cdiv", lhs="N", rhs=16)],
            "body": [OFFS, incremented("y", "y")]}


def scratch_counter() -> dict[str, Any]:
    """Two launches: s = s + 1 in scratch, then y = s."""
    copy = op("store", ptr=op("add", lhs="y", rhs="offs"), value=op("load", ptr=op("add", lhs="s", rhs="offs"), mask=OK),
              mask=OK)
    return {"name": "scratch_counter", "inputs": [{"name": "x", "dtype": "f32", "shape": ["N"]}],
            "outputs": [{"name": "y", "dtype": "i32", "shape": ["N"]}],
            "scratch": [{"name": "s", "dtype": "i32", "shape": ["N"]}, {"name": "z", "dtype": "i32", "shape": ["N"],
                                                                          "zero": True}],
            "launches": [
                {"name": "count", "params": [{"name": "x"}, {"name": "s"}, {"name": "z"}, {"name": "N"}],
                 "grid": [op("cdiv", lhs="N", rhs=16)], "body": [OFFS, incremented("s", "s"), incremented("z", "z")]},
                {"name": "copy", "params": [{"name": "s"}, {"name": "y"}, {"name": "N"}],
                 "grid": [op("cdiv", lhs="N", rhs=16)], "body": [OFFS, copy]}]}


def test_a_timed_call_allocates_the_zero_scratch_and_the_poisoned_scratch_apart() -> None:
    import torch

    from kernelgen.host.plan import plan_sequence

    checked = check(kernel_from_obj(scratch_counter()))
    plan = plan_sequence(checked, [torch.ones(5)])[0]
    assert set(allocate_scratch(checked, plan)) == {"s", "z"}
    poisoned, zeros = allocate_scratch(checked, plan, zero=False), allocate_scratch(checked, plan, zero=True)
    assert set(poisoned) == {"s"} and (poisoned["s"] == POISON).all()
    assert set(zeros) == {"z"} and (zeros["z"] == 0).all()


def test_prepared_outputs_is_scoped() -> None:
    from kernelgen.gpu.function import _fill_outputs, _prepared, prepared_outputs

    with prepared_outputs() as prepare:
        assert callable(prepare) and _fill_outputs.get() is False and _prepared.get() is not None
    assert _fill_outputs.get() is True and _prepared.get() is None


def _timed(document: dict[str, Any]) -> Any:
    """The output y after a kernel_call timed by event_times."""
    import torch

    from kernelgen.gpu.case import kernel_call
    from kernelgen.gpu.compile import compile_document
    from kernelgen.gpu.timing import event_times, flush_buffer

    checked = check(kernel_from_obj(document))
    x = torch.zeros(1000, device="cuda")
    call = kernel_call(checked, compile_document(checked), {"x": x})
    times = event_times(call.run, flush_buffer(), 10, 2, call.prepare)
    torch.cuda.synchronize()
    assert len(times) == 10
    return call.outputs["y"]


@pytest.mark.gpu
def test_each_timed_call_starts_from_poisoned_outputs() -> None:
    y = _timed(output_counter())
    assert (y == POISON + 1).all(), y[:4].tolist()


@pytest.mark.gpu
def test_each_timed_call_of_a_program_starts_from_poisoned_scratch_and_zeroed_scratch() -> None:
    y = _timed(scratch_counter())
    assert (y == POISON + 1).all(), y[:4].tolist()


@pytest.mark.gpu
@pytest.mark.parametrize("document", [output_counter, scratch_counter])
def test_each_timed_wrapper_call_starts_from_poisoned_memory(document: Any) -> None:
    import torch

    from kernelgen.gpu.function import KernelFunction, prepared_outputs
    from kernelgen.gpu.timing import event_times, flush_buffer

    function = KernelFunction(kernel_from_obj(document()))
    x = torch.zeros(1000, device="cuda")
    last: list[Any] = []

    def call() -> None:
        last[:] = [function(x=x)]

    with prepared_outputs() as prepare:
        def reset() -> None:  # drop the last result first, as the timer's calls do, so its memory is free again
            last.clear()
            prepare()

        event_times(call, flush_buffer(), 10, 2, reset)
    torch.cuda.synchronize()
    y = last[-1]["y"] if isinstance(last[-1], dict) else last[-1]
    assert (y == POISON + 1).all(), y[:4].tolist()
