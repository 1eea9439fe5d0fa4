"""A kernel as a Python function: bind a call's arguments, apply the view, map outputs back.

Wrappers of real operators (TritonBench's among them) are polymorphic: optional arguments,
numbers where tensors go, any rank, ``dim``/``keepdim``, ``out=``, ``inplace=``, ``dtype=``,
optional tensors (``bias=None``: the kernel's ``present`` flag is 0, a meta value, so each
presence pattern compiles to its own variant). The kernel's
AST declares these (see :class:`kernelgen.lang.nodes.Input` and ``Kernel.view``); this module
turns one call into the kernel's fixed-rank arguments (:class:`BoundCall`) and the kernel's
outputs back into what the call returns. Whatever runs the kernel in between (the
interpreter, the GPU) sees plain tensors of the declared shapes.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from kernelgen.lang import nodes as L
from kernelgen.lang.generic import bound_variables, meta_values
from kernelgen.check.checked import FLOAT_DTYPES
from kernelgen.check.checker import CheckedKernel, broadcast_shapes, check
from kernelgen.errors import Diagnostic, HostError
from kernelgen.host.plan import dtype_name, is_fp8, torch_dtype
from kernelgen.check.polymorphism import (apply_batches, bind_ints, python_numbers, raise_preconditions, refuse_complex,
                                    returned)

@dataclass
class BoundCall:
    """One call, ready for the kernel: its arguments (by input name), the meta values the
    call's choices select, and how to turn the kernel's outputs into the call's result."""

    args: dict[str, Any]
    meta: dict[str, int]
    finish: Callable[..., Any]
    notes: list[str] = field(default_factory=list)
    # The binding of the kernel's dtype variables (kernelgen.lang.generic); empty if it has none.
    dtypes: dict[str, str] = field(default_factory=dict)
    # The finish of a call of the same signature that passes these tensors for the in-place
    # targets (by input name; kernelgen.host.call_replay): ``finish`` keeps this call's own.
    finish_into: Callable[[Mapping[str, Any]], Callable[..., Any]] | None = None


def _error(index: int | None, message: str, code: str = "bad_arguments") -> HostError:
    return HostError(Diagnostic("" if index is None else f"/inputs/{index}", code, message))


