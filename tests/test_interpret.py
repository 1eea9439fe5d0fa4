"""The interpreter's meaning of the constructs where Triton, C, PyTorch and IEEE leave room for
doubt, each against values worked out by hand (see the module docstring of
:mod:`kernelgen.interp.execute`)."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from test_lower import checked_case, wrapped_copy

from kernelgen.check.checker import check
from kernelgen.errors import InterpreterError
from kernelgen.interp.execute import interpret
from kernelgen.lang.nodes import Kernel
from kernelgen.lang.parse import kernel_from_obj

BLOCK = 16


def op(kind: str, /, **fields: Any) -> dict[str, Any]:
    return {"op": kind, **fields}


def let(name: str, value: Any) -> dict[str, Any]:
    return op("let", name=name, value=value)


def elementwise(value: Any, inputs: dict[str, str], out_dtype: str, load_mask: Any = "in_bounds",
                other: Any = None) -> Kernel:
    """out[i] = value over 1-D inputs of length N; each input's block is bound to its name."""
    loads = []
    for name in inputs:
        load = op("load", ptr=op("add", lhs=f"{name}_ptr", rhs="offsets"), mask=load_mask)
        if other is not None:
            load["other"] = other
        loads.append(let(name, load))
    return kernel_from_obj({
        "name": "elementwise",
        "inputs": [{"name": f"{n}_in", "dtype": d, "shape": ["N"]} for n, d in inputs.items()],
        "outputs": [{"name": "out", "dtype": out_dtype, "shape": ["N"]}],
        "params": [{"name": f"{n}_ptr", "value": f"{n}_in"} for n in inputs] + [{"name": "out"}, {"name": "N"}],
        "meta": [{"name": "BLOCK", "value": BLOCK}],
        "grid": [op("cdiv", lhs="N", rhs="BLOCK")],
        "body": [
            let("offsets", op("add", lhs=op("mul", lhs=op("program_id"), rhs="BLOCK"), rhs=op("arange", size="BLOCK"))),
            let("in_bounds", op("lt", lhs="offsets", rhs="N")),
            *loads,
            op("store", ptr=op("add", lhs="out", rhs="offsets"), value=value, mask="in_bounds"),
        ],
    })


def run_elementwise(value: Any, out_dtype: str, **tensors: torch.Tensor) -> torch.Tensor:
    kernel = elementwise(value, {n: _dtype_name(t) for n, t in tensors.items()}, out_dtype)
    return interpret(check(kernel), {f"{n}_in": t for n, t in tensors.items()})["out"]


def _dtype_name(t: torch.Tensor) -> str:
    return {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.int32: "i32",
            torch.int64: "i64", torch.bool: "bool", torch.float64: "f64", torch.float8_e4m3fn: "f8e4m3",
            torch.float8_e5m2: "f8e5m2"}[t.dtype]


def rowwise(reduction: dict[str, Any], dtype: str, out_dtype: str, width: int = 4) -> Kernel:
    """out[r] = reduction of row r of an [R, width] input (the row is bound to 'row')."""
    return kernel_from_obj({
        "name": "rowwise",
        "inputs": [{"name": "x", "dtype": dtype, "shape": ["R", width]}],
        "outputs": [{"name": "out", "dtype": out_dtype, "shape": ["R"]}],
        "params": [{"name": "x"}, {"name": "out"}],
        "grid": ["R"],
        "body": [
            let("row", op("load", ptr=op("add", lhs="x", rhs=op("add", lhs=op("mul", lhs=op("program_id"), rhs=width),
                                                                   rhs=op("arange", size=width))))),
            op("store", ptr=op("add", lhs="out", rhs=op("program_id")), value=reduction),
        ],
    })


# -- integer arithmetic -------------------------------------------------------------------------

