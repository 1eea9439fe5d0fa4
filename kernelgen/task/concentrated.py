"""CPU mode's draws where an integer input holds one value everywhere: a count that concentrates.

Integer inputs are drawn uniformly from their domains, so a histogram's bins, an embedding's ids
or an index table's rows each get about N / range of the values, and no bin of a block ever holds
more than a few hundred. A kernel that keeps counts per block in a narrow integer (bincount's
per-block counts in u8, "255 fits"; in i16 over blocks of 65536) or sizes a per-value buffer by
the average passes them all, and is wrong the day every element is the same byte (round 27: both
passed). The draw sets one such input to its domain's highest value (the last bin, the last row
of a table: an edge as well) at the joint draw's sizes, so one value takes every element.

Only inputs of an ``integers`` domain (uniform values with repeats, as the prompt allows): not
``starts``/``ends`` (offsets and group ends, ordered by promise) nor ``full`` (the dtype's whole
range, where one value is no count).
"""

from __future__ import annotations

from typing import Any, Mapping

import torch

from kernelgen.task.spec import Task

# The order naming a draw: "concentrated:NAME".
CONCENTRATED = "concentrated"
# The most inputs a task gets such a draw for (one draw each).
MOST = 2


def is_concentrated(order: str | None) -> bool:
    return order is not None and order.startswith(CONCENTRATED + ":")


def concentrated_orders(task: Task) -> list[str]:
    """One order per integer tensor input of an ``integers`` domain (the first :data:`MOST`)."""
    names = [spec.name for spec in task.signature.inputs
             if spec.shape is not None and spec.name in task.domains and task.domains[spec.name].kind == "integers"]
    return [f"{CONCENTRATED}:{name}" for name in names[:MOST]]


def with_concentrated(task: Task, args: Mapping[str, Any], order: str, bounds_at: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` with the input the order names set to its domain's highest value everywhere."""
    name = order.split(":", 1)[1]
    if name not in task.domains:
        raise ValueError(f"{order}: {task.id} has no input {name!r} of an integers domain")
    high = int(task.domains[name].bounds(bounds_at)[1])
    value = args[name]
    return {**args, name: torch.full_like(value, high) if isinstance(value, torch.Tensor) else value}
