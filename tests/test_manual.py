"""The prompt is the complete manual, and what it says holds: each test quotes what the language
reference states and checks it against the part that decides it (the checker, the bounds
check, the host, the interpreter, the compiler's PTX)."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest

from kernelgen.check.checker import check
from kernelgen.errors import HostError, SemanticError
from kernelgen.host.plan import plan_for_sizes
from kernelgen.interp.execute import interpret
from kernelgen.lang.parse import kernel_from_obj
from kernelgen.model.prompt import EXAMPLES_DIR, language_reference

VECTOR_ADD = json.loads((EXAMPLES_DIR / "vector_add.json").read_text())


def op(kind: str, /, **fields: Any) -> dict[str, Any]:
    return {"op": kind, **fields}


def states(*sentences: str) -> None:
    reference = language_reference()
    for sentence in sentences:
        assert sentence in reference, sentence


def codes(document: dict[str, Any]) -> list[tuple[str, str]]:
    try:
        check(kernel_from_obj(document))
    except SemanticError as exc:
        return [(d.path, d.code) for d in exc.diagnostics]
    return []


def one_value(value: Any, out_dtype: str = "f32", body: list[Any] = (), inputs: list[Any] = ()) -> dict[str, Any]:
    """A kernel of one program storing ``value`` (a scalar) into out[0]."""
    return {"name": "one", "inputs": list(inputs), "outputs": [{"name": "out", "dtype": out_dtype, "shape": [1]}],
            "params": [{"name": "out"}], "grid": [1],
            "body": [*body, op("store", ptr="out", value=value)]}


def run_one(document: dict[str, Any]) -> Any:
    return interpret(check(kernel_from_obj(document)), [])["out"][0].item()


def test_an_out_argument_takes_no_shape() -> None:
    states('`out` (a tensor the first output is copied into: write just `{"name":"out","role":"out","default":null}`)',
           "a host-only argument, which takes no `shape` or `number`")
    written = copy.deepcopy(VECTOR_ADD)
    written["inputs"].append({"name": "result", "role": "out", "default": None})
    assert codes(written) == []
    shaped = copy.deepcopy(written)
    shaped["inputs"][-1]["shape"] = ["N"]
    assert codes(shaped) == [("/inputs/2/shape", "bad_signature")]


def test_the_rows_view_needs_a_dim_argument() -> None:
    states("`rows` needs a role `dim` input")
    rows = copy.deepcopy(VECTOR_ADD)
    rows["view"] = "rows"
    rows["inputs"] = [{"name": "x", "dtype": "f32", "shape": ["M", "N"]}, {"name": "y", "dtype": "f32", "shape": ["M", "N"]}]
    assert ("/view", "bad_signature") in codes(rows)


def test_the_grid_limits_are_the_hosts() -> None:
    states("at most 2**31-1 on axis 0, 65535 on axes 1 and 2: bad_grid")
    document = one_value(1.0)
    document["inputs"] = [{"name": "x", "dtype": "f32", "shape": ["N"]}]
    document["grid"] = [1, "N"]
    checked = check(kernel_from_obj(document))
    assert plan_for_sizes(checked, {"N": 65535}).grid == (1, 65535, 1)
    with pytest.raises(HostError) as raised:
        plan_for_sizes(checked, {"N": 65536})
    assert raised.value.code == "bad_grid"


def test_an_i32_param_out_of_range_asks_for_i64() -> None:
    states("or `dtype` i64 (needed for values >= 2**31: bad_arguments)")
    checked = check(kernel_from_obj(VECTOR_ADD))
    with pytest.raises(HostError) as raised:
        plan_for_sizes(checked, {"N": 2**31})
    assert raised.value.code == "bad_arguments" and "i64" in raised.value.diagnostics[0].message


def test_a_loop_that_runs_zero_times_leaves_its_carries_at_init() -> None:
    states("or `init` when the loop ran zero times", "runs `max(0, cdiv(stop - start, step))` times")
    loop = op("for", var="i", start=5, stop=2, carry=[{"name": "acc", "init": 7.5, "next": op("add", lhs="acc", rhs=1.0)}],
              body=[])
    assert run_one(one_value("acc", body=[loop])) == 7.5


def test_where_of_float_literals_is_a_weak_f32() -> None:
    states("`where(c, 1.0, 0.0)` is a weak f32 block", "(`mul(x_f16, 0.5)` is f16)")
    block = op("where", cond=op("lt", lhs=op("arange", size=16), rhs=8), x=1.0, y=0.0)
    half = op("full", shape=[16], value=2.0, dtype="f16")
    checked = check(kernel_from_obj(one_value(op("sum", x=block, axis=0), body=[
        op("let", name="weak", value=block), op("let", name="h", value=op("mul", lhs=half, rhs="weak"))])))
    assert (checked.types["/body/0/value"].dtype, checked.types["/body/0/value"].weak) == ("f32", True)
    assert checked.types["/body/1/value"].dtype == "f16"


def test_a_float_literal_with_integers_computes_in_f32() -> None:
    states("except that a float literal with integers gives f32", "(i64 beyond i32's range)")
    assert run_one(one_value(op("add", lhs=op("program_id"), rhs=0.5))) == 0.5
    checked = check(kernel_from_obj(one_value(op("cast", x=op("add", lhs=2**40, rhs=1), dtype="f32"))))
    assert checked.types["/body/0/value/x"].dtype == "i64"


def test_clamp_propagates_nan_and_lo_above_hi_gives_hi() -> None:
    states("NaN in any operand gives NaN; `lo > hi` gives `hi`")
    assert math.isnan(run_one(one_value(op("clamp", x="nan", lo=0.0, hi=1.0))))
    assert math.isnan(run_one(one_value(op("clamp", x=0.5, lo="nan", hi=1.0))))
    assert run_one(one_value(op("clamp", x=0.5, lo=3.0, hi=2.0))) == 2.0


def test_casts_round_as_stated() -> None:
    states("float to integer truncates toward zero, saturates, NaN gives 0", "to bool is `!= 0` (NaN is true)")
    nan = op("full", shape=[], value="nan", dtype="f32")
    assert run_one(one_value(op("cast", x=nan, dtype="i32"), "i32")) == 0
    assert run_one(one_value(op("cast", x=op("full", shape=[], value=-2.7, dtype="f32"), dtype="i32"), "i32")) == -2
    assert run_one(one_value(op("cast", x=op("full", shape=[], value=3e9, dtype="f32"), dtype="i32"), "i32")) == 2**31 - 1
    assert run_one(one_value(op("cast", x=nan, dtype="bool"), "bool")) is True


def test_integer_division_by_zero_gives_zero() -> None:
    states("a division by zero gives 0, overflow wraps")
    seven = op("full", shape=[], value=7, dtype="i32")
    assert run_one(one_value(op("idiv", lhs=seven, rhs=op("sub", lhs=seven, rhs=7)), "i32")) == 0
    biggest = op("full", shape=[], value=2**31 - 1, dtype="i32")
    assert run_one(one_value(op("add", lhs=biggest, rhs=1), "i32")) == -(2**31)


def test_the_bounds_check_needs_a_mask_where_the_prompt_says() -> None:
    states("so `pid * B + arange(B)` under a `cdiv(N, B)` grid needs a mask",
           "while `minimum(o, N - 1)` or `o rem N` need none")
    unmasked = copy.deepcopy(VECTOR_ADD)
    for statement in unmasked["body"][3:]:
        statement.get("value", {}).pop("mask", None)
        statement.pop("mask", None)
    assert {code for _, code in codes(unmasked)} == {"unproven_bounds"}
    clamped = copy.deepcopy(unmasked)
    clamped["body"][1]["value"] = op("minimum", lhs=clamped["body"][1]["value"], rhs=op("sub", lhs="N", rhs=1))
    assert codes(clamped) == []
    wrapped = copy.deepcopy(unmasked)
    wrapped["body"][1]["value"] = op("rem", lhs=wrapped["body"][1]["value"], rhs="N")
    assert codes(wrapped) == []


def test_host_expressions_take_no_params() -> None:
    states("meta names (not params)")
    document = copy.deepcopy(VECTOR_ADD)
    document["params"].append({"name": "half", "value": op("idiv", lhs="N", rhs=2)})
    document["grid"] = ["half"]
    assert codes(document) == [("/grid/0", "undefined_name")]


# -- what the GPU computes: the PTX of each op, as the prompt describes it ----------------------

PTX_OF = [
    (op("div", lhs="a", rhs="b"), "div.rn.f32", "is correctly rounded (div.rn"),
    (op("sqrt", x="a"), "sqrt.rn.f32", "`sqrt` is correctly rounded"),
    (op("exp", x="a"), "ex2.approx.f32", "`exp` is the hardware's ex2.approx.f32 of `x*log2(e)`"),
    (op("exp2", x="a"), "ex2.approx.f32", "`exp2` ex2.approx.f32"),
    (op("rsqrt", x="a"), "rsqrt.approx.f32", "`rsqrt` rsqrt.approx.f32"),
    (op("log", x="a"), "__nv_logf", "the others CUDA libdevice's"),
    (op("tanh", x="a"), "__nv_tanhf", "the others CUDA libdevice's"),
    (op("pow", lhs="a", rhs="b"), "__nv_powf", "is libdevice powf"),
    (op("fma", x="a", y="b", z="a"), "fma.rn.f32", "rounded once"),
    (op("maximum", lhs="a", rhs="b"), "max.NaN.f32", "`maximum`/`minimum` propagate NaN"),
    (op("clamp", x="a", lo="b", hi=1.0), "min.NaN.f32", "NaN in any operand gives NaN"),
    (op("cast", x="a", dtype="i32"), "cvt.rzi.s32.f32", "float to integer truncates toward zero"),
    (op("cast", x="a", dtype="f16"), "cvt.rn.f16.f32", "float to narrower float rounds to nearest even"),
]


def ptx_of(value: Any, out_dtype: str = "f32") -> str:
    pytest.importorskip("triton")
    from kernelgen.gpu.compile import compile_kernel

    document = copy.deepcopy(VECTOR_ADD)
    document["outputs"][0]["dtype"] = out_dtype
    body = document["body"]
    body[3]["name"], body[4]["name"] = "a", "b"
    body[5]["value"] = value
    return compile_kernel(check(kernel_from_obj(document)), "sm_90", cache=False, in_process=True).ptx


@pytest.mark.parametrize(("value", "instruction", "sentence"), PTX_OF, ids=[v["op"] for v, _, _ in PTX_OF])
def test_the_gpu_computes_each_op_as_stated(value: dict[str, Any], instruction: str, sentence: str) -> None:
    states(sentence)
    out_dtype = value["dtype"] if value["op"] == "cast" else "f32"
    assert instruction in ptx_of(value, out_dtype)


def test_float_arithmetic_is_never_fused() -> None:
    states("Float `add`/`sub`/`mul` round to nearest even, never fused into an fma")
    ptx = ptx_of(op("add", lhs=op("mul", lhs="a", rhs="b"), rhs="a"))
    assert "mul.rn.f32" in ptx and "add.rn.f32" in ptx and "fma.rn.f32" not in ptx


def test_f64_functions_are_libdevices_double_versions() -> None:
    """f64 inputs and output: the functions and pow are libdevice's double versions (inlined:
    f64 arithmetic, no f32 approximation), rsqrt is a correctly rounded sqrt and division,
    division is div.rn.f64."""
    states("f32 or f64")
    states("(f64: libdevice's double versions, rsqrt 1/sqrt)")
    states("is libdevice powf/pow")

    def f64_ptx(value: dict[str, Any]) -> str:
        pytest.importorskip("triton")
        from kernelgen.gpu.compile import compile_kernel

        document = copy.deepcopy(VECTOR_ADD)
        for spec in (*document["inputs"], *document["outputs"]):
            spec["dtype"] = "f64"
        body = document["body"]
        body[3]["name"], body[4]["name"] = "a", "b"
        body[5]["value"] = value
        return compile_kernel(check(kernel_from_obj(document)), "sm_90", cache=False, in_process=True).ptx

    for fn in ("exp", "exp2", "sin", "pow"):
        ptx = f64_ptx(op(fn, x="a") if fn != "pow" else op(fn, lhs="a", rhs="b"))
        assert ".approx.f32" not in ptx and ".approx.ftz.f32" not in ptx and "fma.rn.f64" in ptx, fn
    rsqrt = f64_ptx(op("rsqrt", x="a"))
    assert "rsqrt.approx" not in rsqrt and "sqrt.rn.f64" in rsqrt and "div.rn.f64" in rsqrt
    assert "div.rn.f64" in f64_ptx(op("div", lhs="a", rhs="b"))
