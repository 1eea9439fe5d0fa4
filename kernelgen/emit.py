"""A checked kernel AST as readable Triton Python: a ``@triton.jit`` kernel and its launcher.

The emitted module is what a careful engineer would write by hand for the same kernel, and it
means exactly what :mod:`kernelgen.interpret` says the AST means. Triton's Python frontend
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
:func:`kernelgen.sandbox.patch_triton_interpreter_index` is applied.

* **Bits and random numbers.** Shifts clamp their amount as the interpreter says (``_shl``,
  ``_shr``, ``_lshr`` helpers); ``umulhi`` works on the unsigned bits; ``randint`` is Triton's
  uint32 bitcast to int32; ``word`` k is element k of ``tl.randint4x``/``rand4x``/``randn4x``.
* **fp8** casts go through f16 (``x.to(tl.float16).to(tl.float8e4nv)``), as the lowering does on
  every target; fp8 values convert out through f32; fp8 dots pass ``max_num_imprecise_acc=32``.

Names from the AST that are Python keywords or builtins, or that would shadow ``tl``,
``triton``, ``torch``, a helper or the kernel, get a trailing underscore; the launcher is named
after the kernel (:func:`wrapper_name`).
"""

from __future__ import annotations

import builtins
import keyword
import math
from dataclasses import dataclass, replace
from typing import Collection, Union

from kernelgen import emit_blocks
from kernelgen import language as L
from kernelgen.check import CheckedKernel, ParamBinding, child, is_literal, literal_value
from kernelgen.emit_batch import batch_lines, unbatch_lines
from kernelgen.checked import Checked, launches_of

MODULE_NAMES = ("torch", "triton", "tl")

TL_DTYPES = {"f32": "tl.float32", "f16": "tl.float16", "bf16": "tl.bfloat16", "f64": "tl.float64", "i32": "tl.int32",
             "i64": "tl.int64", "bool": "tl.int1", "f8e4m3": "tl.float8e4nv", "f8e5m2": "tl.float8e5"}
TORCH_DTYPES = {"f32": "torch.float32", "f16": "torch.float16", "bf16": "torch.bfloat16", "f64": "torch.float64",
                "i32": "torch.int32", "i64": "torch.int64", "bool": "torch.bool", "f8e4m3": "torch.float8_e4m3fn",
                "f8e5m2": "torch.float8_e5m2"}
FLOAT_DTYPES = ("f32", "f16", "bf16", "f64")
INT_DTYPES = ("i32", "i64")
FP8_DTYPES = ("f8e4m3", "f8e5m2")
# The smallest normal and the largest finite f32: a Python float outside this range becomes an
# f64 tensor when Triton makes a tensor of it on its own.
F32_TINY = 2.0 ** -126
F32_MAX = (2 - 2.0 ** -23) * 2.0 ** 127

# Python operator precedence, loosest first (only the levels the emitter writes).
COMPARE, BIT_OR, BIT_XOR, BIT_AND, ADD, MUL, UNARY, POSTFIX, ATOM = range(2, 11)

_BINARY_OPERATORS = {
    "add": ("+", ADD), "sub": ("-", ADD), "mul": ("*", MUL), "idiv": ("//", MUL), "rem": ("%", MUL),
    "lt": ("<", COMPARE), "le": ("<=", COMPARE), "gt": (">", COMPARE), "ge": (">=", COMPARE),
    "eq": ("==", COMPARE), "ne": ("!=", COMPARE),
    "and": ("&", BIT_AND), "or": ("|", BIT_OR), "xor": ("^", BIT_XOR),
}
_TL_UNARY = {"exp": "tl.exp", "exp2": "tl.exp2", "log": "tl.log", "log2": "tl.log2",
             "sqrt": "tl.sqrt_rn", "rsqrt": "tl.rsqrt", "sin": "tl.sin", "cos": "tl.cos",
             "erf": "tl.erf", "sigmoid": "tl.sigmoid", "abs": "tl.abs"}
_HELPER_UNARY = {"tanh": "_tanh", "log1p": "_log1p"}
# f64 versions where Triton's function takes fp32 only.
_TL_UNARY_F64 = {"sqrt": "tl.sqrt"}

