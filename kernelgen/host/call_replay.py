"""Repeated calls of a wrapper, bound without binding again.

Binding a call (:func:`kernelgen.host.wrapper.bind_call`: signature, dtype promotion, views,
optional tensors) costs 15-35 µs of Python on the H200's host, as long as a small kernel
runs, and benchmarks call a wrapper again and again with the same kinds of arguments.
Binding reads of a call only what :func:`call_signature` keys (each tensor's type, shape,
strides, dtype and device; each other argument's type and value), except the values of
tensors, which it reads in one place: a one-element tensor passed for a number.

:func:`replay_of` works out, from one bound call, how every later call with the same signature
binds: each kernel argument is either the caller's tensor viewed at the bound shape (the
binding made no copy) or a value the signature alone decides (a number, the zeros of an
omitted tensor, the tensor of a number; inputs are read-only, so one such tensor serves every
call). An output's ``into`` target is the later call's own tensor: its finish is made for it
(:attr:`~kernelgen.host.wrapper.BoundCall.finish_into`), so an in-place operator (an aliasing
output above all, whose whole point is a call that costs its few stores) replays too. A call
whose binding copied a tensor (a dtype conversion, a broadcast, a non-contiguous input), read a
tensor's value, or returns through ``out=`` or ``inplace=`` is not replayed: it binds afresh
every time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from kernelgen.lang import nodes as L
from kernelgen.host.wrapper import BoundCall, bind_arguments

Signature = tuple[tuple[Any, ...], tuple[tuple[str, Any], ...]]


class _NotKeyed(Exception):
    """An argument of a kind :func:`call_signature` does not key."""


def call_signature(args: Sequence[Any], kwargs: Mapping[str, Any]) -> Signature | None:
    """What binding reads of a call, hashable; None when an argument is of a kind it does not
    key (that call is bound afresh)."""
    try:
        return tuple(_key(a) for a in args), tuple((name, _key(v)) for name, v in kwargs.items())
    except _NotKeyed:
        return None


def _key(value: Any) -> Any:
    import torch

    kind = type(value)
    if isinstance(value, torch.Tensor):
        if value.layout is not torch.strided:  # sparse and the like have no strides: bound afresh
            raise _NotKeyed(value.layout)
        return kind, value.shape, value.stride(), value.dtype, value.device
    if kind is float:
        return kind, value.hex()  # as values, -0.0 == 0.0 and NaN != NaN
    if kind in (bool, int, str, type(None), torch.dtype):
        return kind, value
    if kind in (tuple, list):
        return kind, tuple(_key(v) for v in value)
    raise _NotKeyed(kind)


@dataclass(frozen=True)
class Replay:
    """How a call with one signature binds: :meth:`bind` gives the :class:`BoundCall` that
    :func:`~kernelgen.host.wrapper.bind_call` would, without working it out again."""

    # (input name, positional index or keyword, shape): the caller's tensor, viewed
    views: tuple[tuple[str, int | str, tuple[int, ...]], ...]
    constants: tuple[tuple[str, Any], ...]
    order: tuple[str, ...]  # the bound arguments' order, as bind_call gives them
    meta: tuple[tuple[str, int], ...]
    dtypes: tuple[tuple[str, str], ...]
    finish: Any  # the first call's, where it has no in-place target; else BoundCall.finish_into
    notes: tuple[str, ...]
    targets: tuple[tuple[str, int | str], ...] = ()  # (input name, positional index or keyword)

    def bind(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> BoundCall:
        values = dict(self.constants)
        for name, where, shape in self.views:
            value = args[where] if isinstance(where, int) else kwargs[where]
            values[name] = value.view(shape)
        finish = self.finish({name: args[where] if isinstance(where, int) else kwargs[where]
                              for name, where in self.targets}) if self.targets else self.finish
        return BoundCall({name: values[name] for name in self.order}, dict(self.meta), finish,
                         list(self.notes), dict(self.dtypes))

    def with_constants(self, constants: Mapping[str, Any]) -> Replay:
        """The same replay with these constants (the same values, moved to a call's device)."""
        return Replay(self.views, tuple((name, constants.get(name, value)) for name, value in self.constants),
                      self.order, self.meta, self.dtypes, self.finish, self.notes, self.targets)


def replay_of(kernel: L.Kernel, args: Sequence[Any], kwargs: Mapping[str, Any], call: BoundCall) -> Replay | None:
    """How later calls with the signature of ``args``/``kwargs`` (bound as ``call``) bind, or
    None where one of them may bind differently (see the module docstring)."""
    import torch

    bound = bind_arguments(kernel, args, kwargs)
    for inp in kernel.inputs:
        value = bound.get(inp.name)
        if inp.role == "out" and value is not None or \
                inp.role == "inplace" and value is not None and (type(value) not in (bool, int) or value):
            return None  # the result goes into this call's tensor
    names = [inp.name for inp in kernel.inputs]
    where: dict[str, int | str] = {names[index]: index for index in range(len(args))}
    where.update((name, name) for name in kwargs)
    # With no role inplace flag (a true one returned above), every into is a target.
    targets = tuple(sorted({(o.into, where[o.into]) for o in kernel.outputs if o.into is not None}, key=str))
    views: list[tuple[str, int | str, tuple[int, ...]]] = []
    constants: list[tuple[str, Any]] = []
    for name, value in call.args.items():
        passed = bound.get(name)
        if not isinstance(passed, torch.Tensor):
            constants.append((name, value))  # decided by the signature: the value is keyed
        elif isinstance(value, torch.Tensor) and _plain_view(value, passed):
            views.append((name, where[name], tuple(value.shape)))
        else:
            return None  # a copy of the tensor, or a number read from it
    return Replay(tuple(views), tuple(constants), tuple(call.args), tuple(call.meta.items()),
                  tuple(call.dtypes.items()), call.finish_into if targets else call.finish, tuple(call.notes), targets)


def _plain_view(value: Any, passed: Any) -> bool:
    """Whether ``value`` is ``passed`` itself at another shape (same memory, same layout)."""
    return (value.data_ptr() == passed.data_ptr() and value.dtype == passed.dtype and value.device == passed.device
            and value.numel() == passed.numel() and value.is_contiguous() and passed.is_contiguous())
