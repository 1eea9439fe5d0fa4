"""Lowering of operations across a block to TTIR: scans, sort, top-k, gather, histogram.

``lw`` is :mod:`kernelgen.lower.lowering`'s ``_Lowering`` (its builder, constants, broadcasting and
combine regions); this module does not import it back. What each becomes:

* Scans are ``tt.scan`` with a combine region (``arith.addf``/``addi``, ``mulf``/``muli``, the
  NaN-propagating ``maximumf``/``minimumf`` or ``maxsi``/``minsi``), as ``tl.cumsum`` and
  ``tl.associative_scan`` build it; f16/bf16 maxima run in f32 (exact), as reductions do. In a
  kernel with a gather, a scan runs on its operand with a leading axis of 1 added and taken
  off again by a reduction (:func:`walls_off_scans` says why).
* Join is ``tt.join`` of the operands broadcast to one shape (two scalars as ``[1]`` blocks, the
  ``[1, 2]`` result reshaped to ``[2]``), as ``tl.join`` builds it.
* Gather is ``tt.gather``, histogram ``tt.histogram``, as ``tl.gather`` and ``tl.histogram``
  build them; a mask is not passed to ``tt.histogram`` (:func:`masked_histogram` says why).
* Triton has no sort op: ``tl.sort``/``tl.topk`` are Python in ``triton.language.standard``, a
  bitonic network on the block reshaped to a hypercube ``[2] * log2(numel)`` (a partner is
  ``x ^ xor_sum(x, axis, keep_dims)``, a compare-and-swap a ``select``; top-k's later stages take
  ``max`` over one hypercube axis, then merge). :func:`bitonic` builds the same ops. It sorts
  the integer order key of :mod:`kernelgen.interp.blocks` (floats bitcast, NaN canonical,
  negative magnitudes flipped), so the GPU's order is the interpreter's bit for bit; argsort and
  argtopk sort ``key << 32 | index`` (index ``n-1-i`` when descending, so ties keep index order)
  as i64 and keep the low 32 bits.
"""

from __future__ import annotations

from typing import Any

from kernelgen.lang import nodes as L
from kernelgen.check.checked import FLOAT_DTYPES, CheckedKernel, ValueType, child
from kernelgen.check.sequence import nodes

_KEY = {"f32": (32, 0x7FC00000, 0x7FFFFFFF), "f64": (64, 0x7FF8000000000000, 0x7FFFFFFFFFFFFFFF),
        "f16": (16, 0x7E00, 0x7FFF), "bf16": (16, 0x7FC0, 0x7FFF)}
_INT_WIDTH = {"i32": 32, "i64": 64}


def _log2(n: int) -> int:
    return n.bit_length() - 1


def _int_type(lw: Any, width: int, shape: tuple[int, ...]) -> Any:
    b = lw.builder
    element = {16: b.get_int16_ty, 32: b.get_int32_ty, 64: b.get_int64_ty}[width]()
    return b.get_block_ty(element, list(shape)) if shape else element


def _int_constant(lw: Any, value: int, width: int, shape: tuple[int, ...]) -> Any:
    b = lw.builder
    scalar = {16: b.get_int16, 32: b.get_int32, 64: b.get_int64}[width](value)
    return b.create_splat(_int_type(lw, width, shape), scalar) if shape else scalar


# Triton 3.6 gives a tt.gather's source, index and result a layout of its own
# (OptimizeThreadLocality, setOptimizedGatherLayout: sizePerThread along the gather axis is the
# SOURCE's extent there over its threads, 16 for a [1, 512] source), and RemoveLayoutConversions
# carries that layout to the ops around the gather's result. A tt.scan that ends up with it on a
# smaller block (index [1, 1]..[4, 4], say: fewer elements along a dimension than one thread's
# share) fails ConvertTritonGPUToLLVM ("Assertion `numScanBlocks * numParallelBlocks *
# parallelElementsPerThread * scanElementsPerThreads == srcValues.size()' failed" in
# ScanOpToLLVM.cpp): a random kernel scanned a value that was also added to a gather's result.
# Reductions, sorts and elementwise ops take the layout fine. So in a kernel with a gather, a
# scan is walled off from the layouts around it: its operand gets a leading axis of 1
# (tt.expand_dims takes a slice of its result's layout, so no blocked layout flows in) and
# the result loses it through a tt.reduce over that axis whose combine keeps its first operand
# (exact for every dtype; a reduce's result is a slice layout, so none flows back either).
# Kernels without a gather keep the plain tt.scan. The emitted Triton does the same
# (:func:`kernelgen.emit.blocks.scan_call`).


