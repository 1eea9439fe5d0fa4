"""Triton's interpreter runs a launch's programs one after another, so kernels whose programs race
on a GPU compute the sequential result in the baseline's CPU mode.
:func:`kernelgen.baseline.interpreter_races.patch_triton_interpreter_races` finds the races; these
kernels are each wrong on a GPU only through the programs' order (or right however they run)."""

from __future__ import annotations

import re

import pytest
import torch

from kernelgen.baseline.child import load_module
from kernelgen.baseline import interpreter_races
from kernelgen.baseline.interpreter_races import RACES, RaceFound, patch_triton_interpreter_races

# Triton's own jit functions (tl.sum, tl.cumsum) run in the interpreter only where triton was
# first imported with TRITON_INTERPRET=1, which another test may have done without: these kernels
# reduce with builtins and a combine function of their own.
SOURCE = '''
import triton
import triton.language as tl


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def plain_accumulate(x, out, N, ROWS: tl.constexpr, B: tl.constexpr):
    cols = tl.arange(0, B)
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    block = tl.load(x + rows[:, None] * B + cols[None, :])
    old = tl.load(out + cols)
    tl.store(out + cols, old + tl.reduce(block, 0, _add))


@triton.jit
def atomic_accumulate(x, out, N, ROWS: tl.constexpr, B: tl.constexpr, RELAXED: tl.constexpr):
    cols = tl.arange(0, B)
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    block = tl.load(x + rows[:, None] * B + cols[None, :])
    if RELAXED:
        tl.atomic_add(out + cols, tl.reduce(block, 0, _add), sem="relaxed")
    else:
        tl.atomic_add(out + cols, tl.reduce(block, 0, _add))


@triton.jit
def neighbour_prefix(x, out, B: tl.constexpr):
    """Each block's running sum plus the previous block's last total, read from out in the same launch."""
    pid = tl.program_id(0)
    offsets = pid * B + tl.arange(0, B)
    carry = tl.load(out + pid * B - 1, mask=pid > 0, other=0.0)
    tl.store(out + offsets, tl.associative_scan(tl.load(x + offsets), 0, _add) + carry)


@triton.jit
def last_program_sums(x, partials, counter, out, ROWS: tl.constexpr, B: tl.constexpr, PROGRAMS: tl.constexpr,
                      TICKET_FIRST: tl.constexpr, SEM: tl.constexpr):
    """Partial column sums in the program's own slot, then a ticket: the last holder adds them up."""
    pid = tl.program_id(0)
    cols = tl.arange(0, B)
    rows = pid * ROWS + tl.arange(0, ROWS)
    partial = tl.reduce(tl.load(x + rows[:, None] * B + cols[None, :]), 0, _add)
    if TICKET_FIRST:
        ticket = tl.atomic_add(counter, 1, sem=SEM)
        tl.store(partials + pid * B + cols, partial)
    else:
        tl.store(partials + pid * B + cols, partial)
        tl.debug_barrier()  # every thread's store, before the one thread's release
        ticket = tl.atomic_add(counter, 1, sem=SEM)
    if ticket == PROGRAMS - 1:
        slots = tl.arange(0, PROGRAMS)
        tl.store(out + cols, tl.reduce(tl.load(partials + slots[:, None] * B + cols[None, :]), 0, _add))
        tl.store(counter, 0)


@triton.jit
def shared_sum_ticket(x, total, counter, out, ROWS: tl.constexpr, B: tl.constexpr, PROGRAMS: tl.constexpr,
                      TICKET_FIRST: tl.constexpr):
    """Partial column sums added atomically to one total, and a ticket: the last holder copies it out."""
    cols = tl.arange(0, B)
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    partial = tl.reduce(tl.load(x + rows[:, None] * B + cols[None, :]), 0, _add)
    if TICKET_FIRST:
        ticket = tl.atomic_add(counter, 1)
        tl.atomic_add(total + cols, partial)
    else:
        tl.atomic_add(total + cols, partial)
        tl.debug_barrier()
        ticket = tl.atomic_add(counter, 1)
    if ticket == PROGRAMS - 1:
        tl.store(out + cols, tl.load(total + cols))


@triton.jit
def flag_write(out, VALUE_BY_PROGRAM: tl.constexpr):
    """Every program stores a flag: the same value, or its own id."""
    pid = tl.program_id(0)
    tl.store(out, pid if VALUE_BY_PROGRAM else 1)


@triton.jit
def float_write(out, STEP: tl.constexpr):
    """Every program stores 1 + its id * STEP to one element: one value up to rounding, or not."""
    tl.store(out, 1.0 + tl.program_id(0).to(tl.float32) * STEP)


@triton.jit
def handoff(data, flag, ticket, out, B: tl.constexpr):
    """The first program to start publishes a block behind a release flag; the second spins on
    the flag with an atomic load (an add of zero) and reads the block."""
    cols = tl.arange(0, B)
    turn = tl.atomic_add(ticket, 1)
    if turn == 0:
        tl.store(data + cols, tl.full([B], 3.0, tl.float32))
        tl.debug_barrier()
        tl.atomic_xchg(flag, 1, sem="release")
    else:
        while tl.atomic_add(flag, 0, sem="acquire") == 0:
            pass
        tl.store(out + cols, tl.load(data + cols))


@triton.jit
def exchange_then_add(out, B: tl.constexpr):
    """Program 0 "initialises" with an exchange what the others add to."""
    pid = tl.program_id(0)
    cols = tl.arange(0, B)
    if pid == 0:
        tl.atomic_xchg(out + cols, tl.full([B], 0, tl.int32))
    else:
        tl.atomic_add(out + cols, tl.full([B], 1, tl.int32))


@triton.jit
def cta_add(out, B: tl.constexpr):
    tl.atomic_add(out + tl.arange(0, B), tl.full([B], 1.0, tl.float32), scope="cta")


@triton.jit
def masked_tail(x, out, N, B: tl.constexpr):
    """Each program reads one block past its own, masked off: never an access."""
    pid = tl.program_id(0)
    offsets = pid * B + tl.arange(0, B)
    ahead = tl.load(x + offsets + B, mask=offsets + B < 0, other=0.0)
    tl.store(out + offsets, tl.load(x + offsets, mask=offsets < N) + ahead, mask=offsets < N)


@triton.jit
def claim_slots(counter, out):
    """Each program claims the next slot with an atomic and writes its id there: a permutation of
    the program ids, in the order the programs ran."""
    tl.store(out + tl.atomic_add(counter, 1), tl.program_id(0))


@triton.jit
def locked_add(x, out, lock, B: tl.constexpr, BARRIER: tl.constexpr):
    """A plain read-modify-write under a spin lock (compare-and-swap in, exchange out): the
    exchange's one thread releases the other threads' stores only behind a barrier."""
    cols = tl.arange(0, B)
    row = tl.load(x + tl.program_id(0) * B + cols)
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    tl.store(out + cols, tl.load(out + cols) + row)
    if BARRIER:
        tl.debug_barrier()
    tl.atomic_xchg(lock, 0)


@triton.jit
def wait_for_next(flag, out):
    """Program p marks itself done, then waits for program p + 1's mark (the last waits for none)."""
    p = tl.program_id(0)
    tl.store(flag + p, 1)
    if p < tl.num_programs(0) - 1:
        while tl.load(flag + p + 1) == 0:
            pass
    tl.store(out + p, p)


@triton.jit
def reload_each_step(x, out, STEPS: tl.constexpr):
    for i in range(STEPS):
        tl.store(out + i, tl.load(x) + i)


@triton.jit
def double_by_block_ptr(x, out, M, N, BM: tl.constexpr, BN: tl.constexpr, CHECKED: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    source = tl.make_block_ptr(x, (M, N), (N, 1), (pm * BM, pn * BN), (BM, BN), (1, 0))
    target = tl.make_block_ptr(out, (M, N), (N, 1), (pm * BM, pn * BN), (BM, BN), (1, 0))
    if CHECKED:
        tl.store(target, 2 * tl.load(source, boundary_check=(0, 1), padding_option="zero"), boundary_check=(0, 1))
    else:
        tl.store(target, 2 * tl.load(source))


@triton.jit
def double_by_descriptor(x, out, M, N, BM: tl.constexpr, BN: tl.constexpr):
    source = tl.make_tensor_descriptor(x, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    target = tl.make_tensor_descriptor(out, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    at = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    target.store(at, 2 * source.load(at))
'''


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    """The module above, its kernels run by Triton's interpreter with the race check on."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    path = tmp_path / "races.py"
    path.write_text(SOURCE)
    patch_triton_interpreter_races()
    yield load_module(path, "races")
    RACES.checking, RACES.found, RACES.spinning = False, None, None


def _rows(programs: int, rows: int = 4, width: int = 8) -> torch.Tensor:
    return torch.arange(programs * rows * width, dtype=torch.float32).reshape(programs * rows, width) % 7


def test_a_plain_read_modify_write_across_programs_races(kernels):
    x = _rows(3)
    out = torch.zeros(8)
    with pytest.raises(RaceFound, match=r"race in plain_accumulate: program \d loads out\[0\], which program \d "
                                        r"stores"):
        kernels.plain_accumulate[(3,)](x, out, 8, ROWS=4, B=8)
    assert RACES.found and "loads out[0]" in RACES.found  # kept for an answer that catches it
    torch.testing.assert_close(out, x.sum(0))  # what the interpreter's one order computed


@pytest.mark.parametrize("relaxed", [False, True])
def test_atomic_accumulation_does_not_race(kernels, relaxed):
    x = _rows(3)
    out = torch.zeros(8)
    kernels.atomic_accumulate[(3,)](x, out, 8, ROWS=4, B=8, RELAXED=relaxed)
    torch.testing.assert_close(out, x.sum(0))
    assert RACES.found is None


def test_a_block_reading_its_neighbours_store_races(kernels):
    x = torch.ones(24)
    out = torch.zeros(24)
    with pytest.raises(RaceFound, match=r"program 1 loads out\[7\], which program 0 stores|"
                                        r"program 0 stores out\[7\], which program 1 loads"):
        kernels.neighbour_prefix[(3,)](x, out, B=8)


@pytest.mark.parametrize("ticket_first, sem, races", [
    (False, "acq_rel", False),  # partials, then the ticket: the last holder sees them all
    (True, "acq_rel", True),    # the ticket before the partial: the last holder may read a slot not yet stored
    (False, "relaxed", True),   # a relaxed ticket releases nothing
])
def test_the_last_program_reads_partials_only_behind_a_release(kernels, ticket_first, sem, races):
    x = _rows(4)
    partials, counter, out = torch.zeros(4, 8), torch.zeros(1, dtype=torch.int32), torch.zeros(8)
    launch = lambda: kernels.last_program_sums[(4,)](x, partials, counter, out, ROWS=4, B=8, PROGRAMS=4,  # noqa: E731
                                                      TICKET_FIRST=ticket_first, SEM=sem)
    if races:
        # the partials a slot holds, or the counter the last holder resets (first in memory wins)
        with pytest.raises(RaceFound, match=r"program \d (loads partials|stores counter)\[\d+\], which program \d"):
            launch()
    else:
        launch()
        torch.testing.assert_close(out, x.sum(0))
        assert int(counter) == 0  # the last holder's plain reset is ordered too


@pytest.mark.parametrize("ticket_first", [False, True])
def test_a_load_of_a_sum_is_not_ordered_by_the_loaders_own_addition(kernels, ticket_first):
    """A ticket taken on entry goes last to the last program to start, not to finish: its own
    acq_rel addition to the total orders nothing it loads there."""
    x = _rows(4)
    total, counter, out = torch.zeros(8), torch.zeros(1, dtype=torch.int32), torch.zeros(8)
    launch = lambda: kernels.shared_sum_ticket[(4,)](x, total, counter, out, ROWS=4, B=8, PROGRAMS=4,  # noqa: E731
                                                      TICKET_FIRST=ticket_first)
    if ticket_first:
        with pytest.raises(RaceFound, match=r"program \d loads total\[\d\], which program \d updates atomically"):
            launch()
    else:
        launch()
        torch.testing.assert_close(out, x.sum(0))


def test_stores_of_the_same_bits_do_not_race_and_of_others_do(kernels):
    flag = torch.zeros(1, dtype=torch.int32)
    kernels.flag_write[(4,)](flag, VALUE_BY_PROGRAM=False)
    assert int(flag) == 1
    with pytest.raises(RaceFound, match=r"program \d stores out\[0\], which program \d stores"):
        kernels.flag_write[(4,)](flag, VALUE_BY_PROGRAM=True)


def test_float_stores_of_one_value_up_to_rounding_do_not_race(kernels):
    out = torch.zeros(1)
    kernels.float_write[(4,)](out, STEP=1e-8)  # the interpreter's other summation order for one element
    with pytest.raises(RaceFound, match=r"stores out\[0\]"):
        kernels.float_write[(4,)](out, STEP=1e-3)


def test_a_spin_on_an_atomic_load_behind_a_release_is_ordered(kernels):
    data, out = torch.zeros(8), torch.zeros(8)
    kernels.handoff[(2,)](data, torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32), out, B=8)
    torch.testing.assert_close(out, torch.full((8,), 3.0))


def test_an_exchange_among_additions_races(kernels):
    with pytest.raises(RaceFound, match=r"program \d updates atomically out\[0\], which program \d updates atomically"):
        kernels.exchange_then_add[(3,)](torch.zeros(8, dtype=torch.int32), B=8)


def test_atomics_scoped_to_their_program_race_across_programs(kernels):
    with pytest.raises(RaceFound, match="updates atomically"):
        kernels.cta_add[(2,)](torch.zeros(8), B=8)
    RACES.found = None
    kernels.cta_add[(1,)](torch.zeros(8), B=8)  # one program: nothing to race with


def test_masked_off_lanes_are_not_accesses(kernels):
    x = torch.arange(20, dtype=torch.float32)
    out = torch.zeros(20)
    kernels.masked_tail[(3,)](x, out, 20, B=8)
    torch.testing.assert_close(out, x)


def test_a_read_modify_write_under_a_lock_is_ordered_behind_a_barrier(kernels):
    x = _rows(1, rows=3)
    out, lock = torch.zeros(8), torch.zeros(1, dtype=torch.int32)
    kernels.locked_add[(3,)](x, out, lock, B=8, BARRIER=True)
    torch.testing.assert_close(out, x.sum(0))
    with pytest.raises(RaceFound, match=r"program \d loads out\[0\], which program \d stores"):
        kernels.locked_add[(3,)](x, torch.zeros(8), lock, B=8, BARRIER=False)


def test_the_programs_run_in_a_shuffled_order(kernels):
    """Race-free and wrong in any order but grid order: slots claimed through an atomic's old value."""
    counter, out = torch.zeros(1, dtype=torch.int32), torch.full((16,), -1, dtype=torch.int32)
    kernels.claim_slots[(16,)](counter, out)
    assert sorted(out.tolist()) == list(range(16)) and out.tolist() != list(range(16))
    again = torch.full((16,), -1, dtype=torch.int32)
    kernels.claim_slots[(16,)](torch.zeros(1, dtype=torch.int32), again)
    assert not torch.equal(again, out)  # another launch, another order