DIVIDENDS = torch.tensor([7, -7, 7, -7, 0, 5, -1, 1, -2147483647], dtype=torch.int32)
DIVISORS = torch.tensor([2, 2, -2, -2, 3, -5, 3, -3, 2], dtype=torch.int32)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_idiv_rounds_toward_zero(dtype: torch.dtype) -> None:
    out = run_elementwise(op("idiv", lhs="a", rhs="b"), _dtype_name(torch.empty(0, dtype=dtype)),
                          a=DIVIDENDS.to(dtype), b=DIVISORS.to(dtype))
    assert out.tolist() == [3, -3, -3, 3, 0, -1, 0, 0, -1073741823]
    assert out.tolist() == [math.trunc(a / b) for a, b in zip(DIVIDENDS.tolist(), DIVISORS.tolist())]


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_rem_takes_the_sign_of_the_dividend(dtype: torch.dtype) -> None:
    out = run_elementwise(op("rem", lhs="a", rhs="b"), _dtype_name(torch.empty(0, dtype=dtype)),
                          a=DIVIDENDS.to(dtype), b=DIVISORS.to(dtype))
    assert out.tolist() == [1, -1, 1, -1, 0, 0, -1, 1, -1]
    assert out.tolist() == [math.fmod(a, b) for a, b in zip(DIVIDENDS.tolist(), DIVISORS.tolist())]


def test_cdiv_rounds_up_for_positive_operands() -> None:
    a = torch.tensor([0, 1, 7, 8, 9, 1000, 1], dtype=torch.int32)
    b = torch.tensor([4, 4, 4, 4, 4, 7, 1], dtype=torch.int32)
    out = run_elementwise(op("cdiv", lhs="a", rhs="b"), "i32", a=a, b=b)
    assert out.tolist() == [0, 1, 2, 2, 3, 143, 1]


@pytest.mark.parametrize("name", ["idiv", "rem", "cdiv"])
def test_integer_division_by_zero_gives_zero(name: str) -> None:
    a = torch.tensor([5, -5, 0], dtype=torch.int32)
    out = run_elementwise(op(name, lhs="a", rhs="b"), "i32", a=a, b=torch.zeros(3, dtype=torch.int32))
    assert out.tolist() == [0, 0, 0]


def test_i32_arithmetic_wraps() -> None:
    a = torch.tensor([2**31 - 1, -(2**31)], dtype=torch.int32)
    out = run_elementwise(op("add", lhs="a", rhs=op("full", shape=[], value=1, dtype="i32")), "i32", a=a)
    assert out.tolist() == [-(2**31), -(2**31) + 1]


# -- masked loads -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,other,expected_other", [
    ("f32", -1.5, -1.5), ("f32", None, 0.0), ("i32", 7, 7), ("i32", None, 0), ("bool", True, True), ("bool", None, False),
    ("f16", "-inf", -math.inf), ("bf16", None, 0.0)])
def test_masked_load_reads_other_or_zero(dtype: str, other: Any, expected_other: Any) -> None:
    """Lanes 3.. are masked off in the load (not in the store): they read ``other``."""
    kernel = elementwise("a", {"a": dtype}, dtype, load_mask=op("lt", lhs="offsets", rhs=3), other=other)
    torch_dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "i32": torch.int32,
                   "bool": torch.bool}[dtype]
    a = torch.tensor([1, 1, 1, 0, 1, 0], dtype=torch_dtype)
    out = interpret(check(kernel), {"a_in": a})["out"]
    assert out[:3].tolist() == a[:3].tolist()
    assert out[3:].tolist() == [expected_other] * 3


def test_masked_load_never_reads_masked_off_lanes() -> None:
    """The mask keeps lanes past N from reading: the buffer is exactly N long."""
    a = torch.arange(5, dtype=torch.float32)
    out = run_elementwise("a", "f32", a=a)
    assert out.tolist() == a.tolist()


# -- NaN and comparisons ------------------------------------------------------------------------

NAN = math.nan


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_and_minimum_propagate_nan(name: str) -> None:
    a = torch.tensor([NAN, 1.0, NAN, -0.5], dtype=torch.float32)
    b = torch.tensor([1.0, NAN, NAN, 2.0], dtype=torch.float32)
    out = run_elementwise(op(name, lhs="a", rhs="b"), "f32", a=a, b=b)
    assert out[:3].isnan().all()
    assert out[3].item() == (2.0 if name == "maximum" else -0.5)


@pytest.mark.parametrize("name,clean", [("max", 3.0), ("min", -2.0)])
def test_max_and_min_reductions_propagate_nan(name: str, clean: float) -> None:
    x = torch.tensor([[1.0, NAN, 3.0, 0.0], [1.0, 3.0, -2.0, 0.0], [NAN, NAN, NAN, NAN]])
    out = interpret(check(rowwise(op(name, x="row", axis=0), "f32", "f32")), {"x": x})["out"]
    assert out[0].isnan() and out[2].isnan() and out[1].item() == clean


