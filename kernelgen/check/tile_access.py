"""Tiles: ``tile_load`` and ``tile_store`` as the pointer accesses they mean, and when a tile
may be one TMA copy.

A tile is the block at some offsets of a tensor viewed with a shape and strides; lanes outside
the shape read 0 and are not written. That is exactly a masked load or store through
``base + sum(index_d * stride_d)``, and every stage but the lowering's fast path works on that
form: :func:`as_load` and :func:`as_store` build it as AST, the checker types it at the tile's
path plus ``/as_load`` (``/as_store``), and the interpreter, the emitter and the lowering's
fallback evaluate it there, so bounds, races and output coverage are judged as for any access.

On sm_90 Triton turns ``tt.descriptor_load``/``tt.descriptor_store`` into TMA bulk copies,
whose descriptor needs every stride but the last to be a multiple of 16 bytes (and the base
16-byte aligned, which pointer params are), and whose stores write the innermost dimension in
16-byte pieces (past a shape that ends inside one). The lowering takes that path only where
:func:`tma_aligned` proves both for the variant being compiled, and the pointer form
otherwise, so an odd size drawn by a test is correct, only slower.
"""

from __future__ import annotations

import json
from typing import Collection, Iterator, Union

from kernelgen.lang import nodes as L
from kernelgen.check.checked import DTYPE_BITS, CheckedKernel, is_literal, literal_value, nonnegative_host

AS_LOAD = "as_load"
AS_STORE = "as_store"
MAX_RANK = 5
MAX_BLOCK_DIM = 256  # TMA's largest box dimension
MIN_ROW_BYTES = 16  # TMA's smallest innermost box extent
# Fields whose strings are choices, not names.
_NOT_NAMES = ("op", "dtype", "precision", "cache", "sem", "scope")


def _op(op: str, **fields: object) -> dict:
    return {"op": op, **fields}


def _dumped(e: L.Expr) -> object:
    return e.model_dump(mode="json", by_alias=True, exclude_unset=True) if isinstance(e, L.Node) else e


def _indices(offsets: list[L.Expr], block: list[L.Dim]) -> list[dict]:
    """``offsets[d] + arange(block[d])``, shaped to broadcast along dim d of the block."""
    rank = len(block)
    found = []
    for d, (offset, size) in enumerate(zip(offsets, block)):
        index = _op("add", lhs=_dumped(offset), rhs=_op("arange", size=size))
        for _ in range(d):
            index = _op("expand_dims", x=index, axis=0)
        for axis in range(d + 1, rank):
            index = _op("expand_dims", x=index, axis=axis)
        found.append(index)
    return found


def _pointer_and_mask(base: str, shape: list[L.Expr], strides: list[L.Expr], offsets: list[L.Expr],
                      block: list[L.Dim]) -> tuple[dict, dict]:
    """The pointers of a tile's lanes (i64 offsets) and the mask of lanes inside ``shape``."""
    total: object = None
    mask: object = None
    for index, size, stride in zip(_indices(offsets, block), shape, strides):
        wide = _op("cast", x=index, dtype="i64")
        if not (is_literal(stride) and literal_value(stride) == 1):
            wide = _op("mul", lhs=wide, rhs=_op("cast", x=_dumped(stride), dtype="i64"))
        total = wide if total is None else _op("add", lhs=total, rhs=wide)
        inside = _op("and", lhs=_op("ge", lhs=index, rhs=0), rhs=_op("lt", lhs=index, rhs=_dumped(size)))
        mask = inside if mask is None else _op("and", lhs=mask, rhs=inside)
    return _op("add", lhs=base, rhs=total), mask  # type: ignore[return-value]


# The pointer form of each tile node seen, by id (the node is kept so its id stays its own):
# an interpreted loop asks for it once per iteration.
_FORMS: dict[int, tuple[object, tuple[object, L.Node]]] = {}
_MAX_FORMS = 4096


def _memo(node: object, key: object, build) -> L.Node:
    found = _FORMS.get(id(node))
    if found is not None and found[0] is node and found[1][0] == key:
        return found[1][1]
    if len(_FORMS) >= _MAX_FORMS:
        _FORMS.clear()
    form = build()
    _FORMS[id(node)] = (node, (key, form))
    return form


def as_load(e: L.TileLoad) -> L.Load:
    """The masked load a ``tile_load`` means (lanes outside the shape give 0)."""
    def build() -> L.Load:
        ptr, mask = _pointer_and_mask(e.base, e.shape, e.strides, e.offsets, e.block)
        return L.Load.model_validate(_op("load", ptr=ptr, mask=mask))
    return _memo(e, None, build)  # type: ignore[return-value]


