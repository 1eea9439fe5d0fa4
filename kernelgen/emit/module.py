"""A checked kernel AST as readable Triton Python: a ``@triton.jit`` kernel and its launcher.

The emitted module is what a careful engineer would write by hand for the same kernel, and it
means exactly what :mod:`kernelgen.interp.execute` says the AST means. Triton's Python frontend
differs from the interpreter in places, and the emitter writes the difference out:

* **Weak literals.** The checker types every operation; the emitter converts each operand to
  the operation's dtype, as the interpreter does (``.to()`` where a value has another dtype). A
  Python number next to a tensor takes the tensor's dtype in Triton too; a literal used as an
  f16/bf16 value is written already rounded to that dtype (Triton would round it through f32,
  and computes f16 ``/`` and ``%`` in f32). An operation on Python constants alone is not left
  to Python (``-7 // 2`` floors in Python, truncates in Triton): its first operand is made a
  tensor with ``tl.full([], value, dtype)``.
* **Integer division** ``//`` and ``%`` on Triton tensors truncate toward zero (C), as the
  interpreter does. A division by zero is the one difference: the interpreter gives 0, a GPU
  gives an unspecified value (the kernel is wrong either way).
* **Floats.** ``div`` is ``tl.div_rn`` and ``sqrt`` is ``tl.sqrt_rn`` (IEEE, as in torch; Triton's
  ``/`` and ``tl.sqrt`` are approximate on GPUs). ``maximum``, ``minimum``, ``clamp`` and the
  ``max``/``min`` reductions propagate NaN (``tl.PropagateNan.ALL``; Triton's default drops it).
  ``argmax``/``argmin`` over floats reduce with a combine function that orders NaN first and
  breaks ties toward the lower index, as torch does; over integers ``tl.argmax(...,
  tie_break_left=True)`` does that already.
* **dot** passes ``input_precision`` for f32 operands (Triton's default is tf32 on GPUs) and
  ``out_dtype=tl.float16`` for f16 results.
* **Loads** under a mask without ``other`` pass ``other=0`` (Triton leaves those lanes undefined).
* **Casts** to bool are ``x != 0``; floor/ceil of f16/bf16 go through f32 (Triton takes f32).
* **Python numbers.** Some values may be plain Python numbers when the kernel runs: an integer
  argument equal to 1 (Triton makes it a compile-time constant), and in Triton's interpreter
  float arguments and loop variables. They have no ``.to()`` (casts use ``tl.cast``), and
  Python's own operators would floor-divide them or compute in double precision, so such an
  operation gets a tensor operand first. i64 params are widened in the kernel (Triton passes
  small integers as i32). A ``let`` of a literal is written as the literal where it is used,
  so that it stays weak (the interpreter turns every assigned constant into a tensor). f16 and
  bf16 ``maximum``/``minimum``/``clamp`` cast back (Triton computes bf16 ones in f32, and f16
  ones with a Python float: the values are the same, the dtype is not, which a bitcast sees).
* **tanh, log1p and pow** are small jitted helpers over core ``tl`` ops computed in f64 (rounded
  once to f32): libdevice, which has them, does not run in Triton's interpreter.

Transcendental functions (exp, log, sin, ...) are the GPU's own approximations, within the
harness's tolerances of the interpreter's correctly rounded values.

Triton's interpreter (``TRITON_INTERPRET=1``, NumPy underneath) runs the emitted code on a CPU
with these gaps in Triton 3.6: bf16 values are raw bits to NumPy, so bf16 arithmetic, dot,
constants and casts other than to and from f32 are wrong (loads, stores and reshapes are
right); ``tl.fma`` rounds twice; f16 ``dot`` with an f16 result accumulates in f16; ``tf32`` is
ignored (full f32); conversions to fp8 round half up without carrying into the exponent and
without saturating, and e4m3's NaN reads as 480 (fp8 loads, stores, widening and dots are
right); ``tl.umulhi`` of negative int32 sign-extends (the emitter passes uint32 bits); and with
NumPy >= 2.4 loops whose bounds are kernel arguments fail unless
:func:`kernelgen.baseline.interpreter_fixes.patch_triton_interpreter_index` is applied; an atomic whose value is
a broadcast (a [1, 1] block for a [2, 1] pointer) reads garbage for all lanes but the first
unless :func:`kernelgen.baseline.interpreter_fixes.patch_triton_interpreter_atomics` is.

* **Bits and random numbers.** Shifts clamp their amount as the interpreter says (``_shl``,
  ``_shr``, ``_lshr`` helpers); ``umulhi`` works on the unsigned bits; ``randint`` is Triton's
  uint32 bitcast to int32; ``word`` k is element k of ``tl.randint4x``/``rand4x``/``randn4x``.
* **fp8** casts round once, as the lowering's: f16 directly, other sources as f32 rounded to odd in
  f16 (``_round_to_odd_f16(x).to(tl.float8e4nv)``; Triton's own f32 cast truncates to f16 on sm_89);
  fp8 values convert out through f32; fp8 dots pass ``max_num_imprecise_acc`` = their K.

Names from the AST that are Python keywords or builtins, or that would shadow ``tl``,
``triton``, ``torch``, a helper or the kernel, get a trailing underscore; the launcher is named
after the kernel (:func:`wrapper_name`).
"""

from __future__ import annotations

import keyword
from dataclasses import replace
from typing import Collection


