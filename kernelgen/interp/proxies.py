"""A tile access and a plain access of one element in one launch: unordered on sm_90.

On sm_90 a ``tile_store`` or ``tile_load`` whose strides are 16-byte multiples is a TMA bulk copy
(``cp.async.bulk.tensor``), which runs in the GPU's async proxy; plain loads, stores and atomics
run in the generic proxy. The PTX memory model orders accesses to one location through different
proxies only with a proxy fence, and Triton 3.6 emits none for global memory: after a tile_store
it waits with ``cp.async.bulk.wait_group.read 0``, which waits until the copy has read its shared
memory, not until its writes reach global memory; before a tile_load it fences only the shared
memory the copy lands in (``fence.proxy.async.shared::cta``). Compiled here for sm_90, a chunked
row scan writing each chunk with tile_store and reading the last element back with a plain load
issues that load before the previous trip's copy was waited on; a copy-then-fill (tile_store of
``x``, then a plain store where the mask holds) may see the copy land last. Bulk copies are not
ordered among themselves either, short of a full ``wait_group``: a tile_load of what a
tile_store wrote may read what was there before.

The interpreter runs accesses in order and would show the new value; it judges the hazard
instead (``tile_proxy_order``): within a launch, an element a tile_store wrote may be accessed
again by no plain load, store or atomic and by no tile access, and a tile access may not touch
an element a plain store or atomic wrote. Whether a tile access is one TMA copy or pointer
accesses (strides not 16-byte multiples, a target below sm_90) depends on the sizes and the
target; a kernel must not lean on which. Reads before any write, and accesses in another launch
(a launch's end orders everything), are free. Accesses of different programs are the race
detector's first (:mod:`kernelgen.interp.accesses`); only outputs a tile access names are tracked.
"""

from __future__ import annotations

from typing import AbstractSet as Set, Callable, Mapping, Sequence

import torch

from kernelgen.check.sequence import nodes
from kernelgen.errors import Diagnostic, InterpreterError
from kernelgen.interp.barrier import unravel
from kernelgen.interp.masks import any_true
from kernelgen.lang import nodes as L


def tile_outputs(kernel: L.Kernel) -> frozenset[str]:
    """The names a ``tile_load`` or ``tile_store`` of ``kernel`` accesses."""
    return frozenset(node.base for node, _ in nodes(kernel.body, "/body")
                     if isinstance(node, (L.TileLoad, L.TileStore)))


class TileProxies:
    """Per output a tile access names: which elements a tile_store wrote in this launch."""

    def __init__(self, shapes: Mapping[str, Sequence[int]], names: Set[str]) -> None:
        self.shapes = {name: tuple(shapes[name]) for name in names if name in shapes}
        self.tiled = {name: torch.zeros(torch.Size(shape).numel(), dtype=torch.bool) for name, shape in self.shapes.items()}

    def access(self, name: str, offsets: torch.Tensor, programs: torch.Tensor, path: str, tile: bool, doing: str,
               written: Callable[[], torch.Tensor], describe: Callable[[int], str]) -> None:
        """Judge lanes of ``programs`` accessing ``offsets`` of output ``name`` (``tile``: by a tile
        access); ``written``: where this launch wrote those elements so far by any means (plain
        or tile), asked for a tile access only."""
        tiled = self.tiled.get(name)
        if tiled is None or offsets.numel() == 0:
            return
        if tile:
            bad = written()
            by_tile = tiled[offsets]
        else:
            bad = by_tile = tiled[offsets]
        if not any_true(bad):
            return
        i = int(bad.nonzero()[0, 0])
        element = list(unravel(int(offsets[i]), self.shapes[name]))
        earlier = "a tile_store" if bool(by_tile[i]) else "a plain store or atomic"
        raise InterpreterError(Diagnostic(path, "tile_proxy_order", (
            f"{describe(int(programs[i]))} {doing} {name}{element}, which {earlier} wrote earlier in this launch: a tile "
            f"access is a TMA copy on sm_90, unordered against the launch's other accesses of the element, so the "
            f"GPU may read the old value or land the writes in either order; keep the value in registers, or use "
            f"plain load/store for both")))

    def wrote(self, name: str, offsets: torch.Tensor) -> None:
        """A tile_store wrote these elements."""
        if name in self.tiled:
            self.tiled[name][offsets] = True
