"""The wrapper layer: Python-style binding, views, number arguments, out= and inplace=, and
the checker's rules for host-only arguments."""

from __future__ import annotations

import copy

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from kernelgen.check.checker import check
from kernelgen.errors import HostError, SemanticError
from kernelgen.interp.execute import interpret
from kernelgen.lang.parse import kernel_from_obj, kernel_to_obj
from kernelgen.host.wrapper import bind_arguments, bind_call, broadcast_shape, call_kernel


def elementwise_sub() -> dict:
    """sub(input, other, alpha=1, out=None): input - alpha * other, any rank, other may be a number."""
    offs = {"op": "add", "lhs": {"op": "mul", "lhs": {"op": "program_id"}, "rhs": "BLOCK"},
            "rhs": {"op": "arange", "size": "BLOCK"}}
    load = lambda name: {"op": "load", "ptr": {"op": "add", "lhs": name, "rhs": "offs"}, "mask": "m"}  # noqa: E731
    return {
        "name": "sub", "view": "elementwise",
        "inputs": [{"name": "input", "dtype": "f32", "shape": ["N"]},
                   {"name": "other", "dtype": "f32", "shape": ["N"], "number": True},
                   {"name": "alpha", "dtype": "f32", "default": 1},
                   {"name": "out", "role": "out", "default": None}],
        "outputs": [{"name": "result", "dtype": "f32", "shape": ["N"]}],
        "params": [{"name": "input"}, {"name": "other"}, {"name": "result"}, {"name": "alpha"}, {"name": "N"}],
        "meta": [{"name": "BLOCK", "value": 256}],
        "grid": [{"op": "cdiv", "lhs": "N", "rhs": "BLOCK"}],
        "body": [
            {"op": "let", "name": "offs", "value": offs},
            {"op": "let", "name": "m", "value": {"op": "lt", "lhs": "offs", "rhs": "N"}},
            {"op": "store", "ptr": {"op": "add", "lhs": "result", "rhs": "offs"}, "mask": "m",
             "value": {"op": "sub", "lhs": load("input"), "rhs": {"op": "mul", "lhs": "alpha", "rhs": load("other")}}},
        ],
    }


def rows_logsumexp() -> dict:
    """logsumexp(input, dim, keepdim=False) over any rank, one program per kept element."""
    cols = {"op": "add", "lhs": "row", "rhs": {"op": "arange", "size": "BLOCK"}}
    return {
        "name": "logsumexp", "view": "rows",
        "inputs": [{"name": "input", "dtype": "f32", "shape": ["M", "N"]},
                   {"name": "dim", "role": "dim"},
                   {"name": "keepdim", "role": "keepdim", "default": False},
                   {"name": "scale", "role": "choice", "choices": ["none", "half"], "default": "none"}],
        "outputs": [{"name": "out", "dtype": "f32", "shape": ["M"]}],
        "params": [{"name": "input"}, {"name": "out"}, {"name": "N"}],
        "meta": [{"name": "BLOCK", "value": 64}],
        "grid": ["M"],
        "body": [
            {"op": "let", "name": "row", "value": {"op": "mul", "lhs": {"op": "program_id"}, "rhs": "N"}},
            {"op": "let", "name": "lane", "value": {"op": "arange", "size": "BLOCK"}},
            {"op": "let", "name": "inside", "value": {"op": "lt", "lhs": "lane", "rhs": "N"}},
            {"op": "let", "name": "x", "value": {"op": "load", "ptr": {"op": "add", "lhs": "input", "rhs": cols},
                                                "mask": "inside", "other": "-inf"}},
            {"op": "let", "name": "top", "value": {"op": "max", "x": "x", "axis": 0}},
            {"op": "let", "name": "lse", "value": {"op": "add", "lhs": "top", "rhs": {"op": "log", "x": {
                "op": "sum", "axis": 0, "x": {"op": "exp", "x": {"op": "sub", "lhs": "x", "rhs": "top"}}}}}},
            {"op": "store", "ptr": {"op": "add", "lhs": "out", "rhs": {"op": "program_id"}},
             "value": {"op": "where", "cond": {"op": "eq", "lhs": "scale", "rhs": 1},
                       "x": {"op": "mul", "lhs": "lse", "rhs": 0.5}, "y": "lse"}},
        ],
    }


