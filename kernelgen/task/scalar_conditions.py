"""Where a kernel's own tests of its scalar inputs change their answer: the settings of the
scalars that CPU mode's scalar-crossing draws take (:func:`kernelgen.task.draws.scalar_draws`).

A kernel may take another path only at a scalar value the uniform draws never hit: a shortcut at
``negative_slope == 0`` that drops the sign test, ``alpha == 1.0``, a band 1% of the range wide,
``min_val == max_val`` (red-team rounds 21 to 24). Three kinds of setting:

- :func:`scalar_settings`: the conditions a kernel computes from its ranged scalars (and sizes,
  literals, meta values) alone are evaluated (:func:`kernelgen.task.size_conditions.evaluate`, in
  the scalars' dtypes) over a grid of each scalar's range, at special points (0, -0.0, +-1, each
  literal and its neighbours in the dtype, the range's ends, the other scalars' values) and where
  each comparison crosses or turns between grid values (:func:`_refined`), the other scalars at
  an ordinary value and the sizes at the draw's; each combination of answers other than the
  grid's commonest gets one setting (a grid value inside a band, at random, else the point);
  then each other scalar is swept again with one at each band found.
- :func:`mixed_settings`: a condition of scalars and sizes together (``float(N) * slope >
  2**20``), with the scalars at their ranges' ends, an ordinary value or a setting the sweep
  found, is one of sizes alone, whose regions :func:`kernelgen.task.size_conditions.condition_regions`
  finds; the scalars are swept again at each region's sizes.
- :func:`special_settings` and :func:`literal_settings`: 0, -0.0 and 1, and each number a
  comparison reading a scalar (or a name computed from it) holds, whatever the evaluation can
  follow (a test through a loop carry, a load or a bitcast).

The prompt's promises hold in every setting: a scalar another must be at least (``at_least``)
stays ordered against it. A scalar compared with the random numbers (``at_rand``: dropout's p)
is swept too; a setting puts it off the random number its other draws hold it at. A setting
travels in a draw's ``order`` (:func:`scalar_order`); :func:`with_scalars` puts it in the call's
arguments. Known gaps (tools/redteam_round24/README.md): a hash's zeros, program ids,
a test flat on the grid with no literal at its point.
"""

from __future__ import annotations

import itertools
import math
import random
from typing import Any, Callable, Mapping, Sequence

import torch

from pydantic import BaseModel

from kernelgen.check.checked import ANY_INT_DTYPES, Checked, launches_of
from kernelgen.check.sequence import nodes
from kernelgen.host.plan import torch_dtype
from kernelgen.lang import nodes as L
from kernelgen.task.size_conditions import (Condition, answer_tuple, condition_regions, evaluate, inliner,
                                            kernel_conditions)
from kernelgen.task.spec import Task

SCALARS = "scalars"
# Points of the uniform grid over a scalar's range (a band narrower than a 4096th of it is met
# only through the literals that bound it).
GRID = 4096
# Values the uniform draws are unlikely to hit but kernels special-case, tried where in range.
SPECIAL = (0.0, -0.0, 1.0, -1.0)
# Comparisons' crossings and turns refined per comparison, and the steps of each refinement.
REFINED = GRID
STEPS = 80
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
# Where in its range a scalar that is not swept stays (see :func:`_ordinary`).
INSIDE = 0.382


def swept_scalars(task: Task) -> dict[str, str]:
    """The scalar inputs a setting may take (each with a range), with their dtypes."""
    return {spec.name: spec.dtype for spec in task.signature.inputs
            if spec.shape is None and spec.is_plain and spec.name in task.scalar_ranges}


