"""The raw-LLM baseline's answer: the code extracted from it and the static rules (the prompt that
states them: :mod:`kernelgen.baseline.prompt`).

In the baseline a model writes Triton Python directly. Before anything runs (in
:mod:`kernelgen.baseline.sandbox`), :func:`check_answer` takes the model's text through three steps:

1. **Extraction.** The first *complete* fenced code block tagged ``python`` (or ``py``, or not
   tagged); an unterminated fence is not complete. Without one, the whole answer is the code.
2. **Parsing** with :mod:`ast`: ``syntax_error`` with the line and column. An answer with no
   code block that does not even start a line like Python (``import``, ``def``, ``@``) is
   ``no_kernel``: it has no code, rather than broken code.
3. **Static rules**, every violation reported with its line:

   * ``no_kernel`` when there is no ``@triton.jit`` function, no module-level launcher with
     the task's name that takes the task's arguments, or when the launcher (or a function it
     calls) never launches a jitted kernel as ``kernel[grid](...)``.
   * ``forbidden_construct`` for an import outside :data:`ALLOWED_IMPORTS`; a builtin that
     escapes the sandbox's rules or reads the machine (``eval``, ``exec``, ``open``,
     ``__import__``, ``getattr``, ...), by its name or as an attribute (``builtins.exec``); a
     dunder attribute (``x.__class__``: the road to every escape); a module reached through an
     allowed one (``from typing import sys``, ``tl.core.builtins``, ``torch.os``: an imported
     name or an attribute path whose object is a module of another library, found by looking
     at the libraries themselves), a name of the interpreter's machinery (``sys``, ``modules``,
     ``ctypes``, ``gc``, ...) and the functions that evaluate strings (``typing.get_type_hints``); a ``triton`` call outside the language and the launch helpers (``triton.compile``,
     ``triton.runtime.build``); and **PyTorch doing the work**: outside the kernel, torch may
     allocate (:data:`ALLOWED_TORCH_CALLS`), reshape and describe tensors
     (:data:`ALLOWED_TENSOR_METHODS`, ``.shape``, ``.dtype``, ...) and move them to a device,
     but any other torch function (``torch.matmul``, ``F.softmax``), tensor arithmetic or
     comparison, indexing with a tensor, a dtype conversion or a reduction method
     (``x.sum()``) computes what the kernel should; a jitted kernel used other than launched as a
     statement (:mod:`kernelgen.baseline.kernel_uses`: a kernel object and a launch's result differ
     between a GPU and the interpreter that judges races).

   Code under ``if __name__ == "__main__":`` never runs in the harness (the answer is imported
   under another name, and ``__name__`` may appear nowhere else), so the import, triton and
   PyTorch rules do not apply there; the builtin and dunder rules do.

These rules keep PyTorch from doing the work and keep answers from reaching the machine;
they are not the sandbox's wall (:mod:`kernelgen.baseline.wall` is), and the sandbox's run-time
torch guard only backs them up.

Why these imports: ``torch`` (tensors, allocation), ``triton`` and ``triton.language`` (and
its ``extra.libdevice``), ``math`` (host-side constants such as ``1 / math.sqrt(d)``),
``typing`` and ``functools`` (annotations, caching of configs) and ``__future__``. NumPy is left
out on purpose: a kernel never needs it, and a launcher could use it to compute the result on
the host, a path the torch rules could not police. Which arguments are tensors comes from the
task's signature, so ``scale * 2`` on a float argument is fine and ``x * 2`` on a tensor is not.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
import types
from dataclasses import dataclass
from typing import Any, Iterator

from kernelgen.lang import nodes as L
from kernelgen.errors import Outcome
from kernelgen.baseline.kernel_uses import CODE as KERNEL_USE_CODE, RULE as KERNEL_USE_RULE, kernel_uses

ALLOWED_IMPORTS = ("__future__", "math", "typing", "functools", "torch", "torch.nn", "torch.nn.functional",
                   "triton", "triton.language")
# Module prefixes allowed below an allowed module (libdevice and the language's submodules).
ALLOWED_IMPORT_PREFIXES = ("triton.language.",)
# What `from triton.runtime import ...` may take: the driver, for the number of SMs.
ALLOWED_FROM_IMPORTS = {"triton.runtime": ("driver",)}

ALLOWED_TORCH_CALLS = frozenset({
    "torch.empty", "torch.empty_like", "torch.empty_strided", "torch.zeros", "torch.zeros_like",
    "torch.ones", "torch.ones_like", "torch.full", "torch.full_like", "torch.arange", "torch.tensor",
    "torch.device", "torch.Size", "torch.finfo", "torch.iinfo", "torch.is_tensor", "torch.get_default_dtype",
    "torch.cuda.is_available", "torch.cuda.current_device", "torch.cuda.device", "torch.cuda.device_count",
    "torch.cuda.get_device_properties", "torch.cuda.get_device_capability", "torch.cuda.current_stream",
    "torch.cuda.synchronize",
})
# Tensor methods a launcher may call: shapes, strides, views that keep the element order,
# contiguity, device moves, filling freshly allocated outputs and copying a result into the
# tensor an in-place operator changes (copy_: a move, as .to() is).
ALLOWED_TENSOR_METHODS = frozenset({
    "contiguous", "is_contiguous", "view", "view_as", "reshape", "reshape_as", "flatten", "unsqueeze",
    "squeeze", "stride", "size", "numel", "nelement", "dim", "ndimension", "data_ptr", "element_size",
    "get_device", "to", "cuda", "zero_", "fill_", "copy_", "new_empty", "new_zeros", "new_ones", "new_full",
})
_TENSOR_RETURNING_METHODS = frozenset({
    "contiguous", "view", "view_as", "reshape", "reshape_as", "flatten", "unsqueeze", "squeeze", "to", "cuda",
    "zero_", "fill_", "copy_", "new_empty", "new_zeros", "new_ones", "new_full",
})
# Tensor attributes that are views in another element order: computing them is the work.
_REORDERING_ATTRIBUTES = frozenset({"T", "mT", "H", "mH"})
# Calls into triton outside triton.language that a launcher needs.
ALLOWED_TRITON_CALLS = frozenset({"triton.jit", "triton.autotune", "triton.heuristics", "triton.Config",
                                  "triton.cdiv", "triton.next_power_of_2"})
ALLOWED_TRITON_PREFIXES = ("triton.language.", "triton.runtime.driver.")
FORBIDDEN_BUILTINS = frozenset({"eval", "exec", "compile", "open", "__import__", "globals", "locals", "vars",
                                "getattr", "hasattr", "setattr", "delattr", "breakpoint", "input", "exit", "quit",
                                "help", "memoryview", "__builtins__", "__loader__", "__spec__", "type"})
# Of those, the ones refused as attributes too (builtins.exec): Triton's own values have a .type.
ATTRIBUTE_BUILTINS = frozenset({"eval", "exec", "compile", "open", "__import__", "globals", "locals", "vars", "getattr",
                                "setattr", "delattr", "breakpoint"})
# Names of the interpreter's machinery: no answer needs them, every escape does.
ESCAPE_NAMES = frozenset({"sys", "modules", "builtins", "os", "posix", "subprocess", "_posixsubprocess", "ctypes",
                          "gc", "inspect", "importlib", "threading", "_thread", "multiprocessing", "signal", "socket",
                          "resource", "mmap", "pickle", "marshal", "shutil", "pathlib", "io", "types", "code",
                          "codeop", "runpy", "pty", "fcntl"})
# Functions of the allowed standard modules that evaluate strings as code (annotations).
EVALUATING_CALLS = frozenset({"typing.get_type_hints", "typing.ForwardRef", "typing.evaluate_forward_ref",
                              "functools.singledispatch", "functools.singledispatchmethod"})
# Members of torch a launcher may hold as values (annotations, isinstance, dtypes): classes and
# descriptions, never functions that compute.
ALLOWED_TORCH_VALUES = frozenset({"torch.Tensor", "torch.dtype", "torch.device", "torch.Size", "torch.Generator",
                                  "torch.inf", "torch.nan", "torch.pi", "torch.e", "torch.strided",
                                  "torch.contiguous_format", "torch.preserve_format"})
# Builtins that reduce or transform a tensor when given one.
_COMPUTING_BUILTINS = frozenset({"sum", "max", "min", "abs", "pow", "round", "sorted", "any", "all", "divmod",
                                 "map", "filter"})
_TORCH_DTYPE_NAMES = frozenset({"float16", "float32", "float64", "bfloat16", "half", "float", "double", "int8",
                                "int16", "int32", "int64", "int", "long", "short", "uint8", "bool", "complex64",
                                "float8_e4m3fn", "float8_e5m2"})

RULES: dict[str, str] = {
    "syntax_error": "the code does not parse as Python",
    "no_code": "the answer holds no code: no complete ```python block, and it is not Python",
    "no_jit_kernel": "no function is decorated with @triton.jit",
    "no_entry_point": "no module-level function has the task's name",
    "entry_signature": "the launcher does not take the task's arguments in order",
    "no_launch": "the launcher never launches a @triton.jit kernel as kernel[grid](...)",
    "forbidden_import": "an import outside the allowed modules",
    "forbidden_builtin": "a builtin that escapes the sandbox or reads the machine (eval, exec, open, getattr, ...)",
    "dunder_access": "an attribute or name with double underscores (x.__class__, __builtins__)",
    "forbidden_call": "a triton call outside triton.language and the launch helpers",
    "torch_compute": "PyTorch computes outside the kernel (torch.matmul, F.*, tensor arithmetic, x.sum(), ...)",
    "module_as_value": "a module, or a torch or triton function the rules do not allow, used as a value "
                       "([torch.matmul], f(x, op=torch.sum), m = torch): the rules could not follow its calls",
    "module_assignment": "an assignment to an attribute of a module or of what it holds (torch.save = ..., "
                         "torch.Tensor.exp = ...): replacing library functions",
    KERNEL_USE_CODE: KERNEL_USE_RULE,
    "module_path": "a module reached through an allowed import (from typing import sys, tl.core.builtins, "
                   "torch.os), a name of the interpreter's machinery (sys, modules, ctypes, gc) or a function that "
                   "evaluates strings (typing.get_type_hints)",
}
_OUTCOME_OF_RULE = {
    "syntax_error": Outcome.SYNTAX_ERROR,
    "no_code": Outcome.NO_KERNEL, "no_jit_kernel": Outcome.NO_KERNEL, "no_entry_point": Outcome.NO_KERNEL,
    "entry_signature": Outcome.NO_KERNEL, "no_launch": Outcome.NO_KERNEL,
}
_PYTHON_TYPES = {"f32": "float", "f16": "float", "bf16": "float", "f64": "float", "i32": "int", "i64": "int",
                 "bool": "bool", "i8": "int", "u8": "int", "i16": "int"}


_ROLE_TYPES = {"dtype": "torch.dtype | None", "choice": "int", "dim": "int", "keepdim": "bool", "fixed": "object"}


def _python_type(spec: L.Input) -> str:
    """An argument's annotation: a tensor (``| None`` where optional), a number, or a host-only
    argument's type (``dtype=``: a torch dtype or None)."""
    if not spec.is_plain:
        return _ROLE_TYPES.get(spec.role, "object")
    if spec.shape is not None:
        return "torch.Tensor | None" if spec.optional else "torch.Tensor"
    return _PYTHON_TYPES.get(spec.dtype, "float")