def call(doc: dict, *args, **kwargs):
    return call_kernel(kernel_from_obj(doc), args, kwargs, interpret)


@pytest.mark.parametrize("shape_a, shape_b", [((3, 4), (4,)), ((5,), (5,)), ((), ()), ((2, 1, 3), (4, 1)), ((0,), (0,))])
def test_elementwise_view_broadcasts_any_rank(shape_a, shape_b):
    a, b = torch.randn(shape_a), torch.randn(shape_b)
    result = call(elementwise_sub(), a, b)
    assert result.shape == torch.broadcast_shapes(shape_a, shape_b)
    torch.testing.assert_close(result, a - b)


def test_numbers_defaults_keywords_and_out():
    a = torch.randn(6, 7)
    torch.testing.assert_close(call(elementwise_sub(), a, 2.0, alpha=3), a - 6.0)
    torch.testing.assert_close(call(elementwise_sub(), input=a, other=a, alpha=0.5), a * 0.5)
    out = torch.empty(6, 7)
    assert call(elementwise_sub(), a, a, out=out) is out
    torch.testing.assert_close(out, torch.zeros(6, 7))


@pytest.mark.parametrize("shape, dim, keepdim", [((4, 9), 1, False), ((4, 9), 0, True), ((2, 3, 5), (0, 2), False),
                                                  ((2, 3, 5), -1, True), ((7,), None, False), ((3, 4), None, True),
                                                  ((), None, False)])
def test_rows_view_reduces_any_dims(shape, dim, keepdim):
    x = torch.randn(shape)
    expected = torch.logsumexp(x, dim=tuple(range(x.dim())) if dim is None else dim, keepdim=keepdim)
    torch.testing.assert_close(call(rows_logsumexp(), x, dim, keepdim=keepdim), expected)


def test_choice_selects_a_meta_value():
    x = torch.randn(3, 8)
    torch.testing.assert_close(call(rows_logsumexp(), x, 1, scale="half"), torch.logsumexp(x, 1) * 0.5)


@given(st.lists(st.lists(st.sampled_from([0, 1, 2, 3]), max_size=4).map(tuple), min_size=1, max_size=4))
def test_broadcast_shape_agrees_with_torch(shapes):
    try:
        expected = tuple(torch.broadcast_shapes(*shapes))
    except RuntimeError:
        expected = None
    assert broadcast_shape(shapes) == expected


@pytest.mark.parametrize("args, kwargs, code, path", [
    ((), {}, "bad_arguments", "/inputs/0"),
    ((torch.randn(3),), {}, "bad_arguments", "/inputs/1"),
    ((torch.randn(3), torch.randn(3)), {"beta": 2}, "bad_arguments", ""),
    ((torch.randn(3), torch.randn(3)), {"input": torch.randn(3)}, "bad_arguments", "/inputs/0"),
    ((torch.randn(3), torch.randn(4)), {}, "bad_arguments", ""),
    ((torch.randn(3), "two"), {}, "bad_arguments", "/inputs/1"),
    ((torch.randn(3).half(), torch.randn(3)), {}, "bad_arguments", "/inputs/0"),
    ((torch.randn(3), torch.randn(3)), {"out": torch.empty(4)}, "bad_arguments", "/inputs/3"),
])
def test_bad_calls_name_the_argument(args, kwargs, code, path):
    with pytest.raises(HostError) as info:
        call(elementwise_sub(), *args, **kwargs)
    assert (info.value.code, info.value.path) == (code, path)


@pytest.mark.parametrize("args, kwargs", [((torch.randn(2, 3), 2), {}), ((torch.randn(2, 3), 1), {"scale": "triple"})])
def test_bad_dims_and_choices(args, kwargs):
    with pytest.raises(HostError) as info:
        call(rows_logsumexp(), *args, **kwargs)
    assert info.value.path in ("/inputs/1", "/inputs/3")


def test_binding_follows_python_rules():
    kernel = kernel_from_obj(elementwise_sub())
    bound = bind_arguments(kernel, (1, 2), {"out": None})
    assert bound == {"input": 1, "other": 2, "alpha": 1, "out": None}


