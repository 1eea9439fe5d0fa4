"""What torch.compile's autotuner measured and kept, read from Inductor's own log.

torch.compile's time for one task moved up to 3.5x between bench runs (row_var: 22.5 us in most,
78.6 us in one 12-worker run, its repetitions within 2% of each other): Inductor kept a slower
configuration for its reduction. Which one, and what its benchmarks measured for each candidate,
is only in Inductor's debug log (``torch._inductor.runtime.triton_heuristics`` and
``...coordinate_descent_tuner``), so the harness records those lines with each torch.compile
time (a result's ``extra.torch_compile.autotune``): a baseline time that looks wrong can then be
traced to the choice behind it. The log is Inductor's interface for this; its attributes are
not (a kernel's launchers are emptied when its module is pickled for the cache).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Iterator

LOGGERS = ("torch._inductor.runtime.triton_heuristics", "torch._inductor.runtime.coordinate_descent_tuner")
# Coordinate descent logs every neighbour it tries twice (the tuner's "Try config", then the
# measured "COORDESC:" line, which is kept); past MAX_LINES only the lines that say what was kept
# are (each kernel's best configuration, coordinate descent's improvement and kept one).
_SKIPPED = ("Try config", "  CACHED", "Triton cache dir", "Got exception")
_KEPT = ("Best config for", "Improve from", "has best config")
MAX_LINES = 80
_LINE_CHARS = 400


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.dropped = 0

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is not worth losing the compile over
            return
        if text.startswith(_SKIPPED):
            return
        if len(self.lines) < MAX_LINES or any(kept in text for kept in _KEPT):
            self.lines.append(text.strip()[:_LINE_CHARS])
        else:
            self.dropped += 1


@contextlib.contextmanager
def autotune_lines() -> Iterator[list[str]]:
    """Inductor's autotuning log while the block runs, as lines (at most :data:`MAX_LINES` and
    then only those saying what was kept, then one saying how many were left out): the list
    yielded fills as it runs. Triton kernels' autotuning only: a GEMM template's choice
    (``select_algorithm``) logs elsewhere. The loggers are set to DEBUG
    and kept from propagating meanwhile (pytest's log capture would otherwise hold every line),
    and restored after."""
    handler = _Lines()
    saved = []
    for name in LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.level, logger.propagate))
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
        logger.addHandler(handler)
    try:
        yield handler.lines
    finally:
        for logger, level, propagate in saved:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate
        if handler.dropped:
            handler.lines.append(f"... {handler.dropped} more lines")