def test_launches_are_judged_apart(kernels):
    """What one launch stores, the next may read: launches are ordered."""
    x = torch.ones(8)
    out = torch.zeros(8)
    kernels.flag_write[(1,)](out, VALUE_BY_PROGRAM=True)
    kernels.masked_tail[(1,)](out.clone(), out, 8, B=8)
    assert RACES.found is None


def test_off_when_not_asked_for(kernels):
    RACES.checking = False
    out = torch.zeros(8)
    kernels.plain_accumulate[(3,)](_rows(3), out, 8, ROWS=4, B=8)  # the interpreter's own behaviour
    torch.testing.assert_close(out, _rows(3).sum(0))


def test_a_program_waiting_for_a_later_one_is_found_spinning(kernels, monkeypatch):
    """The interpreter runs one program at a time: a program whose loop repeats one load waits
    for a program that runs only after it, forever; the check says so after SPIN_REPEATS."""
    monkeypatch.setattr(interpreter_races, "SPIN_REPEATS", 50)
    with pytest.raises(Exception) as raised:  # noqa: PT011 - the interpreter wraps it in its own error
        kernels.wait_for_next[(8,)](torch.zeros(8, dtype=torch.int32), torch.zeros(8, dtype=torch.int32))
    assert "Spinning" in repr(raised.value) or isinstance(raised.value.__cause__, interpreter_races.Spinning)
    assert re.match(r"program \d of wait_for_next loads flag\[\d\] 50 times in a row with no other memory "
                    r"operation: it waits for another program", RACES.spinning), RACES.spinning
    # a loop that stores between its loads of one element is no spin
    RACES.spinning = None
    out = torch.zeros(120)
    kernels.reload_each_step[(1,)](torch.ones(1), out, STEPS=120)
    torch.testing.assert_close(out, torch.arange(120.0) + 1)
    assert RACES.spinning is None