def bind_arguments(kernel: L.Kernel, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Bind like a Python signature: positionally in declaration order, then by keyword, then
    defaults. Every input may be passed either way."""
    names = [i.name for i in kernel.inputs]
    if len(args) > len(names):
        raise _error(None, f"{kernel.name} takes at most {len(names)} arguments, got {len(args)}")
    bound = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in names:
            raise _error(None, f"{kernel.name} got an unexpected keyword argument {key!r}")
        if key in bound:
            raise _error(names.index(key), f"{kernel.name} got multiple values for argument {key!r}")
        bound[key] = value
    for index, inp in enumerate(kernel.inputs):
        if inp.name not in bound:
            if not inp.optional:
                raise _error(index, f"{kernel.name} is missing the required argument {inp.name!r}")
            bound[inp.name] = inp.default
    return bound


# Dtype bindings already worked out, per kernel and per call signature (what each argument is as
# promotion sees it): promotion asks torch about empty tensors, 10-15 µs of a call's Python, while
# a wrapper is called again and again with the same kinds of arguments.
# Kernels (Pydantic models with list fields) are not hashable: keyed by id, held weakly.
_BINDINGS: dict[int, tuple[weakref.ref, dict[tuple[Any, ...], dict[str, str]]]] = {}
_BINDINGS_PER_KERNEL = 256


def _promotion_signature(value: Any) -> Any:
    """All that :func:`bind_dtypes` reads of one argument: a tensor's dtype and whether it is
    0-dim, a number's type, a dtype itself, else the type (None stays None)."""
    import torch

    if isinstance(value, torch.Tensor):
        return ("tensor", value.dtype, value.dim() == 0)
    if value is None or isinstance(value, torch.dtype):
        return value
    return ("type", type(value))


def bind_dtypes(kernel: L.Kernel, bound: Mapping[str, Any]) -> dict[str, str]:
    """Each dtype variable's dtype for a call's bound arguments: PyTorch's promotion of the values
    passed for its inputs (see :mod:`kernelgen.lang.generic`); remembered per call signature."""
    if not kernel.dtypes:
        return {}
    signature = tuple(_promotion_signature(bound.get(inp.name)) for inp in kernel.inputs)
    entry = _BINDINGS.get(id(kernel))
    if entry is None or entry[0]() is not kernel:
        entry = _BINDINGS[id(kernel)] = (weakref.ref(kernel, lambda _, key=id(kernel): _BINDINGS.pop(key, None)), {})
    known = entry[1]
    binding = known.get(signature)  # one lookup: another thread may clear the table meanwhile
    if binding is None:
        binding = _bind_dtypes(kernel, bound)  # raises for a call it cannot bind: nothing is kept
        if len(known) >= _BINDINGS_PER_KERNEL:
            known.clear()
        known[signature] = binding
    return dict(binding)


def _bind_dtypes(kernel: L.Kernel, bound: Mapping[str, Any]) -> dict[str, str]:
    import torch

    binding: dict[str, str] = {}
    for variable in bound_variables(kernel):  # derived ones follow in instantiate
        requested = _requested_dtype(kernel, bound, variable)
        if requested is not None:
            binding[variable.name] = requested
            continue
        users = [(index, inp) for index, inp in enumerate(kernel.inputs)
                 if inp.dtype == variable.name and inp.is_plain and bound.get(inp.name) is not None]
        python = python_numbers([bound[inp.name] for _, inp in users]) if _all_numbers(kernel, bound) else None
        if python in variable.of:
            binding[variable.name] = python  # Python computes numbers in f64/i64 (kernelgen.check.polymorphism)
            continue
        promoted: Any = None
        for index, inp in users:
            value = bound[inp.name]
            refuse_complex(inp.name, index, value)
            if isinstance(value, torch.Tensor):
                value = torch.empty((0,) if value.dim() else (), dtype=value.dtype)
            elif not isinstance(value, (bool, int, float)):
                continue  # the binding of the argument itself says what is wrong with it
            promoted = value if promoted is None else _promoted(promoted, value, index)
        if promoted is None:
            binding[variable.name] = variable.of[0]
            continue
        dtype = promoted.dtype if isinstance(promoted, torch.Tensor) else torch.tensor(promoted).dtype
        name = dtype_name(dtype)
        if name not in variable.of:
            names = ", ".join(inp.name for _, inp in users)
            index = users[0][0]
            raise HostError(Diagnostic(f"/inputs/{index}", "bad_arguments",
                                       f"{names} give {dtype} ({variable.name} by PyTorch's promotion); "
                                       f"{variable.name} takes one of {variable.of}"))
        binding[variable.name] = name
    return binding


def _all_numbers(kernel: L.Kernel, bound: Mapping[str, Any]) -> bool:
    """Whether a call passes a number (no tensor) for every tensor input it passes."""
    passed = [bound[i.name] for i in kernel.inputs if i.is_plain and i.shape is not None and bound.get(i.name) is not None]
    return bool(passed) and not any(hasattr(v, "shape") for v in passed)


def _promoted(a: Any, b: Any, index: int) -> Any:
    """An empty value of the dtype PyTorch's promotion gives ``a`` and ``b``. fp8 takes part
    only with itself (PyTorch refuses to promote it with anything else)."""
    import torch

    dtypes = [x.dtype if isinstance(x, torch.Tensor) else torch.tensor(x).dtype for x in (a, b)]
    if is_fp8(dtypes[0]) or is_fp8(dtypes[1]):
        if dtypes[0] != dtypes[1]:
            raise HostError(Diagnostic(f"/inputs/{index}", "bad_arguments",
                                       f"PyTorch does not promote {dtypes[0]} with {dtypes[1]}; pass one dtype"))
        return a
    return a + b


def _requested_dtype(kernel: L.Kernel, bound: Mapping[str, Any], variable: L.DtypeVariable) -> str | None:
    """The dtype a role ``dtype`` argument (torch's ``dtype=``) sets ``variable`` to; None
    where no such argument binds it or the call passes None (promotion binds it then)."""
    for index, inp in enumerate(kernel.inputs):
        if inp.role == "dtype" and inp.binds == variable.name and bound.get(inp.name) is not None:
            name = _dtype_argument(inp, index, bound[inp.name])
            if name not in variable.of:
                raise _error(index, f"{inp.name} takes None or one of {variable.of} ({variable.name}), "
                             f"got {bound[inp.name]}", "unsupported_argument")
            return name
    return None


def _dtype_argument(inp: L.Input, index: int, value: Any) -> str:
    """The dtype name of a ``dtype=`` argument's value, a torch dtype."""
    import torch

    if not isinstance(value, torch.dtype):
        raise _error(index, f"{inp.name} is a torch dtype or None, got {type(value).__name__}")
    refuse_complex(inp.name, index, value)
    name = dtype_name(value)
    if name is None:
        raise _error(index, f"{inp.name}={value} is a dtype the language does not have", "unsupported_argument")
    return name


def _as_tensor(inp: L.Input, index: int, value: Any, dtypes: Mapping[str, str]):
    """The tensor the kernel gets: a tensor of a dtype variable's input is converted to the
    variable's (promoted) dtype, as PyTorch computes in it; other inputs take their dtype only."""
    import torch

    dtype = dtypes.get(inp.dtype, inp.dtype)
    refuse_complex(inp.name, index, value)
    if isinstance(value, torch.Tensor) and value.layout is not torch.strided:
        raise _error(index, f"{inp.name} is a {value.layout} tensor; the kernel takes dense (strided) tensors: "
                            "pass .to_dense()", "unsupported_argument")
    if isinstance(value, torch.Tensor):
        if inp.dtype in dtypes:
            return value if dtype_name(value.dtype) == dtype else value.to(torch_dtype(dtype))
        if dtype_name(value.dtype) != dtype:
            raise _error(index, f"{inp.name} is declared {inp.dtype}, got {value.dtype}")
        return value
    if inp.number and isinstance(value, (int, float)) and not isinstance(value, bool):
        return torch.tensor(value, dtype=torch_dtype(dtype))
    raise _error(index, f"{inp.name} is a tensor{' or a number' if inp.number else ''}, got {type(value).__name__}")


def _as_scalar(inp: L.Input, index: int, value: Any) -> Any:
    """A scalar argument: a Python number, or a one-element (0-dim) tensor read as its value."""
    import torch

    refuse_complex(inp.name, index, value)
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if not isinstance(value, (int, float, bool)):
        raise _error(index, f"{inp.name} is a number, got {type(value).__name__}")
    return value


def _reduced_dims(value: Any, rank: int, index: int) -> tuple[int, ...]:
    if value is None:
        return tuple(range(rank))
    dims = (value,) if isinstance(value, int) and not isinstance(value, bool) else tuple(value)
    normalized = []
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool):
            raise _error(index, f"dim takes ints, got {d!r}")
        if not (-max(rank, 1) <= d < max(rank, 1)):
            raise _error(index, f"dim {d} is out of range for a tensor of rank {rank}")
        normalized.append(d % max(rank, 1))
    if len(set(normalized)) != len(normalized):
        raise _error(index, f"dim {value!r} names an axis twice")
    return tuple(sorted(set(normalized))) if rank else ()


