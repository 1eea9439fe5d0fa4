"""The emitted launcher: the plain Python function that takes the AST's inputs, checks and
converts them, binds the sizes, allocates outputs and scratch tensors, computes the grid and
params from host expressions and launches the ``@triton.jit`` kernel(s).

:func:`kernelgen.emit.module.emit_triton` emits the kernels and calls :func:`_wrapper_lines` for the
launcher. Host code follows the kernel language's host semantics (integer division toward
zero), not Triton's, so it has its own expression writer (:class:`_HostExpressions`) and lives
apart from the kernel's emitter; it does not import :mod:`kernelgen.emit.module`.
"""

from __future__ import annotations

from typing import Collection

from kernelgen.lang import nodes as L
from kernelgen.check.checked import (Checked, CheckedKernel, ParamBinding, is_literal, launches_of, literal_value,
                              nonnegative_host)
from kernelgen.emit.batch import batch_lines, unbatch_lines
from kernelgen.emit.code import (_BINARY_OPERATORS, ADD, ATOM, FLOAT_DTYPES, INT_DTYPES, MUL, POSTFIX, TORCH_DTYPES,
                                 Namer, _Code, _number, _wrap)

# The launcher's device where no tensor argument gives one.
DEFAULT_DEVICE = '"cuda" if torch.cuda.is_available() else "cpu"'
# Builtins the emitted launcher calls: a launcher may not be named after one of them.
LAUNCHER_BUILTINS = ("isinstance", "len", "list", "tuple", "max", "min", "float")


# Host comparisons and logic, as Python writes them.
_HOST_LOGIC = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "and": "and", "or": "or"}


def _host_names(checked: CheckedKernel) -> set[str]:
    kernel = checked.kernel
    return ({i.name for i in kernel.inputs} | set(checked.sizes) | {o.name for o in kernel.outputs}
            | {m.name for m in kernel.meta} | {i.present for i in kernel.inputs if i.present}
            | {item for i in kernel.inputs for item in i.items or ()} | {"grid"})


class _HostExpressions:
    """Host expressions (grid, output shapes, param values) as Python over the launcher's
    locals, with the kernel language's integer semantics (division toward zero)."""

    def __init__(self, names: Namer, scalars: dict[str, str], helpers: set[str]) -> None:
        self.names = names
        self.scalars = scalars
        self.helpers = helpers
        self.device = DEFAULT_DEVICE  # the launcher's expression for the call's device (num_sms reads it)

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
        if isinstance(expr, L.Where):
            return self.kind(expr.x)
        if isinstance(expr, L.Binary) and expr.op in _HOST_LOGIC:
            return "bool"
        return "int"

    def nonnegative(self, expr: L.Expr) -> bool:
        return nonnegative_host(expr, self.scalars)

    def emit(self, expr: L.Expr) -> tuple[str, int]:
        if is_literal(expr):
            return _number(literal_value(expr)) if not isinstance(expr, bool) else (repr(int(expr)), ATOM)
        if isinstance(expr, str):
            return self.names(expr), ATOM
        if isinstance(expr, L.DeviceInfo):
            self.helpers.add("_num_sms")
            return f"_num_sms({self.device})", POSTFIX
        if isinstance(expr, L.TensorInfo):
            of = self.names(expr.of)
            return (f"{of}.numel()" if expr.op == "numel" else f"{of}.stride({expr.dim})"), POSTFIX
        if isinstance(expr, L.Where):  # only the taken branch is evaluated, as on the host
            return f"({self.emit(expr.x)[0]} if {self.emit(expr.cond)[0]} else {self.emit(expr.y)[0]})", ATOM
        assert isinstance(expr, L.Binary), expr
        (lhs, lp), (rhs, rp) = self.emit(expr.lhs), self.emit(expr.rhs)
        if expr.op in _HOST_LOGIC:  # parenthesized: Python chains comparisons
            return f"({lhs} {_HOST_LOGIC[expr.op]} {rhs})", ATOM
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


def _param_code(binding: ParamBinding, name: str, host: _HostExpressions) -> _Code:
    if binding.tensor is not None:
        return _Code(name, ATOM, binding.type.dtype, pointer=True)
    dtype = binding.type.dtype
    return _Code(name, ATOM, dtype, may_be_number=True,
                 nonnegative=dtype in INT_DTYPES and host.nonnegative(binding.value))


def _concrete_document(checked: Checked) -> L.Kernel:
    """The kernel whose signature the launcher takes, with its dtype variables bound. A checked
    kernel is concrete already; a program keeps its generic document, and its launches say the
    variant's dtypes (TritonBench's log_softmax_linear: dtype= binds T)."""
    from kernelgen.lang.generic import instantiate

    kernel = checked.kernel
    if not kernel.dtypes:
        return kernel
    first = launches_of(checked)[0].kernel
    concrete = {spec.name: spec for spec in (*first.inputs, *first.outputs)}
    binding: dict[str, str] = {}
    for spec in (*kernel.inputs, *kernel.outputs):
        for field in ("dtype", "binds"):
            variable = getattr(spec, field, None)
            if variable is not None and variable not in L.DTYPES and spec.name in concrete:
                binding.setdefault(variable, getattr(concrete[spec.name], field))
    return instantiate(kernel, binding)