def test_edge_tiles_bounded_by_block_pointers_and_descriptors_stay_in_bounds(kernels):
    """A block pointer with its boundary check and a tensor descriptor mask an edge tile's lanes
    past the tensor: no finding (the bounds check sees masked-on lanes only); without the check
    the block pointer's last tiles reach past x, which the interpreter would have read."""
    x = torch.randn(37, 52)
    for launch in (lambda out: kernels.double_by_block_ptr[(3, 4)](x, out, 37, 52, BM=16, BN=16, CHECKED=True),
                   lambda out: kernels.double_by_descriptor[(3, 4)](x, out, 37, 52, BM=16, BN=16)):
        out = torch.empty_like(x)
        launch(out)
        assert torch.equal(out, 2 * x) and RACES.found is None
    with pytest.raises(Exception) as raised:  # noqa: PT011 - the interpreter wraps it in its own error
        kernels.double_by_block_ptr[(3, 4)](x, torch.empty_like(x), 37, 52, BM=16, BN=16, CHECKED=False)
    assert isinstance(raised.value.__cause__, interpreter_races.OutOfBounds), raised.value
    assert re.match(r"out of bounds in double_by_block_ptr: program \(\d, \d\) loads the 4-byte element at byte \d+ "
                    r"of x, which holds 7696 bytes", RACES.found), RACES.found