def bind_call(kernel: L.Kernel, args: Sequence[Any], kwargs: Mapping[str, Any]) -> BoundCall:
    """Turn a Python call of the kernel's wrapper into the kernel's own arguments."""
    import torch

    bound = bind_arguments(kernel, args, kwargs)
    dtypes = bind_dtypes(kernel, bound)
    meta: dict[str, int] = {}
    role_values: dict[str, Any] = {}
    values: dict[str, Any] = {}
    for index, inp in enumerate(kernel.inputs):
        value = bound[inp.name]
        if inp.role == "choice":
            if value not in inp.choices:
                raise _error(index, f"{inp.name} takes one of {inp.choices}, got {value!r}", "unsupported_argument")
            meta[inp.name] = inp.choices.index(value)
        elif inp.role == "fixed":
            if value is not inp.default and value != inp.default:
                raise _error(index, f"this kernel supports {inp.name}={inp.default!r} only, got {value!r}",
                             "unsupported_argument")
        elif inp.role == "ints":
            meta.update(bind_ints(inp, index, value))
        elif inp.role == "floats":  # the items are scalars the kernel's params take
            items = bind_ints(inp, index, value)
            if inp.present is not None:
                meta[inp.present] = items.pop(inp.present)
            values.update(items)
        elif inp.role == "dtype":
            # A variable's binding took it (bind_dtypes); a concrete one takes only its dtype.
            if value is not None and inp.binds in L.DTYPES and _dtype_argument(inp, index, value) != inp.binds:
                raise _error(index, f"this kernel supports {inp.name}=None or {torch_dtype(inp.binds)} only, "
                             f"got {value}", "unsupported_argument")
        elif inp.role is not None:
            role_values[inp.role] = (index, value)
        elif inp.present is not None and value is None:
            meta[inp.present] = 0
            if inp.shape is None:  # an omitted scalar is 0 to the kernel (an omitted tensor: zeros)
                values[inp.name] = False if inp.dtype == "bool" else 0.0 if inp.dtype in FLOAT_DTYPES else 0
        elif inp.shape is not None:
            values[inp.name] = _as_tensor(inp, index, value, dtypes)
        else:
            values[inp.name] = _as_scalar(inp, index, value)
        if inp.present is not None and value is not None:
            meta[inp.present] = 1

    first_input = next((i.name for i in kernel.inputs if i.is_plain and i.shape is not None), None)
    if kernel.view == "elementwise":
        finish_view, values = _elementwise_view(kernel, values)
    elif kernel.view == "rows":
        finish_view, values = _rows_view(kernel, values, role_values)
    else:
        values, finish_view = apply_batches(kernel, values)
    _complete_tensors(kernel, values, dtypes)
    numbers_only = _all_numbers(kernel, bound)

    out_index, out = role_values.get("out", (None, None))
    targets = _inplace_targets(kernel, role_values, first_input)
    call_shapes = _call_shapes(kernel, values, meta, dtypes)

    def finish_into(originals: Mapping[str, Any]) -> Callable[..., Any]:
        """The finish of a call whose in-place targets are ``originals`` (by input name): only
        that call's finish keeps them alive, never one that serves later calls."""
        return lambda outputs, copy=True: finish(outputs, copy, originals)

    def finish(outputs: Mapping[str, Any], copy: bool, originals: Mapping[str, Any]) -> Any:
        """The call's result; ``copy`` False: shaped only, copied into no ``out=`` or in-place
        target (which elements were written, say)."""
        raise_preconditions(kernel, outputs)
        shaped = finish_view(outputs)
        results = [shaped[o.name] for o in returned(kernel)]
        for k, o in enumerate(returned(kernel)):
            if o.name in call_shapes:
                results[k] = results[k].reshape(call_shapes[o.name])
        if numbers_only and out is None:
            # Numbers in, numbers out, as an operator written with Python arithmetic returns.
            results = [r.item() if r.dim() == 0 else r for r in results]
        if not copy:
            return results[0] if len(results) == 1 else tuple(results)
        if out is not None:
            if not isinstance(out, torch.Tensor) or out.shape != results[0].shape or out.dtype != results[0].dtype:
                raise _error(out_index, f"out must be a {results[0].dtype} tensor of shape {list(results[0].shape)}")
            out.copy_(results[0].to(out.device))
            results[0] = out
        for k, name in targets.items():
            target = originals[name]
            if not isinstance(target, torch.Tensor) or target.shape != results[k].shape \
                    or target.dtype != results[k].dtype:
                raise _error(None, f"in place: {name} must have the result's shape {list(results[k].shape)} and "
                                   f"dtype {results[k].dtype}")
            if not same_memory(results[k], target):  # an aliasing output wrote the caller's tensor itself
                target.copy_(results[k].to(target.device))
            results[k] = target
        return results[0] if len(results) == 1 else tuple(results)

    originals = {name: bound[name] for name in set(targets.values())}
    return BoundCall(values, meta, finish_into(originals), dtypes=dtypes, finish_into=finish_into)


