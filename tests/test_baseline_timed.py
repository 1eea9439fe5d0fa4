"""The raw-Triton baseline's timed calls (:mod:`kernelgen.baseline.timed`): each repetition on
fresh values, some of them checked, none told apart from the others, on the CPU with the timer
stood in for (the sandbox around them: tests/test_sandbox.py)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest
import torch


class Chance:
    """A stand-in for the child's random.Random: the checked repetitions are those from
    ``offset`` on (every other one), or a seeded choice where ``offset`` is negative."""

    def __init__(self, offset: int) -> None:
        import random

        self.offset, self.random = offset, random.Random(0)

    def sample(self, population: range, k: int) -> list[int]:
        if self.offset < 0:
            return self.random.sample(population, k)
        return [population[min(self.offset + 2 * j, len(population) - 1 - j)] for j in range(k)]

    def randint(self, low: int, high: int) -> int:
        return self.random.randint(low, high)


def timed_tools(offset: int = 5, seed: int = 0) -> Any:
    from kernelgen.baseline.timed import Tools

    return Tools.taken(torch.Generator().manual_seed(seed), Chance(offset))


def timer(timed: Any, warmup: int, repetitions: int, attempts: int = 1) -> None:
    """What kernelgen.gpu.timing.timed_windows does with them: two calls outside the turn, the
    warm-up, then each series (``series`` told first), ``prepare`` before every call."""
    def call() -> None:
        timed.prepare()
        timed()

    for _ in range(2 + warmup):
        call()
    for _ in range(attempts):
        timed.series(repetitions)
        for _ in range(repetitions):
            call()


def assert_varied(out: torch.Tensor, source: torch.Tensor, within: tuple[float, float] | None = None) -> None:
    """Each element of ``out`` is ``source``'s times exp(+-s), s in VARY_LOG, as often up as
    down, except where that left ``within``: there it is at the range's end."""
    from kernelgen.baseline.timed import VARY_LOG

    factors = out.double() / source.double()
    if within is not None:
        assert within[0] <= out.min() and out.max() <= within[1]
        inside = (out > within[0]) & (out < within[1])
        assert inside.double().mean() > 0.9
        factors = factors[inside]
    logs = factors.log().abs()
    assert VARY_LOG[0] - 1e-6 <= logs.min() and logs.max() <= VARY_LOG[1] + 1e-6
    assert abs((factors > 1).double().mean().item() - 0.5) < 0.15


def test_a_long_product_of_varied_values_drifts_no_more_than_one_of_drawn_values() -> None:
    """A running product over 32768 varied values of row_cumprod_long's domain stays in f32's
    range as one of drawn values does: factors all below 1 took it to 0 after ~4000 terms, so
    that a kernel computing only a row's first columns and zeros after them passed the checked
    calls; clamped to the draws' range, the factors cut as much off the top as the bottom."""
    from kernelgen.baseline.timed import span, vary

    tools = timed_tools(-1)
    x, other = (0.95 + 0.1 * torch.rand(8, 32768, generator=torch.Generator().manual_seed(s)) for s in (1, 2))
    out = torch.empty_like(x)
    vary(x, other, out, tools, span(x, other, tools))
    drift = out.double().log().sum(dim=1) - x.double().log().sum(dim=1)
    assert drift.abs().max() < 25 and (out.cumprod(dim=1)[:, -1] > 0).all()


def test_varied_values_stay_within_the_range_of_both_draws() -> None:
    """A value in (0, 1) stays there (logit's precondition), a large f16 stays finite, a
    non-finite value stays as it is; a constant input, whose range is one point, still varies."""
    from kernelgen.baseline.timed import checked_values, span, vary

    tools = timed_tools(-1)
    p, p2 = torch.rand(4096) * 0.98 + 0.01, torch.rand(4096) * 0.98 + 0.01
    within = span(p, p2, tools)
    assert within == (min(p.min().item(), p2.min().item()), max(p.max().item(), p2.max().item()))
    out = torch.empty_like(p)
    vary(p, p2, out, tools, within)
    assert within[0] <= out.min() and out.max() <= within[1] and out.max() < 1
    varied = checked_values([p], [p2], tools)[0]
    assert 0 < varied.min() and varied.max() < 1 and not torch.equal(varied, p)
    big = torch.tensor([[65504.0, -65504.0, 60000.0, 1.0, float("nan"), float("inf"), float("-inf")]] * 64).half()
    out = torch.empty_like(big)
    vary(big, big, out, tools, span(big, big, tools))
    assert torch.isfinite(out[:, :4]).all() and out[:, 4].isnan().all() and torch.equal(out[:, 5:], big[:, 5:])
    constant = torch.full((256,), 2.0)
    assert span(constant, constant, tools) is None
    assert span(torch.empty(0), torch.empty(0), tools) is None  # an empty input: nothing to clamp
    out = torch.empty_like(constant)
    vary(constant, constant, out, tools, None)
    assert_varied(out, constant)


