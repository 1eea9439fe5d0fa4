"""The clock of the interpreter's time limit, and how often it is looked at."""

from __future__ import annotations

import time

# Wall-clock seconds between two looks at the CPU-time clock (:meth:`_Run.out_of_time`).
LOOK_EVERY_S = 0.01


def interpreter_clock() -> float:
    """The clock of the interpreter's time limit: the CPU time of the calling thread, not the wall
    clock, so that a verdict does not depend on the machine's load. On a wall clock, a draw of
    about 12 CPU-s took over 60 s at a load of 10 on 2 cores, ran out of its limit and was left
    unjudged (a harness-chosen draw past the interpreter's limit is left to the GPU): a wrong
    kernel only that draw exposed passed CPU mode (embedding_bag_mean_f16 at T = 262143,
    2026-12-03). A kernel that never ends still spends this thread's time: the interpreter runs
    its statements here."""
    return time.thread_time()