@dataclass(frozen=True)
class CodeDiagnostic:
    """One finding about an answer's code: where (line and column, 1-based; 0 for the whole
    answer), what (a stable code of :data:`RULES`) and why."""

    line: int
    col: int
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.line}:{self.col}: {self.code}: {self.message}"

    def to_dict(self) -> dict[str, object]:
        return {"line": self.line, "col": self.col, "code": self.code, "message": self.message}


@dataclass(frozen=True)
class AnswerCheck:
    """The verdict of the static stage: ``outcome`` is ok when the code may run."""

    outcome: Outcome
    code: str
    diagnostics: tuple[CodeDiagnostic, ...]
    fenced: bool

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.OK


@dataclass(frozen=True)
class EntryPoint:
    """The launcher an answer must define: its name, its arguments in order (tensors where
    ``shape`` is given, else scalars) and what it returns."""

    name: str
    inputs: tuple[L.Input, ...]
    outputs: tuple[L.Input, ...]

    @classmethod
    def for_task(cls, task) -> EntryPoint:
        """The launcher of a :class:`kernelgen.task.spec.Task`: named after the task's id."""
        return cls(task.id, tuple(task.signature.inputs), tuple(task.signature.outputs))

    @property
    def tensor_positions(self) -> frozenset[int]:
        return frozenset(i for i, spec in enumerate(self.inputs) if spec.shape is not None)

    def python_signature(self) -> str:
        """``def name(x: torch.Tensor, alpha: float) -> torch.Tensor``."""
        args = ", ".join(f"{i.name}: {_python_type(i)}" for i in self.inputs)
        returns = ("torch.Tensor" if len(self.outputs) == 1
                   else f"tuple[{', '.join('torch.Tensor' for _ in self.outputs)}]")
        return f"def {self.name}({args}) -> {returns}"


