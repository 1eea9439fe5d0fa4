"""Calls of many shapes to one kernel: batch dims, rank overloads, numbers, int tuples and
preconditions (:class:`kernelgen.lang.nodes.Input` ``batch``, ``optional_dims``, ``number``, role
``ints``; :class:`kernelgen.lang.nodes.Output` ``batch``, ``raises``).

The rules are NumPy's generalized ufuncs, which define ``matmul`` itself as
``(n?,k),(k,m?)->(n?,m?)``: an input's ``shape`` is its *core* (what the kernel works on), and

* a ``batch`` input's first dim stands for any number of leading *loop* dims: the batched
  inputs' loop dims broadcast together (torch.matmul's rule: the core dims never broadcast)
  and the kernel sees them flattened into that one dim (a copy only where broadcasting or a
  layout needs one); a ``batch`` output gets the broadcast loop dims back there;
* ``optional_dims`` are core dims a call of lower rank leaves out, all of them together (an
  operand is taken as having its whole core whenever its rank allows, as NumPy does, so a 2-D
  matmul operand is a matrix, never a batch of vectors); the kernel sees each as 1, and an
  output dim of that size name is dropped from the result. So matmul's overloads (1-D @ 2-D,
  2-D @ 1-D, batched @ batched, 1-D @ batched...) are the call's rank pattern, chosen from its
  ranks with one error naming the argument where no pattern fits; a missing dim is a size of 1,
  so each pattern is the same compiled kernel at other sizes (an mv is an mm with N = 1).

Why not one kernel per rank: the kernel language has fixed ranks and no branches; a size of 1
costs a masked block where a hand-written mv would not pay it, and saves the model writing
(and the harness checking) the same arithmetic several times.

Numbers: a ``number`` input outside the elementwise view is broadcast to its declared shape,
whose sizes the other tensors give (a Python number, a 0-d tensor or a tensor that broadcasts
to it, as ``torch.sub(s, other)`` accepts). A call whose every tensor argument is a number
computes in f64/i64 where the dtype variable allows (Python's own float and int) and returns
Python numbers, as an operator written with Python arithmetic does.

Preconditions: a ``raises`` output is a bool tensor the kernel writes (each program its own
elements, as any output); after the launch the call raises the named builtin exception with the
output's ``message`` when any element is true, before any result is returned or copied into
``out=``. Unwritten elements are true (the harness's fill), so a kernel that forgets to write
its check raises rather than passing silently.

Complex dtypes are not in the language (Triton has no complex type: a kernel would have to
carry real and imaginary parts as two tensors), so a complex argument is refused with that
reason (``unsupported_argument``).
"""

from __future__ import annotations

import builtins
import math
from typing import Any, Callable, Mapping, Sequence

from kernelgen.lang import nodes as L
from kernelgen.check.checked import broadcast_shapes
from kernelgen.errors import Diagnostic, HostError

# Roles whose argument is an int/number or a tuple of them, one name per item.
TUPLE_ROLES = ("ints", "floats")

COMPLEX_REASON = ("complex dtypes are not supported: the kernel language (like Triton) has no complex type; "
                  "pass the real and imaginary parts as separate real tensors")


def _bad(path: str, message: str) -> Diagnostic:
    return Diagnostic(path, "bad_signature", message)


# -- the checker's part ------------------------------------------------------------------------


