"""The axes along which an output of an input's own shape depends on a whole line of it: a statistic of the line
taken inside the operator (a softmax's row maximum and sum, a min-max scaling's range, a cumulative maximum).

An output reduced along an axis names that axis by its shape (:func:`kernelgen.task.reductions.reduced_axes`),
and the extreme draws put each such line's only maximum and minimum at its ends
(:func:`kernelgen.task.reductions.with_end_extremum_lines`), where a loop that skips a line's first element or
its last chunk shows. An output of the input's shape says nothing of the kind: min-max scaling of rows and a
masked softmax reduce each row inside and write a row back, and a kernel whose maximum loop stops a chunk early
was judged right (mutation testing, tools/mutants.py): its rows' extrema lay elsewhere. So the reference is
asked: a slice of the input across one axis is set far off its values (alternately above and below, for a
maximum and a minimum), and an output of the same shape that changes off that slice depends on the line.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import torch

from kernelgen.host.plan import is_fp8
from kernelgen.task.spec import Task

Reference = Callable[[Task, Mapping[str, Any]], dict[str, torch.Tensor]]


def _differs(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Elementwise: the two values differ (NaN equal to NaN)."""
    if a.is_floating_point() or a.is_complex():
        return ~((a == b) | (a.isnan() & b.isnan()))
    return a != b


def statistic_axes(task: Task, name: str, args: Mapping[str, Any], run_reference: Reference,
                   skip: list[int] | None = None) -> list[int]:
    """The axes of float or bool input ``name`` (in ``args``, a plain draw) along which some output of its shape
    (by the signature's size names) changes off a slice set far off (a mask's flipped): per axis one more
    reference call. Axes in ``skip`` (those an output reduces) and those shorter than 2 are not probed."""
    spec = next(s for s in task.signature.inputs if s.name == name)
    value = args.get(name)
    same = [out.name for out in task.signature.outputs if list(out.shape or []) == list(spec.shape or [])]
    if not same or not isinstance(value, torch.Tensor) or value.dim() == 0 or value.numel() == 0:
        return []
    mask = value.dtype == torch.bool
    if not mask and (not value.is_floating_point() or is_fp8(value.dtype) or not value.isfinite().all()):
        return []
    base = run_reference(task, args)
    far = None if mask else 2.0 * float(value.abs().max()) + 1.0
    axes = []
    for axis in range(value.dim()):
        if axis in (skip or []) or value.shape[axis] < 2:
            continue
        mid = value.shape[axis] // 2
        moved = value.clone()
        part = moved.select(axis, mid)
        if mask:  # a mask's slice flipped
            part.copy_(~part)
        else:
            part.copy_((torch.where(torch.arange(part.numel()) % 2 == 0, far, -far)).reshape(part.shape))
        changed = run_reference(task, {**args, name: moved})
        for out in same:
            if out not in base or out not in changed or base[out].shape != value.shape:
                continue
            off = _differs(base[out], changed[out])
            off.select(axis, mid).fill_(False)
            if bool(off.any()):
                axes.append(axis)
                break
    return axes