def test_each_timed_call_gets_its_inputs_as_drawn_floats_scaled_afresh_element_by_element() -> None:
    from kernelgen.baseline.timed import TimedCalls

    x, i, b = torch.randn(256), torch.arange(8), torch.randn(256).to(torch.bfloat16)
    f8, wide = torch.randn(8).to(torch.float8_e4m3fn), torch.zeros(1).expand(16)  # expanded: never written
    drawn = [t.clone() for t in (x, i, b, f8)]
    seen: list[Any] = []

    def entry() -> Any:  # what an in-place answer leaves
        seen.append(x.clone())
        for t in (x, b, f8):
            t.zero_()
        i.add_(5)
        return x

    timed = TimedCalls(entry, [x, 3, i, b, f8, wide], None, None, timed_tools(), lambda r: [r])
    for _ in range(3):
        timed.prepare()
        factors = x / drawn[0]
        assert_varied(x, drawn[0], (drawn[0].min().item(), drawn[0].max().item()))
        assert factors.std() > 1e-3  # element by element: not one scale a kept sample would reveal
        assert (b != drawn[2]).float().mean() > 0.5  # most bf16 values change
        assert torch.equal(i, drawn[1]) and torch.equal(f8.view(torch.uint8), drawn[3].view(torch.uint8))
        timed()
    assert not torch.equal(seen[0], seen[1]) and timed.finish() == []  # no refill: nothing checked


@pytest.mark.parametrize("offset", [0, 7, 99, -1])
@pytest.mark.parametrize("attempts", [1, 3])
def test_timed_repetitions_at_random_run_on_the_refill_and_are_kept(offset: int, attempts: int) -> None:
    """The checked calls are repetitions of the last series (the one whose times count); an
    answer returning what it kept from an earlier call is stale there, whichever they are, and
    so is one that computed through the first series and forced another (a late window)."""
    from kernelgen.baseline.timed import CHECKED_REPETITIONS, TimedCalls

    x, y = torch.randn(64), torch.randn(64)
    x2, y2 = torch.randn(64), torch.randn(64)
    kept: list[Any] = []
    calls = [0]

    def honest() -> Any:
        return x + y

    def keeps() -> Any:  # computes in its first call only
        if not kept:
            kept.append(x + y)
        return kept[0]

    def first_series_only() -> Any:  # computes through the first series, then returns its first call's result
        calls[0] += 1
        if not kept:
            kept.append(x + y)
        return x + y if calls[0] <= 112 else kept[0]

    cases = [(honest, True), (keeps, False)] + ([(first_series_only, False)] if attempts > 1 else [])
    for entry, fresh in cases:
        kept.clear()
        timed = TimedCalls(entry, [x, y], [x2, y2], [x2, y2], timed_tools(offset), lambda r: [r])
        timer(timed, 10, 100, attempts)
        last = range(13 + 100 * (attempts - 1), 113 + 100 * (attempts - 1))
        assert len(timed.chosen) == CHECKED_REPETITIONS and all(n in last for n in timed.chosen)
        checked = timed.finish()
        assert len(checked) == CHECKED_REPETITIONS
        for outputs, after in checked:
            assert torch.equal(outputs[0], x2 + y2) is fresh, entry.__name__
            assert torch.equal(after[0], x2) and torch.equal(after[1], y2)


def test_in_a_series_every_call_copies_its_results_to_memory_made_before_it() -> None:
    """A checked call's results go to a slot made before the series, and every other call's to a
    spare one: no check allocates, or copies more than another call, for the next call to see."""
    from kernelgen.baseline.timed import TimedCalls

    x, x2 = torch.randn(8), torch.randn(8)
    timed = TimedCalls(lambda: x * 3, [x], [x2], [x2], timed_tools(0), lambda r: [r])
    timer(timed, 2, 0)
    timed.series(10)
    slots, spare = [id(slot) for slot in timed.slots], timed.spare
    copied = []
    copy = timed.tools.copy
    timed.tools = dataclasses.replace(timed.tools, copy=lambda a, b: copied.append(tuple(a.shape)) or copy(a, b))
    for _ in range(10):
        timed.prepare()
        timed()
    assert [id(slot) for slot in timed.checked] == slots[:3] and timed.spare is spare
    per_call = len(copied) // 10
    assert per_call == 3 and len(copied) == 30  # each prepare: the results copied (2) and the input set (1)


