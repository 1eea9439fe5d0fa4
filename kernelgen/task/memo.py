"""A draw's inputs and its reference's results, kept per process.

One draw asks for them several times: its inputs for the check and again, as drawn, for the atol's
growth (an extreme draw against the ordinary draw of its sizes), an order's overflow test or an
offset's rounding; its reference for the scale an extreme or scaled draw takes (the outputs before
and after scaling), that growth, the comparison itself and the overflow test. And kernels of one
task judged in one process (the red-team catalogue, a model's repairs) share most of their draws.
On the CPU these are often most of a draw's time (attention's f64 softmax at S = 8192 takes a
second a call). So each is kept, least recently used first out past :data:`MEMO_BYTES`, and every
caller gets its own copies (a kernel may write its inputs). Inputs are keyed by what draws them
(the task's whole definition, the sizes, the seed and the draw's options); a reference's results
by its code and its inputs' contents (dtype, shape, strides and a digest of the bytes: equal keys
are equal calls), on the CPU only: on a GPU the reference takes milliseconds and a digest would
copy the inputs back.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any, Callable, Hashable, Mapping, TypeVar

import torch

# The bytes kept, inputs and results together: the least recently used go first past it, and a
# value past a quarter of it is not kept.
MEMO_BYTES = 1 << 29

T = TypeVar("T")
_kept: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
_size = 0


def _copied(value: T) -> T:
    """Tensors cloned (in a dict, a tuple or alone), anything else as it is."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, dict):
        return {name: _copied(v) for name, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_copied(v) for v in value)
    return value


def _nbytes(value: Any) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    if isinstance(value, tuple):
        return sum(_nbytes(v) for v in value)
    return 0


def _remembered(key: Hashable, make: Callable[[], T]) -> T:
    """``make()``'s value kept under ``key`` (copies, each time)."""
    global _size
    if key in _kept:
        _kept.move_to_end(key)
        return _copied(_kept[key][0])
    value = make()
    size = _nbytes(value)
    if size <= MEMO_BYTES // 4:
        _kept[key] = (_copied(value), size)
        _size += size
        while _size > MEMO_BYTES:
            _, (_, dropped) = _kept.popitem(last=False)
            _size -= dropped
    return value


def _content(value: Any) -> Hashable | None:
    """What an input contributes to a reference's key; None for a value kept out (a tensor off
    the CPU, a value of another kind)."""
    if isinstance(value, torch.Tensor):
        if value.device.type != "cpu" or value.requires_grad:
            return None
        flat = value.detach().contiguous().reshape(-1).view(torch.uint8)
        digest = hashlib.blake2b(flat.numpy(), digest_size=16).digest()  # read in place, not copied
        return ("tensor", str(value.dtype), tuple(value.shape), value.stride(), digest)
    if value is None or isinstance(value, (bool, int, float, str, torch.dtype)):
        return (type(value).__name__, repr(value))
    return None


def remembered_reference(code: str, inputs: Mapping[str, Any],
                         call: Callable[[], tuple[dict[str, Any], dict[str, Any]]]
                         ) -> tuple[dict[str, Any], dict[str, Any]]:
    """``call()``'s result (the reference's outputs and its copies of the inputs after it) for the
    reference ``code`` on ``inputs``, from an earlier call on equal inputs where one was kept."""
    parts = [_content(v) for v in inputs.values()]
    if any(p is None for p in parts):
        return call()
    return _remembered(("reference", code, tuple(inputs), tuple(parts)), call)


def remembered_inputs(definition: str, sizes: Mapping[str, int], options: tuple[Any, ...],
                      draw: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``draw()``'s inputs for the task ``definition`` (its whole text) at ``sizes`` with
    ``options`` (the seed and the draw's own), from an earlier draw of the same where one was kept."""
    key = ("inputs", hashlib.blake2b(definition.encode(), digest_size=16).digest(),
           tuple(sorted(sizes.items())), options)
    return _remembered(key, draw)
