"""The memory order of atomics between programs (kernelgen.interp.memorder): message passing
through a ticket needs a release and an acquire; one element's old values do not."""

from __future__ import annotations

import pytest
import torch

from kernelgen.errors import InterpreterError, InterpreterLimit
from kernelgen.interp.memorder import MemoryOrder

DATA, FLAG = "data", "flag"


def _at(*values: int) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.int64)


def _message(producer: str, ticket: str, consumer: str) -> None:
    """Program 0 adds to data[0], then takes a ticket on flag[0]; program 1 takes its ticket
    (seeing program 0's), then reads data[0] with a bound relaxed atomic."""
    order = MemoryOrder({DATA: (1,), FLAG: (1,)}, 2)
    order.atomic(DATA, _at(0), _at(0), "/a", producer, False, str)
    order.atomic(FLAG, _at(0), _at(0), "/t", ticket, True, str)
    order.atomic(FLAG, _at(0), _at(1), "/t", consumer, True, str)
    order.atomic(DATA, _at(0), _at(1), "/r", "relaxed", True, str)


@pytest.mark.parametrize("ticket, consumer", [("relaxed", "relaxed"), ("release", "relaxed"),
                                              ("relaxed", "acquire"), ("release", "release")])
def test_a_ticket_without_release_and_acquire_is_an_unordered_read(ticket: str, consumer: str) -> None:
    with pytest.raises(InterpreterError) as caught:
        _message("relaxed", ticket, consumer)
    assert caught.value.diagnostics[0].code == "unordered_read" and caught.value.diagnostics[0].path == "/r"
    assert "relying on 0's atomic update" in caught.value.diagnostics[0].message


@pytest.mark.parametrize("ticket, consumer", [("release", "acquire"), ("acq_rel", "acq_rel"), ("acq_rel", "acquire")])
def test_a_release_and_an_acquire_order_the_read(ticket: str, consumer: str) -> None:
    _message("relaxed", ticket, consumer)


def test_a_ticket_taken_before_the_programs_own_add_is_an_unordered_read() -> None:
    """Program 0 takes its acq_rel ticket, then adds to data[0]; program 1 takes the last ticket
    (seeing program 0's) and reads data[0]: a GPU may stop program 0 between its ticket and its
    add (round 27: a column sum passed so), whatever the release and acquire."""
    order = MemoryOrder({DATA: (1,), FLAG: (1,)}, 2)
    order.atomic(FLAG, _at(0), _at(0), "/t", "acq_rel", True, str)
    order.atomic(DATA, _at(0), _at(0), "/a", "relaxed", False, str)
    order.atomic(FLAG, _at(0), _at(1), "/t", "acq_rel", True, str)
    with pytest.raises(InterpreterError) as caught:
        order.atomic(DATA, _at(0), _at(1), "/r", "acq_rel", True, str)
    assert caught.value.diagnostics[0].code == "unordered_read" and "after that program's atomic it saw (1)" in \
        caught.value.diagnostics[0].message


@pytest.mark.parametrize("barrier", [False, True])
def test_a_scalar_tickets_release_covers_the_other_threads_adds_only_after_a_barrier(barrier: bool) -> None:
    """Program 0's lanes add to data[0] and data[1] (a block: several threads), then thread 0 alone
    takes an acq_rel ticket (a scalar atomic); program 1 takes the last ticket and reads the data.
    Without a barrier between the adds and the ticket, warp 3 may still be adding when thread 0
    releases (round 33): unordered_read; after a barrier the release covers every thread's adds."""
    order = MemoryOrder({DATA: (2,), FLAG: (1,)}, 2)
    order.atomic(DATA, _at(0, 1), _at(0, 0), "/a", "relaxed", False, str)
    if barrier:
        order.barrier(_at(0))
    order.atomic(FLAG, _at(0), _at(0), "/t", "acq_rel", True, str, one_thread=True)
    order.atomic(FLAG, _at(0), _at(1), "/t", "acq_rel", True, str, one_thread=True)
    if barrier:
        order.atomic(DATA, _at(0, 1), _at(1, 1), "/r", "relaxed", True, str)
        return
    with pytest.raises(InterpreterError) as caught:
        order.atomic(DATA, _at(0, 1), _at(1, 1), "/r", "relaxed", True, str)
    assert caught.value.diagnostics[0].code == "unordered_read"
    assert "a scalar one whose release covers only the thread issuing it" in caught.value.diagnostics[0].message