def same_memory(result: Any, target: Any) -> bool:
    """Whether a result of ``target``'s shape is ``target``'s own elements (an aliasing output
    run on the caller's contiguous tensor): then there is nothing to copy back."""
    return result.device == target.device and result.data_ptr() == target.data_ptr() and target.is_contiguous() \
        and result.is_contiguous()


def _inplace_targets(kernel: L.Kernel, role_values: Mapping[str, Any], first_input: str | None) -> dict[int, str]:
    """The input each returned output is copied into, by the output's index: an output's
    ``into``, always, or only when a role ``inplace`` argument is true (then the first output's
    target is the first input where it names none)."""
    flag = role_values.get("inplace")
    if flag is not None and not flag[1]:
        return {}
    targets = {k: o.into for k, o in enumerate(returned(kernel)) if o.into is not None}
    if flag is not None and first_input is not None:
        targets.setdefault(0, first_input)
    return targets


def _call_shapes(kernel: L.Kernel, values: Mapping[str, Any], meta: Mapping[str, int],
                 dtypes: Mapping[str, str]) -> dict[str, tuple[int, ...]]:
    """The shape the call gets each output with ``call_shapes`` in, where one's ``when`` holds
    (meta values: the call's choices and flags, else those of its dtype binding)."""
    from kernelgen.host.plan import HostEnv, contiguous_strides, eval_host, sizes_from_shapes

    if not any(o.call_shapes for o in kernel.outputs):
        return {}
    kernel = L.inline_host_values(kernel)
    tensors = {i.name: tuple(values[i.name].shape) for i in kernel.inputs
               if i.is_plain and i.shape is not None and i.name in values}
    scalars = {i.name: values[i.name] for i in kernel.inputs if i.is_plain and i.shape is None}
    env = HostEnv(sizes_from_shapes(kernel, tensors), scalars, {**meta_values(kernel, dtypes or None), **meta},
                  tensors, {name: contiguous_strides(shape) for name, shape in tensors.items()})
    found: dict[str, tuple[int, ...]] = {}
    for i, out in enumerate(kernel.outputs):
        for j, option in enumerate(out.call_shapes):
            path = f"/outputs/{i}/call_shapes/{j}"
            if eval_host(option.when, env, path + "/when"):
                found[out.name] = tuple(int(eval_host(d, env, f"{path}/shape/{k}")) for k, d in enumerate(option.shape))
                kernel_shape = [int(eval_host(d, env)) for d in out.shape]
                if math.prod(found[out.name]) != math.prod(kernel_shape):
                    raise HostError(Diagnostic(path, "bad_arguments",
                                               f"{out.name} is {kernel_shape} in the kernel; the call shape "
                                               f"{list(found[out.name])} has another element count"))
                break
    return found


