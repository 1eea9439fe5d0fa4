"""Correctness that cannot be gamed: inputs, the reference, and the comparison.

Public benchmarks of this kind were fooled by kernels that return zeros where outputs are
small, reuse the reference's output memory, or pass because the check compared printed text.
So: inputs of both signs (unless a task's domain says otherwise), drawn per size assignment
from a seed; the reference runs on its own copies of the inputs; every output element must be
written, whatever its dtype (the interpreter records each store; on the GPU two launches with
two poisons show which elements no store wrote), and an element written as NaN is a
mismatch, not an unwritten one; ``allclose`` with dtype-based tolerances (or, where the
reference's own rounding error exceeds them, twice that error:
:mod:`kernelgen.task.wide_reference`); a result that is all zeros, or a copy of an input, while
the reference is not, is rejected; inputs must come back unchanged; and guard bands around
every buffer catch writes out of bounds (on the GPU; the interpreter checks every access itself).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import random
from typing import Any, Mapping

import torch

from kernelgen.check.checked import ANY_INT_DTYPES
from kernelgen.lang import nodes as L
from kernelgen.task.compare import Comparison, Tolerance, compare_tensors, floorable
from kernelgen.task.addends import is_addend, with_cancelled_addend
from kernelgen.task.reductions import (END_LINES, golden_dots, reduced_axes, reduces_rows, selected_axes,
                                       with_cancelling_halves, with_end_extremum_lines, with_end_true_lines,
                                       with_infinite_lines, with_lone_nan_lines, with_mixed_magnitude_rows,
                                       with_spread_extremum_lines, with_zero_extremum_lines)
from kernelgen.errors import Diagnostic
from kernelgen.host.plan import dtype_name, is_fp8, torch_dtype
from kernelgen.task.extreme_values import (float_scalars, hash_name, rows_of, with_fractions_and_near_ties,
                                           with_negative_rows, with_rounding_edges, with_rows_at_scalars,
                                           with_scalar_neighbours, with_special_pairs, with_specials, with_zeros)
from kernelgen.task.line_statistics import statistic_axes
from kernelgen.task.spec import Task
from kernelgen.task.offset import InputRounding, is_offset, with_common_offset
from kernelgen.task.concentrated import is_concentrated, with_concentrated
from kernelgen.task.scalar_conditions import is_scalar_order, with_scalars
from kernelgen.task.shifts import is_shift, with_shift
from kernelgen.task.sorted_room import InputsRoom
from kernelgen.task.products import ProductRounding
from kernelgen.task.memo import remembered_inputs, remembered_reference
from kernelgen.task.nonfinite import NONFINITE_ORDER, VECTORS_ORDER
from kernelgen.task.wide_reference import WideReference

GUARD_ELEMENTS = 256  # elements before and after each buffer; keeps 16-byte alignment
COPY_MIN_DISTINCT = 4  # distinct values an input needs before an output equal to it is a copy


def size_seed(task: Task, sizes: Mapping[str, int], seed: int) -> int:
    text = f"{task.id}:{seed}:{sorted(sizes.items())}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") >> 1


def draw_offsets(count: int, total: int, dtype: torch.dtype, generator: torch.Generator) -> torch.Tensor:
    """``count`` sorted segment starts in [0, ``total``], the first 0: uniform cut points."""
    cuts = torch.randint(0, total + 1, (count - 1,), generator=generator).sort().values
    return torch.cat([torch.zeros(1, dtype=torch.int64), cuts]).to(dtype)


def draw_tensor(spec: L.Input, shape: tuple[int, ...], domain, generator: torch.Generator,
                sizes: Mapping[str, int] | None = None) -> torch.Tensor:
    """One input's values; ``sizes`` evaluate a domain's bounds that are host expressions."""
    dtype = torch_dtype(spec.dtype)
    if domain is not None and domain.kind == "starts":
        return draw_offsets(shape[0], int(sizes[domain.total]), dtype, generator)
    if spec.dtype == "bool":
        return torch.randint(0, 2, shape, generator=generator).bool()
    values = _drawn(spec, shape, domain, generator, sizes or {})
    if domain is not None and domain.zero_rows:
        values = _zero_rows(values, generator)
    if domain is not None and domain.specials:
        values = with_specials(values, domain.special_values(sizes or {}), generator)
    return values


def _drawn(spec: L.Input, shape: tuple[int, ...], domain, generator: torch.Generator,
           sizes: Mapping[str, int]) -> torch.Tensor:
    dtype = torch_dtype(spec.dtype)
    integer = spec.dtype in ANY_INT_DTYPES
    if domain is not None and domain.kind == "full" and integer:
        info = torch.iinfo(dtype)
        if info.bits < 16:
            words = torch.randint(info.min, info.max + 1, shape, generator=generator).to(dtype)
        else:
            values = torch.randint(0, 1 << 16, (*shape, info.bits // 16), generator=generator, dtype=torch.int32)
            words = values.to(torch.int16).view(dtype).reshape(shape)  # uniform bits: every value of the dtype
        return with_specials(words, [info.min, info.max, info.min + 1, info.max - 1, -1, 0, 1], generator)
    if domain is not None and domain.kind == "full" and dtype.is_floating_point:
        return _float_bits(shape, dtype, generator)
    low, high = domain.bounds(sizes) if domain is not None and domain.kind != "full" else (-100, 100)
    if integer and domain is None:
        low = max(low, torch.iinfo(dtype).min)  # u8: 0..100
    if domain is not None and domain.kind == "ends":
        return _ends(shape, int(low), int(high), generator).to(dtype)
    if (domain is not None and domain.kind == "integers") or (integer and domain is None):
        return torch.randint(int(low), int(high) + 1, shape, generator=generator).to(dtype)
    if domain is not None and domain.kind == "uniform":
        values = torch.rand(shape, generator=generator, dtype=torch.float64) * (high - low) + low
        return values.to(dtype)
    scale = domain.scale if domain is not None else 1.0
    values = torch.randn(shape, generator=generator, dtype=torch.float64) * scale
    if domain is not None and domain.ties:
        values = (values * 4 / scale).round() * scale / 4 + 0.0  # + 0.0: no -0.0 to tie with +0.0
    return values.to(dtype)


def _float_bits(shape: tuple[int, ...], dtype: torch.dtype, generator: torch.Generator) -> torch.Tensor:
    """Finite floats of ``dtype`` with uniformly random bits: every exponent equally likely, so
    subnormals, tiny and huge values and (in f64) values past f32's precision all appear; a
    pattern that is NaN or infinite is replaced by a normal draw."""
    bits = torch.finfo(dtype).bits
    if bits == 8:
        words = torch.randint(0, 256, shape, generator=generator, dtype=torch.int32).to(torch.uint8).view(dtype)
    else:
        halves = torch.randint(0, 1 << 16, (*shape, bits // 16), generator=generator, dtype=torch.int32)
        words = halves.to(torch.int16).view(dtype).reshape(shape)
    normal = torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype)
    finite = torch.isfinite(words.to(torch.float32) if bits == 8 else words)
    return torch.where(finite, words.to(torch.float64), normal.to(torch.float64)).to(dtype)


def _zero_rows(values: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """``values`` with about a quarter of its rows (along the last axis), at least one, all zero; a
    single row stays as drawn: the draws that hold the other sizes at their minimum (past an extent,
    at a range's maximum, at a chunk's edge) have one row, and all zero it showed nothing of a long
    row's sums (a loop that stopped a chunk early passed; tools/mutants.py)."""
    if values.dim() == 0 or values.numel() == values.shape[-1]:
        return values
    return rows_of(values, torch.zeros_like(values), generator)


