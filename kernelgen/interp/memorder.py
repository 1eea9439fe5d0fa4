"""Memory order between programs: what an atomic's old value may be relied on to show.

The interpreter runs a launch sequentially consistently: once a program has seen another
program's later atomic (its ticket, its flag), every earlier atomic write of that program is
visible to it too. A GPU promises that only across a release and an acquire (PTX's ``.release``
/ ``.acquire``, Triton's ``sem``): a ``relaxed`` atomic orders nothing but its own element, so
with relaxed atomics the program that draws the last ticket may still read a total without
another program's share (the message-passing pattern; CUDA's threadFenceReduction needs the
fence the default ``acq_rel`` gives).

:class:`MemoryOrder` keeps two vector clocks per program, over the programs' *steps* (a
program's atomic statements, counted from 1):

* ``seen``: what the program's atomics' old values have shown it, through any chain of
  programs (a bound atomic joins the element's record of its writers and what they had seen);
* ``synced``: what a release/acquire pair has made visible to it (a bound atomic with
  ``acquire`` or ``acq_rel`` joins the element's release record: an unbound one may have read
  before the release on a GPU, and the program cannot tell; one with ``release`` or ``acq_rel`` adds
  its program's ``synced``, its own step included, to that record; every atomic of the element
  continues the release sequence, as read-modify-writes do).

A bound atomic (``name``: its old values are used) of program R reading an element that
program W last updated at step ``t`` relies on seeing that update when R has already seen a
later step of W (``seen[R][W] > t``): the interpreter's order cannot show R anything else,
a GPU can. It must then be ordered by an earlier acquire of R (``synced[R][W] >= t``; this
atomic's own acquire orders what follows it, not the update it reads) or it is
``unordered_read``. So is a read of W's update where R has seen only an *earlier* step of W
(``0 < seen[R][W] < t``) and the update is a contribution (W did not bind its old value): the
"last one finishes" ticket taken before the program's own adds. The interpreter ran W's add
before R's read, in every order it has (whole programs, or programs in step); a GPU may stop W
between its ticket and its add, and the holder of the last ticket then reads the total without
W's share (round 27: a column sum passed this way). (A bound update, as a work queue's second
grab, picks a value in any order: the orders judge those.) Old values seen without such an inference (a relaxed ticket that
only picks a slot, claims of one statement) are one element's and right in any order: the
launch is run under other orders for them (:mod:`kernelgen.interp.orders`). Plain loads of what
another program wrote are races of their own (:mod:`kernelgen.interp.accesses`).

A scalar atomic is issued by one thread of its program (Triton's redundant-data predicate), and
its release covers that thread's updates and what it observed: not an atomic update by the
program's other threads (a block's lanes) made since the program's last barrier, which may still
be in flight (a "last one finishes" ticket drawn by thread 0 while warp 3 still adds its columns:
round 33). Such a release records the program's steps before the first such update only, so a
reader relying on one of them is ``unordered_read``; a barrier before the ticket covers them all.
(A step is one clock value for all of a program's threads: an update by the releasing thread alone
after a block's update is taken as uncovered too, the conservative side.)

The record exists only for launches that bind an atomic's old values, and per element only
for outputs updated atomically; a table past :data:`RECORD_LIMIT` entries is ``over_budget``
(not judged on the CPU); lanes of one statement on one element apply in the lane order
of :mod:`kernelgen.interp.atomics`, one round per lane.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import torch

from kernelgen.errors import Diagnostic, InterpreterError, InterpreterLimit
from kernelgen.interp.barrier import unravel
from kernelgen.interp.masks import any_true

ACQUIRES = ("acquire", "acq_rel")
RELEASES = ("release", "acq_rel")
RECORD_LIMIT = 2**25  # entries of one clock table (128 MiB): past it the launch is not judged on the CPU


class MemoryOrder:
    """Per program: steps and the two vector clocks; per atomically updated element: its last
    writers' steps, what they had seen and the release record."""

    def __init__(self, shapes: Mapping[str, Sequence[int]], programs: int) -> None:
        self.shapes = {name: tuple(shape) for name, shape in shapes.items()}
        self.programs = programs
        self._afford("/grid", programs, "the programs' clocks")
        self.step = torch.zeros(programs, dtype=torch.int32)
        self.seen = torch.zeros((programs, programs), dtype=torch.int32)
        self.synced = torch.zeros((programs, programs), dtype=torch.int32)
        # Per program: its first step since its last barrier whose atomic several threads issued (0:
        # none), which a one-thread release does not cover; and whether such a release left one out.
        self.pending = torch.zeros(programs, dtype=torch.int32)
        self.thinned = torch.zeros(programs, dtype=torch.bool)
        # Per output: [element, program] last write step, seen by writers, release record.
        self.elements: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}

    def barrier(self, programs: torch.Tensor) -> None:
        """``programs`` pass a barrier: their threads' updates so far are covered by any release."""
        self.pending[programs.long()] = 0

    def atomic(self, name: str, offsets: torch.Tensor, programs: torch.Tensor, path: str, sem: str,
               bound: bool, describe: Callable[[int], str], one_thread: bool = False) -> None:
        """Program ``programs[i]`` updates element ``offsets[i]`` atomically with ``sem``
        (lanes in apply order); ``bound``: its old values are used; ``one_thread``: a scalar
        atomic, issued by one thread of each program."""
        if offsets.numel() == 0:
            return
        programs = programs.long()
        stepping = programs.unique()
        self.step[stepping] += 1
        self.seen[stepping, stepping] = self.step[stepping]
        self.synced[stepping, stepping] = self.step[stepping]
        if not one_thread:
            fresh = stepping[self.pending[stepping] == 0]
            self.pending[fresh] = self.step[fresh]
        if name not in self.elements:
            numel = 1
            for extent in self.shapes[name]:
                numel *= extent
            self._afford(path, numel, f"{name}'s record")
            self.elements[name] = tuple(torch.zeros((numel, self.programs), dtype=torch.int32) for _ in range(4))
        wrote, knew, released, added = self.elements[name]
        order = torch.sort(offsets, stable=True).indices
        offs = offsets[order]
        first = torch.ones_like(offs, dtype=torch.bool)
        first[1:] = offs[1:] != offs[:-1]
        start = torch.nonzero(first).flatten()
        rank = torch.arange(offs.numel()) - start[torch.cumsum(first, 0) - 1]
        for r in _rounds_that_change(rank, first, programs[order]):  # one lane per element per round
            lanes = order[rank == r]
            self._round(name, offsets[lanes], programs[lanes], path, sem, bound, describe,
                        wrote, knew, released, added, one_thread)

    def _round(self, name: str, offs: torch.Tensor, progs: torch.Tensor, path: str, sem: str, bound: bool,
               describe: Callable[[int], str], wrote: torch.Tensor, knew: torch.Tensor,
               released: torch.Tensor, added: torch.Tensor, one_thread: bool) -> None:
        # A program's lanes on distinct elements: its clocks join each element's record once. The
        # atomic's own acquire orders what comes after it, not the update it reads.
        if bound:
            last = wrote[offs]
            last[torch.arange(offs.numel()), progs] = 0  # its own writes: program order
            prior = self.seen[progs]
            unsynced = (last > 0) & (self.synced[progs] < last)
            relied = unsynced & (prior > last)
            ahead = unsynced & (prior > 0) & (prior < last) & (added[offs] > 0)  # a contribution after what R saw
            for found, later in ((relied, True), (ahead, False)):
                if any_true(found):
                    lane, other = (int(i) for i in found.nonzero()[0])
                    self._unordered(name, int(offs[lane]), int(progs[lane]), other, int(last[lane, other]),
                                    int(prior[lane, other]), path, sem, describe, later)
            self.seen.scatter_reduce_(0, self._rows(progs), knew[offs], "amax")
            if sem in ACQUIRES:
                self.synced.scatter_reduce_(0, self._rows(progs), released[offs], "amax")
        wrote[offs, progs] = self.step[progs]
        added[offs, progs] = 0 if bound else 1
        knew[offs] = torch.maximum(knew[offs], self.seen[progs])
        if sem in RELEASES:
            released[offs] = torch.maximum(released[offs], self._released_by(progs, one_thread))

    def _released_by(self, progs: torch.Tensor, one_thread: bool) -> torch.Tensor:
        """What a release by ``progs`` makes visible: their synced clocks, a one-thread release's
        own entry kept below the first update several threads made since the program's barrier."""
        rows = self.synced[progs]
        if not one_thread:
            return rows
        capped = self.pending[progs] > 0
        if any_true(capped):
            rows = rows.clone()
            lanes = capped.nonzero().flatten()
            rows[lanes, progs[lanes]] = self.pending[progs[lanes]] - 1
            self.thinned[progs[lanes]] = True
        return rows

    def _afford(self, path: str, rows: int, what: str) -> None:
        if rows * self.programs > RECORD_LIMIT:
            raise InterpreterLimit(Diagnostic(
                path, "over_budget",
                f"judging the memory order of atomics whose old values are bound keeps a clock per program for "
                f"each program and each element updated atomically; {what} ({rows} x {self.programs} programs) is "
                f"past the interpreter's budget of {RECORD_LIMIT} entries: launch fewer programs"))

    def _rows(self, programs: torch.Tensor) -> torch.Tensor:
        return programs[:, None].expand(-1, self.programs)

    def _unordered(self, name: str, offset: int, reader: int, writer: int, wrote: int, seen: int, path: str,
                   sem: str, describe: Callable[[int], str], later: bool = True) -> None:
        element = list(unravel(offset, self.shapes[name]))
        if later:
            why = (f"as it saw that program's later atomic ({seen}): no release/acquire orders them, so a GPU may "
                   f"read it without that update; release it (that or a later atomic, sem release/acq_rel) and acquire "
                   f"it (an earlier named atomic reading the release, sem acquire/acq_rel)")
            if bool(self.thinned[writer]):
                why = (f"as it saw that program's later atomic ({seen}), a scalar one whose release covers only the "
                       f"thread issuing it: put a barrier before it to cover the other threads' updates")
        else:
            why = (f"made after that program's atomic it saw ({seen}): a GPU may stop that program between the two, "
                   f"and this one then reads it without that update; make the update before the atomic that "
                   f"announces it (a ticket taken after the program's own adds)")
        raise InterpreterError(Diagnostic(
            path, "unordered_read",
            f"{describe(reader)} reads {name}{element} (sem {sem}) relying on {describe(writer)}'s atomic update there "
            f"(its atomic {wrote}), {why}"))


def _rounds_that_change(rank: torch.Tensor, first: torch.Tensor, programs: torch.Tensor) -> list[int]:
    """The rounds of one atomic statement worth running (lanes sorted by element, ``rank``: each
    lane's place on its element, ``first``: rank 0, ``programs``: each lane's program).

    After a round, each (element, program) pair it ran is a fixed point: the program's clocks
    have joined the element's records and the records the program's clocks, so running any of
    those pairs again changes nothing, though it is judged on the joined clocks. A round whose
    lanes each repeat their element's pair of the round before therefore changes nothing, and a
    round after such a round whose pairs repeat too is judged on exactly the same clocks as
    it: it is skipped. (A counter that a thousand lanes of one program increment costs two
    rounds, not a thousand.)"""
    repeats = torch.zeros_like(first)
    repeats[1:] = ~first[1:] & (programs[1:] == programs[:-1])
    rounds = int(rank.max()) + 1
    repeated = (torch.bincount(rank[~repeats], minlength=rounds) == 0).tolist()
    return [r for r in range(rounds) if r < 2 or not (repeated[r] and repeated[r - 1])]
