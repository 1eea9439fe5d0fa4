"""Which program of a launch wrote and read each output element: write tracking and races.

The interpreter runs a grid's programs in chunks, statement by statement, which is one of the
orders a GPU may choose; a kernel whose result depends on that order is wrong even where this
order happens to give the reference's answer. Atomics of different programs on one element
are ordered by the hardware and do not race among themselves (their old values may still
depend on the order: see :mod:`kernelgen.interp.atomics`); plain stores and loads are not, so a
launch has one meaning only when

* every output element is stored by at most one program (one program may store it again),
* an element one program stores is loaded by no other program of the same launch, and
* an element one program stores or loads is atomically updated by no other (an atomic is a
  write: a plain read-modify-write across programs is the race atomics exist to avoid), and
* an element one program updates atomically at ``cta`` scope is updated atomically by no
  other (PTX makes two atomics atomic to each other only when each one's scope includes
  the other: a cta-scoped one is atomic among the program's own threads only).

:class:`AccessLog` records, per output element, the program that stored it, the lowest and
highest programs that loaded it and the lowest and highest that updated it atomically, and
raises ``race`` (naming both programs and the element) at the first access that breaks a
rule, whichever order the two accesses ran in. Masked-off lanes are never accesses. The
written-by record also says which elements nothing wrote, for every dtype: a poison value can
equal the right answer (``True`` for a bool output), a record cannot. An output declared with
an ``init`` fill has every element defined from the start, so all of it counts as written.

Inputs are read-only (a store into one is its own error), so only outputs are tracked; the
reader and atomic records exist only for outputs a kernel loads or updates atomically.
"""

from __future__ import annotations

import math
from typing import AbstractSet as Set, Mapping, Sequence

import torch

from kernelgen.errors import Diagnostic, InterpreterError

_NONE = -1  # no program