def test_default_null_survives_a_round_trip():
    kernel = kernel_from_obj(elementwise_sub())
    again = kernel_from_obj(kernel_to_obj(kernel))
    assert again.inputs[3].optional and again.inputs[3].default is None
    assert not again.inputs[0].optional


def mutated(doc: dict, change) -> dict:
    doc = copy.deepcopy(doc)
    change(doc)
    return doc


@pytest.mark.parametrize("change, path", [
    (lambda d: d["inputs"][0].pop("dtype"), "/inputs/0/dtype"),
    (lambda d: d["inputs"][1].update(number=True, shape=None), "/inputs/1/number"),
    (lambda d: d["inputs"][3].update(shape=["N"]), "/inputs/3/shape"),
    (lambda d: d["inputs"][3].update(role="choice"), "/inputs/3/choices"),
    (lambda d: d["inputs"][3].update(role="fixed", default=None) or d["inputs"][3].pop("default"), "/inputs/3/default"),
    (lambda d: d["inputs"][3].update(role="dim"), "/inputs/3/role"),
    (lambda d: d["inputs"][0].update(shape=["M", "N"]), "/inputs/0/shape"),
    (lambda d: d["inputs"][1].update(shape=["K"]), "/view"),
])
def test_signature_rules(change, path):
    with pytest.raises(SemanticError) as info:
        check(kernel_from_obj(mutated(elementwise_sub(), change)))
    assert any(d.code == "bad_signature" and d.path == path for d in info.value.diagnostics), info.value


def test_rows_view_needs_a_dim_argument():
    doc = mutated(rows_logsumexp(), lambda d: d["inputs"].pop(1))
    with pytest.raises(SemanticError) as info:
        check(kernel_from_obj(doc))
    assert ("bad_signature", "/view") in [(d.code, d.path) for d in info.value.diagnostics]


# -- generic dtypes ---------------------------------------------------------------------------


def generic_add(of: list[str] | None = None) -> dict:
    """``x + 2 * y`` for ``x, y, out`` of one dtype variable T (y may be a number)."""
    lanes = {"op": "add", "lhs": {"op": "mul", "lhs": {"op": "program_id"}, "rhs": "BLOCK"},
             "rhs": {"op": "arange", "size": "BLOCK"}}
    load = lambda name: {"op": "load", "ptr": {"op": "add", "lhs": name, "rhs": "offs"}, "mask": "m"}  # noqa: E731
    return {
        "name": "gadd", "view": "elementwise", "dtypes": [{"name": "T", "of": of or ["f16", "bf16", "f32", "f64"]}],
        "inputs": [{"name": "x", "dtype": "T", "shape": ["N"]},
                   {"name": "y", "dtype": "T", "shape": ["N"], "number": True}],
        "outputs": [{"name": "out", "dtype": "T", "shape": ["N"]}],
        "params": [{"name": "x"}, {"name": "y"}, {"name": "out"}, {"name": "N"}],
        "meta": [{"name": "BLOCK", "value": 128}], "grid": [{"op": "cdiv", "lhs": "N", "rhs": "BLOCK"}],
        "body": [{"op": "let", "name": "offs", "value": lanes},
                 {"op": "let", "name": "m", "value": {"op": "lt", "lhs": "offs", "rhs": "N"}},
                 {"op": "store", "ptr": {"op": "add", "lhs": "out", "rhs": "offs"}, "mask": "m",
                  "value": {"op": "add", "lhs": load("x"),
                            "rhs": {"op": "mul", "lhs": load("y"), "rhs": {"op": "cast", "x": 2, "dtype": "T"}}}}]}


F16, F32, F64 = torch.float16, torch.float32, torch.float64


@pytest.mark.parametrize("x, y", [
    (torch.randn(5, dtype=F16), torch.randn(5, dtype=F16)),
    (torch.randn(5, dtype=F16), torch.randn(5, dtype=F32)),   # tensor-tensor: promoted to f32
    (torch.randn(2, 5, dtype=F64), torch.randn(5, dtype=F32)),
    (torch.randn(5, dtype=F16), 2.5),                         # tensor-number: the tensor's f16
    (torch.randn(5, dtype=torch.bfloat16), 3),
    (torch.tensor([1, -2], dtype=torch.int32), 0.5),          # an integer tensor and a float: f32
    (torch.randn(5, dtype=F16), torch.tensor(1.5, dtype=F64)),  # a 0-d tensor of the same category
])
def test_a_dtype_variable_binds_as_pytorch_promotes(x, y):
    result = call_kernel(kernel_from_obj(generic_add()), (x, y), {}, interpret)
    expected = x + y * 2
    assert result.dtype == expected.dtype and result.shape == expected.shape
    torch.testing.assert_close(result, expected, rtol=1e-2, atol=1e-2)