def _ends(shape: tuple[int, ...], low: int, high: int, generator: torch.Generator) -> torch.Tensor:
    """Integers in [low, high], nondecreasing along the last axis, the last one high: ragged
    groups' ends (repeated values: empty groups)."""
    values = torch.randint(low, high + 1, shape, generator=generator).sort(dim=-1).values
    if values.numel():
        values[..., -1] = high
    return values


def scalar_values(task: Task, sizes: Mapping[str, int], seed: int, extreme: bool = False) -> dict[str, Any]:
    """The scalar inputs for one size assignment: drawn from the task's ``scalar_ranges``
    (reproducible from task, sizes and seed; in an extreme draw, a range's ``extreme`` value
    where it has one, else one of its bounds; a float rounded to the scalar's dtype; a range ``at_least`` another scalar
    sorted against it; one ``at_rand`` at a random number its seed gives, or in an extreme draw just
    below one), the bench value where a scalar has no range."""
    rng = random.Random(size_seed(task, sizes, seed))
    values: dict[str, Any] = {}
    for spec in task.signature.inputs:
        if spec.shape is None and spec.is_plain:
            drawn = task.scalar_ranges.get(spec.name)
            value = (task.scalars[spec.name] if drawn is None
                     else drawn.draw(rng, integer=spec.dtype in ANY_INT_DTYPES))
            if extreme and drawn is not None:  # its extreme value, else a bound (ScalarRange.extreme)
                value = drawn.extreme if drawn.extreme is not None else drawn.bound(rng, value)
            if isinstance(value, float) and spec.dtype in ("f32", "f16", "bf16"):
                # a value of the scalar's dtype: the kernel and PyTorch compare with the same one
                value = float(torch.tensor(value, dtype=torch.float64).to(torch_dtype(spec.dtype)))
            values[spec.name] = value
    for spec in task.signature.inputs:  # at a random number of the call (ScalarRange.at_rand)
        drawn = task.scalar_ranges.get(spec.name)
        if drawn is not None and drawn.at_rand is not None:
            values[spec.name] = _at_random_number(task, sizes, int(values[drawn.at_rand]), drawn, rng,
                                                  values[spec.name], below=extreme)
    for spec in task.signature.inputs:  # pairs drawn from one range, sorted (ScalarRange.at_least)
        drawn = task.scalar_ranges.get(spec.name)
        if drawn is not None and drawn.at_least is not None and values[spec.name] < values[drawn.at_least]:
            values[spec.name], values[drawn.at_least] = values[drawn.at_least], values[spec.name]
    return values