class AccessLog:
    """Per output element: the program that wrote it, and the range of programs that read it."""

    def __init__(self, outputs: Mapping[str, torch.Tensor], grid: Sequence[int],
                 initialised: Set[str] = frozenset()) -> None:
        self.grid = tuple(grid)
        self.initialised = set(initialised)
        self.shapes = {name: tuple(t.shape) for name, t in outputs.items()}
        # Program ids in 32 bits where they fit: the record is gathered and scattered per store.
        self.dtype = torch.int32 if math.prod(self.grid) < 2**31 else torch.int64
        self.writer = {name: torch.full((t.numel(),), _NONE, dtype=self.dtype) for name, t in outputs.items()}
        self.untouched = set(outputs)  # outputs no program has stored into or loaded from yet
        self.first_reader: dict[str, torch.Tensor] = {}
        self.last_reader: dict[str, torch.Tensor] = {}
        self.first_atomic: dict[str, torch.Tensor] = {}
        self.last_atomic: dict[str, torch.Tensor] = {}
        self.first_cta: dict[str, torch.Tensor] = {}  # the atomics at cta scope among them
        self.last_cta: dict[str, torch.Tensor] = {}

    def stored(self, name: str, offsets: torch.Tensor, programs: torch.Tensor, path: str) -> None:
        """Program ``programs[i]`` writes element ``offsets[i]`` of output ``name`` (active lanes)."""
        writer = self.writer[name]
        programs = programs.to(self.dtype)
        if name in self.untouched:
            self.untouched.discard(name)  # the first access: nothing to clash with but itself
        else:
            before = writer[offsets]
            self._clash(name, offsets, before, programs, (before != _NONE) & (before != programs), "written", path)
        self._others(self.first_reader, self.last_reader, name, offsets, programs, "read", path)
        self._others(self.first_atomic, self.last_atomic, name, offsets, programs, "updated atomically", path)
        writer[offsets] = programs
        # Two programs writing one element in this very store: one of them lost the scatter.
        after = writer[offsets]
        self._clash(name, offsets, after, programs, after != programs, "written", path)

    def loaded(self, name: str, offsets: torch.Tensor, programs: torch.Tensor, path: str) -> None:
        """Program ``programs[i]`` reads element ``offsets[i]`` of output ``name`` (active lanes)."""
        self.untouched.discard(name)
        programs = programs.to(self.dtype)
        before = self.writer[name][offsets]
        self._clash(name, offsets, before, programs, (before != _NONE) & (before != programs), "written", path,
                    reading=True)
        self._others(self.first_atomic, self.last_atomic, name, offsets, programs, "updated atomically", path,
                     reading=True)
        self._record(self.first_reader, self.last_reader, name, offsets, programs)

    def atomic(self, name: str, offsets: torch.Tensor, programs: torch.Tensor, path: str,
               within_program: bool = False) -> None:
        """Program ``programs[i]`` updates element ``offsets[i]`` of output ``name`` atomically;
        ``within_program``: at ``cta`` scope, atomic only among the program's own threads, so
        another program's atomic on the element races with it as a plain access would."""
        self.untouched.discard(name)
        programs = programs.to(self.dtype)
        before = self.writer[name][offsets]
        self._clash(name, offsets, before, programs, (before != _NONE) & (before != programs), "written", path,
                    doing="updates atomically")
        self._others(self.first_reader, self.last_reader, name, offsets, programs, "read", path,
                     doing="updates atomically")
        self._record(self.first_atomic, self.last_atomic, name, offsets, programs)
        if within_program:
            # Checked after recording: the other programs of this very statement count too.
            self._record(self.first_cta, self.last_cta, name, offsets, programs)
            self._others(self.first_atomic, self.last_atomic, name, offsets, programs, "updated atomically", path,
                         doing="updates atomically at cta scope (atomic within one program only)")
        else:
            self._others(self.first_cta, self.last_cta, name, offsets, programs,
                         "updated atomically at cta scope (atomic within one program only)", path,
                         doing="updates atomically")

    def written(self) -> dict[str, torch.Tensor]:
        """Per output, a bool tensor of its shape: true where some program stored or updated
        atomically, everywhere for an output with an initial fill."""
        found = {}
        for name, writer in self.writer.items():
            done = writer != _NONE
            if name in self.last_atomic:
                done |= self.last_atomic[name] != _NONE
            if name in self.initialised:
                done = torch.ones_like(done)
            found[name] = done.view(self.shapes[name])
        return found

    def _record(self, firsts: dict[str, torch.Tensor], lasts: dict[str, torch.Tensor], name: str,
                offsets: torch.Tensor, programs: torch.Tensor) -> None:
        """Widen the per-element program range of ``firsts``/``lasts`` by these accesses."""
        if name not in lasts:
            numel = self.writer[name].numel()
            firsts[name] = torch.full((numel,), torch.iinfo(self.dtype).max, dtype=self.dtype)
            lasts[name] = torch.full((numel,), _NONE, dtype=self.dtype)
        firsts[name].scatter_reduce_(0, offsets, programs, "amin")
        lasts[name].scatter_reduce_(0, offsets, programs, "amax")

    def _others(self, firsts: dict[str, torch.Tensor], lasts: dict[str, torch.Tensor], name: str,
                offsets: torch.Tensor, programs: torch.Tensor, other_did: str, path: str,
                reading: bool = False, doing: str | None = None) -> None:
        """A race when a program other than this lane's is in the element's recorded range."""
        if name not in lasts:
            return
        first, last = firsts[name][offsets], lasts[name][offsets]
        other = torch.where(first != programs, first, last)
        self._clash(name, offsets, other, programs, (last != _NONE) & (other != programs), other_did, path,
                    reading=reading, doing=doing)

    def read(self) -> dict[str, torch.Tensor]:
        """Per output some program loaded from, a bool tensor of its shape: true where one did
        (for a sequence of launches, which judges reads of elements no launch wrote)."""
        return {name: (last != _NONE).view(self.shapes[name]) for name, last in self.last_reader.items()}

    def _clash(self, name: str, offsets: torch.Tensor, others: torch.Tensor, programs: torch.Tensor,
               bad: torch.Tensor, other_did: str, path: str, reading: bool = False,
               doing: str | None = None) -> None:
        if not bool(bad.any()):
            return
        i = int(bad.nonzero()[0, 0])
        element = _unravel(int(offsets[i]), self.shapes[name])
        other, this = int(others[i]), int(programs[i])
        this_does = doing or ("reads" if reading else "writes")
        raise InterpreterError(Diagnostic(
            path, "race",
            f"race on {name}{list(element)}: {self.describe(this)} {this_does} the element "
            f"{self.describe(other)} has {other_did} in the same launch; an element one program stores may be "
            f"neither stored, loaded nor atomically updated by another, and one that programs update "
            f"atomically is not stored or loaded by another (make every update of it atomic)"))

    def describe(self, program: int) -> str:
        """A program by its ids along the grid's axes (``program 3``, ``program (1, 2)``)."""
        g0, g1, _ = (self.grid + (1, 1, 1))[:3]
        ids = (program % g0, (program // g0) % g1, program // (g0 * g1))
        used = max((i + 1 for i, n in enumerate(self.grid) if n > 1), default=1)
        return f"program {ids[0]}" if used == 1 else f"program {tuple(ids[:used])}"


def _unravel(offset: int, shape: Sequence[int]) -> tuple[int, ...]:
    index = []
    for extent in reversed(shape):
        offset, rest = divmod(offset, max(extent, 1))
        index.append(rest)
    return tuple(reversed(index))