ARGUMENT_KINDS = [torch.randn(3, dtype=F16), torch.randn(3, dtype=F32), torch.randn(3, dtype=F64),
                  torch.randn(3, dtype=torch.bfloat16), torch.tensor(1.5, dtype=F64), torch.tensor(2, dtype=torch.int32),
                  torch.tensor([1, 2, 3]), torch.tensor([True, False, True]), 2.5, 3, True, None]


@given(st.lists(st.tuples(st.sampled_from(ARGUMENT_KINDS), st.sampled_from(ARGUMENT_KINDS)), min_size=1, max_size=12))
def test_a_remembered_binding_is_the_one_promotion_gives_each_time(calls):
    """bind_dtypes remembers each call signature's binding: any sequence of calls on one kernel
    binds every call as a fresh promotion does, and a call it refuses is refused every time."""
    from kernelgen.host.wrapper import _bind_dtypes, bind_dtypes

    kernel = kernel_from_obj(generic_add(["f32", "f64", "bf16"]))
    for x, y in calls:
        bound = {"x": x, "y": y}
        try:
            expected = _bind_dtypes(kernel, bound)
        except HostError as refused:
            with pytest.raises(HostError) as again:
                bind_dtypes(kernel, bound)
            assert again.value.diagnostics == refused.diagnostics
            continue
        assert bind_dtypes(kernel, bound) == expected


def test_each_binding_is_its_own_concrete_variant():
    kernel = kernel_from_obj(generic_add())
    default = check(kernel)
    assert [i.dtype for i in default.kernel.inputs] == ["f16", "f16"] and not default.kernel.dtypes
    f64 = check(kernel, dtypes={"T": "f64"})
    assert (f64.kernel.outputs[0].dtype, str(f64.types["/body/2/value/rhs/rhs"])) == ("f64", "f64")
    with pytest.raises(SemanticError) as info:
        check(kernel, dtypes={"T": "i32"})
    assert info.value.diagnostics[0].code == "bad_dtype_variable"


def test_a_call_outside_the_variables_set_names_its_arguments():
    kernel = kernel_from_obj(generic_add(["f32", "f64"]))
    with pytest.raises(HostError) as info:
        call_kernel(kernel, (torch.tensor([1, 2]), 3), {}, interpret)
    diagnostic = info.value.diagnostics[0]
    assert (diagnostic.path, diagnostic.code) == ("/inputs/0", "bad_arguments")
    assert "x, y give torch.int64" in diagnostic.message and "T takes one of ['f32', 'f64']" in diagnostic.message
    with pytest.raises(HostError, match=r"T takes one of \['f32', 'f64'\]"):
        call_kernel(kernel, (torch.ones(3, dtype=F16), torch.ones(3, dtype=F16)), {}, interpret)


def test_every_variant_is_checked_and_a_failure_names_its_binding():
    doc = generic_add(["f32", "f16"])
    doc["body"][2]["value"]["lhs"] = {"op": "exp", "x": doc["body"][2]["value"]["lhs"]}
    with pytest.raises(SemanticError) as info:
        check(kernel_from_obj(doc))
    [diagnostic] = info.value.diagnostics
    assert (diagnostic.path, diagnostic.code) == ("/body/2/value/lhs/x", "needs_f32")
    assert diagnostic.message.startswith("with T=f16: exp takes f32 or f64")


@pytest.mark.parametrize("edit, path", [
    (lambda d: d["outputs"][0].__setitem__("dtype", "U"), "/outputs/0/dtype"),
    (lambda d: d["dtypes"].append({"name": "T", "of": ["f32"]}), "/dtypes/1/name"),
    (lambda d: d["dtypes"][0].__setitem__("of", ["f32", "f32"]), "/dtypes/0/of"),
])
def test_bad_dtype_variables_are_refused_where_they_are(edit, path):
    doc = generic_add()
    edit(doc)
    with pytest.raises(SemanticError) as info:
        check(kernel_from_obj(doc))
    assert [(d.path, d.code) for d in info.value.diagnostics] == [(path, "bad_dtype_variable")]


