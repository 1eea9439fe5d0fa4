"""The host side of issue 34: host values and host conditionals, optional scalars, ints and
numbers (``present``), output shapes set by an argument (``call_shapes``) and in-place
operators on a tensor other than the first (``into``). Each construct is checked, run by the
interpreter through the wrapper, and run as the emitted launcher in Triton's interpreter; and
the wrong kernel a careless model would write fails its task."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import torch

from kernelgen.check.checker import check
from kernelgen.emit.module import emit_triton, wrapper_name
from kernelgen.errors import HostError, Outcome, SemanticError, WrongResult
from kernelgen.harness.pipeline import Settings, evaluate_answer
from kernelgen.host.call_replay import replay_of
from kernelgen.host.plan import HostEnv, eval_host
from kernelgen.host.wrapper import bind_call, call_kernel
from kernelgen.interp.execute import interpret
from kernelgen.lang import nodes as L
from kernelgen.lang.parse import kernel_from_obj, kernel_to_obj
from kernelgen.task.spec import get_task, load_task_file
from kernelgen.task.variants import unlisted_calls, verify_call_cpu
from test_emit import TritonInterpreter, triton_interpreter  # noqa: F401 - the fixture

ROOT = Path(__file__).resolve().parents[1]


def golden(task_id: str) -> dict:
    return kernel_to_obj(get_task(task_id).golden)


def codes(doc: dict) -> set[tuple[str, str]]:
    with pytest.raises(SemanticError) as error:
        check(kernel_from_obj(doc))
    return {(d.path, d.code) for d in error.value.diagnostics}


def interpreted(doc: dict, *args: Any, **kwargs: Any) -> Any:
    return call_kernel(kernel_from_obj(doc), args, kwargs, interpret)


def emitted(interpreter: TritonInterpreter, doc: dict, args: list[Any]) -> list[torch.Tensor]:
    """The variant the call selects, emitted and run by its launcher in Triton's interpreter."""
    kernel = kernel_from_obj(doc)
    call = bind_call(kernel, args, {})
    checked = check(kernel, call.meta, call.dtypes or None)
    return interpreter.run(emit_triton(checked), wrapper_name(checked.kernel), args)


# -- host values and host conditionals ---------------------------------------------------------


def test_host_values_are_checked_in_order_with_paths() -> None:
    doc = golden("avg_pool1d_stride")
    doc["host_values"].reverse()  # n_out now reads step before step is defined
    with pytest.raises(SemanticError) as error:
        check(kernel_from_obj(doc))
    [diagnostic] = error.value.diagnostics  # once: n_out's later uses are not reported again
    assert (diagnostic.path, diagnostic.code) == ("/host_values/0/value/lhs/rhs", "undefined_name")
    assert "evaluated in order" in diagnostic.message
    doc = golden("avg_pool1d_stride")
    doc["host_values"][0]["value"]["y"] = "step"  # itself: a cycle
    with pytest.raises(SemanticError) as error:
        check(kernel_from_obj(doc))
    [diagnostic] = error.value.diagnostics
    assert (diagnostic.path, diagnostic.code) == ("/host_values/0/value/y", "undefined_name")
    assert "evaluated in order" in diagnostic.message
    doc = golden("avg_pool1d_stride")
    doc["host_values"][1]["name"] = "L"
    assert ("/host_values/1/name", "duplicate_name") in codes(doc)
    doc = golden("avg_pool1d_stride")
    doc["host_values"][0]["value"]["cond"] = "HAS_STRIDE"  # an int, not a bool
    assert codes(doc) == {("/host_values/0/value/cond", "needs_bool")}
    doc = golden("avg_pool1d_stride")
    doc["host_values"][0]["value"]["y"] = 2.5
    assert codes(doc) == {("/host_values/0/value", "dtype_mismatch")}
    doc = golden("avg_pool1d_stride")
    doc["host_values"][0]["value"] = "x"
    assert ("/host_values/0/value", "needs_int") in codes(doc)


def test_the_body_sees_host_values_only_through_params() -> None:
    doc = golden("avg_pool1d_stride")
    doc["params"] = [p for p in doc["params"] if p["name"] != "step"]
    assert {code for _, code in codes(doc)} == {"undefined_name"}


def test_later_stages_read_host_values_inlined() -> None:
    checked = check(get_task("avg_pool1d_stride").golden, {"HAS_STRIDE": 0, "K": 3, "S": 1})
    assert checked.kernel.host_values == []
    assert "step" not in str(checked.kernel.grid) and "n_out" not in str(checked.kernel.outputs)
    assert [p.value for p in checked.params if p.name == "step"][0] == L.Where(
        op="where", cond=L.Binary(op="eq", lhs="HAS_STRIDE", rhs=1), x="S", y="K")


