"""Order within one program: which of its threads touched an element since its last barrier.

A GPU program is many threads, each owning some lanes of each block; a store by one thread is
not guaranteed visible to another thread's load (nor ordered with its store) until both pass a
barrier (``tl.debug_barrier``: bar.sync). The interpreter runs a program's lanes in lockstep, so
it would show the value a GPU may not: it judges the hazard instead. A lane is identified by its
access's block shape and its position in that block: two accesses of one shape at one position
count as one thread, anything else as another. Triton gives each access a layout of its own (from
its pointer's contiguity and alignment, in each variant a launch compiles), so where the compile
stage read them off the compiled kernel (:mod:`kernelgen.gpu.layouts`: ``layouts``, per access
path, the thread that touches each position) a block access's lane is that thread instead, and a
reduction or scan whose block spans several warps along its axis is a barrier too: Triton moves its
partial results between the warps through shared memory, behind bar.sync (a layer norm storing a
row's values in a first pass and loading them in the next, its mean's sum between).
A block of fewer elements than the program has threads (a scalar, a [1] block, 64 elements under
4 warps) is replicated: every thread holding an element loads it, and Triton stores it from one
of them only (its redundant-data mask: a scalar from thread 0). Such a load whose value other
threads use (:mod:`kernelgen.interp.replicated`: it meets a block of another shape, a condition)
counts as from every lane against the stores and atomic updates before it (red-team round 32: a
row's mean and rstd stored as scalars and loaded back to normalize the row, warps 1 and up reading
the output's uninitialised memory); it is kept as its position's, so a store after it is judged
as after any load.

Per output element :class:`ProgramOrder` keeps the barrier count of the program that last stored
it and the storing lane, and the same for the last load (a load of one element from several
lanes counts as from every lane). Within a program, since its last barrier,

* a load of an element stored from another lane (read after write),
* a store of an element stored from another lane (write after write: which lands is the
  threads' race), and
* a store of an element loaded from another lane (write after read: the load may see it)

are ``missing_barrier``. An atomic update counts as a store against the plain accesses (a load
of an element another lane updated atomically, or an atomic update of one another lane stored or
loaded: the zero a program stores before its lanes add into it, the total it loads back after
they did), not against other atomics, which the hardware orders on one element, though not in the
program's order across its threads: an atomic that reads back what the program's other lanes'
atomics made counts as a load against them (a bound one of a scalar, issued by thread 0 alone,
or one that changes nothing, as an add of 0: round 33's row total read with ``atomic_add(slot,
0)`` or ``atomic_xchg(slot, 0)`` after every lane's add, where thread 0 may run ahead of warp 5's
add). A bound atomic of a block that changes its element (a slot each lane claims) reads a value
any order gives. Accesses of different programs are the race detector's
(:mod:`kernelgen.interp.accesses`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import torch

from kernelgen.errors import Diagnostic, InterpreterError
from kernelgen.interp.masks import any_true

_NONE = -1  # no program
_MANY = -2  # the element was loaded from several lanes
_EVERY = -3  # a replicated block's load: from every thread that holds the element
_POSITION_BITS = 20  # a block has at most 2**20 elements (the checker's limit)
_THREADS = ("threads",)  # the lanes numbered by thread (a layout's), not by shape and position


@dataclass(frozen=True)
class Layouts:
    """A launch's block accesses as the compiler lays them out (:mod:`kernelgen.gpu.layouts`):
    per access path, a number for the thread that touches each position of its block (equal
    exactly where every compiled variant gives one thread), and the paths of the reductions and
    scans that pass a barrier in every variant."""

    threads: Mapping[str, torch.Tensor]
    barriers: frozenset[str] = field(default_factory=frozenset)
    classes: tuple[tuple[int, ...], ...] = ()  # each number's thread in each variant (the first unspecialized)


class ProgramOrder:
    """Per output element: the last store's and load's program, barrier count and lane."""

    def __init__(self, shapes: Mapping[str, Sequence[int]], programs: int, threads: int = 128,
                 layouts: Layouts | None = None, feeding: Mapping[str, frozenset[str]] | None = None) -> None:
        """``threads``: each program's (32 times its num_warps); ``layouts``: the module's docstring;
        ``feeding``: per write's path, the loads whose values reach it
        (:func:`kernelgen.interp.replicated.loads_feeding`), with ``layouts``."""
        self.shapes_of = {name: tuple(shape) for name, shape in shapes.items()}
        self.programs = programs
        self.threads = threads
        self.layouts = layouts.threads if layouts is not None else {}
        self.classes = layouts.classes if layouts is not None else ()
        self.feeding = feeding or {}
        self.load_paths: dict[str, int] = {}
        # With layouts, per output element: the thread of its last load since the barrier and that load's path.
        self.load_threads: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
        self.barriers = layouts.barriers if layouts is not None else frozenset()
        self.passed: torch.Tensor | None = None  # barriers each program has passed; None: none yet
        self.shapes: dict[tuple[int, ...], int] = {}
        self.stores: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
        self.loads: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
        self.updates: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}  # atomic updates
        self.slots: dict[str, torch.Tensor] = {}

    def lanes(self, shape: Sequence[int], positions: torch.Tensor, path: str | None = None) -> torch.Tensor:
        """The lanes of an access of block ``shape`` at ``path`` (``positions``: each accessed
        element's flat position in its program's block), as two rows: its block shape's number
        and its position there, and the thread that touches it where the access has a layout
        (else the first row again). A write's thread is judged against the writes and loads after
        it, and against the loads before it, except a load that feeds it (``feeding``), which it
        is judged against by position: the compiler moves that value between their layouts first,
        so the write waits for the load, and shape and position keep such a pair apart where they
        must."""
        code = self.shapes.setdefault(tuple(shape), len(self.shapes))
        by_shape = positions.to(torch.int32) + (code << _POSITION_BITS)
        threads = self.layouts.get(path) if path is not None else None
        if threads is None or threads.numel() != math.prod(shape):
            return by_shape.expand(2, -1)  # one row twice, without a copy
        code = self.shapes.setdefault(_THREADS, len(self.shapes))
        return torch.stack([by_shape, threads[positions.long()] + (code << _POSITION_BITS)])

    def barrier(self, programs: torch.Tensor) -> None:
        """``programs`` (linear ids) pass a barrier: their earlier accesses are visible to all
        their threads."""
        if self.passed is None:
            self.passed = torch.zeros(self.programs, dtype=torch.int32)
        self.passed[programs] += 1

    def _epochs(self, programs: torch.Tensor) -> torch.Tensor:
        if self.passed is None:
            return torch.zeros(programs.shape, dtype=torch.int32)
        return self.passed[programs.long()]

    def loaded(self, name: str, offsets: torch.Tensor, programs: torch.Tensor, lanes: torch.Tensor,
               path: str, describe, every: bool = False) -> None:
        """Program ``programs[i]``'s lane ``lanes[:, i]`` (:meth:`lanes`) reads element
        ``offsets[i]`` (``every``: a replicated block's load whose value other threads use, from
        every thread)."""
        epochs = self._epochs(programs)
        positions, threads = lanes[0], lanes[1]
        readers = torch.full_like(threads, _EVERY) if every else threads
        self._hazard(self.stores, name, offsets, programs, epochs, readers, path, describe, "loads", "stored")
        self._hazard(self.updates, name, offsets, programs, epochs, readers, path, describe, "loads",
                     "atomically updated")
        if name not in self.loads:
            self.loads[name] = self._record(name)
        program, epoch, lane = self.loads[name]
        # Loaded again by this program since its barrier from another lane: from several.
        again = (program[offsets] == programs) & (epoch[offsets] == epochs) & (lane[offsets] != positions)
        program[offsets], epoch[offsets], lane[offsets] = programs.to(program.dtype), epochs, positions
        lane[offsets[again]] = _MANY
        shared = self._shared(name, offsets, positions)
        lane[offsets[shared]] = _MANY
        if self.layouts:
            if name not in self.load_threads:
                numel = math.prod(self.shapes_of[name])
                self.load_threads[name] = (torch.zeros(numel, dtype=torch.int32), torch.zeros(numel, dtype=torch.int32))
            thread, where = self.load_threads[name]
            thread[offsets], where[offsets] = readers, self.load_paths.setdefault(path, len(self.load_paths))
            thread[offsets[again | shared]] = _MANY

    def stored(self, name: str, offsets: torch.Tensor, programs: torch.Tensor, lanes: torch.Tensor,
               path: str, describe) -> None:
        """Program ``programs[i]``'s lane ``lanes[:, i]`` (:meth:`lanes`) writes element ``offsets[i]``."""
        epochs = self._epochs(programs)
        threads = lanes[1]
        self._hazard(self.stores, name, offsets, programs, epochs, threads, path, describe, "stores", "stored")
        self._after_loads(name, offsets, programs, epochs, lanes, path, describe, "stores")
        self._hazard(self.updates, name, offsets, programs, epochs, threads, path, describe, "stores",
                     "atomically updated")
        self._keep(self.stores, name, offsets, programs, epochs, threads)

    def updated(self, name: str, offsets: torch.Tensor, programs: torch.Tensor, lanes: torch.Tensor,
                path: str, describe, reads_back: bool = False) -> None:
        """Program ``programs[i]``'s lane ``lanes[:, i]`` (:meth:`lanes`) updates element
        ``offsets[i]`` atomically (``reads_back``: a read of what other lanes' atomics made,
        against them too)."""
        epochs = self._epochs(programs)
        threads = lanes[1]
        if reads_back:
            self._hazard(self.updates, name, offsets, programs, epochs, threads, path, describe,
                         "reads back atomically", "atomically updated")
        self._hazard(self.stores, name, offsets, programs, epochs, threads, path, describe, "atomically updates",
                     "stored")
        self._after_loads(name, offsets, programs, epochs, lanes, path, describe, "atomically updates")
        self._keep(self.updates, name, offsets, programs, epochs, threads)

    def _after_loads(self, name: str, offsets: torch.Tensor, programs: torch.Tensor, epochs: torch.Tensor,
                     lanes: torch.Tensor, path: str, describe, doing: str) -> None:
        """A write against the loads of its elements since the barrier: by position where a load
        feeds the write (its value is moved between their layouts first: the write waits for it),
        by thread elsewhere (:meth:`lanes`)."""
        if name not in self.loads:
            return
        if name not in self.load_threads:  # no layouts: by position
            self._hazard(self.loads, name, offsets, programs, epochs, lanes[0], path, describe, doing, "loaded")
            return
        program, epoch, lane = self.loads[name]
        thread, where = self.load_threads[name]
        fed = torch.tensor([code for load, code in self.load_paths.items() if load in self.feeding.get(path, ())],
                           dtype=torch.int32)
        by_data = torch.isin(where[offsets], fed)
        before = torch.where(by_data, lane[offsets], thread[offsets])
        self._hazard({name: (program[offsets], epoch[offsets], before)}, name, torch.arange(offsets.numel()),
                     programs, epochs, torch.where(by_data, lanes[0], lanes[1]), path, describe, doing, "loaded",
                     elements=offsets)

    def _keep(self, records: dict, name: str, offsets: torch.Tensor, programs: torch.Tensor, epochs: torch.Tensor,
              lanes: torch.Tensor) -> None:
        """These accesses as the last of their kind on their elements."""
        if name not in records:
            records[name] = self._record(name)
        program, epoch, lane = records[name]
        program[offsets], epoch[offsets], lane[offsets] = programs.to(program.dtype), epochs, lanes

    def _record(self, name: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        numel = math.prod(self.shapes_of[name])
        dtype = torch.int32 if self.programs < 2**31 else torch.int64
        return (torch.full((numel,), _NONE, dtype=dtype), torch.zeros(numel, dtype=torch.int32),
                torch.zeros(numel, dtype=torch.int32))

    def _shared(self, name: str, offsets: torch.Tensor, lanes: torch.Tensor) -> torch.Tensor:
        """Which of these accesses' elements other lanes of the same access read too."""
        count = offsets.numel()
        if count < 2:
            return torch.zeros(count, dtype=torch.bool)
        if name not in self.slots:
            self.slots[name] = torch.zeros(math.prod(self.shapes_of[name]), dtype=torch.int64)
        slots = self.slots[name]
        order = torch.arange(count, dtype=torch.int64)
        slots[offsets] = order
        winner = slots[offsets]
        return (winner != order) & (lanes[winner] != lanes)

    def _hazard(self, records: dict, name: str, offsets: torch.Tensor, programs: torch.Tensor,
                epochs: torch.Tensor, lanes: torch.Tensor, path: str, describe, doing: str, did: str,
                elements: torch.Tensor | None = None) -> None:
        """``elements``: the elements ``offsets`` index into ``records`` stand for (the offsets by default)."""
        if name not in records:
            return
        program, epoch, lane = records[name]
        before = lane[offsets]
        bad = (program[offsets] == programs) & (epoch[offsets] == epochs) & (before != lanes)
        if not any_true(bad):
            return
        i = int(bad.nonzero()[0, 0])
        element = list(unravel(int((offsets if elements is None else elements)[i]), self.shapes_of[name]))
        by = "several lanes" if int(before[i]) == _MANY else self._lane(int(before[i]), True)
        laid_out = int(lanes[i]) >> _POSITION_BITS == self.shapes.get(_THREADS)
        why = ("Triton lays out each access on threads of its own (by its pointer's contiguity and dtype)" if laid_out
               else "another of the program's threads may own that lane")
        raise InterpreterError(Diagnostic(
            path, "missing_barrier",
            f"{describe(int(programs[i]))} {doing} {name}{element} from {self._lane(int(lanes[i]), True)} after "
            f"{by} {did} it, with no barrier between: {why}, and without a barrier its access is not ordered with "
            f"this one; put a barrier statement between them"))

    def _lane(self, lane: int, named: bool = False) -> str:
        """A lane as ``position of shape`` (``named``: as ``lane position of shape``)."""
        if lane == _EVERY:
            return f"every thread (a replicated block: fewer elements than the program's {self.threads} threads)"
        if named:
            described = self._lane(lane)
            return described if described.startswith("thread") else f"lane {described}"
        shape = next(s for s, code in self.shapes.items() if code == lane >> _POSITION_BITS)
        if shape == _THREADS:  # its thread in each variant (kernelgen.gpu.layouts)
            threads = self.classes[lane & ((1 << _POSITION_BITS) - 1)]
            if len(set(threads)) == 1:
                return f"thread {threads[0]}"
            return f"thread {threads[0]} ({', '.join(map(str, threads[1:]))} at sizes that are multiples of 16)"
        position = unravel(lane & ((1 << _POSITION_BITS) - 1), shape)
        return f"{list(position)} of a {list(shape)} block"


def unravel(offset: int, shape: Sequence[int]) -> tuple[int, ...]:
    """A flat offset as an index of ``shape`` (row-major)."""
    index = []
    for extent in reversed(shape):
        offset, rest = divmod(offset, max(extent, 1))
        index.append(rest)
    return tuple(reversed(index))