def scalar_settings(task: Task, checked: Checked, sizes: Mapping[str, int], most: int,
                    seed: int) -> list[dict[str, Any]]:
    """At most ``most`` settings of the ranged scalars (module docstring), each a value per swept
    scalar, where the kernel's conditions on them answer otherwise than at most of the range; a
    band's value at random inside it (its middle may be the one value a wrong path gets right).
    Bands and single points take turns, the rarest of each first, so that points (decoys) do not
    spend a band's setting. Then each other scalar is swept again with one at each setting found
    (``value == threshold`` only where ``0.5 < threshold < 0.95``: two scalars moved together)."""
    rng = random.Random(f"{task.id}:{seed}:scalars")
    dtypes = swept_scalars(task)
    if not dtypes:
        return []
    middle = _ordinary(task)
    conditions = [c for c in kernel_conditions(checked, {**sizes, **middle}) if c.names & set(dtypes)]
    read = sorted({n for c in conditions for n in c.names & set(dtypes)})
    bands: list[tuple[float, dict[str, Any]]] = []  # (share of the grid, setting)
    points: list[dict[str, Any]] = []
    for name in read:
        found = _sweep(task, name, dtypes, conditions, middle, sizes, rng)
        bands += found[0]
        points += found[1]
        for _, base in sorted(found[0], key=lambda item: item[0])[:most] if len(read) > 1 else []:
            for other in (n for n in read if n != name):
                more = _sweep(task, other, dtypes, conditions, base, sizes, rng)
                bands += more[0]
                points += more[1]
    bands.sort(key=lambda item: item[0])
    settings: dict[str, dict[str, Any]] = {}  # by their order: -0.0 and 0.0 are two settings
    for pair in itertools.zip_longest([b for _, b in bands], points):
        for setting in pair:
            if setting is not None:
                settings.setdefault(scalar_order(setting), setting)
    return list(settings.values())[:most]


def _sweep(task: Task, name: str, dtypes: Mapping[str, str], conditions: list[Condition], base: Mapping[str, Any],
           sizes: Mapping[str, int], rng: random.Random) -> tuple[list[tuple[float, dict[str, Any]]],
                                                                  list[dict[str, Any]]]:
    """One scalar swept, the others at ``base``: a setting per combination of the conditions'
    answers the grid's commonest does not give, as bands (with their share of the grid) and
    single points."""
    relevant = [c for c in conditions if name in c.names]
    values, on_grid = _candidates(task, name, dtypes, relevant, base, sizes)
    if values.numel() == 0:
        return [], []
    env = {**_env(sizes, base, dtypes), name: _typed(values, dtypes[name])}
    answers = [_answer(c, env, values.numel()) for c in relevant]
    # conditions that answer alike everywhere (decoys, range checks) take no bit
    changing = [a for a in answers if a is not None and bool(a.any()) != bool(a.all())][:62]
    code = torch.zeros(values.shape, dtype=torch.int64)
    for bit, answer in enumerate(changing):
        code = code + (answer.to(torch.int64) << bit)
    grid_codes = code[on_grid]
    common = int(grid_codes.mode().values) if grid_codes.numel() else None
    bands: list[tuple[float, dict[str, Any]]] = []
    points: list[dict[str, Any]] = []
    for answer in code.unique().tolist():
        if answer == common:
            continue
        here = code == answer
        inside = (here & on_grid).nonzero().flatten()
        if inside.numel():
            at = inside[rng.randrange(inside.numel())]
            bands.append((float((grid_codes == answer).double().mean()), {**base, name: _plain(values[at], dtypes[name])}))
        else:
            at = here.nonzero().flatten()
            points.append({**base, name: _plain(values[at[rng.randrange(at.numel())]], dtypes[name])})
    return bands, points


