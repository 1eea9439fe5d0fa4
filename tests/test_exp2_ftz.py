"""exp2_ftz: exp2 with results below 2**-126 flushed to zero, one ex2.approx.ftz.f32 where exp2
(denormal results kept) is four instructions; every stage has it."""

from __future__ import annotations

import math

import pytest
import torch
from test_emit import f32, lanes, let, o

from kernelgen.check.checker import check
from kernelgen.gpu.compile import compile_kernel
from kernelgen.emit.module import emit_triton
from kernelgen.errors import SemanticError
from kernelgen.interp.execute import interpret
from kernelgen.lang.parse import kernel_from_obj


def exp2_kernel(op: str, cast: str | None = None) -> dict:
    x = o("load", ptr=o("add", lhs="x", rhs="offs"), mask="mask")
    if cast is not None:
        x = o("cast", x=x, dtype=cast)
    return {"name": "pow2", "inputs": [f32("x", ["N"])], "outputs": [f32("out", ["N"])],
            "params": [{"name": "x"}, {"name": "out"}, {"name": "N"}],
            "meta": [{"name": "BLOCK", "value": 256}], "grid": [o("cdiv", lhs="N", rhs="BLOCK")],
            "body": [let("offs", lanes("BLOCK")), let("mask", o("lt", lhs="offs", rhs="N")),
                     o("store", ptr=o("add", lhs="out", rhs="offs"), mask="mask", value=o(op, x=x))]}


def test_the_interpreter_flushes_results_below_the_smallest_normal():
    x = torch.tensor([-149.0, -130.0, -126.5, -126.0, -1.0, 0.0, 3.5, 200.0, float("nan"), float("-inf")])
    flushed = interpret(check(kernel_from_obj(exp2_kernel("exp2_ftz"))), {"x": x})["out"]
    kept = interpret(check(kernel_from_obj(exp2_kernel("exp2"))), {"x": x})["out"]
    assert kept[0] > 0 and kept[1] > 0  # exp2 keeps denormal results
    assert flushed[:3].tolist() == [0.0, 0.0, 0.0]
    assert torch.equal(flushed[3:8], kept[3:8]) and flushed[3] == 2.0**-126
    assert math.isnan(flushed[8]) and flushed[9] == 0.0


@pytest.mark.parametrize("dtype", ["f64", "f16", "bf16"])
def test_exp2_ftz_takes_f32_only(dtype):
    with pytest.raises(SemanticError) as raised:
        check(kernel_from_obj(exp2_kernel("exp2_ftz", cast=dtype)))
    [diagnostic] = raised.value.diagnostics
    assert diagnostic.code == "needs_f32" and diagnostic.path == "/body/2/value/x"


def test_it_lowers_to_the_one_flushing_instruction():
    ptx = {op: compile_kernel(check(kernel_from_obj(exp2_kernel(op))), "sm_90", in_process=True, cache=False).ptx
           for op in ("exp2", "exp2_ftz")}
    assert "ex2.approx.ftz.f32" in ptx["exp2_ftz"]
    assert "ex2.approx.f32" in ptx["exp2"] and "ex2.approx.ftz.f32" not in ptx["exp2"]


def test_the_emitter_writes_it_as_plain_triton():
    source = emit_triton(check(kernel_from_obj(exp2_kernel("exp2_ftz"))))
    assert "tl.where((" in source and "< -126.0, 0.0, tl.exp2(" in source
