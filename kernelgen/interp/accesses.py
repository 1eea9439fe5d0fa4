"""Which program of a launch wrote and read each output element: write tracking, races,
reads of memory nothing wrote, and duplicate lanes.

The interpreter runs a grid's programs in chunks, statement by statement, which is one of the
orders a GPU may choose; a kernel whose result depends on that order is wrong even where this
order happens to give the reference's answer. Atomics of one kind (all adds, all maxima...)
from different programs on one element are ordered by the hardware and commute (their old
values may still depend on the order: :mod:`kernelgen.interp.orders` runs such launches under
other orders too); plain stores and loads are not, so a launch has one meaning only when

* every output element is stored by at most one program (one program may store it again),
* an element one program stores is loaded by no other program of the same launch, and
* an element one program stores or loads is atomically updated by no other (an atomic is a
  write: a plain read-modify-write across programs is the race atomics exist to avoid), and
* an element one program updates atomically at ``cta`` scope is updated atomically by no
  other (PTX makes two atomics atomic to each other only when each one's scope includes
  the other: a cta-scoped one is atomic among the program's own threads only), and
* different programs update an element with one atomic op only (an ``xchg`` that "initializes"
  what others add to, a ``max`` followed by another program's ``xchg``: which lands first is the
  schedule's choice), and the ``xchg`` or ``cas`` of several programs on one element write one
  value (different values: the last exchange, the first successful compare-and-swap, wins; a
  ``cas`` whose value is its compare value writes nothing new: an unmasked lane's no-op).

:class:`AccessLog` records, per output element, the program that stored it, the lowest and
highest programs that loaded it and the lowest and highest that updated it atomically (per
atomic op once a second op appears), and raises ``race`` (naming both programs and the
element) at the first access that breaks a rule, whichever order the two accesses ran in.
Masked-off lanes are never accesses. Two more facts are judged per element:

* **read before write**: memory a launch gets is garbage on a GPU unless an earlier launch wrote
  it or it is filled (an output's ``init``, a ``zero`` scratch). A load of an element that
  neither that nor a store of this launch up to the load wrote, or an atomic on one (an atomic
  reads the element; an ``atomic_xchg`` whose old values are not bound is a store), is
  ``read_before_write``: NaN, the poison the interpreter fills with, acts as the identity of
  ``where(old > new, old, new)``, and the integer minimum is max's, so such a kernel would pass
  on the poison. The first one is reported when the launch ends, so that a race found later
  (the element written by another program) is named instead;
* **duplicate lanes**: active lanes of one store that hit one element with different values
  (``duplicate_store``): which lane's write lands depends on the GPU's threads (and here on
  torch's). Lanes writing the same value are one write.

The written-by record also says which elements nothing wrote, for every dtype: a poison value
can equal the right answer (``True`` for a bool output), a record cannot. An output declared
with an ``init`` fill has every element defined from the start, so all of it counts as written.

Inputs are read-only (a store into one is its own error), so only outputs are tracked; the
reader and atomic records exist only for outputs a kernel loads or updates atomically.
"""

from __future__ import annotations

import math
from typing import AbstractSet as Set, Mapping, Sequence

import torch

from kernelgen.errors import Diagnostic, InterpreterError
from kernelgen.interp.barrier import Layouts, ProgramOrder, unravel as _unravel
from kernelgen.interp.memorder import MemoryOrder
from kernelgen.interp.proxies import TileProxies
from kernelgen.interp.masks import any_true

_NONE = -1  # no program
_CTA = "cta scope"  # the atomics at cta scope: a kind of their own for the range records
_SPLIT = ("atomic_xchg", "atomic_cas")  # atomics that must write one value per element


def bit_pattern(values: torch.Tensor) -> torch.Tensor:
    """Values as integers of their bits (NaN equals the same NaN; -0.0 differs from 0.0)."""
    if values.dtype.is_floating_point:
        width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[values.dtype.itemsize]
        return values.contiguous().view(width)
    return values


