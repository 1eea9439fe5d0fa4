"""One benchmark case, from a model's answer to a result: a table of stages.

Like Triton's compiler, the pipeline is a list of ``(name, function)`` stages over one
:class:`Case`; each stage reads what earlier ones left and adds its artifact. The first stage
that raises a :class:`~kernelgen.errors.KernelgenError` decides the outcome; the artifacts made
before it are kept in the result (a failing compile still reports its AST and TTIR).

The CLI, the pytest plugin and the TritonBench track all call :func:`evaluate_answer`.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Mapping, Sequence

from kernelgen.task import draws, random_sizes
from kernelgen.lang import nodes as L
from kernelgen.task.case import Case, Settings
from kernelgen.check.checker import CheckedKernel, check
from kernelgen.check.checked import Checked
from kernelgen.host.plan import plan_sequence
from kernelgen.interp.barrier import Layouts
from kernelgen.task.draws import Draw
from kernelgen.errors import Diagnostic, InterpreterLimit, KernelgenError, Outcome, SemanticError, WrongResult
from kernelgen.lang.generic import binding_for, instantiate
from kernelgen.lang.parse import kernel_to_json, parse_kernel
from kernelgen.task.results import CaseResult, GenerationInfo, Tuning
from kernelgen.task.spec import Task
from kernelgen.task.magnitude import checked_inputs, input_rounding
from kernelgen.task.overflowed import overflow_problems
from kernelgen.task.verify import compare_outputs, order_overflows, make_inputs, order_problems, run_reference



# -- the signature -------------------------------------------------------------------------


def signature_diagnostics(task: Task, kernel: L.Kernel) -> list[Diagnostic]:
    """Where a kernel's declared inputs and outputs differ from what the task asks for."""
    found: list[Diagnostic] = []

    def compare(kind: str, wanted: list[L.Input], declared: list, rank_of: Callable) -> None:
        if [w.name for w in wanted] != [d.name for d in declared]:
            found.append(Diagnostic(f"/{kind}", "signature_mismatch",
                                    f"{kind} must be {[w.name for w in wanted]} in this order, "
                                    f"got {[d.name for d in declared]}"))
            return
        for i, (w, d) in enumerate(zip(wanted, declared)):
            if w.dtype != d.dtype:
                found.append(Diagnostic(f"/{kind}/{i}/dtype", "signature_mismatch",
                                        f"{w.name} is {w.dtype}, not {d.dtype}"))
            want_rank = None if w.shape is None else len(w.shape)
            if rank_of(d) != want_rank:
                what = "a scalar" if want_rank is None else f"a tensor of rank {want_rank}"
                found.append(Diagnostic(f"/{kind}/{i}/shape", "signature_mismatch", f"{w.name} is {what}"))
            elif kind == "inputs" and w.shape is not None:
                for j, (wd, dd) in enumerate(zip(w.shape, d.shape)):
                    if isinstance(wd, int) and wd != dd:
                        found.append(Diagnostic(f"/inputs/{i}/shape/{j}", "signature_mismatch",
                                                f"{w.name}.shape[{j}] is fixed at {wd}"))

    compare("inputs", task.signature.inputs, kernel.inputs, lambda d: None if d.shape is None else len(d.shape))
    compare("outputs", task.signature.outputs, kernel.outputs, lambda d: len(d.shape))
    return found


# -- sizes ---------------------------------------------------------------------------------


def draw_sizes(task: Task, settings: Settings) -> list[dict[str, int]]:
    """``settings.shapes`` distinct size assignments drawn by hypothesis from the task's ranges,
    reproducible from ``settings.seed`` (the kernel-independent part of :func:`case_draws`)."""
    return random_sizes.draw_sizes(task, settings.shapes, settings.seed, settings.gpu)


