"""The active lanes of one memory access: which buffer each points into, at which offset, and
whether every one lies inside it (``out_of_bounds`` otherwise).

An access is a block of pointers with a leading program axis (``[programs, *block]``) and a
lane mask. Its active lanes are found once, as flat positions in that block, and everything
else (offsets, values, program ids, lane numbers) is taken at those positions only: a large
draw's blocks are mostly masked (a 1024-lane block over a row of 3 elements), and judging the
bounds or gathering over every lane, as a full-block boolean index does several times over,
cost more than the access itself. Lanes keep their row-major order, so the first faulting lane
found is the one a scan of the whole block would find first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from kernelgen.errors import Diagnostic, InterpreterError
from kernelgen.interp.barrier import unravel
from kernelgen.interp.masks import all_true, positions


@dataclass
class Lanes:
    """The active lanes of an access that point into buffer ``index``: their flat positions in
    the ``[programs, *block]`` access (None: every lane of the block) and the element offset
    each points at (in position order)."""

    index: int
    positions: torch.Tensor | None
    offsets: torch.Tensor

    def take(self, values: torch.Tensor) -> torch.Tensor:
        """``values`` (``[programs, *block]``, any strides) at these lanes, flat."""
        if self.positions is None:
            return values.reshape(-1)
        return torch.take(values, self.positions)

    def put(self, out: torch.Tensor, values: torch.Tensor) -> None:
        """Write ``values`` (flat, in lane order) into these lanes of the contiguous ``out``."""
        if self.positions is None:
            out.view(-1).copy_(values)
        else:
            out.view(-1)[self.positions] = values

    def rows(self, count: int, block: int) -> torch.Tensor:
        """The program row (in the chunk) of each lane, of ``count`` rows of ``block`` lanes."""
        if self.positions is None:
            return torch.arange(count).repeat_interleave(block)
        return self.positions // block

    def in_block(self, count: int, block: int) -> torch.Tensor:
        """Each lane's position within its program's block."""
        if self.positions is None:
            return torch.arange(block).repeat(count)
        return self.positions % block


def _distinct(values: torch.Tensor) -> torch.Tensor:
    """The memory behind ``values``: an expanded (stride-0) axis reduced to its one element."""
    return values[tuple(slice(0, 1) if stride == 0 else slice(None) for stride in values.stride())]


def select(base: torch.Tensor, offset: torch.Tensor, active: torch.Tensor | None, sizes: Sequence[int],
           names: Sequence[str], programs: torch.Tensor, path: str, what: str,
           buffer: int | None = None) -> list[Lanes]:
    """The active lanes of an access grouped by buffer (increasing), after checking that every
    one lies inside its buffer (``sizes``: each buffer's elements, ``names`` for the message).
    ``base``/``offset``: the pointers (``[programs, *block]``, any strides); ``active``: the lane
    mask of that shape, None when every lane is active; ``programs``: each row's program id;
    ``buffer``: the one buffer every lane points into, where the pointer's origin says so."""
    found = None if active is None else positions(active)
    if found is not None and found.numel() in (0, active.numel()):
        if found.numel() == 0:
            return []
        found = None  # every lane is active: no positions to take at
    if buffer is None:
        common = _distinct(base)
        first = int(common.reshape(-1)[0])
        buffer = first if all_true(common == first) else None  # most pointer blocks point into one tensor
    if buffer is not None:
        groups = [(buffer, found)]
    else:
        where = base.reshape(-1) if found is None else torch.take(base, found)
        lanes = torch.arange(where.numel()) if found is None else found
        groups = [(index, lanes[where == index]) for index in torch.unique(where).tolist()]
    selected = []
    for index, lanes in groups:
        offsets = offset.reshape(-1) if lanes is None else torch.take(offset, lanes)
        low, high = (int(v) for v in torch.aminmax(offsets)) if offsets.numel() else (0, 0)
        if low < 0 or high >= sizes[index]:
            at = int(positions((offsets < 0) | (offsets >= sizes[index]))[0])
            lane = at if lanes is None else int(lanes[at])
            where = unravel(lane, (programs.numel(),) + tuple(base.shape[1:]))
            raise InterpreterError(Diagnostic(
                path, "out_of_bounds",
                f"{what} at offset {int(offsets[at])} of {names[index]!r}, which has {sizes[index]} elements "
                f"(program {int(programs[where[0]])}, lane {list(where[1:])})"))
        selected.append(Lanes(index, lanes, offsets))
    return selected