@pytest.mark.parametrize("name,expected", [
    ("eq", [False, False, True]), ("ne", [True, True, False]), ("lt", [False, False, False]),
    ("le", [False, False, True]), ("gt", [False, False, False]), ("ge", [False, False, True])])
def test_comparisons_with_nan_are_false_except_ne(name: str, expected: list[bool]) -> None:
    a = torch.tensor([NAN, NAN, 1.0])
    b = torch.tensor([NAN, 1.0, 1.0])
    assert run_elementwise(op(name, lhs="a", rhs="b"), "bool", a=a, b=b).tolist() == expected


# -- reductions ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name,rows,expected", [
    ("argmax", [[1, 3, 3, 2], [5, 5, 5, 5], [-1, -2, -1, 0]], [1, 0, 3]),
    ("argmin", [[2, 0, 5, 0], [5, 5, 5, 5], [-1, -2, -2, 0]], [1, 0, 1])])
@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_argmax_and_argmin_give_the_first_index_of_ties(name: str, rows: list, expected: list, dtype: str) -> None:
    x = torch.tensor(rows, dtype=torch.float32 if dtype == "f32" else torch.int32)
    out = interpret(check(rowwise(op(name, x="row", axis=0), dtype, "i32")), {"x": x})["out"]
    assert out.tolist() == expected


def test_reductions_with_keepdims() -> None:
    """keepdims leaves a [1] block: it broadcasts back over the row (x - max)."""
    kernel = kernel_from_obj({
        "name": "center", "inputs": [{"name": "x", "dtype": "f32", "shape": ["R", 8]}],
        "outputs": [{"name": "out", "dtype": "f32", "shape": ["R", 8]}],
        "params": [{"name": "x"}, {"name": "out"}], "grid": ["R"],
        "body": [
            let("offsets", op("add", lhs=op("mul", lhs=op("program_id"), rhs=8), rhs=op("arange", size=8))),
            let("row", op("load", ptr=op("add", lhs="x", rhs="offsets"))),
            op("store", ptr=op("add", lhs="out", rhs="offsets"),
               value=op("sub", lhs="row", rhs=op("max", x="row", axis=0, keepdims=True))),
        ]})
    x = torch.randn(5, 8, generator=torch.Generator().manual_seed(0))
    out = interpret(check(kernel), {"x": x})["out"]
    assert torch.equal(out, x - x.amax(dim=1, keepdim=True))


def test_sum_of_integers_stays_integer() -> None:
    x = torch.tensor([[1, 2, 3, 4], [-5, 5, -5, 5]], dtype=torch.int32)
    out = interpret(check(rowwise(op("sum", x="row", axis=0), "i32", "i32")), {"x": x})["out"]
    assert out.tolist() == [10, 0]


# -- dot and fused arithmetic -------------------------------------------------------------------


