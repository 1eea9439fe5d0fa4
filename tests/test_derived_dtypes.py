"""Derived dtype variables (issue 34): ``{"name": "C", "acc_of": "T"}`` and
``{"name": "R", "float_of": "T"}`` give a generic kernel PyTorch's compute and result dtypes of a
variable, stage by stage: the rules against torch itself, the checker's codes and paths, every
binding checked, calls through the wrapper, and the interpreter against the emitted Triton (in
Triton's interpreter) and the lowering compiled for sm_90, binding by binding."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch

from test_emit import TritonInterpreter, check_in_triton_interpreter, triton_interpreter  # noqa: F401  (the fixture)

from kernelgen.check.checker import check
from kernelgen.errors import SchemaError, SemanticError
from kernelgen.gpu.compile import compile_kernel
from kernelgen.host.plan import torch_dtype
from kernelgen.host.wrapper import call_kernel
from kernelgen.interp.execute import interpret
from kernelgen.lang import nodes as L
from kernelgen.lang.generic import bindings, derived_dtype, instantiate, resolve
from kernelgen.lang.parse import kernel_from_obj

BODY = [
    {"op": "let", "name": "o", "value": {"op": "add", "lhs": {"op": "mul", "lhs": {"op": "program_id"}, "rhs": "B"},
                                        "rhs": {"op": "arange", "size": "B"}}},
    {"op": "let", "name": "m", "value": {"op": "lt", "lhs": "o", "rhs": "N"}},
    {"op": "let", "name": "v", "value": {"op": "cast", "dtype": "C",
                                        "x": {"op": "load", "ptr": {"op": "add", "lhs": "x", "rhs": "o"}, "mask": "m"}}},
    {"op": "store", "ptr": {"op": "add", "lhs": "y", "rhs": "o"}, "mask": "m",
     "value": {"op": "cast", "x": {"op": "div", "lhs": 1.0, "rhs": {"op": "sqrt", "x": "v"}}, "dtype": "R"}},
]
# 1 / sqrt(x) as torch.rsqrt: R = float_of(T) is y's dtype, C = acc_of(R) the compute dtype.
RSQRT: dict[str, Any] = {
    "name": "rsqrt_any", "dtypes": [{"name": "T", "of": ["i32", "i64", "bool", "f16", "bf16", "f32", "f64"]},
                                    {"name": "R", "float_of": "T"}, {"name": "C", "acc_of": "R"}],
    "inputs": [{"name": "x", "dtype": "T", "shape": ["N"]}], "outputs": [{"name": "y", "dtype": "R", "shape": ["N"]}],
    "params": [{"name": "x"}, {"name": "y"}, {"name": "N"}], "meta": [{"name": "B", "value": 128}],
    "grid": [{"op": "cdiv", "lhs": "N", "rhs": "B"}], "body": BODY}


def edited(**changes: Any) -> dict[str, Any]:
    kernel = copy.deepcopy(RSQRT)
    kernel.update(copy.deepcopy(changes))
    return kernel


def diagnostics(kernel: dict[str, Any], binding: dict[str, str] | None = None) -> list[tuple[str, str, str]]:
    with pytest.raises(SemanticError) as error:
        check(kernel_from_obj(kernel), None, binding)
    return [(d.path, d.code, d.message) for d in error.value.diagnostics]


# -- the rules are PyTorch's ----------------------------------------------------------------


def ones(dtype: str) -> torch.Tensor:
    return torch.ones(3, dtype=torch_dtype(dtype))


@pytest.mark.parametrize("dtype", [d for d in L.DTYPES if not d.startswith("f8")])
def test_float_of_is_the_dtype_of_torchs_float_ops(dtype: str) -> None:
    for op in (torch.log, torch.reciprocal, torch.sqrt, torch.sigmoid):
        assert torch_dtype(derived_dtype("float_of", dtype)) == op(ones(dtype)).dtype, (op, dtype)


@pytest.mark.parametrize("dtype", [d for d in L.DTYPES if not d.startswith("f8")])
def test_acc_of_sums_integers_in_int64_and_floats_in_opmath(dtype: str) -> None:
    result = torch.sum(ones(dtype)).dtype
    if not result.is_floating_point:
        assert derived_dtype("acc_of", dtype) == "i64" == {torch.int64: "i64"}[result]  # torch.sum(int32) is int64
    else:
        # torch.sum keeps a float dtype but computes f16/bf16 in f32 (at::opmath_type): the
        # accumulation dtype is the wider of the result and f32, never narrower than f32.
        assert result == torch_dtype(dtype) and derived_dtype("acc_of", dtype) == ("f64" if dtype == "f64" else "f32")


def test_fp8_derives_as_a_float_and_unknown_rules_are_refused() -> None:
    assert [derived_dtype(r, d) for r in ("acc_of", "float_of") for d in ("f8e4m3", "f8e5m2")] == \
        ["f32", "f32", "f8e4m3", "f8e5m2"]
    with pytest.raises(ValueError):
        derived_dtype("widest_of", "f16")


def test_bindings_name_declared_variables_and_resolve_adds_the_derived_ones() -> None:
    kernel = kernel_from_obj(RSQRT)
    assert [b["T"] for b in bindings(kernel)] == ["i32", "i64", "bool", "f16", "bf16", "f32", "f64"]
    assert all(set(b) == {"T"} for b in bindings(kernel))
    assert [resolve(kernel, b) for b in bindings(kernel)][2:5] == [
        {"T": "bool", "R": "f32", "C": "f32"}, {"T": "f16", "R": "f16", "C": "f32"}, {"T": "bf16", "R": "bf16", "C": "f32"}]
    assert resolve(kernel, {"T": "f64"}) == {"T": "f64", "R": "f64", "C": "f64"}
    concrete = instantiate(kernel, {"T": "i64"})
    assert not concrete.dtypes and concrete.outputs[0].dtype == "f32" and concrete.body[2].value.dtype == "f32"


# -- the checker: codes, paths, every binding ------------------------------------------------


def test_misuse_has_a_code_and_a_path() -> None:
    undeclared = edited(dtypes=[RSQRT["dtypes"][0], {"name": "R", "float_of": "U"}, RSQRT["dtypes"][2]])
    assert diagnostics(undeclared)[0][:2] == ("/dtypes/1/float_of", "bad_dtype_variable")
    neither = edited(dtypes=[RSQRT["dtypes"][0], {"name": "R"}, RSQRT["dtypes"][2]])
    both = edited(dtypes=[RSQRT["dtypes"][0], {"name": "R", "float_of": "T", "acc_of": "T"}, RSQRT["dtypes"][2]])
    for kernel in (neither, both):
        assert diagnostics(kernel)[0][:2] == ("/dtypes/1", "bad_dtype_variable")
        assert "exactly one of acc_of, float_of" in diagnostics(kernel)[0][2]
    cycle = edited(dtypes=[RSQRT["dtypes"][0], {"name": "R", "float_of": "C"}, {"name": "C", "acc_of": "R"}])
    assert [d[:2] for d in diagnostics(cycle)] == [("/dtypes/1", "bad_dtype_variable"), ("/dtypes/2", "bad_dtype_variable")]
    assert "cycle" in diagnostics(cycle)[0][2]
    itself = edited(dtypes=[RSQRT["dtypes"][0], {"name": "R", "float_of": "R"}, RSQRT["dtypes"][2]])
    assert "cycle" in diagnostics(itself)[0][2]
    twice = edited(dtypes=[*RSQRT["dtypes"], {"name": "C", "acc_of": "T"}])
    assert diagnostics(twice)[0][:2] == ("/dtypes/3/name", "bad_dtype_variable")


def test_a_call_binds_no_derived_variable() -> None:
    """An input typed by a derived variable, a dtype= argument binding one, and a binding naming
    one are refused: a call binds the declared variables, PyTorch's rules the rest."""
    typed = edited(inputs=[{"name": "x", "dtype": "R", "shape": ["N"]}])
    assert diagnostics(typed)[0][:2] == ("/inputs/0/dtype", "bad_dtype_variable")
    binds = edited(inputs=[RSQRT["inputs"][0], {"name": "dtype", "role": "dtype", "binds": "C", "default": None}])
    assert diagnostics(binds)[0][:2] == ("/inputs/1/binds", "bad_dtype_variable")
    path, code, message = diagnostics(RSQRT, {"T": "f16", "R": "f32"})[0]
    assert (path, code) == ("/dtypes", "bad_dtype_variable") and "derived" in message