def signature_problems(kernel: L.Kernel) -> list[Diagnostic]:
    """Batch dims, optional dims, numbers, int tuples and preconditions that do not fit."""
    problems: list[Diagnostic] = []
    batch_names: dict[str, str] = {}
    tensors = [(i, inp) for i, inp in enumerate(kernel.inputs) if inp.is_plain and inp.shape is not None]
    for i, inp in enumerate(kernel.inputs):
        path = f"/inputs/{i}"
        if isinstance(inp.default, list) and inp.role not in TUPLE_ROLES:
            problems.append(_bad(f"{path}/default", "a list default goes with role 'ints' or 'floats'"))
        if inp.items is not None and inp.role not in TUPLE_ROLES:
            problems.append(_bad(f"{path}/items", "'items' goes with role 'ints' or 'floats'"))
        if inp.role in TUPLE_ROLES:
            problems += _ints_problems(inp, path)
        if not (inp.batch or inp.optional_dims):
            continue
        if not inp.is_plain or inp.shape is None or inp.number:
            problems.append(_bad(path, "'batch' and 'optional_dims' go with tensor inputs that are not 'number'"))
            continue
        if kernel.view is not None:
            problems.append(_bad(path, f"'batch' and 'optional_dims' go with view null (the {kernel.view} view "
                                       "adapts ranks itself)"))
        core = inp.shape[1:] if inp.batch else inp.shape
        if inp.batch:
            if not inp.shape or not isinstance(inp.shape[0], str):
                problems.append(_bad(f"{path}/shape", "a batch input's shape starts with its batch size name"))
                continue
            batch_names.setdefault(inp.shape[0], path)
        for j, name in enumerate(inp.optional_dims or []):
            if name not in core:
                problems.append(_bad(f"{path}/optional_dims/{j}", f"{name!r} is not a size of {inp.name}'s "
                                                                   f"{'core ' if inp.batch else ''}shape {core}"))
            elif (inp.optional_dims or []).count(name) > 1:
                problems.append(_bad(f"{path}/optional_dims/{j}", f"{name!r} is listed twice"))
        if inp.optional_dims and len(set(inp.optional_dims)) >= len(core):
            problems.append(_bad(f"{path}/optional_dims", "a call must keep at least one dim of the shape"))
    if len(batch_names) > 1:
        problems.append(_bad("/inputs", f"batched inputs share one batch size name, got {sorted(batch_names)}"))
    for name, path in batch_names.items():
        for i, inp in tensors:
            if name in (inp.shape[1:] if inp.batch else inp.shape):
                problems.append(_bad(f"/inputs/{i}/shape", f"batch size {name!r} is a leading dim of batch inputs only"))
    for i, inp in tensors:
        if inp.number and kernel.view != "elementwise":
            givers = {d for _, other in tensors if not other.number for d in other.shape}
            for j, dim in enumerate(inp.shape):
                if isinstance(dim, str) and dim not in givers:
                    problems.append(_bad(f"/inputs/{i}/shape/{j}", f"size {dim!r} of number input {inp.name!r} is in "
                                                                     "no shape of a tensor input that is not 'number'"))
    problems += _output_problems(kernel, batch_names)
    return problems


def _ints_problems(inp: L.Input, path: str) -> list[Diagnostic]:
    """An ints or floats argument's items and default."""
    kind = "an int" if inp.role == "ints" else "a number"
    if not inp.items:
        return [_bad(path, f"{'an' if inp.role == 'ints' else 'a'} {inp.role} argument names a "
                           f"{'meta' if inp.role == 'ints' else 'scalar'} per item in 'items'")]
    problems = []
    if len(set(inp.items)) != len(inp.items):
        problems.append(_bad(f"{path}/items", f"items {inp.items} name a value twice"))
    if inp.optional and inp.default is not None and not _items_of(inp, inp.default):
        problems.append(_bad(f"{path}/default", f"the default is {kind} or {len(inp.items)} of them, "
                                                f"got {inp.default!r}"))
    return problems


