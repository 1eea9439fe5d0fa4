"""8- and 16-bit integers (i8, u8, i16: torch's int8, uint8, int16) through every stage: the
checker's rules (elementwise only, u8 unsigned, literals that fit), the interpreter against
torch, the emitted Triton in Triton's interpreter against the interpreter, and the lowering
compiled for sm_90 with the unsigned ops where u8 needs them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from test_emit import TritonInterpreter, check_in_triton_interpreter, compile_for_sm90, let, o  # noqa: F401
from test_emit import triton_interpreter  # noqa: F401

from kernelgen.check.checker import check
from kernelgen.errors import SemanticError
from kernelgen.gpu.compile import compile_kernel
from kernelgen.interp.execute import interpret
from kernelgen.lang.parse import kernel_from_obj
from kernelgen.lower.lowering import lower
from kernelgen.model.prompt import system_prompt

TORCH = {"i8": torch.int8, "u8": torch.uint8, "i16": torch.int16}


def elementwise(dtype: str, results: dict[str, tuple[dict | str, str]]) -> dict:
    """One program per BLOCK lanes of x, y (``dtype``) and f (f32), loaded from xs, ys, fs; each result ``name: (expr,
    out_dtype)`` stored to an output of its own. ``d`` is y with 0 made 1 (a divisor)."""
    offs = o("add", lhs=o("mul", lhs=o("program_id"), rhs="BLOCK"), rhs=o("arange", size="BLOCK"))
    load = {n: o("load", ptr=o("add", lhs=f"{n}s", rhs="offs"), mask="mask") for n in ("x", "y", "f")}
    return {"name": f"narrow_{dtype}",
            "inputs": [{"name": "xs", "dtype": dtype, "shape": ["N"]}, {"name": "ys", "dtype": dtype, "shape": ["N"]},
                       {"name": "fs", "dtype": "f32", "shape": ["N"]}],
            "outputs": [{"name": name, "dtype": out, "shape": ["N"]} for name, (_, out) in results.items()],
            "params": [{"name": n} for n in ("xs", "ys", "fs", *results, "N")],
            "meta": [{"name": "BLOCK", "value": 64}], "grid": [o("cdiv", lhs="N", rhs="BLOCK")],
            "body": [let("offs", offs), let("mask", o("lt", lhs="offs", rhs="N")),
                     *(let(n, v) for n, v in load.items()),
                     let("d", o("where", cond=o("eq", lhs="y", rhs=0), x=1, y="y")),
                     *(o("store", ptr=o("add", lhs=name, rhs="offs"), mask="mask", value=expr)
                       for name, (expr, _) in results.items())]}


def every_operation(dtype: str) -> dict[str, tuple[dict | str, str]]:
    same = {op: o(op, lhs="x", rhs="y") for op in ("add", "sub", "mul", "maximum", "minimum", "and", "or", "xor",
                                                    "shl", "shr", "lshr")}
    same |= {op: o(op, lhs="x", rhs="d") for op in ("idiv", "rem", "cdiv")}
    same |= {"neg": o("neg", x="x"), "abs": o("abs", x="x"), "plus_literal": o("add", lhs="x", rhs=100),
             "clamp": o("clamp", x="x", lo=3, hi=90), "from_f32": o("cast", x="f", dtype=dtype),
             "from_i32": o("cast", x=o("mul", lhs=o("cast", x="x", dtype="i32"), rhs=1000), dtype=dtype),
             "bits": o("bitcast", x=o("bitcast", x="x", dtype="i8" if dtype == "u8" else "u8" if dtype == "i8"
                                      else "f16"), dtype=dtype)}
    results = {name: (expr, dtype) for name, expr in same.items()}
    for op in ("lt", "le", "gt", "ge", "eq", "ne"):
        results[op] = (o(op, lhs="x", rhs="y"), "bool")
    results |= {"to_f32": (o("cast", x="x", dtype="f32"), "f32"), "to_i32": (o("cast", x="x", dtype="i32"), "i32"),
                "to_i64": (o("cast", x="x", dtype="i64"), "i64"), "to_f16": (o("cast", x="x", dtype="f16"), "f16")}
    return results


def full_range(dtype: str, n: int, seed: int) -> torch.Tensor:
    info = torch.iinfo(TORCH[dtype])
    values = torch.randint(info.min, info.max + 1, (n,), generator=torch.Generator().manual_seed(seed))
    values[:6] = torch.tensor([info.min, info.max, 0, 1, info.max // 2 + 1, 7])  # extremes, the sign bit
    return values.to(TORCH[dtype])


def operands(dtype: str, n: int = 200) -> dict[str, torch.Tensor]:
    f = torch.randn(n, generator=torch.Generator().manual_seed(5), dtype=torch.float64) * 400
    f[:5] = torch.tensor([1e10, -1e10, float("nan"), 255.9, -128.9])
    return {"xs": full_range(dtype, n, 1), "ys": full_range(dtype, n, 2), "fs": f.float()}


def torch_meaning(dtype: str, x: torch.Tensor, y: torch.Tensor, f: torch.Tensor) -> dict[str, torch.Tensor]:
    """What torch computes for the same operations (a shift by an amount outside the width as
    the language defines it: the sign's fill, 0 for u8; floats cast saturating where torch
    wraps)."""
    d = torch.where(y == 0, torch.ones_like(y), y)
    inside = (y >= 0) & (y < torch.iinfo(x.dtype).bits)
    info = torch.iinfo(x.dtype)
    return {"add": x + y, "sub": x - y, "mul": x * y, "xor": x ^ y, "maximum": torch.maximum(x, y),
            "idiv": torch.div(x.long(), d.long(), rounding_mode="trunc").to(x.dtype), "lt": x < y,
            "shr": torch.where(inside, x >> y.clamp(0, info.bits - 1), 0 if dtype == "u8" else x >> (info.bits - 1)),
            "from_f32": torch.nan_to_num(f.double(), nan=0.0).clamp(info.min, info.max).trunc().to(x.dtype),
            "to_f32": x.float(), "to_i64": x.long()}


@pytest.mark.parametrize("dtype", ["i8", "u8", "i16"])
def test_the_interpreter_computes_as_torch_does(dtype: str) -> None:
    args = operands(dtype)
    out = interpret(check(kernel_from_obj(elementwise(dtype, every_operation(dtype)))), args)
    for name, expected in torch_meaning(dtype, args["xs"], args["ys"], args["fs"]).items():
        assert torch.equal(out[name], expected), name
    assert torch.equal(out["bits"], args["xs"])
    assert out["from_f32"][:5].tolist() == ([255, 0, 0, 255, 0] if dtype == "u8" else
                                            [127, -128, 0, 127, -128] if dtype == "i8" else [32767, -32768, 0, 255, -128])


def test_u8_shifts_right_logically_and_divides_unsigned() -> None:
    args = {"xs": torch.tensor([200, 255, 128, 9], dtype=torch.uint8),
            "ys": torch.tensor([1, 4, 7, 200], dtype=torch.uint8), "fs": torch.zeros(4)}
    out = interpret(check(kernel_from_obj(elementwise("u8", every_operation("u8")))), args)
    assert out["shr"].tolist() == [100, 15, 1, 0] and out["lshr"].tolist() == [100, 15, 1, 0]
    assert out["idiv"].tolist() == [200, 63, 18, 0] and out["lt"].tolist() == [False, False, False, True]
    assert out["to_i32"].tolist() == [200, 255, 128, 9] and out["maximum"].tolist() == [200, 255, 128, 200]


@pytest.mark.parametrize("dtype", ["i8", "u8", "i16"])
def test_the_emitter_and_tritons_interpreter_agree(dtype: str, triton_interpreter: TritonInterpreter) -> None:  # noqa: F811
    check_in_triton_interpreter(triton_interpreter, check(kernel_from_obj(elementwise(dtype, every_operation(dtype)))),
                                operands(dtype))


@pytest.mark.parametrize("dtype", ["i8", "u8", "i16"])
def test_the_lowering_picks_the_signedness_and_compiles_for_sm90(dtype: str) -> None:
    checked = check(kernel_from_obj(elementwise(dtype, every_operation(dtype))))
    ttir = lower(checked).ttir
    element = {"i8": "i8", "u8": "i8", "i16": "i16"}[dtype]  # TTIR integers are signless
    assert f"tt.ptr<{element}>" in ttir
    unsigned = ("arith.divui", "arith.remui", "arith.maxui", "arith.minui", "arith.cmpi ult", "arith.uitofp",
                "arith.extui")
    signed = ("arith.divsi", "arith.remsi", "arith.maxsi", "arith.cmpi slt", "arith.sitofp", "arith.extsi",
              "arith.shrsi")
    assert all(op in ttir for op in (unsigned if dtype == "u8" else signed)), ttir
    if dtype == "u8":
        on_bytes = [line for line in ttir.splitlines() if "xi8>" in line]  # not the i32 mask's compare
        assert not any(op in line for line in on_bytes for op in ("arith.divsi", "cmpi slt", "arith.sitofp", "shrsi"))
    assert ".entry" in compile_kernel(checked, "sm_90", in_process=True, cache=False).ptx


def test_the_emitted_triton_compiles_for_sm90(tmp_path: Path) -> None:
    assert ".entry" in compile_for_sm90(check(kernel_from_obj(elementwise("u8", every_operation("u8")))), tmp_path)


def refused(kernel: dict) -> tuple[str, str]:
    with pytest.raises(SemanticError) as raised:
        check(kernel_from_obj(kernel))
    return raised.value.diagnostics[0].code, raised.value.diagnostics[0].path


@pytest.mark.parametrize("expr, code, where", [
    (o("add", lhs="x", rhs=256), "literal_out_of_range", "/rhs"),  # u8 holds 0..255
    (o("sub", lhs="x", rhs=-1), "literal_out_of_range", "/rhs"),
    (o("add", lhs="x", rhs=o("cast", x="y", dtype="i8")), "dtype_mismatch", "/rhs"),  # no silent promotion
    (o("umulhi", lhs="x", rhs="y"), "narrow_int", "/lhs"),
    (o("sum", x="x", axis=0), "narrow_int", "/x"),
    (o("max", x="x", axis=0), "narrow_int", "/x"),
    (o("cumsum", x="x", axis=0), "narrow_int", "/x"),
    (o("load", ptr=o("add", lhs="fs", rhs="x")), "narrow_int", "/ptr/rhs"),
])
def test_the_checker_refuses_what_narrow_integers_do_not_do(expr: dict, code: str, where: str) -> None:
    kernel = elementwise("u8", {"out": (o("cast", x=expr, dtype="u8") if expr["op"] == "load" else expr, "u8")})
    got_code, path = refused(kernel)
    assert got_code == code and path.endswith(where), (got_code, path)


def test_atomics_on_narrow_integers_are_refused() -> None:
    kernel = elementwise("i16", {"out": ("x", "i16")})
    kernel["body"].append(o("atomic_add", ptr=o("add", lhs="out", rhs="offs"), val="x", mask="mask"))
    assert refused(kernel)[0] == "atomic_dtype"


def test_the_prompt_tells_the_model() -> None:
    prompt = system_prompt()
    assert "|i8|u8|i16" in prompt and "narrow_int" in prompt and "(torch wraps i8/u8/i16: clamp first)" in " ".join(prompt.split())


# ---------------------------------------------------------------------------------------------
# The bench tasks: their draws fail the wrong kernels a careless model writes


def golden(task_id: str) -> dict:
    from kernelgen.lang.parse import kernel_to_json
    from kernelgen.task.spec import get_task

    return json.loads(kernel_to_json(get_task(task_id).golden))


def gemm_with(new_acc: dict) -> str:
    """int8_gemm_i32out's golden with its K loop's last let (new_acc, the dot) bound to ``new_acc``."""
    kernel = golden("int8_gemm_i32out")
    (loop,) = [s for s in kernel["body"] if s["op"] == "for"]
    assert loop["body"][-1]["name"] == "new_acc"
    loop["body"][-1]["value"] = new_acc
    return json.dumps(kernel)


def outcome(task_id: str, answer: str, variant: str | None = None) -> str:
    from kernelgen.harness.pipeline import Settings, evaluate_answer
    from kernelgen.task.spec import get_task

    task = get_task(task_id)
    if variant is not None:
        task = next(t for t in task.variant_tasks() if t.variant.name == variant)
    result = evaluate_answer(task, answer, Settings(gpu=False, compile=False, shapes=2))
    return str(result.outcome.value if hasattr(result.outcome, "value") else result.outcome)


def test_shift_xor_fails_a_logical_shift_where_the_dtype_is_signed() -> None:
    assert outcome("shift_xor_int", json.dumps(golden("shift_xor_int"))) == "ok"
    wrong = golden("shift_xor_int")
    wrong["body"][-1]["value"]["rhs"]["op"] = "lshr"
    assert outcome("shift_xor_int", json.dumps(wrong), "i16") == "wrong_result"
    assert outcome("shift_xor_int", json.dumps(wrong), "u8") == "ok"  # u8's shr is logical: the same


def test_shift_xor_fails_an_arithmetic_shift_of_unsigned_bytes() -> None:
    """A u8 kernel that shifts the bytes as i8 (bitcast), bringing in copies of the top bit."""
    kernel = golden("shift_xor_int")
    kernel["dtypes"], kernel["inputs"][0]["dtype"], kernel["outputs"][0]["dtype"] = [], "u8", "u8"
    as_signed = o("bitcast", x=o("shr", lhs=o("bitcast", x="v", dtype="i8"), rhs=3), dtype="u8")
    kernel["body"][-1]["value"]["rhs"] = as_signed
    assert outcome("shift_xor_int", json.dumps(kernel), "u8") == "wrong_result"


@pytest.mark.parametrize("wrong", [
    # int8 read as symmetric (-127..127): -128 is drawn
    o("dot", lhs=o("clamp", x="a_tile", lo=-127, hi=127), rhs="b_tile", dtype="i32", acc="acc"),
    # the dot's sums kept in 16 bits: they wrap
    o("add", lhs="acc", rhs=o("cast", x=o("cast", x=o("dot", lhs="a_tile", rhs="b_tile", dtype="i32"), dtype="i16"),
                              dtype="i32")),
    # through f16 tensor cores: each K step's sums rounded to f16
    o("add", lhs="acc", rhs=o("cast", x=o("dot", lhs=o("cast", x="a_tile", dtype="f16"),
                                           rhs=o("cast", x="b_tile", dtype="f16"), dtype="f16"), dtype="i32")),
])
def test_int8_gemm_fails_kernels_that_lose_bytes_or_sums(wrong: dict) -> None:
    assert outcome("int8_gemm_i32out", gemm_with(wrong)) == "wrong_result"


def test_int8_gemm_takes_the_packed_form_too() -> None:
    """The older int8 dot (i32 operands, their low bytes) computes the same products."""
    packed = o("dot", lhs=o("cast", x="a_tile", dtype="i32"), rhs=o("cast", x="b_tile", dtype="i32"), dtype="i32",
               acc="acc")
    assert outcome("int8_gemm_i32out", gemm_with(packed)) == "ok"


# ---------------------------------------------------------------------------------------------
# The i8 dot: i8 x i8 on the integer tensor cores, i32 sums


def i8_gemm(meta: dict[str, int] | None = None) -> dict:
    kernel = golden("int8_gemm_i32out")
    for m in kernel["meta"]:
        m["value"] = (meta or {}).get(m["name"], m["value"])
    return kernel


def test_the_i8_dot_compiles_to_integer_tensor_core_instructions() -> None:
    checked = check(kernel_from_obj(i8_gemm()))
    assert "tt.dot" in lower(checked).ttir and "tensor<128x64xi8>" in lower(checked).ttir
    ptx = compile_kernel(checked, "sm_90", in_process=True, cache=False).ptx
    assert ".s32.s8.s8" in ptx and "cvt.rn.f32.s32" not in ptx


def test_the_i8_dot_in_the_interpreter_and_in_tritons(triton_interpreter: TritonInterpreter) -> None:  # noqa: F811
    checked = check(kernel_from_obj(i8_gemm({"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 32})))
    a, b = full_range("i8", 37 * 70, 3).reshape(37, 70), full_range("i8", 70 * 21, 4).reshape(70, 21)
    assert torch.equal(interpret(checked, {"a": a, "b": b})["out"], (a.long() @ b.long()).int())
    check_in_triton_interpreter(triton_interpreter, checked, {"a": a, "b": b})


@pytest.mark.parametrize("lhs, rhs", [
    (o("cast", x="a_tile", dtype="u8"), o("cast", x="b_tile", dtype="u8")),  # no unsigned int8 dot
    ("a_tile", o("cast", x="b_tile", dtype="i32")),  # one form or the other
    (o("cast", x="a_tile", dtype="i16"), o("cast", x="b_tile", dtype="i16")),
])
def test_the_i8_dot_takes_two_i8_operands(lhs: Any, rhs: Any) -> None:
    kernel = json.loads(gemm_with(o("dot", lhs=lhs, rhs=rhs, dtype="i32", acc="acc")))
    code, path = refused(kernel)
    assert code == "dot_dtype" and path.endswith("/body/5/value"), (code, path)


@pytest.mark.parametrize("x, y, dtype", [
    (torch.tensor([200, 3], dtype=torch.uint8), torch.tensor([-100, 5], dtype=torch.int8), torch.int16),
    (torch.tensor([200, 3], dtype=torch.uint8), 7, torch.uint8),  # an integer number is weak
    (torch.tensor([-3, 100], dtype=torch.int8), torch.tensor([30000, 1], dtype=torch.int16), torch.int16),
])
def test_a_dtype_variable_binds_narrow_integers_as_pytorch_promotes(x: Any, y: Any, dtype: torch.dtype) -> None:
    from test_wrapper import generic_add

    from kernelgen.host.wrapper import call_kernel

    result = call_kernel(kernel_from_obj(generic_add(["u8", "i8", "i16"])), (x, y), {}, interpret)
    assert torch.result_type(x, y) == dtype
    expected = x.to(dtype) + torch.as_tensor(y).to(dtype) * 2  # the kernel's inputs are converted to T first
    assert result.dtype == dtype and torch.equal(result, expected)