def dot_kernel(dtype: str, precision: str = "ieee", with_acc: bool = False) -> Kernel:
    """c = a @ b (+ acc) for fixed [16, 16] inputs and one program."""
    tile = op("add", lhs=op("mul", lhs=op("expand_dims", x=op("arange", size=16), axis=1), rhs=16),
              rhs=op("expand_dims", x=op("arange", size=16), axis=0))
    dot = op("dot", lhs="a_tile", rhs="b_tile", precision=precision)
    inputs = [{"name": "a", "dtype": dtype, "shape": [16, 16]}, {"name": "b", "dtype": dtype, "shape": [16, 16]}]
    params = [{"name": "a"}, {"name": "b"}, {"name": "c"}]
    body = [let("tile", tile), let("a_tile", op("load", ptr=op("add", lhs="a", rhs="tile"))),
            let("b_tile", op("load", ptr=op("add", lhs="b", rhs="tile")))]
    if with_acc:
        inputs.append({"name": "acc", "dtype": "f32", "shape": [16, 16]})
        params.append({"name": "acc"})
        dot["acc"] = op("load", ptr=op("add", lhs="acc", rhs="tile"))
    body.append(op("store", ptr=op("add", lhs="c", rhs="tile"), value=dot))
    return kernel_from_obj({"name": "dot", "inputs": inputs, "outputs": [{"name": "c", "dtype": "f32", "shape": [16, 16]}],
                            "params": params, "grid": [1], "body": body})


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_dot_with_acc_accumulates_in_f32(dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(16, 16, generator=g).to(dtype), torch.randn(16, 16, generator=g).to(dtype)
    acc = torch.randn(16, 16, generator=g)
    out = interpret(check(dot_kernel(_dtype_name(a), with_acc=True)), {"a": a, "b": b, "acc": acc})["c"]
    torch.testing.assert_close(out, a.double().matmul(b.double()).add(acc.double()).float(), rtol=1e-6, atol=1e-5)


def test_tf32_dot_rounds_operands_to_10_mantissa_bits() -> None:
    """1 + 2**-12 is not a tf32 value (it rounds to 1); 1 + 3 * 2**-12 rounds up to 1 + 2**-10."""
    a = torch.zeros(16, 16)
    a[0, :] = 1 + 2**-12
    a[1, :] = 1 + 3 * 2**-12
    a[2, :] = 1 + 2**-10  # a tf32 value: kept
    b = torch.zeros(16, 16)
    b[:, 0] = 1.0
    ieee = interpret(check(dot_kernel("f32")), {"a": a, "b": b})["c"][:3, 0]
    tf32 = interpret(check(dot_kernel("f32", "tf32")), {"a": a, "b": b})["c"][:3, 0]
    assert ieee.tolist() == [16 * (1 + 2**-12), 16 * (1 + 3 * 2**-12), 16 * (1 + 2**-10)]
    assert tf32.tolist() == [16.0, 16 * (1 + 2**-10), 16 * (1 + 2**-10)]


def test_fma_rounds_once() -> None:
    """(1 + 2**-12)**2 = 1 + 2**-11 + 2**-24: the product alone rounds the 2**-24 away (a tie,
    to even); fused with - 1 it survives."""
    x = torch.tensor([1 + 2**-12], dtype=torch.float32)
    z = torch.tensor([-1.0], dtype=torch.float32)
    fused = run_elementwise(op("fma", x="x", y="x", z="z"), "f32", x=x, z=z)
    unfused = run_elementwise(op("add", lhs=op("mul", lhs="x", rhs="x"), rhs="z"), "f32", x=x, z=z)
    assert fused.item() == 2**-11 + 2**-24
    assert unfused.item() == 2**-11


# -- casts --------------------------------------------------------------------------------------


def test_float_to_int_cast_truncates_toward_zero() -> None:
    a = torch.tensor([2.7, -2.7, 0.5, -0.5, 100.0])
    assert run_elementwise(op("cast", x="a", dtype="i32"), "i32", a=a).tolist() == [2, -2, 0, 0, 100]


def test_cast_to_bool_is_nonzero() -> None:
    a = torch.tensor([0.0, -0.0, 0.25, -3.0, NAN])
    assert run_elementwise(op("cast", x="a", dtype="bool"), "bool", a=a).tolist() == [False, False, True, True, True]


def test_cast_to_f16_rounds_to_nearest_even() -> None:
    a = torch.tensor([1 + 2**-11, 1 + 3 * 2**-11, 70000.0])
    out = run_elementwise(op("cast", x="a", dtype="f16"), "f16", a=a)
    assert out.tolist() == [1.0, 1 + 2**-9, math.inf]


# -- loops --------------------------------------------------------------------------------------


def triangle_kernel() -> Kernel:
    """Program p loops p % 8 + 1 times: it writes row p of an [P, 8] output up to its trip count
    and the running sum of its loop variable into sums[p]."""
    return kernel_from_obj({
        "name": "triangle", "inputs": [{"name": "x", "dtype": "i32", "shape": ["P"]}],
        "outputs": [{"name": "rows", "dtype": "i32", "shape": ["P", 8]}, {"name": "sums", "dtype": "i32", "shape": ["P"]}],
        "params": [{"name": "rows"}, {"name": "sums"}], "grid": ["P"],
        "body": [
            let("p", op("program_id")),
            op("for", var="i", stop=op("add", lhs=op("rem", lhs="p", rhs=8), rhs=1),
               carry=[{"name": "total", "init": 0, "next": op("add", lhs="total", rhs="i")}],
               body=[op("store", ptr=op("add", lhs="rows", rhs=op("add", lhs=op("mul", lhs="p", rhs=8), rhs="i")),
                        value=op("mul", lhs="i", rhs=10))]),
            op("store", ptr=op("add", lhs="sums", rhs="p"), value="total"),
        ]})


def test_loops_with_per_program_trip_counts() -> None:
    out = interpret(check(triangle_kernel()), {"x": torch.zeros(11, dtype=torch.int32)})
    unwritten = torch.iinfo(torch.int32).min
    for p in range(11):
        trips = p % 8 + 1
        assert out["sums"][p].item() == trips * (trips - 1) // 2
        assert out["rows"][p].tolist() == [10 * i for i in range(trips)] + [unwritten] * (8 - trips)


def test_loop_that_never_runs_keeps_its_init() -> None:
    kernel = kernel_from_obj({
        "name": "empty_loop", "inputs": [{"name": "x", "dtype": "f32", "shape": [1]}],
        "outputs": [{"name": "out", "dtype": "f32", "shape": [1]}],
        "params": [{"name": "out"}], "grid": [1],
        "body": [op("for", var="i", start=5, stop=5, carry=[{"name": "v", "init": 2.5, "next": 0.0}], body=[]),
                 op("store", ptr="out", value="v")]})
    assert interpret(check(kernel), {"x": torch.zeros(1)})["out"].tolist() == [2.5]


def test_loop_with_step_and_pointer_carry() -> None:
    """A carried pointer walks x in steps of 3: out = x[0] + x[3] + x[6] + x[9]."""
    kernel = kernel_from_obj({
        "name": "strided", "inputs": [{"name": "x", "dtype": "f32", "shape": [12]}],
        "outputs": [{"name": "out", "dtype": "f32", "shape": [1]}],
        "params": [{"name": "x"}, {"name": "out"}], "grid": [1],
        "body": [op("for", var="i", stop=12, step=3,
                    carry=[{"name": "p", "init": "x", "next": op("add", lhs="p", rhs=3)},
                           {"name": "total", "init": 0.0, "next": op("add", lhs="total", rhs="value")}],
                    body=[let("value", op("load", ptr="p", mask=op("lt", lhs="i", rhs=12)))]),
                 op("store", ptr="out", value="total")]})
    x = torch.arange(12, dtype=torch.float32)
    assert interpret(check(kernel), {"x": x})["out"].tolist() == [0.0 + 3 + 6 + 9]


# -- faults -------------------------------------------------------------------------------------


def test_load_under_a_wrong_mask_is_out_of_bounds_at_its_node() -> None:
    kernel = elementwise("a", {"a": "f32"}, "f32", load_mask=op("le", lhs="offsets", rhs="N"))
    with pytest.raises(InterpreterError) as info:
        interpret(check(kernel), {"a_in": torch.zeros(20)})
    (diagnostic,) = info.value.diagnostics
    assert (diagnostic.path, diagnostic.code) == ("/body/2/value", "out_of_bounds")
    assert "offset 20" in diagnostic.message and "program 1" in diagnostic.message and "20 elements" in diagnostic.message
    assert info.value.stage == "interpret"


def test_store_under_a_wrong_mask_is_out_of_bounds_at_its_node() -> None:
    doc = elementwise("a", {"a": "f32"}, "f32").model_dump(mode="json", exclude_defaults=True)
    doc["body"][3]["mask"] = op("lt", lhs="offsets", rhs=op("add", lhs="N", rhs=2))
    with pytest.raises(InterpreterError) as info:
        interpret(check(kernel_from_obj(doc)), {"a_in": torch.zeros(3)})
    (diagnostic,) = info.value.diagnostics
    assert (diagnostic.path, diagnostic.code) == ("/body/3", "out_of_bounds")
    assert "store at offset 3" in diagnostic.message



def test_a_true_hint_is_the_identity_and_modifiers_change_nothing() -> None:
    x = torch.randn(4096)
    assert torch.equal(interpret(check(Kernel.model_validate(wrapped_copy(True))), [x])["out"], x)
    rows = torch.randn(5, 300)
    sums = interpret(checked_case("staged_row_sums"), [rows])["out"]
    torch.testing.assert_close(sums, rows.sum(dim=1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("edit, size, message", [
    # the last program's offsets wrap around at N = 4000: not one run of 1024
    ({}, 4000, "the run of 1024 lanes from lane 0 does not count up by 1"),
    # program 1 starts at 1024, not a multiple of 2048
    ({"multiple_of": [2048]}, 4096, "a run starts at 1024, not a multiple of 2048"),
])
def test_a_false_hint_fails_with_where_it_breaks(edit: dict[str, Any], size: int, message: str) -> None:
    kernel = wrapped_copy(True)
    kernel["body"][0]["value"].update(edit)
    with pytest.raises(InterpreterError) as caught:
        interpret(check(Kernel.model_validate(kernel)), [torch.randn(size)])
    assert caught.value.code == "hint_violated" and caught.value.path == "/body/0/value"
    assert message in str(caught.value)


# -- if / else -----------------------------------------------------------------------------------


def test_full_blocks_unmasked_and_the_tail_masked_in_else() -> None:
    checked = checked_case("tail_split")
    for n in (1, 63, 64, 65, 1000, 1024):
        x = torch.randn(n)
        torch.testing.assert_close(interpret(checked, [x])["y"], x * 2.0 + 1.0, rtol=0, atol=0)


@pytest.mark.parametrize("mode", [-2, 0, 1, 3, 50])
def test_a_runtime_scalar_picks_the_formula_and_program_ids_the_tag(mode: int) -> None:
    x = torch.randn(150)
    y, z = interpret(checked_case("branch_formulas"), [x, mode]).values()
    torch.testing.assert_close(y, (x * x + 1.0) if mode > 0 else -x * 0.5, rtol=0, atol=0)
    program = torch.arange(150) // 32
    lane = torch.arange(150) % 32
    assert torch.equal(z, torch.where(program < mode, lane + mode, -1).to(torch.int32))


def test_a_loaded_flag_picks_the_carry_update_per_program() -> None:
    m, n = 7, 100
    x = torch.randn(m, n)
    flags = torch.tensor([1, 0, -3, 5, 0, 2, -1], dtype=torch.int32)
    acc, first, lo, hi = interpret(checked_case("branch_in_loop"), [x, flags]).values()
    expected = torch.where(flags > 0, x.sum(dim=1), x.amax(dim=1).clamp(min=0.0))
    torch.testing.assert_close(acc, expected, rtol=1e-5, atol=1e-5)
    assert torch.equal(first, x[:, 0])
    assert torch.equal(torch.where(flags > 0, hi, lo), acc) and torch.equal(torch.where(flags > 0, lo, hi), -acc)


def _one_branch_per_program(else_body: list[dict[str, Any]]) -> Kernel:
    """Programs past N (the grid has 4 more) take no branch that touches memory; in range,
    even programs store 1.0 and odd ones run ``else_body``."""
    ok = op("full", shape=[], value=True, dtype="bool")
    return kernel_from_obj({
        "name": "one_branch", "inputs": [{"name": "x", "dtype": "f32", "shape": ["N"]}],
        "outputs": [{"name": "out", "dtype": "f32", "shape": ["N"]}],
        "params": [{"name": "x"}, {"name": "out"}, {"name": "N"}],
        "grid": [op("add", lhs="N", rhs=4)],
        "body": [let("pid", op("program_id")),
                 op("if", cond=op("lt", lhs="pid", rhs="N"), then=[
                     op("if", cond=op("eq", lhs=op("rem", lhs="pid", rhs=2), rhs=0),
                        then=[op("store", ptr=op("add", lhs="out", rhs="pid"), value=1.0, mask=ok)],
                        **{"else": else_body})])]})


def test_only_the_taken_branch_runs_for_each_program() -> None:
    """A store in the branch a program does not take never happens, and a load there is not
    made (programs past N would read out of bounds): running both branches and selecting
    afterwards would give all 2.0s or an out_of_bounds error."""
    ok = op("full", shape=[], value=True, dtype="bool")
    odd = [let("v", op("load", ptr=op("add", lhs="x", rhs="pid"), mask=ok)),
           op("store", ptr=op("add", lhs="out", rhs="pid"), value=op("add", lhs="v", rhs=2.0), mask=ok)]
    x = torch.arange(9, dtype=torch.float32)
    out = interpret(check(_one_branch_per_program(odd)), [x])["out"]
    assert out.tolist() == [1.0, 3.0, 1.0, 5.0, 1.0, 7.0, 1.0, 9.0, 1.0]


def test_a_fault_in_a_taken_branch_is_reported_there() -> None:
    ok = op("full", shape=[], value=True, dtype="bool")
    bad = [op("store", ptr=op("add", lhs="out", rhs=op("add", lhs="pid", rhs=1)), value=2.0, mask=ok)]
    with pytest.raises(InterpreterError) as error:
        interpret(check(_one_branch_per_program(bad)), [torch.zeros(4)])
    (diagnostic,) = error.value.diagnostics
    assert diagnostic.path == "/body/1/then/0/else/0" and diagnostic.code == "out_of_bounds"