def walls_off_scans(checked: CheckedKernel) -> bool:
    """Whether ``checked``'s scans are walled off from a gather's layout (the comment above)."""
    return any(isinstance(node, L.Gather) for node, _ in nodes(checked.kernel.body or [], "/body"))


def scan(lw: Any, e: L.Scan, x: Any, t: ValueType, walled: bool = False) -> Any:
    """``x`` (of ``t``, the result's type) scanned along ``e.axis``; ``walled``: with a leading
    axis of 1 around the scan (:func:`walls_off_scans`)."""
    b = lw.builder
    values = t
    if t.dtype in ("f16", "bf16"):  # only cummax/cummin take them: exact in f32
        x, values = lw.widen_float(x, t), ValueType("f32", t.shape)
    dtype = values.dtype
    element = lw.scalar_type(dtype)

    def combine(args: list[Any]) -> list[Any]:
        a, c = args
        if e.op == "cumsum":
            return [b.create_fadd(a, c) if dtype in FLOAT_DTYPES else b.create_add(a, c)]
        if e.op == "cumprod":
            return [b.create_fmul(a, c) if dtype in FLOAT_DTYPES else b.create_mul(a, c)]
        return [lw.extremum("maximum" if e.op == "cummax" else "minimum", a, c, ValueType(dtype))]

    if walled:
        x = b.create_expand_dims(x, 0)
    op = b.create_scan([x], e.axis + 1 if walled else e.axis, e.reverse)
    lw.combine_region(op, [element, element], combine, returns=b.create_scan_ret)
    result = op.get_result(0)
    if walled:
        first = b.create_reduce([result], 0)
        lw.combine_region(first, [element, element], lambda args: [args[0]])
        result = first.get_result(0)
    return lw.narrow_float(result, t.shape, t.dtype) if values.dtype != t.dtype else result


# -- order keys --------------------------------------------------------------------------------


def order_key(lw: Any, x: Any, t: ValueType) -> tuple[Any, int]:
    """The integer order key of ``x`` and its width (integers are their own key)."""
    if t.dtype not in _KEY:
        return x, _INT_WIDTH[t.dtype]
    b = lw.builder
    width, nan, magnitude = _KEY[t.dtype]
    bits = b.create_bitcast(x, _int_type(lw, width, t.shape))
    bits = b.create_select(b.create_fcmpUNE(x, x), _int_constant(lw, nan, width, t.shape), bits)
    return _flip_negative(lw, bits, width, t.shape), width


def _flip_negative(lw: Any, bits: Any, width: int, shape: tuple[int, ...]) -> Any:
    """``bits ^ ((bits >> (width - 1)) & magnitude)``: its own inverse."""
    b = lw.builder
    sign = b.create_ashr(bits, _int_constant(lw, width - 1, width, shape))
    return b.create_xor(bits, b.create_and(sign, _int_constant(lw, (1 << (width - 1)) - 1, width, shape)))


def from_order_key(lw: Any, key: Any, t: ValueType) -> Any:
    """Values of ``t.dtype`` (shape ``t.shape``) from their order keys."""
    if t.dtype not in _KEY:
        return key
    width = _KEY[t.dtype][0]
    return lw.builder.create_bitcast(_flip_negative(lw, key, width, t.shape), lw.ir_type(t))


# -- the bitonic network (triton.language.standard.sort_impl) -----------------------------------


def _indicator(lw: Any, rank: int, j: int) -> Any:
    """The i1 block [0, 1] on hypercube axis ``rank - j - 1`` (size 1 elsewhere)."""
    b = lw.builder
    pair = b.create_make_range(b.get_block_ty(b.get_int32_ty(), [2]), 0, 2)
    shape = [1] * (rank - j - 1) + [2] + [1] * j
    if rank > 1:
        pair = b.create_reshape(pair, shape, False)
    return b.create_icmpNE(pair, _int_constant(lw, 0, 32, tuple(shape)))