# ---------------------------------------------------------------------------------------------
# Extraction

_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})[ \t]*([^`\n]*)$")
_PYTHON_TAGS = ("", "python", "py", "python3")
_LOOKS_LIKE_CODE = re.compile(r"^[ \t]*(import\s|from\s+\S+\s+import\s|def\s|class\s|@)", re.MULTILINE)


def extract_code(answer: str) -> tuple[str, bool]:
    """The code of an answer and whether it came from a fenced block: the first complete
    block tagged python, py or nothing, else the whole answer."""
    lines = answer.splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE_OPEN.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence, info = len(opening.group(1)), opening.group(2), opening.group(3).strip()
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        end = next((j for j in range(i + 1, len(lines)) if closing.match(lines[j])), None)
        if end is None:
            break  # an unterminated fence: nothing after it is a complete block
        tag = info.split()[0].lower() if info else ""
        if tag in _PYTHON_TAGS:
            body = [line[min(indent, len(line) - len(line.lstrip(" "))):] for line in lines[i + 1:end]]
            return "\n".join(body) + "\n", True
        i = end + 1
    return answer, False


# ---------------------------------------------------------------------------------------------
# The static rules


def check_answer(answer: str, entry: EntryPoint) -> AnswerCheck:
    """Extract, parse and check a model's answer against the rules (see the module docstring)."""
    code, fenced = extract_code(answer)
    if not code.strip():
        return _verdict(code, fenced, [CodeDiagnostic(0, 0, "no_code", "the answer is empty")])
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        if not fenced and not _LOOKS_LIKE_CODE.search(code):
            return _verdict(code, fenced, [CodeDiagnostic(0, 0, "no_code",
                                                          "the answer has no ```python block and is not Python")])
        return _verdict(code, fenced, [CodeDiagnostic(exc.lineno or 0, exc.offset or 0, "syntax_error",
                                                      exc.msg or "invalid syntax")])
    except ValueError as exc:  # source with NUL bytes
        return _verdict(code, fenced, [CodeDiagnostic(0, 0, "syntax_error", str(exc))])
    return _verdict(code, fenced, _Rules(tree, entry).run())


def _verdict(code: str, fenced: bool, diagnostics: list[CodeDiagnostic]) -> AnswerCheck:
    diagnostics = sorted(set(diagnostics), key=lambda d: (d.line, d.col, d.code))
    outcomes = {_OUTCOME_OF_RULE.get(d.code, Outcome.FORBIDDEN_CONSTRUCT) for d in diagnostics}
    for outcome in (Outcome.SYNTAX_ERROR, Outcome.FORBIDDEN_CONSTRUCT, Outcome.NO_KERNEL):
        if outcome in outcomes:
            return AnswerCheck(outcome, code, tuple(diagnostics), fenced)
    return AnswerCheck(Outcome.OK, code, (), fenced)


_ROOTS = ("torch", "triton", "typing", "functools", "math")


@functools.lru_cache(maxsize=4096)
def _foreign_module(name: str) -> str | None:
    """Why the dotted ``name`` reaches a module of another library than the one it starts at
    (``typing.sys``, ``torch.os``, ``triton.language.core.inspect``), or None. The objects are
    looked up statically (a module's own ``__dict__``, ``inspect.getattr_static``), importing
    only the allowed libraries; a name that cannot be looked up is left to the other rules."""
    parts = name.split(".")
    if parts[0] not in _ROOTS:
        return None
    try:
        value: Any = importlib.import_module(parts[0])
    except ImportError:
        return None
    for i, part in enumerate(parts[1:], 2):
        try:
            value = vars(value)[part] if isinstance(value, types.ModuleType) and part in vars(value) \
                else inspect.getattr_static(value, part)
        except (AttributeError, TypeError):
            return None
        if isinstance(value, types.ModuleType) and value.__name__.split(".")[0] != parts[0]:
            return f"{'.'.join(parts[:i])} is the module {value.__name__}, not part of {parts[0]}"
    return None


def _dotted(node: ast.AST) -> list[str] | None:
    """``a.b.c`` as ['a', 'b', 'c'], or None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id] + parts[::-1]
    return None


def _is_main_guard(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return (isinstance(node, ast.If) and isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__" and len(test.comparators) == 1 and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == "__main__")


class _Rules:
    def __init__(self, tree: ast.Module, entry: EntryPoint) -> None:
        self.tree = tree
        self.entry = entry
        self.found: list[CodeDiagnostic] = []
        # Local names of modules and module members: 'tl' -> 'triton.language'.
        self.aliases: dict[str, str] = {}
        self.functions: dict[str, ast.FunctionDef] = {
            n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.jitted: set[str] = set()
        # The names holding tensors in each non-jitted function, and which functions return one.
        self.tensors: dict[str, set[str]] = {}
        self.returns_tensor: set[str] = set()
        # Code under `if __name__ == "__main__":` never runs in the harness.
        self.main_guard_nodes: set[int] = set()
        self.guard_tests: set[int] = set()

    def report(self, node: ast.AST | None, code: str, message: str) -> None:
        line, col = (getattr(node, "lineno", 0), getattr(node, "col_offset", -1) + 1) if node else (0, 0)
        self.found.append(CodeDiagnostic(line, col, code, message))

    def run(self) -> list[CodeDiagnostic]:
        for node in self.tree.body:
            if _is_main_guard(node):
                self.guard_tests.add(id(node.test.left))
                for statement in node.body:  # not its else: that branch is what runs on import
                    self.main_guard_nodes.update(id(n) for n in ast.walk(statement))
        self.collect_imports()
        self.jitted = {name for name, f in self.functions.items() if any(self.is_jit(d) for d in f.decorator_list)}
        self.check_names_and_calls()
        self.infer_tensors()
        self.check_torch_compute()
        self.check_kernel_and_launch()
        for node, message in kernel_uses(self.tree, self.is_jit, self.main_guard_nodes):
            self.report(node, KERNEL_USE_CODE, message)
        return self.found

    # -- imports and names -----------------------------------------------------------------

    def collect_imports(self) -> None:
        for node in ast.walk(self.tree):
            guarded = id(node) in self.main_guard_nodes
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if not self.import_allowed(alias.name) and not guarded:
                        self.report(node, "forbidden_import", f"import {alias.name}: allowed imports are "
                                    f"{', '.join(ALLOWED_IMPORTS)} (and triton.language.*)")
                    local = alias.asname or alias.name.split(".")[0]
                    self.aliases[local] = alias.name if alias.asname else alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level:
                    if not guarded:
                        self.report(node, "forbidden_import", "relative imports are not allowed")
                    continue
                for alias in node.names:
                    full = f"{module}.{alias.name}"
                    allowed = (self.import_allowed(module) and alias.name != "*") or \
                        alias.name in ALLOWED_FROM_IMPORTS.get(module, ()) or self.import_allowed(full)
                    if not allowed and not guarded:
                        self.report(node, "forbidden_import", f"from {module} import {alias.name}: allowed imports "
                                    f"are {', '.join(ALLOWED_IMPORTS)} (and triton.language.*)")
                    self.aliases[alias.asname or alias.name] = full

    @staticmethod
    def import_allowed(module: str) -> bool:
        return module in ALLOWED_IMPORTS or module.startswith(ALLOWED_IMPORT_PREFIXES)

    def resolve(self, node: ast.AST) -> str | None:
        """The full dotted name an expression refers to through the imports, e.g. ``tl.load``
        -> ``triton.language.load``; None when it does not start at an imported name."""
        parts = _dotted(node)
        if parts is None or parts[0] not in self.aliases:
            return None
        return ".".join([self.aliases[parts[0]]] + parts[1:])

    def is_jit(self, decorator: ast.AST) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return self.resolve(target) == "triton.jit"

    def check_names_and_calls(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and node.id in FORBIDDEN_BUILTINS:
                self.report(node, "forbidden_builtin", f"{node.id} is not allowed in an answer")
            elif isinstance(node, ast.Attribute) and node.attr in ATTRIBUTE_BUILTINS:
                self.report(node, "forbidden_builtin", f"the attribute {node.attr} is not allowed in an answer "
                            "(the builtin reached through a module)")
            elif isinstance(node, (ast.Name, ast.Attribute)) and \
                    (node.id if isinstance(node, ast.Name) else node.attr) in ESCAPE_NAMES:
                name = node.id if isinstance(node, ast.Name) else node.attr
                self.report(node, "module_path", f"{name} is the interpreter's machinery, not allowed in an answer")
            elif isinstance(node, ast.Name) and node.id.startswith("__") and node.id.endswith("__") \
                    and id(node) not in self.guard_tests:
                self.report(node, "dunder_access", f"{node.id} is not allowed in an answer")
            elif isinstance(node, ast.Attribute) and node.attr.startswith("__") and node.attr.endswith("__"):
                self.report(node, "dunder_access", f"the attribute {node.attr} is not allowed in an answer")
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                # A module member bound to a local name: `mm = torch.matmul`.
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                resolved = self.resolve(node.value)
                if isinstance(target, ast.Name) and resolved is not None:
                    self.aliases.setdefault(target.id, resolved)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call) and id(node) not in self.main_guard_nodes:
                name = self.resolve(node.func)
                if name is not None and name.startswith("triton") and not self.triton_call_allowed(name):
                    self.report(node, "forbidden_call", f"{name} is not part of writing and launching a kernel")
        self.check_module_paths()
        self.check_values_and_assignments()

    def check_module_paths(self) -> None:
        """Every imported name and attribute path, looked up in the library it names: a module
        of another library on the way (``typing.sys``, ``triton.language.core.builtins``) is
        refused, as is a standard function that evaluates strings."""
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                module = getattr(node, "module", None) or ""
                names = [alias.name if isinstance(node, ast.Import) else f"{module}.{alias.name}"
                         for alias in node.names if alias.name != "*" and not getattr(node, "level", 0)]
            elif isinstance(node, (ast.Name, ast.Attribute)):
                names = [self.resolve(node)] if self.resolve(node) is not None else []
            else:
                continue
            for name in names:
                why = "evaluates strings as code" if name in EVALUATING_CALLS or any(
                    name.startswith(f"{m}._") for m in ("typing", "functools", "math")) else _foreign_module(name)
                if why:
                    self.report(node, "module_path", f"{name}: {why}")

    def check_values_and_assignments(self) -> None:
        """Modules and library functions are called or read where they are named, never held as
        values (the calls of a value are out of the rules' sight), and nothing of theirs is
        replaced."""
        called = {id(n.func) for n in ast.walk(self.tree) if isinstance(n, ast.Call)}
        inner = {id(n.value) for n in ast.walk(self.tree) if isinstance(n, ast.Attribute)}
        for node in ast.walk(self.tree):
            if id(node) in self.main_guard_nodes:
                continue
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                for target in targets:
                    for part in ast.walk(target):
                        if isinstance(part, ast.Attribute) and self.resolve(part) is not None:
                            self.report(part, "module_assignment", f"assigning {self.resolve(part)} replaces a "
                                        "library's member; an answer only calls them")
            if not isinstance(node, (ast.Name, ast.Attribute)) or id(node) in called or id(node) in inner \
                    or not isinstance(getattr(node, "ctx", None), ast.Load):
                continue
            name = self.resolve(node)
            if name is None or not self.value_allowed(name):
                if name is not None:
                    self.report(node, "module_as_value", f"{name} used as a value: call library functions "
                                "where you name them")

    def value_allowed(self, name: str) -> bool:
        """Whether a module member may be held as a value: a number or dtype of a module (math.pi,
        torch.float16, tl.float32, tl.constexpr), a class of :data:`ALLOWED_TORCH_VALUES`, an
        allowed call (``alloc = torch.empty``), triton's allowed calls and its language's members."""
        module, _, member = name.rpartition(".")
        if not module:
            return False  # a module itself
        if module == "math" or module == "typing" or module == "functools":
            return True
        if name.startswith("torch"):
            # torch.cuda's members only where allowed as calls: torch.cuda.jiterator compiles and
            # launches CUDA C++ from a string, inside torch, where the run-time guard does not see it
            # (round 19, held as a default argument's value)
            return member in _TORCH_DTYPE_NAMES or name in ALLOWED_TORCH_VALUES or name in ALLOWED_TORCH_CALLS
        if name.startswith("triton"):
            return self.triton_call_allowed(name) or name in ("triton.Config",)
        return True

    @staticmethod
    def triton_call_allowed(name: str) -> bool:
        return name in ALLOWED_TRITON_CALLS or name.startswith(ALLOWED_TRITON_PREFIXES)

    # -- tensors in the launcher -----------------------------------------------------------

    def host_functions(self) -> Iterator[ast.FunctionDef]:
        return (f for name, f in self.functions.items() if name not in self.jitted)

    def infer_tensors(self) -> None:
        """Which names hold torch tensors, in every function that is not a kernel: the
        launcher's tensor arguments, what torch allocates, views of tensors, and the arguments
        and results of local functions called with tensors (to a fixed point)."""
        entry = self.functions.get(self.entry.name)
        seeds: dict[str, set[str]] = {name: set() for name in self.functions if name not in self.jitted}
        if entry is not None and self.entry.name in seeds:
            params = [a.arg for a in entry.args.posonlyargs + entry.args.args]
            seeds[self.entry.name] = {params[i] for i in self.entry.tensor_positions if i < len(params)}
        self.tensors = {name: set(s) for name, s in seeds.items()}
        changed = True
        while changed:
            changed = False
            for function in self.host_functions():
                names = self.tensors[function.name]
                before = (len(names), len(self.returns_tensor))
                for node in ast.walk(function):
                    self.propagate(node, function.name)
                for node in ast.walk(function):
                    if isinstance(node, ast.Return) and node.value is not None and self.is_tensor(node.value, names):
                        self.returns_tensor.add(function.name)
                if (len(names), len(self.returns_tensor)) != before:
                    changed = True
            for function in self.host_functions():
                for node in ast.walk(function):
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.tensors:
                        callee = self.functions[node.func.id]
                        params = [a.arg for a in callee.args.posonlyargs + callee.args.args]
                        for param, arg in zip(params, node.args):
                            if self.is_tensor(arg, self.tensors[function.name]) and param not in self.tensors[callee.name]:
                                self.tensors[callee.name].add(param)
                                changed = True

    def propagate(self, node: ast.AST, function: str) -> None:
        names = self.tensors[function]
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self.bind(target, node.value, names)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            self.bind(node.target, node.value, names)
        elif isinstance(node, (ast.For, ast.comprehension)) and self.is_tensor(node.iter, names):
            for target in ast.walk(node.target):
                if isinstance(target, ast.Name):
                    names.add(target.id)
        elif isinstance(node, ast.NamedExpr) and self.is_tensor(node.value, names):
            names.add(node.target.id)

    def bind(self, target: ast.AST, value: ast.AST, names: set[str]) -> None:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                self.bind(t, v, names)
        elif isinstance(target, ast.Name) and self.is_tensor(value, names):
            names.add(target.id)

    def is_tensor(self, node: ast.AST, names: set[str]) -> bool:
        if isinstance(node, ast.Name):
            return node.id in names
        if isinstance(node, ast.Call):
            func = node.func
            resolved = self.resolve(func)
            if resolved is not None and resolved.startswith("torch."):
                return resolved not in ("torch.device", "torch.Size", "torch.finfo", "torch.iinfo", "torch.is_tensor",
                                        "torch.get_default_dtype") and not resolved.startswith("torch.cuda.")
            if isinstance(func, ast.Attribute) and self.is_tensor(func.value, names):
                return func.attr in _TENSOR_RETURNING_METHODS or func.attr not in ALLOWED_TENSOR_METHODS
            return isinstance(func, ast.Name) and func.id in self.returns_tensor
        if isinstance(node, ast.Subscript):
            return self.is_tensor(node.value, names)
        if isinstance(node, ast.Attribute):
            return node.attr in _REORDERING_ATTRIBUTES | {"data"} and self.is_tensor(node.value, names)
        if isinstance(node, ast.BinOp):
            return self.is_tensor(node.left, names) or self.is_tensor(node.right, names)
        if isinstance(node, ast.UnaryOp):
            return self.is_tensor(node.operand, names)
        if isinstance(node, ast.IfExp):
            return self.is_tensor(node.body, names) or self.is_tensor(node.orelse, names)
        return False

    def check_torch_compute(self) -> None:
        jitted_nodes = {id(n) for name in self.jitted for n in ast.walk(self.functions[name])}
        host_of: dict[int, str] = {}
        for function in self.host_functions():
            for node in ast.walk(function):
                host_of[id(node)] = function.name
        for node in ast.walk(self.tree):
            if id(node) in self.main_guard_nodes:
                continue
            names = self.tensors.get(host_of.get(id(node), ""), set())
            if isinstance(node, ast.Call):
                self.check_call(node, names, in_kernel=id(node) in jitted_nodes)
            if id(node) in jitted_nodes:
                continue
            if isinstance(node, ast.BinOp) and (isinstance(node.op, ast.MatMult) or self.is_tensor(node.left, names)
                                                or self.is_tensor(node.right, names)):
                self.report(node, "torch_compute", "tensor arithmetic in the launcher: the kernel must compute")
            elif isinstance(node, ast.AugAssign) and (self.is_tensor(node.target, names)
                                                      or self.is_tensor(node.value, names)):
                self.report(node, "torch_compute", "tensor arithmetic in the launcher: the kernel must compute")
            elif isinstance(node, ast.UnaryOp) and self.is_tensor(node.operand, names):
                self.report(node, "torch_compute", "tensor arithmetic in the launcher: the kernel must compute")
            elif isinstance(node, ast.Compare) and any(
                    not isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops) and any(
                    self.is_tensor(x, names) for x in [node.left, *node.comparators]):
                self.report(node, "torch_compute", "a tensor comparison in the launcher: the kernel must compute")
            elif isinstance(node, ast.Subscript) and self.is_tensor(node.value, names) and \
                    any(self.is_tensor(x, names) for x in ast.walk(node.slice) if isinstance(x, ast.expr)):
                self.report(node, "torch_compute", "indexing a tensor with a tensor in the launcher gathers data")
            elif isinstance(node, ast.Attribute) and node.attr in _REORDERING_ATTRIBUTES and \
                    self.is_tensor(node.value, names):
                self.report(node, "torch_compute", f".{node.attr} reorders a tensor in the launcher")
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Subscript) and self.is_tensor(target.value, names) \
                            and not isinstance(node.value, ast.Constant):
                        self.report(node, "torch_compute", "writing into a tensor in the launcher: the kernel must")

    def check_call(self, node: ast.Call, names: set[str], in_kernel: bool) -> None:
        resolved = self.resolve(node.func)
        if resolved is not None and (resolved == "torch" or resolved.startswith("torch.")):
            if resolved not in ALLOWED_TORCH_CALLS:
                where = "in a kernel" if in_kernel else "in the launcher"
                self.report(node, "torch_compute", f"{resolved} computes with PyTorch {where}; the kernel "
                            "must do the work (the launcher only allocates, reshapes and launches)")
            return
        if in_kernel:
            return
        func = node.func
        if isinstance(func, ast.Attribute) and self.is_tensor(func.value, names):
            if func.attr not in ALLOWED_TENSOR_METHODS:
                self.report(node, "torch_compute", f".{func.attr}() computes with PyTorch in the launcher")
            elif func.attr == "to" and any(self.is_dtype(a) for a in [*node.args, *(k.value for k in node.keywords)]):
                self.report(node, "torch_compute", ".to(dtype) converts in PyTorch; the kernel must write the "
                            "output's dtype")
        elif isinstance(func, ast.Name) and func.id in _COMPUTING_BUILTINS and \
                any(self.is_tensor(a, names) for a in node.args):
            self.report(node, "torch_compute", f"{func.id}() over a tensor computes in the launcher")

    def is_dtype(self, node: ast.AST) -> bool:
        resolved = self.resolve(node)
        if resolved is not None:
            return resolved.startswith("torch.") and resolved.split(".")[-1] in _TORCH_DTYPE_NAMES
        return isinstance(node, ast.Attribute) and node.attr == "dtype"

    # -- the kernel and its launch ---------------------------------------------------------

    def check_kernel_and_launch(self) -> None:
        if not self.jitted:
            self.report(None, "no_jit_kernel", "no function is decorated with @triton.jit")
        entry = self.functions.get(self.entry.name)
        if entry is None:
            self.report(None, "no_entry_point",
                        f"no module-level function {self.entry.name!r}; write {self.entry.python_signature()}")
            return
        if entry.name in self.jitted:
            self.report(entry, "no_entry_point", f"{entry.name} must be the Python launcher, not the @triton.jit kernel")
            return
        args = entry.args
        positional = args.posonlyargs + args.args
        required = len(positional) - len(args.defaults)
        wanted = len(self.entry.inputs)
        if required > wanted or (len(positional) < wanted and args.vararg is None) or \
                any(d is None for d in args.kw_defaults):
            self.report(entry, "entry_signature", f"{entry.name} takes {len(positional)} positional arguments "
                        f"({required} required); the task calls {self.entry.python_signature()}")
        if self.jitted and not self.launches(entry.name, set()):
            self.report(entry, "no_launch", f"{entry.name} never launches a @triton.jit kernel as kernel[grid](...)")

    def launches(self, function: str, seen: set[str]) -> bool:
        """Whether ``function``, or a local function it calls, launches a jitted kernel."""
        seen.add(function)
        for node in ast.walk(self.functions[function]):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Subscript) and isinstance(node.func.value, ast.Name) \
                    and node.func.value.id in self.jitted:
                return True
            if isinstance(node.func, ast.Name) and node.func.id in self.functions \
                    and node.func.id not in self.jitted and node.func.id not in seen \
                    and self.launches(node.func.id, seen):
                return True
        return False
