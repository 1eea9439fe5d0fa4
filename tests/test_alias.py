"""Aliasing outputs (Output ``alias``): an output that IS its ``into`` input's memory.

The checker's rules (each with its stable code and JSON path), the interpreter's meaning (the
output starts as the input's values, every element counts as written, an element no store
writes keeps the input's value), the in-place task's golden against careless kernels, the
emitted launcher and the GPU runtime handing the kernel the caller's tensor itself (a copy,
copied back, only where it cannot), and random aliasing kernels in Triton's interpreter.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kernelgen.check.checker import check
from kernelgen.emit.module import emit_triton, wrapper_name
from kernelgen.errors import InterpreterError, SemanticError, WrongResult
from kernelgen.host.call_replay import replay_of
from kernelgen.host.wrapper import bind_call, call_kernel, same_memory
from kernelgen.interp.execute import execute_call, interpret
from kernelgen.lang.parse import kernel_from_obj, kernel_to_obj
from kernelgen.task.spec import get_task
from kernelgen.task.variants import verify_call_cpu
from test_emit import TritonInterpreter, check_generated, triton_interpreter  # noqa: F401 - the fixture


def doubled_evens() -> dict:
    """``x[i] *= 2`` for even ``i`` through an output aliasing x: it loads its own lanes (the
    input's values) and stores the even ones only; the odd ones keep x's values."""
    lanes = {"op": "add", "lhs": {"op": "mul", "lhs": {"op": "program_id"}, "rhs": "BLOCK"},
             "rhs": {"op": "arange", "size": "BLOCK"}}
    even = {"op": "eq", "lhs": {"op": "rem", "lhs": "i", "rhs": 2}, "rhs": 0}
    ptr = {"op": "add", "lhs": "out", "rhs": "i"}
    return {"name": "doubled_evens", "inputs": [{"name": "x", "dtype": "f32", "shape": ["N"]}],
            "outputs": [{"name": "out", "dtype": "f32", "shape": ["N"], "into": "x", "alias": True}],
            "params": [{"name": "out"}, {"name": "N"}], "meta": [{"name": "BLOCK", "value": 32}],
            "grid": [{"op": "cdiv", "lhs": "N", "rhs": "BLOCK"}],
            "body": [{"op": "let", "name": "i", "value": lanes},
                     {"op": "let", "name": "m", "value": {"op": "lt", "lhs": "i", "rhs": "N"}},
                     {"op": "let", "name": "v", "value": {"op": "load", "ptr": ptr, "mask": "m"}},
                     {"op": "store", "ptr": ptr, "value": {"op": "mul", "lhs": "v", "rhs": 2.0},
                      "mask": {"op": "and", "lhs": "m", "rhs": even}}]}


def codes(doc: dict) -> set[tuple[str, str]]:
    with pytest.raises(SemanticError) as error:
        check(kernel_from_obj(doc))
    return {(d.path, d.code) for d in error.value.diagnostics}


def golden() -> dict:
    return kernel_to_obj(get_task("index_fill_inplace").golden)


# -- the checker ---------------------------------------------------------------------------------


def test_an_aliasing_output_is_checked_with_codes_and_paths() -> None:
    assert check(kernel_from_obj(doubled_evens()))
    no_into = doubled_evens()
    del no_into["outputs"][0]["into"]
    assert codes(no_into) == {("/outputs/0/alias", "bad_signature")}
    with_init = doubled_evens()
    with_init["outputs"][0]["init"] = 0.0
    assert codes(with_init) == {("/outputs/0/alias", "bad_signature")}
    other_shape = doubled_evens()
    other_shape["outputs"][0]["shape"] = [{"op": "add", "lhs": "N", "rhs": 0}]
    assert codes(other_shape) == {("/outputs/0/shape", "bad_signature")}
    flagged = doubled_evens()
    flagged["inputs"].append({"name": "inplace", "role": "inplace", "default": False})
    assert codes(flagged) == {("/outputs/0/alias", "bad_signature")}
    twice = doubled_evens()
    twice["outputs"].append({**twice["outputs"][0], "name": "again"})
    twice["params"].append({"name": "again"})
    assert ("/outputs/1/alias", "bad_signature") in codes(twice)


def test_no_param_may_bind_the_aliased_input() -> None:
    """Two names for one buffer would hide a read of x racing a store to out."""
    by_name = doubled_evens()
    by_name["params"].insert(0, {"name": "x"})
    assert codes(by_name) == {("/params/0/name", "aliased_input")}
    by_value = doubled_evens()
    by_value["params"].insert(1, {"name": "source", "value": "x"})
    assert codes(by_value) == {("/params/1/value", "aliased_input")}
    sized = doubled_evens()  # the input's sizes and strides stay host values a param may take
    sized["params"].append({"name": "count", "value": {"op": "numel", "of": "x"}})
    assert check(kernel_from_obj(sized))


def test_an_aliased_input_bound_by_a_launch_of_a_program_is_refused_there() -> None:
    doc = doubled_evens()
    launch = {key: doc.pop(key) for key in ("params", "grid", "body")}
    doc["launches"] = [{"name": "first", **launch},
                       {"name": "second", **copy.deepcopy(launch), "params": [{"name": "x"}, *launch["params"]]}]
    assert codes(doc) == {("/launches/1/params/0/name", "aliased_input")}
    del doc["launches"][1]["params"][0]
    # The second launch loads what the first left: the output holds values from the start.
    x = torch.arange(6, dtype=torch.float32)
    assert torch.equal(interpret(check(kernel_from_obj(doc)), {"x": x})["out"], torch.tensor([0., 1, 8, 3, 16, 5]))


def test_the_prompt_describes_alias() -> None:
    from kernelgen.model.prompt import language_reference

    reference = language_reference()
    assert '"alias"?:bool=false' in reference and "aliased_input" in reference


# -- the interpreter -------------------------------------------------------------------------------


def test_the_output_starts_as_the_input_and_unwritten_elements_keep_it() -> None:
    x = torch.randn(70)
    run = execute_call(check(kernel_from_obj(doubled_evens())), {"x": x}, orders=True)
    expected = x.clone()
    expected[::2] *= 2
    assert torch.equal(run.outputs["out"], expected)
    assert bool(run.written["out"].all())  # every element counts as written: none is unwritten
    assert run.outputs["out"].data_ptr() != x.data_ptr() and torch.equal(x, x.clone())


def test_a_call_changes_the_callers_tensor_and_returns_it() -> None:
    kernel = kernel_from_obj(doubled_evens())
    given = torch.randn(40)
    expected = given.clone()
    expected[::2] *= 2
    result = call_kernel(kernel, [given], {}, interpret)
    assert result is given and torch.equal(given, expected)
    strided = torch.randn(80)[::2]  # not contiguous: the kernel runs on a copy, copied back
    expected = strided.clone()
    expected[::2] *= 2
    assert call_kernel(kernel, [strided], {}, interpret) is strided and torch.equal(strided, expected)


def test_a_replayed_call_changes_the_later_callers_tensor() -> None:
    kernel = kernel_from_obj(doubled_evens())
    first, later = torch.randn(40), torch.randn(40)
    replay = replay_of(kernel, [first], {}, bind_call(kernel, [first], {}))
    assert replay is not None
    call = replay.bind([later], {})
    expected, kept = later.clone(), first.clone()
    expected[::2] *= 2
    assert call.finish(interpret(check(kernel), call.args)) is later
    assert torch.equal(later, expected) and torch.equal(first, kept)


# -- index_fill_ in place: the golden and careless kernels ---------------------------------------


def fill_call(variant: str) -> Any:
    return next(t for t in get_task("index_fill_inplace").variant_tasks() if t.variant.name == variant)


@pytest.mark.parametrize("variant", ["rows", "columns"])
def test_the_golden_fills_repeated_indices_in_place(variant: str) -> None:
    dim = 0 if variant == "rows" else 1
    kernel = kernel_from_obj(golden())
    x, index = torch.randn(9, 7), torch.tensor([4, 0, 4, 6, 0])
    expected = x.clone().index_fill_(dim, index, -2.5)
    assert call_kernel(kernel, [dim, x, index, -2.5], {}, interpret) is x and torch.equal(x, expected)
    task = fill_call(variant)
    verify_call_cpu(task, task.golden, {"M": 37, "N": 29, "K": 12}, seed=3)


def fails(variant: str, doc: dict) -> set[str]:
    with pytest.raises(WrongResult) as error:
        verify_call_cpu(fill_call(variant), kernel_from_obj(doc), {"M": 37, "N": 29, "K": 12}, seed=3)
    return {d.code for d in error.value.diagnostics}


@pytest.mark.parametrize("variant", ["rows", "columns"])
def test_a_kernel_filling_only_the_first_listed_index_fails(variant: str) -> None:
    doc = golden()
    doc["grid"][0] = 1
    assert "input_modified" in fails(variant, doc)


@pytest.mark.parametrize("variant", ["rows", "columns"])
def test_a_kernel_filling_the_neighbour_row_or_column_fails(variant: str) -> None:
    doc = golden()
    at32 = next(s for s in doc["body"] if s.get("name") == "at32")
    at32["value"] = {"op": "minimum", "lhs": {"op": "add", "lhs": at32["value"], "rhs": 1},
                     "rhs": {"op": "sub", "lhs": {"op": "where", "cond": {"op": "eq", "lhs": "dim", "rhs": 0},
                                                  "x": "M", "y": "N"}, "rhs": 1}}
    assert "input_modified" in fails(variant, doc)


def test_a_kernel_storing_every_listed_repeat_races() -> None:
    """Two programs storing one element is a race even where they store one value."""
    doc = golden()
    store = doc["body"][-1]
    store["mask"] = store["mask"]["rhs"]
    with pytest.raises(InterpreterError) as error:
        call_kernel(kernel_from_obj(doc), [0, torch.randn(9, 7), torch.tensor([4, 0, 4]), 1.0], {}, interpret)
    assert {d.code for d in error.value.diagnostics} == {"race"}


# -- the launchers hand the kernel the caller's tensor ---------------------------------------------


def test_the_emitted_launcher_runs_on_the_callers_tensor(triton_interpreter: TritonInterpreter) -> None:
    checked = check(kernel_from_obj(golden()), {"dim": 1})
    source = emit_triton(checked)
    assert "torch.empty" not in source and "_alias_buffer(x, (index, ))" in source
    source += ("\n\ndef changed(dim, x, index, value):\n"
               "    before = x.data_ptr()\n"
               f"    result = {wrapper_name(checked.kernel)}(dim, x, index, value)\n"
               "    return result, x, torch.tensor(result is x and x.data_ptr() == before)\n")
    index = torch.tensor([3, 0, 3])
    for given in (torch.randn(4, 5), torch.randn(5, 4).t()):  # contiguous, then not (a copy, copied back)
        expected = given.clone().index_fill_(1, index, 2.5)
        got, changed, same = triton_interpreter.run(source, "changed", [1, given, index, 2.5])
        assert torch.equal(got, expected) and torch.equal(changed, expected) and bool(same)


def test_the_runtime_takes_the_callers_tensor_unless_it_cannot() -> None:
    from kernelgen.gpu.function import _alias_buffer

    x, other = torch.randn(64), torch.randn(64)
    assert _alias_buffer({"x": x, "other": other}, "x") is x
    shifted = torch.randn(65)[1:]  # not 16-byte aligned, as the compiled kernel assumes
    assert _alias_buffer({"x": shifted}, "x").data_ptr() % 16 == 0
    base = torch.randn(128)
    overlapping = _alias_buffer({"x": base[:64], "other": base[32:96]}, "x")
    assert overlapping.data_ptr() != base.data_ptr() and torch.equal(overlapping, base[:64])
    assert _alias_buffer({"x": base[:64], "other": base[64:]}, "x") is not None
    assert same_memory(x.view(8, 8), x.view(8, 8)) and not same_memory(x.clone(), x)


@pytest.mark.gpu
def test_a_gpu_call_writes_the_callers_tensor_without_a_copy() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    from kernelgen.gpu.function import KernelFunction

    function = KernelFunction(kernel_from_obj(golden()))
    index = torch.tensor([7, 1, 7, 4096], device="cuda")
    x = torch.randn(4100, 4100, device="cuda")
    expected = x.clone().index_fill_(0, index, -1.5)
    function(0, x, index, -1.5)  # compiles, binds, plans
    torch.cuda.synchronize()
    for _ in range(2):  # the second call replays the binding
        x = torch.randn(4100, 4100, device="cuda")
        expected = x.clone().index_fill_(0, index, -1.5)
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.max_memory_allocated()
        assert function(0, x, index, -1.5) is x
        torch.cuda.synchronize()
        assert torch.cuda.max_memory_allocated() - before < x.numel() * 4  # no copy of x
        assert torch.equal(x, expected)
    columns = torch.randn(4100, 300, device="cuda").t()  # not contiguous: a copy, copied back
    expected = columns.clone().index_fill_(1, index[:3] % 300, 3.0)
    assert function(1, columns, index[:3] % 300, 3.0) is columns and torch.equal(columns, expected)


# -- random aliasing kernels -----------------------------------------------------------------------


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_aliasing_kernels_match_interpreter(data: st.DataObject, triton_interpreter: TritonInterpreter) -> None:
    """The generator's aliasing outputs (elementwise template) in Triton's interpreter, whose
    launcher hands the kernel the caller's tensor, against ours, which copies it."""
    from kernelgen.draw.strategies import elementwise_kernels

    generated = data.draw(elementwise_kernels())
    assume("aliasing output" in generated.constructs())
    check_generated(generated, triton_interpreter, seed=3)
