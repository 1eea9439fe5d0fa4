"""CPU mode's draw scaled far up, for tasks whose reference only compares, moves or selects its
float inputs: a sentinel a kernel pads with in place of an infinity shows there.

A kernel that pads a short row with 1e9 before it sorts (or loads masked lanes as -1e9 for a
maximum) is right while every value is below the sentinel, and the draws of a task with small
integer or tied values (row_sort's [-8, 8], argmax's [-20, 20]) never leave that range: the
extreme draws scale up only the inputs of ordinary normal domains, and by little where an
output would grow with them (:mod:`kernelgen.task.magnitude`; round 15's row_sort passed so).
Where the reference is homogeneous in its float inputs (scaled by a power of two s, each float
output is either s times what it was or unchanged, bit for bit, and every other output is
unchanged: sort, top-k, max, argmax, cummax, relu, a copy), scaling loses nothing, so this draw
takes the extreme draw of the smallest hypothesis sizes (a partial block, where pads are read)
and scales its float inputs by :data:`UP_SCALES` of their dtype. The atol grows as the outputs
do.
"""

from __future__ import annotations

from typing import Any, Mapping

import torch

from kernelgen.task.spec import Task
from kernelgen.task.verify import reference_call

# The order naming the draw.
UP_ORDER = "up"
# The scale per dtype: f32's and bf16's put small integers past 1e30 (past 1e9 and 1e30, sentinels
# a model pads with: round 33's top-2 padded with -1e30 passed at 2**32), and UP_BUDGET values of
# up to 200 sum below the largest finite number in any order (a sum is homogeneous too, and a
# correct kernel's order must not overflow where the reference's did not); f16's keeps values of up
# to 31 below its largest.
UP_SCALES = {"f32": 2.0 ** 100, "bf16": 2.0 ** 100, "f16": 2.0 ** 11}


def up_names(task: Task) -> list[str]:
    """The float tensor inputs the draw scales: of every domain but a uniform one (whose bounds
    are what the prompt promises: probabilities, positive values)."""
    names = []
    for spec in task.signature.inputs:
        domain = task.domains.get(spec.name)
        if spec.is_plain and spec.shape is not None and spec.dtype in UP_SCALES \
                and (domain is None or domain.kind in ("normal", "integers")):
            names.append(spec.name)
    return names


def scaled_up(task: Task, inputs: Mapping[str, Any]) -> tuple[dict[str, Any], float] | None:
    """``inputs`` with :func:`up_names` times the scale of the narrowest of their dtypes, and the
    atol factor (the scale where a float output grows with it, else 1); None where the
    reference is not homogeneous in them (the module's docstring) or fails."""
    names = [n for n in up_names(task) if isinstance(inputs.get(n), torch.Tensor)]
    if not names:
        return None
    scale = min(UP_SCALES[s.dtype] for s in task.signature.inputs if s.name in names)
    scaled = {**inputs, **{n: inputs[n] * scale for n in names}}
    try:
        base, _ = reference_call(task, inputs)
        grown, _ = reference_call(task, scaled)
    except Exception:  # noqa: BLE001 - a reference that refuses large values: no such draw
        return None
    factor = 1.0
    for name, value in base.items():
        after = grown.get(name)
        if after is None or after.shape != value.shape or after.dtype != value.dtype:
            return None
        if value.dtype.is_floating_point and value.element_size() == 1:
            return None  # fp8: saturates or overflows within any such scale
        if not value.dtype.is_floating_point:
            if not torch.equal(after, value):
                return None
        elif _same(after, value * scale) and bool(value.isfinite().any() & (value != 0).any()):
            factor = scale
        elif not _same(after, value):
            return None
    return scaled, factor


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal values, NaN where NaN."""
    return bool(((a == b) | (a.isnan() & b.isnan())).all())