# -- dtype= -----------------------------------------------------------------------------------


def rows_sum(of: list[str] | None = None) -> dict:
    """sum(input, dim, keepdim=False, dtype=None) of one dtype variable T; ``dtype`` binds T."""
    lane = {"op": "arange", "size": "BLOCK"}
    return {
        "name": "rsum", "view": "rows", "dtypes": [{"name": "T", "of": of or ["i64", "f32", "f64"]}],
        "inputs": [{"name": "input", "dtype": "T", "shape": ["M", "N"]},
                   {"name": "dim", "role": "dim"},
                   {"name": "keepdim", "role": "keepdim", "default": False},
                   {"name": "dtype", "role": "dtype", "binds": "T", "default": None}],
        "outputs": [{"name": "out", "dtype": "T", "shape": ["M"]}],
        "params": [{"name": "input"}, {"name": "out"}, {"name": "N"}],
        "meta": [{"name": "BLOCK", "value": 64}], "grid": ["M"],
        "body": [{"op": "store", "ptr": {"op": "add", "lhs": "out", "rhs": {"op": "program_id"}},
                  "value": {"op": "sum", "axis": 0, "x": {"op": "load", "mask": {"op": "lt", "lhs": lane, "rhs": "N"},
                            "ptr": {"op": "add", "lhs": "input", "rhs": {"op": "add", "rhs": lane, "lhs": {
                                "op": "mul", "lhs": {"op": "program_id"}, "rhs": "N"}}}}}}],
    }


@pytest.mark.parametrize("x, dtype", [
    (torch.arange(6).reshape(2, 3), None),                       # i64 stays i64
    (torch.randn(2, 3), None),
    (torch.randn(2, 3), F64),                                    # torch casts the input first
    (torch.arange(6, dtype=torch.int32).reshape(3, 2), F32),     # i32 is not in T, but dtype= is
    (torch.randn(4, 2, 3, dtype=F64), F32),
])
def test_a_dtype_argument_binds_its_variable_as_torch_casts(x, dtype):
    result = call(rows_sum(), x, dim=-1, dtype=dtype)
    expected = torch.sum(x, dim=-1, dtype=dtype)
    assert result.dtype == expected.dtype and result.shape == expected.shape
    torch.testing.assert_close(result, expected)


@pytest.mark.parametrize("dtype, code, message", [
    (torch.float16, "unsupported_argument", r"dtype takes None or one of \['i64', 'f32', 'f64'\] \(T\), got torch.float16"),
    (torch.complex64, "unsupported_argument", "dtype: complex dtypes are not supported: the kernel language"),
    (torch.uint16, "unsupported_argument", "dtype=torch.uint16 is a dtype the language does not have"),
    ("float64", "bad_arguments", "dtype is a torch dtype or None, got str"),
])
def test_a_bad_dtype_argument_is_named(dtype, code, message):
    with pytest.raises(HostError, match=message) as info:
        call(rows_sum(), torch.randn(2, 3), dim=1, dtype=dtype)
    assert [(d.path, d.code) for d in info.value.diagnostics] == [("/inputs/3", code)]


def test_a_concrete_dtype_argument_takes_none_or_its_dtype():
    doc = mutated(rows_sum(["f64"]), lambda d: (d.pop("dtypes"), [i.update(dtype="f64") for i in d["inputs"][:1]],
                                                d["inputs"][3].update(binds="f64"), d["outputs"][0].update(dtype="f64")))
    x = torch.randn(2, 3, dtype=F64)
    torch.testing.assert_close(call(doc, x, 1, dtype=F64), x.sum(1))
    with pytest.raises(HostError, match=r"supports dtype=None or torch.float64 only, got torch.float32"):
        call(doc, x, 1, dtype=F32)


