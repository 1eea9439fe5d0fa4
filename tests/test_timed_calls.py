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


def copied(target: str, source: str) -> dict[str, Any]:
    return op("store", ptr=op("add", lhs=target, rhs="offs"), value=op("load", ptr=op("add", lhs=source, rhs="offs"),
                                                                       mask=OK), mask=OK)


def scratch_counter() -> dict[str, Any]:
    """Two launches: s = s + 1 and z = z + 1 in scratch (s poisoned, z zeroed), then y = s, z1 = z."""
    return {"name": "scratch_counter", "inputs": [{"name": "x", "dtype": "f32", "shape": ["N"]}],
            "outputs": [{"name": "y", "dtype": "i32", "shape": ["N"]}, {"name": "z1", "dtype": "i32", "shape": ["N"]}],
            "scratch": [{"name": "s", "dtype": "i32", "shape": ["N"]}, {"name": "z", "dtype": "i32", "shape": ["N"],
                                                                          "zero": True}],
            "launches": [
                {"name": "count", "params": [{"name": "x"}, {"name": "s"}, {"name": "z"}, {"name": "N"}],
                 "grid": [op("cdiv", lhs="N", rhs=16)], "body": [OFFS, incremented("s", "s"), incremented("z", "z")]},
                {"name": "copy", "params": [{"name": "s"}, {"name": "z"}, {"name": "y"}, {"name": "z1"}, {"name": "N"}],
                 "grid": [op("cdiv", lhs="N", rhs=16)], "body": [OFFS, copied("y", "s"), copied("z1", "z")]}]}


def init_counter() -> dict[str, Any]:
    """y (init 0) += 1 by an atomic add: every call fills y with its init as part of its work."""
    return {"name": "init_counter", "inputs": [{"name": "x", "dtype": "f32", "shape": ["N"]}],
            "outputs": [{"name": "y", "dtype": "i32", "shape": ["N"], "init": 0}],
            "params": [{"name": "x"}, {"name": "y"}, {"name": "N"}], "grid": [op("cdiv", lhs="N", rhs=16)],
            "body": [OFFS, op("atomic_add", ptr=op("add", lhs="y", rhs="offs"), val=1, mask=OK)]}


def inplace_counter() -> dict[str, Any]:
    """x += 1 in place (an output aliasing x)."""
    return {"name": "inplace_counter", "inputs": [{"name": "x", "dtype": "i32", "shape": ["N"]}],
            "outputs": [{"name": "y", "dtype": "i32", "shape": ["N"], "into": "x", "alias": True}],
            "params": [{"name": "y"}, {"name": "N"}], "grid": [op("cdiv", lhs="N", rhs=16)],
            "body": [OFFS, incremented("y", "y")]}


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


def test_restoring_sets_every_tensor_argument_back() -> None:
    import torch

    from kernelgen.gpu.timing import restoring

    x, y, z = torch.arange(4.0), torch.zeros(3, dtype=torch.int32), torch.ones(2)
    leaf, wide = torch.ones(2, requires_grad=True), torch.zeros(1).expand(5)  # a leaf that needs grad, no own memory
    restore = restoring([x, 3, {"y": y}], (z, leaf, wide))
    with torch.no_grad():
        x.add_(1), y.fill_(7), z.zero_(), leaf.zero_()
    restore()
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0] and y.tolist() == [0, 0, 0] and z.tolist() == [1.0, 1.0]
    assert leaf.tolist() == [1.0, 1.0] and wide.tolist() == [0.0] * 5


