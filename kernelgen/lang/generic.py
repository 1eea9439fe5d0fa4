"""Generic dtypes: a kernel whose inputs, outputs, ``full`` and ``cast`` name a dtype variable
(``"dtypes": [{"name": "T", "of": ["f16", "bf16", "f32", "f64"]}]``, ``"dtype": "T"``).

A generic kernel is a family of concrete kernels, one per binding of its variables: every
later stage (checker, interpreter, lowering, emitter, compiler) sees only a concrete
*variant*, the kernel with each variable replaced by its dtype (:func:`instantiate`), so each
of them supports generic kernels without knowing about them, and the compile cache, which
keys on content, holds one compiled kernel per variant.

* :func:`kernelgen.check.checker.check` checks every variant (a diagnostic says which binding it comes from)
  and returns the checked *default* variant, each variable's first dtype; with a binding, it
  checks and returns that variant alone (the wrapper, per call).
* :func:`kernelgen.host.wrapper.bind_dtypes` binds the variables from a call: the dtype of a variable is the one
  PyTorch's type promotion gives the values passed for its inputs (tensors by dtype, a 0-d
  tensor or a Python number only where it is of a higher category: ``f16 + f32`` is f32,
  ``f16 tensor + 2.5`` is f16, ``i32 tensor + 2.5`` is f32), folded left to right as the
  reference's binary operations promote. A role ``dtype`` input (torch's ``dtype=``) that
  ``binds`` a variable sets it instead when the call passes a dtype; the wrapper then converts
  the variable's inputs to it, as torch casts the input before the operation.

A *derived* variable (:class:`~kernelgen.lang.nodes.DerivedDtype`) is no key of a binding: a call
binds the declared ones (``of``), and :func:`resolve` adds each derived one from its base by
PyTorch's rules (:func:`derived_dtype`), so every stage still sees concrete variants only.
"""

from __future__ import annotations

import itertools
import re
from typing import Any, Iterator, Mapping

from kernelgen.lang import nodes as L
from kernelgen.errors import Diagnostic
from kernelgen.lang.limits import show_name

MAX_VARIANTS = 64
"""A generic kernel has at most this many variants (the product of its variables' sets)."""

Binding = dict[str, str]

DTYPE_FIELDS = ("dtype", "binds")
"""The fields that may name a dtype variable (``binds``: a role ``dtype`` input's)."""


