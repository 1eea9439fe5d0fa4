"""The checker's rules for operations across a block: scans, sort, top-k, gather, histogram.

Each function types one node for :mod:`kernelgen.check.checker` (``checker`` is its ``_Checker``: this
module reads it through ``expr``, ``fail``, ``axis``, ``dim``, ``mask`` and ``adopt`` and does
not import it back). The limits are Triton 3.6's, stated where a model can act on them: sort and
top-k run along the last axis only (``tl.sort`` asserts "only minor dimension is currently
supported"), a histogram counts a 1-D block ("histogram only supports 1D input"), a gather's
index has its source's rank and dims ("index dim ... must match the corresponding source dim").
fp8 values are storage only here as elsewhere (``fp8_storage``: cast them to f16 or f32 first).
argsort and argtopk sort a 32-bit key packed with its index into an i64, so their values are 32
bits at most.
"""

from __future__ import annotations

from typing import Any

from kernelgen.lang import nodes as L
from kernelgen.check.checked import INT_DTYPES, WIDE_FLOAT_DTYPES, ValueType, child

# argsort/argtopk pack (key << 32 | index) into an i64 and sort that.
PACKABLE_DTYPES = ("f32", "f16", "bf16", "i32")


def _numbers(checker: Any, e: Any, field: str, path: str, scope: dict[str, ValueType]) -> ValueType:
    """The operand ``field`` of ``e``: a block of numbers, weak ones made concrete (f32/i32)."""
    fpath = child(path, field)
    x = checker.expr(getattr(e, field), fpath, scope)
    if x.pointer or x.is_bool:
        raise checker.fail(fpath, "bad_operand", f"{e.op} takes numbers, got {x}")
    if not x.shape:
        raise checker.fail(fpath, "bad_axis", f"{e.op} works along an axis of a block, got a scalar")
    # fp8 is storage only here too: Triton's sort, scans and gather of fp8 do not lower.
    checker.storage_only([(x, fpath)], e.op)
    checker.wide_int_only([(x, fpath)], e.op)
    if x.weak:
        checker.adopt(x, x.dtype, fpath)
        x = x.concrete()
    return x


def _packable(checker: Any, e: L.Sort | L.TopK, x: ValueType, path: str) -> None:
    """argsort and argtopk sort a 32-bit key packed with the index into an i64."""
    if e.op.startswith("arg") and x.dtype not in PACKABLE_DTYPES:
        raise checker.fail(child(path, "x"), "bad_operand",
                           f"{e.op} takes f32, f16, bf16 or i32 (a 32-bit key packed with the index), got "
                           f"{x.dtype}; cast to f32 or i32 first")


def scan(checker: Any, e: L.Scan, path: str, scope: dict[str, ValueType]) -> ValueType:
    x = _numbers(checker, e, "x", path, scope)
    checker.axis(e.axis, len(x.shape), child(path, "axis"))
    if e.op in ("cumsum", "cumprod") and x.dtype not in (*WIDE_FLOAT_DTYPES, *INT_DTYPES):
        raise checker.fail(child(path, "x"), "needs_f32",
                           f"{e.op} takes f32, f64, i32 or i64, got {x.dtype}; cast to f32 first")
    return ValueType(x.dtype, x.shape)


def sort(checker: Any, e: L.Sort, path: str, scope: dict[str, ValueType]) -> ValueType:
    x = _numbers(checker, e, "x", path, scope)
    _packable(checker, e, x, path)
    return ValueType("i32" if e.op == "argsort" else x.dtype, x.shape)


def topk(checker: Any, e: L.TopK, path: str, scope: dict[str, ValueType]) -> ValueType:
    x = _numbers(checker, e, "x", path, scope)
    k = checker.dim(e.k, child(path, "k"))
    if k > x.shape[-1]:
        raise checker.fail(child(path, "k"), "bad_value", f"k = {k} is more than the last axis of {x}")
    _packable(checker, e, x, path)
    return ValueType("i32" if e.op == "argtopk" else x.dtype, x.shape[:-1] + (k,))


def gather(checker: Any, e: L.Gather, path: str, scope: dict[str, ValueType]) -> ValueType:
    src = _numbers(checker, e, "src", path, scope)
    ipath = child(path, "index")
    index = checker.expr(e.index, ipath, scope)
    checker.wide_int_only([(index, ipath)], "a gather index")
    if not index.is_int:
        raise checker.fail(ipath, "needs_int", f"a gather index is an integer block, got {index}")
    checker.axis(e.axis, len(src.shape), child(path, "axis"))
    if len(index.shape) != len(src.shape) or any(a != b for d, (a, b) in enumerate(zip(index.shape, src.shape))
                                                 if d != e.axis):
        raise checker.fail(ipath, "shape_mismatch",
                           f"the index {list(index.shape)} has the rank of src {list(src.shape)} and its dims "
                           f"except on axis {e.axis} (expand_dims/broadcast it first)")
    if index.weak:
        checker.adopt(index, index.dtype, ipath)
    return ValueType(src.dtype, index.shape)


def histogram(checker: Any, e: L.Histogram, path: str, scope: dict[str, ValueType]) -> ValueType:
    xpath = child(path, "x")
    x = checker.expr(e.x, xpath, scope)
    checker.wide_int_only([(x, xpath)], e.op)
    if not x.is_int:
        raise checker.fail(xpath, "needs_int", f"histogram counts integers, got {x}")
    if len(x.shape) != 1:
        raise checker.fail(xpath, "shape_mismatch", f"histogram counts a 1-D block, got {x} (reshape it first)")
    if x.weak:
        checker.adopt(x, x.dtype, xpath)
    bins = checker.dim(e.bins, child(path, "bins"))
    if e.mask is not None:
        checker.mask(e.mask, child(path, "mask"), x.shape, scope)
    return ValueType("i32", (bins,))


def join(checker: Any, e: L.Join, path: str, scope) -> ValueType:
    """Two values of one dtype (weak literals adopt it), broadcast, on a new last axis of 2."""
    operands = [(checker.expr(getattr(e, f), child(path, f), scope), child(path, f)) for f in ("lhs", "rhs")]
    for t, p in operands:
        if t.pointer:
            raise checker.fail(p, "bad_operand", f"join takes values, not pointers: got {t}")
    shape = checker.broadcast(operands, path, "join")
    dtype = checker.unify(operands, path, "join")
    checker.operand_dtypes[path] = dtype
    return ValueType(dtype, shape + (2,))
