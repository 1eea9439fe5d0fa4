"""What a kernel's code says about the sizes it must be checked at (:mod:`kernelgen.task.draws` draws
there): the largest extent a program covers, the sizes its loops walk, and the values where its
comparisons of a size flip (thresholds, equalities, multiples of a block, one size against another),
read from the checked AST with literals and meta values folded."""

from __future__ import annotations

import math
from typing import Callable, Mapping

from kernelgen.lang import nodes as L
from kernelgen.check.checked import Checked, CheckedKernel, child, launches_of
from kernelgen.check.sequence import nodes
from kernelgen.task.spec import Task


def block_extent(checked: Checked) -> int:
    """How far one program of the kernel reaches along a size: the largest of its meta values,
    every block the checker inferred as a tile (the product of its axes: a [32, 512] tile covers
    16384 elements of a row), every integer literal (a loop that stops at 4096 instead of N),
    every loop bound its meta values and literals decide (``CHUNKS * BLOCK``) and such a loop's
    trips times the largest block, and each grid size its meta values and literals decide times
    the largest block (a grid of 16 blocks of 1024 covers 16384 elements and no more); for a
    program, over all its launches; and every size threshold a comparison with a fixed value
    states (a long-row path behind ``N > BLOCK * 4``, ``cdiv(N, BLOCK) > 4`` or
    ``float(N) > 4096.0`` starts at 4096), as far as the sizes' ranges reach."""
    launches = launches_of(checked)
    metas = {m.name: m.value for m in checked.kernel.meta}
    blocks = list(metas.values())
    blocks += [math.prod(value_type.shape) for each in launches for value_type in each.types.values()
               if value_type.shape]
    block = max([1, *blocks])
    literals = _integer_literals(checked.kernel.model_dump())
    bounded = [_upper(g, metas) for each in launches for g in each.kernel.grid]
    covered = [g * block for g in bounded if g is not None]
    for each in launches:
        for loop in _loops(each.kernel.body):
            start, stop, step = (_constant(getattr(loop, n), metas) for n in ("start", "stop", "step"))
            if stop is not None:
                covered.append(abs(stop))
                if start is not None and step:
                    covered.append(max(0, -(-(stop - start) // step)) * block)
    return max([block, *literals, *covered, *size_thresholds(checked)])


_CONSTANT_OPS = frozenset({"add", "sub", "mul", "div", "idiv", "cdiv", "maximum", "minimum", "shl", "shr"})


def size_thresholds(checked: Checked) -> list[int]:
    """The values a size would have where a comparison of it with a fixed value (literals and
    meta values alone) flips, its arithmetic undone (``cdiv(N, BLOCK) > 4``: 4 * BLOCK), those
    within the sizes' ranges: a kernel may take another path past such a threshold, and a size
    past it must be drawn. A ``minimum`` or ``maximum`` with a fixed value is such a comparison
    (a loop to ``minimum(H, BLOCK * 6)``, tokens below ``minimum(T, BLOCK * 64)``: round 13)."""
    found: set[int] = set()
    for each in launches_of(checked):
        metas = {m.name: m.value for m in each.kernel.meta}
        inline = _inliner(each.kernel)
        sizes = {d for spec in [*each.kernel.inputs, *each.kernel.outputs] for d in spec.shape or []
                 if isinstance(d, str)}
        for node, _ in nodes(each.kernel, ""):
            if isinstance(node, L.Binary) and node.op in ("lt", "le", "gt", "ge", "minimum", "maximum"):
                for side, other in ((inline(node.lhs), inline(node.rhs)), (inline(node.rhs), inline(node.lhs))):
                    fixed = _fixed_value(other, metas)
                    if node.op in ("minimum", "maximum") and not _operands(side) & sizes:
                        continue  # a clamp of values (relu6's minimum(x, 6)), not of a size
                    if fixed is not None and _fixed_value(side, metas) is None:
                        at = _undone(side, fixed, metas)
                        if at is not None and 1 < at < 1 << 40:
                            found.add(math.ceil(at))
    return sorted(found)


def _inliner(kernel: L.Kernel) -> Callable[[object], object]:
    """A function that writes an expression of ``kernel``'s body with each let bound once put in
    place of its name, a param's host expression in place of the param and ``num_programs`` as
    the grid's size there, through arithmetic and casts: a threshold or a size kept in a let
    (``limit = BLOCK * 128``, ``n_blocks = cdiv(N, BLOCK)``, ``num_programs > 128``) is read as
    if written in place (round 13: each passed every draw), and so is one the host computes
    (a param ``total = M * N`` tested against ``2**20``)."""
    bound: dict[str, list[L.Expr]] = {}
    for let in _lets(kernel.body):
        bound.setdefault(let.name, []).append(let.value)
    single = {name: values[0] for name, values in bound.items() if len(values) == 1}
    for param in kernel.params or []:
        if param.value is not None and param.value != param.name and param.name not in bound:
            single[param.name] = param.value

    def inline(expr: object, depth: int = 0) -> object:
        if depth > _INLINE_DEPTH:
            return expr
        if isinstance(expr, str) and expr in single:
            return inline(single[expr], depth + 1)
        if isinstance(expr, L.ProgramId) and expr.op == "num_programs" and expr.axis < len(kernel.grid):
            return inline(kernel.grid[expr.axis], depth + 1)
        if isinstance(expr, L.Binary):
            return expr.model_copy(update={"lhs": inline(expr.lhs, depth + 1), "rhs": inline(expr.rhs, depth + 1)})
        if isinstance(expr, L.Cast):
            return expr.model_copy(update={"x": inline(expr.x, depth + 1)})
        return expr

    return inline


# How deep lets are put in place of their names: a chain of lets deeper than this is read as it stands.
_INLINE_DEPTH = 16


def _fixed_value(expr: object, metas: Mapping[str, int]) -> float | None:
    """An expression's value where literals and meta values alone decide it (floats too)."""
    if isinstance(expr, bool):
        return None
    if isinstance(expr, (int, float)):
        return float(expr)
    if isinstance(expr, str):
        return float(metas[expr]) if expr in metas else None
    if isinstance(expr, L.Cast):
        return _fixed_value(expr.x, metas)
    if not isinstance(expr, L.Binary) or expr.op not in _CONSTANT_OPS:
        return None
    lhs, rhs = _fixed_value(expr.lhs, metas), _fixed_value(expr.rhs, metas)
    if lhs is None or rhs is None:
        return None
    try:
        return {"add": lambda: lhs + rhs, "sub": lambda: lhs - rhs, "mul": lambda: lhs * rhs,
                "div": lambda: lhs / rhs, "idiv": lambda: float(int(lhs) // int(rhs)),
                "cdiv": lambda: float(-(-int(lhs) // int(rhs))), "maximum": lambda: max(lhs, rhs),
                "minimum": lambda: min(lhs, rhs), "shl": lambda: float(int(lhs) << int(rhs)),
                "shr": lambda: float(int(lhs) >> int(rhs))}[expr.op]()
    except (ZeroDivisionError, ValueError, OverflowError):
        return None


def _undone(expr: object, value: float, metas: Mapping[str, int]) -> float | None:
    """What the varying part of ``expr`` is where ``expr`` equals ``value``: through casts and
    arithmetic with fixed operands (a product, quotient, shift or sum undone), as far as it goes."""
    if isinstance(expr, L.Cast):
        return _undone(expr.x, value, metas)
    if not isinstance(expr, L.Binary):
        return value
    lhs, rhs = _fixed_value(expr.lhs, metas), _fixed_value(expr.rhs, metas)
    if rhs is not None and lhs is None:
        inverse = {"mul": lambda: value / rhs if rhs else None, "div": lambda: value * rhs,
                   "idiv": lambda: value * rhs, "cdiv": lambda: value * rhs, "add": lambda: value - rhs,
                   "sub": lambda: value + rhs, "shl": lambda: value / 2 ** rhs, "shr": lambda: value * 2 ** rhs}
        if expr.op in inverse:
            undone = inverse[expr.op]()
            return None if undone is None else _undone(expr.lhs, undone, metas)
    if lhs is not None and rhs is None and expr.op in ("mul", "add"):
        return _undone(expr.rhs, value / lhs if expr.op == "mul" and lhs else value - lhs, metas)
    return value


def _loops(stmts: list) -> list[L.For]:
    """Every ``for`` among ``stmts``, nested ones included."""
    found = []
    for s in stmts:
        if isinstance(s, L.For):
            found += [s, *_loops(s.body)]
        elif isinstance(s, L.If):
            found += _loops(s.then) + _loops(s.else_)
    return found


def _constant(expr: L.Expr, metas: Mapping[str, int]) -> int | None:
    """An integer expression's value where literals and meta values alone decide it, else None."""
    value = _fixed_value(expr, metas)
    return int(value) if value is not None and math.isfinite(value) and value.is_integer() else None


_FOLDED = frozenset({"add", "sub", "mul", "idiv", "cdiv", "maximum", "minimum"})


def _upper(expr: L.Expr, metas: Mapping[str, int]) -> int | None:
    """An upper bound of a grid size where literals and meta values give one, else None:
    ``minimum(cdiv(T, 16), 4096)`` is at most 4096 whatever T is (a grid capped at a fixed
    number of programs covers that many blocks); sizes are nonnegative, so a sum, product or
    quotient of bounded nonnegative parts is bounded by theirs."""
    exact = _constant(expr, metas)
    if exact is not None or not isinstance(expr, L.Binary) or expr.op not in _FOLDED:
        return exact
    lhs, rhs = _upper(expr.lhs, metas), _upper(expr.rhs, metas)
    if expr.op == "minimum":
        known = [b for b in (lhs, rhs) if b is not None]
        return min(known) if known else None
    if lhs is None or lhs < 0:
        return None
    if expr.op in ("idiv", "cdiv", "sub"):  # a bound less, or over, a fixed right-hand side
        fixed = _constant(expr.rhs, metas)
        if fixed is None or (expr.op != "sub" and fixed < 1):
            return None
        return lhs - fixed if expr.op == "sub" else -(-lhs // fixed) if expr.op == "cdiv" else lhs // fixed
    if rhs is None or rhs < 0:
        return None
    return {"add": lhs + rhs, "mul": lhs * rhs, "maximum": max(lhs, rhs)}[expr.op]


def _integer_literals(node: object) -> list[int]:
    if isinstance(node, bool):
        return []
    if isinstance(node, int):
        return [abs(node)]
    if isinstance(node, dict):
        return [i for value in node.values() for i in _integer_literals(value)]
    if isinstance(node, list):
        return [i for value in node for i in _integer_literals(value)]
    return []


def reads_num_sms(checked: Checked) -> bool:
    """Whether the kernel's host part (grid, params, scratch shapes) reads ``num_sms``."""
    def found(node: object) -> bool:
        if isinstance(node, dict):
            return node.get("op") == "num_sms" or any(found(v) for v in node.values())
        if isinstance(node, list):
            return any(found(v) for v in node)
        return False

    return found(checked.kernel.model_dump())


def size_equalities(checked: Checked) -> list[int]:
    """The values a scalar is compared with for equality (``eq``, ``ne``; and ``lt``, ``le``,
    ``gt``, ``ge`` at 2 or less, which :func:`size_thresholds` leaves out), where literals and
    meta values alone decide them, its arithmetic undone: a kernel may take another path at
    exactly such a size (a decode path at ``M == 1``), which the other draws reach only with the
    other sizes small (where a weight read as [K, N] instead of [N, K] is the same memory)."""
    found: set[int] = set()
    for each in launches_of(checked):
        metas = {m.name: m.value for m in each.kernel.meta}
        inline = _inliner(each.kernel)
        for node, path in nodes(each.kernel.body, "/body"):
            if not isinstance(node, L.Binary) or node.op not in ("eq", "ne", "lt", "le", "gt", "ge"):
                continue
            lhs, rhs = inline(node.lhs), inline(node.rhs)
            for side, other, key in ((lhs, rhs, "lhs"), (rhs, lhs, "rhs")):
                fixed, typed = _fixed_value(other, metas), each.types.get(child(path, key))
                if fixed is None or _fixed_value(side, metas) is not None or typed is None or typed.shape:
                    continue
                at = _undone(side, fixed, metas)
                if at is None or not 1 <= at < 1 << 40:
                    continue
                if node.op in ("eq", "ne") and at == int(at):
                    found.add(int(at))
                elif node.op not in ("eq", "ne") and at <= 2:
                    found.update({1, 2})
    return sorted(found)


def size_multiples(checked: Checked) -> list[int]:
    """The moduli ``m`` of the comparisons ``rem(X, m) == v`` (or ``!=``) with fixed ``m`` and
    ``v``: a path taken where a size is a multiple of a block (an ``EVEN_N`` path without masks),
    which :func:`size_equalities` cannot undo and no other draw aims at (the draws past an
    extent avoid its multiples on purpose, the joint and offset draws take odd sizes)."""
    found: set[int] = set()
    for each in launches_of(checked):
        metas = {m.name: m.value for m in each.kernel.meta}
        inline = _inliner(each.kernel)
        for node, _ in nodes(each.kernel.body, "/body"):
            if not isinstance(node, L.Binary) or node.op not in ("eq", "ne"):
                continue
            for side, other in ((inline(node.lhs), inline(node.rhs)), (inline(node.rhs), inline(node.lhs))):
                while isinstance(side, L.Cast):
                    side = side.x
                modulus = _fixed_value(side.rhs, metas) if isinstance(side, L.Binary) and side.op == "rem" else None
                if modulus is not None and _fixed_value(other, metas) is not None and modulus >= 2 \
                        and modulus == int(modulus) and _fixed_value(side.lhs, metas) is None:
                    found.add(int(modulus))
    return sorted(found)


def size_pairs(task: Task, checked: Checked) -> list[tuple[str, str]]:
    """The pairs of size names a kernel compares with each other (``M > N``, ``M == N``; through
    casts, lets and arithmetic with fixed operands: ``cdiv(M, BM) > cdiv(N, BN)``): a kernel may
    take another path where one exceeds the other, which the other draws reach only with both
    small (one size large and the others small, or all equal)."""
    found: list[tuple[str, str]] = []
    for each in launches_of(checked):
        metas = {m.name: m.value for m in each.kernel.meta}
        inline = _inliner(each.kernel)
        for node, _ in nodes(each.kernel.body, "/body"):
            if isinstance(node, L.Binary) and node.op in ("lt", "le", "gt", "ge", "eq", "ne"):
                sides = [_one_size(inline(side), task, metas) for side in (node.lhs, node.rhs)]
                pair = tuple(sorted(sides)) if all(x is not None for x in sides) else None
                if pair is not None and pair[0] != pair[1] and pair not in found:
                    found.append(pair)
    return found


def _one_size(expr: object, task: Task, metas: Mapping[str, int]) -> str | None:
    """The size name an expression reads where it reads one and otherwise only literals and meta
    values (``M``, ``cdiv(M, BLOCK_M)``: tiles of M against tiles of N), else None."""
    names = _operands(expr) - set(metas)
    return next(iter(names)) if len(names) == 1 and next(iter(names)) in task.sizes else None


def _operands(expr: object) -> set[str]:
    """The names an expression of arithmetic and casts reads; any other node counts as a name of
    its own ("?"), so that an expression with one is never one size's."""
    if isinstance(expr, str):
        return {expr}
    if isinstance(expr, L.Binary):
        return _operands(expr.lhs) | _operands(expr.rhs)
    if isinstance(expr, L.Cast):
        return _operands(expr.x)
    return {"?"} if isinstance(expr, L.Node) else set()


def looped_sizes(checked: Checked) -> set[str]:
    """The size names a loop's bounds read, directly, through a param's host expression or
    through lets (``full_blocks = S idiv BLOCK``): the reductions a kernel walks in blocks (a
    matmul's K, a long row's N)."""
    names: set[str] = set()
    for each in launches_of(checked):
        lets, hosts = _reads_of(each)
        for loop in _loops(each.kernel.body):
            for bound in (loop.start, loop.stop):
                names |= _read(names_read(bound), lets, hosts)
    return names


def tiled_sizes(checked: Checked) -> list[str]:
    """The names a kernel numbers its tiles by, where it takes a program's tile from its id by division: a launch
    whose body takes an ``idiv`` or ``rem`` of a value read from ``program_id`` (directly, through lets, or a
    loop started at one: a grouped tile order, a persistent walk of the tiles, a flat id split into a row and a
    column) gives the names those divisors read, then the other names its grid reads. Such a mapping may go wrong
    only where the tiles along two sizes are many at once (a last group of fewer rows), which no draw with all
    sizes but one small reaches. Empty for a kernel that takes its block from its id directly. All names read
    (sizes, params): callers keep the task's sizes."""
    divided: set[str] = set()
    gridded: set[str] = set()
    for each in launches_of(checked):
        lets, hosts = _reads_of(each)
        body = each.kernel.body
        derived: set[str] = set()
        bound = [(let.name, let.value) for let in _lets(body)] + [(loop.var, loop.start) for loop in _loops(body)]
        while True:  # the names a program's id flows into, through lets and loop starts
            more = {name for name, value in bound if name not in derived and _from_id(value, derived)}
            if not more:
                break
            derived |= more
        divisors = [node.rhs for node, _ in nodes(body, "") if isinstance(node, L.Binary)
                    and node.op in ("idiv", "rem") and _from_id(node.lhs, derived)]
        if divisors:
            divided |= _read(names_read(divisors), lets, hosts)
            gridded |= _read(names_read(list(each.kernel.grid)), lets, hosts)
    return sorted(divided) + sorted(gridded - divided)


def _from_id(expr: L.Expr, derived: set[str]) -> bool:
    """Whether an index expression reads ``program_id`` or a name in ``derived``; a value loaded from memory is
    data, not an index (a Collatz step's ``x % 2``)."""
    found = [node for node, _ in nodes(expr, "")]
    if any(isinstance(node, (L.Load, L.TileLoad, L.Atomic)) for node in found):
        return False
    return any(isinstance(node, L.ProgramId) and node.op == "program_id" for node in found) \
        or bool(names_read(expr) & derived)


def chunk_steps(checked: Checked) -> list[tuple[str, int]]:
    """(size name, step) for each loop whose step literals and meta values fix (2 or more) and whose stop reads the
    size, and each ``cdiv(X, m)`` with a fixed ``m`` (the grid's too) whose ``X`` reads it: the size walked, or
    spread over programs, in chunks of ``step``. Where the size is one past a multiple of the step, the last
    chunk holds one element, and a loop that stops a step early (``range(0, N - 1, BLOCK)``) or a grid one
    program short (``cdiv(N - 1, BLOCK)``) drops it there only; no other draw aims at those sizes (one in
    ``step``). The names are all those the expressions read (sizes, params, ops' names): callers keep the
    task's sizes."""
    found: list[tuple[str, int]] = []
    for each in launches_of(checked):
        metas = {m.name: m.value for m in each.kernel.meta}
        lets, hosts = _reads_of(each)
        walked = [(loop.stop, loop.step) for loop in _loops(each.kernel.body)]
        walked += [(node.lhs, node.rhs) for node, _ in nodes([*each.kernel.grid, *each.kernel.body], "")
                   if isinstance(node, L.Binary) and node.op == "cdiv"]
        for extent, step in walked:
            value = _fixed_value(step, metas)
            if value is None or value < 2 or value != int(value):
                continue
            for name in sorted(_read(names_read(extent), lets, hosts)):
                if (name, int(value)) not in found:
                    found.append((name, int(value)))
    return found


def _reads_of(launch: CheckedKernel) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """What each let of a launch's kernel reads (names are never rebound; a name in two scopes: both) and what
    each param's host expression reads, for :func:`_read`."""
    lets: dict[str, set[str]] = {}
    for let in _lets(launch.kernel.body):
        lets[let.name] = lets.get(let.name, set()) | names_read(let.value)
    return lets, {b.name: names_read(b.value) for b in launch.params if b.value is not None}


def _read(names: set[str], lets: Mapping[str, set[str]], hosts: Mapping[str, set[str]]) -> set[str]:
    """The names ``names`` read in the end: through lets, then a param's host expression."""
    found: set[str] = set()
    seen: set[str] = set()
    pending = list(names)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in lets:
            pending += lets[name]
        else:
            found |= hosts.get(name, {name})
    return found


def _lets(stmts: list) -> list[L.Let]:
    """Every ``let`` among ``stmts``, those in loop bodies and branches included."""
    found = []
    for s in stmts:
        if isinstance(s, L.Let):
            found.append(s)
        elif isinstance(s, L.For):
            found += _lets(s.body)
        elif isinstance(s, L.If):
            found += _lets(s.then) + _lets(s.else_)
    return found


def names_read(expr: object) -> set[str]:
    """The names an expression (or list of them) reads."""
    if isinstance(expr, str):
        return {expr}
    if isinstance(expr, L.Node):
        return {n for _, value in L.node_fields(expr) for n in names_read(value)}
    if isinstance(expr, list):
        return {n for value in expr for n in names_read(value)}
    return set()