def test_the_grammar_and_the_parser_take_derived_variables() -> None:
    """The decoding grammar (xgrammar, from the schema) lets a model write them; the post-check
    of an answer parses them to the same kernel."""
    xgr = pytest.importorskip("xgrammar")
    from test_grammar import BYTE_INFO

    from kernelgen.lang.parse import kernel_to_json
    from kernelgen.model.grammar import compile_grammar, validate_answer

    text = kernel_to_json(kernel_from_obj(RSQRT))
    matcher = xgr.GrammarMatcher(compile_grammar(BYTE_INFO))
    assert '"acc_of":"R"' in text and matcher.accept_string(text) and matcher.accept_token(256)
    assert validate_answer(text) == kernel_from_obj(RSQRT)


def test_the_schema_takes_a_derived_variable_by_name_only() -> None:
    with pytest.raises(SchemaError):
        kernel_from_obj(edited(dtypes=[RSQRT["dtypes"][0], {"name": "R", "float_of": "f32"}]))
    with pytest.raises(SchemaError):
        kernel_from_obj(edited(dtypes=[RSQRT["dtypes"][0], {"name": "R", "float_of": "T", "of": ["f32"]}]))


def test_every_binding_is_checked_and_a_diagnostic_names_the_derived_dtypes() -> None:
    """acc_of of an integer is i64: a full of C = inf checks for the float bindings and fails
    for the integer ones, each diagnostic saying which binding and what C was there."""
    body = copy.deepcopy(BODY)
    body.insert(2, {"op": "let", "name": "big", "value": {"op": "full", "shape": [], "value": "inf", "dtype": "D"}})
    kernel = edited(dtypes=[*RSQRT["dtypes"], {"name": "D", "acc_of": "T"}], body=body)
    found = diagnostics(kernel)
    assert {d[:2] for d in found} == {("/body/2/value/value", "bad_value")}
    assert [d[2].split(":")[0] for d in found] == ["with T=i32, R=f32, C=f32, D=i64", "with T=i64, R=f32, C=f32, D=i64",
                                                  "with T=bool, R=f32, C=f32, D=i64"]
    assert check(kernel_from_obj(kernel), None, {"T": "f16"}).kernel.outputs[0].dtype == "f16"