def _output_problems(kernel: L.Kernel, batch_names: Mapping[str, str]) -> list[Diagnostic]:
    problems = []
    for j, out in enumerate(kernel.outputs):
        path = f"/outputs/{j}"
        if out.batch and (not out.shape or out.shape[0] not in batch_names):
            problems.append(_bad(f"{path}/shape", f"a batch output's shape starts with the batch inputs' size name "
                                                  f"({', '.join(batch_names) or 'no input is batch'})"))
        if out.raises is not None:
            if out.dtype != "bool":
                problems.append(_bad(f"{path}/dtype", "a 'raises' output is bool (true: the precondition fails)"))
            if not out.message:
                problems.append(_bad(f"{path}/message", "a 'raises' output needs the exception's 'message'"))
            if out.batch:
                problems.append(_bad(f"{path}/batch", "a 'raises' output is not returned, so not batched"))
        elif out.message is not None:
            problems.append(_bad(f"{path}/message", "'message' goes with 'raises'"))
    if all(out.raises is not None for out in kernel.outputs):
        problems.append(_bad("/outputs", "every output is a 'raises' check: the call would return nothing"))
    return problems


def returned(kernel: L.Kernel) -> list[L.Output]:
    """The outputs a call returns (not the ``raises`` checks)."""
    return [out for out in kernel.outputs if out.raises is None]


# -- the wrapper's part ------------------------------------------------------------------------