def test_varied_values_mix_in_the_other_draw_and_checked_values_are_of_the_same_family() -> None:
    from kernelgen.baseline.timed import MIXED, checked_values, vary

    tools = timed_tools(-1)
    x, other = torch.rand(4096) + 1, -torch.rand(4096) - 1  # the other draw's elements show by their sign
    out = torch.empty_like(x)
    vary(x, other, out, tools)
    mixed = out < 0
    assert abs(mixed.float().mean().item() - MIXED) < 0.02
    for source, part in ((x, ~mixed), (other, mixed)):
        assert_varied(out[part], source[part])
    i, i2 = torch.arange(8), torch.arange(8) + 100
    with_float = checked_values([x, i, 2.0], [other, i2, 2.0], tools)
    assert (with_float[0] < 0).any() and torch.equal(with_float[1], i) and with_float[2] == 2.0
    assert torch.equal(checked_values([i], [i2], tools)[0], i2)  # integers alone: the other draw's


def test_an_answer_testing_sampled_elements_cannot_tell_the_checked_calls() -> None:
    """The reviewer's cheat: keep 16 sampled elements of the first call and skip the work where
    most of a call's are within a few percent of them. Every timed call passes that test, the
    checked ones too (the same family of values), so the kept result reaches the checks."""
    from kernelgen.baseline.timed import CHECKED_REPETITIONS, TimedCalls, checked_values

    x, x2 = torch.randn(4096), torch.randn(4096)
    samples = torch.arange(0, 4096, 256)
    kept: list[Any] = []

    def cheat() -> Any:
        if kept:
            ratio = x[samples] / kept[0]
            if ((ratio > 0.9) & (ratio < 1.1)).sum() >= 12:
                return kept[1]
        kept[:] = [x[samples].clone(), x * 2]
        return kept[1]

    checks = checked_values([x], [x2], timed_tools(-1, seed=1))  # the parent's randomness is not the child's
    timed = TimedCalls(cheat, [x], [x2], checks, timed_tools(-1), lambda r: [r])
    timer(timed, 10, 100)
    checked = timed.finish()
    assert len(checked) == CHECKED_REPETITIONS
    assert not all(torch.allclose(outputs[0], checks[0] * 2) for outputs, _ in checked)  # stale: found


def test_mixed_inputs_take_the_other_draws_elements_at_the_same_places_in_each_call() -> None:
    """Inputs named mixed (integers, booleans, 8-bit floats whose domain holds element by
    element) take about one element in MIXED from the other draw, afresh in each call and at the
    same places in every input of one shape (a dividend keeps its divisor); the others, as drawn."""
    from kernelgen.baseline.timed import MIXED, TimedCalls

    a, b, kept = torch.arange(4096), torch.arange(4096) + 7, torch.arange(16)
    flags, f8 = torch.rand(4096) < 0.5, torch.randn(4096).to(torch.float8_e4m3fn)
    others = [a + 100_000, b + 100_000, kept + 50, ~flags, (f8.float() * 2 + 1).to(torch.float8_e4m3fn)]
    drawn = [t.clone() for t in (a, b, kept, flags, f8)]
    timed = TimedCalls(lambda: a + b, [a, b, kept, flags, f8], others, None, timed_tools(-1), lambda r: [r],
                       mixed=[True, True, False, True, True])
    places = []
    for _ in range(3):
        timed.prepare()
        taken = a >= 100_000
        assert abs(taken.float().mean().item() - MIXED) < 0.02
        assert torch.equal(a, torch.where(taken, others[0], drawn[0]))
        assert torch.equal(b, torch.where(taken, others[1], drawn[1]))  # the same places
        assert torch.equal(flags, torch.where(taken, others[3], drawn[3]))
        bits = [t.view(torch.uint8) for t in (f8, others[4], drawn[4])]
        assert torch.equal(bits[0], torch.where(taken, bits[1], bits[2]))
        assert torch.equal(kept, drawn[2])  # not mixed: as drawn
        places.append(taken.clone())
        timed()
    assert not torch.equal(places[0], places[1])  # afresh in each call
    alone = TimedCalls(lambda: a, [a], None, None, timed_tools(), lambda r: [r], mixed=[True])
    assert alone.kept[0][2] is None  # no other draw: nothing to mix with


