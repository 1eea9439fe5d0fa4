"""The int8 dot: ``dot`` with ``dtype`` i32 multiplies the low bytes of i32 operands on the
integer tensor cores (int8 data packed four to an i32 word; i8 tensors take the i8 dot of
tests/test_narrow_ints.py). Every stage has it: checker, interpreter, lowering, emitter, prompt."""

from __future__ import annotations

import pytest
import torch
from test_emit import TritonInterpreter, check_in_triton_interpreter, let, o, triton_interpreter  # noqa: F401

from kernelgen.check.checker import check
from kernelgen.gpu.compile import compile_kernel
from kernelgen.emit.module import emit_triton
from kernelgen.errors import SemanticError
from kernelgen.interp.execute import interpret
from kernelgen.lang.parse import kernel_from_obj
from kernelgen.model.prompt import system_prompt


def packed_gemm(k_block: int = 32, operand: str = "i32", acc: dict | None = None, dtype: str = "i32",
                init: int = 0) -> dict:
    """out[m, n] = sum over bytes of A's and W's words (both [rows, KW], int8 x4 per word): one
    int8 dot per byte lane, the lane shifted down (the dot reads the low byte)."""
    rows = o("add", lhs=o("mul", lhs=o("program_id", axis=0), rhs="BM"), rhs=o("arange", size="BM"))
    cols = o("add", lhs=o("mul", lhs=o("program_id", axis=1), rhs="BN"), rhs=o("arange", size="BN"))
    kws = o("add", lhs="k0", rhs=o("arange", size="BK"))

    def tile(ptr: str, index: str, size: str) -> dict:
        offsets = o("add", lhs=o("mul", lhs=o("expand_dims", x=index, axis=1), rhs="KW"),
                    rhs=o("expand_dims", x="kws", axis=0))
        mask = o("and", lhs=o("expand_dims", x=o("lt", lhs=index, rhs=size), axis=1),
                 rhs=o("expand_dims", x=o("lt", lhs="kws", rhs="KW"), axis=0))
        return o("load", ptr=o("add", lhs=ptr, rhs=offsets), mask=mask)

    step: dict = {"op": "dot", "lhs": o("shr", lhs="a_words", rhs="shift"),
                  "rhs": o("trans", x=o("shr", lhs="w_words", rhs="shift")), "dtype": dtype}
    if operand != "i32":
        step["lhs"] = o("cast", x=step["lhs"], dtype=operand)
    body_inner = [let("shift", o("mul", lhs="byte", rhs=8))]
    lane_next = o("add", lhs="lanes_acc", rhs=step) if acc is None else {**step, "acc": "lanes_acc"}
    return {
        "name": "w8a8", "inputs": [{"name": "a", "dtype": "i32", "shape": ["M", "KW"]},
                                   {"name": "w", "dtype": "i32", "shape": ["N", "KW"]}],
        "outputs": [{"name": "out", "dtype": "i32", "shape": ["M", "N"]}],
        "params": [{"name": p} for p in ("a", "w", "out", "M", "N", "KW")],
        "meta": [{"name": "BM", "value": 32}, {"name": "BN", "value": 32}, {"name": "BK", "value": k_block}],
        "grid": [o("cdiv", lhs="M", rhs="BM"), o("cdiv", lhs="N", rhs="BN")],
        "body": [
            let("rows", rows), let("cols", cols),
            o("for", var="k0", stop="KW", step="BK",
              carry=[{"name": "acc", "init": o("full", shape=["BM", "BN"], value=init, dtype="i32"), "next": "lanes_acc"}],
              body=[let("kws", kws), let("a_words", tile("a", "rows", "M")), let("w_words", tile("w", "cols", "N")),
                    o("for", var="byte", stop=4, carry=[{"name": "lanes_acc", "init": "acc", "next": lane_next}],
                      body=body_inner)]),
            o("store", ptr=o("add", lhs="out", rhs=o("add", lhs=o("mul", lhs=o("expand_dims", x="rows", axis=1), rhs="N"),
                                                      rhs=o("expand_dims", x="cols", axis=0))),
              value="acc", mask=o("and", lhs=o("expand_dims", x=o("lt", lhs="rows", rhs="M"), axis=1),
                                  rhs=o("expand_dims", x=o("lt", lhs="cols", rhs="N"), axis=0)))]}