@pytest.mark.parametrize("change, path, code", [
    (lambda d: d["inputs"][3].pop("binds"), "/inputs/3", "bad_signature"),
    (lambda d: d["inputs"][3].update(default=True), "/inputs/3/default", "bad_signature"),
    (lambda d: d["inputs"][2].update(binds="T"), "/inputs/2/binds", "bad_signature"),
    (lambda d: d["inputs"].append({"name": "dtype2", "role": "dtype", "binds": "T"}), "/inputs/4/binds", "bad_signature"),
    (lambda d: d["inputs"][3].update(binds="U"), "/inputs/3/binds", "bad_dtype_variable"),
])
def test_dtype_argument_rules(change, path, code):
    with pytest.raises(SemanticError) as info:
        check(kernel_from_obj(mutated(rows_sum(), change)))
    assert (code, path) in [(d.code, d.path) for d in info.value.diagnostics], info.value


# -- optional tensors -------------------------------------------------------------------------


def optional_bias() -> dict:
    """``x + bias`` over rows, ``bias`` [N] optional: read only when present (HAS_BIAS, a meta name)."""
    doc = rows_sum(["f32", "f64"])
    doc["name"] = "addbias"
    doc["inputs"] = [{"name": "x", "dtype": "T", "shape": ["M", "N"]},
                     {"name": "bias", "dtype": "T", "shape": ["N"], "default": None, "present": "HAS_BIAS"},
                     {"name": "dim", "role": "dim", "default": -1}]
    doc["outputs"] = [{"name": "out", "dtype": "T", "shape": ["M", "N"]}]
    doc["params"] = [{"name": "x"}, {"name": "bias"}, {"name": "out"}, {"name": "N"}]
    lane = {"op": "arange", "size": "BLOCK"}
    at = {"op": "add", "lhs": {"op": "mul", "lhs": {"op": "program_id"}, "rhs": "N"}, "rhs": lane}
    inside = {"op": "lt", "lhs": lane, "rhs": "N"}
    doc["body"] = [
        {"op": "let", "name": "b", "value": {"op": "load", "ptr": {"op": "add", "lhs": "bias", "rhs": lane}, "other": 0,
                                            "mask": {"op": "and", "lhs": inside, "rhs": {"op": "eq", "lhs": "HAS_BIAS", "rhs": 1}}}},
        {"op": "store", "ptr": {"op": "add", "lhs": "out", "rhs": at}, "mask": inside,
         "value": {"op": "add", "lhs": {"op": "load", "ptr": {"op": "add", "lhs": "x", "rhs": at}, "mask": inside}, "rhs": "b"}}]
    return doc


@pytest.mark.parametrize("bias", [None, torch.randn(3), torch.randn(3, dtype=F64)])
def test_an_optional_tensor_is_a_compile_time_presence_flag(bias):
    kernel = kernel_from_obj(optional_bias())
    x = torch.randn(2, 4, 3)
    bound = bind_call(kernel, (x,), {"bias": bias})
    assert bound.meta == {"HAS_BIAS": int(bias is not None)}
    result = call_kernel(kernel, (x, bias), {}, interpret)
    expected = x if bias is None else x + bias
    assert result.dtype == expected.dtype
    torch.testing.assert_close(result, expected)


def test_each_presence_pattern_lowers_to_its_own_kernel():
    from kernelgen.lower.lowering import lower

    kernel = kernel_from_obj(optional_bias())
    absent, present = (lower(check(kernel, {"HAS_BIAS": flag}, {"T": "f32"})).ttir for flag in (0, 1))
    assert absent != present and "tt.load" in absent


@pytest.mark.parametrize("change, path", [
    (lambda d: d["inputs"][1].pop("present"), "/inputs/1"),
    (lambda d: d["inputs"][1].update(shape=["K"]), "/inputs/1/shape/0"),
    (lambda d: d["inputs"][0].update(present="P"), "/inputs/0/present"),
    (lambda d: d["inputs"][2].update(present="P"), "/inputs/2/present"),
])
def test_optional_tensor_rules(change, path):
    with pytest.raises(SemanticError) as info:
        check(kernel_from_obj(mutated(optional_bias(), change)))
    assert ("bad_signature", path) in [(d.code, d.path) for d in info.value.diagnostics], info.value


def test_a_presence_flag_is_a_name_of_its_own():
    doc = mutated(optional_bias(), lambda d: d["meta"].append({"name": "HAS_BIAS", "value": 1}))
    with pytest.raises(SemanticError) as info:
        check(kernel_from_obj(doc))
    assert "duplicate_name" in [d.code for d in info.value.diagnostics]
