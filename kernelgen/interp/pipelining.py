"""Loads that a pipelined loop issues before the stores they should see.

Triton's software pipeliner copies a loop's loads into shared memory trips ahead of their use:
with ``num_stages`` s on a loop (or a flattened nest, or a loop with a ``dot`` under the kernel's
num_stages) the loads of trip t are issued during trip t - (s - 1), before the stores of the
trips between, and before the stores of trip t itself that precede them in its body. Compiled for
sm_90 (Triton 3.6), a loop reading back the previous chunk it stored (a running sum through
memory) issues that read in the prologue or at the end of an earlier trip (TTGIR:
``async_copy_global_to_local`` of ``out``, the ``tt.store`` to ``out`` after it), so the GPU sees
the value from before the store; triton-lang/triton#8259 shows one within a trip. The
interpreter runs the trips in order and would show the new value; it judges the hazard instead,
as it does a missing barrier: a load, in a pipelined loop, of an element the same program stored
in that loop's run within its last ``window`` trips (the current one included) is
``stale_pipelined_load``. The window is the stages times the loop's ``unroll`` (an unrolled trip
is that many of the pipeliner's), a trip more than the pipeliner's own reach: a kernel must not
lean on where exactly its prefetch stops.

Accesses of other programs are the race detector's (:mod:`kernelgen.interp.accesses`); an
atomic counts as a store. Only buffers the loop both stores and loads cost anything.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import torch
from pydantic import BaseModel

from kernelgen.errors import Diagnostic, InterpreterError
from kernelgen.lang import nodes as L

def pipeline_window(f: L.For, kernel_stages: int) -> int:
    """The trips of loop ``f`` whose stores its loads may not see (0: not pipelined): the loop's
    ``num_stages``, a flattened nest's (the outer's, else the inner's, else the kernel's), or the
    kernel's for a loop with a ``dot`` directly in its body (Triton pipelines those by default),
    times its ``unroll``; 1 or fewer stages pipeline nothing, and neither does a loop with a
    barrier anywhere in its body (Triton 3.6 leaves such a loop's loads in place: the TTGIR of a
    loop reading back its last chunk's store keeps a plain ``tt.load`` once a barrier follows the
    store, and copies it ahead without one)."""
    if _contains(f.body, L.Barrier, nested=True):
        return 0
    stages = f.num_stages
    if stages is None and f.flatten:
        inner = next((s for s in f.body if isinstance(s, L.For)), None)
        stages = (inner.num_stages if inner is not None else None) or kernel_stages
    if stages is None and _contains(f.body, L.Dot, nested=False):
        stages = kernel_stages
    if stages is None or stages < 2:
        return 0
    return stages * (f.unroll or 1)


def _contains(stmts: list[L.Stmt], kind: type, nested: bool) -> bool:
    """Whether ``stmts`` (their branches included; nested loops only where ``nested``) hold a ``kind`` node."""
    def visit(node: object) -> bool:
        if isinstance(node, kind):
            return True
        if isinstance(node, BaseModel) and (nested or not isinstance(node, L.For)):
            return any(visit(getattr(node, name)) for name in type(node).model_fields)
        return isinstance(node, list) and any(visit(item) for item in node)

    return any(visit(stmt) for stmt in stmts)


@dataclass
class _LoopRun:
    """One run of a pipelined loop: per trip of its window, the keys (program, element) each
    buffer was stored at."""
    path: str
    window: int
    trips: deque[dict[int, list[torch.Tensor]]] = field(default_factory=deque)


class Pipelines:
    """The pipelined loops running now, outermost first (shared by a run's subsets)."""

    def __init__(self) -> None:
        self.loops: list[_LoopRun] = []
        self.windows: dict[str, int] = {}  # each loop's pipeline_window, by path (an inner loop runs often)

    def enter(self, f: L.For, path: str, kernel_stages: int) -> bool:
        """Start a run of loop ``f``; whether it is pipelined (then :meth:`exit` ends the run)."""
        window = self.windows.get(path)
        if window is None:
            window = self.windows[path] = pipeline_window(f, kernel_stages)
        if window:
            self.loops.append(_LoopRun(path, window))
        return bool(window)

    def exit(self) -> None:
        self.loops.pop()

    def next_trip(self) -> None:
        run = self.loops[-1]
        run.trips.append({})
        while len(run.trips) > run.window:
            run.trips.popleft()

    @staticmethod
    def keys(programs: torch.Tensor, offsets: torch.Tensor, size: int) -> torch.Tensor:
        return programs.to(torch.int64) * size + offsets

    def stored(self, index: int, programs: torch.Tensor, offsets: torch.Tensor, size: int) -> None:
        if not self.loops or offsets.numel() == 0:
            return
        keys = self.keys(programs, offsets, size)
        for run in self.loops:
            if run.trips:
                run.trips[-1].setdefault(index, []).append(keys)

    def check(self, index: int, programs: torch.Tensor, offsets: torch.Tensor, size: int, name: str,
              where: str) -> None:
        """Raise ``stale_pipelined_load`` where a load's lanes read what their program stored in a
        pipelined loop's window."""
        if not self.loops or offsets.numel() == 0:
            return
        keys = None
        for run in self.loops:
            stored = [k for trip in run.trips for k in trip.get(index, ())]
            if not stored:
                continue
            keys = self.keys(programs, offsets, size) if keys is None else keys
            hit = torch.isin(keys, torch.cat(stored))
            if bool(hit.any()):
                element = int(offsets[hit.nonzero()[0, 0]])
                raise InterpreterError(Diagnostic(where, "stale_pipelined_load", (
                    f"this load reads {name}[{element}], which the same program stored within the last "
                    f"{run.window} trips of the pipelined loop at {run.path} (or earlier in this trip): the "
                    f"pipeliner issues a trip's loads num_stages - 1 trips early, so on the GPU it reads the "
                    f"value from before that store; carry the value in the loop instead, or drop the "
                    f"loop's num_stages")))
