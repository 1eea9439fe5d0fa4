"""Magnitudes spread over a float dtype's whole range, element by element (CPU mode's ``spread``
draw), for the inputs a task's reference maps pointwise.

An ordinary draw holds values of about its domain's scale, and an extreme draw scales all of an
input by one power of two (:mod:`kernelgen.task.magnitude`): between the two, and below both, lie
magnitudes no draw reaches. Red-team round 31 found three wrong kernels that lived there:
sigmoid in bf16 flushed to 0 below x = -24 (torch's result is a bf16 number down to about -92;
normal draws of scale 4 reach 18, the extreme one's 2**32 leaves [20, 90] empty), sign as
clamp(x * 1e30, -1, 1) (wrong below 1e-30, and sign's extreme domains take it out of the scaled
draws), and swiglu in f16 multiplying gate by up before the gate's sigmoid (inf where gate * up
passes 65504 and silu(gate) * up does not: one scale for both inputs never draws a large
negative gate beside a large up).

Here each element is drawn at a magnitude 2**u, u uniform from the dtype's least subnormal
exponent to :data:`EXPONENTS`' top (f16's largest value, else 2**32), shared by the spread inputs
(each within a factor 4 of it, its own sign): where one input multiplies a term another makes
small (gelu_tanh_backward's grad_y times 1 - tanh^2, which f32 holds to 6e-8 absolute, the task's
atol with grad_y of scale 1), a magnitude of its own per input would judge that absolute error
against an atol meant for scale 1; a large negative gate beside a large up is still drawn. An
element keeps the ordinary draw's
value where the reference's output is not finite (and is at the ordinary draw), or is off its
result on f64 inputs by more than the task's tolerance (swiglu's reference rounds silu(-20) =
-4e-8 to f16's 0 before multiplying by an up of 16000: what is judged there is the reference's
rounding, not the kernel). Only inputs
shaped as every output whose reference is pointwise in them (changing some elements changes
those outputs there only, tried on the draw) are spread: a reduction over values of every
magnitude cancels in ways no two summation orders round alike. Outputs are compared with the
task's tolerance as it stands: an element's rtol is its own, and atol (meant for values about 1)
stays.
"""

from __future__ import annotations

from typing import Any, Mapping

import torch

from kernelgen.host.plan import dtype_name
from kernelgen.task.compare import stepped
from kernelgen.task.sorted_room import InputsRoom
from kernelgen.task.spec import Task
from kernelgen.task.wide_reference import WideReference

SPREAD_ORDER = "spread"
# A second draw spreads magnitudes up to the dtype's largest (bf16, f32, f64: f16's top is its
# largest already): frac as x - float(int64(x)) saturates past 2**63, addcmul as value * (t1 * t2)
# overflows where (value * t1) * t2 does not (red-team round 34). A task whose prompt asks for an
# intermediate past the reference's range (gelu_tanh_backward's x**3 in f32) says wide_spread: false.
WIDE_ORDER = "spread:wide"
WIDE_TOPS: dict[str, float] = {"bf16": 126.0, "f32": 126.0, "f64": 1022.0}
# The exponents u is drawn between: the least subnormal's, and one below the largest value's (f16)
# or 32, the top of the extreme draws' scales (magnitude.SCALES): gelu_tanh_backward's prompt asks
# for x^3 in f32, which overflows past 7e12 where the reference's f64 does not.
EXPONENTS: dict[str, tuple[float, float]] = {"f16": (-24.0, 15.0), "bf16": (-133.0, 32.0), "f32": (-149.0, 32.0),
                                             "f64": (-1074.0, 32.0)}
# How far (in powers of two) an input's element may lie from the element's shared magnitude.
_APART = 2.0
# The share of an input's elements changed to try whether the reference is pointwise in it.
_PROBE_EVERY = 3


def candidate_names(task: Task) -> list[str]:
    """Float tensor inputs of a normal domain (no ties, no rows of another) shaped as every
    output, in a task of float outputs without calls that changes no input (a float cast to an
    integer past its range is the GPU's choice, not torch's)."""
    if task.variants or task.in_place or not task.signature.outputs \
            or any(out.dtype not in EXPONENTS for out in task.signature.outputs):
        return []
    shapes = {tuple(out.shape or ()) for out in task.signature.outputs}
    names = []
    for spec in task.signature.inputs:
        domain = task.domains.get(spec.name)
        if spec.is_plain and spec.shape is not None and spec.dtype in EXPONENTS and shapes == {tuple(spec.shape)} \
                and (domain is None or (domain.kind == "normal" and not domain.ties and domain.same_as is None)):
            names.append(spec.name)
    return names


_POINTWISE: dict[tuple, list[str]] = {}  # by task, reference and the inputs' shapes


def pointwise_names(task: Task, inputs: Mapping[str, Any]) -> list[str]:
    """Of :func:`candidate_names`, those whose elements, changed one in :data:`_PROBE_EVERY`, change
    the reference's outputs at those positions only (on ``inputs``, a draw; kept per task and the
    inputs' shapes: the draw's list is made, and its inputs are spread, on one draw)."""
    key = (task.tier, task.id, task.variant.name if task.variant is not None else "", task.reference,
           tuple((name, tuple(v.shape)) for name, v in inputs.items() if isinstance(v, torch.Tensor)))
    if key not in _POINTWISE:
        _POINTWISE[key] = _probed(task, inputs)
    return _POINTWISE[key]