RACY_VECMAT = '''```python
import torch
import triton
import triton.language as tl


@triton.jit
def vecmat_kernel(v, x, out, M, N, ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = tl.program_id(1) * ROWS + tl.arange(0, ROWS)
    tile = tl.load(x + rows[:, None] * N + cols[None, :], mask=(rows < M)[:, None] & (cols < N)[None, :], other=0.0)
    weights = tl.load(v + rows, mask=rows < M, other=0.0)
    old = tl.load(out + cols, mask=cols < N, other=0.0)
    tl.store(out + cols, old + tl.sum(tile * weights[:, None], axis=0), mask=cols < N)


def vecmat(v, x):
    M, N = x.shape
    out = torch.zeros((N,), dtype=torch.float32, device=v.device)
    LAUNCH
    return out
```'''
LAUNCH = "vecmat_kernel[(triton.cdiv(N, 32), triton.cdiv(M, 16))](v, x, out, M, N, ROWS=16, BLOCK_N=32)"


@pytest.mark.parametrize("launch", [LAUNCH, f"try:\n        {LAUNCH}\n    except Exception:\n        pass"],
                         ids=["plain", "caught"])
def test_the_baseline_judges_a_racing_answer_wrong_in_cpu_mode(launch: str) -> None:
    """Through the harness, in the sandbox: programs splitting the rows add to ``out`` with a
    plain load and store (right in the interpreter's order); an answer that catches the
    exception fails as well."""
    from kernelgen.baseline.ablation import evaluate_baseline
    from kernelgen.errors import Outcome
    from kernelgen.harness.pipeline import Settings
    from kernelgen.task.spec import get_task

    result = evaluate_baseline(get_task("vecmat"), RACY_VECMAT.replace("LAUNCH", launch), Settings(gpu=False))
    assert result.outcome is Outcome.WRONG_RESULT, result.diagnostics
    (diagnostic,) = result.diagnostics
    assert diagnostic["code"] == "race" and re.match(
        r"race in vecmat_kernel: program \(0, \d+\) (loads|stores) out\[0\], which program \(0, \d+\) (stores|loads)",
        diagnostic["message"]), diagnostic