def _at_random_number(task: Task, sizes: Mapping[str, int], seed: int, drawn, rng: random.Random,
                      otherwise: float, below: bool) -> float:
    """A scalar compared with rand(seed, offset) (:attr:`kernelgen.task.ranges.ScalarRange.at_rand`):
    the random number of an offset below the first output's element count that lies in the
    scalar's range, or (``below``: an extreme draw) the f32 number just below one; ``otherwise``
    where none does."""
    from kernelgen.lang import philox

    out = task.signature.outputs[0]
    count = math.prod(d if isinstance(d, int) else int(sizes[d]) for d in out.shape or [])
    numbers = philox.random("rand", torch.tensor(seed), torch.arange(min(count, 1 << 16), dtype=torch.int32))
    inside = numbers[(numbers >= drawn.min) & (numbers <= drawn.max)]
    if inside.numel() == 0:
        return otherwise
    if not below:
        return float(inside[rng.randrange(inside.numel())])
    # just below: at a number whose complement 1 - u the f32 rounding merges with the scalar's,
    # where one is (a test moved onto 1 - u then drops the element the prompt keeps)
    lower = torch.nextafter(inside, torch.full_like(inside, -math.inf))
    merged = lower[(1 - inside) == (1 - lower)]
    lower = merged if merged.numel() else lower
    return float(lower[rng.randrange(lower.numel())])


def make_inputs(task: Task, sizes: Mapping[str, int], seed: int = 0, *, extreme: bool = False,
                bench: bool = False, shapes_only: bool = False, order: str | None = None) -> dict[str, Any]:
    """The call's arguments for one size assignment, reproducible from (task, sizes, seed);
    a variant's host-only arguments as it gives them (``dtype=`` as a torch dtype), None for
    the optional tensors it omits. ``extreme``: inputs with an extreme-value domain use it;
    ``bench``: scalars take their bench values (timing), else they are drawn (checking);
    ``shapes_only``: tensors on the meta device, nothing drawn (to plan a launch of these
    shapes without their memory); ``order``: float inputs of an ordinary domain sorted
    ``ascending`` or ``descending`` along every axis (:func:`sorted_along_axes`), a reduction's
    halves made ``cancelling`` (:func:`kernelgen.task.reductions.with_cancelling_halves`), an
    offset added (:func:`kernelgen.task.offset.offset_orders`), an input cancelling the rest of
    its output (``addend:NAME``, :func:`kernelgen.task.addends.with_cancelled_addend`), or one
    constant and far off zero along axes (``shift:NAME:AXES``, :func:`kernelgen.task.shifts.with_shift`),
    an integer input at one value (``concentrated:NAME``, :func:`kernelgen.task.concentrated.with_concentrated`),
    scalars set (``scalars:NAME=VALUE,...``, :func:`kernelgen.task.scalar_conditions.with_scalars`), or on the
    ordinary domains the lines an extreme draw puts extrema at the ends of (``end_lines``: a chunk_edge draw's
    twin, :func:`kernelgen.task.draws.multiple_draws`). Drawn once per process and copied after
    (:mod:`kernelgen.task.memo`)."""
    if shapes_only:
        return _drawn_inputs(task, sizes, seed, extreme=extreme, bench=bench, shapes_only=True, order=order)
    return remembered_inputs(task.model_dump_json(), sizes, (seed, extreme, bench, order),
                             lambda: _drawn_inputs(task, sizes, seed, extreme=extreme, bench=bench, order=order))