# The hypothesis draws a call no listed call makes is verified on (the smallest): each binding and
# presence pattern needs checking, not at every size.
UNLISTED_DRAWS = 2
# The kernel-reading draws an unlisted call takes besides them (:class:`kernelgen.task.draws.Draw`'s kinds).
UNLISTED_KINDS = ("past_extent", "range_max", "size_order", "at_equality", "at_multiple", "chunk_edge", "crossing", "tiles")
# The draws a listed call after the first is not verified on (the interpreter's time; the first
# call takes them): the ranges' maxima. Each call takes the crossing draws: a path past a size
# threshold that is right for the first call's i32 and drops a NaN for the f16 call's passed (round 26).
FIRST_CALL_KINDS = ("range_max",)
# The halvings a draw the interpreter refuses is tried at, for a stand-in it affords (:func:`_stand_in`).
STAND_INS = 4


def for_each_draw(task: Task, checked: CheckedKernel, settings: Settings, check_one: Callable[[Draw], None],
                  which: str = "all", unjudged: list[dict[str, Any]] | None = None,
                  plan_one: Callable[[dict[str, int]], None] | None = None) -> list[dict[str, int]]:
    """Run ``check_one`` on each assignment of :func:`kernelgen.task.draws.case_draws`, in order
    (``which``: ``all``; ``no_range_max``, without the ranges' maxima
    (:data:`FIRST_CALL_KINDS`); ``small``, the :data:`UNLISTED_DRAWS` smallest hypothesis draws
    and those of :data:`UNLISTED_KINDS`); the first
    failure ends the case and is raised as is (no shrinking or replay: a failing kernel may hang or
    fault, and every rerun would cost a timeout), its messages naming the num_sms it ran under where
    the draw set one. A draw the harness chose for the kernel (past its
    extent, a range's maximum, a num_sms) that the interpreter cannot afford, even on a sample of
    its programs where ``check_one`` takes one (:func:`verify_cpu`), is left out, recorded in
    ``unjudged`` (the GPU judges it; a smaller draw of its shape stands in: :func:`_stand_in`), where
    the hypothesis draws' own ``not_judged`` ends the case.
    First, where given, ``plan_one`` plans the launches at each of
    :func:`kernelgen.task.draws.limit_sizes` (the ranges' maxima, cheap: nothing runs), and the
    error a GPU would meet there (``bad_grid``, an i32 param's overflow) ends the case. Returns the
    size assignments checked."""
    if plan_one is not None and which != "small":
        for sizes in draws.limit_sizes(task):
            try:
                plan_one(sizes)
            except KernelgenError as error:
                raise at_sizes(error, sizes) from None
    every = draws.case_draws(task, checked, settings.shapes, settings.seed, settings.gpu)
    if which == "small":  # and the draws that read the kernel: a path the call alone takes past a block,
        # at a range's top, or where the kernel compares its sizes (linear_optional_bias's unlisted f32
        # call with a bias added it to two column tiles when M > N, and passed with none of these)
        # (in CPU mode, the crossings with the other sizes small only: each unlisted call of
        # layer_norm_optional took its large ones in 6 s)
        every = sorted([d for d in every if d.kind == "drawn"], key=lambda d: task.footprint(d.sizes)[0])[
            :UNLISTED_DRAWS] + [d for d in every if d.kind in UNLISTED_KINDS and (
                settings.gpu or d.kind != "crossing" or task.footprint(d.sizes)[0] <= draws.CPU_RANGE_MAX_BUDGET)]
    elif which == "no_range_max":
        every = [d for d in every if d.kind not in FIRST_CALL_KINDS]
    checked_sizes: list[dict[str, int]] = []
    for draw in every:
        try:
            check_one(draw)
        except InterpreterLimit as error:
            if draw.kind == "drawn" or unjudged is None:
                raise with_num_sms(error, draw.num_sms) from None
            record = {"sizes": draw.sizes, "num_sms": draw.num_sms, "kind": draw.kind, "code": error.code}
            unjudged.append(record)
            draw = _stand_in(task, draw, error, check_one)
            if draw is None:
                continue
            record["stand_in"] = draw.sizes
        except KernelgenError as error:
            raise with_num_sms(error, draw.num_sms) from None
        if draw.sizes not in checked_sizes:
            checked_sizes.append(draw.sizes)
    return checked_sizes