def _wrapper_lines(checked: Checked, entry: str, kernel_fns: list[str], host: _HostExpressions,
                   names: Namer, kernel_names: list[Namer], converted_inputs: Collection[str] | None) -> list[str]:
    kernel = _concrete_document(checked)
    body: list[str] = []
    given_tensors: dict[str, str] = {}  # the tensors in-place results go into, as the caller passed them
    for target in sorted(set(_inplace_targets(kernel).values())):
        key = f"{target}_given"
        while key in names.taken:  # never an AST name's own entry
            key += "_"
        given_tensors[target] = names.fresh(key)
        body.append(f"{given_tensors[target]} = {names(target)}")
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
    default_device = DEFAULT_DEVICE
    device = (f"{names(given[0].name)}.device" if given else f"{names(numbers[0].name)}.device" if numbers
              else default_device)
    host.device = device
    for inp in tensors:
        name = names(inp.name)
        cast = f".to({TORCH_DTYPES[inp.dtype]})" if _converts(inp, converted, converted_inputs) else ""
        if inp.present is None and not inp.number:
            body.append(f"{name} = {name}{cast}.contiguous()")
    for k, inp in enumerate(numbers):  # a Python number or a tensor, as a tensor on the call's device
        name = names(inp.name)
        where = device if given or k else f"{name}.device if isinstance({name}, torch.Tensor) else ({default_device})"
        if inp.present is not None:  # left out: zeros, the flag 0
            body.append(f"{names(inp.present)} = 0 if {name} is None else 1")
            name = f"0 if {name} is None else {name}"
        body.append(f"{names(inp.name)} = torch.as_tensor({name}, dtype={TORCH_DTYPES[inp.dtype]}, device={where})")
    for inp in kernel.inputs:
        if inp.is_plain and inp.shape is None:  # a number, or a one-element tensor read as its value
            name = names(inp.name)
            if inp.present is not None:  # left out: 0, the flag 0
                body += [f"{names(inp.present)} = 0 if {name} is None else 1", f"{name} = 0 if {name} is None else {name}"]
            body.append(f"{name} = {name}.item() if isinstance({name}, torch.Tensor) else {name}")
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
        elif inp.role in ("ints", "floats") and inp.items:  # one value per item; a number fills them all (_pair)
            targets = ", ".join(names(item) for item in inp.items) + ("," if len(inp.items) == 1 else "")
            value = names(inp.name)
            if inp.present is not None:  # left out: each item 1 (ints) or 0.0 (floats), the flag 0
                body.append(f"{names(inp.present)} = 0 if {value} is None else 1")
                value = f"({1 if inp.role == 'ints' else 0.0} if {value} is None else {value})"
            if inp.role == "ints":
                body.append(f"{targets} = ({value},) * {len(inp.items)} if isinstance({value}, int) else tuple({value})")
            else:
                body.append(f"{targets} = (float({value}),) * {len(inp.items)} if isinstance({value}, (int, float)) "
                            f"else tuple(float(item) for item in {value})")
    for out in kernel.outputs:
        shape = _tuple([host.emit(d)[0] for d in out.shape])
        if out.alias:  # the input's memory itself (contiguous, converted above): no allocation, no copy
            host.helpers.add("_alias_buffer")
            others = [names(i.name) for i in tensors if i.name != out.into]
            body.append(f"{names(out.name)} = _alias_buffer({names(out.into)}, ({''.join(o + ', ' for o in others)}))")
        elif out.init is None:
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
    body += _returned_lines(kernel, names, host, given_tensors)
    results = [names(o.name) for o in kernel.outputs if o.raises is None]
    body.append(f"return {', '.join(results)}")
    params = ", ".join(names(i.name) for i in kernel.inputs)
    return [f"def {entry}({params}):", *("    " + line for line in body)]


def _inplace_targets(kernel: L.Kernel) -> dict[str, str]:
    """The input each returned output is copied into, by output name (see Output ``into``)."""
    flag = any(i.role == "inplace" for i in kernel.inputs)
    first = next((i.name for i in kernel.inputs if i.is_plain and i.shape is not None), None)
    targets = {}
    for k, out in enumerate(o for o in kernel.outputs if o.raises is None):
        into = out.into or (first if k == 0 and flag else None)
        if into is not None:
            targets[out.name] = into
    return targets


def _returned_lines(kernel: L.Kernel, names: Namer, host: _HostExpressions, given: dict[str, str]) -> list[str]:
    """Each output reshaped to its first call shape whose ``when`` holds, and copied into its
    ``into`` input as the caller passed it (``given``; with a role ``inplace`` flag, only when it
    is true; an ``alias`` output only where it is not that tensor's memory already), which is
    returned."""
    lines: list[str] = []
    flag = next((names(i.name) for i in kernel.inputs if i.role == "inplace"), None)
    targets = _inplace_targets(kernel)
    for out in kernel.outputs:
        name = names(out.name)
        for j, option in enumerate(out.call_shapes):
            shape = _tuple([host.emit(d)[0] for d in option.shape]) if option.shape else "()"
            lines += [f"{'el' if j else ''}if {host.emit(option.when)[0]}:", f"    {name} = {name}.reshape({shape})"]
        if out.name in targets:
            target = given[targets[out.name]]
            copy = [f"{target}.copy_({name})", f"{name} = {target}"]
            if out.alias:  # copied back only where the caller's tensor was not the kernel's memory
                copy = [f"if {name}.data_ptr() != {target}.data_ptr() or not {target}.is_contiguous():",
                        f"    {copy[0]}", copy[1]]
            lines += [f"if {flag}:", *("    " + line for line in copy)] if flag is not None else copy
    return lines


def _converts(inp: L.Input, converted: set[str], converted_inputs: Collection[str] | None) -> bool:
    return inp.name in converted_inputs if converted_inputs is not None else inp.dtype in converted


def _tuple(items: list[str]) -> str:
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
