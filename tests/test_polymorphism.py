"""Calls of many shapes to one kernel (kernelgen.check.polymorphism): batch dims and rank overloads,
numbers for tensors in any view, int tuples, preconditions, all-number calls, complex refused;
the checker's rules for each and the errors a careless call gets."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelgen.check.checker import check
from kernelgen.errors import HostError, SemanticError
from kernelgen.interp.execute import interpret
from kernelgen.lang.parse import kernel_from_obj
from kernelgen.host.wrapper import bind_call, call_kernel

GOLDEN = Path(__file__).resolve().parents[1] / "bench" / "tritonbench" / "golden"


def golden(name: str) -> dict:
    return json.loads((GOLDEN / f"{name}.json").read_text())


def call(doc: dict, *args, **kwargs):
    return call_kernel(kernel_from_obj(doc), args, kwargs, interpret)


def mutated(doc: dict, change) -> dict:
    doc = copy.deepcopy(doc)
    change(doc)
    return doc


def signature_errors(doc: dict) -> list[tuple[str, str]]:
    """Every (code, path) the checker gives the kernel."""
    with pytest.raises(SemanticError) as info:
        check(kernel_from_obj(doc))
    return [(d.code, d.path) for d in info.value.diagnostics]


def host_error(doc: dict, *args, **kwargs) -> HostError:
    with pytest.raises(HostError) as info:
        call(doc, *args, **kwargs)
    return info.value


# -- batch dims and rank overloads (matmul) ------------------------------------------------------


@pytest.mark.parametrize("a, b", [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
                                  ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((4,), (2, 4, 5)),
                                  ((2, 3, 4), (4,)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((0, 3, 4), (4, 2))])
def test_matmul_takes_every_rank_overload_as_torch_does(a, b):
    x, y = torch.randn(a), torch.randn(b)
    got, want = call(golden("matmul"), x, y), torch.matmul(x, y)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want)


def test_the_kernel_sees_the_loop_dims_flattened_and_a_left_out_dim_as_one():
    kernel = kernel_from_obj(golden("matmul"))
    bound = bind_call(kernel, (torch.randn(2, 3, 5, 4), torch.randn(4)), {})
    assert tuple(bound.args["tensor1"].shape) == (6, 5, 4) and tuple(bound.args["tensor2"].shape) == (6, 4, 1)
    result = bound.finish({"result": torch.zeros(6, 5, 1)})
    assert tuple(result.shape) == (2, 3, 5)


def test_a_kernel_that_ignores_the_batch_fails_a_batched_call():
    doc = golden("matmul")
    doc["body"][1]["value"] = "tensor1"  # every batch reads the first matrix
    x, y = torch.randn(3, 4, 5), torch.randn(3, 5, 2)
    assert not torch.allclose(call(doc, x, y), torch.matmul(x, y))


@pytest.mark.parametrize("args, path, message", [
    ((torch.tensor(2.0), torch.randn(3, 3)), "/inputs/0", "tensor1 has rank 0; the kernel takes [..., M, K] or [..., K]"),
    ((torch.randn(3, 3), torch.tensor(2.0)), "/inputs/1", "tensor2 has rank 0; the kernel takes [..., K, N] or [..., K]"),
    ((torch.randn(2, 3, 4), torch.randn(3, 4, 5)), "/inputs/0", "the batch dims do not broadcast: tensor1 [2], tensor2 [3]"),
    ((torch.randn(3, 4), torch.randn(5, 2)), "/inputs/1/shape/1", "size K is 4 elsewhere but tensor2.shape[1] is 5"),
    ((torch.randn(3, 4), [1.0, 2.0]), "/inputs/1", "tensor2 is a tensor, got list"),
    ((torch.randn(3, 4), 2.0), "/inputs/1", "tensor2 is a tensor, got float"),
])
def test_a_matmul_call_that_fits_no_overload_names_the_argument(args, path, message):
    error = host_error(golden("matmul"), *args)
    assert error.code == "bad_arguments" and error.path.startswith(path) and message in str(error), str(error)


def test_matmul_missing_and_extra_arguments_are_named():
    assert "missing the required argument 'tensor2'" in str(host_error(golden("matmul"), torch.randn(2, 2)))
    assert "takes at most 2 arguments, got 3" in str(host_error(golden("matmul"), *[torch.randn(2, 2)] * 3))


@pytest.mark.parametrize("change, path", [
    (lambda d: d.update(view="elementwise"), "/inputs/0"),
    (lambda d: d["inputs"][0].update(shape=[4, "M", "K"]), "/inputs/0/shape"),
    (lambda d: d["inputs"][0].update(optional_dims=["N"]), "/inputs/0/optional_dims/0"),
    (lambda d: d["inputs"][0].update(optional_dims=["B"]), "/inputs/0/optional_dims/0"),
    (lambda d: d["inputs"][0].update(optional_dims=["M", "K"]), "/inputs/0/optional_dims"),
    (lambda d: d["inputs"][1].update(shape=["C", "K", "N"]), "/inputs"),
    (lambda d: d["inputs"][1].update(shape=["B", "K", "N"], batch=False), "/inputs/1/shape"),
    (lambda d: d["outputs"][0].update(shape=["M", "B", "N"]), "/outputs/0/shape"),
    (lambda d: d["inputs"][1].update(number=True), "/inputs/1"),
    (lambda d: d["inputs"].append({"name": "s", "dtype": "f32", "batch": True}), "/inputs/2"),
])
def test_batch_and_optional_dims_rules(change, path):
    assert ("bad_signature", path) in signature_errors(mutated(golden("matmul"), change))


# -- numbers for tensors in any view -------------------------------------------------------------


@pytest.mark.parametrize("other", [0.5, 2, torch.tensor(0.25), torch.tensor([0.5]), "tensor"])
def test_a_number_input_of_a_fixed_rank_kernel_takes_numbers_and_broadcasting_tensors(other):
    a, v = torch.randn(5, 7), torch.randn(7)
    other = torch.randn(5) if isinstance(other, str) else other
    want = torch.sub(torch.sigmoid(torch.mv(a, v)), other, alpha=2)
    torch.testing.assert_close(call(golden("fused_mv_sigmoid_sub"), a, v, other, alpha=2), want)


def test_a_number_input_of_the_wrong_shape_is_named():
    error = host_error(golden("fused_mv_sigmoid_sub"), torch.randn(5, 7), torch.randn(7), torch.randn(3))
    assert error.path == "/inputs/2" and "other has shape [3], which does not broadcast to ['N'] = [5]" in str(error)


@pytest.mark.parametrize("other, dim, keepdim", [(0.5, None, False), (torch.randn(4, 6), 0, True),
                                                 (torch.randn(6), 1, False), (3, (0, 1), False)])
def test_the_rows_view_broadcasts_numbers_and_smaller_tensors(other, dim, keepdim):
    x = torch.randn(4, 6)
    if isinstance(other, (int, float)):
        want = (x + 2 * torch.tensor(other, dtype=x.dtype)).mean(dim=dim, keepdim=keepdim)
    else:
        want = (x + 2 * other).mean(dim=dim, keepdim=keepdim)
    torch.testing.assert_close(call(golden("add_mean"), x, other, dim=dim, alpha=2, keepdim=keepdim), want)


@pytest.mark.parametrize("name, args, kwargs, path, message", [
    ("fused_mv_sigmoid_sub", (torch.randn(4, 3), torch.randn(5), 0.5), {}, "/inputs/1/shape/0",
     "size M is 3 elsewhere but vec.shape[0] is 5"),
    ("fused_mv_sigmoid_sub", (torch.randn(4, 3), torch.randn(3), "0.5"), {}, "/inputs/2",
     "other is a tensor or a number, got str"),
    ("fused_mv_sigmoid_sub", (torch.randn(4, 3), torch.randn(3)), {}, "/inputs/2",
     "missing the required argument 'other'"),
    ("fused_mv_sigmoid_sub", (torch.randn(3), torch.randn(3), 0.5), {}, "/inputs/0/shape",
     "input has rank 1, the kernel expects 2"),
    ("matmul", (torch.randn(2, 3), torch.randn(3, 2, dtype=torch.float64)), {}, "/inputs/0",
     "tensor1, tensor2 give torch.float64 (T by PyTorch's promotion); T takes one of ['f32', 'f16', 'bf16']"),
    ("add_mean", (torch.randn(2, 3), torch.randn(4)), {}, "", "the inputs do not broadcast"),
    ("add_mean", (torch.randn(2, 3), 1.0), {"dim": 2}, "/inputs/2", "dim 2 is out of range for a tensor of rank 2"),
    ("mul_sub", (torch.randn(3), torch.randn(4), 1.0), {}, "", "the inputs do not broadcast"),
    ("log_tanh", ([1.0, 2.0],), {}, "/inputs/0", "input is a tensor, got list"),
])
def test_careless_calls_get_one_error_naming_the_argument(name, args, kwargs, path, message):
    error = host_error(golden(name), *args, **kwargs)
    assert error.path == path and message in str(error), str(error)
    assert len(error.diagnostics) == 1


def test_a_number_size_must_come_from_a_tensor_that_is_not_a_number():
    doc = mutated(golden("fused_mv_sigmoid_sub"), lambda d: d["inputs"][2].update(shape=["L"]))
    assert ("bad_signature", "/inputs/2/shape/0") in signature_errors(doc)


def test_an_all_number_call_returns_a_python_number_computed_as_python_does():
    result = call(golden("mul_sub"), 3.0, 2.0, 0.5)
    assert type(result) is float and result == 5.5
    assert call(golden("mul_sub"), 0.1, 3.0, 0.2, alpha=3) == pytest.approx(0.1 * 3.0 - 3 * 0.2, rel=1e-15)
    assert call(golden("mul_sub"), 3, 2, 1) == 5 and type(call(golden("mul_sub"), 3, 2, 1)) is int
    # With a tensor among the arguments the result is a tensor, of the tensor's dtype.
    mixed = call(golden("mul_sub"), torch.tensor([1.0, 2.0]), 2.0, 0.5)
    assert isinstance(mixed, torch.Tensor) and mixed.dtype == torch.float32


# -- preconditions -------------------------------------------------------------------------------


def test_a_failed_precondition_raises_the_operators_own_exception():
    with pytest.raises(ValueError) as info:
        call(golden("log_tanh"), torch.tensor([-1.0, 0.0, 2.0]))
    assert str(info.value) == "All input elements must be positive for the logarithm function to be defined."
    x = torch.rand(3000) + 0.1
    torch.testing.assert_close(call(golden("log_tanh"), x), torch.tanh(torch.log(x)))


def test_a_failed_precondition_leaves_out_untouched():
    out = torch.full((3,), 7.0)
    with pytest.raises(ValueError):
        call(golden("log_tanh"), torch.tensor([1.0, -2.0, 3.0]), out=out)
    assert torch.equal(out, torch.full((3,), 7.0))


def test_a_kernel_that_forgets_its_check_is_refused_or_raises():
    doc = golden("log_tanh")
    doc["body"].pop()
    assert ("output_not_written", "/outputs/1") in signature_errors(doc)
    # Written by the first program only: the other programs' flags keep the fill (true).
    doc = golden("log_tanh")
    doc["body"][-1]["mask"] = {"op": "eq", "lhs": "block", "rhs": 0}
    with pytest.raises(ValueError):
        call(doc, torch.rand(3000) + 0.1)


def test_a_check_only_in_the_first_block_misses_the_rest():
    doc = golden("log_tanh")
    doc["body"][-1]["value"] = {"op": "and", "lhs": doc["body"][-1]["value"],
                                "rhs": {"op": "eq", "lhs": "block", "rhs": 0}}
    x = torch.rand(3000) + 0.1
    x[2500] = -1.0
    call(doc, x)  # the careless kernel does not raise ...
    with pytest.raises(ValueError):
        call(golden("log_tanh"), x)  # ... the golden does


@pytest.mark.parametrize("change, path", [
    (lambda d: d["outputs"][1].update(dtype="i32"), "/outputs/1/dtype"),
    (lambda d: d["outputs"][1].pop("message"), "/outputs/1/message"),
    (lambda d: d["outputs"][0].update(message="oops"), "/outputs/0/message"),
    (lambda d: d["outputs"][0].update(raises="ValueError", dtype="bool", message="x"), "/outputs"),
])
def test_precondition_rules(change, path):
    assert ("bad_signature", path) in signature_errors(mutated(golden("log_tanh"), change))


# -- int tuples ----------------------------------------------------------------------------------


def sum_pool2d() -> dict:
    """sum_pool2d(input [H, W], kernel_size=(2, 2)): sums of non-overlapping KH x KW windows,
    one program per output element; KH, KW are the items of ``kernel_size`` (meta values)."""
    return {
        "name": "sum_pool2d",
        "inputs": [{"name": "input", "dtype": "f32", "shape": ["H", "W"]},
                   {"name": "kernel_size", "role": "ints", "items": ["KH", "KW"], "default": [2, 2]}],
        "outputs": [{"name": "out", "dtype": "f32", "shape": [{"op": "idiv", "lhs": "H", "rhs": "KH"},
                                                              {"op": "idiv", "lhs": "W", "rhs": "KW"}]}],
        "params": [{"name": "input"}, {"name": "out"}, {"name": "H"}, {"name": "W"},
                   {"name": "OW", "value": {"op": "idiv", "lhs": "W", "rhs": "KW"}},
                   {"name": "OUT_NUMEL", "value": {"op": "numel", "of": "out"}}],
        "grid": [{"op": "idiv", "lhs": "H", "rhs": "KH"}, {"op": "idiv", "lhs": "W", "rhs": "KW"}],
        "body": [
            {"op": "let", "name": "top", "value": {"op": "mul", "lhs": {"op": "program_id", "axis": 0}, "rhs": "KH"}},
            {"op": "let", "name": "left", "value": {"op": "mul", "lhs": {"op": "program_id", "axis": 1}, "rhs": "KW"}},
            {"op": "for", "var": "i", "stop": "KH", "carry": [{"name": "total", "init": 0.0, "next": "row_total"}],
             "body": [{"op": "for", "var": "j", "stop": "KW", "carry": [{"name": "acc", "init": "total", "next": "more"}],
                       "body": [{"op": "let", "name": "row", "value": {"op": "add", "lhs": "top", "rhs": "i"}},
                                {"op": "let", "name": "col", "value": {"op": "add", "lhs": "left", "rhs": "j"}},
                                {"op": "let", "name": "more", "value": {"op": "add", "lhs": "acc", "rhs": {
                                    "op": "load", "ptr": {"op": "add", "lhs": "input", "rhs": {
                                        "op": "add", "lhs": {"op": "mul", "lhs": "row", "rhs": "W"}, "rhs": "col"}},
                                    "mask": {"op": "and", "lhs": {"op": "lt", "lhs": "row", "rhs": "H"},
                                             "rhs": {"op": "lt", "lhs": "col", "rhs": "W"}}}}}]},
                      {"op": "let", "name": "row_total", "value": "acc"}]},
            {"op": "let", "name": "at", "value": {"op": "add", "lhs": {
                "op": "mul", "lhs": {"op": "program_id", "axis": 0}, "rhs": "OW"}, "rhs": {"op": "program_id", "axis": 1}}},
            {"op": "store", "ptr": {"op": "add", "lhs": "out", "rhs": "at"}, "value": "total",
             "mask": {"op": "lt", "lhs": "at", "rhs": "OUT_NUMEL"}},
        ],
    }


@pytest.mark.parametrize("kernel_size", [(2, 3), [3, 2], 2, None, torch.Size([1, 4])])
def test_an_ints_argument_binds_one_meta_per_item(kernel_size):
    x = torch.randn(6, 12)
    kwargs = {} if kernel_size is None else {"kernel_size": kernel_size}
    size = (2, 2) if kernel_size is None else (kernel_size,) * 2 if isinstance(kernel_size, int) else tuple(kernel_size)
    bound = bind_call(kernel_from_obj(sum_pool2d()), (x,), kwargs)
    assert bound.meta == {"KH": size[0], "KW": size[1]}
    want = F.avg_pool2d(x[None, None], size)[0, 0] * (size[0] * size[1])
    torch.testing.assert_close(call(sum_pool2d(), x, **kwargs), want)


@pytest.mark.parametrize("kernel_size", [(2,), (2, 2, 2), "2", (2.0, 2), (True, 2), 2.0])
def test_a_bad_ints_argument_is_named(kernel_size):
    error = host_error(sum_pool2d(), torch.randn(4, 4), kernel_size=kernel_size)
    assert error.path == "/inputs/1" and "kernel_size takes an int or 2 ints (a tuple or list)" in str(error)


@pytest.mark.parametrize("change, path", [
    (lambda d: d["inputs"][1].pop("items"), "/inputs/1"),
    (lambda d: d["inputs"][1].update(default=[2, 2, 2]), "/inputs/1/default"),
    (lambda d: d["inputs"][1].update(items=["KH", "KH"]), "/inputs/1/items"),
    (lambda d: d["inputs"][0].update(items=["A"]), "/inputs/0/items"),
    (lambda d: d["inputs"].append({"name": "pad", "dtype": "i32", "default": [1, 2]}), "/inputs/2/default"),
])
def test_ints_rules(change, path):
    assert ("bad_signature", path) in signature_errors(mutated(sum_pool2d(), change))


def test_an_item_is_a_name_of_its_own():
    doc = mutated(sum_pool2d(), lambda d: d["inputs"][1].update(items=["KH", "H"]))
    assert ("duplicate_name", "/inputs/1/items/1") in signature_errors(doc)


# -- complex -------------------------------------------------------------------------------------


@pytest.mark.parametrize("args, kwargs, path", [
    ((torch.randn(3, dtype=torch.complex64), 1.0), {}, "/inputs/0"),
    ((torch.randn(3), 1j), {}, "/inputs/1"),
    ((torch.randn(3), 1.0), {"alpha": 1j}, "/inputs/3"),
])
def test_complex_arguments_are_unsupported_with_the_reason(args, kwargs, path):
    error = host_error(golden("mul_sub"), *args[:1], args[1], 0.5, **kwargs)
    assert (error.code, error.path) == ("unsupported_argument", path)
    assert "no complex type" in str(error)


def test_a_complex_dtype_argument_is_unsupported_with_the_reason():
    error = host_error(golden("add_mean"), torch.randn(3), 1.0, dtype=torch.complex64)
    assert (error.code, error.path) == ("unsupported_argument", "/inputs/5") and "no complex type" in str(error)


# -- properties: any shapes, as torch says ---------------------------------------------------------


shapes = st.lists(st.integers(1, 3), min_size=0, max_size=4).map(tuple)


@settings(max_examples=40, deadline=None)
@given(shapes, shapes, st.integers(0, 2))
def test_matmul_agrees_with_torch_on_any_shapes(a, b, k):
    """Whatever ranks and batch dims: torch's result, or (where torch refuses) one HostError
    naming an argument; never another exception."""
    if len(a) >= 1:
        a = a[:-1] + (k + 1,)
    if len(b) >= 2:
        b = b[:-2] + (k + 1,) + b[-1:]
    elif len(b) == 1:
        b = (k + 1,)
    x, y = torch.randn(a), torch.randn(b)
    try:
        want = torch.matmul(x, y)
    except RuntimeError:
        with pytest.raises(HostError) as info:
            call(golden("matmul"), x, y)
        assert info.value.path.startswith("/inputs/")
        return
    got = call(golden("matmul"), x, y)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.sampled_from(["number", "row", "column", "full", "scalar"]),
       st.sampled_from([None, 0, 1, (0, 1)]))
def test_add_mean_agrees_with_torch_for_any_other(m, n, kind, dim):
    x = torch.randn(m, n)
    other = {"number": 0.75, "row": torch.randn(n), "column": torch.randn(m, 1), "full": torch.randn(m, n),
             "scalar": torch.tensor(-1.5)}[kind]
    want = (x + 2 * torch.as_tensor(other)).mean(dim=dim)
    torch.testing.assert_close(call(golden("add_mean"), x, other, dim=dim, alpha=2), want)


def test_kernelgen_interpret_says_when_a_precondition_fails(capsys):
    from kernelgen.cli import main

    assert main(["interpret", str(GOLDEN / "log_tanh.json"), "--size", "N=50"]) == 0  # randn: some <= 0
    out = capsys.readouterr().out
    assert "nonpositive: the precondition fails: a call raises ValueError('All input elements must be positive" in out


def test_each_ints_value_lowers_to_its_own_kernel():
    from kernelgen.lower.lowering import lower

    kernel = kernel_from_obj(sum_pool2d())
    two, three = (lower(check(kernel, {"KH": k, "KW": 2})).ttir for k in (2, 3))
    assert two != three and "tt.load" in two


def test_every_rank_pattern_of_matmul_is_one_variant():
    """A left-out dim is a size of 1, not a new kernel: the call's key (meta, dtypes) is the same."""
    kernel = kernel_from_obj(golden("matmul"))
    keys = {(tuple(sorted(b.meta.items())), tuple(sorted(b.dtypes.items())))
            for b in (bind_call(kernel, (torch.randn(*a), torch.randn(*c)), {})
                      for a, c in [((3, 4), (4, 5)), ((4,), (4, 5)), ((2, 3, 4), (4,))])}
    assert keys == {((), (("T", "f32"),))}


def test_a_precondition_flag_lowers_to_a_bool_store():
    from kernelgen.lower.lowering import lower

    ttir = lower(check(kernel_from_obj(golden("log_tanh")))).ttir
    assert "!tt.ptr<i8>" in ttir and ttir.count("tt.store") == 2  # bool in memory is a byte
