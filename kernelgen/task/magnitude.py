"""Large magnitudes in every extreme draw (issue 32): the inputs a task draws from an ordinary
normal domain, scaled up.

A task's ``extreme_domains`` say what large values it promises to survive; most tasks have
none, and their draws never leave the standard normal, where a softmax without the row maximum,
tanh as an exp ratio, or squares summed in f16 are all right. So in every extreme draw of a
task without extreme domains (a task that has them says what its extreme draws hold) each
float input drawn from a normal domain is scaled by a power of two, the largest of :data:`SCALES`
for its dtype at which the reference stays finite wherever it is finite at the ordinary scale, its
outputs grown at most :data:`MAX_GROWTH` times: the eager code the task asks a kernel to match is
stable there, so a kernel must be too. Where the reference is not stable at any of
them (an exp of the input overflows, a product leaves f16's range), the draw keeps the ordinary
scale. A power of two scales the drawn values exactly, so the scaled draw holds the same
numbers, its zeros included. Uniform and integer domains keep their bounds: they state
what the prompt promises (probabilities in [0, 1], positive values for a log).

CPU mode also scales them down (:func:`down_orders`, draws of their own, not extreme): eps and
floors act where a statistic is small, and a floor put elsewhere than the prompt's shows only
there.

A correct kernel's absolute error grows with its outputs, so the comparison's atol is scaled by
how much the reference's largest finite output grew (rtol is relative already): an output
that the scale leaves alone (a softmax, a normalized row) keeps its atol. It is not scaled down
with outputs that shrink: exp(x) - 1 for a tiny x is 100% off in relative terms and within atol,
as most kernels write it. Likewise, where a
task's extreme domains draw tiny values, the atol is scaled down with them (:func:`tiny_scale`).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import torch

from kernelgen.task.compare import growth
from kernelgen.task.homogeneous import UP_ORDER, scaled_up
from kernelgen.task.offset import InputRounding, is_offset
from kernelgen.task.shifts import is_shift
from kernelgen.task.sorted_room import SortedRoom, is_sorted
from kernelgen.task.nonfinite import NONFINITE_ORDER, VECTORS_ORDER, nonfinite
from kernelgen.task.spread import SPREAD_ORDER, WIDE_ORDER, SpreadRoom, candidate_names, pointwise_names, spread
from kernelgen.task.spec import Task
from kernelgen.task.extreme_values import float_scalars, scalar_neighbours
from kernelgen.task.verify import domain_env, end_axes, make_inputs, reference_call, reference_leaves, run_reference

# The scales tried, largest first, per dtype: f16's largest leaves |x| <= ~5000 of 65504 for a
# normal draw of scale 1; the others' reach past 2**31, where a value cast through i32 wraps
# (frac as x - float(int32(x)) passed at 4096, round 11) and a product of two norms' squares
# leaves f32 (cosine_similarity's one rsqrt of ||x||^2 * ||y||^2), then past exp's overflow.
SCALES: dict[str, tuple[float, ...]] = {
    "f16": (1024.0, 256.0, 64.0, 16.0),
    "bf16": (2.0 ** 32, 4096.0, 1024.0, 256.0, 64.0, 16.0),
    "f32": (2.0 ** 32, 4096.0, 1024.0, 256.0, 64.0, 16.0),
    "f64": (2.0 ** 32, 4096.0, 1024.0, 256.0, 64.0, 16.0),
    # fp8 inputs drawn from a normal of scale 1 stay within about +-5, where no block of products
    # leaves f16 (an fp8 GEMM's 128-wide block dot accumulated in f16 passed, round 32): scaled,
    # they fill the dtype's range up to its largest value (the scaled values saturate there).
    "f8e4m3": (128.0, 64.0, 16.0, 4.0),
    "f8e5m2": (16384.0, 1024.0, 64.0, 16.0),
}

# CPU mode's draws scaled down (``down:K``, :func:`down_orders`): K per dtype, so that a statistic
# crosses a floor the prompt puts on it (normalize's max(norm, 1e-12), cosine_similarity's 1e-8
# on each norm, a layer norm's var + eps) on one of them, where an eps inside the sqrt or on the
# squared norm, or a floor the prompt does not ask for (standardize_rows' std), differs from the
# prompt's formula; at the ordinary scale they agree to f32's precision (round 13). Squares stay
# normal f32 numbers (2**-80 and up). f16's 2**-4 and 2**-8 keep most of a normal draw above its
# least normal number; 2**-20 puts most of it below (subnormal f16, 6e-8 to 6e-5), where a
# formula that cancels near zero loses the input (tanh as 1 - 2 / (exp(2x) + 1) gave 0 for 6e-8
# and 2.38e-7 for 3e-7: round 15).
DOWN_ORDER = "down"
DOWN_EXPONENTS: dict[str, tuple[int, ...]] = {"f16": (4, 8, 20), "bf16": (8, 24, 40), "f32": (8, 24, 40),
                                              "f64": (8, 24, 40)}

# The most a scale may grow the reference's outputs: an input of the ordinary scale that adds to
# them (a bias on x @ w^T, which grows as the scale's square) must stay above the tolerance, or a
# kernel that drops it past one tile passes every extreme draw, and those hold every draw past a
# kernel's extent (round 12: at 4096, 4096 * bias against 2**24 * x @ w^T was inside rtol 1e-4).
# A product of two inputs is scaled by 64 at most, an output that grows as its input (relu) by
# 4096, and one that does not grow (a softmax, frac, a cosine) by 2**32.
MAX_GROWTH = 2.0 ** 12


def scaled_names(task: Task, down: bool = False) -> list[str]:
    """The inputs an extreme draw scales: float tensors drawn from a normal domain (not ties,
    which judge exact equal values) or a uniform one the prompt does not promise (marked
    ``offset_draws: true``: standardize_rows' [-3, 13]), in a task without ``extreme_domains``
    (a task that has them says what its extreme draws hold: a mean large against the spread is
    lost if the other inputs are scaled past it). ``down``: for the draws scaled down, which such a
    task gets too: a floor on a small statistic shows only there (round 33: fp8_quantize_blockwise's
    max(amax, 1e-4) written as where(amax == 0, 1e-4, amax) passed every draw)."""
    if task.extreme_domains and not down:
        return []
    names = []
    for spec in task.signature.inputs:
        domain = task.domains.get(spec.name)
        if spec.is_plain and spec.shape is not None and spec.dtype in SCALES \
                and (domain is None or (domain.kind == "normal" and not domain.ties and not domain.specials)
                     or (domain.kind == "uniform" and domain.offset_draws)):
            names.append(spec.name)
    return names


def checked_inputs(task: Task, sizes: Mapping[str, int], seed: int = 0, extreme: bool = False,
                   order: str | None = None) -> tuple[dict[str, Any], float]:
    """A check's inputs (:func:`kernelgen.task.verify.make_inputs`, ``order`` as there) and the
    factor its atol is scaled by: in an extreme draw, the scaled inputs of the module's docstring;
    in a ``down:K`` or ``up`` draw, scaled down (:func:`scaled_down`) or far up
    (:func:`kernelgen.task.homogeneous.scaled_up`); in a ``spread`` draw, magnitudes spread element
    by element (:mod:`kernelgen.task.spread`)."""
    inputs = make_inputs(task, sizes, seed, extreme=extreme, order=order)
    if order is not None and order.startswith(DOWN_ORDER):
        return scaled_down(task, inputs, int(order.partition(":")[2]))
    if order == UP_ORDER:
        return scaled_up(task, inputs) or (inputs, 1.0)
    if order in (SPREAD_ORDER, WIDE_ORDER):
        return spread(task, inputs, seed, wide=order == WIDE_ORDER)
    if order in (NONFINITE_ORDER, VECTORS_ORDER):
        pointwise = pointwise_names(task, inputs) if candidate_names(task) else ()
        lines = {spec.name: end_axes(task, spec, seed) for spec in task.signature.inputs
                 if order == NONFINITE_ORDER and task.nonfinite_lines and spec.shape is not None and len(spec.shape) >= 2
                 and spec.name not in pointwise and isinstance(inputs.get(spec.name), torch.Tensor)}
        return nonfinite(task, inputs, domain_env(task, sizes), seed, run_reference, pointwise,
                         order == VECTORS_ORDER, lines)
    return magnified(task, inputs, extreme, lambda: make_inputs(task, sizes, seed))


def input_rounding(task: Task, inputs: Mapping[str, Any], sizes: Mapping[str, int], seed: int,
                   order: str | None) -> InputRounding | SortedRoom | SpreadRoom | None:
    """The room beyond the tolerance a draw's comparison admits: the inputs' rounding on an
    offset or shift draw (:class:`kernelgen.task.offset.InputRounding`, measured against the draw
    without the offset; :mod:`kernelgen.task.shifts`), a sorted row's drift on a sorted draw
    (:class:`kernelgen.task.sorted_room.SortedRoom`), an atol grown with the inputs on a spread
    draw (:class:`kernelgen.task.spread.SpreadRoom`); None for any other draw."""
    if is_sorted(order):
        return SortedRoom(task, inputs)
    if order in (SPREAD_ORDER, WIDE_ORDER):
        return SpreadRoom(task, inputs)
    return InputRounding(task, inputs, order, seed, lambda: make_inputs(task, sizes, seed)) \
        if is_offset(order) or is_shift(order) else None


def magnified(task: Task, inputs: dict[str, Any], extreme: bool,
              plain: Callable[[], dict[str, Any]] | None = None) -> tuple[dict[str, Any], float]:
    """A draw's inputs (``make_inputs``'s, on any device: GPU mode scales them on the GPU,
    where the reference runs in milliseconds) as :func:`checked_inputs` gives them; ``plain``
    gives the ordinary draw of the same sizes (on the same device), which a task's extreme
    domains are measured against (:func:`domain_growth`)."""
    if extreme and task.extreme_domains:
        tiny = tiny_scale(task)
        return inputs, tiny if tiny < 1 or plain is None else domain_growth(task, plain(), inputs)
    names = [n for n in scaled_names(task) if isinstance(inputs[n], torch.Tensor)] if extreme else []  # not omitted
    if not names:
        return inputs, 1.0
    dtypes = {s.dtype for s in task.signature.inputs if s.name in names}
    ladder = min((SCALES[d] for d in dtypes), key=lambda scales: scales[0])  # the narrowest dtype's
    return _scaled(task, inputs, names, ladder)


def down_orders(task: Task) -> list[str]:
    """The orders of CPU mode's draws scaled down (``down:K``: the inputs :func:`scaled_names`
    finds times 2**-K, each K of :data:`DOWN_EXPONENTS` for the narrowest of their dtypes; a task
    with extreme domains the deepest only, where every statistic lies below a floor); none for a
    task without such inputs."""
    dtypes = {s.dtype for s in task.signature.inputs if s.name in _down_names(task)}
    if not dtypes:
        return []
    exponents = DOWN_EXPONENTS["f16"] if "f16" in dtypes else DOWN_EXPONENTS[sorted(dtypes)[0]]
    return [f"{DOWN_ORDER}:{k}" for k in (exponents[-1:] if task.extreme_domains else exponents)]


def scaled_down(task: Task, inputs: dict[str, Any], exponent: int) -> tuple[dict[str, Any], float]:
    """A draw's inputs with those :func:`scaled_names` finds times 2**-``exponent`` (where the
    reference stays finite wherever it is finite unscaled; else as drawn) and the atol factor: the
    outputs' growth, never below 1 (the module's docstring)."""
    names = [n for n in _down_names(task) if isinstance(inputs[n], torch.Tensor)]
    return _scaled(task, inputs, names, (2.0 ** -exponent,)) if names else (inputs, 1.0)


def _down_names(task: Task) -> list[str]:
    """Of :func:`scaled_names`, those scaled down too: not fp8 ones (a normal draw's values are
    fp8 subnormals or zeros at 2**-8 already)."""
    dtypes = {spec.name: spec.dtype for spec in task.signature.inputs}
    return [name for name in scaled_names(task, down=True) if dtypes[name] in DOWN_EXPONENTS]


def _scaled(task: Task, inputs: dict[str, Any], names: list[str],
            ladder: tuple[float, ...]) -> tuple[dict[str, Any], float]:
    """``inputs`` with ``names`` times the first scale of ``ladder`` at which the reference stays
    finite wherever it is finite as drawn, its outputs grown at most :data:`MAX_GROWTH` times, and
    the atol factor (:func:`_growth`); as drawn, 1.0 where none is."""
    base = _float_outputs(task, inputs)
    scalars = float_scalars(task, inputs)
    kept = {name: _at_scalars(inputs[name], scalars) for name in names}
    for scale in ladder:
        scaled = dict(inputs)
        for name in names:
            scaled[name] = torch.where(kept[name], inputs[name], _times(inputs[name], scale))
        outputs = _float_outputs(task, scaled)
        if outputs is not None and base is not None and _stable(base, outputs) and _growth(base, outputs) <= MAX_GROWTH:
            return scaled, _growth(base, outputs)
    return inputs, 1.0


def _times(values: torch.Tensor, scale: float) -> torch.Tensor:
    """``values`` times ``scale``; an fp8 tensor through f32, saturated at its dtype's largest
    value (torch has no fp8 product, and a cast past the largest value is not the same NaN or
    saturation on every version)."""
    if values.dtype.itemsize != 1:
        return values * scale
    largest = torch.finfo(values.dtype).max
    return (values.float() * scale).clamp(-largest, largest).to(values.dtype)


def _at_scalars(values: torch.Tensor, scalars: list[float]) -> torch.Tensor:
    """Where ``values`` hold a float scalar of the call or a neighbour of one
    (:func:`kernelgen.task.extreme_values.with_scalar_neighbours`), or the negation of one (an
    all-negative row made of them, :func:`kernelgen.task.extreme_values.with_negative_rows`):
    those stay as they are. Scaled, a row of N = 2 holding eps and its neighbour, made negative,
    became [-4294967.0, -4294967.5], a spread of one ulp that no f32 mean can centre
    (layer_norm_optional's golden 0.99 off); unscaled it is within eps of a constant row."""
    if not scalars:
        return torch.zeros(values.shape, dtype=torch.bool, device=values.device)
    near = scalar_neighbours(scalars, values.dtype).to(values.device)
    return torch.isin(values, torch.cat([near, -near]))


def tiny_scale(task: Task) -> float:
    """The atol factor of a task's extreme draws whose extreme domains draw tiny values
    (normal of scale below 1: log1p's, expm1's precision near zero): the smallest such scale,
    so that the atol, meant for values of about 1, does not hide a total loss of relative
    precision (log(1 + x) for x ~ 1e-4 is ~1e-3 off relatively, inside atol 1e-5); else 1."""
    scales = [d.scale for d in task.extreme_domains.values() if d.kind == "normal" and d.scale < 1]
    return min(scales, default=1.0)


def domain_growth(task: Task, plain: Mapping[str, Any], extreme: Mapping[str, Any]) -> float:
    """The atol factor of an extreme draw from a task's extreme domains of large values: how
    much the reference's largest finite output grew from the ordinary draw ``plain`` to it, as
    for a scaled draw. A loss over logits of scale 100 (cross_entropy's) is a difference of
    values near the largest logit, which f32 holds to ~3e-5; atol 1e-5, meant for logits of
    scale 3, failed the prompt's own lse - x[target] on one row in a thousand. An output the
    domains leave alone (attention's, over q of scale 64) keeps its atol."""
    base, drawn = _float_outputs(task, plain), _float_outputs(task, extreme)
    if base is None or drawn is None or any(a.shape != b.shape for a, b in zip(base, drawn)):
        return 1.0
    return _growth(base, drawn)


def _float_outputs(task: Task, inputs: Mapping[str, Any]) -> list[torch.Tensor] | None:
    """The reference's float outputs (those it changes in place too) in f64; None where the
    reference fails on these inputs (then no scale is used)."""
    try:
        outputs, after = reference_call(task, inputs)
    except Exception:  # noqa: BLE001 - a reference that cannot take large values keeps the ordinary scale
        return None
    values = list(outputs.values()) + [v for name, v in after.items()
                                       if not reference_leaves(inputs[name], v)]
    return [v.detach().double() for v in values if v.dtype.is_floating_point]


def _stable(base: list[torch.Tensor], scaled: list[torch.Tensor]) -> bool:
    """Finite wherever the ordinary scale's reference is finite."""
    return all(a.shape == b.shape and not bool((a.isfinite() & ~b.isfinite()).any()) for a, b in zip(base, scaled))


def _growth(base: list[torch.Tensor], scaled: list[torch.Tensor]) -> float:
    """How much the largest finite output grew (at least 1)."""
    return max([growth(a, b) for a, b in zip(base, scaled)], default=1.0)
