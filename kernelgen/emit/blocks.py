"""Triton Python for operations across a block: scans, sort, top-k, gather, histogram.

:mod:`kernelgen.emit.module` calls :func:`scan_call` and :func:`sort_call` with operands already
written; the text returned, and the jitted helpers it names (in :data:`HELPERS`), mean what
:mod:`kernelgen.interp.blocks` says:

* ``tl.cumsum``/``tl.cumprod`` as they are (f32, f64, i32, i64: Triton casts none of them);
  ``cummax``/``cummin`` are ``tl.associative_scan`` with the NaN-propagating maximum/minimum the
  max/min reductions use (Triton has no ``tl.cummax``). In a kernel with a gather, each scan
  runs on ``tl.expand_dims(x, 0)`` and ``tl.reduce(..., 0, _first_operand)`` takes that axis
  off, as the lowering does (:func:`kernelgen.lower.blocks.walls_off_scans`).
* ``tl.sort`` and ``tl.topk`` compare with ``>``, which orders neither NaN nor -0.0 against 0.0:
  floats are sorted as their integer order key (``_order_key``, ``_from_order_key``), as the
  lowering does. argsort and argtopk sort ``key << 32 | index`` (``_argsort``); ``tl.topk``
  returns values only in Triton 3.6 (``v, i = tl.topk(x, k)`` fails with "'tensor' object has no
  attribute 'values'"), and ``tl.topk(x, 1)`` where that is one element fails with "'dtype' object
  has no attribute 'numel'": a top-1 is emitted as ``tl.max`` of the keys.
* ``tl.gather`` as it is; ``tl.histogram`` unmasked, and with a mask ``_masked_histogram``:
  lanes left out count as bin 0, which takes back their number, as the lowering does
  (:func:`kernelgen.lower.blocks.masked_histogram` says why ``mask=`` is not passed).
"""

from __future__ import annotations

from kernelgen.lang import nodes as L
from kernelgen.lower.blocks import gather_repeats

# float dtype -> (its bits' Triton integer dtype, the canonical NaN's bits, the bits' width)
_KEYS = {"f32": ("tl.int32", 0x7FC00000, 32), "f64": ("tl.int64", 0x7FF8000000000000, 64),
         "f16": ("tl.int16", 0x7E00, 16), "bf16": ("tl.int16", 0x7FC0, 16)}
_FLOATS = {"f32": "tl.float32", "f64": "tl.float64", "f16": "tl.float16", "bf16": "tl.bfloat16"}

HELPERS: dict[str, str] = {
    "_masked_histogram": '''
@triton.jit
def _masked_histogram(x, BINS: tl.constexpr, mask):
    counted = tl.histogram(tl.where(mask, x, 0), BINS)
    left_out = tl.sum(tl.where(mask, 0, 1))
    return counted - tl.where(tl.arange(0, BINS) == 0, left_out, 0)
''',
    "_first_operand": '''
@triton.jit
def _first_operand(a, b):
    return a
''',
    "_order_key": '''
@triton.jit
def _order_key(x, FLOAT: tl.constexpr, INT: tl.constexpr, NAN: tl.constexpr, WIDTH: tl.constexpr):
    """A float's sort key: its bits as a signed integer, NaN made one NaN (above inf), negative
    values' magnitude bits flipped (-0.0 below 0.0). ``x`` is made FLOAT first (Triton widens
    some f16/bf16 results to f32); constants are typed (a Python int widens a 16-bit key)."""
    x = x.to(FLOAT)
    bits = tl.where(x != x, tl.full(x.shape, NAN, INT), x.to(INT, bitcast=True))
    sign = bits >> tl.full(x.shape, WIDTH - 1, INT)
    return bits ^ (sign & tl.full(x.shape, (1 << (WIDTH - 1)) - 1, INT))
''',
    "_from_order_key": '''
@triton.jit
def _from_order_key(key, INT: tl.constexpr, FLOAT: tl.constexpr, WIDTH: tl.constexpr):
    """The float whose _order_key is ``key`` (the map is its own inverse); ``key`` is made INT
    again first (tl.topk returns a 16-bit key as int32: tl.max widens it)."""
    key = key.to(INT)
    sign = key >> tl.full(key.shape, WIDTH - 1, INT)
    return (key ^ (sign & tl.full(key.shape, (1 << (WIDTH - 1)) - 1, INT))).to(FLOAT, bitcast=True)
''',
    "_argsort": '''
@triton.jit
def _argsort(key, N: tl.constexpr, DESCENDING: tl.constexpr, K: tl.constexpr):
    """Indices along the last axis in the order of the 32-bit ``key`` (the first K when K < N,
    descending): (key << 32 | index) sorted as int64, low 32 bits kept; the index is N-1-i when
    descending, so equal keys keep their index order either way."""
    index = tl.arange(0, N)
    if DESCENDING:
        index = N - 1 - index
    packed = (key.to(tl.int64) << 32) | index.to(tl.int64)
    if K == 1:  # tl.topk(x, 1) of a block with one result fails (it reduces to a scalar)
        packed = tl.max(packed, axis=len(packed.shape) - 1, keep_dims=True)
    elif K < N:
        packed = tl.topk(packed, K)
    else:
        packed = tl.sort(packed, descending=DESCENDING)
    low = packed.to(tl.int32)
    if DESCENDING:
        low = N - 1 - low
    return low
''',
}