def _probed(task: Task, inputs: Mapping[str, Any]) -> list[str]:
    from kernelgen.task.verify import run_reference

    try:
        base = run_reference(task, inputs)
    except Exception:  # noqa: BLE001 - a reference that refuses its own draw gets no spread draw
        return []
    found = []
    for name in candidate_names(task):
        value = inputs.get(name)
        if not isinstance(value, torch.Tensor) or value.numel() < 2:
            continue
        probe = torch.zeros(value.numel(), dtype=torch.bool)
        probe[::_PROBE_EVERY] = True
        probe = probe.view(value.shape)
        changed = dict(inputs)
        changed[name] = torch.where(probe, value * 2 + 1, value)
        try:
            moved = run_reference(task, changed)
        except Exception:  # noqa: BLE001
            continue
        if all(moved[out].shape == probe.shape and _same(moved[out][~probe], base[out][~probe]) for out in base):
            found.append(name)
    return found


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return bool(((a == b) | (a.isnan() & b.isnan())).all())


def spread_orders(task: Task) -> list[str]:
    """The spread draws of a task with pointwise inputs: up to 2**32, and up to the dtype's largest."""
    return [SPREAD_ORDER] + ([WIDE_ORDER] if task.wide_spread else [])


def spread(task: Task, inputs: dict[str, Any], seed: int, wide: bool = False) -> tuple[dict[str, Any], float]:
    """``inputs`` with the pointwise inputs' magnitudes spread (the module's docstring; ``wide``: up
    to :data:`WIDE_TOPS`) and the atol factor, 1. Inputs as drawn where none is pointwise."""
    from kernelgen.task.verify import run_reference

    names = pointwise_names(task, inputs)
    if not names:
        return inputs, 1.0
    generator = torch.Generator().manual_seed(seed ^ (0x5EED6 if wide else 0x5EED5))
    shape = inputs[names[0]].shape
    ranges = [EXPONENTS[dtype_name(inputs[name].dtype)] for name in names]
    if wide:
        ranges = [(low, WIDE_TOPS.get(dtype_name(inputs[name].dtype), high)) for (low, high), name in zip(ranges, names)]
    low, high = max(r[0] for r in ranges), min(r[1] for r in ranges)  # the narrowest dtype's
    shared = low + (high - low) * torch.rand(shape, generator=generator, dtype=torch.float64)
    spread_inputs = dict(inputs)
    for name in names:
        value = inputs[name]
        own = shared + (2 * torch.rand(shape, generator=generator, dtype=torch.float64) - 1) * _APART
        sign = torch.where(torch.rand(shape, generator=generator) < 0.5, -1.0, 1.0).double()
        spread_inputs[name] = (sign * torch.exp2(own.clamp(low, high))).to(value.dtype)
    base, drawn = run_reference(task, inputs), run_reference(task, spread_inputs)
    wide = WideReference(task, spread_inputs)
    lost = torch.zeros(next(iter(base.values())).shape, dtype=torch.bool)
    for spec in task.signature.outputs:
        value, tolerance = drawn[spec.name].double(), task.tolerance_for(spec.dtype)
        exact = wide.result(spec.name, drawn[spec.name])
        lost |= base[spec.name].isfinite() & ~value.isfinite()
        lost |= value.isfinite() & ~((value - exact).abs() <= tolerance.rtol * exact.abs() + tolerance.atol)
    for name in names:
        spread_inputs[name] = torch.where(lost, inputs[name], spread_inputs[name])
    return spread_inputs, 1.0



class SpreadRoom(InputsRoom):
    """A spread draw's room: an atol meant for inputs of about 1 grows with them. An element also
    passes within the task's atol (``step_atol`` in steps, none where exact) times the largest
    magnitude of a float input there (at least 1): grad_y * (1 - tanh^2) in f32 is 6e-8 times
    grad_y off where tanh is near 1. An output bounded by 1 (a sign, a sigmoid) at a small input
    keeps the plain atol, and an inf or NaN lies within no radius."""

    def around(self, name: str, expected: torch.Tensor, centre: torch.Tensor | None = None
               ) -> tuple[torch.Tensor, torch.Tensor, str] | None:
        """The reference's result (or ``centre``, another result of the kernel) and that radius."""
        spec = next((out for out in self._task.signature.outputs if out.name == name), None)
        if spec is None:
            return None
        tolerance = self._task.tolerance_for(spec.dtype)
        atol = 0.0 if tolerance.exact else tolerance.step_atol if stepped(spec.dtype, tolerance) else tolerance.atol
        scale = torch.ones(expected.shape, dtype=torch.float64, device=expected.device)
        for value in self._inputs.values():
            if isinstance(value, torch.Tensor) and value.is_floating_point() and value.shape == expected.shape:
                scale = torch.maximum(scale, value.detach().to(expected.device, torch.float64).abs().nan_to_num(0.0))
        radius = atol * scale
        return (expected if centre is None else centre).detach().double(), radius, \
            f"within atol={atol:g} times the inputs' largest magnitude there (a spread draw)"