class AccessLog:
    """Per output element: the program that wrote it, and the range of programs that read it."""

    def __init__(self, outputs: Mapping[str, torch.Tensor], grid: Sequence[int],
                 initialised: Set[str] = frozenset(), defined: Mapping[str, torch.Tensor] | None = None,
                 observes: bool = False, tiles: Set[str] = frozenset(), threads: int = 128,
                 layouts: Layouts | None = None, feeding: Mapping[str, frozenset[str]] | None = None) -> None:
        """``defined``: per output, where an element holds a value before this launch (an earlier
        launch wrote it, a zero fill); outputs in ``initialised`` (an ``init`` fill) hold one
        everywhere. ``observes``: the kernel binds atomics' old values, so their memory order is
        judged (:class:`MemoryOrder`). ``tiles``: the outputs tile accesses name (:class:`TileProxies`).
        ``threads``: each program's (32 times num_warps), ``layouts`` its block accesses' threads
        and ``feeding`` the loads each write waits for (:class:`ProgramOrder`)."""
        self.grid = tuple(grid)
        self.initialised = set(initialised)
        self.shapes = {name: tuple(t.shape) for name, t in outputs.items()}
        # Program ids in 32 bits where they fit: the record is gathered and scattered per store.
        self.dtype = torch.int32 if math.prod(self.grid) < 2**31 else torch.int64
        self.writer = {name: torch.full((t.numel(),), _NONE, dtype=self.dtype) for name, t in outputs.items()}
        self.defined = {name: (torch.ones if name in self.initialised else torch.zeros)(t.numel(), dtype=torch.bool)
                        for name, t in outputs.items()}
        for name, mask in (defined or {}).items():
            if name in self.defined and name not in self.initialised:
                self.defined[name] = mask.reshape(-1)
        self.untouched = set(outputs)  # outputs no program has stored into or loaded from yet
        self.first_reader: dict[str, torch.Tensor] = {}
        self.last_reader: dict[str, torch.Tensor] = {}
        self.first_atomic: dict[str, torch.Tensor] = {}
        self.last_atomic: dict[str, torch.Tensor] = {}
        # Per output, per atomic op (and cta scope): its program range, None while it is the only
        # op there (its range is then the whole atomic range: no copy until a second op comes).
        self.kinds: dict[str, dict[str, tuple[torch.Tensor, torch.Tensor] | None]] = {}
        # Per output exchanged or compare-and-swapped into: the first value's bits, whether one
        # was recorded, whether another value came.
        self.swapped: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
        self.lane_slots: dict[str, torch.Tensor] = {}
        self.unread: Diagnostic | None = None  # the first read before write, reported at the end
        self.order = ProgramOrder(self.shapes, math.prod(self.grid), threads, layouts, feeding)  # within a program: barriers
        self.memory = MemoryOrder(self.shapes, math.prod(self.grid)) if observes else None  # between programs
        self.proxies = TileProxies(self.shapes, tiles) if tiles else None  # tile against plain accesses

    # -- the accesses -------------------------------------------------------------------------

    def stored(self, name: str, offsets: torch.Tensor, programs: torch.Tensor, path: str,
               values: torch.Tensor | None = None, lanes: torch.Tensor | None = None, tile: bool = False) -> None:
        """Program ``programs[i]`` writes ``values[i]`` (when given) to element ``offsets[i]`` of
        output ``name`` (active lanes; ``lanes``: their :meth:`ProgramOrder.lanes`, to judge
        barriers; ``tile``: a tile_store's)."""
        writer = self.writer[name]
        programs = programs.to(self.dtype)
        if name in self.untouched:
            self.untouched.discard(name)  # the first access: nothing to clash with but itself
        else:
            before = writer[offsets]
            self._clash(name, offsets, before, programs, (before != _NONE) & (before != programs), "written", path)
        self._others(self.first_reader, self.last_reader, name, offsets, programs, "read", path)
        self._others(self.first_atomic, self.last_atomic, name, offsets, programs, "updated atomically", path)
        self._one_lane_each(name, offsets, programs, path, values)
        if lanes is not None:  # after the lanes of this store: a duplicate among them is named first
            self.order.stored(name, offsets, programs, lanes, path, self.describe)
        if self.proxies is not None:
            self.proxies.access(name, offsets, programs, path, tile, "writes", lambda: self._written(name, offsets),
                                self.describe)
            if tile:
                self.proxies.wrote(name, offsets)
        writer[offsets] = programs

    def _one_lane_each(self, name: str, offsets: torch.Tensor, programs: torch.Tensor, path: str,
                       values: torch.Tensor | None) -> None:
        """Lanes of this store on one element: of two programs a race, of one program with
        different values ``duplicate_store``. Found by scattering lane numbers: a lane that does
        not read its own number back shares its element with the lane that does."""
        count = offsets.numel()
        if count < 2:
            return
        if name not in self.lane_slots:
            self.lane_slots[name] = torch.zeros(self.writer[name].numel(), dtype=torch.int64 if count >= 2**31
                                                else torch.int32)
        slots = self.lane_slots[name]
        lanes = torch.arange(count, dtype=slots.dtype)
        slots[offsets] = lanes
        landed = slots[offsets]
        lost = landed != lanes
        if not any_true(lost):
            return
        winner = landed[lost].long()
        offsets, this, other = offsets[lost], programs[lost], programs[winner]
        self._clash(name, offsets, other, this, other != this, "written", path)
        if values is None:
            return
        mine, theirs = bit_pattern(values[lost]), bit_pattern(values[winner])
        differ = mine != theirs
        if any_true(differ):
            i = int(differ.nonzero()[0, 0])
            element = list(_unravel(int(offsets[i]), self.shapes[name]))
            raise InterpreterError(Diagnostic(
                path, "duplicate_store",
                f"{self.describe(int(this[i]))} stores {name}{element} from several lanes of one store with "
                f"different values ({values[lost][i].item():.6g} and {values[winner][i].item():.6g}): which "
                f"lane's write lands is up to the GPU's threads; store each element from one lane (mask the "
                f"others) or reduce the values first"))

    def loaded(self, name: str, offsets: torch.Tensor, programs: torch.Tensor, path: str,
               lanes: torch.Tensor | None = None, tile: bool = False, every: bool = False) -> None:
        """Program ``programs[i]`` reads element ``offsets[i]`` of output ``name`` (active lanes;
        ``lanes`` and ``tile`` as :meth:`stored`'s; ``every``: :meth:`ProgramOrder.loaded`'s)."""
        self.untouched.discard(name)
        programs = programs.to(self.dtype)
        if lanes is not None:
            self.order.loaded(name, offsets, programs, lanes, path, self.describe, every)
        before = self.writer[name][offsets]
        self._clash(name, offsets, before, programs, (before != _NONE) & (before != programs), "written", path,
                    reading=True)
        self._others(self.first_atomic, self.last_atomic, name, offsets, programs, "updated atomically", path,
                     reading=True)
        self._unwritten(name, offsets, programs, before, path, "loads")
        if self.proxies is not None:
            self.proxies.access(name, offsets, programs, path, tile, "reads", lambda: self._written(name, offsets),
                                self.describe)
        self._record(self.first_reader, self.last_reader, name, offsets, programs)

    def atomic(self, name: str, offsets: torch.Tensor, programs: torch.Tensor, path: str,
               within_program: bool = False, op: str = "atomic_add", values: torch.Tensor | None = None,
               reads: bool = True, compare: torch.Tensor | None = None, sem: str = "acq_rel",
               bound: bool = False, lanes: torch.Tensor | None = None, one_thread: bool = False) -> None:
        """Program ``programs[i]`` updates element ``offsets[i]`` of output ``name`` atomically
        with ``op`` (writing ``values[i]``, for an exchange or compare-and-swap, whose lanes with
        ``compare[i] == values[i]`` change nothing); ``reads``: the atomic reads the element (all
        but an ``atomic_xchg`` whose old values are unbound);
        ``within_program``: at ``cta`` scope, atomic only among the program's own threads, so
        another program's atomic on the element races with it as a plain access would; ``sem``
        and ``bound`` (its old values are used): for :class:`MemoryOrder`, and ``one_thread`` (a
        scalar atomic: one thread of each program issues it); ``lanes`` as :meth:`stored`'s."""
        self.untouched.discard(name)
        programs = programs.to(self.dtype)
        before = self.writer[name][offsets]
        self._clash(name, offsets, before, programs, (before != _NONE) & (before != programs), "written", path,
                    doing="updates atomically")
        self._others(self.first_reader, self.last_reader, name, offsets, programs, "read", path,
                     doing="updates atomically")
        if reads:
            self._unwritten(name, offsets, programs, before, path, f"updates with {op} (an atomic reads it)")
        if self.proxies is not None:
            self.proxies.access(name, offsets, programs, path, False, f"updates with {op}",
                                lambda: self._written(name, offsets), self.describe)
        self._kind(name, op, offsets, programs, path)
        self._record(self.first_atomic, self.last_atomic, name, offsets, programs)
        if within_program:
            # Checked after recording: the other programs of this very statement count too.
            self._kind(name, _CTA, offsets, programs, path, check=False)
            self._others(self.first_atomic, self.last_atomic, name, offsets, programs, "updated atomically", path,
                         doing="updates atomically at cta scope (atomic within one program only)")
        elif _CTA in self.kinds.get(name, {}):
            first, last = self._range(name, _CTA)
            self._others({name: first}, {name: last}, name, offsets, programs,
                         "updated atomically at cta scope (atomic within one program only)", path,
                         doing="updates atomically")
        if lanes is not None:
            self.order.updated(name, offsets, programs, lanes, path, self.describe,
                               reads_back=bound and (one_thread or _leaves_unchanged(op, values)))
        if self.memory is not None:
            self.memory.atomic(name, offsets, programs, path, sem, bound, self.describe, one_thread)
        if op in _SPLIT and values is not None:
            if compare is not None:  # a compare-and-swap of its compare value writes nothing new
                moves = bit_pattern(compare) != bit_pattern(values)
                offsets, programs, values = offsets[moves], programs[moves], values[moves]
            self._one_value(name, op, offsets, programs, path, values)

    def barrier(self, programs: torch.Tensor) -> None:
        """These programs pass a barrier (:class:`ProgramOrder`, :class:`MemoryOrder`)."""
        self.order.barrier(programs)
        if self.memory is not None:
            self.memory.barrier(programs)

    def finish(self) -> None:
        """The launch has ended: a read of memory nothing wrote, found on the way, fails now."""
        if self.unread is not None:
            raise InterpreterError(self.unread)

    # -- what a launch leaves -------------------------------------------------------------------

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

    # -- the rules ------------------------------------------------------------------------------

    def _written(self, name: str, offsets: torch.Tensor) -> torch.Tensor:
        """Where this launch stored or atomically updated these elements so far."""
        done = self.writer[name][offsets] != _NONE
        return done | (self.last_atomic[name][offsets] != _NONE) if name in self.last_atomic else done

    def _unwritten(self, name: str, offsets: torch.Tensor, programs: torch.Tensor, writers: torch.Tensor,
                   path: str, doing: str) -> None:
        """Note the first read of an element nothing wrote (``writers``: its writers now)."""
        if self.unread is not None:
            return
        missing = ~self.defined[name][offsets] & (writers == _NONE)
        if name in self.last_atomic:
            missing &= self.last_atomic[name][offsets] == _NONE
        if not any_true(missing):
            return
        i = int(missing.nonzero()[0, 0])
        element = list(_unravel(int(offsets[i]), self.shapes[name]))
        self.unread = Diagnostic(
            path, "read_before_write",
            f"{self.describe(int(programs[i]))} {doing} {name}{element}, which nothing wrote before: no store of "
            f"this launch up to here, no earlier launch, no fill (a GPU's memory starts as whatever it held: "
            f"declare the output's init or the scratch zero, or store first)")

    def _range(self, name: str, op: str) -> tuple[torch.Tensor, torch.Tensor]:
        kept = self.kinds[name][op]
        return (self.first_atomic[name], self.last_atomic[name]) if kept is None else kept

    def _kind(self, name: str, op: str, offsets: torch.Tensor, programs: torch.Tensor, path: str,
              check: bool = True) -> None:
        """Record ``op``'s programs on these elements; with ``check``, another program's other op
        on one of them is a race."""
        kinds = self.kinds.setdefault(name, {})
        if check:
            for other_op in [k for k in kinds if k not in (op, _CTA)]:
                first, last = self._range(name, other_op)
                self._others({name: first}, {name: last}, name, offsets, programs,
                             f"updated with {other_op}", path, doing=f"updates with {op}",
                             rule="different programs may update an element with one atomic op only")
        if op not in kinds:
            if len([k for k in kinds if k != _CTA]) == 1 and op != _CTA:
                (only,) = [k for k in kinds if k != _CTA]
                if kinds[only] is None:  # it stops being the only op: its range is its own now
                    kinds[only] = (self.first_atomic[name].clone(), self.last_atomic[name].clone())
            alone = op != _CTA and not [k for k in kinds if k != _CTA]
            kinds[op] = None if alone else self._empty_range(name)
        if kinds[op] is not None:
            first, last = kinds[op]
            first.scatter_reduce_(0, offsets, programs, "amin")
            last.scatter_reduce_(0, offsets, programs, "amax")

    def _one_value(self, name: str, op: str, offsets: torch.Tensor, programs: torch.Tensor, path: str,
                   values: torch.Tensor) -> None:
        """Exchanges (compare-and-swaps) of several programs on one element write one value."""
        bits = bit_pattern(values).to(torch.int64)
        if name not in self.swapped:
            numel = self.writer[name].numel()
            self.swapped[name] = (torch.zeros(numel, dtype=torch.int64), torch.zeros(numel, dtype=torch.bool),
                                  torch.zeros(numel, dtype=torch.bool))
        kept, seen, varied = self.swapped[name]
        new = ~seen[offsets]
        kept[offsets[new]] = bits[new]
        seen[offsets] = True
        varied[offsets[kept[offsets] != bits]] = True  # (not |=: lanes on one element would race to set it)
        first, last = self._range(name, op)
        first, last = first[offsets], last[offsets]
        bad = varied[offsets] & (first != last)
        if any_true(bad):
            other = torch.where(first != programs, first, last)
            if op == "atomic_xchg":
                does, did, rule = "exchanges", "exchanged", "the last exchange wins"
            else:
                does, did, rule = "compare-and-swaps", "compare-and-swapped", "the first compare-and-swap wins"
            self._clash(name, offsets, other, programs, bad, f"{did} another value into", path,
                        doing=f"{does} a value into",
                        rule=f"{rule}, in an order the GPU picks: programs may {does.rstrip('s')} only one value into "
                             f"an element")

    def _empty_range(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        numel = self.writer[name].numel()
        return (torch.full((numel,), torch.iinfo(self.dtype).max, dtype=self.dtype),
                torch.full((numel,), _NONE, dtype=self.dtype))

    def _record(self, firsts: dict[str, torch.Tensor], lasts: dict[str, torch.Tensor], name: str,
                offsets: torch.Tensor, programs: torch.Tensor) -> None:
        """Widen the per-element program range of ``firsts``/``lasts`` by these accesses."""
        if name not in lasts:
            firsts[name], lasts[name] = self._empty_range(name)
        firsts[name].scatter_reduce_(0, offsets, programs, "amin")
        lasts[name].scatter_reduce_(0, offsets, programs, "amax")

    def _others(self, firsts: dict[str, torch.Tensor], lasts: dict[str, torch.Tensor], name: str,
                offsets: torch.Tensor, programs: torch.Tensor, other_did: str, path: str,
                reading: bool = False, doing: str | None = None, rule: str | None = None) -> None:
        """A race when a program other than this lane's is in the element's recorded range."""
        if name not in lasts:
            return
        first, last = firsts[name][offsets], lasts[name][offsets]
        other = torch.where(first != programs, first, last)
        self._clash(name, offsets, other, programs, (last != _NONE) & (other != programs), other_did, path,
                    reading=reading, doing=doing, rule=rule)

    def _clash(self, name: str, offsets: torch.Tensor, others: torch.Tensor, programs: torch.Tensor,
               bad: torch.Tensor, other_did: str, path: str, reading: bool = False,
               doing: str | None = None, rule: str | None = None) -> None:
        if not any_true(bad):
            return
        i = int(bad.nonzero()[0, 0])
        element = _unravel(int(offsets[i]), self.shapes[name])
        other, this = int(others[i]), int(programs[i])
        this_does = doing or ("reads" if reading else "writes")
        rule = rule or ("an element one program stores may be neither stored, loaded nor atomically updated by "
                        "another, and one that programs update atomically is not stored or loaded by another "
                        "(make every update of it atomic)")
        raise InterpreterError(Diagnostic(
            path, "race",
            f"race on {name}{list(element)}: {self.describe(this)} {this_does} the element "
            f"{self.describe(other)} has {other_did} in the same launch; {rule}"))

    def describe(self, program: int) -> str:
        """A program by its ids along the grid's axes (``program 3``, ``program (1, 2)``)."""
        g0, g1, _ = (self.grid + (1, 1, 1))[:3]
        ids = (program % g0, (program // g0) % g1, program // (g0 * g1))
        used = max((i + 1 for i, n in enumerate(self.grid) if n > 1), default=1)
        return f"program {ids[0]}" if used == 1 else f"program {tuple(ids[:used])}"


def _leaves_unchanged(op: str, values: torch.Tensor | None) -> bool:
    """Whether an atomic with these values changes no element it updates: an atomic load (add, or,
    xor of 0; and of all ones)."""
    if values is None or op not in ("atomic_add", "atomic_or", "atomic_xor", "atomic_and"):
        return False
    if op == "atomic_and":
        return not values.is_floating_point() and bool((values == -1).all())
    return bool((values == 0).all())