def test_a_host_where_evaluates_only_the_taken_branch() -> None:
    expr = L.Where(op="where", cond=L.Binary(op="gt", lhs="D", rhs=0), x=L.Binary(op="idiv", lhs=8, rhs="D"), y=0)
    assert eval_host(expr, HostEnv({"D": 0}, {}, {})) == 0
    assert eval_host(expr, HostEnv({"D": 4}, {}, {})) == 2


@pytest.mark.parametrize("kernel_size, stride", [(3, None), (4, 2), ((2,), (3,))])
def test_host_values_agree_between_interpreter_and_launcher(kernel_size: Any, stride: Any,
                                                            triton_interpreter: TritonInterpreter) -> None:
    x = torch.randn(3, 29)
    expected = torch.nn.functional.avg_pool1d(x, kernel_size, stride)
    doc = golden("avg_pool1d_stride")
    torch.testing.assert_close(interpreted(doc, x, kernel_size, stride), expected)
    [got] = emitted(triton_interpreter, doc, [x, kernel_size, stride])
    torch.testing.assert_close(got, expected)


# -- optional scalars, numbers and ints --------------------------------------------------------


def test_optional_scalars_name_a_presence_flag() -> None:
    doc = golden("clamp_optional")
    del doc["inputs"][1]["present"]
    assert ("/inputs/1", "bad_signature") in codes(doc)
    doc = golden("clamp_optional")
    doc["inputs"][1]["default"] = 0.0  # present goes with default null only
    assert ("/inputs/1/present", "bad_signature") in codes(doc)


@pytest.mark.parametrize("low, high", [(-0.5, None), (None, 0.25), (-0.5, 0.25), (torch.tensor(-0.5), None)])
def test_an_omitted_scalar_is_zero_and_its_flag_zero(low: Any, high: Any,
                                                     triton_interpreter: TritonInterpreter) -> None:
    """A 0-dim tensor passed for a scalar is read as its value (torch.clamp takes one)."""
    x = torch.tensor([-2.0, -0.4, 0.1, 0.3, float("nan"), 5.0])
    expected = torch.clamp(x, min=low, max=high)
    doc = golden("clamp_optional")
    torch.testing.assert_close(interpreted(doc, x, low, high), expected, equal_nan=True)
    [got] = emitted(triton_interpreter, doc, [x, low, high])
    torch.testing.assert_close(got, expected, equal_nan=True)


def test_a_number_input_may_be_optional() -> None:
    doc = golden("clamp_optional")
    for i, bound in ((1, "min"), (2, "max")):
        doc["inputs"][i] |= {"shape": ["N"], "number": True}
        doc["body"][i + 2]["value"]["x"]["rhs"] = {"op": "load", "ptr": {"op": "add", "lhs": bound, "rhs": "offs"},
                                                   "mask": "in_range"}
    kernel = kernel_from_obj(doc)
    call = bind_call(kernel, [torch.arange(4.0), None, 2.0], {})
    assert call.meta == {"HAS_MIN": 0, "HAS_MAX": 1}
    assert torch.equal(call.args["min"], torch.zeros(4))
    x = torch.tensor([0.0, 1.0, 3.0])
    torch.testing.assert_close(interpreted(doc, x, None, torch.tensor([2.0, 2.0, 2.5])), torch.tensor([0.0, 1.0, 2.5]))


def test_optional_ints_take_none() -> None:
    kernel = get_task("avg_pool1d_stride").golden
    assert bind_call(kernel, [torch.zeros(2, 9), 3, None], {}).meta == {"K": 3, "S": 1, "HAS_STRIDE": 0}
    assert bind_call(kernel, [torch.zeros(2, 9), 3, (2,)], {}).meta == {"K": 3, "S": 2, "HAS_STRIDE": 1}


def test_unlisted_calls_cover_optional_scalar_patterns() -> None:
    """A task listing only the call with both bounds gets the calls with one of them; neither is
    no call (torch.clamp raises), so it is not admitted."""
    task = get_task("clamp_optional")
    both = task.model_copy(update={"id": "clamp_optional_both_only", "variants": task.variants[:1]})
    assert sorted(list(t.variant.args.items()) for t in unlisted_calls(both)) == [[("max", None)], [("min", None)]]