def test_checked_values_mix_as_the_timed_calls_do() -> None:
    """The parent's checked values are of the timed calls' family: mixed inputs mixed at shared
    places, the rest as drawn; where nothing is varied or mixed, the other draw's."""
    from kernelgen.baseline.timed import MIXED, checked_values

    a, b, n = torch.arange(4096), torch.arange(4096) + 7, torch.arange(8)
    a2, b2, n2 = a + 100_000, b + 100_000, n + 50
    values = checked_values([a, b, n, 3], [a2, b2, n2, 3], timed_tools(-1), [True, True, False, False])
    taken = values[0] >= 100_000
    assert abs(taken.float().mean().item() - MIXED) < 0.02
    assert torch.equal(values[1], torch.where(taken, b2, b)) and torch.equal(values[2], n) and values[3] == 3
    assert torch.equal(checked_values([n], [n2], timed_tools(-1), [False])[0], n2)


def test_an_integer_answer_keeping_results_by_sampled_elements_is_found() -> None:
    """The sampled-elements cheat on integers alone: before, every timed call saw the drawn
    values and the checked ones the other draw's, so it skipped every timed call unseen. Mixed,
    most samples still match the first call's, the cheat returns its kept result in the checked
    calls too, and that result is stale where the elements were mixed."""
    from kernelgen.baseline.timed import CHECKED_REPETITIONS, TimedCalls, checked_values

    a, b = torch.randint(-1000, 1000, (4096,)), torch.randint(1, 1000, (4096,))
    a2, b2 = torch.randint(-1000, 1000, (4096,)), torch.randint(1, 1000, (4096,))
    samples = torch.arange(0, 4096, 256)
    kept: list[Any] = []

    def cheat() -> Any:  # a remainder, kept while 12 of 16 sampled elements are as in its first call
        if kept and (a[samples] == kept[0]).sum() >= 12:
            return kept[1]
        kept[:] = [a[samples].clone(), torch.remainder(a, b)]
        return kept[1]

    checks = checked_values([a, b], [a2, b2], timed_tools(-1, seed=1), [True, True])
    timed = TimedCalls(cheat, [a, b], [a2, b2], checks, timed_tools(-1), lambda r: [r], mixed=[True, True])
    timer(timed, 10, 100)
    checked = timed.finish()
    assert len(checked) == CHECKED_REPETITIONS
    assert not all(torch.equal(outputs[0], torch.remainder(checks[0], checks[1])) for outputs, _ in checked)
    kept.clear()
    honest = TimedCalls(lambda: torch.remainder(a, b), [a, b], [a2, b2], checks, timed_tools(-1), lambda r: [r],
                        mixed=[True, True])
    timer(honest, 10, 100)
    assert all(torch.equal(outputs[0], torch.remainder(checks[0], checks[1])) for outputs, _ in honest.finish())


def test_the_baseline_mixes_the_inputs_whose_domain_holds_element_by_element() -> None:
    """Integers in a range are mixed; sorted segment starts are not (a mixed one is unsorted)."""
    from kernelgen.baseline.ablation import _mixed
    from kernelgen.task.spec import load_tasks
    from kernelgen.task.verify import make_inputs

    tasks = {t.id: t for t in load_tasks()}
    for task_id, expected in (("segment_sum_csr", {"values": True, "offsets": False}),
                              ("remainder_int", None)):
        task = tasks[task_id].variant_tasks()[0]
        inputs = make_inputs(task, {name: r.min for name, r in task.sizes.items()}, 0)
        flags = dict(zip(inputs, _mixed(task, inputs)))
        assert flags == (expected or {name: True for name in inputs}), task_id
    assert _mixed(tasks["segment_sum_csr"], None) is None


def test_fewer_repetitions_than_checks_still_make_every_check() -> None:
    """A slow answer's timer fits fewer repetitions in a turn: those it makes are checked, and
    the rest of the checks are made after it, each after 1 to 8 varied calls."""
    from kernelgen.baseline.timed import CHECKED_REPETITIONS, TimedCalls

    x, x2 = torch.randn(8), torch.randn(8)
    timed = TimedCalls(lambda: x + 1, [x], [x2], [x2], timed_tools(-1), lambda r: [r])
    timer(timed, 1, 2)
    assert timed.chosen == {4, 5} and len(timed.checked) == 1  # the second is kept at finish
    checked = timed.finish()
    assert len(checked) == CHECKED_REPETITIONS and timed.count >= 5 + 2
    assert all(torch.equal(outputs[0], x2 + 1) and torch.equal(after[0], x2) for outputs, after in checked)


