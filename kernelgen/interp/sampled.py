"""A launch past the interpreter's budget, judged on a sample of its programs.

The harness draws sizes for the kernel in hand (a range's maximum, past the kernel's extent)
that the interpreter may not afford: a quadratic attention at 16K keys. Left out, such a draw
hid a kernel that reads only the first 8192 keys, or one whose loop stops at a fixed count. Where
a launch's programs are independent, a sample of them says as much about the elements they
store as the whole grid: one launch (not a program of several), no atomics, no scratch and no
output with an ``init`` fill, so that each output element is the work of the one program that
stores it (a program that read another's element is a race either way). The sample is the
first and the last programs (edges, tails, a last partial block) and programs drawn between,
as many as :data:`SAMPLED_BUDGET` allows; the caller compares the elements they stored, and
only those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence, Union

import torch

from kernelgen.check.checked import Checked, launches_of
from kernelgen.errors import InterpreterLimit
from kernelgen.interp.budget import BUDGET
from kernelgen.interp.execute import affordable_programs, allocate_outputs, execute
from kernelgen.check.sequence import nodes
from kernelgen.lang import nodes as L
from kernelgen.host.plan import plan_sequence

# Element operations a sampled launch may take: a quarter of a whole launch's.
SAMPLED_BUDGET = BUDGET >> 2
# Programs a sample needs (the first and the last at least): fewer leaves the draw unjudged.
MIN_PROGRAMS = 2
SEED = 20261202
# The largest grid a kernel with a barrier is sampled in: the barrier record keeps a counter per
# program of the grid (4 bytes each), 64 MB here.
BARRIER_GRID = 1 << 24


@dataclass
class SampledExecution:
    """The outputs of ``programs`` of the launch's ``total`` (unsampled elements hold the
    poison), and per output where those programs stored."""

    outputs: dict[str, torch.Tensor]
    written: dict[str, torch.Tensor]
    programs: int
    total: int


def why_not_sampled(checked: Checked) -> str | None:
    """Why a sample of the document's programs would not judge it (None: it would)."""
    launches = launches_of(checked)
    kernel = checked.kernel
    if len(launches) != 1:
        return "a program of several launches (a launch reads what the previous one wrote)"
    if kernel.scratch:
        return "scratch memory (programs share it)"
    if any(out.init is not None for out in kernel.outputs):
        return "an output with an init fill (updated by several programs)"
    if any(out.alias for out in kernel.outputs):
        return "an aliasing output (it holds values everywhere: what unsampled programs store is not told apart)"
    if any(isinstance(node, L.Atomic) for node, _ in nodes(kernel.body, "/body")):
        return "atomics (programs combine into one element)"
    return None


def sampled_programs(total: int, count: int, seed: int = SEED) -> torch.Tensor:
    """At most ``count`` of ``total`` linear program ids, increasing: the first and the last
    third of them at the ends of the grid, the rest drawn between."""
    if count >= total:
        return torch.arange(total, dtype=torch.int64)
    edge = max(1, count // 3)
    ends = torch.cat([torch.arange(edge), torch.arange(total - edge, total)])
    between = count - 2 * edge
    if between <= 0 or total - 2 * edge <= 0:
        return ends.unique()
    # Drawn with replacement, never listing the grid (2**31 - 1 programs would take 16 GB):
    # a repeat leaves the sample one smaller.
    drawn = torch.randint(edge, total - edge, (between,), generator=torch.Generator().manual_seed(seed))
    return torch.cat([ends, drawn]).unique()  # sorted


def execute_sampled(checked: Checked, args: Union[Sequence[Any], Mapping[str, Any]], limit: InterpreterLimit,
                    timeout_s: float | None = None) -> SampledExecution:
    """The launch on a sample of its programs; ``limit`` (the whole launch's refusal) is raised
    again where a sample cannot judge it (:func:`why_not_sampled`, or fewer than
    :data:`MIN_PROGRAMS` programs affordable)."""
    if why_not_sampled(checked) is not None:
        raise limit
    plan = plan_sequence(checked, args)[0]
    if plan.num_programs > BARRIER_GRID and any(isinstance(node, L.Barrier) for node, _ in
                                                nodes(checked.kernel.body, "/body")):
        raise limit  # the barrier record holds a counter per program of the grid
    outputs = allocate_outputs(plan)  # poison-filled, allocated once for the estimate and the run
    count = affordable_programs(plan, SAMPLED_BUDGET, outputs)
    if count < min(MIN_PROGRAMS, plan.num_programs):
        raise limit
    programs = sampled_programs(plan.num_programs, count)
    run = execute(plan, outputs, timeout_s=timeout_s, programs=programs)
    return SampledExecution(run.outputs, run.written, programs.numel(), plan.num_programs)
