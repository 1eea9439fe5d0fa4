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
from kernelgen.host.plan import dtype_name
from kernelgen.task.spec import Task, Variant
from kernelgen.task.magnitude import checked_inputs, input_rounding
from kernelgen.task.overflowed import overflow_problems
from kernelgen.task.verify import compare_outputs, order_overflows, inputs_as_reference, order_problems, make_inputs, reference_call
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
    """Bind every call of the task (small sizes), the listed ones and then those no listed call
    makes (:func:`unlisted_calls`), and check the kernel's variant for it; a call the kernel
    refuses, or whose outputs would have other dtypes than the task's, is a signature
    mismatch. Returns each call's checked kernel, the listed ones and then the unlisted, in
    that order (each call's draws read its own: a meta ``when`` gives a call its own blocks)."""
    found: list[CheckedKernel] = []
    for concrete in task.variant_tasks() + unlisted_calls(task):
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


# -- the calls no listed call makes ---------------------------------------------------------

_UNLISTED: dict[str, list[Task]] = {}


def unlisted_calls(task: Task) -> list[Task]:
    """The concrete task of every call the task admits that none of its listed calls makes:
    each binding of its dtype variables with each presence pattern of its arguments with a
    ``present`` flag (optional tensors, scalars and ints; issue 32: a kernel that branches on a binding or a pattern no listed call takes must not
    pass unseen). Each is made from a listed call (its host-only arguments, a ``dtype=``
    argument that selected a variable rebound with it), keeps that call's tolerance where the
    binding is the same (else a listed call's of the same binding, else the task's), and is
    admitted where the task's golden kernel binds it to the task's output dtypes and the
    reference returns them. Then, from each listed call, every combination of its ``choice``
    arguments' values that no call makes (a kernel that takes keepdim's shape from the choice's
    index 0 only, and so gets ``dim=-2, keepdim=True`` wrong, must not pass unseen either).
    Verified at small sizes (:func:`kernelgen.harness.pipeline.verify_calls`), never timed."""
    if not task.variants or task.variant is not None:
        return []
    if task.name not in _UNLISTED:
        _UNLISTED[task.name] = _admitted_unlisted(task)
    return _UNLISTED[task.name]


def _omitted(task: Task, variant: Variant) -> frozenset[str]:
    """The arguments with a presence flag (tensors, scalars, ints) that the call leaves out."""
    return frozenset(s.name for s in task.signature.inputs if s.present is not None
                     and variant.args.get(s.name, None if not s.is_plain else 0) is None)


def _admitted_unlisted(task: Task) -> list[Task]:
    import itertools

    optional = [s.name for s in task.signature.inputs if s.present is not None]
    host_only = {s.name for s in task.signature.inputs if not s.is_plain}
    dtype_args = [s.name for s in task.signature.inputs if not s.is_plain and s.role == "dtype"]
    listed = {(tuple(sorted(v.dtypes.items())), _omitted(task, v)) for v in task.variants}
    found: list[Task] = []
    for dtypes in itertools.product(*(v.of for v in task.dtypes)):
        binding = {v.name: d for v, d in zip(task.dtypes, dtypes)}
        for count in range(len(optional) + 1):
            for omitted in map(frozenset, itertools.combinations(optional, count)):
                if (tuple(sorted(binding.items())), omitted) in listed:
                    continue
                for template in sorted(task.variants, key=lambda v: (_omitted(task, v) != omitted, v.dtypes != binding)):
                    args = {k: v for k, v in template.args.items() if k not in omitted}
                    args |= {name: None for name in sorted(omitted)}
                    if any(args.get(name) is None for name in optional if name in host_only and name not in omitted):
                        continue  # a host-only argument this pattern passes, which this call leaves out
                    for name in dtype_args:
                        chosen = [var for var, dtype in template.dtypes.items() if dtype == args.get(name)]
                        if chosen:
                            args[name] = binding[chosen[0]]
                    same = [v.tolerance for v in task.variants if v.dtypes == binding and v.tolerance is not None]
                    tolerance = template.tolerance if template.dtypes == binding else (same[0] if same else None)
                    words = [*dtypes, *(f"no_{name}" for name in sorted(omitted))]
                    variant = Variant(name="unlisted_" + "_".join(words).lower(), dtypes=binding, args=args,
                                      tolerance=tolerance)
                    concrete = task._concrete(variant)
                    if _admitted(concrete):
                        found.append(concrete)
                        break
    return found + _choice_combinations(task, found)


def _choice_combinations(task: Task, found: list[Task]) -> list[Task]:
    """The calls that give a listed call's ``choice`` arguments each combination of their values
    that neither a listed call nor one of ``found`` makes, where the task admits them."""
    import itertools

    choices = [s for s in task.signature.inputs if not s.is_plain and s.role == "choice" and s.choices]

    def key(variant: Variant) -> tuple:
        return (tuple(sorted(variant.dtypes.items())), _omitted(task, variant),
                tuple(variant.args.get(s.name, s.default) for s in choices))

    made = {key(v) for v in [*task.variants, *(t.variant for t in found)]}
    combined: list[Task] = []
    for template in task.variants if choices else []:
        for values in itertools.product(*(s.choices for s in choices)):
            words = [f"{s.name}_{value}".replace("-", "neg").lower() for s, value in zip(choices, values)]
            variant = Variant(name="_".join(["unlisted", template.name, *words]), dtypes=template.dtypes,
                              args={**template.args, **{s.name: value for s, value in zip(choices, values)}},
                              tolerance=template.tolerance)
            if key(variant) in made:
                continue
            made.add(key(variant))
            concrete = task._concrete(variant)
            if _admitted(concrete):
                combined.append(concrete)
    return combined


