"""Which program of a launch wrote and read each output element: write tracking and races.

The interpreter runs a grid's programs in chunks, statement by statement, which is one of the
orders a GPU may choose; a kernel whose result depends on that order is wrong even where this
order happens to give the reference's answer. The language has no atomics, so a launch has one
meaning only when

* every output element is written by at most one program (one program may write it again), and
* an element one program writes is read (loaded) by no other program of the same launch.

:class:`AccessLog` records, per output element, the program that wrote it and the lowest and
highest programs that read it, and raises ``race`` (naming both programs and the element) at
the first access that breaks a rule, whichever order the two accesses ran in. Masked-off lanes
are never accesses. The written-by record also says which elements no store wrote, for every
dtype: a poison value can equal the right answer (``True`` for a bool output), a record cannot.

Inputs are read-only (a store into one is its own error), so only outputs are tracked; the
reader record exists only for outputs a kernel loads, which few do.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import torch

from kernelgen.errors import Diagnostic, InterpreterError

_NONE = -1  # no program


class AccessLog:
    """Per output element: the program that wrote it, and the range of programs that read it."""

    def __init__(self, outputs: Mapping[str, torch.Tensor], grid: Sequence[int]) -> None:
        self.grid = tuple(grid)
        self.shapes = {name: tuple(t.shape) for name, t in outputs.items()}
        # Program ids in 32 bits where they fit: the record is gathered and scattered per store.
        self.dtype = torch.int32 if math.prod(self.grid) < 2**31 else torch.int64
        self.writer = {name: torch.full((t.numel(),), _NONE, dtype=self.dtype) for name, t in outputs.items()}
        self.untouched = set(outputs)  # outputs no program has stored into or loaded from yet
        self.first_reader: dict[str, torch.Tensor] = {}
        self.last_reader: dict[str, torch.Tensor] = {}

    def stored(self, name: str, offsets: torch.Tensor, programs: torch.Tensor, path: str) -> None:
        """Program ``programs[i]`` writes element ``offsets[i]`` of output ``name`` (active lanes)."""
        writer = self.writer[name]
        programs = programs.to(self.dtype)
        if name in self.untouched:
            self.untouched.discard(name)  # the first access: nothing to clash with but itself
        else:
            before = writer[offsets]
            self._clash(name, offsets, before, programs, (before != _NONE) & (before != programs), "written", path)
        if name in self.last_reader:
            first, last = self.first_reader[name][offsets], self.last_reader[name][offsets]
            other = torch.where(first != programs, first, last)
            self._clash(name, offsets, other, programs, (last != _NONE) & (other != programs), "read", path)
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
        if name not in self.last_reader:
            numel = self.writer[name].numel()
            self.first_reader[name] = torch.full((numel,), torch.iinfo(self.dtype).max, dtype=self.dtype)
            self.last_reader[name] = torch.full((numel,), _NONE, dtype=self.dtype)
        self.first_reader[name].scatter_reduce_(0, offsets, programs, "amin")
        self.last_reader[name].scatter_reduce_(0, offsets, programs, "amax")

    def written(self) -> dict[str, torch.Tensor]:
        """Per output, a bool tensor of its shape: true where some program stored."""
        return {name: (writer != _NONE).view(self.shapes[name]) for name, writer in self.writer.items()}

    def read(self) -> dict[str, torch.Tensor]:
        """Per output some program loaded from, a bool tensor of its shape: true where one did
        (for a sequence of launches, which judges reads of elements no launch wrote)."""
        return {name: (last != _NONE).view(self.shapes[name]) for name, last in self.last_reader.items()}

    def _clash(self, name: str, offsets: torch.Tensor, others: torch.Tensor, programs: torch.Tensor,
               bad: torch.Tensor, other_did: str, path: str, reading: bool = False) -> None:
        if not bool(bad.any()):
            return
        i = int(bad.nonzero()[0, 0])
        element = _unravel(int(offsets[i]), self.shapes[name])
        other, this = int(others[i]), int(programs[i])
        this_does = "reads" if reading else "writes"
        raise InterpreterError(Diagnostic(
            path, "race",
            f"race on {name}{list(element)}: {self.describe(this)} {this_does} the element "
            f"{self.describe(other)} has {other_did} in the same launch; without atomics, an element one "
            f"program writes may be neither written nor read by another"))

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