COLUMN_VECMAT = '''```python
import torch
import triton
import triton.language as tl


@triton.jit
def vecmat_kernel(v, x, out, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, M, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        tile = tl.load(x + rows[:, None] * N + cols[None, :], mask=(rows < M)[:, None] & (cols < N)[None, :], other=0.0)
        acc += tl.sum(tile * tl.load(v + rows, mask=rows < M, other=0.0)[:, None], axis=0)
    tl.store(out + cols, acc, mask=STORED)


def vecmat(v, x):
    M, N = x.shape
    out = torch.empty((N,), dtype=torch.float32, device=v.device)
    vecmat_kernel[(triton.cdiv(N, 32),)](v, x, out, M, N, BLOCK_M=16, BLOCK_N=32)
    return out
```'''


@pytest.mark.parametrize("answer, code, finding", [
    (COLUMN_VECMAT.replace("STORED", "cols < N"), None, "no race, every output element written"),
    (RACY_VECMAT.replace("LAUNCH", LAUNCH), "race", "race"),
    (COLUMN_VECMAT.replace("STORED", "cols < N - 1"), "unwritten_output", "unwritten output"),
    # a NaN of the interpreter's arithmetic (0 / 0), not the poison: a difference left to the GPU
    (COLUMN_VECMAT.replace("STORED", "cols < N").replace("tl.store(out + cols, acc,", "tl.store(out + cols, "
                                                         "tl.where(cols == N - 1, (acc - acc) / (acc - acc), acc),"),
     None, "no race, every output element written"),
    # a construct Triton's interpreter lacks: left to the GPU, which ran it
    (COLUMN_VECMAT.replace("STORED", "cols < N").replace(
        "tl.store(out + cols, acc,", "tl.store(out + cols, tl.inline_asm_elementwise('mov.b32 $0, $1;', '=r,r', [acc], "
        "dtype=tl.float32, is_pure=True, pack=1),"), None, "not judged: runtime_error"),
    # the column tail read unmasked (discarded at the store): the last row's reaches past x
    (COLUMN_VECMAT.replace("STORED", "cols < N").replace("mask=(rows < M)[:, None] & (cols < N)[None, :]",
                                                         "mask=(rows < M)[:, None]"), "out_of_bounds", "out of bounds"),
], ids=["right", "racing", "last_column_unwritten", "arithmetic_nan", "inline_asm", "tail_read_past_x"])
def test_gpu_mode_looks_again_in_the_interpreter(answer: str, code: str | None, finding: str) -> None:
    """GPU mode's second look at an answer the GPU passed (CPU mode's calls in Triton's
    interpreter): a race fails it, and so does an output element left as torch.empty's poison
    (a GPU's memory there often holds a right value); what the interpreter cannot run is left to
    the GPU."""
    from kernelgen.baseline.ablation import _in_the_interpreter
    from kernelgen.baseline.answer import EntryPoint, check_answer
    from kernelgen.harness.pipeline import Settings
    from kernelgen.task.spec import get_task

    task = get_task("vecmat")
    verdict = check_answer(answer, EntryPoint.for_task(task))
    assert verdict.ok, verdict
    problems, line = _in_the_interpreter(task, verdict.code, Settings(gpu=True))
    assert [p.code for p in problems] == ([code] if code else []), problems
    assert line.startswith(finding), line
    if code == "unwritten_output":
        assert re.search(r"out\[\d+\] \(of \d+ such elements\) is torch.empty's poison \(nan\)", problems[0].message)