def _drawn_inputs(task: Task, sizes: Mapping[str, int], seed: int, *, extreme: bool, bench: bool,
                  shapes_only: bool = False, order: str | None = None) -> dict[str, Any]:
    """:func:`make_inputs`' arguments, drawn."""
    generator = torch.Generator().manual_seed(size_seed(task, sizes, seed))
    scalars = dict(task.scalars) if bench else scalar_values(task, sizes, seed, extreme)
    if is_scalar_order(order):
        scalars = with_scalars(task, scalars, order)
    args: dict[str, Any] = {}
    given = task.variant.args if task.variant is not None else {}
    bounds_at = domain_env(task, sizes)
    specialled: list[str] = []  # float inputs drawn with specials, for with_special_pairs
    for spec in task.signature.inputs:
        if not spec.is_plain:
            value = given.get(spec.name, spec.default)
            args[spec.name] = torch_dtype(value) if spec.role == "dtype" and value is not None else value
        elif spec.name in given:  # an optional tensor the variant omits
            args[spec.name] = None
        elif spec.shape is None:
            args[spec.name] = scalars[spec.name]
        else:
            shape = tuple(d if isinstance(d, int) else int(sizes[d]) for d in spec.shape)
            if shapes_only:
                args[spec.name] = torch.empty(shape, dtype=torch_dtype(spec.dtype), device="meta")
                continue
            domain = (task.extreme_domains.get(spec.name) if extreme else None) or task.domains.get(spec.name)
            args[spec.name] = draw_tensor(spec, shape, domain, generator, bounds_at)
            integers = extreme and domain is not None and domain.kind == "integers"
            if integers and domain.same_as is None and domain.bounds(bounds_at)[0] < 0:
                # first: the bounds and the lines below are drawn on these rows
                args[spec.name] = with_negative_rows(args[spec.name],
                                                     size_seed(task, sizes, seed) ^ hash_name(spec.name),
                                                     domain.bounds(bounds_at)[0])
            if integers:
                # Both bounds among the values: an id of V - 1 in every extreme draw, not by chance
                # (the high one first: a tensor of one or two elements has room for one).
                args[spec.name] = with_specials(args[spec.name], [int(b) for b in reversed(domain.bounds(bounds_at))],
                                                 generator)
            # before the zero lines, and the fractions and near ties, which then act on these lines too
            for axis in reduced_axes(task, spec) if integers else ():
                args[spec.name] = with_spread_extremum_lines(args[spec.name], axis, *domain.bounds(bounds_at),
                                                             size_seed(task, sizes, seed) ^ hash_name(spec.name) ^ axis)
            for axis in reduced_axes(task, spec) if integers and _holds_zero(domain, bounds_at) else ():
                args[spec.name] = with_zero_extremum_lines(args[spec.name], axis,
                                                           size_seed(task, sizes, seed) ^ hash_name(spec.name) ^ axis)
            if integers and _adds_only_specials(task, spec.name):
                args[spec.name] = with_fractions_and_near_ties(args[spec.name], domain.bounds(bounds_at)[1],
                                                               size_seed(task, sizes, seed) ^ hash_name(spec.name))
            if domain is not None and domain.same_as is not None:
                args[spec.name] = rows_of(args[spec.name], args[domain.same_as], generator)
            if extreme and domain is not None and domain.kind == "full":
                args[spec.name] = with_rounding_edges(args[spec.name], _narrower_outputs(task, args[spec.name].dtype),
                                                      size_seed(task, sizes, seed) ^ hash_name(spec.name))
            if extreme and (domain is None or domain.kind in ("normal", "uniform", "integers")):
                args[spec.name] = with_scalar_neighbours(args[spec.name], domain, bounds_at, float_scalars(task, scalars),
                                                         size_seed(task, sizes, seed) ^ hash_name(spec.name))
            if extreme and (domain is None or (domain.kind == "normal" and domain.zeros)):
                args[spec.name] = with_zeros(args[spec.name], size_seed(task, sizes, seed) ^ hash_name(spec.name))
            if extreme and (domain is None or (domain.kind == "normal" and not domain.zero_rows
                                               and domain.same_as is None)):
                args[spec.name] = with_negative_rows(args[spec.name], size_seed(task, sizes, seed) ^ hash_name(spec.name))
            if extreme and (domain is None or (domain.kind == "normal" and not domain.zero_rows and not domain.ties
                                               and domain.same_as is None)) and reduces_rows(task, spec) \
                    and not golden_dots(task):
                args[spec.name] = with_mixed_magnitude_rows(args[spec.name],
                                                            size_seed(task, sizes, seed) ^ hash_name(spec.name))
            if extreme and (domain is None or domain.kind in ("normal", "uniform", "integers")):
                args[spec.name] = with_rows_at_scalars(args[spec.name], domain, bounds_at, float_scalars(task, scalars),
                                                       size_seed(task, sizes, seed) ^ hash_name(spec.name))
            for axis in end_axes(task, spec, seed) if extreme and domain is not None and domain.specials else ():
                args[spec.name] = with_infinite_lines(args[spec.name], axis, domain.special_values(bounds_at),
                                                      size_seed(task, sizes, seed) ^ hash_name(spec.name) ^ axis)
                args[spec.name] = with_lone_nan_lines(args[spec.name], axis,
                                                      size_seed(task, sizes, seed) ^ hash_name(spec.name) ^ axis)
            if extreme and domain is not None and domain.specials and args[spec.name].is_floating_point():
                for other in specialled:
                    if args[other].shape == args[spec.name].shape:
                        args[other], args[spec.name] = with_special_pairs(
                            args[other], args[spec.name], task.extreme_domains[other].special_values(bounds_at),
                            domain.special_values(bounds_at), size_seed(task, sizes, seed) ^ hash_name(f"{other}|{spec.name}"))
                if spec.name in task.extreme_domains:
                    specialled.append(spec.name)
            # last: the lines above would move these extrema off their ends (a fraction, a near tie below)
            ends = domain is None or (domain.kind in ("normal", "integers") and not domain.zero_rows
                                      and domain.same_as is None)
            for axis in end_axes(task, spec, seed) if (extreme or order == END_LINES) and ends else ():
                bounds = domain.bounds(bounds_at) if domain is not None and domain.kind == "integers" else (None, None)
                args[spec.name] = with_end_extremum_lines(args[spec.name], axis, *bounds,
                                                          size_seed(task, sizes, seed) ^ hash_name(spec.name) ^ axis)
                args[spec.name] = with_end_true_lines(args[spec.name], axis,
                                                      size_seed(task, sizes, seed) ^ hash_name(spec.name) ^ axis)
            if order in ("ascending", "descending") and _sortable(args[spec.name], domain):
                args[spec.name] = sorted_along_axes(args[spec.name], descending=order == "descending")
    if order == "cancelling" and not shapes_only:
        args = with_cancelling_halves(task, args, sizes, size_seed(task, sizes, seed), run_reference)
    if is_addend(order) and not shapes_only:
        args = with_cancelled_addend(task, args, order, size_seed(task, sizes, seed), run_reference)
    if is_shift(order) and not shapes_only:
        args = with_shift(task, args, order, size_seed(task, sizes, seed))
    if is_concentrated(order) and not shapes_only:
        args = with_concentrated(task, args, order, bounds_at)
    return with_common_offset(task, args, order) if is_offset(order) and not shapes_only else args