def test_a_scalar_tickets_release_covers_the_programs_earlier_scalar_updates() -> None:
    """Thread 0's own updates before its ticket (scalar atomics, no block of lanes) are released."""
    order = MemoryOrder({DATA: (1,), FLAG: (1,)}, 2)
    order.atomic(DATA, _at(0), _at(0), "/a", "relaxed", False, str, one_thread=True)
    order.atomic(FLAG, _at(0), _at(0), "/t", "acq_rel", True, str, one_thread=True)
    order.atomic(FLAG, _at(0), _at(1), "/t", "acq_rel", True, str, one_thread=True)
    order.atomic(DATA, _at(0), _at(1), "/r", "relaxed", True, str, one_thread=True)


def test_a_work_queues_later_grab_is_not_judged_here() -> None:
    """Two programs grab work items from one counter, twice each (bound, relaxed): a later grab
    reads the other's later grab, which it may or may not see first; the orders judge that."""
    order = MemoryOrder({FLAG: (1,)}, 2)
    for _ in range(2):
        order.atomic(FLAG, _at(0), _at(0), "/g", "relaxed", True, str)
        order.atomic(FLAG, _at(0), _at(1), "/g", "relaxed", True, str)


def test_relaxed_tickets_that_only_pick_slots_are_not_judged() -> None:
    """Every program takes a relaxed ticket on one counter: each sees the others' tickets, but
    relies on no other element."""
    order = MemoryOrder({FLAG: (1,)}, 4)
    for _ in range(2):
        order.atomic(FLAG, _at(0, 0, 0, 0), _at(0, 1, 2, 3), "/t", "relaxed", True, str)


def test_an_unbound_acquire_orders_nothing() -> None:
    """The reader's own acquire add on the data (its old value unused) may have come before the
    writer's on a GPU: only a bound acquire, whose value the program acts on, synchronizes."""
    order = MemoryOrder({DATA: (1,), FLAG: (1,)}, 2)
    order.atomic(DATA, _at(0, 0), _at(0, 1), "/a", "acq_rel", False, str)
    order.atomic(FLAG, _at(0, 0), _at(0, 1), "/t", "release", True, str)
    with pytest.raises(InterpreterError, match="unordered_read|relying"):
        order.atomic(DATA, _at(0), _at(1), "/r", "acq_rel", True, str)


def test_a_flag_set_by_an_unbound_relaxed_exchange_is_relied_on_through_a_chain() -> None:
    """Program 0 adds to data[0] and raises a flag with a relaxed exchange; program 1 sees the
    flag (acquire: nothing was released) and raises another; program 2 sees that one and reads
    data[0]: it relies on program 0's add through program 1."""
    order = MemoryOrder({DATA: (1,), FLAG: (2,)}, 3)
    order.atomic(DATA, _at(0), _at(0), "/a", "relaxed", False, str)
    order.atomic(FLAG, _at(0), _at(0), "/f", "relaxed", False, str)
    order.atomic(FLAG, _at(0), _at(1), "/p", "acquire", True, str)
    order.atomic(FLAG, _at(1), _at(1), "/f", "release", False, str)
    order.atomic(FLAG, _at(1), _at(2), "/p", "acquire", True, str)
    with pytest.raises(InterpreterError) as caught:
        order.atomic(DATA, _at(0), _at(2), "/r", "acquire", True, str)
    assert caught.value.diagnostics[0].code == "unordered_read" and "relying on 0's atomic update" in caught.value.diagnostics[0].message


def test_a_launch_too_large_to_record_is_over_budget() -> None:
    with pytest.raises(InterpreterLimit, match="over_budget|past the interpreter's budget"):
        MemoryOrder({DATA: (1,)}, 2**13 + 1)