# -- calls, and the stages against each other ------------------------------------------------


@pytest.mark.parametrize("dtype", ["i32", "i64", "bool", "f16", "bf16", "f32", "f64"])
def test_a_call_returns_torchs_dtype_and_values(dtype: str) -> None:
    x = (torch.rand(300, dtype=torch.float64) * 50 + 0.5).to(torch_dtype(dtype))
    y = call_kernel(kernel_from_obj(RSQRT), [x], {}, interpret)
    want = torch.rsqrt(x)
    assert y.dtype == want.dtype
    tolerance = {"f16": 1e-3, "bf16": 8e-3, "f64": 1e-15}.get(dtype, 1e-6)
    torch.testing.assert_close(y, want, rtol=tolerance, atol=0.0)


def test_f16_computes_in_f32_and_f64_in_f64() -> None:
    """What the derived compute dtype buys: an f16 result rounded once from f32 (an f16 division
    would not be correctly rounded here), an f64 one in f64 (an f32 one is 1e-8 off)."""
    x = torch.tensor([3.0, 7.0, 11.0, 1e-3] * 8, dtype=torch.float64)
    kernel = kernel_from_obj(RSQRT)
    wide = call_kernel(kernel, [x], {}, interpret)
    assert torch.equal(wide, 1.0 / torch.sqrt(x))
    half = call_kernel(kernel, [x.half()], {}, interpret)
    assert torch.equal(half, (1.0 / torch.sqrt(x.half().float())).half())


@pytest.mark.parametrize("dtype", ["i32", "i64", "bool", "f16", "f32", "f64"])
def test_each_binding_matches_the_emitted_triton(dtype: str, triton_interpreter: TritonInterpreter) -> None:  # noqa: F811
    """bf16 is left out: Triton's interpreter computes bf16 wrongly (NumPy has none)."""
    checked = check(kernel_from_obj(RSQRT), None, {"T": dtype})
    x = (torch.rand(300, dtype=torch.float64) * 50 + 0.5).to(torch_dtype(dtype))
    check_in_triton_interpreter(triton_interpreter, checked, {"x": x})


@pytest.mark.parametrize("dtype, ops", [("i64", {"cvt.rn.f32.s64", "sqrt.rn.f32"}), ("f16", {"cvt.f32.f16", "cvt.rn.f16.f32"}),
                                        ("f64", {"sqrt.rn.f64", "div.rn.f64"})])
def test_each_binding_compiles_for_sm90_in_its_compute_dtype(dtype: str, ops: set[str]) -> None:
    ptx = compile_kernel(check(kernel_from_obj(RSQRT), None, {"T": dtype}), "sm_90", in_process=True, cache=False).ptx
    assert all(op in ptx for op in ops), sorted(op for op in ops if op not in ptx)


@pytest.mark.parametrize("task_id", ["easy/log1p_generic", "easy/reciprocal_int"])
def test_every_binding_of_the_tasks_goldens_compiles_for_sm90(task_id: str) -> None:
    from kernelgen.task.spec import get_task

    golden = get_task(task_id).golden
    for binding in bindings(golden):
        ptx = compile_kernel(check(golden, None, binding), "sm_90", in_process=True, cache=False).ptx
        assert ".visible .entry" in ptx, binding
