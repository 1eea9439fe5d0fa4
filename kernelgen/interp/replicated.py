"""Loads of replicated blocks whose values other threads use (for :mod:`kernelgen.interp.barrier`).

A block of fewer elements than its program has threads (a scalar, a [1] block, 64 elements under
4 warps) is held by several threads each: Triton stores it from one of them (its redundant-data
mask: a scalar from thread 0) and every holder loads it. A program that reads back such a block
it stored gets, in the storing thread, its own value, and in the others whatever the memory held
before, unless a barrier lies between. That is harmless while only the storing thread's copy
reaches memory: a scalar read-modify-write, or a block stored again at its own positions. It is
not once the value meets a block of another shape, whose elements other threads store (a row's
mean and rstd stored as scalars, loaded back and broadcast over the row: red-team round 32), or
steers a branch or a loop every thread takes.

:func:`broadcast_loads` finds those loads statically: it follows each replicated load's value
through the lets, carries and if results it flows into, to the stores, atomics and tile stores
of another shape, and to the conditions and loop bounds, it meets.

:func:`loads_feeding` follows every load the same way, to the stores and atomics whose pointer,
value or mask it reaches: such a write waits for the load, in whatever threads each is laid out
(the compiler moves the value between their layouts first), so only a write that no load of the
element feeds (a constant: clearing a scratch row after reading it, red-team round 34) may land
before another thread's load of it.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

from kernelgen.check.checked import child
from kernelgen.check.sequence import nodes
from kernelgen.lang import nodes as L


_FOUND: dict[tuple[Any, ...], tuple[Any, Any]] = {}  # by what is asked of which checked kernel (kept alive)


def _once(checked: Any, key: tuple[Any, ...], find: Callable[[], Any]) -> Any:
    """``find()`` for a checked kernel, found once per kernel and ``key`` (each chunk of programs asks)."""
    key = (id(checked), *key)
    if key not in _FOUND or _FOUND[key][0] is not checked:
        if len(_FOUND) > 256:
            _FOUND.clear()
        _FOUND[key] = (checked, find())
    return _FOUND[key][1]


def broadcast_loads_of(checked: Any, num_warps: int) -> frozenset[str]:
    """:func:`broadcast_loads` of a checked kernel (a launch) under ``num_warps``, found once per kernel."""
    return _once(checked, ("broadcast", num_warps),
                 lambda: broadcast_loads(checked.kernel.body, checked.types, 32 * num_warps))


def loads_feeding(checked: Any) -> dict[str, frozenset[str]]:
    """Per store or atomic of a checked kernel (a launch), the loads whose values reach its pointer,
    value or mask (the module's docstring), found once per kernel."""
    def find() -> dict[str, frozenset[str]]:
        walk = _Walk(checked.types, 0, tracks=lambda path: True)
        walk.block(checked.kernel.body, "/body")
        walk.block(checked.kernel.body, "/body")  # twice: a carry's value reaches the statements before it
        return {path: frozenset(loads) for path, loads in walk.feeding.items()}

    return _once(checked, ("feeding",), find)


def broadcast_loads(body: list, types: Mapping[str, Any], threads: int) -> frozenset[str]:
    """The paths of the loads in ``body`` (at ``/body``) of blocks of fewer elements than
    ``threads`` whose values reach another shape's store or a condition (the module's docstring)."""
    walk = _Walk(types, threads)
    walk.block(body, "/body")
    walk.block(body, "/body")  # twice: a carry's value reaches the statements before it in the next trip
    return frozenset(walk.escaping)


class _Walk:
    def __init__(self, types: Mapping[str, Any], threads: int, tracks: Callable[[str], bool] | None = None) -> None:
        """``tracks``: which loads (by path) to follow; the replicated ones by default."""
        self.types, self.threads = types, threads
        self.tracks = tracks or self._replicated
        self.tainted: dict[str, set[str]] = {}  # a name: the tracked loads its value derives from
        self.escaping: set[str] = set()
        self.feeding: dict[str, set[str]] = {}  # a store's or atomic's path: the tracked loads reaching it

    def sources(self, item: object, path: str) -> set[str]:
        """The tracked loads ``item``'s value derives from: those in it, and the names it reads."""
        found: set[str] = set()
        for node, where in nodes(item, path):
            if isinstance(node, L.Load) and self.tracks(where):
                found.add(where)
            for _, value in L.node_fields(node):
                for name in value if isinstance(value, list) else [value]:
                    if isinstance(name, str) and name in self.tainted:
                        found |= self.tainted[name]
        if isinstance(item, str) and item in self.tainted:
            found |= self.tainted[item]
        return found

    def _replicated(self, path: str) -> bool:
        kind = self.types.get(path)
        shape = getattr(kind, "shape", None)
        return shape is not None and math.prod(shape) < self.threads

    def _shape(self, path: str) -> tuple[int, ...] | None:
        shape = getattr(self.types.get(path), "shape", None)
        return None if shape is None else tuple(shape)

    def _reach(self, loads: set[str], shape: tuple[int, ...] | None) -> None:
        """``loads`` flow into an access of ``shape`` (None: a condition, or any other thread's)."""
        self.escaping |= {load for load in loads if shape is None or self._shape(load) != shape}

    def block(self, statements: list, path: str) -> None:
        for i, statement in enumerate(statements):
            self.statement(statement, child(path, i))

    def statement(self, s: object, path: str) -> None:
        if isinstance(s, L.Let):
            self.tainted[s.name] = self.sources(s.value, child(path, "value"))
        elif isinstance(s, (L.Store, L.Atomic)):
            shape, found = self._shape(child(path, "ptr")), self.sources(s, path)
            self._reach(found, shape)
            self.feeding.setdefault(path, set()).update(found)
            if isinstance(s, L.Atomic) and s.name is not None:
                self.tainted[s.name] = found
        elif isinstance(s, L.TileStore):
            self._reach(self.sources(s, path), None)
        elif isinstance(s, L.For):
            for field in ("start", "stop", "step"):
                self._reach(self.sources(getattr(s, field), child(path, field)), None)
            for i, carry in enumerate(s.carry):  # kept from the first walk: the last trip's value enters the next
                self.tainted[carry.name] = (self.tainted.get(carry.name, set())
                                            | self.sources(carry.init, child(child(child(path, "carry"), i), "init")))
            self.block(s.body, child(path, "body"))
            for i, carry in enumerate(s.carry):
                self.tainted[carry.name] |= self.sources(carry.next, child(child(child(path, "carry"), i), "next"))
        elif isinstance(s, L.If):
            self._reach(self.sources(s.cond, child(path, "cond")), None)
            self.block(s.then, child(path, "then"))
            self.block(s.else_, child(path, "else"))
            for i, result in enumerate(s.results):
                where = child(child(path, "results"), i)
                self.tainted[result.name] = (self.sources(result.then, child(where, "then"))
                                             | self.sources(result.else_, child(where, "else")))