def _admitted(concrete: Task) -> bool:
    """Whether a made-up call is one the task admits: the golden binds it to the task's output
    dtypes and the reference, on small inputs, returns those dtypes."""
    import torch

    sizes = {name: max(r.min, 2) for name, r in concrete.sizes.items()}
    try:
        call, checked = bound_call(concrete, concrete.golden, make_inputs(concrete, sizes, shapes_only=True))
        inputs = make_inputs(concrete, sizes)
        with torch.no_grad():
            result = concrete.reference_function()(*inputs.values())
    except Exception:  # noqa: BLE001 - a call the golden or the reference refuses is not admitted
        return False
    results = result if isinstance(result, (tuple, list)) else (result,)
    wanted = [o.dtype for o in concrete.signature.outputs]
    given = [d.dtype for d in checked.kernel.outputs]
    returned = [dtype_name(torch.as_tensor(r).dtype) for r in results]
    return given == wanted and returned == wanted


def outputs_by_name(task: Task, result: Any) -> dict[str, Any]:
    """A wrapper's result (one tensor or a tuple) by the task's output names."""
    results = result if isinstance(result, tuple) else (result,)
    return {spec.name: value for spec, value in zip(task.signature.outputs, results)}


def plan_call(task: Task, kernel: L.Kernel, sizes: Mapping[str, int], seed: int) -> None:
    """Plan one variant's call at ``sizes`` on tensors without memory (grid, shapes, params):
    the :class:`HostError` a GPU's call would meet there, named by the call."""
    from kernelgen.host.plan import plan_launch

    call, checked = bound_call(task, kernel, make_inputs(task, sizes, seed, shapes_only=True))
    try:
        plan_launch(checked, call.args)
    except KernelgenError as error:
        raise named(task, error) from None


def verify_call_cpu(task: Task, kernel: L.Kernel, sizes: Mapping[str, int], seed: int,
                    extreme: bool = False, timeout_s: float | None = None, num_sms: int | None = None,
                    order: str | None = None) -> None:
    """One variant's call, run by the reference interpreter, against the reference on one size
    assignment (under ``num_sms`` where given; float inputs sorted in ``order`` where given,
    :func:`kernelgen.task.verify.make_inputs`); the outputs (and which elements were written)
    shaped back as the call's."""
    import torch

    from kernelgen.host.plan import plan_launch, verified_num_sms
    from kernelgen.interp.execute import execute_sequence

    inputs, atol_scale = checked_inputs(task, sizes, seed, extreme, order=order)
    before = {name: v.clone() if isinstance(v, torch.Tensor) else v for name, v in inputs.items()}
    expected, reference_after = reference_call(task, inputs)
    # A draw past the task's promise (order_overflows) is judged at its true overflows only.
    past_promise = order is not None and order_overflows(task, sizes, seed, expected, order, extreme)
    rounding = input_rounding(task, before, sizes, seed, order)
    call, checked = bound_call(task, kernel, inputs)
    try:
        with verified_num_sms(num_sms):
            run = execute_sequence(checked, [plan_launch(checked, call.args)], timeout_s=timeout_s, orders=True)
    except KernelgenError as error:
        raise named(task, error) from None
    outputs = outputs_by_name(task, call.finish(run.outputs))
    written = outputs_by_name(task, call.finish(run.written, copy=False))
    if past_promise:
        problems = overflow_problems(task, outputs, expected, before, sizes)
        if problems:
            raise named(task, WrongResult(problems))
        return
    problems = inputs_as_reference(task, before, reference_after, inputs, atol_scale)
    problems += compare_outputs(task, outputs, expected, inputs, sizes, written, atol_scale, drawn=before,
                                rounding=rounding)
    if not problems:  # the other program orders agree (the kernel's own outputs: finish may copy)
        problems = order_problems(task, run.outputs, run.orders, sizes, checked.kernel.outputs, atol_scale, rounding)
    if problems:
        raise named(task, WrongResult(problems))


def call_bindings(task: Task, kernel: L.Kernel) -> list[dict[str, str]]:
    """The distinct dtype bindings of the kernel that the task's calls select, listed and
    unlisted, in call order (one empty binding for a kernel without dtype variables)."""
    found: list[dict[str, str]] = []
    for concrete in task.variant_tasks() + unlisted_calls(task):
        sizes = {name: max(r.min, 2) for name, r in concrete.sizes.items()}
        call, _ = bound_call(concrete, kernel, make_inputs(concrete, sizes, shapes_only=True))
        if call.dtypes not in found:
            found.append(call.dtypes)
    return found
