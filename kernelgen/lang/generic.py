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
        if len(set(variable.of)) != len(variable.of):
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
    count = 1
    for variable in kernel.dtypes:
        count *= len(set(variable.of))
    if count > MAX_VARIANTS:
        problems.append(Diagnostic("/dtypes", "bad_dtype_variable",
                                   f"the dtype variables make {count} variants, more than {MAX_VARIANTS}"))
    return problems


def bindings(kernel: L.Kernel) -> list[Binding]:
    """Every binding of the kernel's variables, the default (first dtypes) first."""
    names = [v.name for v in kernel.dtypes]
    return [dict(zip(names, combination)) for combination in itertools.product(*(v.of for v in kernel.dtypes))]


def describe(binding: Mapping[str, str]) -> str:
    return ", ".join(f"{name}={dtype}" for name, dtype in binding.items())


def instantiate(kernel: L.Kernel, binding: Mapping[str, str]) -> L.Kernel:
    """The concrete kernel: each dtype variable replaced by its dtype, ``dtypes`` dropped."""
    from kernelgen.lang.parse import kernel_from_obj

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: (binding.get(value, value) if key in DTYPE_FIELDS and isinstance(value, str) else walk(value))
                    for key, value in node.items() if key != "dtypes"}
        if isinstance(node, list):
            return [walk(value) for value in node]
        return node

    return kernel_from_obj(walk(kernel.model_dump(mode="json", exclude_unset=True)))


def binding_for(kernel: L.Kernel, wanted: Mapping[str, str]) -> Binding:
    """The binding under which the kernel's inputs and outputs have the ``wanted`` dtypes (by
    name, e.g. a task's signature): each variable takes the wanted dtype of the first input or
    output that names it, else its first dtype. Empty for a kernel without variables."""
    binding: Binding = {}
    for spec in (*kernel.inputs, *kernel.outputs):
        if spec.dtype is not None and spec.name in wanted and spec.dtype not in L.DTYPES:
            binding.setdefault(spec.dtype, wanted[spec.name])
    return {v.name: binding.get(v.name, v.of[0]) for v in kernel.dtypes}