def _reduce_axis(lw: Any, x: Any, width: int, shape: tuple[int, ...], axis: int, how: str) -> Any:
    """One-operand ``tt.reduce`` of an integer block along ``axis``: xor, max or min."""
    b = lw.builder
    element = _int_type(lw, width, ())
    make = {"xor": b.create_xor, "max": b.create_maxsi, "min": b.create_minsi}[how]
    reduce = b.create_reduce([x], axis)
    lw.combine_region(reduce, [element, element], lambda args: [make(*args)])
    return reduce.get_result(0)


def _spread(lw: Any, value: Any, width: int, shape: tuple[int, ...], axis: int) -> Any:
    """A reduction over ``axis`` broadcast back to ``shape`` (keep_dims, then broadcast)."""
    b = lw.builder
    if len(shape) == 1:
        return b.create_splat(_int_type(lw, width, shape), value)
    return b.create_broadcast(b.create_expand_dims(value, axis), list(shape))


def _broadcast_bool(lw: Any, value: Any, shape: tuple[int, ...]) -> Any:
    """An indicator (size 2 on one hypercube axis) broadcast to the hypercube ``shape``."""
    return lw.builder.create_broadcast(value, list(shape)) if len(shape) > 1 else value


def _compare_and_swap(lw: Any, x: Any, width: int, rank: int, flip: Any, i: int) -> Any:
    b = lw.builder
    shape = (2,) * rank
    axis = rank - 1 - i
    partner = b.create_xor(x, _spread(lw, _reduce_axis(lw, x, width, shape, axis, "xor"), width, shape, axis))
    swap = b.create_xor(b.create_icmpSGT(x, partner), _broadcast_bool(lw, _indicator(lw, rank, i), shape))
    if flip is True:
        swap = b.create_xor(swap, b.create_splat(b.get_block_ty(b.get_int1_ty(), list(shape)), b.get_int1(True)))
    elif flip is not False:
        swap = b.create_xor(swap, _broadcast_bool(lw, flip, shape))
    return b.create_select(swap, partner, x)


def _merge(lw: Any, x: Any, width: int, rank: int, stage: int, order: int) -> Any:
    """``_bitonic_merge_hypercube``: order 0 ascending, 1 descending, 2 alternating."""
    flip = _indicator(lw, rank, stage) if order == 2 else bool(order)
    for i in range(stage):
        x = _compare_and_swap(lw, x, width, rank, flip, stage - 1 - i)
    return x


def bitonic(lw: Any, x: Any, width: int, shape: tuple[int, ...], descending: bool, k: int | None = None) -> Any:
    """``sort_impl``: integers ``x`` of ``shape`` sorted along the last axis, or its top ``k``
    (``descending``), of shape ``shape[:-1] + (k,)``."""
    b = lw.builder
    numel = 1
    for d in shape:
        numel *= d
    rank = _log2(numel)
    log_n = _log2(shape[-1])
    log_k = log_n if k is None else _log2(k)
    cube = [2] * rank if rank else [1]
    h = x if list(shape) == cube else b.create_reshape(x, cube, False)
    for i in range(1, log_k + 1):
        h = _merge(lw, h, width, rank, i, 2 if i < log_n else int(descending))
    for i in range(log_k + 1, log_n + 1):
        h = _reduce_axis(lw, h, width, (2,) * rank, rank - 1 - log_k, "max" if descending else "min")
        rank -= 1
        if rank == 0:  # a scalar: the block [1] again
            h = b.create_splat(_int_type(lw, width, (1,)), h)
        h = _merge(lw, h, width, rank, log_k, 2 if i < log_n else int(descending))
    cube = [2] * rank if rank else [1]
    out = list(shape[:-1]) + [1 << log_k]
    return h if out == cube else b.create_reshape(h, out, False)