def _key(x: str, dtype: str, helpers: set[str]) -> str:
    if dtype not in _KEYS:
        return x
    helpers.add("_order_key")
    int_dtype, nan, width = _KEYS[dtype]
    return f"_order_key({x}, {_FLOATS[dtype]}, {int_dtype}, {nan:#x}, {width})"


def _from_key(key: str, dtype: str, helpers: set[str]) -> str:
    if dtype not in _KEYS:
        return key
    helpers.add("_from_order_key")
    int_dtype, _, width = _KEYS[dtype]
    return f"_from_order_key({key}, {int_dtype}, {_FLOATS[dtype]}, {width})"


def scan_call(e: L.Scan, x: str, dtype: str, helpers: set[str], walled: bool = False) -> str:
    """The scan of ``x``; ``walled``: on ``x`` with a leading axis of 1, taken off by a
    reduction keeping the first operand, as the lowering does in a kernel with a gather
    (:func:`kernelgen.lower.blocks.walls_off_scans`: Triton 3.6 fails to lower a scan that
    takes on a gather's layout)."""
    reverse = ", reverse=True" if e.reverse else ""
    axis = e.axis + 1 if walled else e.axis
    if walled:
        x = f"tl.expand_dims({x}, 0)"
    if e.op in ("cumsum", "cumprod"):
        scanned = f"tl.{e.op}({x}, axis={axis}{reverse})"
    else:
        combine = "_maximum_propagating_nan" if e.op == "cummax" else "_minimum_propagating_nan"
        helpers.add(combine)
        scanned = f"tl.associative_scan({x}, {axis}, {combine}{reverse})"
    if not walled:
        return scanned
    helpers.add("_first_operand")
    return f"tl.reduce({scanned}, 0, _first_operand)"


def sort_call(op: str, x: str, dtype: str, shape: tuple[int, ...], descending: bool, k: int | None,
              helpers: set[str]) -> str:
    """``sort``/``argsort`` of ``x`` (of ``shape``) along the last axis, or ``topk``/``argtopk``."""
    rank, n = len(shape), shape[-1]
    key = _key(x, dtype, helpers)
    if op in ("argsort", "argtopk"):
        helpers.add("_argsort")
        return f"_argsort({key}, {n}, {descending}, {k or n})"
    if k == 1 and n > 1:  # tl.topk(x, 1) fails where the result is one element (a scalar inside)
        ordered = f"tl.max({key}, axis={rank - 1}, keep_dims=True)"
    elif k is not None and k < n:
        ordered = f"tl.topk({key}, {k})"
    else:
        ordered = f"tl.sort({key}, descending={descending})"
    return _from_key(ordered, dtype, helpers)


def widened_gather_source(src: str, shape: tuple[int, ...], axis: int) -> str:
    """A gather's source repeated along its axis as the lowering repeats it
    (:data:`kernelgen.lower.blocks.GATHER_MIN_SOURCE`: Triton 3.6 aborts on small sources)."""
    k = gather_repeats(shape)
    if k == 1:
        return src
    index = ", ".join(["None" if d == axis else ":" for d in range(len(shape) + 1)])
    wide = list(shape[:axis]) + [k] + list(shape[axis:])
    merged = list(shape[:axis]) + [k * shape[axis]] + list(shape[axis + 1:])
    return f"tl.reshape(tl.broadcast_to(({src})[{index}], {tuple(wide)}), {tuple(merged)})"