def reference(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return (a.view(torch.int8).long() @ w.view(torch.int8).long().t()).to(torch.int32)


def words(rows: int, kw: int, seed: int) -> torch.Tensor:
    return torch.randint(-2**31, 2**31 - 1, (rows, kw), generator=torch.Generator().manual_seed(seed), dtype=torch.int32)


@pytest.mark.parametrize("fused", [False, True])
def test_the_interpreter_multiplies_the_low_bytes(fused: bool) -> None:
    a, w = words(37, 45, 1), words(70, 45, 2)
    checked = check(kernel_from_obj(packed_gemm(acc={} if fused else None)))
    assert torch.equal(interpret(checked, {"a": a, "w": w})["out"], reference(a, w))


def test_sums_beyond_i32_saturate_as_the_tensor_cores_do() -> None:
    """The accumulator a dot is given saturates (mma ``.satfinite``); a separate add wraps."""
    a = torch.full((1, 64), -0x7F7F7F80, dtype=torch.int32)  # bytes 0x80: -128 each
    assert a.view(torch.int8).unique().tolist() == [-128]
    start = 2**31 - 100_000  # plus 128 * 128 per byte: past 2**31 in the first dot
    fused = check(kernel_from_obj(packed_gemm(acc={}, init=start)))
    assert interpret(fused, {"a": a, "w": a})["out"].item() == 2**31 - 1
    added = check(kernel_from_obj(packed_gemm(init=start)))
    assert interpret(added, {"a": a, "w": a})["out"].item() == start + 128 * 128 * 256 - 2**32


@pytest.mark.parametrize("change, path, code", [
    ({"operand": "f32"}, "/body/2/body/3/carry/0/next/rhs", "dot_dtype"),
    ({"operand": "i64"}, "/body/2/body/3/carry/0/next/rhs", "dot_dtype"),
    ({"k_block": 16}, "/body/2/body/3/carry/0/next/rhs", "dot_shape"),
    ({"dtype": "f32"}, "/body/2/body/3/carry/0/next/rhs", "dot_dtype"),
])
def test_the_checker_says_what_and_where(change: dict, path: str, code: str) -> None:
    with pytest.raises(SemanticError) as raised:
        check(kernel_from_obj(packed_gemm(**change)))
    [diagnostic] = raised.value.diagnostics
    assert (diagnostic.code, diagnostic.path) == (code, path), diagnostic


def test_an_accumulator_of_another_dtype_is_refused_at_acc() -> None:
    kernel = packed_gemm(acc={})
    kernel["body"][2]["carry"][0]["init"] = o("full", shape=["BM", "BN"], value=0.0, dtype="f32")
    with pytest.raises(SemanticError) as raised:
        check(kernel_from_obj(kernel))
    assert any(d.path.endswith("/acc") and d.code in ("dot_dtype", "carry_type") for d in raised.value.diagnostics)


def test_it_compiles_to_integer_tensor_core_instructions() -> None:
    kernel = packed_gemm(k_block=64)
    kernel["meta"][:2] = [{"name": "BM", "value": 128}, {"name": "BN", "value": 128}]
    ptx = compile_kernel(check(kernel_from_obj(kernel)), "sm_90", in_process=True, cache=False).ptx
    assert ".s32.s8.s8" in ptx  # wgmma (or mma) with int8 operands and int32 sums
    assert "cvt.rn.f32.s32" not in ptx and "mma.sync.aligned.m16n8k16.row.col.f32.f16" not in ptx


def test_the_emitter_and_tritons_interpreter_agree(triton_interpreter: TritonInterpreter) -> None:  # noqa: F811
    checked = check(kernel_from_obj(packed_gemm(acc={})))
    assert ".to(tl.int8)" in emit_triton(checked) and "out_dtype=tl.int32" in emit_triton(checked)
    check_in_triton_interpreter(triton_interpreter, checked, {"a": words(20, 40, 3), "w": words(17, 40, 4)})


def test_the_prompt_tells_the_model() -> None:
    assert "low bytes" in system_prompt()