def sort(lw: Any, op: str, x: Any, t: ValueType, descending: bool, k: int | None = None) -> Any:
    """``sort``/``argsort`` of ``x`` (of ``t``) along the last axis, or (``k``) ``topk``/``argtopk``."""
    b = lw.builder
    key, width = order_key(lw, x, t)
    if op in ("sort", "topk"):
        values = bitonic(lw, key, width, t.shape, descending, k)
        out = t.with_shape(t.shape[:-1] + ((k or t.shape[-1]),))
        return from_order_key(lw, values, out)
    n = t.shape[-1]
    index = lw.axis_index(t.shape, len(t.shape) - 1)
    if descending:
        index = b.create_sub(_int_constant(lw, n - 1, 32, t.shape), index)
    packed = b.create_or(b.create_shl(b.create_int_cast(key, _int_type(lw, 64, t.shape), True),
                                      _int_constant(lw, 32, 64, t.shape)),
                         b.create_int_cast(index, _int_type(lw, 64, t.shape), False))
    ordered = bitonic(lw, packed, 64, t.shape, descending, k)
    out_shape = t.shape[:-1] + ((k or n),)
    low = b.create_int_cast(ordered, _int_type(lw, 32, out_shape), True)
    return b.create_sub(_int_constant(lw, n - 1, 32, out_shape), low) if descending else low


# Triton 3.6's layout pass for tt.gather (OptimizeThreadLocality, setOptimizedGatherLayout)
# aborts the process, "Assertion `GatherLoweringHelper(op).isWarpLocal()' failed", when the
# source has fewer elements than the program's threads and it runs on more than one warp (e.g.
# a [2, 32] source and a [32, 32] index at 4 warps). A source below the threads of the most
# warps a kernel can have (16, also under tuning) is therefore repeated along the gather axis
# to that size: indices stay below the original extent, so they read the same values.
GATHER_MIN_SOURCE = 16 * 32


def masked_histogram(lw: Any, x: Any, mask: Any, bins: int, shape: tuple[int, ...]) -> Any:
    """The histogram of ``x`` where ``mask``: lanes left out count as bin 0, then bin 0 takes
    back how many were left out.

    Triton 3.6's combine pass marks a 1-D ``tt.reshape`` whose only users are reductions or
    histograms as free to reorder its elements, each operand on its own: a histogram of values
    reshaped from a [8, 512] tile under a mask reshaped alike counted lanes against another
    lane's mask bit on an H200 (37 of 256 bins wrong, tests/redteam's bincount control). Here the
    mask meets the values in an elementwise select first, so no reshape feeding it may reorder,
    and the count of left-out lanes is an order-free sum."""
    b = lw.builder
    zero, one = lw.constant(0, "i32", shape), lw.constant(1, "i32", shape)
    counted = b.create_histogram(b.create_select(mask, x, zero), bins, None)
    left_out = lw.reduce_one("sum", b.create_select(mask, zero, one), ValueType("i32", shape), 0)
    first_bin = b.create_icmpEQ(lw.axis_index((bins,), 0), lw.constant(0, "i32", (bins,)))
    taken_back = b.create_select(first_bin, lw.splat(left_out, ValueType("i32"), (bins,)),
                                 lw.constant(0, "i32", (bins,)))
    return b.create_sub(counted, taken_back)


def gather_repeats(shape: tuple[int, ...]) -> int:
    """How many times a gather's source of ``shape`` is repeated along its axis (1: as is)."""
    numel = 1
    for d in shape:
        numel *= d
    return 1 if numel >= GATHER_MIN_SOURCE else -(-GATHER_MIN_SOURCE // numel)


def widened_gather_source(lw: Any, src: Any, shape: tuple[int, ...], axis: int) -> Any:
    """``src`` repeated along ``axis`` as :data:`GATHER_MIN_SOURCE` explains."""
    k = gather_repeats(shape)
    if k == 1:
        return src
    b = lw.builder
    wide = list(shape[:axis]) + [k] + list(shape[axis:])
    repeated = b.create_broadcast(b.create_expand_dims(src, axis), wide)
    return b.create_reshape(repeated, list(shape[:axis]) + [k * shape[axis]] + list(shape[axis + 1:]), False)


class JoinLowering:
    """``join``: a mixin of :class:`kernelgen.lower.lowering._Lowering` (it uses its operands)."""

    def _join(self, e: L.Join, path: str, env) -> Any:
        t, dtype = self.types[path], self.checked.operand_dtypes[path]
        shape = t.shape[:-1] or (1,)  # TTIR joins blocks only: scalars as [1]
        a, c = (self.operand(getattr(e, f), child(path, f), env, dtype, shape) for f in ("lhs", "rhs"))
        self.at(path)
        joined = self.builder.create_join(a, c)
        return joined if t.shape[:-1] else self.builder.create_reshape(joined, [2], False)