# Jitted helpers, written into the module when a kernel uses them (in this order).
HELPERS: dict[str, str] = {
    "_shl": '''
@triton.jit
def _shl(a, b):
    bits: tl.constexpr = a.dtype.primitive_bitwidth
    inside = (b >= 0) & (b < bits)
    return tl.where(inside, a << tl.where(inside, b, 0), 0)
''',
    "_shr": '''
@triton.jit
def _shr(a, b):
    bits: tl.constexpr = a.dtype.primitive_bitwidth
    return a >> tl.where((b >= 0) & (b < bits), b, bits - 1)
''',
    "_lshr": '''
@triton.jit
def _lshr(a, b):
    bits: tl.constexpr = a.dtype.primitive_bitwidth
    inside = (b >= 0) & (b < bits)
    if bits == 32:
        shifted = (a.to(tl.uint32, bitcast=True) >> tl.where(inside, b, 0).to(tl.uint32)).to(tl.int32, bitcast=True)
    else:
        shifted = (a.to(tl.uint64, bitcast=True) >> tl.where(inside, b, 0).to(tl.uint64)).to(tl.int64, bitcast=True)
    return tl.where(inside, shifted, 0)
''',
    "_umulhi": '''
@triton.jit
def _umulhi(a, b):
    bits: tl.constexpr = a.dtype.primitive_bitwidth
    if bits == 32:
        high = tl.umulhi(a.to(tl.uint32, bitcast=True), b.to(tl.uint32, bitcast=True)).to(tl.int32, bitcast=True)
    else:
        high = tl.umulhi(a.to(tl.uint64, bitcast=True), b.to(tl.uint64, bitcast=True)).to(tl.int64, bitcast=True)
    return high
''',
    "_maximum_propagating_nan": '''
@triton.jit
def _maximum_propagating_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL).to(a.dtype)
''',
    "_minimum_propagating_nan": '''
@triton.jit
def _minimum_propagating_nan(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL).to(a.dtype)
''',
    "_argmax_combine": '''
@triton.jit
def _argmax_combine(value1, index1, value2, index2):
    """torch.argmax's order: NaN above every number; ties go to the lower index."""
    nan1 = value1 != value1
    nan2 = value2 != value2
    lower = index1 < index2
    greater = (value1 > value2) | ((value1 == value2) & lower)
    pick1 = (nan1 & (~nan2 | lower)) | (~nan1 & ~nan2 & greater)
    return tl.where(pick1, value1, value2), tl.where(pick1, index1, index2)
''',
    "_argmin_combine": '''
@triton.jit
def _argmin_combine(value1, index1, value2, index2):
    """torch.argmin's order: NaN below every number; ties go to the lower index."""
    nan1 = value1 != value1
    nan2 = value2 != value2
    lower = index1 < index2
    less = (value1 < value2) | ((value1 == value2) & lower)
    pick1 = (nan1 & (~nan2 | lower)) | (~nan1 & ~nan2 & less)
    return tl.where(pick1, value1, value2), tl.where(pick1, index1, index2)
''',
    "_tanh": '''
@triton.jit
def _tanh(x):
    """tanh of f32 or f64 in f64: -m / (2 + m) with m = expm1(-2|x|), signed like x; expm1(y)
    is (u - 1) * y / log(u) with u = exp(y) (Kahan's form, accurate near 0 where 1 - exp is not)."""
    y = -2.0 * tl.abs(x.to(tl.float64))
    u = tl.exp(y)
    m = tl.where(u == 1.0, y, tl.where(u == 0.0, -1.0, (u - 1.0) * (y / tl.log(u))))
    magnitude = (-m / (2.0 + m)).to(x.dtype)
    return tl.where(x < 0, -magnitude, magnitude)
''',
    "_log1p": '''
@triton.jit
def _log1p(x):
    """log(1 + x) of f32 or f64, accurate near 0: log(u) * x / (u - 1) with u = 1 + x in f64."""
    wide = x.to(tl.float64)
    u = 1.0 + wide
    result = tl.where(u == 1.0, wide, tl.log(u) * (wide / (u - 1.0)))
    return tl.where(x == float("inf"), x, result.to(x.dtype))
''',
    "_pow": '''
@triton.jit
def _pow(x, y):
    """torch.pow of f32 or f64: |x| ** y in f64, the sign of x for odd integer y, NaN for a negative
    finite x and a non-integer y, 1 where y == 0 or x == 1 (even with NaN), and
    (-1) ** +-inf == 1. Both operands are broadcast first: Triton's interpreter cannot combine a
    0-d comparison with a block one (``&`` raises a TypeError there)."""
    x, y = tl.broadcast(x, y)
    magnitude = tl.exp2(y.to(tl.float64) * tl.log2(tl.abs(x).to(tl.float64))).to(x.dtype)
    y_is_integer = tl.floor(y) == y
    y_is_odd = y_is_integer & (tl.floor(y * 0.5) * 2.0 != y)
    if x.dtype == tl.float64:
        sign_bit = x.to(tl.int64, bitcast=True) < 0
    else:
        sign_bit = x.to(tl.int32, bitcast=True) < 0
    result = tl.where(sign_bit & y_is_odd, -magnitude, magnitude)
    result = tl.where((x < 0) & (x != float("-inf")) & ~y_is_integer, float("nan"), result)
    one = (y == 0) | (x == 1) | ((x == -1) & (tl.abs(y) == float("inf")))
    return tl.where(one, 1.0, result)
''',
}
HELPERS.update(emit_blocks.HELPERS)
HOST_HELPERS: dict[str, str] = {
    "_div_toward_zero": '''
def _div_toward_zero(a, b):
    """Integer division rounding toward zero (C), as the kernel language's host expressions do."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q
''',
}


@dataclass(frozen=True)
class _Code:
    """An emitted expression and what Triton will make of it.

    ``dtype`` is the dtype of the tensor it evaluates to, or None for a Python constant (a
    literal or a meta-parameter), which takes its dtype from the tensor next to it.
    ``may_be_number`` marks values of that dtype that may nevertheless be plain Python numbers
    when the kernel runs: integer params (Triton passes a 1 as a constant), loop variables and
    float params (Python numbers in Triton's interpreter). Python's own operators would apply
    to those (floor division, double precision), and they have no ``.to()``. ``value`` is a
    literal's value; ``nonnegative`` says the value is known to be >= 0.
    """

    text: str
    prec: int
    dtype: str | None
    pointer: bool = False
    may_be_number: bool = False
    value: Union[bool, int, float, None] = None
    nonnegative: bool = False

    def at(self, prec: int) -> str:
        """The text as an operand that binds at least as tightly as ``prec``."""
        return self.text if self.prec >= prec else f"({self.text})"


def round_to(value: float, dtype: str) -> float:
    """A float rounded to ``dtype`` (round to nearest even), as a Python float."""
    import torch

    from kernelgen.host import torch_dtype

    return float(torch.tensor(value, dtype=torch.float64).to(torch_dtype(dtype)))


def _number(value: Union[int, float]) -> tuple[str, int]:
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")', POSTFIX
    text = repr(value)
    return text, UNARY if text.startswith("-") else ATOM


def _literal(value: Union[bool, int, float], dtype: str | None) -> tuple[str, int]:
    """A literal as it should be written where it stands for a value of ``dtype``."""
    if isinstance(value, bool):
        return repr(value), ATOM
    if dtype in ("f16", "bf16"):
        rounded = round_to(float(value), dtype)
        if rounded != value:
            return _number(rounded)
    elif dtype == "f32" and isinstance(value, float) and math.isfinite(value) and abs(value) > F32_MAX:
        rounded = round_to(value, "f32")
        if math.isinf(rounded):
            return _number(rounded)
    return _number(value)


class Namer:
    """Python names for AST names: the same name each time, never a keyword, builtin, module
    or other reserved name, and never another AST name."""

    def __init__(self, taken: set[str], reserved: set[str]) -> None:
        self.taken = set(taken)
        self.reserved = set(reserved) | set(dir(builtins)) | set(keyword.kwlist)
        self.names: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        if name not in self.names:
            candidate = name
            while candidate in self.reserved or (candidate != name and candidate in self.taken):
                candidate += "_"
            self.names[name] = candidate
            self.reserved.add(candidate)
        return self.names[name]

    def fresh(self, name: str) -> str:
        """A new Python name for ``name``, never given before, now what ``name`` maps to."""
        candidate = name
        while candidate in self.reserved or candidate in self.taken:
            candidate += "_"
        self.names[name] = candidate
        self.reserved.add(candidate)
        return candidate


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


def _host_names(checked: CheckedKernel) -> set[str]:
    kernel = checked.kernel
    return ({i.name for i in kernel.inputs} | set(checked.sizes) | {o.name for o in kernel.outputs}
            | {m.name for m in kernel.meta} | {i.present for i in kernel.inputs if i.present}
            | {item for i in kernel.inputs for item in i.items or ()} | {"grid"})


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


def _referenced_names(expr: L.Expr) -> set[str]:
    if isinstance(expr, str):
        return set() if is_literal(expr) else {expr}
    if isinstance(expr, L.Node):
        found: set[str] = set()
        for field in type(expr).model_fields:
            value = getattr(expr, field)
            if isinstance(value, (L.Node, str)) and field not in ("op", "dtype", "precision"):
                found |= _referenced_names(value)
        return found
    return set()


