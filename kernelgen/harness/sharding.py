"""Splitting one benchmark run across runners: ``--shard i/n``.

Every case of a task lands in the same shard (pass@k needs all of a task's samples in one
results file, and a task's compile cache is then warm on one runner only). Tasks are dealt
round-robin over their sorted keys, so shards differ in size by at most one task and the
split depends only on the set of tasks selected, never on collection order or the Python
hash seed. Every runner must therefore select the same tests (same paths, ``-k``, ``-m``): the
shards of one selection partition it.

A kernelgen case is keyed by its task id; any other test by its node id, so ``--shard`` also
splits a plain test suite.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence, TypeVar

from kernelgen.errors import KernelgenError

T = TypeVar("T")

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class ShardError(KernelgenError):
    stage = "shard"


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based, as written on the command line) of ``count``."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(spec: str) -> Shard:
    """``"2/4"`` -> Shard(2, 4); a clear error for anything else."""
    match = _SPEC.match(spec)
    if match is None:
        raise ShardError(f"--shard takes INDEX/COUNT, e.g. 1/4, not {spec!r}", code="bad_shard")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ShardError(f"--shard {spec}: INDEX must be between 1 and COUNT (COUNT >= 1)", code="bad_shard")
    return Shard(index, count)


def select(items: Sequence[T], key: Callable[[T], str], shard: Shard) -> tuple[list[T], list[T]]:
    """(kept, dropped): the items whose key falls in ``shard``, in their original order."""
    ordered = sorted({key(item) for item in items})
    mine = {k for position, k in enumerate(ordered) if position % shard.count == shard.index - 1}
    kept = [item for item in items if key(item) in mine]
    dropped = [item for item in items if key(item) not in mine]
    return kept, dropped
