"""Progress bars for long command-line runs (tqdm), only where a person watches.

A bar is drawn on stderr when stderr is a terminal and tqdm is installed (the ``report``
extra); in CI logs, pipes and tests the items pass through untouched, so output stays clean and
nothing depends on tqdm.
"""

from __future__ import annotations

import sys
from typing import IO, Iterable, Iterator, TypeVar

T = TypeVar("T")


def progress(items: Iterable[T], *, total: int | None = None, description: str = "",
             unit: str = "it", stream: IO[str] | None = None) -> Iterator[T]:
    """``items``, with a progress bar on ``stream`` (default stderr) when it is a terminal."""
    stream = sys.stderr if stream is None else stream
    if not stream.isatty():
        return iter(items)
    try:
        from tqdm import tqdm
    except ImportError:
        return iter(items)
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    return iter(tqdm(items, total=total, desc=description, unit=unit, file=stream, leave=False,
                     dynamic_ncols=True))