class _HostExpressions:
    """Host expressions (grid, output shapes, param values) as Python over the launcher's
    locals, with the kernel language's integer semantics (division toward zero)."""

    def __init__(self, names: Namer, scalars: dict[str, str], helpers: set[str]) -> None:
        self.names = names
        self.scalars = scalars
        self.helpers = helpers

    def kind(self, expr: L.Expr) -> str:
        """'int', 'float' or 'bool': the Python type the expression evaluates to."""
        if isinstance(expr, bool):
            return "bool"
        if isinstance(expr, int):
            return "int"
        if isinstance(expr, float) or is_literal(expr):
            return "float"
        if isinstance(expr, str) and expr in self.scalars:
            dtype = self.scalars[expr]
            return "float" if dtype in FLOAT_DTYPES else "bool" if dtype == "bool" else "int"
        return "int"

    def nonnegative(self, expr: L.Expr) -> bool:
        if isinstance(expr, bool):
            return True
        if isinstance(expr, (int, float)):
            return expr >= 0
        if isinstance(expr, str):
            return not is_literal(expr) and expr not in self.scalars
        if isinstance(expr, L.TensorInfo):
            return True
        if isinstance(expr, L.Binary):
            lhs, rhs = self.nonnegative(expr.lhs), self.nonnegative(expr.rhs)
            if expr.op == "maximum":
                return lhs or rhs
            if expr.op == "sub":
                return False
            return lhs and rhs
        return False

    def emit(self, expr: L.Expr) -> tuple[str, int]:
        if is_literal(expr):
            return _number(literal_value(expr)) if not isinstance(expr, bool) else (repr(int(expr)), ATOM)
        if isinstance(expr, str):
            return self.names(expr), ATOM
        if isinstance(expr, L.TensorInfo):
            of = self.names(expr.of)
            return (f"{of}.numel()" if expr.op == "numel" else f"{of}.stride({expr.dim})"), POSTFIX
        assert isinstance(expr, L.Binary), expr
        (lhs, lp), (rhs, rp) = self.emit(expr.lhs), self.emit(expr.rhs)
        if expr.op in ("maximum", "minimum"):
            return f"{'max' if expr.op == 'maximum' else 'min'}({lhs}, {rhs})", POSTFIX
        exact = self.nonnegative(expr.lhs) and self.nonnegative(expr.rhs)
        if expr.op == "cdiv":
            if exact:
                return f"triton.cdiv({lhs}, {rhs})", POSTFIX
            self.helpers.add("_div_toward_zero")
            return f"_div_toward_zero({lhs} + {_wrap(rhs, rp, ADD + 1)} - 1, {rhs})", POSTFIX
        if expr.op in ("idiv", "rem") and not exact:
            self.helpers.add("_div_toward_zero")
            quotient = f"_div_toward_zero({lhs}, {rhs})"
            if expr.op == "idiv":
                return quotient, POSTFIX
            return f"{_wrap(lhs, lp, ADD)} - {_wrap(rhs, rp, MUL)} * {quotient}", ADD
        symbol, prec = _BINARY_OPERATORS[expr.op]
        return f"{_wrap(lhs, lp, prec)} {symbol} {_wrap(rhs, rp, prec + 1)}", prec

    def value(self, expr: L.Expr, dtype: str) -> str:
        """A param's value, converted to what the kernel expects (as the host does)."""
        text, _ = self.emit(expr)
        kind = self.kind(expr)
        if dtype in ("f32", "f64") and kind != "float":
            return f"float({text})"
        if dtype not in ("f32", "f64") and kind != "int":
            return f"int({text})"
        return text


def _wrap(text: str, prec: int, needed: int) -> str:
    return text if prec >= needed else f"({text})"


