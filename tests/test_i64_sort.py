"""sort and topk of i64 keys (what a model merging top-k lists of i64 ids asked for): every
stage takes them; argsort/argtopk refuse them, as the manual says (the index is packed beside a
32-bit key in one 64-bit word)."""

from __future__ import annotations

import pytest
import torch
from test_emit import TritonInterpreter, check_in_triton_interpreter, o, triton_interpreter  # noqa: F401
from test_round_finfo import elementwise

from kernelgen.check.checker import check
from kernelgen.errors import SemanticError
from kernelgen.gpu.compile import compile_kernel
from kernelgen.interp.execute import interpret
from kernelgen.lang.parse import kernel_from_obj
from kernelgen.model.prompt import system_prompt

KEYS = torch.cat([torch.tensor([2**63 - 1, -2**63, 5, 5, -(2**40), 2**40 + 1]),
                  torch.randint(-2**62, 2**62, (26,), generator=torch.Generator().manual_seed(3))])


@pytest.mark.parametrize("op", ["sort", "topk"])
def test_i64_keys_sort_in_every_stage(op: str, triton_interpreter: TritonInterpreter) -> None:
    value = o("sort", x="v", descending=True) if op == "sort" else o("topk", x="v", k=8)
    width = 32 if op == "sort" else 8
    kernel = elementwise("i64", value, x_dtype="i64")
    kernel["outputs"][0]["shape"] = [width]
    kernel["body"][-1]["ptr"]["rhs"] = o("arange", size=width)
    kernel["body"][-1]["mask"] = o("lt", lhs=o("arange", size=width), rhs=width)
    checked = check(kernel_from_obj(kernel))
    got = interpret(checked, {"x": KEYS})["out"]
    assert torch.equal(got, torch.sort(KEYS, descending=True).values[:width])
    check_in_triton_interpreter(triton_interpreter, checked, {"x": KEYS})
    compile_kernel(checked, "sm_90", in_process=True, cache=False)


@pytest.mark.parametrize("op", ["argsort", "argtopk"])
def test_i64_argsort_is_refused_with_the_reason(op: str) -> None:
    value = o(op, x="v") if op == "argsort" else o(op, x="v", k=8)
    with pytest.raises(SemanticError) as raised:
        check(kernel_from_obj(elementwise("i32", value, x_dtype="i64")))
    [diagnostic] = raised.value.diagnostics
    assert (diagnostic.code, diagnostic.path) == ("bad_operand", "/body/1/value/x")
    assert "i64 sorts; argsort/argtopk take no i64/f64" in system_prompt(())