def literal_settings(task: Task, checked: Checked, most: int) -> list[dict[str, Any]]:
    """Each swept scalar at each number a comparison that reads it, or a value computed from it
    (through lets, loop carries, if results, reductions), holds (in its range, other than 0 and
    1; an int literal also as the f32 of its bits, for a bitcast), the others at an ordinary
    value: a test the evaluation leaves out (it reads a load, a carry, a bitcast) still gets its
    literal drawn. At most ``most``, the first-found first."""
    dtypes = swept_scalars(task)
    middle = _ordinary(task)
    found: dict[str, dict[str, Any]] = {}
    for each in launches_of(checked):
        inline = inliner(each.kernel)
        for name, dtype in dtypes.items():
            tainted = _tainted(each.kernel, name)
            for node, _ in nodes(each.kernel, ""):
                if not (isinstance(node, L.Binary) and node.op in (*COMPARISONS, "minimum", "maximum")) \
                        or not _reads(node, tainted):
                    continue
                for literal in _literals(inline(node)) + _literals(node):
                    for value in _as_values(literal, dtype):
                        if value in (0, 1) or not task.scalar_ranges[name].holds(value):
                            continue
                        setting = {**middle, name: value}
                        if _ordered(task, setting):
                            found.setdefault(scalar_order(setting), setting)
    return list(found.values())[:most]


def _tainted(kernel: L.Kernel, name: str) -> set[str]:
    """``name`` and every name a value computed from it is bound to (lets, carries, if results,
    loop variables), to a fixed point."""
    bindings: list[tuple[str, list[object]]] = []
    for node, _ in nodes(kernel.body or [], ""):
        if isinstance(node, L.Let):
            bindings.append((node.name, [node.value]))
        elif isinstance(node, L.For):
            bindings += [(carry.name, [carry.init, carry.next]) for carry in node.carry]
            bindings.append((node.var, [node.start, node.stop, node.step]))
        elif isinstance(node, L.If):
            bindings += [(result.name, [result.then, result.else_, node.cond]) for result in node.results]
    for param in kernel.params or []:
        if param.value is not None:
            bindings.append((param.name, [param.value]))
    tainted = {name}
    while True:
        grown = {bound for bound, exprs in bindings if bound not in tainted and any(_reads(e, tainted) for e in exprs)}
        if not grown:
            return tainted
        tainted |= grown


def _reads(expr: object, names: set[str]) -> bool:
    if isinstance(expr, str):
        return expr in names
    if isinstance(expr, list):
        return any(_reads(item, names) for item in expr)
    if isinstance(expr, BaseModel):
        return any(_reads(value, names) for key, value in L.node_fields(expr) if key not in ("op", "dtype"))
    return False


def _as_values(literal: float, dtype: str) -> list[Any]:
    """A literal as values of the scalar's dtype: itself, and for an integer literal of an f32
    scalar the f32 its bits make (``bitcast(alpha, i32) == 1069547520``: alpha 1.5)."""
    if dtype == "bool":
        return []
    if dtype in ANY_INT_DTYPES:
        return [int(literal)] if float(literal).is_integer() else []
    values = [float(torch.tensor(float(literal), dtype=torch.float64).to(torch_dtype(dtype)))]
    if dtype == "f32" and isinstance(literal, int) and -2 ** 31 <= literal < 2 ** 32:
        bits = torch.tensor([literal - (2 ** 32 if literal >= 2 ** 31 else 0)], dtype=torch.int32)
        view = float(bits.view(torch.float32))
        if math.isfinite(view) and abs(view) >= torch.finfo(torch.float32).tiny:  # a normal float's bits
            values.append(view)
    return [v for v in values if math.isfinite(v)]


def _ordered(task: Task, setting: Mapping[str, Any]) -> bool:
    """Whether the pairs a range keeps ordered (``at_least``) are in order in ``setting``."""
    return all(setting[n] >= setting[r.at_least] for n, r in task.scalar_ranges.items()
               if r.at_least is not None and n in setting and r.at_least in setting)


