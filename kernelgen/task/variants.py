"""A task's calls (its ``variants``) made as PyTorch users make them: through the kernel's wrapper.

A task with variants (:class:`kernelgen.task.spec.Variant`) checks one kernel on several calls:
the dtype bindings of a generic kernel (f16, bf16, f32 and f64 of one elementwise op), a
``dtype=`` argument, an omitted optional tensor, a batch of rows passed with its leading
dimensions through the kernel's view. Each call binds as the kernel's wrapper binds it
(:func:`kernelgen.host.wrapper.bind_call`); the binding picks the variant of the kernel (dtype
binding, presence flags, choices) that is checked, run and compared with the reference in
the call's own dtypes and shapes. Every diagnostic names the call it comes from, so a kernel
that serves f32 and not f16 is told which. A task without variants calls its kernel directly
(:mod:`kernelgen.harness.pipeline`), as before.
"""

from __future__ import annotations

from typing import Any, Mapping

from kernelgen.lang import nodes as L
from kernelgen.check.checker import CheckedKernel, check
from kernelgen.errors import Diagnostic, KernelgenError, SemanticError, WrongResult
from kernelgen.task.spec import Task
from kernelgen.task.verify import compare_outputs, make_inputs, run_reference
from kernelgen.host.wrapper import BoundCall, bind_call


def named(task: Task, error: KernelgenError) -> KernelgenError:
    """``error`` with each message prefixed by the call (variant) it comes from."""
    if task.variant is None:
        return error
    prefix = f"call {task.variant.name} ({task.variant.describe()}): "
    renamed = type(error).__new__(type(error))
    KernelgenError.__init__(renamed, [Diagnostic(d.path, d.code, prefix + d.message) for d in error.diagnostics])
    return renamed


def signature_diagnostics(task: Task, kernel: L.Kernel) -> list[Diagnostic]:
    """Where a kernel's inputs and outputs differ from a variant task's in names, order, roles
    or optional tensors. Dtypes and ranks are the calls' to judge (:func:`check_calls`): a
    generic kernel serves several dtypes, and a view takes calls of any rank."""
    found: list[Diagnostic] = []
    for kind, wanted, declared in (("inputs", task.signature.inputs, kernel.inputs),
                                   ("outputs", task.signature.outputs, kernel.outputs)):
        if [w.name for w in wanted] != [d.name for d in declared]:
            found.append(Diagnostic(f"/{kind}", "signature_mismatch", f"{kind} must be {[w.name for w in wanted]} "
                                    f"in this order, got {[d.name for d in declared]}"))
    if found:
        return found
    for i, (w, d) in enumerate(zip(task.signature.inputs, kernel.inputs)):
        if w.role != d.role:
            found.append(Diagnostic(f"/inputs/{i}/role", "signature_mismatch",
                                    f"{w.name} is " + (f"a role {w.role!r} argument" if w.role else "a tensor or scalar")))
        elif w.is_plain and w.optional != d.optional:
            found.append(Diagnostic(f"/inputs/{i}/default", "signature_mismatch",
                                    f"{w.name} is {'an optional (default null)' if w.optional else 'a required'} input"))
    return found


def bound_call(task: Task, kernel: L.Kernel, inputs: Mapping[str, Any],
               meta: Mapping[str, int] | None = None) -> tuple[BoundCall, CheckedKernel]:
    """The call of one variant task bound to the kernel, and the kernel checked for it (its
    dtype binding, presence flags and choices, over ``meta``: a tuned configuration)."""
    try:
        call = bind_call(kernel, [], dict(inputs))
        checked = check(kernel, {**(meta or {}), **call.meta}, call.dtypes or None)
    except KernelgenError as error:
        raise named(task, error) from None
    return call, checked


def check_calls(task: Task, kernel: L.Kernel, meta: Mapping[str, int] | None = None) -> list[CheckedKernel]:
    """Bind every call of the task (small sizes) and check the kernel's variant for it; a call
    the kernel refuses, or whose outputs would have other dtypes than the task's, is a
    signature mismatch. Returns each call's checked kernel, in order."""
    found: list[CheckedKernel] = []
    for concrete in task.variant_tasks():
        sizes = {name: max(r.min, 2) for name, r in concrete.sizes.items()}
        try:
            call, checked = bound_call(concrete, kernel, make_inputs(concrete, sizes), meta)
        except KernelgenError as error:
            if isinstance(error, SemanticError):
                raise
            raise SemanticError([Diagnostic(d.path, "signature_mismatch", d.message) for d in error.diagnostics]) from None
        problems = [Diagnostic(f"/outputs/{i}/dtype", "signature_mismatch",
                               f"{w.name} is {w.dtype}, the kernel's variant gives {d.dtype}")
                    for i, (w, d) in enumerate(zip(concrete.signature.outputs, checked.kernel.outputs))
                    if w.dtype != d.dtype]
        if problems:
            raise named(concrete, SemanticError(problems))
        found.append(checked)
    return found


def outputs_by_name(task: Task, result: Any) -> dict[str, Any]:
    """A wrapper's result (one tensor or a tuple) by the task's output names."""
    results = result if isinstance(result, tuple) else (result,)
    return {spec.name: value for spec, value in zip(task.signature.outputs, results)}


def verify_call_cpu(task: Task, kernel: L.Kernel, sizes: Mapping[str, int], seed: int,
                    extreme: bool = False, timeout_s: float | None = None, num_sms: int | None = None) -> None:
    """One variant's call, run by the reference interpreter, against the reference on one size
    assignment (under ``num_sms`` where given); the outputs (and which elements were written)
    shaped back as the call's."""
    from kernelgen.host.plan import plan_launch, verified_num_sms
    from kernelgen.interp.execute import execute

    inputs = make_inputs(task, sizes, seed, extreme=extreme)
    expected = run_reference(task, inputs)
    call, checked = bound_call(task, kernel, inputs)
    try:
        with verified_num_sms(num_sms):
            run = execute(plan_launch(checked, call.args), timeout_s=timeout_s)
    except KernelgenError as error:
        raise named(task, error) from None
    outputs = outputs_by_name(task, call.finish(run.outputs))
    written = outputs_by_name(task, call.finish(run.written))
    problems = compare_outputs(task, outputs, expected, inputs, sizes, written)
    if problems:
        raise named(task, WrongResult(problems))


def call_bindings(task: Task, kernel: L.Kernel) -> list[dict[str, str]]:
    """The distinct dtype bindings of the kernel that the task's calls select, in call order
    (one empty binding for a kernel without dtype variables)."""
    found: list[dict[str, str]] = []
    for concrete in task.variant_tasks():
        sizes = {name: max(r.min, 2) for name, r in concrete.sizes.items()}
        call, _ = bound_call(concrete, kernel, make_inputs(concrete, sizes, shapes_only=True))
        if call.dtypes not in found:
            found.append(call.dtypes)
    return found