from kernelgen.lang import nodes as L
from kernelgen.check.checked import Checked, launches_of
from kernelgen.emit.code import (ATOM, INT_DTYPES, MODULE_NAMES, MUL, POSTFIX, TL_DTYPES, TORCH_DTYPES, UNARY,  # noqa: F401
                                 Namer, _Code)
from kernelgen.emit.helpers import HELPERS, HOST_HELPERS
from kernelgen.emit.kernel import _KernelEmitter
from kernelgen.emit.launcher import LAUNCHER_BUILTINS, _host_names, _HostExpressions, _param_code, _wrapper_lines

def _kernel_names(kernel: L.Kernel) -> set[str]:
    names = {p.name for p in kernel.params} | {m.name for m in kernel.meta}

    def visit(stmts: list[L.Stmt]) -> None:
        for s in stmts:
            if isinstance(s, L.Let) or isinstance(s, L.Atomic) and s.name is not None:
                names.add(s.name)
            elif isinstance(s, L.For):
                names.add(s.var)
                names.update(c.name for c in s.carry)
                visit(s.body)
            elif isinstance(s, L.If):
                names.update(r.name for r in s.results)
                visit(s.then)
                visit(s.else_)

    visit(kernel.body)
    return names


def _module_namer() -> Namer:
    return Namer(set(), set(MODULE_NAMES) | set(HELPERS) | set(HOST_HELPERS))


def wrapper_name(kernel: L.Kernel) -> str:
    """The name of the emitted launcher: the kernel's name, unless that is reserved in Python."""
    return _module_namer()(kernel.name)


def kernel_function_name(kernel: L.Kernel) -> str:
    """The name of the emitted ``@triton.jit`` function."""
    names = _module_namer()
    names(kernel.name)
    return names(f"{kernel.name}_kernel")


def emit_triton(checked: Checked, entry: str | None = None,
                converted_inputs: Collection[str] | None = None) -> str:
    """Readable Triton Python for a checked kernel: imports, jitted helpers it needs, the
    ``@triton.jit`` kernel and a launcher, which takes the AST's inputs in order, allocates the
    outputs on the inputs' device and returns them (a tuple for several). A ``dtype=`` argument
    (role ``dtype``) takes None or the variant's dtype, and inputs of that dtype are cast to it
    (``converted_inputs``, where given, names the inputs cast instead: a variant of a generic
    kernel whose other dtype variable took the same dtype reads those inputs as they come).
    A program of several launches gets one ``@triton.jit`` kernel per launch, and its launcher
    allocates the scratch tensors (``torch.zeros`` where declared zero) and launches in order.

    The launcher is named ``entry`` when given (a task's launcher may shadow a builtin it does
    not use, such as ``pow``), else after the kernel, with a ``_`` added where that is reserved.
    """
    kernel = checked.kernel
    launches = launches_of(checked)
    module_names = _module_namer()
    if entry is not None:
        if not entry.isidentifier() or keyword.iskeyword(entry) or entry in LAUNCHER_BUILTINS + MODULE_NAMES:
            raise ValueError(f"{entry!r} cannot name the launcher")
        module_names.reserved.add(entry)
    entry = entry or module_names(kernel.name)
    kernel_fns = [module_names(f"{each.kernel.name}_kernel") for each in launches]
    reserved = set(MODULE_NAMES) | set(HELPERS) | set(HOST_HELPERS) | {entry, *kernel_fns}

    host_names = Namer(set().union(*(_host_names(each) for each in launches)), reserved)
    scalars = {i.name: i.dtype for i in kernel.inputs if i.shape is None}
    scalars.update((item, "f64" if i.dtype == "f64" else "f32") for i in kernel.inputs if i.role == "floats"
                   for item in i.items or ())
    host_helpers: set[str] = set()
    host = _HostExpressions(host_names, scalars, host_helpers)

    helpers: set[str] = set()
    kernels: list[str] = []
    kernel_names: list[Namer] = []
    for each, kernel_fn in zip(launches, kernel_fns):
        names = Namer(_kernel_names(each.kernel), reserved)
        emitter = _KernelEmitter(each, names)
        env: dict[str, _Code] = {}
        signature: list[str] = []
        for binding in each.params:
            name = names(binding.name)
            signature.append(name)
            env[binding.name] = _param_code(binding, name, host)
            if binding.tensor is None and binding.type.dtype == "i64":
                emitter.line(1, f"{name} = tl.cast({name}, tl.int64)")
                env[binding.name] = replace(env[binding.name], may_be_number=False)
        for meta_name in each.meta:
            name = names(meta_name)
            signature.append(f"{name}: tl.constexpr")
            env[meta_name] = _Code(name, ATOM, None, may_be_number=True, nonnegative=True)
        emitter.block(each.kernel.body, "/body", env, 1)
        if not emitter.lines:
            emitter.line(1, "pass")
        helpers |= emitter.helpers
        kernels += ["", "@triton.jit", f"def {kernel_fn}({', '.join(signature)}):", *emitter.lines, ""]
        kernel_names.append(names)

    out = [f'"""{kernel.name}: Triton kernel and launcher emitted by kernelgen from the kernel AST."""',
           "", "import torch", "import triton", "import triton.language as tl", ""]
    for helper, source in HELPERS.items():
        if helper in helpers:
            out += ["", source.strip(), ""]
    out += kernels
    wrapper = _wrapper_lines(checked, entry, kernel_fns, host, host_names, kernel_names, converted_inputs)
    for helper, source in HOST_HELPERS.items():
        if helper in host_helpers:
            out += ["", source.strip(), ""]
    out += ["", *wrapper]
    return "\n".join(out) + "\n"