def test_prepared_outputs_makes_ready_as_many_as_one_call_took_and_poisons_flags_before_the_call() -> None:
    """Each of several calls in one timed function takes a tensor made ready by ``prepare``; a
    precondition's flags are poisoned there, an ``init`` output filled by the call itself."""
    import torch

    from kernelgen.gpu.function import _allocate, _OutputSpec, _prepared, prepared_outputs

    specs = (_OutputSpec("y", (4,), torch.int32, None, POISON), _OutputSpec("bad", (2,), torch.bool, None, True, True),
             _OutputSpec("acc", (4,), torch.int32, 0, POISON))
    device, restored = torch.device("cpu"), []
    with prepared_outputs(lambda: restored.append(True)) as prepare:
        first = _allocate(specs, device, {})
        assert first["bad"].all() and (first["acc"] == 0).all()  # flags and init are filled even unprepared
        _allocate(specs, device, {})  # the timed function calls twice
        prepare()
        state = _prepared.get()
        ready = {key[0]: [id(t) for t in tensors] for key, tensors in state.ready.items()}
        assert {name: len(ids) for name, ids in ready.items()} == {"y": 2, "bad": 2, "acc": 2} and restored == [True]
        state.ready[next(k for k in state.ready if k[0] == "bad")][0].fill_(False)  # what the call must not refill
        calls = [_allocate(specs, device, {}), _allocate(specs, device, {})]
        assert {id(c["y"]) for c in calls} == set(ready["y"]) and all((c["y"] == POISON).all() for c in calls)
        assert sorted(c["bad"].tolist() for c in calls) == [[False, False], [True, True]]
        assert all((c["acc"] == 0).all() for c in calls)


def _x(document: dict[str, Any]) -> Any:
    import torch

    dtype = torch.int32 if document["inputs"][0]["dtype"] == "i32" else torch.float32
    return torch.zeros(1000, dtype=dtype, device="cuda")


def _timed(document: dict[str, Any]) -> dict[str, Any]:
    """The outputs after a kernel_call timed by event_times."""
    import torch

    from kernelgen.gpu.case import kernel_call
    from kernelgen.gpu.compile import compile_document
    from kernelgen.gpu.timing import event_times, flush_buffer

    checked = check(kernel_from_obj(document))
    call = kernel_call(checked, compile_document(checked), {"x": _x(document)})
    times = event_times(call.run, flush_buffer(), 10, 2, call.prepare)
    torch.cuda.synchronize()
    assert len(times) == 10
    return dict(call.outputs)


# What each output holds after any number of timed calls, as after one.
ONE_CALL = {"output_counter": {"y": POISON + 1}, "scratch_counter": {"y": POISON + 1, "z1": 1},
            "init_counter": {"y": 1}, "inplace_counter": {"y": 1}}
COUNTERS = [output_counter, scratch_counter, init_counter, inplace_counter]


@pytest.mark.parametrize("document", COUNTERS)
def test_the_counters_check(document: Any) -> None:
    assert check(kernel_from_obj(document())).kernel.name == document.__name__


@pytest.mark.gpu
@pytest.mark.parametrize("document", COUNTERS)
def test_each_timed_call_starts_from_poisoned_memory(document: Any) -> None:
    outputs = _timed(document())
    for name, value in ONE_CALL[document.__name__].items():
        assert (outputs[name] == value).all(), (name, outputs[name][:4].tolist())


@pytest.mark.gpu
@pytest.mark.parametrize("calls", [1, 2])
@pytest.mark.parametrize("document", COUNTERS)
def test_each_timed_wrapper_call_starts_from_poisoned_memory(document: Any, calls: int) -> None:
    """Through the wrapper, as tasks with calls and TritonBench time it, one call or two in
    each timed function; an in-place call's argument is set back before each."""
    import torch

    from kernelgen.gpu.function import KernelFunction, prepared_outputs
    from kernelgen.gpu.timing import event_times, flush_buffer, restoring

    function = KernelFunction(kernel_from_obj(document()))
    x = _x(document())
    last: list[Any] = []

    def call() -> None:
        last[:] = [function(x=x) for _ in range(calls)]

    with prepared_outputs(restoring(x)) as prepare:
        def reset() -> None:  # drop the last results first, as the timer's calls do, so their memory is free again
            last.clear()
            prepare()

        event_times(call, flush_buffer(), 10, 2, reset)
    torch.cuda.synchronize()
    names = [out["name"] for out in document()["outputs"]]
    for number, result in enumerate(last):
        outputs = dict(zip(names, result)) if isinstance(result, tuple) else {names[0]: result}
        for name, value in ONE_CALL[document.__name__].items():
            # in place, the calls of one timed function follow each other on x, which each returns
            expected = calls if document is inplace_counter else value
            assert (outputs[name] == expected).all(), (name, number, outputs[name][:4].tolist())