def special_settings(task: Task) -> list[dict[str, Any]]:
    """Every swept scalar at 0, at -0.0 and at 1 where its range holds that value (the others at
    an ordinary value), where the pairs a range keeps ordered stay so: the values kernels
    special-case, set whatever the kernel's conditions read (a test through a loop carry, an if's
    result, a reduction or a bitcast is not evaluated), and every scalar at once (a path wrong only
    where two are 0 together)."""
    dtypes = swept_scalars(task)
    middle = _ordinary(task)
    found: dict[str, dict[str, Any]] = {}
    for special in (0.0, -0.0, 1.0):
        setting = dict(middle)
        for name, dtype in dtypes.items():
            value = _plain(torch.tensor(special), dtype)
            if task.scalar_ranges[name].holds(value) and not (special == 0 and math.copysign(1, special) < 0
                                                            and dtype in ANY_INT_DTYPES):
                setting[name] = value
        if _ordered(task, setting) and setting != middle:
            found.setdefault(scalar_order(setting), setting)
    return list(found.values())


def _env(sizes: Mapping[str, int], middle: Mapping[str, Any], dtypes: Mapping[str, str]) -> dict[str, torch.Tensor]:
    """Sizes as int64 (a kernel's size params are i32, but a product of sizes that wraps is the
    largest draws' concern), scalars in their dtypes (one value each)."""
    return {**{n: torch.tensor([v]) for n, v in sizes.items()},
            **{n: _typed(torch.tensor([float(v)]), dtypes[n]) for n, v in middle.items()}}


def _typed(values: torch.Tensor, dtype: str) -> torch.Tensor:
    if dtype == "bool":
        return values != 0
    return values.to(torch.int64).to(torch_dtype(dtype)) if dtype in ANY_INT_DTYPES else values.to(torch_dtype(dtype))


def _answer(condition: Condition, env: Mapping[str, torch.Tensor], count: int) -> torch.Tensor | None:
    """A condition's answers at ``count`` values of the swept scalar (None: not evaluated)."""
    answer = evaluate(condition.expr, {**condition.metas, **env})
    if answer is None or answer.dtype != torch.bool or answer.numel() not in (1, count):
        return None
    return answer.flatten().expand(count)