class _KernelEmitter:
    def __init__(self, checked: CheckedKernel, names: Namer) -> None:
        self.checked = checked
        self.types = checked.types
        self.names = names
        self.helpers: set[str] = set()
        self.lines: list[str] = []
        self.assigned: set[str] = set()

    def target(self, name: str) -> str:
        """The Python name a statement assigns ``name`` to: one assignment site per Python
        name, since Triton makes a name assigned in both branches of an ``if`` a result of it
        (a let bound in two sibling scopes gets a fresh name the second time)."""
        python = self.names(name)
        if python in self.assigned:
            python = self.names.fresh(name)
        self.assigned.add(python)
        return python

    # -- values ----------------------------------------------------------------------------

    def coerce(self, c: _Code, dtype: str, tensor: bool = False) -> _Code:
        """``c`` as an operand of dtype ``dtype`` (a tensor of it if ``tensor``)."""
        if c.pointer:
            return c
        if c.dtype is None and c.value is not None:
            text, prec = _literal(c.value, dtype)
            if text != c.text:
                c = replace(c, text=text, prec=prec)  # rounded to a narrow float type
            if dtype == "f64" and isinstance(c.value, float) and round_to(c.value, "f32") != c.value:
                tensor = True  # Triton would make an f32 constant of a Python float first
        elif c.dtype is not None and c.dtype != dtype:
            c = self.cast(c, dtype)
        return self.as_tensor(c, dtype) if tensor else c

    def cast(self, c: _Code, dtype: str) -> _Code:
        if c.dtype is None and dtype == "f64" and isinstance(c.value, float):
            return self.as_tensor(c, dtype)  # tl.cast would make an f32 constant of it first
        if c.dtype is None or c.may_be_number:
            return _Code(f"tl.cast({c.text}, {TL_DTYPES[dtype]})", POSTFIX, dtype)
        if dtype == "bool":
            return _Code(f"{c.at(COMPARE + 1)} != 0", COMPARE, "bool")
        return _Code(f"{c.at(POSTFIX)}.to({TL_DTYPES[dtype]})", POSTFIX, dtype)

    def literal_code(self, value: Union[bool, int, float]) -> _Code:
        text, prec = _number(value) if not isinstance(value, bool) else (repr(value), ATOM)
        return _Code(text, prec, None, value=value, nonnegative=not isinstance(value, bool) and value >= 0)

    def dims(self, dims: list[L.Dim], env: dict[str, _Code]) -> str:
        return "[" + ", ".join(str(d) if isinstance(d, int) else env[d].text for d in dims) + "]"

    def expr(self, e: L.Expr, path: str, env: dict[str, _Code]) -> _Code:
        if is_literal(e):
            return self.literal_code(literal_value(e))
        if isinstance(e, str):
            return env[e]
        return getattr(self, f"_{type(e).__name__.lower()}")(e, path, env)

    def operand(self, e: L.Expr, path: str, env, dtype: str, tensor: bool = False) -> _Code:
        return self.coerce(self.expr(e, path, env), dtype, tensor)

    def as_tensor(self, c: _Code, dtype: str) -> _Code:
        """``c`` as a Triton tensor: Python constants, and values that may be compile-time
        constants (on which Python's own operators would apply), become scalar tensors."""
        if c.pointer or not (c.dtype is None or c.may_be_number):
            return c
        if c.dtype is None:
            return _Code(f"tl.full([], {c.text}, {TL_DTYPES[dtype]})", POSTFIX, dtype, nonnegative=c.nonnegative)
        return _Code(f"tl.cast({c.text}, {TL_DTYPES[dtype]})", POSTFIX, dtype, nonnegative=c.nonnegative)

    def tensor_of_own_type(self, e: L.Expr, path: str, env) -> _Code:
        """A value as a tensor of its checked type (block operations take no constants)."""
        return self.as_tensor(self.expr(e, path, env), self.types[path].dtype)

    # -- expressions -----------------------------------------------------------------------

    def _programid(self, e: L.ProgramId, path: str, env) -> _Code:
        return _Code(f"tl.{e.op}({e.axis})", POSTFIX, "i32", nonnegative=True)

    def _arange(self, e: L.Arange, path: str, env) -> _Code:
        size = str(e.size) if isinstance(e.size, int) else env[e.size].text
        return _Code(f"tl.arange(0, {size})", POSTFIX, "i32", nonnegative=True)

    def _full(self, e: L.Full, path: str, env) -> _Code:
        value, _ = _literal(literal_value(e.value), e.dtype)
        return _Code(f"tl.full({self.dims(e.shape, env)}, {value}, {TL_DTYPES[e.dtype]})", POSTFIX, e.dtype)

    def _load(self, e: L.Load, path: str, env) -> _Code:
        t = self.types[path]
        args = [self.expr(e.ptr, child(path, "ptr"), env).text]
        if e.mask is not None:
            args.append(f"mask={self.expr(e.mask, child(path, 'mask'), env).text}")
            if e.other is not None:
                other = self.operand(e.other, child(path, "other"), env, t.dtype).text
            else:
                other = "False" if t.dtype == "bool" else "0.0" if t.dtype in FLOAT_DTYPES + FP8_DTYPES else "0"
            args.append(f"other={other}")
        args += _modifiers(e)
        return _Code(f"tl.load({', '.join(args)})", POSTFIX, t.dtype)

    def _unary(self, e: L.Unary, path: str, env) -> _Code:
        t = self.types[path]
        xpath = child(path, "x")
        if e.op == "neg":
            x = self.expr(e.x, xpath, env)
            x = self.coerce(x, t.dtype, tensor=x.dtype is None)
            return _Code(f"-{x.at(UNARY + 1)}", UNARY, t.dtype, may_be_number=x.may_be_number)
        if e.op == "not":
            # On a Python bool (a comparison of constants), ~ would give -2: a tensor first.
            x = self.operand(e.x, xpath, env, "bool", tensor=True)
            return _Code(f"~{x.at(UNARY + 1)}", UNARY, "bool")
        x = self.operand(e.x, xpath, env, t.dtype, tensor=True)
        if e.op in ("floor", "ceil") and t.dtype in ("f16", "bf16"):
            return _Code(f"tl.{e.op}({x.at(POSTFIX)}.to(tl.float32)).to({TL_DTYPES[t.dtype]})", POSTFIX, t.dtype)
        if e.op in ("floor", "ceil"):
            return _Code(f"tl.{e.op}({x.text})", POSTFIX, t.dtype)
        if e.op in _HELPER_UNARY:
            self.helpers.add(_HELPER_UNARY[e.op])
            return _Code(f"{_HELPER_UNARY[e.op]}({x.text})", POSTFIX, t.dtype)
        if t.dtype == "f64" and e.op == "rsqrt":  # as the lowering: tl.rsqrt of fp64 is rsqrt.approx.f64
            return _Code(f"1.0 / tl.sqrt({x.text})", MUL, "f64")
        function = _TL_UNARY_F64.get(e.op, _TL_UNARY[e.op]) if t.dtype == "f64" else _TL_UNARY[e.op]
        return _Code(f"{function}({x.text})", POSTFIX, t.dtype)

    def _binary(self, e: L.Binary, path: str, env) -> _Code:
        t = self.types[path]
        lhs = self.expr(e.lhs, child(path, "lhs"), env)
        rhs = self.expr(e.rhs, child(path, "rhs"), env)
        if t.pointer:
            symbol = "+" if e.op == "add" else "-"
            return _Code(f"{lhs.at(ADD)} {symbol} {rhs.at(ADD + 1)}", ADD, t.dtype, pointer=True)
        dtype = self.checked.operand_dtypes[path]
        lhs, rhs = self.coerce(lhs, dtype), self.coerce(rhs, dtype)
        # Operands that may both be Python numbers would be computed by Python: in double
        # precision for floats, with floor division for integers.
        python_numbers = all(c.dtype is None or (c.may_be_number and dtype in FLOAT_DTYPES) for c in (lhs, rhs))
        python_division = (e.op in ("idiv", "rem", "cdiv") and dtype in INT_DTYPES
                           and all(c.dtype is None or c.may_be_number for c in (lhs, rhs))
                           and not (lhs.nonnegative and rhs.nonnegative))
        if e.op in L.BIT_OPS:
            # Shift amounts outside the width are clamped as the interpreter says; umulhi of
            # signed values is of their unsigned bits (Triton's interpreter would sign-extend).
            self.helpers.add(f"_{e.op}")
            return _Code(f"_{e.op}({self.as_tensor(lhs, dtype).text}, {self.as_tensor(rhs, dtype).text})",
                         POSTFIX, t.dtype)
        if python_numbers or python_division or e.op == "pow":
            lhs = self.as_tensor(lhs, dtype)
        if e.op == "pow":
            rhs = self.as_tensor(rhs, dtype)
            self.helpers.add("_pow")
            return _Code(f"_pow({lhs.text}, {rhs.text})", POSTFIX, t.dtype)
        nonnegative = lhs.nonnegative and rhs.nonnegative and e.op in ("add", "mul", "idiv", "cdiv", "rem")
        if e.op == "div":
            return self.divide(lhs, rhs, dtype)
        if e.op == "cdiv":
            return _Code(f"tl.cdiv({lhs.text}, {rhs.text})", POSTFIX, t.dtype, nonnegative=nonnegative)
        if e.op in ("maximum", "minimum"):
            nan = ", propagate_nan=tl.PropagateNan.ALL" if dtype in FLOAT_DTYPES else ""
            text = f"tl.{e.op}({lhs.text}, {rhs.text}{nan})"
            if dtype in ("f16", "bf16"):
                # Triton compares bf16 in f32, and f16 with a Python float too: the result is f32
                text += f".to({TL_DTYPES[dtype]})"
            either, both = lhs.nonnegative or rhs.nonnegative, lhs.nonnegative and rhs.nonnegative
            return _Code(text, POSTFIX, t.dtype, nonnegative=either if e.op == "maximum" else both)
        symbol, prec = _BINARY_OPERATORS[e.op]
        right = prec + 1 if prec != COMPARE else COMPARE + 1
        text = f"{lhs.at(prec if prec != COMPARE else COMPARE + 1)} {symbol} {rhs.at(right)}"
        number = all(c.dtype is None or c.may_be_number for c in (lhs, rhs))
        if e.op == "rem" and dtype in ("f16", "bf16"):
            # Triton computes f16/bf16 % in f32.
            return _Code(f"({text}).to({TL_DTYPES[dtype]})", POSTFIX, dtype)
        return _Code(text, prec, t.dtype, may_be_number=number, nonnegative=nonnegative)

    def divide(self, lhs: _Code, rhs: _Code, dtype: str) -> _Code:
        if dtype == "f64":  # Triton's fp64 division is correctly rounded (div.rn.f64); div_rn takes fp32
            return _Code(f"{lhs.at(MUL)} / {rhs.at(MUL + 1)}", MUL, "f64")

        def f32(c: _Code) -> str:
            if c.dtype is None:
                if c.value is not None and 0 < abs(c.value) < F32_TINY:
                    return self.coerce(c, "f32", tensor=True).text
                return c.text
            return c.text if c.dtype == "f32" else f"{c.at(POSTFIX)}.to(tl.float32)"

        quotient = f"tl.div_rn({f32(lhs)}, {f32(rhs)})"
        if dtype == "f32":
            return _Code(quotient, POSTFIX, "f32")
        # Division of f16/bf16 values in f32, rounded once to the narrow type, is exact.
        return _Code(f"{quotient}.to({TL_DTYPES[dtype]})", POSTFIX, dtype)

    def _where(self, e: L.Where, path: str, env) -> _Code:
        t = self.types[path]
        cond = self.operand(e.cond, child(path, "cond"), env, "bool")
        x = self.expr(e.x, child(path, "x"), env)
        y = self.expr(e.y, child(path, "y"), env)
        if not t.pointer:
            dtype = self.checked.operand_dtypes[path]
            x, y = self.coerce(x, dtype), self.coerce(y, dtype)
            if x.dtype is None and y.dtype is None:
                x = self.coerce(x, dtype, tensor=True)
        return _Code(f"tl.where({cond.text}, {x.text}, {y.text})", POSTFIX, t.dtype, pointer=t.pointer)

    def _fma(self, e: L.Fma, path: str, env) -> _Code:
        dtype = self.checked.operand_dtypes[path]
        x, y, z = (self.operand(getattr(e, f), child(path, f), env, dtype, tensor=True) for f in "xyz")
        return _Code(f"tl.fma({x.text}, {y.text}, {z.text})", POSTFIX, dtype)

    def _clamp(self, e: L.Clamp, path: str, env) -> _Code:
        dtype = self.checked.operand_dtypes[path]
        x, lo, hi = (self.operand(getattr(e, f), child(path, f), env, dtype) for f in ("x", "lo", "hi"))
        if x.dtype is None and lo.dtype is None and hi.dtype is None:
            x = self.coerce(x, dtype, tensor=True)
        nan = ", propagate_nan=tl.PropagateNan.ALL" if dtype in FLOAT_DTYPES else ""
        text = f"tl.minimum(tl.maximum({x.text}, {lo.text}{nan}), {hi.text}{nan})"
        return _Code(text + (f".to({TL_DTYPES[dtype]})" if dtype in ("f16", "bf16") else ""), POSTFIX, dtype)

    def _cast(self, e: L.Cast, path: str, env) -> _Code:
        x = self.expr(e.x, child(path, "x"), env)
        if x.dtype == e.dtype and not x.may_be_number:
            return x
        if x.dtype in FP8_DTYPES:
            # fp8 converts to floats only: through f32 (exact), then as an f32 value.
            x = _Code(f"{x.at(POSTFIX)}.to(tl.float32)", POSTFIX, "f32")
            if e.dtype == "f32":
                return x
        if e.dtype in FP8_DTYPES:
            # As the lowering: to f16 first (integers and f64 through f32), then fp8.
            if x.dtype not in ("f16", "f32", "bf16") or x.may_be_number:
                x = self.cast(x, "f32")
            if x.dtype != "f16":
                x = self.cast(x, "f16")
            return _Code(f"{x.at(POSTFIX)}.to({TL_DTYPES[e.dtype]})", POSTFIX, e.dtype)
        return self.cast(x, e.dtype)  # from fp8: as the f32 value

    def _bitcast(self, e: L.Bitcast, path: str, env) -> _Code:
        x = self.tensor_of_own_type(e.x, child(path, "x"), env)
        return _Code(f"{x.at(POSTFIX)}.to({TL_DTYPES[e.dtype]}, bitcast=True)", POSTFIX, e.dtype)

    def _random(self, e: L.Random, path: str, env) -> _Code:
        """Triton's own functions; randint's uint32 words are bitcast to the language's i32."""
        seed = self.tensor_of_own_type(e.seed, child(path, "seed"), env).text
        offset = self.tensor_of_own_type(e.offset, child(path, "offset"), env).text
        call = f"tl.{e.op}({seed}, {offset})" if e.word == 0 else f"tl.{e.op}4x({seed}, {offset})[{e.word}]"
        if e.op == "randint":
            return _Code(f"{call}.to(tl.int32, bitcast=True)", POSTFIX, "i32")
        return _Code(call, POSTFIX, "f32")

    def _reduce(self, e: L.Reduce, path: str, env) -> _Code:
        t = self.types[path]
        xt = self.types[child(path, "x")]
        is_index = e.op in ("argmax", "argmin")
        dtype = xt.dtype if is_index else t.dtype
        x = self.operand(e.x, child(path, "x"), env, dtype)
        keep = ", keep_dims=True" if e.keepdims else ""
        if e.op == "sum":
            return _Code(f"tl.sum({x.text}, axis={e.axis}{keep})", POSTFIX, t.dtype)
        if dtype in INT_DTYPES:
            if is_index:
                return _Code(f"tl.{e.op}({x.text}, axis={e.axis}, tie_break_left=True{keep})", POSTFIX, "i32",
                             nonnegative=True)
            return _Code(f"tl.{e.op}({x.text}, axis={e.axis}{keep})", POSTFIX, t.dtype)
        if not is_index:
            combine = "_maximum_propagating_nan" if e.op == "max" else "_minimum_propagating_nan"
            self.helpers.add(combine)
            return _Code(f"tl.reduce({x.text}, {e.axis}, {combine}{keep})", POSTFIX, t.dtype)
        combine = f"_{e.op}_combine"
        self.helpers.add(combine)
        index = f"tl.arange(0, {xt.shape[e.axis]})"
        if len(xt.shape) > 1:
            slots = ", ".join(":" if i == e.axis else "None" for i in range(len(xt.shape)))
            index = f"tl.broadcast_to({index}[{slots}], {list(xt.shape)})"
        return _Code(f"tl.reduce(({x.text}, {index}), {e.axis}, {combine}{keep})[1]", POSTFIX, "i32",
                     nonnegative=True)

    def _scan(self, e: L.Scan, path: str, env) -> _Code:
        t = self.types[path]
        x = self.operand(e.x, child(path, "x"), env, t.dtype, tensor=True)
        return _Code(emit_blocks.scan_call(e, x.text, t.dtype, self.helpers), POSTFIX, t.dtype)

    def _sort(self, e: Union[L.Sort, L.TopK], path: str, env) -> _Code:
        t, xt = self.types[path], self.types[child(path, "x")]
        x = self.operand(e.x, child(path, "x"), env, xt.dtype, tensor=True)
        k = t.shape[-1] if isinstance(e, L.TopK) else None
        descending = True if isinstance(e, L.TopK) else e.descending
        text = emit_blocks.sort_call(e.op, x.text, xt.dtype, xt.shape, descending, k, self.helpers)
        return _Code(text, POSTFIX, t.dtype, nonnegative=e.op.startswith("arg"))

    _topk = _sort

    def _gather(self, e: L.Gather, path: str, env) -> _Code:
        t, it = self.types[path], self.types[child(path, "index")]
        src = self.operand(e.src, child(path, "src"), env, t.dtype, tensor=True)
        index = self.operand(e.index, child(path, "index"), env, it.dtype, tensor=True)
        source = emit_blocks.widened_gather_source(src.text, self.types[child(path, "src")].shape, e.axis)
        return _Code(f"tl.gather({source}, {index.text}, {e.axis})", POSTFIX, t.dtype)

    def _histogram(self, e: L.Histogram, path: str, env) -> _Code:
        xt = self.types[child(path, "x")]
        # i32 values: Triton's interpreter fails on an int64 histogram (NumPy's int64 counts);
        # a value that i32 changes is outside the bins, an error anyway
        x = self.operand(e.x, child(path, "x"), env, "i32", tensor=True)
        mask = "" if e.mask is None else f", mask={self.operand(e.mask, child(path, 'mask'), env, 'bool').text}"
        return _Code(f"tl.histogram({x.text}, {self.types[path].shape[0]}{mask})", POSTFIX, "i32", nonnegative=True)

    def _dot(self, e: L.Dot, path: str, env) -> _Code:
        a_dtype = self.types[child(path, "lhs")].dtype
        args = [self.expr(e.lhs, child(path, "lhs"), env).text, self.expr(e.rhs, child(path, "rhs"), env).text]
        if e.acc is not None:
            args.append(f"acc={self.operand(e.acc, child(path, 'acc'), env, e.dtype).text}")
        if a_dtype == "f32":
            args.append(f'input_precision="{e.precision}"')
        if e.dtype == "f16":
            args.append("out_dtype=tl.float16")
        if a_dtype in FP8_DTYPES:
            args.append("max_num_imprecise_acc=32")  # as the lowering: f32 sums per 32 of K
        return _Code(f"tl.dot({', '.join(args)})", POSTFIX, e.dtype)

    def _hint(self, e: L.Hint, path: str, env) -> _Code:
        t = self.types[path]
        x = self.operand(e.x, child(path, "x"), env, t.dtype, tensor=True)
        text = x.text
        for fn, values in (("multiple_of", e.multiple_of), ("max_contiguous", e.max_contiguous)):
            if values is not None:
                text = f"tl.{fn}({text}, {list(values)})"
        return _Code(text, POSTFIX, t.dtype, nonnegative=x.nonnegative)

    def _expanddims(self, e: L.ExpandDims, path: str, env) -> _Code:
        x = self.tensor_of_own_type(e.x, child(path, "x"), env)
        rank = len(self.types[child(path, "x")].shape)
        if rank == 0:
            return replace(x, text=f"tl.expand_dims({x.text}, 0)", prec=POSTFIX, may_be_number=False)
        slots = [":"] * rank
        slots.insert(e.axis, "None")
        return replace(x, text=f"{x.at(POSTFIX)}[{', '.join(slots)}]", prec=POSTFIX)

    def _reshape(self, e: L.Reshape, path: str, env) -> _Code:
        x = self.tensor_of_own_type(e.x, child(path, "x"), env)
        rank = len(self.types[child(path, "x")].shape)
        shape = self.dims(e.shape, env)
        if e.op == "reshape" and rank > 0:
            return replace(x, text=f"tl.reshape({x.text}, {shape})", prec=POSTFIX)
        missing = len(e.shape) - rank
        if rank > 0 and missing > 0:
            x = replace(x, text=f"{x.at(POSTFIX)}[{', '.join(['None'] * missing + [':'] * rank)}]", prec=POSTFIX)
        return replace(x, text=f"tl.broadcast_to({x.text}, {shape})", prec=POSTFIX, may_be_number=False)

    def _trans(self, e: L.Trans, path: str, env) -> _Code:
        x = self.expr(e.x, child(path, "x"), env)
        rank = len(self.types[child(path, "x")].shape)
        dims = list(reversed(range(rank))) if e.dims is None else list(e.dims)
        if dims == sorted(dims):
            return x
        if dims == [1, 0]:
            return replace(x, text=f"tl.trans({x.text})", prec=POSTFIX)
        return replace(x, text=f"tl.permute({x.text}, {tuple(dims)})", prec=POSTFIX)

    # -- statements ------------------------------------------------------------------------

    def line(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def block(self, stmts: list[L.Stmt], path: str, env: dict[str, _Code], depth: int) -> None:
        for i, s in enumerate(stmts):
            spath = child(path, i)
            if isinstance(s, L.Let):
                value = self.expr(s.value, child(spath, "value"), env)
                if value.value is not None:
                    # A literal stays a literal at each use: weak there, and rounded to the
                    # dtype it meets (Triton's interpreter makes an assigned constant a tensor).
                    env[s.name] = value
                    continue
                name = self.target(s.name)
                self.line(depth, f"{name} = {value.text}")
                env[s.name] = replace(value, text=name, prec=ATOM)
            elif isinstance(s, L.Store):
                self.store(s, spath, env, depth)
            elif isinstance(s, L.If):
                self.branch(s, spath, env, depth)
            elif isinstance(s, L.Atomic):
                self.atomic(s, spath, env, depth)
            else:
                self.loop(s, spath, env, depth)

    def store(self, s: L.Store, path: str, env, depth: int) -> None:
        pointee = self.types[child(path, "ptr")].dtype
        args = [self.expr(s.ptr, child(path, "ptr"), env).text,
                self.operand(s.value, child(path, "value"), env, pointee).text]
        if s.mask is not None:
            args.append(f"mask={self.expr(s.mask, child(path, 'mask'), env).text}")
        args += _modifiers(s)
        self.line(depth, f"tl.store({', '.join(args)})")

    def atomic(self, a: L.Atomic, path: str, env, depth: int) -> None:
        """``tl.atomic_*``; the old values bound to the statement's name, if any."""
        t = self.types[child(path, "ptr")]
        pointee = t.dtype
        args = [self.expr(a.ptr, child(path, "ptr"), env).text]
        if a.cmp is not None:  # tl.atomic_cas broadcasts nothing: cmp and val take the pointer's shape
            for name in ("cmp", "val"):
                x = self.operand(getattr(a, name), child(path, name), env, pointee, tensor=True)
                rank = len(self.types[child(path, name)].shape)
                if 0 < rank < len(t.shape):  # leading dims first: broadcast_to keeps the rank
                    slots = ["None"] * (len(t.shape) - rank) + [":"] * rank
                    x = replace(x, text=f"{x.at(POSTFIX)}[{', '.join(slots)}]", prec=POSTFIX)
                args.append(f"tl.broadcast_to({x.text}, {list(t.shape)})" if t.shape else x.text)
        else:
            args.append(self.operand(a.val, child(path, "val"), env, pointee, tensor=a.op == "atomic_xchg").text)
        if a.mask is not None:
            args.append(f"mask={self.expr(a.mask, child(path, 'mask'), env).text}")
        bits = {"f32": "tl.int32", "f64": "tl.int64"}.get(pointee) if a.op == "atomic_xchg" else None
        if bits is not None:
            # Triton's interpreter exchanges integers only: the float's bits, as the GPU does.
            args[0] = f"({args[0]}).to(tl.pointer_type({bits}), bitcast=True)"
            args[1] = f"({args[1]}).to({bits}, bitcast=True)"
        call = f"tl.{a.op}({', '.join(args)}, sem={a.sem!r}, scope={a.scope!r})"
        if bits is not None:
            call = f"{call}.to({TL_DTYPES[pointee]}, bitcast=True)"
        if a.name is None:
            self.line(depth, call)
            return
        name = self.names(a.name)
        self.line(depth, f"{name} = {call}")
        env[a.name] = _Code(name, ATOM, pointee)

    def loop(self, f: L.For, path: str, env: dict[str, _Code], depth: int) -> None:
        carried: list[tuple[str, _Code]] = []
        for i, c in enumerate(f.carry):
            t = self.types[child(path, "carry", i, "name")]
            init = self.expr(c.init, child(path, "carry", i, "init"), env)
            if not t.pointer:
                init = self.coerce(init, t.dtype)
            name = self.target(c.name)
            self.line(depth, f"{name} = {init.text}")
            carried.append((c.name, _Code(name, ATOM, t.dtype, pointer=t.pointer)))
        bounds = [self.expr(getattr(f, b), child(path, b), env).text for b in ("start", "stop", "step")]
        if bounds[2] == "1":
            bounds.pop()
            if bounds[0] == "0":
                bounds.pop(0)
        var = self.target(f.var)
        if f.num_stages is not None:
            self.line(depth, f"for {var} in tl.range({', '.join(bounds)}, num_stages={f.num_stages}):")
        else:
            self.line(depth, f"for {var} in range({', '.join(bounds)}):")
        inner = dict(env)
        inner.update(carried)
        # A Python int in Triton's interpreter, a tensor when compiled.
        start = self.expr(f.start, child(path, "start"), env)
        inner[f.var] = _Code(var, ATOM, self.types[child(path, "var")].dtype, may_be_number=True,
                             nonnegative=start.nonnegative)
        self.block(f.body, child(path, "body"), inner, depth + 1)
        updates = []
        for i, (c, (_, code)) in enumerate(zip(f.carry, carried)):
            nxt = self.expr(c.next, child(path, "carry", i, "next"), inner)
            if not code.pointer:
                nxt = self.coerce(nxt, code.dtype, tensor=nxt.dtype is None)
            updates.append((code.text, nxt.text))
        # Carries update together, as in the interpreter: where one's next reads another
        # carry, those carries are assigned in one tuple so that every next sees old values.
        carry_names = {c.name for c in f.carry}
        reads = {c.name: _referenced_names(c.next) & (carry_names - {c.name}) for c in f.carry}
        entangled = {c.name for c in f.carry if reads[c.name]} | set().union(*reads.values())
        for c, (name, value) in zip(f.carry, updates):
            if c.name not in entangled and name != value:
                self.line(depth + 1, f"{name} = {value}")
        together = [(name, value) for c, (name, value) in zip(f.carry, updates) if c.name in entangled]
        if together:
            self.line(depth + 1, f"{', '.join(n for n, _ in together)} = {', '.join(v for _, v in together)}")
        if not f.body and not any(name != value for name, value in updates):
            self.line(depth + 1, "pass")
        env.update(carried)

    def branch(self, s: L.If, path: str, env: dict[str, _Code], depth: int) -> None:
        """Python's ``if`` (Triton's scf.if on a scalar tensor; a static branch where the
        condition is a constant): each result assigned at the end of both branches, as a
        tensor cast to its one type (Triton requires the same type from both)."""
        cond = self.expr(s.cond, child(path, "cond"), env)
        types = [self.types[child(path, "results", i, "name")] for i in range(len(s.results))]
        names = [self.target(r.name) for r in s.results]
        self.line(depth, f"if {cond.text}:")
        for side, stmts in (("then", s.then), ("else", s.else_)):
            if side == "else":
                if not (stmts or s.results):
                    break
                self.line(depth, "else:")
            inner = dict(env)
            start = len(self.lines)
            self.block(stmts, child(path, side), inner, depth + 1)
            for i, (r, t, name) in enumerate(zip(s.results, types, names)):
                value = self.expr(r.then if side == "then" else r.else_, child(path, "results", i, side), inner)
                text = value.text
                if not t.pointer:
                    # Triton's own dtype of an expression may differ (it computes f16
                    # minimum with a Python float in f32, say): name it, as a store would.
                    text = f"{self.coerce(value, t.dtype, tensor=True).at(POSTFIX)}.to({TL_DTYPES[t.dtype]})"
                self.line(depth + 1, f"{name} = {text}")
            if len(self.lines) == start:
                self.line(depth + 1, "pass")
        for r, t, name in zip(s.results, types, names):
            env[r.name] = _Code(name, ATOM, t.dtype, pointer=t.pointer)


# Builtins the emitted launcher calls: a launcher may not be named after one of them.
LAUNCHER_BUILTINS = ("isinstance", "len", "list", "tuple", "max", "min")


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


def _param_code(binding: ParamBinding, name: str, host: _HostExpressions) -> _Code:
    if binding.tensor is not None:
        return _Code(name, ATOM, binding.type.dtype, pointer=True)
    dtype = binding.type.dtype
    return _Code(name, ATOM, dtype, may_be_number=True,
                 nonnegative=dtype in INT_DTYPES and host.nonnegative(binding.value))


def _wrapper_lines(checked: Checked, entry: str, kernel_fns: list[str], host: _HostExpressions,
                   names: Namer, kernel_names: list[Namer], converted_inputs: Collection[str] | None) -> list[str]:
    kernel = checked.kernel
    body: list[str] = []
    tensors = [i for i in kernel.inputs if i.shape is not None]
    converted: set[str] = set()
    for inp in kernel.inputs:
        if inp.role == "dtype" and inp.binds is not None:
            # torch's dtype=: the variant computes in that dtype, the inputs of it are cast first.
            name, wanted = names(inp.name), TORCH_DTYPES[inp.binds]
            body.append(f'assert {name} is None or {name} == {wanted}, f"{inp.name}: this variant takes None or '
                        f'{wanted}, got {{{name}}}"')
            converted.add(inp.binds)
    # Omitted optional tensors are zeros, and numbers are expanded, to shapes the other tensors'
    # sizes give, so those come first (a size no tensor gives is 1: a number is one element).
    tensors.sort(key=lambda i: (i.present is not None, i.number))
    given = [i for i in tensors if i.present is None and not i.number]
    numbers = [i for i in tensors if i.number]
    default_device = '"cuda" if torch.cuda.is_available() else "cpu"'
    device = (f"{names(given[0].name)}.device" if given else f"{names(numbers[0].name)}.device" if numbers
              else default_device)
    for inp in tensors:
        name = names(inp.name)
        cast = f".to({TORCH_DTYPES[inp.dtype]})" if _converts(inp, converted, converted_inputs) else ""
        if inp.present is None and not inp.number:
            body.append(f"{name} = {name}{cast}.contiguous()")
    for k, inp in enumerate(numbers):  # a Python number or a tensor, as a tensor on the call's device
        name = names(inp.name)
        where = device if given or k else f"{name}.device if isinstance({name}, torch.Tensor) else ({default_device})"
        body.append(f"{name} = torch.as_tensor({name}, dtype={TORCH_DTYPES[inp.dtype]}, device={where})")
    body += batch_lines(kernel, names)
    bound: set[str] = set()
    for inp in tensors:
        name = names(inp.name)
        dims = list(inp.shape)
        if inp.present is not None:
            cast = f".to({TORCH_DTYPES[inp.dtype]})" if _converts(inp, converted, converted_inputs) else ""
            # its sizes are all bound by now: the checker has them in a required tensor
            shape = _tuple([str(d) if isinstance(d, int) else names(d) for d in dims])
            body += [f"{names(inp.present)} = 0 if {name} is None else 1",
                     f"{name} = torch.zeros({shape}, dtype={TORCH_DTYPES[inp.dtype]}, device={device}) "
                     f"if {name} is None else {name}{cast}.contiguous()"]
        if inp.number:
            # A size no other tensor gives comes from a number input passed at full rank, else 1.
            for d in dims:
                if isinstance(d, str) and d not in bound:
                    choices = [f"{names(o.name)}.shape[{o.shape.index(d)}] if {names(o.name)}.dim() == {len(o.shape)}"
                               for o in numbers if d in o.shape]
                    body.append(f"{names(d)} = {' else '.join(choices)} else 1")
                    bound.add(d)
            shape = _tuple([str(d) if isinstance(d, int) else names(d) for d in dims]) if dims else "()"
            body.append(f"{name} = {name}.expand({shape}).contiguous()")
            continue
        fresh = [d for d in dims if isinstance(d, str) and d not in bound]
        if dims and len(fresh) == len(dims) and len(set(fresh)) == len(fresh):
            targets = ", ".join(names(d) for d in dims)
            body.append(f"{'(' + targets + ',)' if len(dims) == 1 else targets} = {name}.shape")
            bound.update(fresh)
            continue
        for j, d in enumerate(dims):
            if isinstance(d, str) and d not in bound:
                body.append(f"{names(d)} = {name}.shape[{j}]")
                bound.add(d)
        expected = _tuple([str(d) if isinstance(d, int) else names(d) for d in dims])
        body.append(f'assert {name}.shape == {expected}, f"{inp.name}: expected shape {expected}, '
                    f'got {{tuple({name}.shape)}}"')
    for m in kernel.meta:
        body.append(f"{names(m.name)} = {checked.meta[m.name]}")
    for inp in kernel.inputs:
        if inp.role == "choice":  # the kernel sees the index of the call's choice
            body.append(f"{names(inp.name)} = {inp.choices!r}.index({names(inp.name)})")
        elif inp.role == "ints" and inp.items:  # one meta per item; an int fills them all (torch's _pair)
            targets = ", ".join(names(item) for item in inp.items) + ("," if len(inp.items) == 1 else "")
            value = names(inp.name)
            body.append(f"{targets} = ({value},) * {len(inp.items)} if isinstance({value}, int) else tuple({value})")
    for out in kernel.outputs:
        shape = _tuple([host.emit(d)[0] for d in out.shape])
        if out.init is None:
            body.append(f"{names(out.name)} = torch.empty({shape}, dtype={TORCH_DTYPES[out.dtype]}, device={device})")
        else:  # the fill atomics accumulate onto
            fill = repr(literal_value(out.init)).replace("inf", "float('inf')").replace("nan", "float('nan')")
            body.append(f"{names(out.name)} = torch.full({shape}, {fill}, dtype={TORCH_DTYPES[out.dtype]}, "
                        f"device={device})")
    for scratch in kernel.scratch:
        shape = _tuple([host.emit(d)[0] for d in scratch.shape])
        dtype = next(o.dtype for o in launches_of(checked)[0].kernel.outputs if o.name == scratch.name)
        body.append(f"{names(scratch.name)} = torch.{'zeros' if scratch.zero else 'empty'}({shape}, "
                    f"dtype={TORCH_DTYPES[dtype]}, device={device})")
    for each, kernel_fn, launch_names in zip(launches_of(checked), kernel_fns, kernel_names):
        body.append(f"grid = {_tuple([host.emit(g)[0] for g in each.kernel.grid])}")
        args = [names(b.tensor) if b.tensor is not None else host.value(b.value, b.type.dtype) for b in each.params]
        args += [f"{launch_names(meta)}={names(meta)}" for meta in each.meta]
        args += [f"num_warps={each.kernel.num_warps}", f"num_stages={each.kernel.num_stages}"]
        body.append(f"{kernel_fn}[grid]({', '.join(args)})")
    body += unbatch_lines(kernel, names)
    for out in kernel.outputs:
        if out.raises is not None:  # the operator's precondition, judged by the kernel
            body += [f"if {names(out.name)}.any():", f"    raise {out.raises}({out.message!r})"]
    results = [names(o.name) for o in kernel.outputs if o.raises is None]
    body.append(f"return {', '.join(results)}")
    params = ", ".join(names(i.name) for i in kernel.inputs)
    return [f"def {entry}({params}):", *("    " + line for line in body)]


def _converts(inp: L.Input, converted: set[str], converted_inputs: Collection[str] | None) -> bool:
    return inp.name in converted_inputs if converted_inputs is not None else inp.dtype in converted


def _modifiers(access: Union[L.Load, L.Store]) -> list[str]:
    """A load's or store's ``cache`` as Triton's cache_modifier or eviction_policy keyword."""
    if access.cache is None:
        return []
    if access.cache.startswith("evict_"):
        return [f'eviction_policy="{access.cache}"']
    return [f'cache_modifier=".{access.cache}"']


def _tuple(items: list[str]) -> str:
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