def _complete_tensors(kernel: L.Kernel, values: dict[str, Any], dtypes: Mapping[str, str]) -> None:
    """Each tensor input at its declared shape, the sizes taken from the tensors the call passed
    (as the kernel sees them): an omitted optional tensor is zeros (its ``present`` flag is 0, so
    a kernel may skip reading it); a number (or a smaller tensor) for a ``number`` input is
    broadcast to its shape."""
    import torch

    sizes: dict[str, int] = {}
    for inp in kernel.inputs:
        if inp.is_plain and inp.shape is not None and inp.name in values and not inp.number:
            sizes.update((d, n) for d, n in zip(inp.shape, values[inp.name].shape) if isinstance(d, str))
    passed = [values[i.name] for i in kernel.inputs if i.name in values and not i.number]
    device = next((v.device for v in passed if isinstance(v, torch.Tensor)), None)
    for index, inp in enumerate(kernel.inputs):
        if not inp.is_plain or inp.shape is None or (inp.name in values and not inp.number):
            continue
        shape = tuple(sizes.get(d, 1) if isinstance(d, str) else d for d in inp.shape)
        if inp.name not in values:
            if inp.present is not None:
                values[inp.name] = torch.zeros(shape, dtype=torch_dtype(dtypes.get(inp.dtype, inp.dtype)),
                                               device=device)
            continue
        tensor = values[inp.name]
        if kernel.view == "elementwise" or tuple(tensor.shape) == shape:
            continue
        if broadcast_shape([tuple(tensor.shape), shape]) != shape:
            raise _error(index, f"{inp.name} has shape {list(tensor.shape)}, which does not broadcast to "
                                f"{list(inp.shape)} = {list(shape)} (a number or a tensor that broadcasts to it)")
        values[inp.name] = tensor.to(device).expand(shape).contiguous()