_STATISTIC_AXES: dict[tuple[str, str, int, str], list[int]] = {}  # by task, seed and input
PROBE_SIZE = 16  # each size (within its range) where the reference is probed for statistics along lines


def end_axes(task: Task, spec: L.Input, seed: int) -> list[int]:
    """The axes whose lines an extreme draw gives extrema at their ends (and, where the domain holds specials,
    lines wholly infinite and lines of a lone NaN): those an output reduces or takes a fixed count along
    (:func:`kernelgen.task.reductions.selected_axes`) and those an output of the input's shape takes a statistic
    along (:mod:`kernelgen.task.line_statistics`, probed once per task and seed on a plain draw of every size at
    :data:`PROBE_SIZE`: which axes a reference's outputs depend along does not change with their lengths, and
    attention's reference at a draw's 8192 keys takes seconds)."""
    reduced = reduced_axes(task, spec)
    reduced += [axis for axis in selected_axes(task, spec) if axis not in reduced]
    key = (f"{task.tier}/{task.id}:{task.variant.name if task.variant is not None else ''}", task.reference, seed,
           spec.name)
    if key not in _STATISTIC_AXES:
        sizes = {name: min(max(r.min, PROBE_SIZE), r.max) for name, r in task.sizes.items()}
        _STATISTIC_AXES[key] = statistic_axes(task, spec.name, make_inputs(task, sizes, seed), run_reference,
                                              skip=reduced)
    return reduced + _STATISTIC_AXES[key]


def _narrower_outputs(task: Task, dtype: torch.dtype) -> list[torch.dtype]:
    """The float dtypes of the task's outputs of a smaller range than ``dtype`` (a cast's target)."""
    found = []
    for out in task.signature.outputs:
        try:
            narrow = torch_dtype(out.dtype)
        except (KeyError, ValueError):  # a dtype variable this task leaves open
            continue
        if narrow.is_floating_point and not is_fp8(narrow) and dtype.is_floating_point \
                and torch.finfo(narrow).max < torch.finfo(dtype).max and narrow not in found:
            found.append(narrow)
    return found


def _holds_zero(domain, bounds_at: Mapping[str, Any]) -> bool:
    """Whether an integers domain's range holds 0."""
    low, high = domain.bounds(bounds_at)
    return low <= 0 <= high


def _adds_only_specials(task: Task, name: str) -> bool:
    """Whether an input's extreme domain is its ordinary one (none of its own) or that with
    specials added (argmax's NaN): the extreme draws of an integers domain then get fractions
    and near ties as well; an extreme domain of its own (small integers, for ties) keeps its ties."""
    extreme = task.extreme_domains.get(name)
    return extreme is None or extreme.model_copy(update={"specials": []}) == task.domains.get(name)


def domain_env(task: Task, sizes: Mapping[str, int]) -> dict[str, Any]:
    """What a domain's host expressions are evaluated in for one call: the sizes and the
    call's choice arguments (its variant's, else their defaults). An index table bounded by the
    extent along the dim the call chooses (index_fill_'s ``{op: where, cond: {op: eq, lhs: dim,
    rhs: 0}, x: M, y: N}``) reaches that extent's last element in every call; a bound shared by
    both dims (min(M, N)) never draws a row index past N, where a kernel that guards rows with
    the column count drops it."""
    given = task.variant.args if task.variant is not None else {}
    choices = {spec.name: given.get(spec.name, spec.default) for spec in task.signature.inputs
               if spec.role == "choice"}
    return {**sizes, **{name: value for name, value in choices.items()
                        if isinstance(value, (bool, int, float)) and name not in sizes}}


def _sortable(values: torch.Tensor, domain) -> bool:
    """Whether a sorted draw sorts this input: floats of a normal, uniform or integers domain
    (each value stays in it; ids, offsets and ends are integers, and zero rows keep their rows)."""
    return (values.dtype.is_floating_point and values.dim() > 0
            and (domain is None or domain.kind in ("normal", "uniform", "integers") and not domain.zero_rows))


def sorted_along_axes(values: torch.Tensor, descending: bool = False) -> torch.Tensor:
    """``values`` sorted along each axis in turn, last first: nondecreasing (nonincreasing)
    along every axis at once (sorting the columns of a matrix of sorted rows keeps its rows
    sorted), so a row's largest values lie at its end whichever axis a kernel reduces over.
    Sorted in f64 (exact for every float dtype); NaN sorts as the largest."""
    wide = values.to(torch.float64)
    for axis in reversed(range(wide.dim())):
        wide = wide.sort(dim=axis, descending=descending).values
    return wide.to(values.dtype)


