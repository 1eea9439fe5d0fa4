"""Where a kernel's own tests of its sizes change their answer, found by evaluating them.

A kernel may take another path (drop a tail, cap a loop, skip a bias) only where a condition on
its sizes holds: ``M * N >= 2**20``, splits capped at ``minimum(cdiv(cdiv(S, 64), 16), 8)``,
``sqrt(float(M) * float(N)) > 1024``, ``(M * N) >> 20 != 0``, a band ``5000 < N < 6000``, ``M > 2 * N
and N > 1024``, a param ``numel(x)`` against a ``iinfo`` bound. Reading such a condition's shape
(undoing its arithmetic to a threshold) sees only the forms it was written for (red-team round
20: 24 kernels past it), so each condition is *evaluated* instead, in torch, on many size
assignments at once: every comparison and every ``and``/``or``/``not`` of them, and each
``minimum``/``maximum`` as the comparison it makes, whose operands read sizes, literals and meta
values alone (lets, params the host computes, host values, ``num_programs``, ``numel`` and
``stride`` put in place; anything else, a load or a program id, leaves the condition out).

:func:`condition_regions` sweeps the sizes the conditions read: every value of one common size
(all of a group's names at it, the others at their minimum) and a geometric ladder of each name
against the others (sizes unequal: ``M > 2 * N``); each combination of the conditions' answers
other than the ranges' minima's gets one assignment, well inside the region where it holds (1.5
to 2 times where it starts, or the middle of a band, odd where the region allows), and the
minima's own answers where they come back after a change (``N % 3000 < 16``); then each again
with the other sizes large (a band drawn at M = 1 hides a path wrong from the second row on),
all within the caller's budget, the groups taking turns. Conditions that never change, decoys
and range checks, are dropped before any cap (round 21: sixty of them hid the sixty-first).

Known gaps (round 21, tools/redteam_round21/README.md): a size computed through a loop carry, an
if's result or a reduction is not followed (the condition reads "?" and is left out); integer
arithmetic is exact in 64 bits (an i32 product that wraps past 2**31 answers otherwise in the
kernel; floats are in the kernel's dtypes, :func:`evaluate`); bitcasts are not modelled;
groups of four sizes or more get only the common sweep; a condition on program ids is read at the
last program only (one true for the middle programs alone is missed); conditions on num_sms are
not sizes' and are not swept (those on scalar inputs are :mod:`kernelgen.task.scalar_conditions`').
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Callable, Mapping

import torch

from kernelgen.check.checked import Checked, launches_of
from kernelgen.check.sequence import nodes
from kernelgen.lang import nodes as L
from kernelgen.task.size_reads import _lets
from kernelgen.task.spec import Task

# Conditions in one sweep (their answers are bits of one int64 code).
CONDITIONS = 60
# The longest sweep of one common value (every integer up to it; past it, a geometric ladder).
SWEEP = 1 << 24
# Ladder factor of the sweeps of sizes against each other (groups of two or three names).
LADDER = 1.15


@dataclass(frozen=True)
class Condition:
    """A boolean expression of sizes (lets, params, host values and tensor infos in place)."""

    expr: object
    names: frozenset[str]
    metas: Mapping[str, int]


def size_conditions(task: Task, checked: Checked) -> list[Condition]:
    """Every condition a launch of the kernel computes from the task's sizes alone, once each; and
    every one it computes from its program ids and sizes, at the last program (``row * N >= 2**22``
    with row the program id: rows past 2**22 / N go another way, and M * N past that is drawn)."""
    return kernel_conditions(checked, {name: r.min for name, r in task.sizes.items()})


def kernel_conditions(checked: Checked, names: Mapping[str, float]) -> list[Condition]:
    """Every condition a launch of the kernel computes from ``names`` alone (sizes, scalar
    inputs; each with a value it is probed at), once each, also at the last program."""
    found: list[Condition] = []
    for each in launches_of(checked):
        metas = {m.name: m.value for m in each.kernel.meta}
        for node, _ in nodes(each.kernel, ""):
            if isinstance(node, L.Binary) and node.op in ("minimum", "maximum"):
                # which operand it takes: below, at (either) and above
                asked = [L.Binary(op=op, lhs=node.lhs, rhs=node.rhs) for op in ("lt", "gt")]
            elif isinstance(node, L.Binary) and node.op in (*L.COMPARISON_OPS, *L.LOGICAL_OPS) or \
                    isinstance(node, L.Unary) and node.op == "not":
                asked = [node]
            else:
                continue
            for expr in [inliner(each.kernel, last)(e) for e in asked for last in (False, True)]:
                read = _names(expr) - set(metas)
                if not read or not read <= set(names):
                    continue
                probe = evaluate(expr, {**metas, **{n: names[n] for n in read}})
                condition = Condition(expr, frozenset(read), metas)
                if probe is not None and probe.dtype == torch.bool and condition not in found:
                    found.append(condition)
    return found


def condition_regions(task: Task, conditions: list[Condition], fits: Callable[[dict[str, int]], bool],
                      seed: int, most: int, fits_large: Callable[[dict[str, int]], bool] | None = None
                      ) -> list[dict[str, int]]:
    """At most ``most`` size assignments, one per region where the conditions' answers differ from
    those at the ranges' minima (and the first region past the minima's own where the same
    answers come back: ``N % 3000 < 16``), each within ``fits``; the groups of sizes take turns,
    so that one group's many thresholds do not spend the others' draws (see the module docstring)."""
    if not conditions:
        return []
    rng = random.Random(f"{task.id}:{seed}:conditions")
    lowest = {name: r.min for name, r in task.sizes.items()}
    groups = list(dict.fromkeys(c.names for c in conditions))
    union = frozenset().union(*groups)
    if len(union) <= 3 and union not in groups:
        groups.append(union)
    turns: list[list[dict[str, int]]] = []
    for names in sorted(groups, key=lambda g: (len(g), sorted(g))):
        relevant = [c for c in conditions if c.names <= names]
        seen: set[tuple[bool, tuple[bool | None, ...]]] = set()
        mine: list[dict[str, int]] = []
        for sizes, again in _common_sweep(task, names, relevant, lowest, fits, rng) + \
                _ladder_sweep(task, names, relevant, lowest, fits):
            # keyed by the answers of every relevant condition there: each sweep's codes are bits
            # over the conditions that change in that sweep, so the same code can stand for other
            # answers in the other sweep
            key = (again, answer_tuple(relevant, sizes))
            if key not in seen:
                seen.add(key)
                mine.append(sizes)
        # then each of them again with the other sizes large, within ``fits_large`` where given
        # (these draws hold the most elements): a band drawn with M = 1 hides a path wrong only
        # from the second row on
        turns.append(mine + [s for s in (_others_large(task, names, sizes, fits_large or fits) for sizes in mine)
                             if s is not None])
    found: list[dict[str, int]] = []
    for sizes in (s for round_ in itertools.zip_longest(*turns) for s in round_ if s is not None):
        if sizes not in found:
            found.append(sizes)
            if len(found) >= most:
                break
    return found


def _others_large(task: Task, names: frozenset[str], sizes: dict[str, int],
                  fits: Callable[[dict[str, int]], bool]) -> dict[str, int] | None:
    """``sizes`` with the names outside ``names`` at one value (clamped to their ranges), as large
    as ``fits`` allows past their minimum; None where there are none or none fits larger."""
    others = [n for n in task.sizes if n not in names]
    if not others:
        return None

    def at(value: int) -> dict[str, int]:
        return {**sizes, **{n: min(max(value, task.sizes[n].min), task.sizes[n].max) for n in others}}

    value = largest(lambda v: fits(at(v)), 1, max(task.sizes[n].max for n in others))
    value -= 1 - value % 2 if value > 2 else 0
    large = at(value)
    return large if large != sizes and fits(large) else None


def _common_sweep(task: Task, names: frozenset[str], relevant: list[Condition], lowest: Mapping[str, int],
                  fits: Callable[[dict[str, int]], bool], rng: random.Random) -> list[tuple[dict[str, int], bool]]:
    """Every name of ``names`` at one value v (clamped to its range), v over every integer the
    budget allows: per combination of answers, the first run of values where it holds (for the
    minima's own, the second), and a value in it; True for the minima's own answers."""
    def at(value: int) -> dict[str, int]:
        return {**lowest, **{n: min(max(value, task.sizes[n].min), task.sizes[n].max) for n in names}}

    top = max(task.sizes[n].max for n in names)
    reach = largest(lambda v: fits(at(v)), 1, top)
    values = torch.arange(1, reach + 1) if reach <= SWEEP else torch.cat(
        [torch.arange(1, SWEEP + 1), _ladder(SWEEP, reach)]).unique()
    env = {n: values.clamp(task.sizes[n].min, task.sizes[n].max) for n in names}
    env |= {n: torch.tensor([v]) for n, v in lowest.items() if n not in names}
    answered = _codes(relevant, env, lowest)
    if answered is None:
        return []
    codes, base = answered[0].expand(values.shape), answered[1]
    chosen: list[tuple[dict[str, int], bool]] = []
    for code in codes.unique().tolist():
        where = (codes == code).nonzero().flatten()
        ends = (where[1:] - where[:-1] != 1).nonzero().flatten().tolist()  # where each run stops
        runs = [(int(where[i + 1]) if k else int(where[0]), int(where[j]))
                for k, (i, j) in enumerate(zip([-1, *ends], [*ends, len(where) - 1]))]
        if code == base:
            runs = runs[1:]  # the minima's run: the other draws are there already
        if runs:
            start, stop = int(values[runs[0][0]]), int(values[runs[0][1]])
            chosen.append((at(_inside(start, stop, rng)), code == base))
    return chosen


def _ladder_sweep(task: Task, names: frozenset[str], relevant: list[Condition], lowest: Mapping[str, int],
                  fits: Callable[[dict[str, int]], bool]) -> list[tuple[dict[str, int], bool]]:
    """Each name of ``names`` (two or three) over a geometric ladder of its range, against the
    others': per combination of answers other than the minima's, the smallest assignment where it
    holds that fits, taken 1.5 times further where the combination still holds and it still fits."""
    if not 2 <= len(names) <= 3:
        return []
    order = sorted(names)
    ladders = [_ladder(task.sizes[n].min, task.sizes[n].max) for n in order]
    grids = torch.meshgrid(*ladders, indexing="ij")
    env = {n: g.flatten() for n, g in zip(order, grids)}
    env |= {n: torch.tensor([v]) for n, v in lowest.items() if n not in names}
    answered = _codes(relevant, env, lowest)
    if answered is None:
        return []
    codes, base = answered[0].expand(env[order[0]].shape), answered[1]
    kept = [c for c in relevant if _changes(c, env, lowest)][:CONDITIONS]
    volume = torch.ones_like(env[order[0]], dtype=torch.float64)
    for n in order:
        volume = volume * env[n]
    chosen: list[tuple[dict[str, int], bool]] = []
    for code in [c for c in codes.unique().tolist() if c != base]:
        candidates = (codes == code).nonzero().flatten()
        for index in candidates[volume[candidates].argsort()][:64].tolist():
            sizes = {**lowest, **{n: int(env[n][index]) for n in order}}
            if not fits(sizes):
                continue
            further = {**sizes, **{n: min(task.sizes[n].max, sizes[n] * 3 // 2 | 1) for n in order}}
            there = _answers(kept, {n: torch.tensor([v]) for n, v in further.items()})
            chosen.append((further if there == code and fits(further) else sizes, False))
            break
    return chosen


def _inside(start: int, stop: int, rng: random.Random) -> int:
    """A value well inside [start, stop]: 1.5 to 2 times start where the run reaches that far
    (a path that drops what lies past a threshold is off by the share dropped: within tolerance
    just past it), else its middle; odd where the run holds one (no block divides it)."""
    low, high = start + start // 2, 2 * start
    value = rng.randint(low, min(high, stop)) if low <= stop else (start + stop) // 2
    return value if value % 2 or value + 1 > stop else value + 1


def _ladder(low: int, high: int) -> torch.Tensor:
    """Integers from ``low`` to ``high`` growing by about :data:`LADDER` each (every one at first), both ends included."""
    values, v = [], max(low, 1)
    while v < high:
        values.append(v)
        v = max(v + 1, int(v * LADDER))
    return torch.tensor(sorted({*values, high, low}))


def largest(fits: Callable[[int], bool], low: int, high: int) -> int:
    """The largest value in [low, high] that ``fits`` (monotone, as a footprint grows with a size:
    bisect), ``low`` where none does."""
    if fits(high):
        return high
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if fits(mid) else (low, mid - 1)
    return low


def _changes(condition: Condition, env: Mapping[str, torch.Tensor], lowest: Mapping[str, int]) -> bool:
    """Whether a condition answers otherwise somewhere in ``env`` than at ``lowest`` (or anywhere:
    where it cannot be evaluated, it is left out)."""
    answer = evaluate(condition.expr, {**condition.metas, **env})
    low = evaluate(condition.expr, {**condition.metas, **{n: torch.tensor([v]) for n, v in lowest.items()}})
    if answer is None or low is None or answer.dtype != torch.bool or low.dtype != torch.bool:
        return False
    return bool(answer.any()) != bool(answer.all()) or bool(answer.flatten()[0]) != bool(low.flatten()[0])


def _codes(conditions: list[Condition], env: Mapping[str, torch.Tensor],
           lowest: Mapping[str, int]) -> tuple[torch.Tensor, int] | None:
    """The answers, at ``env``, of the conditions that change there (:func:`_changes`; the first
    :data:`CONDITIONS`), as bits of one int64, and their answers at ``lowest``: conditions that
    never change (decoys, range checks) take no bit, before the cap. None: none changes."""
    kept = [c for c in conditions if _changes(c, env, lowest)][:CONDITIONS]
    if not kept:
        return None
    code = torch.zeros(1, dtype=torch.int64)
    for bit, condition in enumerate(kept):
        code = code + (evaluate(condition.expr, {**condition.metas, **env}).to(torch.int64) << bit)
    return code, _answers(kept, {n: torch.tensor([v]) for n, v in lowest.items()})


def answer_tuple(conditions: list[Condition], sizes: Mapping[str, int]) -> tuple[bool | None, ...]:
    """Each condition's answer at one assignment (None where it cannot be evaluated there)."""
    env = {n: torch.tensor([v]) for n, v in sizes.items()}
    answers = (evaluate(c.expr, {**c.metas, **env}) for c in conditions)
    return tuple(bool(a.flatten()[0]) if a is not None and a.dtype == torch.bool else None for a in answers)


def _answers(kept: list[Condition], env: Mapping[str, torch.Tensor]) -> int:
    """The kept conditions' answers at one assignment, as bits."""
    return sum(int(bool(evaluate(c.expr, {**c.metas, **env}).flatten()[0])) << bit for bit, c in enumerate(kept))


# -- evaluation ----------------------------------------------------------------------------

_UNARY = {"exp": torch.exp, "exp2": torch.exp2, "exp2_ftz": torch.exp2, "log": torch.log, "log2": torch.log2,
          "log1p": torch.log1p, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "tanh": torch.tanh,
          "sigmoid": torch.sigmoid, "erf": torch.erf, "sin": torch.sin, "cos": torch.cos, "floor": torch.floor,
          "ceil": torch.ceil, "round": torch.round}
_EVALUATED = (L.Binary, L.Unary, L.Cast, L.Where, L.Clamp, L.Fma)
_FLOATS = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
_COMPARE = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}