def test_every_combination_of_choice_values_is_verified() -> None:
    """amax_keepdim lists 4 of its 8 (dim, keepdim) calls; the other 4 are verified as unlisted
    calls, so a kernel whose keepdim shape follows only dim's first choice fails (red-team
    amax_keepdim_keepdim_shape_tests_dim_index_0). Choices only combine with a listed call's
    binding: index_fill_inplace's two listed calls already make both of its dims."""
    task = get_task("amax_keepdim")
    listed = {(v.args["dim"], v.args["keepdim"]) for v in task.variants}
    made = {(t.variant.args["dim"], t.variant.args["keepdim"]) for t in unlisted_calls(task)}
    assert len(listed) == 4 and listed | made == {(d, k) for d in (0, 1, -2, -1) for k in (False, True)}
    assert not listed & made and unlisted_calls(get_task("index_fill_inplace")) == []


# -- output shapes set by an argument ----------------------------------------------------------


def test_call_shapes_go_without_a_view_and_take_a_bool() -> None:
    doc = golden("amax_keepdim")
    doc["outputs"][0]["call_shapes"][1]["when"] = "keepdim"
    assert codes(doc) == {("/outputs/0/call_shapes/1/when", "needs_bool")}


def test_a_call_shape_of_another_element_count_is_refused() -> None:
    doc = golden("amax_keepdim")
    doc["outputs"][0]["call_shapes"][1]["shape"] = ["N", 1]
    with pytest.raises(HostError) as error:
        interpreted(doc, torch.randn(3, 5), 1, True)
    assert {(d.path, d.code) for d in error.value.diagnostics} == {("/outputs/0/call_shapes/1", "bad_arguments")}


@pytest.mark.parametrize("dim, keepdim", [(1, False), (-1, True), (0, True), (-2, False)])
def test_keepdim_sets_the_rank_in_interpreter_and_launcher(dim: int, keepdim: bool,
                                                           triton_interpreter: TritonInterpreter) -> None:
    x = torch.randn(6, 70)
    expected = torch.amax(x, dim=dim, keepdim=keepdim)
    doc = golden("amax_keepdim")
    assert torch.equal(interpreted(doc, x, dim, keepdim), expected)
    [got] = emitted(triton_interpreter, doc, [x, dim, keepdim])
    assert torch.equal(got, expected)


# -- in place on a tensor other than the first -------------------------------------------------


def test_into_names_a_tensor_input_of_the_outputs_dtype() -> None:
    doc = golden("index_fill_inplace")
    doc["outputs"][0]["into"] = "index"
    assert codes(doc) == {("/outputs/0/into", "bad_signature")}


def test_into_changes_the_callers_tensor_in_interpreter_and_launcher(triton_interpreter: TritonInterpreter) -> None:
    doc = golden("index_fill_inplace")
    x, index = torch.randn(4, 5), torch.tensor([3, 0, 3])
    expected = x.clone().index_fill_(1, index, 2.5)
    given = x.clone()
    result = interpreted(doc, 1, given, index, 2.5)
    assert result is given and torch.equal(given, expected)
    kernel = kernel_from_obj(doc)
    # A later call of the signature replays the binding, and its result goes into its own x.
    replay = replay_of(kernel, [1, given, index, 2.5], {}, bind_call(kernel, [1, given, index, 2.5], {}))
    later = x.clone()
    call = replay.bind([1, later, index, 2.5], {})
    assert call.finish(interpret(check(kernel, call.meta), call.args)) is later and torch.equal(later, expected)
    checked = check(kernel, {"dim": 1})
    source = emit_triton(checked) + (
        "\n\ndef returned_and_changed(dim, x, index, value):\n"
        f"    result = {wrapper_name(checked.kernel)}(dim, x, index, value)\n"
        "    return result, x, torch.tensor(result.data_ptr() == x.data_ptr())\n")
    got, changed, same = triton_interpreter.run(source, "returned_and_changed", [1, x.clone(), index, 2.5])
    assert torch.equal(got, expected) and torch.equal(changed, expected) and bool(same)


# -- the careless kernels fail their tasks -----------------------------------------------------


def fails(task_id: str, variant: str, doc: dict, code: str) -> None:
    task = next(t for t in get_task(task_id).variant_tasks() if t.variant.name == variant)
    sizes = {name: max(r.min, 5) for name, r in task.sizes.items()}
    with pytest.raises(WrongResult) as error:
        verify_call_cpu(task, kernel_from_obj(doc), sizes, seed=1)
    assert code in {d.code for d in error.value.diagnostics}