def _dtype_refs(node: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(JSON path, name) of every dtype field that names a variable, in a dumped kernel."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "dtypes":
                continue
            if key in DTYPE_FIELDS and isinstance(value, str) and re.match(L.DTYPE_VARIABLE, value):
                yield f"{path}/{key}", value
            else:
                yield from _dtype_refs(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _dtype_refs(value, f"{path}/{index}")


FLOAT_DTYPES = tuple(d for d in L.DTYPES if d.startswith(("f", "bf")))
"""The float dtypes; every other dtype is an integer or bool, so new integer dtypes follow the
integer rules below without being listed."""

DEFAULT_FLOAT = "f32"
"""torch.get_default_dtype(): the result of a float op on integers (``torch.log(int32)``)."""


def derived_dtype(rule: str, dtype: str) -> str:
    """PyTorch's dtype derived from ``dtype`` by ``rule``:

    * ``acc_of``: what torch computes and accumulates in (``at::opmath_type`` for floats: f16,
      bf16 and fp8 compute in f32, f32 and f64 in themselves; ``torch.sum`` of integers and bool
      accumulates and returns int64: ``torch.sum(torch.ones(3, dtype=torch.int32)).dtype`` is int64);
    * ``float_of``: the result dtype of a float op by torch's type promotion (``torch.log``,
      ``torch.reciprocal``, ``torch.sqrt``): a float dtype is kept, an integer or bool gives the
      default float dtype f32 (``torch.reciprocal(torch.ones(3, dtype=torch.int64)).dtype`` is f32).
    """
    if rule == "acc_of":
        return dtype if dtype in ("f32", "f64") else (DEFAULT_FLOAT if dtype in FLOAT_DTYPES else "i64")
    if rule == "float_of":
        return dtype if dtype in FLOAT_DTYPES else DEFAULT_FLOAT
    raise ValueError(f"no derivation rule {rule!r}")


def _derivation(variable: L.DerivedDtype) -> tuple[str, str] | None:
    """(rule, base) of a well-formed derived variable (exactly one rule), else None."""
    rules = [(rule, base) for rule in ("acc_of", "float_of") if (base := getattr(variable, rule)) is not None]
    return rules[0] if len(rules) == 1 else None


def bound_variables(kernel: L.Kernel) -> list[L.DtypeVariable]:
    """The variables a call binds (``of``), in declaration order."""
    return [v for v in kernel.dtypes if isinstance(v, L.DtypeVariable)]


def resolve(kernel: L.Kernel, binding: Mapping[str, str]) -> Binding:
    """``binding`` with each derived variable whose base it determines (directly or through other
    derived ones) added, as PyTorch derives it; a derived variable ``binding`` names keeps its
    dtype. Unresolvable ones (an undeclared base, a cycle) are left out: the checker says why."""
    resolved = dict(binding)
    derived = [v for v in kernel.dtypes if isinstance(v, L.DerivedDtype) and v.name not in resolved]
    while derived:
        ready = [v for v in derived if (d := _derivation(v)) is not None and d[1] in resolved]
        if not ready:
            break
        for variable in ready:
            rule, base = _derivation(variable)
            resolved[variable.name] = derived_dtype(rule, resolved[base])
        derived = [v for v in derived if v not in ready]
    return {**binding, **{v.name: resolved[v.name] for v in kernel.dtypes if v.name in resolved}}  # declaration order


def _derived_problems(kernel: L.Kernel, declared: Mapping[str, int]) -> list[Diagnostic]:
    """Derived variables with no rule or two, an undeclared base, a cycle; inputs that a derived
    variable types or a role dtype input that binds one (a call binds only ``of`` variables)."""
    problems: list[Diagnostic] = []
    derived = {v.name: i for i, v in enumerate(kernel.dtypes) if isinstance(v, L.DerivedDtype)}
    for index, variable in enumerate(kernel.dtypes):
        if not isinstance(variable, L.DerivedDtype):
            continue
        derivation = _derivation(variable)
        if derivation is None:
            problems.append(Diagnostic(f"/dtypes/{index}", "bad_dtype_variable",
                                       f"{show_name(variable.name)} is derived by exactly one of acc_of, float_of"))
        elif derivation[1] not in declared:
            problems.append(Diagnostic(f"/dtypes/{index}/{derivation[0]}", "bad_dtype_variable",
                                       f"{show_name(derivation[1])} is not a declared dtype variable "
                                       f"(declared: {', '.join(declared)})"))
    if not problems:
        unresolved = sorted(set(derived) - set(resolve(kernel, {v.name: v.of[0] for v in bound_variables(kernel)})),
                            key=derived.get)
        problems += [Diagnostic(f"/dtypes/{derived[name]}", "bad_dtype_variable",
                                f"{show_name(name)} has no base among the declared (of) variables: "
                                f"{', '.join(unresolved)} derive from one another (a cycle)")
                     for name in unresolved]
    for index, inp in enumerate(kernel.inputs):
        for field in ("dtype", "binds"):
            name = getattr(inp, field)
            if name in derived:
                problems.append(Diagnostic(f"/inputs/{index}/{field}", "bad_dtype_variable",
                                           f"{show_name(name)} is derived, and a call binds only declared variables "
                                           f"(of): name their base here, and cast to {show_name(name)} in the body"))
    return problems


def _meta_when_problems(kernel: L.Kernel) -> list[Diagnostic]:
    """A meta ``when`` that names no variable, an undeclared one, a dtype its variable does not
    take, or a value below 1."""
    problems: list[Diagnostic] = []
    variables = {v.name: v for v in kernel.dtypes}
    for i, meta in enumerate(kernel.meta):
        for j, when in enumerate(meta.when):
            path = f"/meta/{i}/when/{j}"
            if not when.dtypes:
                problems.append(Diagnostic(f"{path}/dtypes", "bad_dtype_variable",
                                           "a when names at least one dtype variable and its dtype"))
            for name, dtype in when.dtypes.items():
                variable = variables.get(name)
                if variable is None:
                    problems.append(Diagnostic(f"{path}/dtypes/{name}", "bad_dtype_variable",
                                               f"{show_name(name)} is not a declared dtype variable "
                                               f"(declared: {', '.join(variables) or 'none'})"))
                elif isinstance(variable, L.DtypeVariable) and dtype not in variable.of:
                    problems.append(Diagnostic(f"{path}/dtypes/{name}", "bad_dtype_variable",
                                               f"{show_name(name)} takes one of {variable.of}, not {dtype}"))
            if when.value < 1:
                problems.append(Diagnostic(f"{path}/value", "bad_value", f"a meta value must be >= 1, got {when.value}"))
    return problems


def meta_values(kernel: L.Kernel, binding: Mapping[str, str] | None = None) -> dict[str, int]:
    """Each meta value of the variant ``binding`` selects (default: every variable at its first
    dtype): its first ``when`` whose dtypes the binding has, else its ``value``."""
    if not any(m.when for m in kernel.meta):
        return {m.name: m.value for m in kernel.meta}
    full = resolve(kernel, bindings(kernel)[0] if binding is None else binding)
    return {m.name: next((w.value for w in m.when if all(full.get(k) == v for k, v in w.dtypes.items())), m.value)
            for m in kernel.meta}


def is_generic(kernel: L.Kernel) -> bool:
    """Whether the kernel declares or names a dtype variable."""
    return bool(kernel.dtypes) or any(True for _ in _dtype_refs(kernel.model_dump(mode="json", exclude_unset=True)))


def declaration_problems(kernel: L.Kernel) -> list[Diagnostic]:
    """Undeclared, twice declared, repeated members, and too many variants."""
    problems: list[Diagnostic] = []
    declared: dict[str, int] = {}
    for index, variable in enumerate(kernel.dtypes):
        if variable.name in declared:
            problems.append(Diagnostic(f"/dtypes/{index}/name", "bad_dtype_variable",
                                       f"{show_name(variable.name)} is declared twice (also /dtypes/{declared[variable.name]})"))
        declared.setdefault(variable.name, index)
        if isinstance(variable, L.DtypeVariable) and len(set(variable.of)) != len(variable.of):
            problems.append(Diagnostic(f"/dtypes/{index}/of", "bad_dtype_variable",
                                       f"{show_name(variable.name)} lists a dtype twice: {variable.of}"))
    for path, name in _dtype_refs(kernel.model_dump(mode="json", exclude_unset=True)):
        if name not in declared:
            known = ", ".join(declared) or "none"
            problems.append(Diagnostic(path, "bad_dtype_variable",
                                       f"{show_name(name)} is not a dtype nor a declared dtype variable (declared: {known})"))
    bound_by: dict[str, int] = {}
    for index, inp in enumerate(kernel.inputs):
        if inp.role == "dtype" and inp.binds in declared:
            if inp.binds in bound_by:
                problems.append(Diagnostic(f"/inputs/{index}/binds", "bad_signature",
                                           f"{show_name(inp.binds)} is already bound by /inputs/{bound_by[inp.binds]}"))
            bound_by.setdefault(inp.binds, index)
    problems += _derived_problems(kernel, declared)
    problems += _meta_when_problems(kernel)
    count = 1
    for variable in bound_variables(kernel):
        count *= len(set(variable.of))
    if count > MAX_VARIANTS:
        problems.append(Diagnostic("/dtypes", "bad_dtype_variable",
                                   f"the dtype variables make {count} variants, more than {MAX_VARIANTS}"))
    return problems


def bindings(kernel: L.Kernel) -> list[Binding]:
    """Every binding of the kernel's declared (``of``) variables, the default (first dtypes) first."""
    variables = bound_variables(kernel)
    names = [v.name for v in variables]
    return [dict(zip(names, combination)) for combination in itertools.product(*(v.of for v in variables))]


def describe(binding: Mapping[str, str]) -> str:
    return ", ".join(f"{name}={dtype}" for name, dtype in binding.items())


def instantiate(kernel: L.Kernel, binding: Mapping[str, str]) -> L.Kernel:
    """The concrete kernel: each dtype variable replaced by its dtype (derived ones by
    :func:`resolve`), ``dtypes`` dropped, each meta value the binding's (:func:`meta_values`)."""
    from kernelgen.lang.parse import kernel_from_obj

    values = meta_values(kernel, binding)
    binding = resolve(kernel, binding)

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: (binding.get(value, value) if key in DTYPE_FIELDS and isinstance(value, str) else walk(value))
                    for key, value in node.items() if key != "dtypes"}
        if isinstance(node, list):
            return [walk(value) for value in node]
        return node

    document = kernel.model_dump(mode="json", exclude_unset=True)
    meta = document.pop("meta", None)
    concrete = walk(document)
    if meta is not None:
        concrete["meta"] = [{"name": m["name"], "value": values[m["name"]]} for m in meta]
    return kernel_from_obj(concrete)


def binding_for(kernel: L.Kernel, wanted: Mapping[str, str]) -> Binding:
    """The binding under which the kernel's inputs and outputs have the ``wanted`` dtypes (by
    name, e.g. a task's signature): each variable takes the wanted dtype of the first input or
    output that names it, else its first dtype. Empty for a kernel without variables."""
    binding: Binding = {}
    for spec in (*kernel.inputs, *kernel.outputs):
        if spec.dtype is not None and spec.name in wanted and spec.dtype not in L.DTYPES:
            binding.setdefault(spec.dtype, wanted[spec.name])
    return {v.name: binding.get(v.name, v.of[0]) for v in bound_variables(kernel)}
