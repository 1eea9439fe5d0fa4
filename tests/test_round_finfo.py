"""``round`` (half to even, torch.round) and the per-dtype constants ``finfo``/``iinfo``
(torch.finfo's eps, max, min, tiny; torch.iinfo's max, min), resolved per binding of a dtype
variable. Every stage has them: checker, interpreter, lowering, emitter, prompt; and the bench
tasks built on them fail the careless kernels (half away from zero, an f32 eps on f16)."""

from __future__ import annotations

import json

import pytest
import torch
from test_emit import TritonInterpreter, check_in_triton_interpreter, o, triton_interpreter  # noqa: F401

from kernelgen.check.checker import check
from kernelgen.errors import Outcome, SemanticError
from kernelgen.gpu.compile import compile_kernel
from kernelgen.harness.pipeline import Settings, evaluate_answer
from kernelgen.host.plan import torch_dtype
from kernelgen.interp.execute import interpret
from kernelgen.lang.limits import type_info
from kernelgen.lang.parse import kernel_from_obj, kernel_to_json
from kernelgen.model.prompt import system_prompt
from kernelgen.task.spec import get_task

TIES = [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -0.0, 0.0, 1000.5, 3.7, -3.7, 2.0**23 + 1, 1e30,
        float("inf"), float("-inf"), float("nan")]


def elementwise(dtype: str, value: dict, x_dtype: str | None = None) -> dict:
    """out[i] = value (of x[i] loaded as ``v``), one program of 32 lanes."""
    x_dtype = x_dtype or dtype
    offs = o("arange", size=32)
    return {"name": "each", "inputs": [{"name": "x", "dtype": x_dtype, "shape": ["N"]}],
            "outputs": [{"name": "out", "dtype": dtype, "shape": ["N"]}],
            "params": [{"name": "x"}, {"name": "out"}, {"name": "N"}], "grid": [1],
            "body": [{"op": "let", "name": "v", "value": o("load", ptr=o("add", lhs="x", rhs=offs),
                                                             mask=o("lt", lhs=offs, rhs="N"))},
                     o("store", ptr=o("add", lhs="out", rhs=offs), value=value, mask=o("lt", lhs=offs, rhs="N"))]}


def rounding(dtype: str) -> dict:
    return elementwise(dtype, o("round", x="v"))


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "f64"])
def test_round_is_torch_round(dtype: str) -> None:
    x = torch.tensor(TIES, dtype=torch.float64).to(torch_dtype(dtype))
    got = interpret(check(kernel_from_obj(rounding(dtype))), {"x": x})["out"]
    want = torch.round(x)
    assert torch.equal(got.isnan(), want.isnan())
    assert torch.equal(got[~want.isnan()], want[~want.isnan()])
    assert torch.equal(got[~want.isnan()].signbit(), want[~want.isnan()].signbit())  # round(-0.4) is -0.0


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "f64"])
def test_emitted_round_matches_in_tritons_interpreter(dtype: str, triton_interpreter: TritonInterpreter) -> None:
    x = torch.tensor(TIES, dtype=torch.float64).to(torch_dtype(dtype))
    check_in_triton_interpreter(triton_interpreter, check(kernel_from_obj(rounding(dtype))), {"x": x})


@pytest.mark.parametrize(("dtype", "instruction"), [("f32", "cvt.rni.f32.f32"), ("f64", "cvt.rni.f64.f64"),
                                                    ("f16", "cvt.rni.f32.f32"), ("bf16", "cvt.rni.f32.f32")])
def test_round_lowers_to_round_to_nearest_integer(dtype: str, instruction: str) -> None:
    compiled = compile_kernel(check(kernel_from_obj(rounding(dtype))), "sm_90", in_process=True, cache=False)
    assert instruction in compiled.ptx


def test_round_takes_floats() -> None:
    with pytest.raises(SemanticError) as raised:
        check(kernel_from_obj(rounding("i32")))
    [diagnostic] = raised.value.diagnostics
    assert (diagnostic.code, diagnostic.path) == ("needs_float", "/body/1/value/x")


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "f64", "f8e4m3", "f8e5m2"])
def test_finfo_is_torchs(dtype: str) -> None:
    info = torch.finfo(torch_dtype(dtype))
    for what in ("eps", "max", "min", "tiny"):
        assert type_info("finfo", dtype, what) == getattr(info, what), what


@pytest.mark.parametrize("dtype", ["i32", "i64", "i8", "u8", "i16"])
def test_iinfo_is_torchs(dtype: str) -> None:
    info = torch.iinfo(torch_dtype(dtype))
    assert (type_info("iinfo", dtype, "max"), type_info("iinfo", dtype, "min")) == (info.max, info.min)


