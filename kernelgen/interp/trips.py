"""Each program's trip count of a loop, and the interpreter's limit on it."""

from __future__ import annotations

import torch

from kernelgen.check.checked import child
from kernelgen.errors import Diagnostic, InterpreterError
from kernelgen.interp.masks import any_true

# A loop may run at most this many iterations (``bad_loop`` past it), as the checker states.
MAX_LOOP_ITERATIONS = 1 << 20


def trip_counts(start: torch.Tensor, stop: torch.Tensor, step: torch.Tensor, active: torch.Tensor | None,
                path: str) -> tuple[torch.Tensor, int]:
    """Each program's trips of the loop at ``path`` from its ``start``, ``stop`` and ``step`` (none
    where ``active``, the enclosing branch's or loop's, is false), and the most of them; a step
    that is not positive, or more trips than :data:`MAX_LOOP_ITERATIONS`, is ``bad_loop``."""
    if any_true(step <= 0):
        raise InterpreterError(Diagnostic(child(path, "step"), "bad_loop",
                                          f"loop step must be positive, got {int(step.min())}"))
    trips = torch.clamp(torch.div(stop - start + step - 1, step, rounding_mode="floor"), min=0)
    if active is not None:
        trips = torch.where(active, trips, torch.zeros_like(trips))
    most = int(trips.max()) if trips.numel() else 0
    if most > MAX_LOOP_ITERATIONS:
        raise InterpreterError(Diagnostic(child(path, "stop"), "bad_loop",
                                          f"a loop of {most} iterations is beyond the interpreter's limit"))
    return trips, most