def test_goldens_pass_those_calls() -> None:
    for task_id, variant in (("amax_keepdim", "rows_keepdim"), ("index_fill_inplace", "columns"),
                             ("clamp_optional", "min_only"), ("avg_pool1d_stride", "stride_none")):
        task = next(t for t in get_task(task_id).variant_tasks() if t.variant.name == variant)
        verify_call_cpu(task, task.golden, {name: max(r.min, 5) for name, r in task.sizes.items()}, seed=1)


def test_a_kernel_ignoring_keepdim_fails() -> None:
    doc = golden("amax_keepdim")
    del doc["outputs"][0]["call_shapes"]
    fails("amax_keepdim", "rows_keepdim", doc, "wrong_shape")


def test_a_kernel_that_returns_a_new_tensor_instead_of_changing_x_fails() -> None:
    doc = golden("index_fill_inplace")
    del doc["outputs"][0]["into"], doc["outputs"][0]["alias"]
    fails("index_fill_inplace", "rows", doc, "input_modified")


def test_a_kernel_that_changes_the_wrong_tensor_fails(tmp_path: Path) -> None:
    """``torch.Tensor.add_`` on the second argument: writing the sum into the first fails."""
    text = (ROOT / "bench" / "easy" / "relu.yaml").read_text()
    doc = lanes_kernel("add_into_second", [{"name": "a", "dtype": "f32", "shape": ["N"]},
                                           {"name": "x", "dtype": "f32", "shape": ["N"]}],
                       {"name": "out", "dtype": "f32", "shape": ["N"], "into": "x"}, ["a", "x"],
                       {"op": "add", "lhs": lane("a"), "rhs": lane("x")})
    import yaml

    spec = yaml.safe_load(text)
    spec.update(prompt="x.add_(a), written in place into the second argument x.",
                signature={"inputs": doc["inputs"], "outputs": [{"name": "out", "dtype": "f32", "shape": ["N"]}]},
                reference="def reference(a, x):\n    return x.add_(a)\n", golden=doc)
    spec.pop("eager", None)
    (tmp_path / "easy").mkdir()
    path = tmp_path / "easy" / "add_into_second.yaml"
    path.write_text(yaml.safe_dump(spec))
    task = load_task_file(path)
    assert task.in_place and not task.variants  # so the pipeline calls every answer through its wrapper
    settings = Settings(compile=False, shapes=3)
    assert evaluate_answer(task, json.dumps(doc), settings).ok
    wrong = copy.deepcopy(doc)
    wrong["outputs"][0]["into"] = "a"
    result = evaluate_answer(task, json.dumps(wrong), settings)
    assert result.outcome == Outcome.WRONG_RESULT
    assert {d["path"] for d in result.diagnostics if d["code"] == "input_modified"} == {"/inputs/0", "/inputs/1"}
    del wrong["outputs"][0]["into"]  # a new tensor returned, x left as it was
    result = evaluate_answer(task, json.dumps(wrong), settings)
    assert [(d["path"], d["code"]) for d in result.diagnostics] == [("/inputs/1", "input_modified")]


def test_a_kernel_reading_a_left_out_bound_as_zero_fails() -> None:
    doc = golden("clamp_optional")
    body = doc["body"]
    body[3]["value"] = {"op": "maximum", "lhs": "v", "rhs": "min"}  # min applied whether given or not
    body[4]["value"] = {"op": "minimum", "lhs": "above", "rhs": "max"}
    fails("clamp_optional", "max_only", doc, "mismatch")


def test_a_kernel_ignoring_a_left_out_stride_fails() -> None:
    doc = golden("avg_pool1d_stride")
    doc["host_values"][0]["value"] = "S"  # stride None read as 1, not kernel_size
    fails("avg_pool1d_stride", "stride_none", doc, "wrong_shape")


def test_the_lowering_binds_an_optional_ints_items_and_its_flag() -> None:
    """The body may read both the items of an optional ints argument and its presence flag."""
    from kernelgen.lower.lowering import lower

    doc = golden("avg_pool1d_stride")
    doc["body"][3]["stop"] = {"op": "add", "lhs": "K", "rhs": {"op": "sub", "lhs": "HAS_STRIDE", "rhs": "HAS_STRIDE"}}
    for meta in ({"HAS_STRIDE": 0, "K": 3, "S": 1}, {"HAS_STRIDE": 1, "K": 4, "S": 2}):
        assert "scf.for" in lower(check(kernel_from_obj(doc), meta)).ttir


