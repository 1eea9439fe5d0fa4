"""The reference interpreter: the meaning of every construct, written once, in torch on the CPU.

It runs a kernel's whole grid at once: every value carries a leading *program* axis (one row
per program instance), so an elementwise kernel over a million elements is a handful of torch
operations, not a Python loop over a thousand programs. Programs run in chunks to bound memory;
stores happen in program order within a chunk, which is one of the orders a GPU may choose.
Kernels whose programs race on one element have no single meaning, so the interpreter records
which program wrote and read each output element (:mod:`kernelgen.interp.accesses`) and fails a race;
the same record says which elements no store wrote. Before running, the work a launch needs is
estimated and refused past a budget (:mod:`kernelgen.interp.budget`); while running, a wall-clock
limit applies. Both end in ``timeout``, as a launch past its time limit does on a GPU.

Semantics, where Triton leaves a choice or a subtlety:

* integer ``idiv`` rounds toward zero and ``rem`` takes the dividend's sign (C, not Python);
  an integer division by zero gives 0 (the GPU gives garbage; the kernel is wrong either way);
* integer arithmetic wraps around (two's complement), and an integer literal outside its
  dtype's range wraps the same way (2**31 as an i32 is -2**31);
* within one launch an output element may be stored by one program only (which may store it
  again), and an element one program stores may not be loaded or atomically updated by
  another program, nor one programs update atomically stored or loaded by another (``race``,
  naming both programs and the element; :mod:`kernelgen.interp.accesses`); masked-off lanes do not
  count;
* atomics run lane after lane in program order (:mod:`kernelgen.interp.atomics`): integer results are
  exact, a float add is summed in f64 and rounded, the order-independent answer;
* every output element must be written (stored or atomically updated) by some program
  (``unwritten``), whatever its dtype, unless the output declares an ``init`` fill;
* an ``if`` runs each branch for the programs whose condition takes it (as a loop runs for
  the programs still iterating): the other programs' loads, stores and hints there do not
  happen; each result is the taken branch's value, per program;
* a masked load without ``other`` reads 0 (false) in masked-off lanes;
* comparisons are ordered (false with NaN) except ``ne``, which is true with NaN;
* ``maximum``/``minimum`` and the ``max``/``min`` reductions propagate NaN, as in PyTorch;
* ``argmax``/``argmin`` return the first index of the extremum;
* a float cast to an integer truncates toward zero, saturates at the integer's range and
  sends NaN to 0 (as the GPU's conversion does);
* ``dot`` accumulates in f32 (f16 when asked), ``tf32`` rounds f32 operands to 10-bit mantissas;
* ``fma`` rounds once (f64: within an ulp of it, exact where the sum cancels);
* every active lane of a load or store must lie inside its tensor, or the interpreter stops
  with an ``out_of_bounds`` error that names the node, the program and the offset;
* a launch must do work in proportion to its data: one whose programs x block elements x loop
  iterations are past the interpreter's budget is refused before it runs (``over_budget``),
  and one that runs past the time limit is stopped (``timeout``), as on a GPU.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence, Union

import torch

from kernelgen.lang import nodes as L
from kernelgen.interp.accesses import AccessLog
from kernelgen.interp.atomics import AtomicMemory
from kernelgen.interp.budget import check_budget
from kernelgen.check.checker import FLOAT_DTYPES, CheckedKernel, literal_value
from kernelgen.check.checked import FP8_DTYPES, Checked
from kernelgen.errors import Diagnostic, InterpreterError, KernelgenError
from kernelgen.host.plan import LaunchPlan, plan_sequence, torch_dtype
from kernelgen.check.sequence import relocated
from kernelgen.interp.program import _Run

# The interpreter holds at most about this many elements per live value.
CHUNK_ELEMENTS = 1 << 22


def poison(dtype: str) -> Union[float, int, bool]:
    """The value outputs are pre-filled with, so an element no store writes is noticed."""
    if dtype in FLOAT_DTYPES or dtype in FP8_DTYPES:
        return math.nan
    if dtype == "bool":
        return True
    return torch.iinfo(torch_dtype(dtype)).min


def initial_fill(out: L.Output) -> Union[float, int, bool]:
    """What an output starts as before a launch: its declared ``init`` (the value atomics
    accumulate onto), else the poison (of a concrete dtype: a plan's kernel is one)."""
    if out.init is None:
        return poison(out.dtype)
    return literal_value(out.init)


def allocate_outputs(plan: LaunchPlan, device: Union[str, torch.device] = "cpu") -> dict[str, torch.Tensor]:
    return {out.name: torch.full(plan.output_shapes[out.name], initial_fill(out),
                                 dtype=torch_dtype(out.dtype), device=device)
            for out in plan.kernel.outputs}


def allocate_scratch(checked: Checked, plan: LaunchPlan,
                     device: Union[str, torch.device] = "cpu") -> dict[str, torch.Tensor]:
    """A program's scratch tensors for one call (``plan``: any launch's; they share the host
    values, and its kernel has the scratch's concrete dtypes): zeros where declared ``zero``,
    else poison-filled as outputs are."""
    declared = {s.name: s.zero for s in checked.kernel.scratch}
    return {out.name: torch.full(plan.output_shapes[out.name], 0 if declared[out.name] else poison(out.dtype),
                                 dtype=torch_dtype(out.dtype), device=device)
            for out in plan.kernel.outputs if out.name in declared}


def _max_block_numel(checked: CheckedKernel) -> int:
    return max((max(t.numel, 1) for t in checked.types.values()), default=1)


@dataclass
class Execution:
    """A launch's outputs and, per output, where some program stored (a bool tensor)."""

    outputs: dict[str, torch.Tensor]
    written: dict[str, torch.Tensor]
    # Per output some program loaded from: where one did (a bool tensor of its shape).
    read: dict[str, torch.Tensor] = field(default_factory=dict)


def execute(plan: LaunchPlan, outputs: Mapping[str, torch.Tensor] | None = None,
            timeout_s: float | None = None) -> Execution:
    """Run every program of the grid on the CPU, after the budget check and under a wall-clock
    limit of ``timeout_s`` (none when None); the outputs are poison-filled first."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    outs = dict(outputs) if outputs is not None else allocate_outputs(plan)
    buffers: dict[str, torch.Tensor] = {}
    for inp in plan.kernel.inputs:
        if inp.name in plan.inputs:
            buffers[inp.name] = plan.inputs[inp.name].detach().cpu().contiguous()
    for name, tensor in outs.items():
        if not tensor.is_contiguous():
            raise InterpreterError(Diagnostic("/outputs", "bad_arguments", f"output {name} is not contiguous"))
        buffers[name] = tensor
    total = plan.num_programs
    accesses = AccessLog(outs, plan.grid, initialised={out.name for out in plan.kernel.outputs if out.init is not None})
    memory = AtomicMemory()  # float atomic adds' f64 sums, across chunks
    chunk = max(1, CHUNK_ELEMENTS // _max_block_numel(plan.checked))
    with torch.no_grad():
        if total:
            ends = torch.tensor([0, total - 1], dtype=torch.int64).unique()
            check_budget(plan, _Run(plan, buffers, ends), -(-total // chunk))
        for first in range(0, total, chunk):
            programs = torch.arange(first, min(first + chunk, total), dtype=torch.int64)
            _Run(plan, buffers, programs, accesses, deadline, memory).run()
    return Execution(outs, accesses.written(), accesses.read())


def execute_sequence(checked: Checked, plans: Sequence[LaunchPlan], timeout_s: float | None = None) -> Execution:
    """Run a document's launches in order on shared tensors (:mod:`kernelgen.check.sequence`):
    outputs and scratch are allocated once, poison-filled (a ``zero`` scratch with zeros); each
    launch is judged for races and bounds alone; across the sequence, a launch that loads an
    element no launch up to it wrote (nor zero-filled) fails with ``read_before_write``, and an
    output element is written when any launch wrote it. ``timeout_s`` covers the whole sequence."""
    kernel = checked.kernel
    if not kernel.is_program:
        return execute(plans[0], timeout_s=timeout_s)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    outputs = [o.name for o in kernel.outputs]
    buffers = {n: t for n, t in allocate_outputs(plans[0]).items() if n in outputs}
    buffers |= allocate_scratch(checked, plans[0])
    zero = {s.name for s in kernel.scratch if s.zero}
    written = {n: torch.full(t.shape, n in zero, dtype=torch.bool) for n, t in buffers.items()}
    for i, plan in enumerate(plans):
        left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        try:
            run = execute(plan, buffers, left)
        except KernelgenError as error:
            raise relocated(kernel, i, error) from None
        for name, read in run.read.items():
            unwritten = read & ~(written[name] | run.written[name])
            if bool(unwritten.any()):
                element = unwritten.nonzero()[0].tolist()
                raise InterpreterError(Diagnostic(
                    f"/launches/{i}", "read_before_write",
                    f"launch {i} ({plan.kernel.name}) loads {name}{element}, which no launch up to it wrote"
                    + ("" if name in outputs else " (declare the scratch zero, or write it first)")))
        for name, mask in run.written.items():
            written[name] |= mask
    return Execution({n: buffers[n] for n in outputs}, {n: written[n] for n in outputs})


def execute_call(checked: Checked, args: Union[Sequence[Any], Mapping[str, Any]],
                 timeout_s: float | None = None) -> Execution:
    """A checked document (one kernel or a program) run on a call's arguments."""
    return execute_sequence(checked, plan_sequence(checked, args), timeout_s)


def run_plan(plan: LaunchPlan, outputs: Mapping[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
    """Run every program of the grid on the CPU; return the outputs (poison-filled first)."""
    return execute(plan, outputs).outputs


def interpret(checked: Checked, args: Union[Sequence[Any], Mapping[str, Any]]) -> dict[str, torch.Tensor]:
    """Run a checked kernel or program on a call's arguments (CPU torch tensors and scalars)."""
    return execute_call(checked, args).outputs
