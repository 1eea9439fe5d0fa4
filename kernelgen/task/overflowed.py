"""A draw past a task's promise, judged where every kernel agrees: its outputs' true overflows.

:func:`kernelgen.task.verify.order_overflows` leaves a draw unjudged whose order (an offset, a
sort, cancelling halves) makes the reference hold more infinities or NaNs than the plain draw: the
values left what the prompt promises, and a correct kernel may overflow where the reference does
not (a cumprod sorted descending climbs past f32's largest value and back). Some of those
infinities are every kernel's, though: where the exact result (the reference on f64 copies of the
inputs) lies past twice the output dtype's largest value, any result rounded to the dtype is that
infinity, whatever the order of the kernel's sums. A kernel that saturates there (an f16 GEMM's sum
clamped to +-65504 before its cast passed every draw: round 33) shows only on such a draw, as a
GEMM's operands get no nonfinite draw. So those elements are judged, and only those. A reference that rounds
its result to the output's dtype itself (``torch.bmm(a.float(), b.float()).half()``) gives that
infinity on f64 inputs too, and says no more of how far past the largest value the exact result
lies: there a few elements near the edge may round either way in a correct kernel, so the draw
fails only where more than :data:`EDGE_SHARE` of them (and more than one) are finite.
"""

from __future__ import annotations

from typing import Any, Mapping

import torch

from kernelgen.errors import Diagnostic
from kernelgen.task.spec import Task
from kernelgen.task.wide_reference import WideReference

# How far past the dtype's largest value the exact result must lie: rounding to the dtype gives
# the infinity from largest + half an ulp on, so twice it leaves every kernel's rounding behind.
PAST = 2.0
# The share of the elements past the largest value by an unknown margin that may be finite.
EDGE_SHARE = 0.01


def overflow_problems(task: Task, actual: Mapping[str, torch.Tensor], expected: Mapping[str, torch.Tensor],
                      inputs: Mapping[str, Any], sizes: Mapping[str, int]) -> list[Diagnostic]:
    """The outputs' elements where ``actual`` is not the reference's infinity though every kernel's
    result is: the exact result is past :data:`PAST` times the dtype's largest value, or (more than
    :data:`EDGE_SHARE` of them) the reference gives that infinity on f64 inputs too."""
    found: list[Diagnostic] = []
    wide = WideReference(task, inputs)
    where = ", ".join(f"{k}={v}" for k, v in sizes.items())
    for index, spec in enumerate(task.signature.outputs):
        want = expected[spec.name].detach()
        got = actual[spec.name].detach().to(want.device)
        if not want.is_floating_point() or got.shape != want.shape or got.dtype != want.dtype \
                or want.dtype == torch.float64 or want.dtype.itemsize == 1 or not bool(want.isinf().any()):
            continue
        exact = wide.result(spec.name, want)  # NaN where the wide reference is not finite
        far = want.isinf() & (exact.abs() > PAST * torch.finfo(want.dtype).max)
        edge = wide.same_infinity(spec.name, want) & ~far
        past = far | edge
        wrong = past & (got != want)
        if bool((wrong & far).any()) or int((wrong & edge).sum()) > max(1, EDGE_SHARE * int(edge.sum())):
            first = tuple(wrong.nonzero()[0].tolist())
            exact_note = "" if bool(exact[first].isnan()) else f" (exact {float(exact[first]):.4g})"
            found.append(Diagnostic(
                f"/outputs/{index}", "mismatch",
                f"{int(wrong.sum())} of {int(past.sum())} elements of {spec.name} whose exact result lies past "
                f"{spec.dtype}'s largest value are not the reference's infinity; first at {list(first)}: got "
                f"{float(got[first]):.6g}, expected {float(want[first])}{exact_note} ({where})"))
    return found
