"""``join`` (tl.join): two values stacked on a new last axis of 2, the deterministic way to
merge blocks (concatenation is join, trans, reshape; Triton's tl.cat may reorder and is not
in the language). Every stage has it: checker, interpreter, lowering, emitter, prompt; merging
two top-k lists (what a model needed a where+reshape trick for) is join then topk."""

from __future__ import annotations

import pytest
import torch
from test_emit import TritonInterpreter, check_in_triton_interpreter, o, triton_interpreter  # noqa: F401
from test_round_finfo import elementwise

from kernelgen.check.checker import check
from kernelgen.errors import SemanticError
from kernelgen.gpu.compile import compile_kernel
from kernelgen.host.plan import torch_dtype
from kernelgen.interp.execute import interpret
from kernelgen.lang.parse import kernel_from_obj
from kernelgen.model.prompt import system_prompt


def flat(value: dict, width: int, dtype: str = "f32", x_dtype: str = "f32") -> dict:
    """out[:width] = value (a [width] block) of x[:32] loaded as ``v``."""
    kernel = elementwise(dtype, value, x_dtype=x_dtype)
    kernel["outputs"][0]["shape"] = [width]
    kernel["body"][-1]["ptr"]["rhs"] = o("arange", size=width)
    kernel["body"][-1]["mask"] = o("lt", lhs=o("arange", size=width), rhs=width)
    return kernel


def interleaved(lhs: object, rhs: object) -> dict:
    return o("reshape", x=o("join", lhs=lhs, rhs=rhs), shape=[64])


def concatenated(lhs: object, rhs: object) -> dict:
    return o("reshape", x=o("trans", x=o("join", lhs=lhs, rhs=rhs), dims=[1, 0]), shape=[64])


def x_of(dtype: str) -> torch.Tensor:
    values = torch.randn(32, generator=torch.Generator().manual_seed(1)) * 100
    return values.to(torch_dtype(dtype)) if dtype != "bool" else values > 0


CASES = {
    "interleave_f32": (interleaved("v", o("neg", x="v")), 64, "f32",
                       lambda x: torch.stack([x, -x], -1).reshape(64)),
    "concatenate_i64": (concatenated("v", o("add", lhs="v", rhs=1)), 64, "i64", lambda x: torch.cat([x, x + 1])),
    "literal_and_block_f16": (interleaved(1.5, "v"), 64, "f16",
                              lambda x: torch.stack([torch.full_like(x, 1.5), x], -1).reshape(64)),
    "bools": (concatenated("v", o("not", x="v")), 64, "bool", lambda x: torch.cat([x, ~x])),
    "two_scalars": (o("join", lhs=o("max", x="v", axis=0), rhs=o("min", x="v", axis=0)), 2, "f32",
                    lambda x: torch.stack([x.max(), x.min()])),
}


@pytest.mark.parametrize("name", CASES)
def test_join_in_every_stage(name: str, triton_interpreter: TritonInterpreter) -> None:
    value, width, dtype, want = CASES[name]
    checked = check(kernel_from_obj(flat(value, width, dtype, dtype)))
    x = x_of(dtype)
    assert torch.equal(interpret(checked, {"x": x})["out"], want(x))
    check_in_triton_interpreter(triton_interpreter, checked, {"x": x})
    assert "tt.join" in compile_kernel(checked, "sm_90", in_process=True, cache=False).ttir


def test_two_top_k_lists_merge_by_join_and_topk(triton_interpreter: TritonInterpreter) -> None:
    """The largest 8 of two lists of 8 (the halves of x): join them, flatten, topk."""
    half = o("arange", size=8)
    first = o("load", ptr=o("add", lhs="x", rhs=half), mask=o("lt", lhs=half, rhs="N"))
    second = o("load", ptr=o("add", lhs="x", rhs=o("add", lhs=half, rhs=8)), mask=o("lt", lhs=o("add", lhs=half, rhs=8),
                                                                                     rhs="N"))
    merged = o("topk", x=o("reshape", x=o("join", lhs=first, rhs=second), shape=[16]), k=8)
    kernel = flat(merged, 8)
    checked = check(kernel_from_obj(kernel))
    x = x_of("f32")[:16]
    assert torch.equal(interpret(checked, {"x": x})["out"], torch.topk(x, 8).values)
    check_in_triton_interpreter(triton_interpreter, checked, {"x": x})


@pytest.mark.parametrize(("lhs", "rhs", "code", "path"), [
    (o("arange", size=16), o("arange", size=32), "shape_mismatch", "/body/1/value"),
    ("v", o("cast", x="v", dtype="f16"), "dtype_mismatch", "/body/1/value/rhs"),
    ("x", "v", "bad_operand", "/body/1/value/lhs")])
def test_join_refuses_what_does_not_stack(lhs: object, rhs: object, code: str, path: str) -> None:
    with pytest.raises(SemanticError) as raised:
        check(kernel_from_obj(flat(o("join", lhs=lhs, rhs=rhs), 64)))
    assert (raised.value.diagnostics[0].code, raised.value.diagnostics[0].path) == (code, path)


def test_the_manual_states_join_and_how_to_concatenate() -> None:
    assert "Join {\"op\":\"join\"" in system_prompt(()) and "Concatenate along the last axis" in system_prompt(())