@pytest.mark.parametrize("edit, pattern", [
    # the tile's columns unmasked: lanes past N read the next row, and past the last row x's end; the
    # store is masked, so the values are right wherever the heap past x holds anything finite
    (("mask=(rows < M)[:, None] & (cols < N)[None, :]", "mask=(rows < M)[:, None]"),
     r"program \d+ loads the 4-byte element at byte \d+ of x, which holds \d+ bytes"),
    # the store unmasked: lanes past N write past out's end (into whatever the heap holds there)
    (("tl.store(out + cols, acc, mask=cols < N)", "tl.store(out + cols, acc)"),
     r"program \d+ stores the 4-byte element at byte \d+ of out, which holds \d+ bytes"),
], ids=["load", "store"])
def test_the_baseline_fails_an_access_outside_every_tensor_in_cpu_mode(edit: tuple[str, str], pattern: str) -> None:
    """Through the harness, in the sandbox: Triton's interpreter loads and stores through raw
    host pointers, so an access past a tensor's end read or wrote the heap; the check stops it
    before it is made (a GPU reads another allocation's memory there, or faults)."""
    from kernelgen.baseline.ablation import evaluate_baseline
    from kernelgen.errors import Outcome
    from kernelgen.harness.pipeline import Settings
    from kernelgen.task.spec import get_task

    answer = COLUMN_VECMAT.replace("STORED", "cols < N").replace(*edit)
    result = evaluate_baseline(get_task("vecmat"), answer, Settings(gpu=False))
    assert result.outcome is Outcome.WRONG_RESULT, result.diagnostics
    (diagnostic,) = result.diagnostics
    assert diagnostic["code"] == "out_of_bounds", diagnostic
    assert re.match(r"out of bounds in vecmat_kernel: " + pattern, diagnostic["message"]), diagnostic