def broadcast_shape(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The shape ``shapes`` broadcast to under NumPy's rules, or None where they do not.
    (``torch.broadcast_shapes`` gives the same answer but takes ~50 µs a call, as much as a
    small kernel runs, and wrappers call this on every call.)"""
    result: tuple[int, ...] | None = ()
    for shape in shapes:
        result = broadcast_shapes(result, shape) if result is not None else None
    return result


def _elementwise_view(kernel: L.Kernel, values: dict[str, Any]):
    """Broadcast every tensor input to one shape and show each flattened."""
    tensors = {i.name: values[i.name] for i in kernel.inputs if i.is_plain and i.shape is not None and i.name in values}
    shape = broadcast_shape([tuple(t.shape) for t in tensors.values()])
    if shape is None:
        shapes = {n: list(t.shape) for n, t in tensors.items()}
        raise _error(None, f"the inputs do not broadcast: {shapes}")
    viewed = dict(values)
    for name, tensor in tensors.items():
        viewed[name] = (tensor.view(-1) if tensor.shape == shape and tensor.is_contiguous()
                        else tensor.expand(shape).contiguous().reshape(-1))

    def finish(outputs: Mapping[str, Any]) -> dict[str, Any]:
        return {o.name: outputs[o.name].reshape(shape) for o in returned(kernel)}

    return finish, viewed


def _rows_view(kernel: L.Kernel, values: dict[str, Any], role_values: dict[str, Any]):
    """Move the reduced axes last and show each rank-2 input as [kept elements, reduced ones]."""
    rank2 = [i.name for i in kernel.inputs if i.is_plain and i.shape is not None and len(i.shape) == 2
             and i.name in values]
    dim_index, dim = role_values["dim"]
    _, keepdim = role_values.get("keepdim", (None, False))
    # The viewed inputs broadcast together first (numbers too), as ``input + other`` does.
    shape = broadcast_shape([tuple(values[n].shape) for n in rank2])
    if shape is None:
        raise _error(None, "the inputs do not broadcast: " + str({n: list(values[n].shape) for n in rank2}))
    values = {n: v.expand(shape) if n in rank2 else v for n, v in values.items()}
    rank = len(shape)
    reduced = _reduced_dims(dim, rank, dim_index)
    kept = tuple(d for d in range(rank) if d not in reduced)
    order = kept + reduced
    rows = math.prod(shape[d] for d in kept)
    cols = math.prod(shape[d] for d in reduced)
    viewed = dict(values)
    for name in rank2:
        viewed[name] = values[name].permute(order).contiguous().reshape(rows, cols) if rank else \
            values[name].reshape(1, 1)
    kept_shape = tuple(1 if d in reduced else shape[d] for d in range(rank)) if keepdim else \
        tuple(shape[d] for d in kept)
    inverse = [order.index(d) for d in range(rank)]

    def finish(outputs: Mapping[str, Any]) -> dict[str, Any]:
        shaped = {}
        for o in returned(kernel):
            t = outputs[o.name]
            if t.dim() == 1:
                shaped[o.name] = t.reshape(kept_shape)
            else:
                shaped[o.name] = (t.reshape(tuple(shape[d] for d in order)).permute(inverse).contiguous()
                                  if rank else t.reshape(()))
        return shaped

    return finish, viewed


def call_kernel(kernel: L.Kernel, args: Sequence[Any], kwargs: Mapping[str, Any],
                run: Callable[[CheckedKernel, dict[str, Any]], Mapping[str, Any]]) -> Any:
    """Call ``kernel`` like its wrapper: bind, check for the call's choices, ``run`` the
    kernel on its own arguments (the interpreter, or the GPU), and shape the result."""
    call = bind_call(kernel, args, kwargs)
    return call.finish(run(check(kernel, call.meta, call.dtypes or None), call.args))