def _stand_in(task: Task, draw: draws.Draw, limit: InterpreterLimit,
              check_one: Callable[[draws.Draw], None]) -> draws.Draw | None:
    """For a draw the interpreter refused before running (``over_budget``), the judged draw of its shape the
    interpreter affords: its largest sizes halved, at most :data:`STAND_INS` times, until one runs (None where
    none does, or the draw is a crossing's, whose region a halving leaves). row_topk64's M = 8192 against
    N = 64 was left to the GPU, and every draw judged in CPU mode had M <= N, where a scratch sized N * CAP
    for M * CAP rows holds them all. A wrong result on the stand-in ends the case, as on any draw."""
    if limit.code != "over_budget" or draw.kind == "crossing":
        return None
    for _ in range(STAND_INS):
        top = max(draw.sizes.values(), default=0)
        sizes = {name: max(value // 2 | 1, task.sizes[name].min) if value == top else value
                 for name, value in draw.sizes.items()}
        if sizes == draw.sizes:
            return None
        draw = dataclasses.replace(draw, sizes=sizes)
        try:
            check_one(draw)
        except InterpreterLimit as error:
            if error.code != "over_budget":
                return None
            continue
        except KernelgenError as error:
            raise with_num_sms(error, draw.num_sms) from None
        return draw
    return None


def at_sizes(error: KernelgenError, sizes: Mapping[str, int]) -> KernelgenError:
    """``error`` with each message saying the sizes (a range's maximum) it was planned at."""
    where = ", ".join(f"{name}={value}" for name, value in sizes.items())
    renamed = type(error).__new__(type(error))
    KernelgenError.__init__(renamed, [Diagnostic(d.path, d.code, f"at the sizes {where} (the task allows them): "
                                                 f"{d.message}") for d in error.diagnostics])
    return renamed


def with_num_sms(error: KernelgenError, num_sms: int | None) -> KernelgenError:
    """``error`` with each message saying the num_sms the launch ran under (where a draw set one)."""
    if num_sms is None:
        return error
    renamed = type(error).__new__(type(error))
    KernelgenError.__init__(renamed, [Diagnostic(d.path, d.code, f"with num_sms = {num_sms}: {d.message}")
                                      for d in error.diagnostics])
    return renamed


# -- stages --------------------------------------------------------------------------------


def stage_parse(case: Case) -> None:
    case.kernel = parse_kernel(case.answer)
    case.artifacts["ast"] = kernel_to_json(case.kernel, indent=2)


def stage_check(case: Case) -> None:
    """A generic kernel is checked in the variant the task's signature binds (the signature is
    compared with that variant), after every variant has been checked. A task with calls
    (variants) binds each and checks the kernel's variant for it (:mod:`kernelgen.task.variants`)."""
    if case.task.variants:
        from kernelgen.task import variants

        mismatches = variants.signature_diagnostics(case.task, case.kernel)
        if mismatches:
            raise SemanticError(mismatches)
        if case.kernel.dtypes:
            check(case.kernel)  # every dtype binding, not only the calls'
        case.calls_checked = variants.check_calls(case.task, case.kernel)
        case.checked = case.calls_checked[0]
        return
    signature = case.task.signature
    binding = binding_for(case.kernel, {spec.name: spec.dtype for spec in (*signature.inputs, *signature.outputs)
                                        if spec.dtype is not None})
    if binding:
        check(case.kernel)
    mismatches = signature_diagnostics(case.task, instantiate(case.kernel, binding) if binding else case.kernel)
    if mismatches:
        raise SemanticError(mismatches)
    case.checked = check(case.kernel, dtypes=binding or None)


def stage_compile(case: Case) -> None:
    """Each launch compiled (a program's ``case.compiled`` is their list, in launch order)."""
    if not case.settings.compile:
        return
    from kernelgen.gpu.compile import compile_document, document_text

    try:
        case.compiled = compile_document(case.checked, target=case.settings.target)
    finally:
        if case.compiled is not None:
            for key in ("ttir", "ptx"):
                case.artifacts[key] = document_text(case.compiled, key)
    dropped = [f"{each.name}: {each.metadata['flatten_dropped']}" for each in
               (case.compiled if isinstance(case.compiled, list) else [case.compiled]) if "flatten_dropped" in each.metadata]
    if dropped:  # a speed hint Triton could not compile, recorded (kernelgen.gpu.compile._compile)
        case.extra["flatten_dropped"] = dropped
    if not case.settings.gpu:
        from kernelgen.gpu.bench_variant import bench_variant_fits

        bench_variant_fits(case.checked, case.compiled, case.task.bench_sizes, case.task.scalars, case.settings.target)
    from kernelgen.gpu.layouts import document_threads

    case.layouts = document_threads(case.checked, case.compiled, case.task.bench_sizes, case.task.scalars,
                                    case.settings.target)
    for task, checked in zip(case.task.variant_tasks()[1:], case.calls_checked[1:]):
        try:  # every call's variant compiles; the first's artifacts are the case's
            compile_document(checked, target=case.settings.target)
        except KernelgenError as error:
            from kernelgen.task.variants import named

            raise named(task, error) from None


def verify_cpu(task: Task, checked: Checked, sizes: Mapping[str, int], seed: int,
               extreme: bool = False, timeout_s: float | None = None, num_sms: int | None = None,
               order: str | None = None, sampled: list[dict[str, Any]] | None = None,
               layouts: Sequence[Layouts | None] | None = None) -> None:
    """The kernel, run by the reference interpreter (within ``timeout_s`` of wall-clock time),
    against the reference on one assignment (its inputs extreme where the draw says so; its
    launches under ``num_sms`` where given; its float inputs sorted in ``order`` where given).
    Given ``sampled``, a launch past the interpreter's budget whose programs are independent is
    judged on a sample of them (:mod:`kernelgen.interp.sampled`; the elements they stored are
    compared), and the draw is appended there with the sample's size. ``layouts``: each launch's
    block accesses' threads, as the compile stage read them (``Case.layouts``)."""
    from kernelgen.host.plan import verified_num_sms
    from kernelgen.interp.execute import execute_call

    inputs, atol_scale = checked_inputs(task, sizes, seed, extreme, order=order)
    expected = run_reference(task, inputs)
    # A draw past the task's promise (order_overflows) is judged at its true overflows only.
    past_promise = order is not None and order_overflows(task, sizes, seed, expected, order, extreme)
    rounding = input_rounding(task, inputs, sizes, seed, order)
    with verified_num_sms(num_sms):
        try:
            run = execute_call(checked, inputs, timeout_s=timeout_s, orders=True, layouts=layouts)
        except InterpreterLimit as limit:
            if sampled is None or limit.code != "over_budget":
                raise
            if past_promise:
                return
            _verify_sampled(task, checked, inputs, expected, sizes, atol_scale, limit, timeout_s, sampled)
            return
    problems = overflow_problems(task, run.outputs, expected, inputs, sizes) if past_promise else \
        compare_outputs(task, run.outputs, expected, inputs, sizes, run.written, atol_scale, rounding=rounding)
    if problems:
        raise WrongResult(problems)
    if past_promise:
        return
    # the other program orders agree
    problems = order_problems(task, run.outputs, run.orders, sizes, atol_scale=atol_scale, rounding=rounding)
    if problems:
        raise WrongResult(problems)


def _verify_sampled(task: Task, checked: Checked, inputs: Mapping[str, Any], expected: Mapping[str, Any],
                    sizes: Mapping[str, int], atol_scale: float, limit: InterpreterLimit, timeout_s: float | None,
                    sampled: list[dict[str, Any]]) -> None:
    """The launch ``limit`` refused, on a sample of its programs: the elements they stored
    against the reference's (the reference stands in for the others)."""
    import torch

    from kernelgen.interp.sampled import execute_sampled

    run = execute_sampled(checked, inputs, limit, timeout_s)
    seen = {name: torch.where(run.written[name], value, expected[name])
            if value.shape == expected[name].shape and value.dtype == expected[name].dtype else value
            for name, value in run.outputs.items()}
    problems = compare_outputs(task, seen, expected, inputs, sizes, None, atol_scale)
    if problems:
        raise WrongResult([Diagnostic(d.path, d.code, f"{d.message}; on {run.programs} of the launch's {run.total} "
                                      "programs (the whole launch is past the interpreter's budget)")
                           for d in problems])
    sampled.append({"sizes": dict(sizes), "programs": run.programs, "of": run.total})


def stage_verify(case: Case) -> None:
    """Every draw against the reference: in CPU mode by the interpreter; in GPU mode on the GPU,
    then by the interpreter on CPU mode's draws too. A GPU shows a race, a result that depends on
    the programs' order, a read of memory nothing wrote or lanes of one store that disagree only
    when its schedule or its memory happen to; the interpreter finds them every time, so GPU
    mode's verdict includes CPU mode's (a kernel must pass both)."""
    # An answer that writes an input ('into', 'alias') is called through its wrapper even where
    # the task's operator writes none: what it leaves in the caller's tensors is then judged.
    if case.task.variants or case.task.in_place or any(out.into is not None for out in case.kernel.outputs):
        case.sizes_checked = verify_calls(case)
        return
    unjudged: list[dict[str, Any]] = []
    sampled: list[dict[str, Any]] = []
    cpu_one = lambda draw: verify_cpu(case.task, case.checked, draw.sizes, case.settings.seed,  # noqa: E731
                                      draw.extreme, case.settings.timeout_s, draw.num_sms, draw.order,
                                      None if case.settings.gpu else sampled, case.layouts)
    plan_one = lambda sizes: plan_sequence(  # noqa: E731
        case.checked, make_inputs(case.task, sizes, case.settings.seed, shapes_only=True))
    if case.settings.gpu:
        from kernelgen.gpu.case import verify_gpu

        check_one = lambda draw: verify_gpu(case, draw.sizes, draw.extreme, draw.num_sms)  # noqa: E731
        case.sizes_checked = for_each_draw(case.task, case.checked, case.settings, check_one, unjudged=unjudged,
                                           plan_one=plan_one)
        for_each_draw(case.task, case.checked, dataclasses.replace(case.settings, gpu=False),
                      interpreter_checks(cpu_one))
    else:
        case.sizes_checked = for_each_draw(case.task, case.checked, case.settings, cpu_one, unjudged=unjudged,
                                           plan_one=plan_one)
    if unjudged:
        case.extra["unjudged_draws"] = unjudged
    if sampled:
        case.extra["sampled_draws"] = sampled


def interpreter_checks(cpu_one: Callable[[Draw], None]) -> Callable[[Draw], None]:
    """CPU mode's check of a draw as GPU mode runs it after the GPU's: what the interpreter
    finds (a race, order dependence, a read of unwritten memory) fails the case, but a draw past
    the interpreter's budget is left to the GPU, which has judged it."""
    def check(draw: Draw) -> None:
        try:
            cpu_one(draw)
        except InterpreterLimit:
            pass

    return check


def verify_calls(case: Case) -> list[dict[str, int]]:
    """Every call (variant) of the task on every size assignment, in order (in CPU mode the
    ranges' maxima for the first call only: the interpreter's time), then every call the task
    admits that no listed call makes (:func:`kernelgen.task.variants.unlisted_calls`) on the
    smallest hypothesis draws; the first failure ends the case, its diagnostics naming the call.
    The draws that read the kernel (its blocks, its comparisons) read each call's own variant:
    a meta ``when`` gives a call other blocks than the first's. GPU mode checks each call on the
    GPU, then by the interpreter (:func:`stage_verify`)."""
    from kernelgen.task.variants import plan_call, unlisted_calls, verify_call_cpu

    checked: list[dict[str, int]] = []
    unjudged: list[dict[str, Any]] = []
    listed = case.task.variant_tasks()
    calls = listed + unlisted_calls(case.task)
    # A task without calls (an in-place operator, an answer that writes an input) is its one call.
    for concrete, kernel_for_call in zip(calls, case.calls_checked or [case.checked] * len(calls), strict=True):
        cpu_one = lambda draw: verify_call_cpu(concrete, case.kernel, draw.sizes,  # noqa: E731
                                               case.settings.seed, draw.extreme, case.settings.timeout_s,
                                               draw.num_sms, draw.order)
        cpu_which = "small" if concrete not in listed else "all" if concrete is listed[0] else "no_range_max"
        plan_one = lambda sizes: plan_call(concrete, case.kernel, sizes, case.settings.seed)  # noqa: E731
        if case.settings.gpu:
            from kernelgen.gpu.calls import verify_call_gpu

            check_one = lambda draw: verify_call_gpu(case, concrete, draw.sizes, draw.extreme,  # noqa: E731
                                                     draw.num_sms)
            sizes = for_each_draw(concrete, kernel_for_call, case.settings, check_one,
                                  "small" if concrete not in listed else "all", unjudged, plan_one)
            for_each_draw(concrete, kernel_for_call, dataclasses.replace(case.settings, gpu=False),
                          interpreter_checks(cpu_one), cpu_which)
        else:
            sizes = for_each_draw(concrete, kernel_for_call, case.settings, cpu_one, cpu_which, unjudged, plan_one)
        checked += [s for s in sizes if s not in checked]
    if unjudged:
        case.extra["unjudged_draws"] = unjudged
    return checked


def stage_tune(case: Case) -> None:
    if case.settings.gpu and case.settings.time_kernels and case.settings.tune != "off":
        if case.task.variants:  # each call tuned on its own (kernelgen.gpu.calls)
            from kernelgen.gpu.calls import tune_calls

            tune_calls(case)
            return
        from kernelgen.gpu.case import tune_case

        tune_case(case)


def stage_time(case: Case) -> None:
    if case.settings.gpu and case.settings.time_kernels:
        if case.task.variants:
            from kernelgen.gpu.calls import time_calls

            case.timing = time_calls(case)
            return
        from kernelgen.gpu.case import time_case

        case.timing = time_case(case)


STAGES: list[tuple[str, Callable[[Case], None]]] = [
    ("parse", stage_parse),
    ("check", stage_check),
    ("compile", stage_compile),
    ("verify", stage_verify),
    ("tune", stage_tune),
    ("time", stage_time),
]


def static_diagnostics(task: Task, answer: str, settings: Settings) -> list[Diagnostic] | None:
    """What the stages before the launch find wrong with an answer (parse, signature, check,
    lower and compile), for a repair round; None when they pass."""
    case = Case(task, answer, settings)
    for name, stage in STAGES:
        if name in ("verify", "tune", "time"):
            break
        try:
            stage(case)
        except KernelgenError as error:
            return list(error.diagnostics)
        except Exception:  # noqa: BLE001 - a crash of kernelgen is nothing to repair; the judged
            return None    # run of the same answer records it (evaluate_answer: harness_error)
    return None


def evaluate_answer(task: Task, answer: str, settings: Settings, *, provider: str = "reference",
                    model: str = "golden", sample: int = 0, track: str = "pipeline",
                    generation: GenerationInfo | None = None, prompt: str | None = None) -> CaseResult:
    """Run one answer through every stage; never raises for a bad answer, nor for a crash of
    kernelgen itself on it (that case ends in ``harness_error``, a failure the summary counts)."""
    start = time.perf_counter()
    case = Case(task, answer, settings)
    case.artifacts["answer"] = answer
    if prompt is not None:
        case.artifacts["prompt"] = prompt
    outcome: dict[str, Any] = {"outcome": Outcome.OK}
    for name, stage in STAGES:
        try:
            stage(case)
        except KernelgenError as error:
            outcome = CaseResult.failure_fields(error)
            break
        except Exception as exc:  # noqa: BLE001 - kernelgen's own crash is this case's outcome, counted
            outcome = CaseResult.crash_fields(exc, name)
            break
    return CaseResult(task=task.id, tier=task.tier, track=track, provider=provider, model=model,
                      sample=sample, mode="gpu" if settings.gpu else "cpu", target=settings.target,
                      sizes_checked=case.sizes_checked, generation=generation or GenerationInfo(),
                      timing=case.timing, artifacts=case.artifacts, extra=case.extra,
                      tuning=Tuning(**case.tuning) if case.tuning else None,
                      duration_s=time.perf_counter() - start, **outcome)
