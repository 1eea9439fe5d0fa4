"""The interpreter's work budget: a launch too large to interpret is refused before it runs.

A model can write a kernel whose launch never ends on the CPU: a grid thousands of times too
large, a grid of 2**31 - 1 programs, loops nested a million deep. The interpreter estimates
the work of a launch first, in element operations, and refuses it past :data:`BUDGET` with
``over_budget`` (outcome ``timeout``, like a GPU launch past its time limit); the CPU-time
limit in :mod:`kernelgen.interp.execute` catches what the estimate cannot see.

The estimate: every statement costs the elements of its largest value (a ``dot`` its
multiply-adds), plus a fixed
:data:`STATEMENT_COST` for the interpreter's own work per statement and chunk of programs; a
loop multiplies its body by its trip count. Trip counts come from the loop bounds, evaluated
for the first and the last program (the larger is taken), with an enclosing loop's variable at
its first and at its last value (the larger again: a triangular nest does most inner trips at
one end); a bound the estimate cannot evaluate (one that depends on a block, say) counts as
one trip.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from kernelgen.lang import nodes as L
from kernelgen.check.checker import child
from kernelgen.errors import Diagnostic, InterpreterLimit
from kernelgen.host.plan import torch_dtype

if TYPE_CHECKING:
    from kernelgen.host.plan import LaunchPlan

# Element operations one launch may take. The interpreter does 1e7 to 1e8 of them a second; the
# goldens at their CPU-mode sizes need at most about 1e7 (2**23), an elementwise kernel over 16M
# elements about 2**27. Past 2**32 a launch would run for minutes.
BUDGET = 1 << 32
# What one statement costs per chunk of programs beyond its elements: the Python and torch
# dispatch of the interpreter, worth about this many element operations.
STATEMENT_COST = 1 << 12
# Enclosing loops whose bodies are estimated twice (at the variable's first and last value):
# past this many the body is estimated at the last value only, so the estimate of a deep nest
# takes at most 2**MAX_FORKS passes over a body.
MAX_FORKS = 8


def statement_costs(kernel: L.Kernel, types: dict[str, Any]) -> dict[str, int]:
    """Per program, the elements of the largest value of each statement (a dot's multiply-adds),
    by the statement's path (a loop's own are its bounds' and carries'; its body's statements
    have their own)."""
    costs: dict[str, int] = {}
    for path, t in types.items():
        owner = _owner(path)
        costs[owner] = max(costs.get(owner, 1), t.numel)
    for path in _dots(kernel.body, "/body"):
        owner = _owner(path)
        costs[owner] = max(costs[owner], types[path].numel * types[child(path, "lhs")].shape[-1])
    return costs


def _dots(node: Any, path: str) -> list[str]:
    """The paths of the ``dot`` nodes under ``node``."""
    if isinstance(node, list):
        return [p for i, item in enumerate(node) for p in _dots(item, child(path, i))]
    if not isinstance(node, L.Node):
        return []
    found = [path] if isinstance(node, L.Dot) else []
    for key, value in L.node_fields(node):
        found += _dots(value, child(path, key))
    return found


def _owner(path: str) -> str:
    """``/body/3/body/2/value/lhs`` belongs to statement ``/body/3/body/2`` (and
    ``/body/1/else/0/value`` to ``/body/1/else/0``)."""
    parts = path.split("/")[1:]
    owner, i = "", 0
    while i + 1 < len(parts) and parts[i] in ("body", "then", "else") and parts[i + 1].isdigit():
        owner += f"/{parts[i]}/{parts[i + 1]}"
        i += 2
    return owner


class _Estimate:
    def __init__(self, plan: LaunchPlan, run: Any, chunks: int) -> None:
        self.run = run
        self.numels = statement_costs(plan.checked.kernel, plan.checked.types)
        self.programs = plan.num_programs
        self.chunks = chunks
        self.most_trips = 0
        self.forks = 0

    def statements(self, stmts: list[L.Stmt], path: str, env: dict[str, Any]) -> int:
        """Element operations of ``stmts`` over all programs, once."""
        total = 0
        for i, s in enumerate(stmts):
            spath = child(path, i)
            own = self.programs * self.numels.get(spath, 1) + self.chunks * STATEMENT_COST
            if isinstance(s, L.For):
                total += self.loop(s, spath, env, own)
            elif isinstance(s, L.If):
                # Both branches may run (for different programs): both count.
                total += own + sum(self.statements(stmts, child(spath, side), dict(env))
                                   for side, stmts in (("then", s.then), ("else", s.else_)))
                for r in s.results:
                    env.pop(r.name, None)
            else:
                total += own
                if isinstance(s, L.Let):
                    self.bind(s.name, s.value, child(spath, "value"), env)
        return total

    def loop(self, f: L.For, path: str, env: dict[str, Any], own: int) -> int:
        """The loop's trips times its body's work, the body estimated with the loop's variable
        at its first and at its last value (the larger is taken): an inner loop running from
        the outer variable to the end does most trips at the outer loop's start."""
        bounds = [self.value(getattr(f, n), child(path, n), env) for n in ("start", "stop", "step")]
        if any(b is None for b in bounds):
            trips, values = 1, [None]
        else:
            start, stop, step = (b.to(torch.int64).tolist() for b in bounds)
            counts = [0 if d <= 0 else max(0, -(-(b - a) // d)) for a, b, d in zip(start, stop, step)]
            trips = max(counts, default=0)
            last = [a + max(n - 1, 0) * d for a, n, d in zip(start, counts, step)]
            values = [last] if trips <= 1 or self.forks >= MAX_FORKS else [start, last]
        self.most_trips = max(self.most_trips, trips)
        self.forks += len(values) - 1
        body = 0
        for value in values:
            inner = dict(env)
            if value is None:
                inner.pop(f.var, None)
            else:
                var_dtype = torch_dtype(self.run.types[child(path, "var")].dtype)
                inner[f.var] = torch.tensor(value, dtype=torch.int64).to(var_dtype)
            for i, c in enumerate(f.carry):
                self.bind(c.name, c.init, child(path, "carry", i, "init"), inner)
            body = max(body, self.statements(f.body, child(path, "body"), inner))
        self.forks -= len(values) - 1
        for c in f.carry:
            env.pop(c.name, None)
        return trips * (own + body)

    def bind(self, name: str, expr: L.Expr, path: str, env: dict[str, Any]) -> None:
        value = self.value(expr, path, env)
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value

    def value(self, expr: L.Expr, path: str, env: dict[str, Any]) -> torch.Tensor | None:
        """A scalar's value for the representative programs, or None where the estimate cannot
        know it before running (a block, a name it could not bind, a fault)."""
        t = self.run.types.get(path)
        if t is None or t.shape or t.pointer:
            return None
        try:
            return self.run.typed(self.run.eval(expr, path, env), t.dtype)
        except Exception:  # noqa: BLE001 - the run itself meets, and reports, any real fault
            return None


def estimated_work(plan: LaunchPlan, run: Any, programs: int, chunks: int) -> int:
    """The estimated element operations of ``programs`` of the launch run in ``chunks`` chunks
    (``run`` as for :func:`check_budget`)."""
    estimate = _Estimate(plan, run, chunks)
    estimate.programs = programs
    return estimate.statements(plan.checked.kernel.body, "/body", run.initial_env())


def check_budget(plan: LaunchPlan, run: Any, chunks: int) -> None:
    """Refuse a launch whose estimated work is past :data:`BUDGET`. ``run`` is an interpreter
    over the first and last program, used to evaluate scalar lets and loop bounds; the
    programs run in ``chunks`` chunks."""
    estimate = _Estimate(plan, run, chunks)
    work = estimate.statements(plan.checked.kernel.body, "/body", run.initial_env())
    if work <= BUDGET:
        return
    largest = max(estimate.numels.values(), default=1)
    loops = f", loops of up to {estimate.most_trips} iterations" if estimate.most_trips else ""
    raise InterpreterLimit(Diagnostic(
        "/grid", "over_budget",
        f"this launch needs about {work:.3g} element operations ({plan.num_programs} programs, statements of up "
        f"to {largest} elements{loops}), more than the interpreter's budget of {BUDGET:.3g}; it is refused as a "
        f"launch past its time limit would be: launch programs for the elements that exist (a grid from the "
        f"sizes), and loop only as far as the data goes"))