def ints_of(value: Any, count: int) -> tuple[int, ...] | None:
    """``value`` as ``count`` ints (an int fills every item, as torch's ``_pair``); None if it is not."""
    def is_int(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    if is_int(value):
        return (value,) * count
    if isinstance(value, (tuple, list)) and len(value) == count and all(is_int(v) for v in value):
        return tuple(value)
    return None


def floats_of(value: Any, count: int) -> tuple[float, ...] | None:
    """``value`` as ``count`` floats (a number fills every item, as an int does ints); None if it is not."""
    def is_number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if is_number(value):
        return (float(value),) * count
    if isinstance(value, (tuple, list)) and len(value) == count and all(is_number(v) for v in value):
        return tuple(float(v) for v in value)
    return None


def _items_of(inp: L.Input, value: Any) -> tuple[Any, ...] | None:
    return (ints_of if inp.role == "ints" else floats_of)(value, len(inp.items or ()))


def bind_ints(inp: L.Input, index: int, value: Any) -> dict[str, Any]:
    """A role ``ints`` argument's meta values, one per item, or a role ``floats`` argument's
    scalars (with the presence flag's meta, where it has one)."""
    if value is None and inp.present is not None:  # an optional tuple left out
        left = 1 if inp.role == "ints" else 0.0
        return {**{item: left for item in inp.items or ()}, inp.present: 0}
    items = _items_of(inp, value)
    if items is None:
        count, kind = len(inp.items or ()), "int" if inp.role == "ints" else "number"
        raise HostError(Diagnostic(f"/inputs/{index}", "bad_arguments",
                                   f"{inp.name} takes an {kind} or {count} {kind}s (a tuple or list), got {value!r}"))
    if inp.role == "ints" and any(not -(2**31) <= v < 2**31 for v in items):
        raise HostError(Diagnostic(f"/inputs/{index}", "bad_arguments", f"{inp.name}={value!r} does not fit in i32"))
    return {**dict(zip(inp.items or (), items)), **({inp.present: 1} if inp.present is not None else {})}


def refuse_complex(name: str, index: int, value: Any) -> None:
    """A complex tensor, number or dtype is refused with the reason (see the module docstring)."""
    import torch

    complex_value = (isinstance(value, complex) or (isinstance(value, torch.Tensor) and value.is_complex())
                     or (isinstance(value, torch.dtype) and value.is_complex))
    if complex_value:
        raise HostError(Diagnostic(f"/inputs/{index}", "unsupported_argument", f"{name}: {COMPLEX_REASON}"))


def layout(inp: L.Input) -> str:
    """The shapes a batch or optional-dims input takes, as an error message shows them."""
    core = list(inp.shape[1:] if inp.batch else inp.shape)
    shapes = [core]
    if inp.optional_dims:
        shapes.append([d for d in core if d not in inp.optional_dims])
    lead = "..., " if inp.batch else ""
    return " or ".join("[" + lead + ", ".join(map(str, s)) + "]" for s in shapes)


def apply_batches(kernel: L.Kernel, values: dict[str, Any]) -> tuple[dict[str, Any], Callable[[dict[str, Any]], dict[str, Any]]]:
    """The inputs as the kernel sees them (loop dims flattened, left-out dims as 1) and the
    function that shapes its outputs back (loop dims restored, left-out dims dropped)."""
    viewed = dict(values)
    loops: dict[str, tuple[int, ...]] = {}
    cores: dict[str, tuple[int, ...]] = {}
    dropped: set[str] = set()
    for index, inp in enumerate(kernel.inputs):
        if not (inp.batch or inp.optional_dims) or inp.name not in values:
            continue
        tensor = values[inp.name]
        core = list(inp.shape[1:] if inp.batch else inp.shape)
        rank = tensor.dim()
        kept = [d for d in core if d not in (inp.optional_dims or ())]
        if rank >= len(core) and (inp.batch or rank == len(core)):
            lead, present = tensor.shape[:rank - len(core)], tuple(tensor.shape[rank - len(core):])
        elif inp.optional_dims and rank == len(kept):
            lead, dropped_here = (), [d for d in core if d in inp.optional_dims]
            dropped.update(dropped_here)
            shown = iter(tensor.shape)
            present = tuple(1 if d in inp.optional_dims else next(shown) for d in core)
        else:
            raise HostError(Diagnostic(f"/inputs/{index}", "bad_arguments",
                                       f"{inp.name} has rank {rank}; the kernel takes {layout(inp)}"))
        if inp.batch:
            loops[inp.name] = tuple(lead)
        cores[inp.name] = present
    batch = _broadcast_loops(kernel, loops)
    for name, lead in loops.items():
        target = batch + cores[name]
        tensor = values[name].reshape(lead + cores[name]).expand(target)
        viewed[name] = tensor.reshape((math.prod(batch),) + cores[name])
    for name, core in cores.items():
        if name not in loops:
            viewed[name] = values[name].reshape(core)

    def finish(outputs: dict[str, Any]) -> dict[str, Any]:
        shaped = dict(outputs)
        for out in returned(kernel):
            tensor = outputs[out.name]
            keep = [j for j, d in enumerate(out.shape) if not (isinstance(d, str) and d in dropped)]
            shape = [tensor.shape[j] for j in keep]
            if out.batch:
                shape = list(batch) + shape[1:]
            shaped[out.name] = tensor.reshape(shape)
        return shaped

    return viewed, finish


def _broadcast_loops(kernel: L.Kernel, loops: Mapping[str, tuple[int, ...]]) -> tuple[int, ...]:
    result: tuple[int, ...] | None = ()
    for lead in loops.values():
        result = broadcast_shapes(result, lead) if result is not None else None
    if result is None:
        shown = ", ".join(f"{name} {list(lead)}" for name, lead in loops.items())
        index = next(i for i, inp in enumerate(kernel.inputs) if inp.name in loops)
        raise HostError(Diagnostic(f"/inputs/{index}", "bad_arguments",
                                   f"the batch dims do not broadcast: {shown}"))
    return result


def raise_preconditions(kernel: L.Kernel, outputs: Mapping[str, Any]) -> None:
    """Raise the first failed precondition's exception (see the module docstring)."""
    for out in kernel.outputs:
        if out.raises is not None and bool(outputs[out.name].any()):
            raise getattr(builtins, out.raises)(out.message)


def python_numbers(values: Sequence[Any]) -> str | None:
    """The dtype Python computes plain numbers in (float: f64, int: i64, bool), None if any is not one."""
    if not values or not all(isinstance(v, (bool, int, float)) for v in values):
        return None
    if any(isinstance(v, float) for v in values):
        return "f64"
    return "i64" if any(not isinstance(v, bool) for v in values) else "bool"