def constants(dtype: str, op: str = "finfo") -> dict:
    """out = [eps, max, min, tiny] (iinfo: [max, min]) of ``dtype``, through a dtype variable T."""
    whats = ("eps", "max", "min", "tiny") if op == "finfo" else ("max", "min")
    lane = o("arange", size=4)
    value = 0
    for i, what in reversed(list(enumerate(whats))):
        value = o("where", cond=o("eq", lhs=lane, rhs=i), x=o(op, dtype="T", what=what), y=value)
    out_dtype = "f32" if dtype.startswith("f8") else "T"
    return {"name": "limits", "dtypes": [{"name": "T", "of": [dtype]}],
            "inputs": [], "outputs": [{"name": "out", "dtype": out_dtype, "shape": [len(whats)]}],
            "params": [{"name": "out"}], "grid": [1],
            "body": [o("store", ptr=o("add", lhs="out", rhs=lane), value=value, mask=o("lt", lhs=lane, rhs=len(whats)))]}


@pytest.mark.parametrize(("dtype", "op"), [("f32", "finfo"), ("f16", "finfo"), ("bf16", "finfo"), ("f64", "finfo"),
                                           ("f8e4m3", "finfo"), ("i32", "iinfo"), ("i64", "iinfo"),
                                           ("i8", "iinfo"), ("u8", "iinfo"), ("i16", "iinfo")])
def test_finfo_and_iinfo_per_binding_in_every_stage(dtype: str, op: str,
                                                    triton_interpreter: TritonInterpreter) -> None:
    checked = check(kernel_from_obj(constants(dtype, op)))
    info = (torch.finfo if op == "finfo" else torch.iinfo)(torch_dtype(dtype))
    whats = ("eps", "max", "min", "tiny") if op == "finfo" else ("max", "min")
    got = interpret(checked, {})["out"]
    assert got.tolist() == [getattr(info, w) for w in whats]
    if dtype != "bf16":  # Triton's interpreter holds bf16 constants as raw bits (see kernelgen.emit.module)
        check_in_triton_interpreter(triton_interpreter, checked, {})
    compile_kernel(checked, "sm_90", in_process=True, cache=False)


@pytest.mark.parametrize(("op", "dtype", "what", "code", "field"), [
    ("finfo", "i32", "eps", "needs_float", "dtype"), ("iinfo", "f16", "max", "needs_int", "dtype"),
    ("iinfo", "i64", "eps", "bad_value", "what"), ("iinfo", "bool", "max", "needs_int", "dtype")])
def test_type_info_refuses_what_torch_refuses(op: str, dtype: str, what: str, code: str, field: str) -> None:
    kernel = elementwise("f32", o("add", lhs="v", rhs=o("cast", x=o(op, dtype=dtype, what=what), dtype="f32")))
    with pytest.raises(SemanticError) as raised:
        check(kernel_from_obj(kernel))
    [diagnostic] = raised.value.diagnostics
    assert (diagnostic.code, diagnostic.path) == (code, f"/body/1/value/rhs/x/{field}")


def careless(task_id: str, edit) -> Outcome:
    task = get_task(task_id)
    answer = json.loads(kernel_to_json(task.golden))
    edit(answer["body"])
    return evaluate_answer(task, json.dumps(answer), Settings(shapes=1, seed=0))


def test_round_half_away_from_zero_fails_the_round_task() -> None:
    """floor(x + 0.5) with the sign put back: C's round(), not torch's."""
    def half_away(body: list) -> None:
        v = body[-1]["value"]["x"]
        away = o("floor", x=o("add", lhs=o("abs", x=v), rhs=0.5))
        body[-1]["value"] = o("where", cond=o("lt", lhs=v, rhs=0.0), x=o("neg", x=away), y=away)
    result = careless("round_half_even", half_away)
    assert result.outcome == Outcome.WRONG_RESULT, result.diagnostics
    assert evaluate_answer(get_task("round_half_even"), kernel_to_json(get_task("round_half_even").golden),
                           Settings(shapes=1, seed=0)).ok


def test_an_f32_eps_on_every_dtype_fails_the_clamped_log_task() -> None:
    def f32_eps(body: list) -> None:
        body[3]["value"]["rhs"] = o("cast", x=o("finfo", dtype="f32", what="eps"), dtype="T")
    result = careless("log_clamped_eps", f32_eps)
    assert result.outcome == Outcome.WRONG_RESULT, result.diagnostics
    assert "T=f16" in result.first_diagnostic().message or "T=bf16" in result.first_diagnostic().message


def test_the_manual_states_round_and_finfo() -> None:
    prompt = system_prompt(())
    assert "round` (half to even" in prompt and "TypeInfo {\"op\":\"finfo\"|\"iinfo\"" in prompt
