"""A draw's inputs and its reference's results are computed once per process (kernelgen.task.memo):
equal calls share one computation, any difference in the inputs or the task makes another, and
every caller gets copies it may write."""
from __future__ import annotations

import pytest
import torch

from kernelgen.task import memo
from kernelgen.task.spec import get_task
from kernelgen.task.verify import make_inputs, reference_call


@pytest.fixture(autouse=True)
def empty_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memo, "_kept", type(memo._kept)())
    monkeypatch.setattr(memo, "_size", 0)


def counting(outputs: dict) -> tuple[list[int], object]:
    calls = [0]

    def call():
        calls[0] += 1
        return {name: v.clone() for name, v in outputs.items()}, {}
    return calls, call


def test_equal_inputs_share_one_reference_call_and_each_caller_gets_copies() -> None:
    calls, call = counting({"y": torch.arange(4.0)})
    x = torch.linspace(0, 1, 8)
    first, _ = memo.remembered_reference("code", {"x": x, "eps": 1e-5}, call)
    first["y"].fill_(-1)  # a caller writing its result changes nobody else's
    second, _ = memo.remembered_reference("code", {"x": x.clone(), "eps": 1e-5}, call)
    assert calls[0] == 1 and second["y"].tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("change", ["element", "dtype", "stride", "scalar", "code", "name"])
def test_any_difference_in_the_call_computes_it_again(change: str) -> None:
    calls, call = counting({"y": torch.zeros(2)})
    x = torch.arange(6.0).reshape(2, 3)
    memo.remembered_reference("code", {"x": x, "eps": 1e-5}, call)
    other = {"x": x.clone(), "eps": 1e-5}
    code = "code"
    if change == "element":
        other["x"][1, 2] = torch.nextafter(other["x"][1, 2], torch.tensor(100.0))
    elif change == "dtype":
        other["x"] = x.double()
    elif change == "stride":  # the same values, laid out transposed
        other["x"] = x.t().contiguous().t()
    elif change == "scalar":
        other["eps"] = 1e-6
    elif change == "code":
        code = "other code"
    else:
        other = {"w": x.clone(), "eps": 1e-5}
    memo.remembered_reference(code, other, call)
    assert calls[0] == 2


def test_tensors_off_the_cpu_are_never_kept() -> None:
    calls, call = counting({"y": torch.zeros(1)})
    for _ in range(2):
        memo.remembered_reference("code", {"x": torch.empty(4, device="meta")}, call)
    assert calls[0] == 2


def test_the_least_recently_used_go_first_past_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memo, "MEMO_BYTES", 4 * 4 * 1024)  # four results of 1024 f32, each a quarter
    calls, call = counting({"y": torch.zeros(1024)})
    inputs = [{"x": torch.full((2,), float(i))} for i in range(5)]
    for each in inputs:
        memo.remembered_reference("code", each, call)
    assert calls[0] == 5
    memo.remembered_reference("code", inputs[4], call)  # kept
    memo.remembered_reference("code", inputs[0], call)  # dropped for the fifth
    assert calls[0] == 6


def inputs_kept() -> int:
    return sum(1 for key in memo._kept if key[0] == "inputs")


def test_a_draws_inputs_are_drawn_once_and_copied() -> None:
    task = get_task("log_softmax_rows")
    sizes = {name: 33 for name in task.sizes}
    first = make_inputs(task, sizes, 3)
    name = next(n for n, v in first.items() if isinstance(v, torch.Tensor))
    drawn = first[name].clone()
    first[name].fill_(7)  # a kernel writing its inputs
    again = make_inputs(task, sizes, 3)
    assert torch.equal(again[name], drawn) and again[name] is not first[name]
    assert inputs_kept() == 1
    # another seed, another draw option, another task definition: drawn anew
    changed = task.model_copy(update={"reference": task.reference + "\n"})
    for draw in (lambda: make_inputs(task, sizes, 4), lambda: make_inputs(task, sizes, 3, extreme=True),
                 lambda: make_inputs(changed, sizes, 3)):
        before = inputs_kept()
        draw()
        assert inputs_kept() > before


def test_the_reference_of_a_task_runs_once_per_draw() -> None:
    task = get_task("log_softmax_rows")
    inputs = make_inputs(task, {name: 17 for name in task.sizes}, 0)
    first, _ = reference_call(task, inputs)
    second, _ = reference_call(task, make_inputs(task, {name: 17 for name in task.sizes}, 0))
    assert all(torch.equal(first[n], second[n]) and first[n] is not second[n] for n in first)
    assert sum(1 for key in memo._kept if key[0] == "reference") == 1
