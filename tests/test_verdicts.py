"""Verdicts against the new power (issue 31): the interpreter must not hide program order,
rounding or unwritten memory, and the checker and compiler must not crash on what they
should refuse or compile.

One section per mechanism; each builds small kernels and asks the interpreter, the checker or
the comparison directly (fast). The red-team catalogue (tests/redteam/, run by
tests/test_redteam.py) holds the full-size wrong kernels and their correct controls.
"""

from __future__ import annotations

from typing import Any

import pytest

from kernelgen.check.checker import check
from kernelgen.errors import SemanticError
from kernelgen.lang.parse import kernel_from_obj


def op(kind: str, /, **fields: Any) -> dict[str, Any]:
    return {"op": kind, **fields}


def let(name: str, value: Any) -> dict[str, Any]:
    return op("let", name=name, value=value)


def codes(obj: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(SemanticError) as info:
        check(kernel_from_obj(obj))
    return [(d.path, d.code) for d in info.value.diagnostics]


# -- the checker: fp8 is storage only in block operations too --------------------------------


def fp8_block_kernel(expr: dict[str, Any]) -> dict[str, Any]:
    """Loads a [16, 32] e4m3 block ``q``, applies ``expr`` to it and stores the result as f32."""
    offs = op("add", lhs=op("mul", lhs=op("expand_dims", x=op("arange", size=16), axis=1), rhs=32),
              rhs=op("expand_dims", x=op("arange", size=32), axis=0))
    return {"name": "fp8_block", "inputs": [{"name": "x", "dtype": "f8e4m3", "shape": [16, 32]}],
            "outputs": [{"name": "y", "dtype": "f32", "shape": [16, 32]}],
            "params": [{"name": "x"}, {"name": "y"}], "grid": [1],
            "body": [let("offs", offs), let("q", op("load", ptr=op("add", lhs="x", rhs="offs"))),
                     op("store", ptr=op("add", lhs="y", rhs="offs"), value=op("cast", x=expr, dtype="f32"))]}


@pytest.mark.parametrize("expr", [
    op("sort", x="q"), op("argsort", x="q"), op("topk", x="q", k=32), op("cummax", x="q", axis=1),
    op("cummin", x="q", axis=0), op("gather", src="q", index=op("broadcast", x=op("arange", size=32), shape=[16, 32]),
                                    axis=1)], ids=lambda e: e["op"])
def test_block_operations_refuse_fp8_values(expr: dict[str, Any]) -> None:
    found = codes(fp8_block_kernel(expr))
    assert found[0][1] == "fp8_storage", found
    assert found[0][0].endswith("/x") or found[0][0].endswith("/src"), found


def test_block_operations_take_fp8_cast_first() -> None:
    check(kernel_from_obj(fp8_block_kernel(op("sort", x=op("cast", x="q", dtype="f32")))))


# -- the checker: an unnamed exchange is a store ---------------------------------------------


def xchg_program(named: bool) -> dict[str, Any]:
    """Launch 0 writes scratch ``s`` by atomic_xchg (its old values bound or not); launch 1
    copies it to the output."""
    offs = op("add", lhs=op("mul", lhs=op("program_id"), rhs=16), rhs=op("arange", size=16))
    ok = op("lt", lhs="offs", rhs="N")
    xchg = op("atomic_xchg", ptr=op("add", lhs="s", rhs="offs"),
              val=op("load", ptr=op("add", lhs="x", rhs="offs"), mask=ok), mask=ok, **({"name": "old"} if named else {}))
    return {"name": "xchg_copy", "inputs": [{"name": "x", "dtype": "f32", "shape": ["N"]}],
            "outputs": [{"name": "y", "dtype": "f32", "shape": ["N"]}],
            "scratch": [{"name": "s", "dtype": "f32", "shape": ["N"]}],
            "launches": [
                {"name": "fill", "params": [{"name": "x"}, {"name": "s"}, {"name": "N"}],
                 "grid": [op("cdiv", lhs="N", rhs=16)], "body": [let("offs", offs), xchg]},
                {"name": "copy", "params": [{"name": "s"}, {"name": "y"}, {"name": "N"}],
                 "grid": [op("cdiv", lhs="N", rhs=16)],
                 "body": [let("offs", offs), op("store", ptr=op("add", lhs="y", rhs="offs"),
                                                value=op("load", ptr=op("add", lhs="s", rhs="offs"), mask=ok),
                                                mask=ok)]}]}


def test_an_unnamed_exchange_is_a_store_and_a_named_one_reads() -> None:
    check(kernel_from_obj(xchg_program(named=False)))
    assert codes(xchg_program(named=True)) == [("/launches/0", "read_before_write")]


# -- the host: outputs and scratch within a stated memory budget ------------------------------


def sized_output_kernel(extent: Any) -> dict[str, Any]:
    """Copies x ([N] f32) into the first N elements of an output of ``extent`` elements."""
    offs = op("add", lhs=op("mul", lhs=op("program_id"), rhs=16), rhs=op("arange", size=16))
    ok = op("lt", lhs="offs", rhs="N")
    return {"name": "sized", "inputs": [{"name": "x", "dtype": "f32", "shape": ["N"]}],
            "outputs": [{"name": "y", "dtype": "f32", "shape": [extent]}],
            "params": [{"name": "x"}, {"name": "y"}, {"name": "N"}], "grid": [op("cdiv", lhs="N", rhs=16)],
            "body": [let("offs", offs), op("store", ptr=op("add", lhs="y", rhs="offs"),
                                           value=op("load", ptr=op("add", lhs="x", rhs="offs"), mask=ok), mask=ok)]}


def test_an_output_past_the_memory_budget_is_refused_before_allocation() -> None:
    import torch

    from kernelgen.errors import HostError
    from kernelgen.host.plan import MEMORY_BUDGET, plan_launch
    from kernelgen.lang.rules import RULES

    huge = check(kernel_from_obj(sized_output_kernel(op("mul", lhs="N", rhs=10**12))))
    with pytest.raises(HostError) as info:
        plan_launch(huge, [torch.ones(3)])
    assert info.value.code == "too_large" and "2 GiB" in info.value.diagnostics[0].message
    assert info.value.path == "/outputs/0/shape"
    # Just under the CPU budget passes on the CPU; meta tensors (a GPU call's shapes) get the GPU's.
    limit = MEMORY_BUDGET["cpu"] // 4
    plan_launch(check(kernel_from_obj(sized_output_kernel(limit))), [torch.ones(3)])
    with pytest.raises(HostError):
        plan_launch(check(kernel_from_obj(sized_output_kernel(limit + 1))), [torch.ones(3)])
    plan_launch(check(kernel_from_obj(sized_output_kernel(limit + 1))), [torch.ones(3, device="meta")])
    assert "2 GiB" in RULES["too_large"] and "32 GiB" in RULES["too_large"]
    assert MEMORY_BUDGET == {"cpu": 2 << 30, "gpu": 32 << 30}


# -- the comparison: fp8 outputs in representable steps --------------------------------------


def test_fp8_outputs_compare_in_steps_near_ties_only() -> None:
    """Rounded to nearest even passes; truncated (toward zero) or rounded away is one step off on
    most elements and fails, although a tolerance of 0.125 (one step) passed them; two steps off
    anywhere fails; one step on a few elements (ties rounded another way) passes."""
    import torch

    from kernelgen.task.compare import FP8_ONE_STEP_SHARE, compare_tensors, fp8_steps

    values = torch.randn(4096, generator=torch.Generator().manual_seed(7), dtype=torch.float64) * 40
    for dtype, torch_dtype, mantissa in (("f8e4m3", torch.float8_e4m3fn, 3), ("f8e5m2", torch.float8_e5m2, 2)):
        want = values.to(torch_dtype)
        bits = values.float().view(torch.int32)
        truncated = (bits & ~((1 << (23 - mantissa)) - 1)).view(torch.float32).to(torch_dtype)
        assert compare_tensors(want.clone(), want, dtype).ok
        truncation = compare_tensors(truncated, want, dtype)
        assert not truncation.ok and truncation.one_step > 1000 and int(fp8_steps(truncated, want).max()) == 1
        assert torch.allclose(truncated.double(), want.double(), rtol=0.25, atol=2.0 ** -6)  # what passed before
        nudged = want.clone().view(torch.uint8)
        few = int(4096 * FP8_ONE_STEP_SHARE)
        nudged[:few] += 1  # one step further from zero (no value here is the largest finite)
        assert compare_tensors(nudged.view(torch_dtype), want, dtype).ok
        nudged[few:few + 1] += 1
        nudged[0] += 1  # two steps off: fails whatever the count
        far = compare_tensors(nudged.view(torch_dtype), want, dtype)
        assert not far.ok and far.first_mismatch == (0,) and "one step" in str(far)
    nan = torch.tensor([float("nan"), 1.0, -0.0]).to(torch.float8_e4m3fn)
    same = torch.tensor([float("nan"), 1.0, 0.0]).to(torch.float8_e4m3fn)
    assert fp8_steps(nan, same).tolist() == [0.0, 0.0, 0.0]
    assert fp8_steps(nan, torch.tensor([0.0, 1.0, 0.0]).to(torch.float8_e4m3fn)).tolist()[0] == float("inf")
