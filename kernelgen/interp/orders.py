"""Program orders: the schedules the interpreter runs a launch under.

A GPU runs a launch's programs in any order and interleaving. The interpreter runs them in
*chunks*: a chunk's programs in lockstep (statement by statement, every program of the chunk
before the next statement; an ``if`` runs its then side for them all before its else side),
chunks one after another, each to completion. An order is a list of chunks:

* ``lockstep``: every program in increasing order (cut into chunks only to bound memory). This
  run's accesses are what the race detector judges and its result is what is compared with
  the reference;
* ``reversed``: the last program alone to completion, then the others in lockstep from the
  end: atomics' old values (tickets, a running total, the first compare-and-swap) come in the
  opposite order, and a program that reads back a total in the launch that adds to it sees
  only its own share;
* ``shuffled``: a seeded permutation, its first :data:`ALONE` programs each alone to completion
  (every program, one at a time, when the grid has at most :data:`ALL_ALONE` programs), the
  rest in lockstep in the permutation's order.

The lanes of one program's atomic statement reach memory in no defined order either (a GPU's
warps, and the lanes of one warp's atomic, are not ordered): lockstep applies them in row-major
order, ``reversed`` in the opposite order, ``shuffled`` in a seeded permutation of the block
(:meth:`Order.lanes`). Without it, tickets taken by one program's lanes came out ascending in
every order, and a kernel whose result needs them to (a stable rank by ticket, the lowest lane
winning a compare-and-swap) passed.

The race detector (:mod:`kernelgen.interp.accesses`) clears a launch that binds no atomic's old
values and neither exchanges nor compare-and-swaps: every element is then written by one
program, or updated by several with one commuting atomic op, and read only where no other
program of the launch writes it, so its result does not depend on the order but for float
rounding. A launch that binds old values (an atomic with a ``name``), or whose lanes exchange
or compare-and-swap (one program's lanes may write different values into one element; the
race detector holds only programs to one value), may be right in any order (a ticket that only
picks a free slot, the last program to arrive finishing a reduction) or not (tickets that must
come in index order, a total read back before the other programs added to it): it runs under
every order above, from the same state, with the second poison in memory nothing wrote, and
what the call returns must agree within the task's tolerance (``order_dependent``, judged by
:mod:`kernelgen.task.verify`). Two alternatives, not every order: a few orders cost a few runs
of such launches, and these two are the ones that reverse every pair of programs and run
programs alone.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from kernelgen.check.checked import FLOAT_DTYPES, CheckedKernel
from kernelgen.check.sequence import nodes
from kernelgen.lang import nodes as L

SEED = 31  # the shuffle's seed: the same order in every run
ALONE = 4  # programs of a shuffle that run alone, one after another, before the rest
ALL_ALONE = 16  # grids up to this size run every program alone in the shuffled order


@dataclass(frozen=True)
class Order:
    """A schedule of a launch's programs (the module's docstring): ``lockstep``, ``reversed`` or
    ``shuffled``."""

    kind: str

    def chunks(self, total: int, size: int) -> list[torch.Tensor]:
        """The programs (linear ids) of each chunk, in order; lockstep chunks hold at most ``size``."""
        if self.kind == "lockstep":
            return _split(torch.arange(total, dtype=torch.int64), size)
        if self.kind == "reversed":
            everyone = torch.arange(total - 1, -1, -1, dtype=torch.int64)
            return [everyone[:1], *_split(everyone[1:], size)] if total else []
        permutation = torch.randperm(total, generator=torch.Generator().manual_seed(SEED))
        alone = total if total <= ALL_ALONE else ALONE
        return [permutation[i:i + 1] for i in range(alone)] + _split(permutation[alone:], size)

    def lanes(self, block: int) -> torch.Tensor | None:
        """The order in which a program's atomic statement applies the ``block`` lanes of its
        block (row-major lane numbers; None: row-major, lockstep's)."""
        if self.kind == "lockstep":
            return None
        if self.kind == "reversed":
            return torch.arange(block - 1, -1, -1, dtype=torch.int64)
        return torch.randperm(block, generator=torch.Generator().manual_seed(SEED + 1))

    def sequence(self, rows: torch.Tensor, positions: torch.Tensor, block: int) -> torch.Tensor:
        """The order in which to apply an atomic statement's lanes (each one's program ``rows``
        in the chunk and ``positions`` in its block of ``block``): programs in the chunk's order,
        each one's lanes in :meth:`lanes`'s."""
        rank = _lane_ranks(self, block)
        return torch.argsort(rows.to(torch.int64) * block + rank[positions.long()], stable=True)

    def describe(self, total: int) -> str:
        """The order in a message."""
        if self.kind == "lockstep":
            return "lockstep (all programs in step, in increasing order)"
        if self.kind == "reversed":
            return (f"reversed (program {total - 1} alone first, then the others in step from the end; "
                    "an atomic's lanes from the last)")
        alone = self.chunks(total, 1)[:total if total <= ALL_ALONE else ALONE]
        ids = ", ".join(str(int(c)) for c in alone)
        rest = "" if total <= ALL_ALONE else ", then the rest in step"
        return f"shuffled (seed {SEED}: programs {ids} alone, one after another{rest}; an atomic's lanes shuffled)"


LOCKSTEP = Order("lockstep")
ALTERNATIVES = (Order("reversed"), Order("shuffled"))


@functools.lru_cache(maxsize=64)
def _lane_ranks(order: Order, block: int) -> torch.Tensor:
    """Each lane's place in ``order``'s lanes of a ``block`` (:meth:`Order.lanes`), made once per
    block: every atomic statement of every chunk asks for it."""
    lane_order = order.lanes(block)
    rank = torch.empty(block, dtype=torch.int64)
    rank[lane_order if lane_order is not None else torch.arange(block)] = torch.arange(block)
    return rank


def _split(programs: torch.Tensor, size: int) -> list[torch.Tensor]:
    return [programs[i:i + size] for i in range(0, programs.numel(), size)]


def binds_old_values(checked: CheckedKernel) -> bool:
    """Whether the kernel binds an atomic's old values (what it observes of other programs is
    judged by :class:`~kernelgen.interp.memorder.MemoryOrder`)."""
    return any(isinstance(node, L.Atomic) and node.name is not None for node, _ in nodes(checked.kernel.body, "/body"))


def needs_orders(checked: CheckedKernel) -> bool:
    """Whether the race detector cannot clear a launch of this kernel by itself: it binds an
    atomic's old values, or compare-and-swaps or exchanges (the race detector holds programs to
    one value per element, but the lanes of one program's statement may write several: the
    first, or the last, wins in an order the GPU picks), or adds floats atomically: their sum
    is the order's, and an order can lose far more than rounding (one program adding 2**40
    before the others and taking it away after them: their shares are gone in any other order)."""
    return any(isinstance(node, L.Atomic) and (node.name is not None or node.op in ("atomic_cas", "atomic_xchg")
                                               or node.op == "atomic_add" and _float_pointee(checked, path))
               for node, path in nodes(checked.kernel.body, "/body"))


def _float_pointee(checked: CheckedKernel, path: str) -> bool:
    found = checked.types.get(f"{path}/ptr")
    return found is None or found.dtype in FLOAT_DTYPES
