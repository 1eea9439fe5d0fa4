"""The room a sum of products accumulated in f32 gets (kernelgen.task.products): an accumulation
that truncates as the H200's tensor cores do passes where the task's atol alone failed it, and
results that are wrong by a term, or rounded through f16 or bf16, still fail on the same draw."""

from __future__ import annotations

import math

import pytest
import torch
from pydantic import ValidationError

from kernelgen.task.products import PRODUCTS_FACTOR
from kernelgen.task.spec import Task, get_task
from kernelgen.task.verify import compare_outputs, run_reference

TASK = get_task("matmul_bf16_f32out")
SIZES = {"M": 8, "N": 64, "K": 8192}


def inputs(seed: int = 0) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return {"a": torch.randn(8, 8192, generator=generator).bfloat16(),
            "b": torch.randn(8192, 64, generator=generator).bfloat16()}


def truncating_dot(a: torch.Tensor, b: torch.Tensor, step: int = 16, bits: int = 21) -> torch.Tensor:
    """a @ b as a tensor core of this model adds: each step sums the accumulator and ``step``
    exact products, keeps ``bits`` bits below the largest of them and truncates toward zero."""
    products = a.double()[:, :, None] * b.double()[None, :, :]
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float64)
    for k in range(0, a.shape[1], step):
        chunk = products[:, k:k + step, :]
        largest = torch.maximum(acc.abs(), chunk.abs().amax(dim=1))
        unit = torch.exp2(torch.floor(torch.log2(largest.clamp_min(1e-300))) - bits)
        total = acc + chunk.sum(dim=1)
        acc = torch.trunc(total / unit) * unit
    return acc.float()


def problems(out: torch.Tensor, drawn: dict[str, torch.Tensor]) -> list:
    return compare_outputs(TASK, {"c": out}, run_reference(TASK, drawn), drawn, SIZES)


def test_an_accumulation_that_truncates_passes_where_atol_alone_failed_it() -> None:
    drawn = inputs()
    out = truncating_dot(drawn["a"], drawn["b"])
    want = run_reference(TASK, drawn)["c"]
    assert float((out - want).abs().max()) > 2e-3  # past the task's atol of 1e-3 (rtol is no help near zero)
    plain = TASK.model_copy(update={"tolerance": TASK.tolerance.model_copy(update={"products": None})})
    assert compare_outputs(plain, {"c": out}, run_reference(plain, drawn), drawn, SIZES)
    assert problems(out, drawn) == []


def test_a_dropped_term_and_narrow_results_still_fail() -> None:
    drawn = inputs(1)
    want = run_reference(TASK, drawn)["c"]
    dropped = (drawn["a"][:, 1:].double() @ drawn["b"][1:].double()).float()
    for wrong in (dropped, want.half().float(), want.bfloat16().float()):
        found = problems(wrong, drawn)
        assert [d.code for d in found] == ["mismatch"] and "products' magnitudes" in found[0].message


def test_the_room_is_counted_from_the_terms_magnitudes() -> None:
    """Each element's room is PRODUCTS_FACTOR sqrt(K) f32 units of sum |a||b|: a result off by
    just under it passes, just over it fails."""
    drawn = inputs(2)
    want = run_reference(TASK, drawn)["c"].double()
    magnitudes = drawn["a"].double().abs() @ drawn["b"].double().abs()
    room = PRODUCTS_FACTOR * math.sqrt(SIZES["K"]) * 2.0 ** -24 * magnitudes
    assert problems((want + 0.9 * room).float(), drawn) == []
    assert problems((want + 1.2 * room).float(), drawn)


def test_a_task_naming_no_size_is_refused() -> None:
    data = TASK.model_dump(exclude={"id", "tier"}, exclude_none=True)
    data["tolerance"]["products"] = "L"
    with pytest.raises(ValidationError, match="products names 'L', which is not a size"):
        Task.model_validate({**data, "id": "x", "tier": "hard"})