def evaluate(expr: object, env: Mapping[str, object]) -> torch.Tensor | None:
    """``expr``'s value with the names in ``env`` (ints or integer tensors, broadcast together):
    integers in their dtypes (an int literal in i32 where it fits, as in the language; an i32
    scalar's product wraps, ``seed * 4 == -8`` holds at seed = 2**30 - 2; sizes come as int64)
    with a division by zero 0, as the language has it; floats in the dtype
    the kernel computes them in where the names or casts give one (an f32 scalar, ``cast(N, f32)``:
    a literal takes its operand's dtype, as in the language, so ``slope == 0.3`` holds at the
    f32 of 0.3 and ``(s + 1024) - 1024`` rounds as f32 does), else f64; None where it reads
    anything else or an operation this evaluation does not model."""
    if isinstance(expr, bool):
        return torch.tensor(expr)
    if isinstance(expr, int):
        return torch.tensor(expr, dtype=torch.int32 if -2 ** 31 <= expr < 2 ** 31 else torch.int64)
    if isinstance(expr, float):
        return torch.tensor(expr, dtype=torch.float64)
    if isinstance(expr, str):
        value = env.get(expr)
        return None if value is None else torch.as_tensor(value)
    if isinstance(expr, L.TypeInfo):
        return _type_info(expr)
    if not isinstance(expr, _EVALUATED):
        return None
    parts = {key: evaluate(value, env) for key, value in L.node_fields(expr) if key not in ("op", "dtype")}
    if any(value is None for value in parts.values()):
        return None
    try:
        if isinstance(expr, L.Unary):
            x = parts["x"]
            if expr.op == "not":
                return ~x if x.dtype == torch.bool else None
            if expr.op in ("abs", "neg"):
                return x.abs() if expr.op == "abs" else -x
            return _UNARY[expr.op](x if x.is_floating_point() else x.double())
        if isinstance(expr, L.Cast):
            return _cast(parts["x"], expr.dtype)
        if isinstance(expr, L.Where):
            return torch.where(parts["cond"].bool(), *_common(parts["x"], parts["y"]))
        if isinstance(expr, L.Fma):  # one rounding, to the operands' dtype
            dtype = torch.promote_types(torch.promote_types(parts["x"].dtype, parts["y"].dtype), parts["z"].dtype)
            exact = parts["x"].double() * parts["y"].double() + parts["z"].double()
            return exact.to(dtype) if dtype.is_floating_point else exact
        if isinstance(expr, L.Clamp):
            return torch.minimum(*_common(torch.maximum(*_common(parts["x"], parts["lo"])), parts["hi"]))
        return _binary(expr.op, parts["lhs"], parts["rhs"])
    except (RuntimeError, KeyError, TypeError):
        return None


