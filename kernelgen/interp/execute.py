"""The reference interpreter: the meaning of every construct, written once, in torch on the CPU.

It runs a kernel's whole grid at once: every value carries a leading *program* axis (one row
per program instance), so an elementwise kernel over a million elements is a handful of torch
operations, not a Python loop over a thousand programs. Programs run in chunks to bound memory,
statement by statement within a chunk: one of the orders a GPU may choose
(:mod:`kernelgen.interp.orders`). Kernels whose programs race on one element have no single
meaning, so the interpreter records which program wrote and read each output element
(:mod:`kernelgen.interp.accesses`) and fails a race; the same record says which elements no
store wrote, and which were read before anything wrote them. A launch the record cannot clear
(it binds atomics' old values) runs again under other orders, whose results the verifier
compares. Before running, the work a launch needs is estimated and refused past a budget
(:mod:`kernelgen.interp.budget`; the memory a call's outputs and scratch take is refused
earlier, by the host: ``too_large``); while running, a limit on its thread's CPU time applies
(:func:`~kernelgen.interp.clock.interpreter_clock`: the machine's load does not move it). Both end in
``timeout``, as a launch past its time limit does on a GPU.

Semantics, where Triton leaves a choice or a subtlety:

* integer ``idiv`` rounds toward zero and ``rem`` takes the dividend's sign (C, not Python);
  an integer division by zero gives 0 (the GPU gives garbage; the kernel is wrong either way);
* integer arithmetic wraps around (two's complement), and an integer literal outside its
  dtype's range wraps the same way (2**31 as an i32 is -2**31);
* within one launch an output element may be stored by one program only (which may store it
  again), and an element one program stores may not be loaded or atomically updated by
  another program, nor one programs update atomically stored or loaded by another, nor one
  that programs update with different atomic ops, or exchange different values into (``race``,
  naming both programs and the element; :mod:`kernelgen.interp.accesses`); masked-off lanes do not
  count; lanes of one store that write different values to one element are ``duplicate_store``;
* a load or atomic of an output or scratch element that nothing wrote before (no store up to
  it, no earlier launch, no ``init`` or ``zero`` fill) is ``read_before_write``;
* atomics run lane after lane in the chunk's program order (:mod:`kernelgen.interp.atomics`):
  integer results are exact, a float add rounds to the element's dtype after every add;
* every output element must be written (stored or atomically updated) by some program
  (``unwritten``), whatever its dtype, unless the output declares an ``init`` fill or ``alias``;
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
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence, Union

import torch

from kernelgen.lang import nodes as L
from kernelgen.interp.accesses import AccessLog
from kernelgen.interp.barrier import Layouts
from kernelgen.interp.replicated import loads_feeding
from kernelgen.interp.budget import check_budget, estimated_work
from kernelgen.interp.orders import ALTERNATIVES, LOCKSTEP, Order, binds_old_values, needs_orders
from kernelgen.interp.proxies import tile_outputs
from kernelgen.check.checker import FLOAT_DTYPES, CheckedKernel, literal_value
from kernelgen.check.checked import FP8_DTYPES, Checked
from kernelgen.errors import Diagnostic, InterpreterError, KernelgenError
from kernelgen.host.plan import LaunchPlan, plan_sequence, torch_dtype
from kernelgen.check.sequence import relocated
from kernelgen.interp.clock import interpreter_clock
from kernelgen.interp.program import _Run

# The interpreter holds at most about this many elements per live value: small enough that a
# chunk's temporaries stay near the CPU's caches (16384 programs of 1024-lane blocks ran 25% faster
# at 2**20 than at 2**22, and slower again below 2**18, where dispatch dominates).
CHUNK_ELEMENTS = 1 << 20


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
    """A call's outputs, filled as :func:`initial_fill` says; an ``alias`` output is a copy of
    its input's values (the interpreter never writes the caller's memory: the wrapper's finish
    copies the result into it, as for any ``into``)."""
    return {out.name: plan.inputs[out.into].to(device, copy=True) if out.alias else
            torch.full(plan.output_shapes[out.name], initial_fill(out), dtype=torch_dtype(out.dtype), device=device)
            for out in plan.kernel.outputs}


def second_poison(dtype: str, shape: Sequence[int], device: Union[str, torch.device] = "cpu") -> torch.Tensor:
    """The other fill of memory nothing wrote, for a second run: floats alternate between their
    largest finite value and its negative (NaN, the first poison, acts as the identity of
    ``where(old > new, old, new)`` and of ``where(old < new, ...)``; +max is no identity of a
    maximum, -max none of a minimum), integers their maximum (the first is max's identity, this
    one min's), bool false. No element equals both poisons."""
    if dtype == "bool":
        return torch.zeros(tuple(shape), dtype=torch.bool, device=device)
    target = torch_dtype(dtype)
    if dtype not in FLOAT_DTYPES and dtype not in FP8_DTYPES:
        return torch.full(tuple(shape), torch.iinfo(target).max, dtype=target, device=device)
    big = float(torch.finfo(target).max)
    flat = torch.full((math.prod(shape),), big, dtype=target, device=device)
    flat[1::2] = -big
    return flat.view(tuple(shape))


def allocate_scratch(checked: Checked, plan: LaunchPlan, device: Union[str, torch.device] = "cpu",
                     second: bool = False, zero: bool | None = None) -> dict[str, torch.Tensor]:
    """A program's scratch tensors for one call (``plan``: any launch's; they share the host
    values, and its kernel has the scratch's concrete dtypes): zeros where declared ``zero``,
    else poison-filled as outputs are (``second``: with :func:`second_poison`). ``zero`` True
    or False: only the scratch declared so, or not (a timed call fills them at different times)."""
    declared = {s.name: s.zero for s in checked.kernel.scratch}
    found = {}
    for out in plan.kernel.outputs:
        if out.name not in declared or zero is not None and declared[out.name] != zero:
            continue
        shape = plan.output_shapes[out.name]
        if second and not declared[out.name]:
            found[out.name] = second_poison(out.dtype, shape, device)
        else:
            found[out.name] = torch.full(shape, 0 if declared[out.name] else poison(out.dtype),
                                         dtype=torch_dtype(out.dtype), device=device)
    return found


def _max_block_numel(checked: CheckedKernel) -> int:
    return max((max(t.numel, 1) for t in checked.types.values()), default=1)


@dataclass
class Execution:
    """A call's outputs and, per output, where some program stored (a bool tensor); ``orders``:
    by the description of another program order it ran under (:mod:`kernelgen.interp.orders`),
    the outputs that order gave."""

    outputs: dict[str, torch.Tensor]
    written: dict[str, torch.Tensor]
    orders: dict[str, dict[str, torch.Tensor]] = field(default_factory=dict)


def execute(plan: LaunchPlan, outputs: Mapping[str, torch.Tensor] | None = None,
            timeout_s: float | None = None, *, order: Order = LOCKSTEP,
            defined: Mapping[str, torch.Tensor] | None = None, deadline: float | None = None,
            programs: torch.Tensor | None = None, layouts: Layouts | None = None) -> Execution:
    """Run every program of the grid on the CPU in ``order``, after the budget check (lockstep
    only: the others run a launch that passed it) and under a limit of ``timeout_s`` seconds of
    CPU time (or until ``deadline``, an :func:`interpreter_clock` value; none when both are None). The outputs
    are poison-filled first unless given; ``defined`` says, per given output, where an element
    holds a value before the launch (read_before_write elsewhere). ``programs`` (linear ids, in
    increasing order) runs only those, in lockstep chunks, without the budget check: a sample
    whose size :func:`affordable_programs` chose (:mod:`kernelgen.interp.sampled`). ``layouts``:
    the launch's block accesses and barriers as the compiler lays them out
    (:class:`kernelgen.interp.barrier.Layouts`)."""
    if deadline is None and timeout_s is not None:
        deadline = interpreter_clock() + timeout_s
    outs = dict(outputs) if outputs is not None else allocate_outputs(plan)
    buffers = _buffers(plan, outs)
    total = plan.num_programs
    accesses = AccessLog(outs, plan.grid, initialised={out.name for out in plan.kernel.outputs if out.prefilled},
                         defined=defined, observes=binds_old_values(plan.checked), tiles=tile_outputs(plan.kernel),
                         threads=32 * plan.kernel.num_warps, layouts=layouts,
                         feeding=loads_feeding(plan.checked) if layouts is not None else None)
    chunk = _chunk(plan)
    with torch.no_grad():
        if programs is not None:
            chunks = [programs[i:i + chunk] for i in range(0, programs.numel(), chunk)]
        else:
            if total and order == LOCKSTEP:
                check_budget(plan, _Run(plan, buffers, _ends(total)), -(-total // chunk))
            chunks = order.chunks(total, chunk)
        for each in chunks:
            _Run(plan, buffers, each, accesses, deadline, order).run()
    accesses.finish()
    return Execution(outs, accesses.written())


def affordable_programs(plan: LaunchPlan, budget: int, outputs: Mapping[str, torch.Tensor]) -> int:
    """How many of the launch's programs (at most all) the interpreter can run within
    ``budget`` element operations, by the budget's estimate (work grows with programs and with
    their chunks); ``outputs`` as :func:`execute` will take them (the estimate only reads)."""
    total = plan.num_programs
    if not total:
        return 0
    run = _Run(plan, _buffers(plan, outputs), _ends(total))
    chunk = _chunk(plan)
    one, two = estimated_work(plan, run, 1, 1), estimated_work(plan, run, 2, 1)
    each, fixed = max(two - one, 1), max(2 * one - two, 0)  # per program, and per chunk
    count = 0
    for step in (1 << k for k in range(62, -1, -1)):  # the largest count within the budget
        trial = count + step
        if trial <= total and trial * each + -(-trial // chunk) * fixed <= budget:
            count = trial
    return count


def _ends(total: int) -> torch.Tensor:
    """The first and the last program: what the budget's estimate evaluates bounds for."""
    return torch.tensor([0, total - 1], dtype=torch.int64).unique()


def _chunk(plan: LaunchPlan) -> int:
    return max(1, CHUNK_ELEMENTS // _max_block_numel(plan.checked))


def _buffers(plan: LaunchPlan, outs: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The launch's flat memory: its inputs (on the CPU, contiguous) and ``outs``."""
    buffers: dict[str, torch.Tensor] = {}
    for inp in plan.kernel.inputs:
        if inp.name in plan.inputs:
            buffers[inp.name] = plan.inputs[inp.name].detach().cpu().contiguous()
    for name, tensor in outs.items():
        if not tensor.is_contiguous():
            raise InterpreterError(Diagnostic("/outputs", "bad_arguments", f"output {name} is not contiguous"))
        buffers[name] = tensor
    return buffers


def execute_sequence(checked: Checked, plans: Sequence[LaunchPlan], timeout_s: float | None = None,
                     orders: bool = False, layouts: Sequence[Layouts | None] | None = None
                     ) -> Execution:
    """Run a document's launches (one for a single kernel) in order on shared tensors
    (:mod:`kernelgen.check.sequence`): outputs and scratch are allocated once, poison-filled (a
    ``zero`` scratch with zeros); each launch is judged for races and bounds alone; across the
    sequence, a launch that loads an element no launch up to it wrote (nor zero-filled) fails
    with ``read_before_write``, and an output element is written when any launch wrote it.

    With ``orders``, the launches from the first that binds an atomic's old values on run again
    under each other order of :mod:`kernelgen.interp.orders`, from the state before it, memory
    nothing wrote holding :func:`second_poison`; ``Execution.orders`` has what each gave (a
    fault in one is raised, naming the order). ``timeout_s`` covers every run. ``layouts``: each
    launch's (:func:`execute`'s), where the compile stage read them."""
    kernel = checked.kernel
    deadline = None if timeout_s is None else interpreter_clock() + timeout_s
    outputs = [o.name for o in kernel.outputs]
    buffers = {n: t for n, t in allocate_outputs(plans[0]).items() if n in outputs}
    buffers |= allocate_scratch(checked, plans[0])
    filled = {s.name for s in kernel.scratch if s.zero} | {o.name for o in kernel.outputs if o.prefilled}
    defined = {n: torch.full(t.shape, n in filled, dtype=torch.bool) for n, t in buffers.items()}
    ordered = [i for i, plan in enumerate(plans) if needs_orders(plan.checked)] if orders else []
    before = None
    for i, plan in enumerate(plans):
        if ordered and i == ordered[0]:
            before = ({n: t.clone() for n, t in buffers.items()}, {n: d.clone() for n, d in defined.items()})
        _launch(kernel, i, plan, buffers, defined, deadline, LOCKSTEP, layouts[i] if layouts else None)
    result = Execution({n: buffers[n] for n in outputs}, {n: defined[n] for n in outputs})
    if before is not None:
        kept, was_defined = before
        for order in ALTERNATIVES:
            again = {n: _fill_undefined(t, was_defined[n], plans[0].kernel, n) for n, t in kept.items()}
            seen = {n: d.clone() for n, d in was_defined.items()}
            for i in range(ordered[0], len(plans)):
                _launch(kernel, i, plans[i], again, seen, deadline, order, layouts[i] if layouts else None)
            result.orders[order.describe(plans[ordered[0]].num_programs)] = {n: again[n] for n in outputs}
    return result


def _launch(kernel: L.Kernel, index: int, plan: LaunchPlan, buffers: dict[str, torch.Tensor],
            defined: dict[str, torch.Tensor], deadline: float | None, order: Order,
            layouts: Layouts | None = None) -> None:
    """Launch ``index`` of the document on ``buffers`` in ``order``; ``defined`` grows by what
    it wrote. Its errors carry document paths (and the order, when not lockstep)."""
    try:
        run = execute(plan, buffers, order=order, defined=defined, deadline=deadline, layouts=layouts)
    except KernelgenError as error:
        moved = relocated(kernel, index, error)
        if order != LOCKSTEP:
            moved.diagnostics = [Diagnostic(d.path, d.code, f"under the program order "
                                            f"{order.describe(plan.num_programs)}: {d.message}")
                                 for d in moved.diagnostics]
            moved.args = ("\n".join(str(d) for d in moved.diagnostics),)
        raise moved from None
    for name, mask in run.written.items():
        defined[name] |= mask


def _fill_undefined(tensor: torch.Tensor, defined: torch.Tensor, kernel: L.Kernel, name: str) -> torch.Tensor:
    """``tensor`` with the elements nothing wrote holding the second poison."""
    dtype = next(out.dtype for out in kernel.outputs if out.name == name)
    other = second_poison(dtype, tuple(tensor.shape))
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[tensor.dtype.itemsize]
    if tensor.dtype == torch.bool:
        return torch.where(defined, tensor, other)
    return torch.where(defined, tensor.view(width), other.view(width)).view(tensor.dtype)


def execute_call(checked: Checked, args: Union[Sequence[Any], Mapping[str, Any]],
                 timeout_s: float | None = None, orders: bool = False,
                 layouts: Sequence[Layouts | None] | None = None) -> Execution:
    """A checked document (one kernel or a program) run on a call's arguments (``orders``: also
    under other program orders, where a launch needs them; ``layouts``: :func:`execute_sequence`'s)."""
    return execute_sequence(checked, plan_sequence(checked, args), timeout_s, orders, layouts)


def run_plan(plan: LaunchPlan, outputs: Mapping[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
    """Run every program of the grid on the CPU; return the outputs (poison-filled first)."""
    return execute(plan, outputs).outputs


def interpret(checked: Checked, args: Union[Sequence[Any], Mapping[str, Any]]) -> dict[str, torch.Tensor]:
    """Run a checked kernel or program on a call's arguments (CPU torch tensors and scalars)."""
    return execute_call(checked, args).outputs