# Right on CPU tensors, racing on CUDA ones (the rows of a column block split over programs that
# add to out with a plain load and store); and answers that refuse CPU tensors.
BRANCHING_VECMAT = RACY_VECMAT.replace("LAUNCH", f"if v.is_cuda:\n        {LAUNCH}\n    else:\n        "
                                       "vecmat_kernel[(triton.cdiv(N, 32), 1)](v, x, out, M, N, "
                                       "ROWS=triton.next_power_of_2(M), BLOCK_N=32)")
CUDA_ONLY = "    assert v.is_cuda and x.is_cuda, 'CUDA tensors only'\n    M, N = x.shape\n"


@pytest.mark.gpu
@pytest.mark.parametrize("answer, code, finding", [
    (BRANCHING_VECMAT, "race", "race"),
    (COLUMN_VECMAT.replace("STORED", "cols < N").replace("    M, N = x.shape\n", CUDA_ONLY), None,
     "no race, every output element written"),
    (COLUMN_VECMAT.replace("STORED", "cols < N - 1").replace("    M, N = x.shape\n", CUDA_ONLY),
     "unwritten_output", "unwritten output"),
], ids=["races_on_cuda_tensors_only", "cuda_only", "cuda_only_last_column_unwritten"])
def test_gpu_modes_look_runs_the_answer_on_cuda_tensors(answer: str, code: str | None, finding: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU the second look runs Triton's interpreter on CUDA tensors: an answer that takes
    another path for CPU tensors, or refuses them, is looked at on the path the GPU ran (on CPU
    tensors the first would pass and the others would not be judged)."""
    from kernelgen.baseline.ablation import _in_the_interpreter
    from kernelgen.baseline.answer import EntryPoint, check_answer
    from kernelgen.harness.pipeline import Settings
    from kernelgen.task.spec import get_task

    task = get_task("vecmat")
    verdict = check_answer(answer, EntryPoint.for_task(task))
    assert verdict.ok, verdict
    problems, line = _in_the_interpreter(task, verdict.code, Settings(gpu=True))
    assert [p.code for p in problems] == ([code] if code else []), (problems, line)
    assert line.startswith(finding), line
    if code == "race":
        # the host copies the programs address are named as the CUDA tensors they copy
        assert re.search(r"program \(0, \d+\) (loads|stores) out\[0\]", problems[0].message), problems[0].message
        # the look on CPU tensors, as before: the answer's other path passes
        import torch

        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
        assert _in_the_interpreter(task, verdict.code, Settings(gpu=True)) == \
            ([], "no race, every output element written")


@pytest.mark.gpu
def test_gpu_mode_fails_a_race_the_gpu_schedule_hides() -> None:
    """Round 29's CAS lock whose holder's plain stores are not behind a barrier: on an H100 the
    GPU's results were right 10 times of 10; GPU mode now fails it by the interpreter's look."""
    import json
    from pathlib import Path

    from kernelgen.baseline.ablation import evaluate_baseline
    from kernelgen.errors import Outcome
    from kernelgen.harness.pipeline import Settings
    from kernelgen.task.spec import get_task

    round29 = Path(__file__).resolve().parents[1] / "tools" / "redteam_round29"
    entry = next(e for e in json.loads((round29 / "manifest.json").read_text())
                 if e["name"] == "count_positive_cas_lock_without_barrier")
    answer = (round29 / f"{entry['name']}.md").read_text()
    result = evaluate_baseline(get_task(entry["task"]), answer, Settings(gpu=True, time_kernels=False))
    assert result.outcome is Outcome.WRONG_RESULT, result.diagnostics
    assert result.diagnostics[0]["code"] == "race" and result.extra["interpreter"] == "race", result.diagnostics


def test_the_baseline_does_not_judge_a_spin_on_a_later_program_in_cpu_mode() -> None:
    """Through the harness, in the sandbox: each column block waits for the next one's flag
    (a GPU runs them at once). The interpreter cannot run it: not judged, at once rather than at
    its time limit, and whatever the answer makes of the exception."""
    from kernelgen.baseline.ablation import evaluate_baseline
    from kernelgen.errors import Outcome
    from kernelgen.harness.pipeline import Settings
    from kernelgen.task.spec import get_task

    answer = COLUMN_VECMAT.replace("STORED", "cols < N").replace(
        "vecmat_kernel(v, x, out, M, N,", "vecmat_kernel(v, x, out, flags, M, N,").replace(
        "    tl.store(out + cols, acc,", "    p = tl.program_id(0)\n    tl.store(flags + p, 1)\n"
        "    if p < tl.num_programs(0) - 1:\n        while tl.load(flags + p + 1) == 0:\n            pass\n"
        "    tl.store(out + cols, acc,").replace(
        "    vecmat_kernel[(triton.cdiv(N, 32),)](v, x, out, M, N, BLOCK_M=16, BLOCK_N=32)",
        "    flags = torch.zeros((triton.cdiv(N, 8),), dtype=torch.int32, device=v.device)\n"
        "    try:\n        vecmat_kernel[(triton.cdiv(N, 8),)](v, x, out, flags, M, N, BLOCK_M=16, BLOCK_N=8)\n"
        "    except Exception:\n        pass")
    result = evaluate_baseline(get_task("vecmat"), answer, Settings(gpu=False))
    assert result.outcome is Outcome.NOT_JUDGED, (result.outcome, result.diagnostics)
    (diagnostic,) = result.diagnostics
    assert re.search(r"program \d+ of vecmat_kernel loads flags\[\d+\] \d+ times in a row", diagnostic["message"])
    assert result.duration_s < 60, result.duration_s