def _common(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Two operands in one dtype: of two floats, the wider, a literal (a 0-d tensor) taking the
    other's; an integer with a float, the float's; of two integers the wider, a literal taking
    the other's where that holds it."""
    if a.is_floating_point() and b.is_floating_point():
        dtype = b.dtype if a.dim() == 0 and b.dim() else a.dtype if b.dim() == 0 and a.dim() else \
            torch.promote_types(a.dtype, b.dtype)
        return a.to(dtype), b.to(dtype)
    if a.is_floating_point() or b.is_floating_point():
        dtype = a.dtype if a.is_floating_point() else b.dtype
        return a.to(dtype), b.to(dtype)
    if a.dtype == torch.bool and b.dtype == torch.bool:
        return a, b
    a, b = (x.to(torch.int64) if x.dtype == torch.bool else x for x in (a, b))
    dtype = b.dtype if a.dim() == 0 and b.dim() and _holds(a, b.dtype) else \
        a.dtype if b.dim() == 0 and a.dim() and _holds(b, a.dtype) else torch.promote_types(a.dtype, b.dtype)
    return a.to(dtype), b.to(dtype)


def _holds(literal: torch.Tensor, dtype: torch.dtype) -> bool:
    info = torch.iinfo(dtype)
    return info.min <= int(literal) <= info.max


def _binary(op: str, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor | None:
    if op in _COMPARE:
        return _COMPARE[op](*_common(a, b))
    if op in ("and", "or", "xor"):
        a, b = _common(a, b)
        if a.dtype == torch.bool:
            return {"and": torch.logical_and, "or": torch.logical_or, "xor": torch.logical_xor}[op](a, b)
        return {"and": torch.bitwise_and, "or": torch.bitwise_or, "xor": torch.bitwise_xor}[op](a, b)
    a, b = _common(a, b)
    if op in ("add", "sub", "mul", "maximum", "minimum"):
        return {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "maximum": torch.maximum,
                "minimum": torch.minimum}[op](a, b)
    if op in ("div", "pow"):
        if not a.is_floating_point():
            a, b = a.double(), b.double()
        return a / b if op == "div" else torch.pow(a, b)
    if a.is_floating_point():
        return torch.fmod(a, b) if op == "rem" else None
    safe = torch.where(b == 0, torch.ones_like(b), b)
    if op in ("idiv", "cdiv", "rem"):
        if op == "rem":
            result = torch.fmod(a, safe)
        else:
            result = torch.div(a + (safe - 1 if op == "cdiv" else 0), safe, rounding_mode="trunc")
        return torch.where(b == 0, torch.zeros_like(result), result)
    if op in ("shl", "shr", "lshr"):
        bits = torch.iinfo(a.dtype).bits
        amount = b.clamp(0, bits - 1)
        if op == "shl":
            return torch.where(b.ge(0) & b.lt(bits), a << amount, torch.zeros_like(a))
        if op == "lshr" and bits < 64:  # the bits, unsigned
            return ((a.to(torch.int64) & ((1 << bits) - 1)) >> amount).to(a.dtype)
        return a >> amount
    if op == "umulhi":  # of i32 operands, unsigned: the high 32 bits of the 64-bit product
        return (((a.to(torch.int64) & 0xFFFFFFFF) * (b.to(torch.int64) & 0xFFFFFFFF)) >> 32).to(a.dtype)
    return None


def _cast(x: torch.Tensor, dtype: object) -> torch.Tensor | None:
    if not isinstance(dtype, str):
        return None  # a dtype variable: the binding decides
    if dtype == "bool":
        return x != 0
    if dtype.startswith(("f", "bf")):
        # rounded to the dtype, carried in f32 where narrower (the language computes there)
        rounded = x.to(_FLOATS[dtype]) if dtype in _FLOATS else x.double()
        return rounded.double() if dtype == "f64" else rounded.float()
    from kernelgen.host.plan import torch_dtype

    target = torch_dtype(dtype)  # an integer narrower than its value wraps, as a cast does on the GPU
    return x.trunc().to(torch.int64).to(target) if x.is_floating_point() else x.to(target)


def _type_info(expr: L.TypeInfo) -> torch.Tensor | None:
    if not isinstance(expr.dtype, str) or expr.dtype.startswith("f8"):
        return None
    from kernelgen.host.plan import torch_dtype

    dtype = torch_dtype(expr.dtype)
    if dtype.is_floating_point:
        info = torch.finfo(dtype)
        return torch.tensor({"eps": info.eps, "max": info.max, "min": info.min, "tiny": info.tiny}[expr.what],
                            dtype=torch.float64)
    if expr.what not in ("max", "min"):
        return None
    info = torch.iinfo(dtype)
    return torch.tensor(info.max if expr.what == "max" else info.min, dtype=dtype)


# -- names in place ------------------------------------------------------------------------


# How deep names are put in place (a chain of 24 lets, each a sum, is 48 deep), and how many nodes
# one condition may grow to; past either the name stays, and the condition reads it (left out).
INLINE_DEPTH = 400
INLINE_NODES = 1 << 14


def inliner(kernel: L.Kernel, last: bool = False) -> Callable[[object], object]:
    """A function that writes an expression with each let bound once, each param the host
    computes and each host value put in place of its name, ``num_programs`` as the grid's size,
    and ``numel``/``stride`` of a tensor as the product of its shape's sizes (tensors are
    contiguous), through every expression node; with ``last``, ``program_id`` as the last
    program's (a path for programs past 4096 is taken, if anywhere, by the last one)."""
    bound: dict[str, list[object]] = {}
    for let in _lets(kernel.body or []):
        bound.setdefault(let.name, []).append(let.value)
    single = {name: values[0] for name, values in bound.items() if len(values) == 1}
    for value in kernel.host_values or []:
        single.setdefault(value.name, value.value)
    for param in kernel.params or []:
        if param.value is not None and param.value != param.name:
            single.setdefault(param.name, param.value)
    shapes = {spec.name: list(spec.shape or []) for spec in [*kernel.inputs, *kernel.outputs]}

    def product(dims: list[object]) -> object:
        result: object = 1
        for dim in dims:
            result = L.Binary(op="mul", lhs=result, rhs=dim)
        return result

    made = [0]  # nodes written so far: lets that each use the last twice would double it per let

    def inline(expr: object, depth: int = 0) -> object:
        made[0] += 1
        if depth > INLINE_DEPTH or made[0] > INLINE_NODES:
            return expr
        if isinstance(expr, str):
            return inline(single[expr], depth + 1) if expr in single else expr
        if isinstance(expr, L.ProgramId):
            if expr.axis >= len(kernel.grid or []) or expr.op == "program_id" and not last:
                return expr
            grid = inline(kernel.grid[expr.axis], depth + 1)
            return grid if expr.op == "num_programs" else L.Binary(op="sub", lhs=grid, rhs=1)
        if isinstance(expr, L.TensorInfo):
            dims = shapes.get(expr.of)
            if dims is None:
                return expr
            return inline(product(dims if expr.op == "numel" else dims[expr.dim + 1:]), depth + 1)
        if isinstance(expr, _EVALUATED):
            return expr.model_copy(update={key: inline(value, depth + 1) for key, value in L.node_fields(expr)
                                           if key not in ("op", "dtype")})
        return expr

    return inline


def _names(expr: object) -> set[str]:
    """The names an expression reads; a node this module does not evaluate counts as "?"."""
    if isinstance(expr, str):
        return {expr}
    if isinstance(expr, L.TypeInfo) or isinstance(expr, (bool, int, float)):
        return set()
    if isinstance(expr, _EVALUATED):
        return {n for key, value in L.node_fields(expr) if key not in ("op", "dtype") for n in _names(value)}
    return {"?"}

