"""CPU mode's draws where an integer input holds one value everywhere: a count that concentrates.

Integer inputs are drawn uniformly from their domains, so a histogram's bins, an embedding's ids
or an index table's rows each get about N / range of the values, and no bin of a block ever holds
more than a few hundred. A kernel that keeps counts per block in a narrow integer (bincount's
per-block counts in u8, "255 fits"; in i16 over blocks of 65536) or sizes a per-value buffer by
the average passes them all, and is wrong the day every element is the same byte (round 27: both
passed). The draw sets one such input to its domain's highest value (the last bin, the last row
of a table: an edge as well) at the joint draw's sizes, so one value takes every element.

Inputs of an ``integers`` domain (uniform values with repeats, as the prompt allows), not ``full``
(the dtype's whole range, where one value is no count). Segment starts and group ends (``starts``,
``ends``) concentrate too: their cut points are drawn uniformly, so the longest segment holds
about ln(S) times the average, and a kernel that caps a segment's rows at a few times the average
(an "expert capacity", 8 * cdiv(E, S) + 64 rows) passed every draw (round 33: segment_sum_csr,
embedding_bag_sum). There the draw gives one segment, the middle one, all of the total and
leaves the others empty (an edge as well).
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


KINDS = ("integers", "starts", "ends")


def concentrated_orders(task: Task) -> list[str]:
    """One order per integer tensor input of an ``integers``, ``starts`` or ``ends`` domain (the
    first :data:`MOST`)."""
    names = [spec.name for spec in task.signature.inputs
             if spec.shape is not None and spec.name in task.domains and task.domains[spec.name].kind in KINDS]
    return [f"{CONCENTRATED}:{name}" for name in names[:MOST]]


def with_concentrated(task: Task, args: Mapping[str, Any], order: str, bounds_at: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` with the input the order names set to its domain's highest value everywhere, or
    (starts, ends) with the middle segment holding all of the total."""
    name = order.split(":", 1)[1]
    domain = task.domains.get(name)
    if domain is None or domain.kind not in KINDS:
        raise ValueError(f"{order}: {task.id} has no input {name!r} of an integers, starts or ends domain")
    value = args[name]
    if not isinstance(value, torch.Tensor) or not value.numel():
        return dict(args)
    if domain.kind == "integers":
        return {**args, name: torch.full_like(value, int(domain.bounds(bounds_at)[1]))}
    count = value.shape[-1]
    middle = torch.arange(count) > (count - 1) // 2  # starts: segments past the middle start at the total
    if domain.kind == "starts":
        total = int(bounds_at[domain.total])
        return {**args, name: torch.where(middle, total, 0).to(value.dtype)}
    low, high = (int(bound) for bound in domain.bounds(bounds_at))
    middle = torch.arange(count) >= (count - 1) // 2  # ends: groups from the middle on end at the top
    return {**args, name: torch.where(middle, high, low).to(value.dtype).expand(value.shape).clone()}