def as_store(s: L.TileStore, block: tuple[int, ...]) -> L.Store:
    """The masked store a ``tile_store`` of a value of shape ``block`` means."""
    def build() -> L.Store:
        ptr, mask = _pointer_and_mask(s.base, s.shape, s.strides, s.offsets, list(block))
        return L.Store.model_validate(_op("store", ptr=ptr, value=_dumped(s.value), mask=mask))
    return _memo(s, tuple(block), build)  # type: ignore[return-value]


def tile_nodes(body: list[L.Stmt], path: str,
               types: dict) -> Iterator[tuple[Union[L.TileLoad, L.TileStore], str, tuple[int, ...]]]:
    """Every tile under ``body`` with its path and its block's shape (from the checked types)."""
    stack: list[tuple[object, str]] = [(body, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, list):
            stack.extend((v, f"{where}/{i}") for i, v in enumerate(node))
        elif isinstance(node, L.Node):
            if isinstance(node, L.TileLoad):
                yield node, where, types[where].shape
            elif isinstance(node, L.TileStore):
                yield node, where, types[f"{where}/value"].shape
            stack.extend((v, f"{where}/{key}") for key, v in L.node_fields(node))


def view_key(tile: Union[L.TileLoad, L.TileStore], block: tuple[int, ...]) -> str:
    """Tiles of one key share a descriptor: the same tensor, view and block."""
    return json.dumps([tile.base, [_dumped(x) for x in tile.shape], [_dumped(x) for x in tile.strides], block])


def names_read(e: L.Expr) -> set[str]:
    """The names an expression reads (a tile's shape or strides, a loop's bounds)."""
    if isinstance(e, str):
        return set() if is_literal(e) else {e}
    if not isinstance(e, L.Node):
        return set()
    found: set[str] = set()
    for key, value in L.node_fields(e):
        if key in _NOT_NAMES:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, (str, L.Node)) and not isinstance(item, bool):
                found |= names_read(item)
    return found


def _multiple(e: L.Expr, of: int, divisible_by_16: Collection[str], meta: dict[str, int]) -> bool:
    """Whether integer expression ``e`` is provably a positive multiple of ``of`` (a power of two
    <= 16), or a param of such a multiple that a launch found divisible by 16 (those are the
    never-negative ones: a TMA stride of 0 or below is a device fault, not a slow access)."""
    if is_literal(e):
        value = literal_value(e)
        return isinstance(value, int) and not isinstance(value, bool) and value > 0 and value % of == 0
    if isinstance(e, str):
        return e in divisible_by_16 or (e in meta and meta[e] > 0 and meta[e] % of == 0)
    if isinstance(e, L.Binary) and e.op == "mul":
        return any(_multiple(x, of, divisible_by_16, meta) for x in (e.lhs, e.rhs))
    if isinstance(e, L.Binary) and e.op in ("add", "sub"):
        return all(_multiple(x, of, divisible_by_16, meta) for x in (e.lhs, e.rhs))
    if isinstance(e, L.Cast):
        return _multiple(e.x, of, divisible_by_16, meta)
    return False


def tma_params(checked: CheckedKernel, divisible_by_16: Collection[str]) -> frozenset[str]:
    """The integer params a TMA stride may rest on: found divisible by 16 in this variant, and
    bound to a host value that is never negative (a scalar input found divisible by 16 may be
    -16; 0 is divisible too, and a size of 0 leaves no lanes to copy)."""
    scalars = {inp.name for inp in checked.kernel.inputs if inp.shape is None}
    return frozenset(b.name for b in checked.params if b.name in divisible_by_16 and b.value is not None
                     and nonnegative_host(b.value, scalars))


def tma_aligned(tile: Union[L.TileLoad, L.TileStore], dtype: str, divisible_by_16: Collection[str],
                meta: dict[str, int]) -> bool:
    """Whether every stride but the last (TMA's rule) and the innermost extent are provably
    positive multiples of 16 bytes, given the params of :func:`tma_params`. The extent: measured on
    an H100 (tools/redteam_round32/tma_guard.py), a 1-D TMA store of N f32 elements wrote up to
    the next 16-byte boundary past them (N = 5: 3 elements of the guard band; N = 4, 256, 1000:
    none), where a tile's lanes outside its shape must not be written."""
    elements = max(1, 128 // DTYPE_BITS[dtype])  # 16 bytes in elements
    return all(_multiple(s, elements, divisible_by_16, meta) for s in [*tile.strides[:-1], tile.shape[-1]])
