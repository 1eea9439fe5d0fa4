"""Draws for reductions: values that show a sum kept narrower than a prompt asks.

A reduction into an f16 or bf16 output may keep its sums in f32 only in part, and values of one
magnitude hide the narrow part: a running sum kept in the narrow dtype, lane by lane, loses each
small value added to a large one (:func:`with_mixed_magnitude_rows`, in every extreme draw). Not
drawn for the inputs of a golden's ``dot`` (:func:`golden_dots`): the GPU's tensor cores do not
round each add to nearest, so the goldens themselves drift on such values.
"""

from __future__ import annotations

import torch

from kernelgen.lang import nodes as L
from kernelgen.task.spec import Task

# Mantissa bits of the narrow float dtypes whose rows :func:`with_mixed_magnitude_rows` mixes.
NARROW_MANTISSA = {torch.float16: 10, torch.bfloat16: 7}

def with_mixed_magnitude_rows(values: torch.Tensor, seed: int) -> torch.Tensor:
    """An f16 or bf16 input of two or more rows (along the last axis) drawn from a normal
    domain, in an extreme draw: about a quarter of its rows hold a large value L = +-16 in a
    leading part (half the row in some, an eighth in others) and the small value L * 2**-(p + 1)
    (half a step of the dtype at L, p its mantissa bits) in the rest. A running sum kept in the
    input's dtype, as a per-lane accumulator of a row reduction is when a kernel keeps it narrow,
    holds L (or more) after the leading part wherever its lanes span no more than that part, and
    each small value added to it is a tie that rounds back (to even): it loses them all, a few
    percent of an eighth-led row's sum at 8 terms a lane (N = 8192 in lanes of 1024), while an
    f32 accumulation keeps every bit. Rows of uniform magnitude hide this whatever their scale.
    L is large against the normal rows (16, not 1) so that such a row's output stays large
    against the atol, which a magnified draw (:mod:`kernelgen.task.magnitude`) scales up with
    the largest output: a bf16 mean of 2 loses 0.05 there, past atol + rtol * 2."""
    if values.dtype not in NARROW_MANTISSA or values.dim() < 2 or values.numel() == 0 \
            or values.numel() // values.shape[-1] < 2:
        return values
    generator = torch.Generator().manual_seed(seed ^ 0x313D)
    rows = values.reshape(-1, values.shape[-1]).clone()
    chosen = torch.randperm(rows.shape[0], generator=generator)[:max(1, rows.shape[0] // 4)]
    # the chosen rows in turn: an eighth-led one first (the bf16 mean's), then a half-led one
    leading = torch.where(torch.arange(len(chosen)) % 2 == 0, -(-rows.shape[1] // 8), -(-rows.shape[1] // 2))
    sign = torch.where(torch.rand(len(chosen), generator=generator) < 0.5, -16.0, 16.0).double()
    small = 2.0 ** -(NARROW_MANTISSA[values.dtype] + 1)
    mixed = torch.where(torch.arange(rows.shape[1])[None, :] < leading[:, None], 1.0, small).double() * sign[:, None]
    rows[chosen] = mixed.to(values.dtype)
    return rows.reshape(values.shape)

def reduces_rows(task: Task, spec: L.Input) -> bool:
    """Whether an output is ``spec`` reduced along its last axis (``[M]`` or ``[M, 1]`` of an
    ``[M, N]`` input), whose rows a kernel sums lane by lane: elsewhere mixed-magnitude rows only
    raise a magnified draw's atol past what other wrong kernels differ by (a tanh GELU)."""
    rows = list(spec.shape[:-1])
    return len(spec.shape) >= 2 and any(list(out.shape or []) in (rows, rows + [1]) for out in task.signature.outputs)

def golden_dots(task: Task) -> bool:
    """Whether the golden uses ``dot``, whose inputs get no mixed-magnitude rows: a dot sums in
    f32 by the language's rule, and the H200's tensor cores do not round each add to nearest
    (same-sign sums of those rows at K = 8192 came out 2.5e-4 low, past an f32 rtol of 1e-4)."""
    return '"op":"dot"' in task.golden.model_dump_json()