def test_the_checked_repetitions_reach_the_parent_as_calls_after_the_others(tmp_path: Path) -> None:
    """The child's part (timed_and_checked, the timer stood in for by a loop) and the parent's
    (_results, as run_calls_in_sandbox reads them): an in-place answer's checked repetitions come
    back as the calls after the checked ones, each with the refill's outputs and its input
    modified, whatever the timed repetitions left."""
    from kernelgen.baseline.child import TensorWriter, timed_and_checked
    from kernelgen.baseline.sandbox import _results
    from kernelgen.baseline.timed import CHECKED_REPETITIONS

    x, x2 = torch.randn(16), torch.randn(16)
    sent_first = [torch.randn(16)]

    def entry(v: Any) -> Any:  # in place: v += 1, returns 2 v
        v.add_(1)
        return v * 2

    def timer(fn: Any, prepare: Any, series: Any) -> list[float]:
        for _ in range(2 + 3):
            prepare()
            fn()
        series(10)
        for _ in range(10):
            prepare()
            fn()
        return [1.0] * 10

    fd = os.open(tmp_path / "results", os.O_RDWR | os.O_CREAT)
    try:
        writer = TensorWriter(fd)
        first = [sent_first[0].clone()]
        writer.write(0, "output", 0, entry(*first))
        writer.write(0, "input", 0, first[0])
        times = timed_and_checked(lambda: entry(x), [x], [x2], [x2], timed_tools(-1), writer, 1, timer)
        writer.close()
        expected = [sent_first] + [[x2.clone()]] * CHECKED_REPETITIONS
        calls, modified = _results(fd, expected, 1 << 20, 1 << 24)
    finally:
        os.close(fd)
    assert times == [1.0] * 10 and len(calls) == 1 + CHECKED_REPETITIONS
    assert torch.equal(calls[0][0], (sent_first[0] + 1) * 2) and modified[0] == (0,)
    for outputs, written in zip(calls[1:], modified[1:]):
        assert torch.equal(outputs[0], (x2 + 1) * 2) and written == (0,)


def test_an_answer_computing_a_long_products_first_columns_only_is_found() -> None:
    """row_cumprod_long at its bench row length: an answer that, after its first calls, computes
    each row's first 8192 columns and writes zeros after them. With factors all below 1, the
    checked values' products were 0 past ~4400 columns, and it passed; now they are not."""
    from kernelgen.baseline.ablation import _mixed
    from kernelgen.baseline.timed import CHECKED_REPETITIONS, TimedCalls, checked_values
    from kernelgen.task.spec import load_tasks
    from kernelgen.task.verify import compare_outputs, make_inputs, reference_call

    task = next(t for t in load_tasks() if t.id == "row_cumprod_long").variant_tasks()[0]
    sizes = {"M": 4, "N": 32768}
    drawn, other = (make_inputs(task, sizes, seed, bench=True) for seed in (0, 1))
    (x,), (x2,) = drawn.values(), other.values()
    calls = [0]

    def cheat() -> Any:
        calls[0] += 1
        if calls[0] <= 2:
            return torch.cumprod(x, dim=1)
        out = torch.zeros_like(x)
        out[:, :8192] = torch.cumprod(x[:, :8192], dim=1)
        return out

    checks = checked_values([x], [x2], timed_tools(-1, seed=1), _mixed(task, drawn))
    wanted, _ = reference_call(task, {"x": checks[0]})
    assert (wanted["out"][:, -1] > 0).all()  # the checked values' products reach the last column
    for answer, found in ((cheat, True), (lambda: torch.cumprod(x, dim=1), False)):
        timed = TimedCalls(answer, [x], [x2], checks, timed_tools(-1), lambda r: [r])
        timer(timed, 5, 20)
        checked = timed.finish()
        assert len(checked) == CHECKED_REPETITIONS
        problems = [compare_outputs(task, {"out": outputs[0]}, wanted, {"x": checks[0]}, sizes)
                    for outputs, _ in checked]
        assert all(problems) if found else not any(problems)