def run_reference(task: Task, inputs: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    """The reference's outputs, computed on private copies of the inputs."""
    return reference_call(task, inputs)[0]


def reference_call(task: Task, inputs: Mapping[str, Any]) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """The reference's outputs and its private copies of the inputs after the call (an in-place
    operator changed some: a call of the kernel must change them alike, :func:`inputs_unchanged`);
    an earlier call's on equal inputs where one was kept (:mod:`kernelgen.task.memo`)."""
    def call() -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        copies = {name: v.clone() if isinstance(v, torch.Tensor) else v for name, v in inputs.items()}
        with torch.no_grad():
            result = task.reference_function()(*copies.values())
        return _reference_outputs(task, result), copies

    return remembered_reference(f"{task.id}\n{task.reference}", inputs, call)


def order_overflows(task: Task, sizes: Mapping[str, int], seed: int, expected: Mapping[str, torch.Tensor],
                    order: str | None = None, extreme: bool = False) -> bool:
    """Whether the reference's outputs on a draw with an order (sorted, cancelling, offset:
    ``expected``) hold more infinities or NaNs than on the values as drawn (extreme where it is:
    their NaNs are not the order's; an extreme draw scaled up was taken for an overflow and left
    unjudged): the order left what the task's promise covers (a cumprod of values near 1, sorted
    descending, climbs past f32's largest value and back, and every f32 kernel's running product
    stays inf; an exp of an offset input overflows), so the draw judges nothing. Never for scalars
    set (``scalars:...``): their ranges are the task's promise."""
    if is_scalar_order(order) or order in (NONFINITE_ORDER, VECTORS_ORDER):  # the nonfinite draw's infinities are its point
        return False
    plain = run_reference(task, make_inputs(task, sizes, seed, extreme=extreme))
    return any(int((~value.float().isfinite()).sum()) > int((~plain[name].float().isfinite()).sum())
               for name, value in expected.items() if value.is_floating_point())


def _reference_outputs(task: Task, result: Any) -> dict[str, torch.Tensor]:
    results = result if isinstance(result, (tuple, list)) else (result,)
    outputs = task.signature.outputs
    if len(results) != len(outputs):
        raise ValueError(f"the reference of {task.id} returned {len(results)} values for {len(outputs)} outputs")
    return {spec.name: torch.as_tensor(value).to(torch_dtype(spec.dtype))
            for spec, value in zip(outputs, results)}


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and bool(torch.equal(a.float().nan_to_num(12345.0), b.float().nan_to_num(12345.0)))


def _telling(value: torch.Tensor) -> bool:
    """Whether an output equal to this input is evidence of copying: the input holds at least
    COPY_MIN_DISTINCT distinct values (one element, or a few repeated values, can equal the
    output by coincidence of a wrong formula, and then ``mismatch`` says enough)."""
    value = value.detach()
    if is_fp8(value.dtype):
        value = value.float()  # torch has no unique of fp8
    return int(torch.unique(value).numel()) >= COPY_MIN_DISTINCT


def _number(element: torch.Tensor, other: torch.Tensor | None = None) -> str:
    """One element for a message: integers exactly, floats to 6 significant digits, or to 9 (all
    of an f32's) where ``other``, the element it is compared with, prints the same at 6 (an exact
    comparison one ulp off: 1.6378 against 1.6378)."""
    value = element.item()
    if not isinstance(value, float):
        return str(value)
    close = other is not None and f"{value:.6g}" == f"{other.item():.6g}"
    return f"{value:.9g}" if close else f"{value:.6g}"


def compare_outputs(task: Task, actual: Mapping[str, torch.Tensor], expected: Mapping[str, torch.Tensor],
                    inputs: Mapping[str, Any], sizes: Mapping[str, int],
                    written: Mapping[str, torch.Tensor] | None = None, atol_scale: float = 1.0,
                    drawn: Mapping[str, Any] | None = None,
                    rounding: InputRounding | InputsRoom | None = None) -> list[Diagnostic]:
    """Every way ``actual`` fails to be the reference's result (empty when it matches).
    ``atol_scale`` multiplies the tolerance's atol (a draw of scaled-up inputs,
    :mod:`kernelgen.task.magnitude`). A float output's mismatching elements are judged again
    with the reference's own error as a floor (:mod:`kernelgen.task.wide_reference`), from the
    inputs the reference was called on: ``drawn`` where the call changed ``inputs`` (an
    in-place operator: the reference on what it left would judge another draw). ``rounding``: on
    an offset or shift draw, an element within what rounding the inputs moves the exact result by
    also passes (:mod:`kernelgen.task.offset`), on a sorted draw one within a sorted sum's drift
    (:mod:`kernelgen.task.sorted_room`).

    ``written`` says, per output, which elements the kernel stored (None where the caller
    cannot know, as for the baseline's own allocations): any other element is ``unwritten``.
    All zeros is trivial when the reference is not zero within the tolerance (a reference
    computed in f64 may give 1e-13 where the true value is 0)."""
    found: list[Diagnostic] = []
    where = ", ".join(f"{k}={v}" for k, v in sizes.items())
    reference64 = WideReference(task, inputs if drawn is None else drawn)
    products = ProductRounding(task, inputs if drawn is None else drawn, sizes) \
        if task.tolerance is not None and task.tolerance.products is not None else None
    for index, spec in enumerate(task.signature.outputs):
        path = f"/outputs/{index}"
        # On the reference's device: the GPU in GPU mode, where a CPU comparison of a large
        # draw outlasted the launch timeout.
        want = expected[spec.name].detach()
        got = actual[spec.name].detach().to(want.device)
        if tuple(got.shape) != tuple(want.shape):
            found.append(Diagnostic(path, "wrong_shape",
                                    f"{spec.name} has shape {list(got.shape)}, the reference {list(want.shape)} ({where})"))
            continue
        if got.dtype != want.dtype:
            found.append(Diagnostic(path, "wrong_dtype", f"{spec.name} is {got.dtype}, expected {want.dtype}"))
            continue
        if got.numel() == 0:
            continue
        tol = _scaled(task.tolerance_for(spec.dtype), atol_scale)
        unwritten = ~written[spec.name].detach().to(want.device) if written is not None else None
        admitted = False  # within the room of an offset, shift or sorted draw
        if unwritten is not None and unwritten.any():
            first = unwritten.nonzero()[0].tolist()
            found.append(Diagnostic(path, "unwritten",
                                    f"{int(unwritten.sum())} of {got.numel()} elements of {spec.name} were never "
                                    f"written (first at {first}) ({where})"))
        elif not (comparison := _compared(got, want, spec.name, spec.dtype, tol, reference64, rounding, products)).ok:
            first = comparison.first_mismatch
            found.append(Diagnostic(path, "mismatch",
                                    f"{comparison.mismatches} of {got.numel()} elements of {spec.name} differ beyond "
                                    f"{comparison.criterion}; max abs error {comparison.max_abs_error:.4g}; "
                                    f"first at {list(first)}: got {_number(got[first], want[first])}, expected "
                                    f"{_number(want[first], got[first])} ({where})"))
        else:
            admitted = rounding is not None
        # fp8 compares through f32 (not every device has fp8 comparison kernels). All zeros that
        # the inputs' rounding admits are no evidence of a kernel that wrote nothing: at logits of
        # 2**40 a cross-entropy as logsumexp - x[target] is 0 wherever the classes tie (shifts.py).
        wide = got.float() if is_fp8(got.dtype) else got
        if bool((wide == 0).all()) and not bool((want.double().abs() <= tol.atol).all()) and not admitted:
            found.append(Diagnostic(path, "trivial_zeros", f"{spec.name} is all zeros and the reference is not ({where})"))
        for name, value in inputs.items():
            # The equality tests first: _telling's unique sorts the whole input (44 s for a
            # 1 GB one on two CPU threads).
            if isinstance(value, torch.Tensor) and value.shape == got.shape and value.dtype == got.dtype \
                    and _same(value.to(got.device), got) and not _same(value.to(got.device), want) and _telling(value):
                found.append(Diagnostic(path, "copies_input", f"{spec.name} is a copy of input {name} ({where})"))
    return found


def _compared(got: torch.Tensor, want: torch.Tensor, name: str, dtype: str, tol: Tolerance,
              reference64: WideReference, rounding: InputRounding | InputsRoom | None = None,
              products: ProductRounding | None = None) -> Comparison:
    """``got`` against ``want`` under ``tol``; where that fails a float output, again with the
    reference's own error as a floor, on an offset draw the inputs' rounding, and for sums of
    products their accumulation's rounding (each computed only then)."""
    comparison = compare_tensors(got, want, dtype, tol)
    if comparison.ok or (not floorable(dtype, tol) and rounding is None and products is None):
        return comparison
    tol = rounding.tolerance(name, tol) if rounding is not None else tol
    sources = [] if tol.exact else [r.around(name, want) for r in (rounding, products) if r is not None]
    wide = reference64.result(name, want) if floorable(dtype, tol) else None
    return compare_tensors(got, want, dtype, tol, wide, [a for a in sources if a is not None])


def order_problems(task: Task, outputs: Mapping[str, torch.Tensor],
                   orders: Mapping[str, Mapping[str, torch.Tensor]], sizes: Mapping[str, int],
                   kernel_outputs: list[L.Output] | None = None, atol_scale: float = 1.0,
                   rounding: InputRounding | InputsRoom | None = None) -> list[Diagnostic]:
    """Where another program order (:mod:`kernelgen.interp.orders`) gave the interpreter another
    result than lockstep's beyond the task's tolerance (``order_dependent``): a GPU may run the
    programs in that order. The first such output of the first such order. Outputs by the
    task's names, or (``kernel_outputs``) by the kernel's, as the interpreter returns them.
    ``rounding``: on an offset draw, results within what rounding the inputs moves the exact
    result by of each other agree (a sum's order rounds otherwise, and the draw magnifies it)."""
    where = ", ".join(f"{k}={v}" for k, v in sizes.items())
    specs = kernel_outputs if kernel_outputs is not None else task.signature.outputs
    for description, other in orders.items():
        for index, spec in enumerate(specs):
            if spec.name not in outputs:
                continue
            base, moved = outputs[spec.name].detach(), other[spec.name].detach()
            tol = _scaled(task.tolerance_for(spec.dtype), atol_scale)
            comparison = compare_tensors(moved, base, spec.dtype, tol, overflow=True)
            if rounding is not None and not comparison.ok and not tol.exact:
                comparison = compare_tensors(moved, base, spec.dtype, rounding.tolerance(spec.name, tol),
                                             around=[a for a in [rounding.around(spec.name, base, centre=base)]
                                                     if a is not None], overflow=True)
            if comparison.ok:
                continue
            first = comparison.first_mismatch
            return [Diagnostic(f"/outputs/{index}", "order_dependent",
                               f"{spec.name} depends on the order programs run in: under {description} "
                               f"{comparison.mismatches} of {base.numel()} elements differ from lockstep's; first at "
                               f"{list(first)}: {_number(moved[first], base[first])}, not "
                               f"{_number(base[first], moved[first])} ({where}). A GPU may run either order: neither an "
                               f"atomic's old value nor the order of float atomic adds may decide the result")]
    return []


def inputs_unchanged(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Diagnostic]:
    found = []
    for index, (name, value) in enumerate(before.items()):
        if isinstance(value, torch.Tensor) and not _same(value, after[name].to(value.device)):
            found.append(Diagnostic(f"/inputs/{index}", "input_modified", f"the kernel modified input {name}"))
    return found


def inputs_as_reference(task: Task, before: Mapping[str, Any], reference_after: Mapping[str, Any],
                        after: Mapping[str, Any], atol_scale: float = 1.0) -> list[Diagnostic]:
    """Each tensor input after a call of the kernel (``after``) as the reference leaves it: the
    same as ``before`` where the reference leaves it, else (an in-place operator) within the
    task's tolerance of the reference's, so a call that writes another input, or none, fails."""
    found = []
    for index, (name, value) in enumerate(before.items()):
        if reference_leaves(value, reference_after[name]):
            if isinstance(value, torch.Tensor) and not _same(value, after[name].to(value.device)):
                found.append(Diagnostic(f"/inputs/{index}", "input_modified", f"the kernel modified input {name}"))
            continue
        want, got = reference_after[name], after[name].to(value.device)
        tol = _scaled(task.tolerance_for(dtype_name(value.dtype)), atol_scale)
        if got.shape != want.shape or not compare_tensors(got, want, dtype_name(value.dtype), tol).ok:
            found.append(Diagnostic(f"/inputs/{index}", "input_modified",
                                    f"the reference changes input {name} in place; after the call it is not what "
                                    "the reference leaves (write it with an output's 'into')"))
    return found


def _scaled(tolerance: Tolerance, atol_scale: float) -> Tolerance:
    """A task's tolerance with its atols (rtol's and the stepped one) multiplied by ``atol_scale``."""
    return tolerance if atol_scale == 1.0 else dataclasses.replace(
        tolerance, atol=tolerance.atol * atol_scale, step_atol=tolerance.step_atol * atol_scale)


def reference_leaves(value: Any, reference_after: Any) -> bool:
    """Whether the reference left this argument as it was (not a tensor: yes)."""
    return not isinstance(value, torch.Tensor) or _same(value, reference_after)


def guarded(tensor: torch.Tensor, fill: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """A copy of ``tensor`` inside a larger buffer with guard bands of ``fill``; returns the
    buffer and the view the kernel sees."""
    flat = tensor.reshape(-1)
    buffer = torch.full((flat.numel() + 2 * GUARD_ELEMENTS,), fill, dtype=tensor.dtype, device=tensor.device)
    view = buffer[GUARD_ELEMENTS:GUARD_ELEMENTS + flat.numel()]
    view.copy_(flat)
    return buffer, view.view(tensor.shape)


def guard_fill(dtype: torch.dtype) -> Any:
    if is_fp8(dtype):
        return -96.0  # fp8 (e4m3 and e5m2 hold it exactly; -7777 would be NaN or saturate)
    if dtype.is_floating_point:
        return -7777.0
    if dtype == torch.bool:
        return True
    low = torch.iinfo(dtype).min
    return -7777 if low <= -7777 else -97 if low < 0 else 159  # 1-byte integers: the byte 0x9F


def guards_intact(name: str, buffer: torch.Tensor) -> list[Diagnostic]:
    bands = torch.cat([buffer[:GUARD_ELEMENTS], buffer[-GUARD_ELEMENTS:]])
    # Bit for bit: the fill as the dtype holds it (f16 rounds -7777 to -7776), and fp8 has no
    # comparison kernels.
    if torch.equal(bands.view(torch.uint8), torch.full_like(bands, guard_fill(buffer.dtype)).view(torch.uint8)):
        return []
    return [Diagnostic("", "out_of_bounds_write",
                       f"the kernel wrote outside {name} (into the {GUARD_ELEMENTS}-element guard band)")]