def mixed_settings(task: Task, checked: Checked, seed: int, fits: Callable[[dict[str, int]], bool],
                   most: int, swept: Sequence[Mapping[str, Any]] = (),
                   swept_at: Mapping[str, int] | None = None) -> list[tuple[dict[str, int], dict[str, Any], bool]]:
    """Sizes and a setting where a condition of scalars and sizes together answers otherwise
    (``float(N) * slope > 2**20``: N past 2**19 at the slope's top): each such condition with its
    scalars at their ranges' ends, an ordinary value and each of ``swept`` (the settings the sweep
    at ``swept_at`` found: ``N < 1000 and 1.98 < slope < 1.99`` needs the slope in its band) becomes
    one of sizes alone, whose regions
    :func:`kernelgen.task.size_conditions.condition_regions` finds within ``fits`` (for a swept
    setting, those and the ranges' minima where the answers differ from ``swept_at``'s); then, at each
    region's sizes, the scalars where the tests answer otherwise there (:func:`scalar_settings`):
    ``N < 1000 and 1.98 < slope < 1.99`` is a band of the slope at N = 501 only, which neither the
    range's ends nor the sweep at the joint draw's large sizes reach. At most ``most`` of the
    ends' regions and ``most // 2`` of the others; the last item says which (an other is drawn with
    extreme inputs too: a NaN is turned into ``value`` only where N < 1000 and threshold > 0.99)."""
    dtypes = swept_scalars(task)
    if not dtypes or not task.sizes:
        return []
    middle = _ordinary(task)
    lowest = {name: r.min for name, r in task.sizes.items()}
    rng = random.Random(f"{task.id}:{seed}:mixed")
    mixed = [c for c in kernel_conditions(checked, {**lowest, **middle})
             if c.names & set(dtypes) and c.names & set(task.sizes) and c.names <= set(dtypes) | set(task.sizes)]
    found: list[tuple[dict[str, int], dict[str, Any], bool]] = []
    ends = [{name: middle[name] if at == "inside" or task.scalar_ranges[name].values is not None
             else _plain(torch.tensor(getattr(task.scalar_ranges[name], at)), dtype)
             for name, dtype in dtypes.items()} for at in ("max", "min", "inside")]
    for setting, at in [(each, None) for each in ends] + [({**middle, **each}, swept_at) for each in swept]:
        fixed = [Condition(c.expr, c.names - set(dtypes), {**c.metas, **setting}) for c in mixed]
        regions = condition_regions(task, fixed, fits, seed, most)
        if at is not None:  # the minima's region too (condition_regions' starting point), where new
            inside = [_toward(fixed, lowest, region, rng) for region in regions[:1]] or [lowest]
            regions = [s for s in inside + regions if fits(s) and answer_tuple(fixed, s) != answer_tuple(fixed, at)]
        for sizes in regions:
            if (sizes, setting, at is not None) not in found:
                found.append((sizes, setting, at is not None))
    regions = list(dict.fromkeys(tuple(sorted(sizes.items())) for sizes, _, _ in found))
    per_region = [[(dict(region), each, True) for each in scalar_settings(task, checked, dict(region), most, seed)]
                  for region in regions]
    # the swept settings' regions first, then each region's own settings in turn (the first of each first)
    for item in itertools.chain.from_iterable(itertools.zip_longest(*per_region)):
        if item is not None and item[:2] not in [f[:2] for f in found]:
            found.append(item)
    return [f for f in found if not f[2]][:most] + [f for f in found if f[2]][:max(1, most // 2)]


def _toward(conditions: list[Condition], lowest: Mapping[str, int], region: Mapping[str, int],
            rng: random.Random) -> dict[str, int]:
    """Sizes on the line from the ranges' minima to ``region`` where the conditions still answer
    as at the minima, in the upper half of that stretch (bisected): ``N < 1000`` holds at
    N = 1, where a single element is one chance; at N = 500 to 999 it holds with many."""
    def at(t: float) -> dict[str, int]:
        return {n: lowest[n] + int(t * (region[n] - lowest[n])) for n in lowest}

    start, low, high = answer_tuple(conditions, lowest), 0.0, 1.0
    for _ in range(STEPS // 2):
        middle = (low + high) / 2
        low, high = (middle, high) if answer_tuple(conditions, at(middle)) == start else (low, middle)
    return at(rng.uniform(low / 2, low))


def scalar_order(setting: Mapping[str, Any]) -> str:
    """A setting as a draw's ``order``: ``scalars:name=value,...``."""
    return SCALARS + ":" + ",".join(f"{name}={value!r}" for name, value in setting.items())


def is_scalar_order(order: str | None) -> bool:
    return order is not None and order.startswith(SCALARS + ":")


def with_scalars(task: Task, scalars: Mapping[str, Any], order: str) -> dict[str, Any]:
    """``scalars`` with the values a :func:`scalar_order` sets in place (in each scalar's type)."""
    dtypes = swept_scalars(task)
    given = dict(scalars)
    for item in order[len(SCALARS) + 1:].split(","):
        name, _, text = item.partition("=")
        if name not in dtypes:
            raise ValueError(f"order {order!r} sets {name!r}, not a ranged scalar input of {task.id}")
        given[name] = _parse(text, dtypes[name])
    return given


def _parse(text: str, dtype: str) -> Any:
    if dtype == "bool":
        return text == "True"
    return int(text) if dtype in ANY_INT_DTYPES else float(text)


def _plain(value: torch.Tensor, dtype: str) -> Any:
    return bool(value) if dtype == "bool" else int(value) if dtype in ANY_INT_DTYPES else float(value)


def _ordinary(task: Task) -> dict[str, Any]:
    """The value each swept scalar keeps while another is swept: an ordinary one inside its range
    (:data:`INSIDE` of the way up, not its middle, which is 0 of [-1, 1]; its first value for a
    list), in the scalar's dtype."""
    values: dict[str, Any] = {}
    for name, dtype in swept_scalars(task).items():
        drawn = task.scalar_ranges[name]
        if drawn.values is not None:
            values[name] = drawn.values[0]
        elif dtype in ANY_INT_DTYPES:
            values[name] = int(drawn.min + (drawn.max - drawn.min) * INSIDE)
        else:
            inside = math.exp(math.log(drawn.min) + (math.log(drawn.max) - math.log(drawn.min)) * INSIDE) \
                if drawn.log else drawn.min + (drawn.max - drawn.min) * INSIDE
            values[name] = float(torch.tensor(inside, dtype=torch.float64).to(torch_dtype(dtype)))
    return values


def _candidates(task: Task, name: str, dtypes: Mapping[str, str], conditions: list[Condition],
                middle: Mapping[str, Any], sizes: Mapping[str, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """The values ``name`` is evaluated at (in its dtype, within its range and the order it keeps
    with other scalars), and which of them are the uniform grid's: the grid, the special values,
    the literals, and where each comparison changes its answer or comes closest to it between
    grid values (:func:`_refined`), each with its neighbours."""
    dtype = dtypes[name]
    drawn = task.scalar_ranges[name]
    integer = dtype in ANY_INT_DTYPES
    if drawn.values is not None:
        grid = torch.tensor([float(v) for v in drawn.values], dtype=torch.float64)
    elif integer and drawn.max - drawn.min <= GRID:
        grid = torch.arange(int(drawn.min), int(drawn.max) + 1, dtype=torch.float64)
    elif drawn.log:
        grid = torch.logspace(math.log10(drawn.min), math.log10(drawn.max), GRID + 1, dtype=torch.float64)
    else:
        grid = torch.linspace(drawn.min, drawn.max, GRID + 1, dtype=torch.float64)
    # the others' values too: a test of two scalars for equality (``min_val == max_val``)
    points = [*SPECIAL, *(float(v) for n, v in middle.items() if n != name)] + \
        ([] if drawn.values is not None else [drawn.min, drawn.max])
    for condition in conditions:
        for literal in _literals(condition.expr):
            points += [literal - 1, literal, literal + 1] if integer else [literal]
    if dtype != "bool":
        env = _env(sizes, {n: v for n, v in middle.items() if n != name}, dtypes)
        snapped = grid.round() if integer else _in_dtype(grid, dtype)
        points += _refined(name, dtype, conditions, env, snapped.unique())
    extra = torch.tensor(points, dtype=torch.float64)
    if integer:
        grid, extra = grid.round(), extra.round()
    elif dtype != "bool":
        grid, extra = _in_dtype(grid, dtype), _in_dtype(extra, dtype)
        step = torch.full_like(extra, math.inf)
        extra = torch.cat([extra, torch.nextafter(extra.to(torch_dtype(dtype)), step.to(torch_dtype(dtype))).double(),
                           torch.nextafter(extra.to(torch_dtype(dtype)), -step.to(torch_dtype(dtype))).double()])
    values = torch.cat([grid, extra])
    on_grid = torch.cat([torch.ones_like(grid, dtype=torch.bool), torch.zeros_like(extra, dtype=torch.bool)])
    keep = torch.tensor([drawn.holds(_plain(v, dtype)) for v in values]) if drawn.values is not None else \
        (values >= drawn.min) & (values <= drawn.max)
    if drawn.at_least is not None and drawn.at_least in middle:
        keep &= values >= middle[drawn.at_least]
    for other, other_range in task.scalar_ranges.items():
        if other_range.at_least == name and other in middle:
            keep &= values <= middle[other]
    values, on_grid = values[keep], on_grid[keep]
    if not integer and dtype != "bool":
        values = values.to(torch.float64)
    return (values.to(torch.int64) if integer else values), on_grid


def _refined(name: str, dtype: str, conditions: list[Condition], env: Mapping[str, torch.Tensor],
             grid: torch.Tensor) -> list[float]:
    """Where a comparison of the conditions changes its answer between two grid values (bisected
    to neighbouring values of the dtype) or where lhs - rhs turns between them (searched to its
    extremum): the bounds of a band narrower than the grid's step, computed (``|s - sqrt(0.09)| <
    1e-5``, ``exp(-10) < s < exp(-9)``) or of two scalars (``value == -threshold``)."""
    integer = dtype in ANY_INT_DTYPES

    def snap(v: torch.Tensor) -> torch.Tensor:
        return v.floor() if integer else _in_dtype(v, dtype)

    found: list[float] = []
    for condition in conditions:
        for compare in _comparisons(condition.expr):
            def gap(v: torch.Tensor) -> torch.Tensor | None:
                at = {**condition.metas, **env, name: _typed(v, dtype)}
                lhs, rhs = evaluate(compare.lhs, at), evaluate(compare.rhs, at)
                if lhs is None or rhs is None or lhs.dtype == torch.bool or rhs.dtype == torch.bool:
                    return None
                difference = lhs.double() - rhs.double()
                return difference.flatten().expand(v.shape) if difference.numel() in (1, v.numel()) else None

            on_grid = gap(grid)
            if on_grid is None:
                continue
            sign = on_grid.sign()
            cross = (sign[:-1] != sign[1:]).nonzero().flatten()[:REFINED]
            low, high, start = grid[cross], grid[cross + 1], sign[cross]
            for _ in range(STEPS):  # bisection: low keeps the sign at the left, high the other
                mid = snap((low + high) / 2)
                inner = (mid > low) & (mid < high)
                value = gap(mid)
                if value is None or not bool(inner.any()):
                    break
                same = value.sign() == start
                low, high = torch.where(inner & same, mid, low), torch.where(inner & ~same, mid, high)
            found += low.tolist() + high.tolist()
            slope = on_grid[1:] - on_grid[:-1]
            turn = ((slope[:-1] * slope[1:]) < 0).nonzero().flatten()[:REFINED] + 1
            sense = torch.where(slope[turn] > 0, 1.0, -1.0)  # +1: a minimum of lhs - rhs (rising after it)
            a, b = grid[turn - 1], grid[turn + 1]
            for _ in range(STEPS):  # golden-section search for the extremum
                m1, m2 = a + (b - a) * 0.382, a + (b - a) * 0.618
                f1, f2 = gap(snap(m1)), gap(snap(m2))
                if f1 is None or f2 is None:
                    break
                left = sense * f1 <= sense * f2
                a, b = torch.where(left, a, m1), torch.where(left, m2, b)
            found += snap((a + b) / 2).tolist()
    return [v for v in found if math.isfinite(v)]


def _comparisons(expr: object) -> list[L.Binary]:
    """The comparisons an expression makes (and each minimum or maximum, a comparison too)."""
    found = [expr] if isinstance(expr, L.Binary) and expr.op in (*COMPARISONS, "minimum", "maximum") else []
    if isinstance(expr, BaseModel):
        found += [c for key, value in L.node_fields(expr) if key not in ("op", "dtype") for c in _comparisons(value)]
    return found


def _in_dtype(values: torch.Tensor, dtype: str) -> torch.Tensor:
    return values.to(torch_dtype(dtype)).to(torch.float64)


def _literals(expr: object) -> list[int | float]:
    """The numbers an expression holds (the values a condition compares with), ints as ints."""
    if isinstance(expr, bool):
        return []
    if isinstance(expr, (int, float)):
        return [expr] if math.isfinite(expr) else []
    if isinstance(expr, BaseModel):
        return [v for key, value in L.node_fields(expr) if key not in ("op", "dtype") for v in _literals(value)]
    if isinstance(expr, list):
        return [v for item in expr for v in _literals(item)]
    return []