def test_a_program_shares_its_host_values_among_launches() -> None:
    """A program's scratch shapes and grids may name the document's host values."""
    doc = golden("batchnorm_forward_train")
    doc["host_values"] = [{"name": "columns", "value": {"op": "maximum", "lhs": "H", "rhs": 1}}]
    for scratch in doc["scratch"]:
        scratch["shape"] = ["columns" if d == "H" else d for d in scratch["shape"]]
    x, weight, bias = torch.randn(37, 20), torch.randn(20), torch.randn(20)
    expected = interpreted(golden("batchnorm_forward_train"), x, weight, bias, 1e-5)
    for got, want in zip(interpreted(doc, x, weight, bias, 1e-5), expected):
        assert torch.equal(got, want)
    assert "torch.empty((SPLIT, max(H, 1))" in emit_triton(check(kernel_from_obj(doc)))  # the launcher's scratch
    doc["host_values"][0]["value"]["rhs"] = "later"
    assert codes(doc) == {("/host_values/0/value/rhs", "undefined_name")}


# -- a tuple of floats -------------------------------------------------------------------------


def lane(tensor: str) -> dict:
    """Lane ``i`` of a tensor, masked by ``m`` (see :func:`lanes_kernel`)."""
    return {"op": "load", "ptr": {"op": "add", "lhs": tensor, "rhs": "i"}, "mask": "m"}


def lanes_kernel(name: str, inputs: list[dict], output: dict, params: list[str], value: dict) -> dict:
    """A kernel storing ``value`` at each lane ``i < N`` of its 1-D output, BLOCK lanes a program."""
    lanes = {"op": "add", "lhs": {"op": "mul", "lhs": {"op": "program_id"}, "rhs": "BLOCK"},
             "rhs": {"op": "arange", "size": "BLOCK"}}
    return {"name": name, "inputs": inputs, "outputs": [output],
            "params": [{"name": p} for p in [*params, output["name"], "N"]],
            "meta": [{"name": "BLOCK", "value": 64}], "grid": [{"op": "cdiv", "lhs": "N", "rhs": "BLOCK"}],
            "body": [{"op": "let", "name": "i", "value": lanes},
                     {"op": "let", "name": "m", "value": {"op": "lt", "lhs": "i", "rhs": "N"}},
                     {"op": "store", "ptr": {"op": "add", "lhs": output["name"], "rhs": "i"}, "mask": "m",
                      "value": value}]}


def scale_shift() -> dict:
    """``y = x * coeffs[0] + coeffs[1]``, ``coeffs`` a float or a pair (None: ``(0.0, 0.0)``)."""
    return lanes_kernel("scale_shift", [{"name": "x", "dtype": "f32", "shape": ["N"]},
                                        {"name": "coeffs", "role": "floats", "items": ["scale", "shift"],
                                         "default": None, "present": "HAS_COEFFS"}],
                        {"name": "y", "dtype": "f32", "shape": ["N"]}, ["x", "scale", "shift"],
                        {"op": "fma", "x": lane("x"), "y": "scale", "z": "shift"})


def test_floats_items_are_scalars_with_a_checked_signature() -> None:
    doc = scale_shift()
    doc["inputs"][1]["dtype"] = "i32"
    assert codes(doc) == {("/inputs/1/dtype", "bad_signature")}
    doc = scale_shift()
    doc["inputs"][1]["default"] = [0.5]  # one number for two items
    del doc["inputs"][1]["present"]
    assert codes(doc) == {("/inputs/1/default", "bad_signature")}
    doc = scale_shift()
    doc["inputs"][1]["items"] = ["scale", "N"]
    assert ("/inputs/1/items/1", "duplicate_name") in codes(doc)
    with pytest.raises(HostError) as error:
        interpreted(scale_shift(), torch.ones(3), (1.0, "a"))
    assert [(d.path, d.code) for d in error.value.diagnostics] == [("/inputs/1", "bad_arguments")]


@pytest.mark.parametrize("coeffs", [(0.5, -2.0), [3, 0.25], 1.5, None])
def test_floats_agree_between_interpreter_and_launcher(coeffs: Any, triton_interpreter: TritonInterpreter) -> None:
    x = torch.randn(37)  # the launcher takes the kernel's own shapes (the view is the wrapper's)
    scale, shift = (0.0, 0.0) if coeffs is None else (coeffs, coeffs) if isinstance(coeffs, float) else coeffs
    expected = torch.addcmul(torch.full_like(x, float(shift)), x, torch.full_like(x, float(scale)))
    torch.testing.assert_close(interpreted(scale_shift(), x, coeffs), expected)
    [got] = emitted(triton_interpreter, scale_shift(), [x, coeffs])
    torch.testing.assert_close(got, expected)
