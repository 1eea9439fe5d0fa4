"""The room a sum of products accumulated in f32 gets (kernelgen.task.products): an accumulation
that truncates as the H200's tensor cores do passes where the task's atol alone failed it, and
results that are wrong by a term, rounded through f16 or bf16, or wrong only in an addend a long
K hides, still fail on the same draw."""

from __future__ import annotations

import math

import pytest
import torch
from pydantic import ValidationError

from kernelgen.task.products import PRODUCTS_FACTOR, running_sums
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
        assert [d.code for d in found] == ["mismatch"] and "running sum" in found[0].message


def exact_running_sums(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """sum over j of |P_16j| + |P_K|, P_k the exact sum of the first k products, from whichever
    end of K gives more: the definition running_sums samples."""
    products = a.double()[:, :, None] * b.double()[None, :, :]
    sums = []
    for ordered in (products, products.flip(1)):
        partial = ordered.cumsum(1)[:, 15::16, :]
        sums.append(partial.abs().sum(1) + partial[:, -1].abs())
    return torch.maximum(*sums)


def test_the_room_follows_the_running_sums() -> None:
    """Each element's room is PRODUCTS_FACTOR f32 units of the running sums (sampled along K
    within a few percent of their definition, on cancelling sums and on drifting ones): a result
    off by just under it passes, just over it fails."""
    drawn = inputs(2)
    for a in (drawn["a"], drawn["a"].abs()):
        sampled = running_sums(TASK, {"a": a, "b": drawn["b"]}, SIZES["K"])["c"]
        assert float((sampled / exact_running_sums(a, drawn["b"]) - 1).abs().max()) < 0.1
    want = run_reference(TASK, drawn)["c"].double()
    room = PRODUCTS_FACTOR * 2.0 ** -24 * running_sums(TASK, drawn, SIZES["K"])["c"]
    assert problems((want + 0.9 * room).float(), drawn) == []
    assert problems((want + 1.2 * room).float(), drawn)


def test_an_addend_read_narrow_fails_at_long_k() -> None:
    """addmm's c read as bf16 (half its bytes), the products exact, on elements where beta * c
    cancels alpha * a @ b: off by under sqrt(K) f32 units of the terms' magnitudes at K = 8192
    (the room's earlier form admitted it, round 14), far outside the running sums' room."""
    task = get_task("addmm_f16")
    sizes = {"M": 16, "N": 64, "K": 8192}
    generator = torch.Generator().manual_seed(4)
    a, b = torch.randn(16, 8192, generator=generator).half(), torch.randn(8192, 64, generator=generator).half()
    exact = a.double() @ b.double()
    # c cancels a @ b where that is small (beta = -0.5, alpha = 0.75); elsewhere rtol takes the error
    c = torch.where(exact.abs() < 6, 1.5 * exact, torch.randn(16, 64, generator=generator).double()).float()
    drawn = {"c": c, "a": a, "b": b, "beta": -0.5, "alpha": 0.75}
    narrow = (drawn["beta"] * c.bfloat16().double() + drawn["alpha"] * exact).float()
    magnitudes = 0.5 * c.double().abs() + 0.75 * (a.double().abs() @ b.double().abs())
    error = (narrow.double() - run_reference(task, drawn)["out"].double()).abs()
    assert bool((error < math.sqrt(sizes["K"]) * 2.0 ** -24 * magnitudes).all())
    found = compare_outputs(task, {"out": narrow}, run_reference(task, drawn), drawn, sizes)
    assert [d.code for d in found] == ["mismatch"]


def test_a_task_naming_no_size_is_refused() -> None:
    data = TASK.model_dump(exclude={"id", "tier"}, exclude_none=True)
    data["tolerance"]["products"] = "L"
    with pytest.raises(ValidationError, match="products names 'L', which is not a size"):
        Task.model_validate({**data, "id": "x", "tier": "hard"})
