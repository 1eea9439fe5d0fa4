"""The checker's rules for tiles (``tile_load``, ``tile_store``; see :mod:`kernelgen.check.tile_access`).

Each function types one node for :mod:`kernelgen.check.checker` (``checker`` is its ``_Checker``, read
through ``expr``, ``fail``, ``dim``, ``shape``, ``fits``, ``store`` and ``_load``, not imported
back). The view's rules are TMA's, stated where a model can act on them: rank 1 to 5, the last
stride 1, box dims of at most 256 and an innermost extent of 16 bytes or more. A tile's shape
and strides are made once per kernel (the lowering builds the TMA descriptor at entry), so
they read the kernel's scalar params, meta and literals only. Once a tile's own fields check,
its pointer form is typed at ``/as_load`` or ``/as_store`` under the tile's path, where the
later stages find it.
"""

from __future__ import annotations

from typing import Any, Union

from kernelgen.lang import nodes as L
from kernelgen.check import tile_access as tiles
from kernelgen.check.checked import DTYPE_BITS, ValueType, child


def _view(checker: Any, e: Union[L.TileLoad, L.TileStore], path: str, rank: int, scope) -> ValueType:
    """The base's pointee type, after the shape, strides and offsets check."""
    if not 1 <= rank <= tiles.MAX_RANK:
        raise checker.fail(path, "tile_view", f"a tile has 1 to {tiles.MAX_RANK} dims, got {rank}")
    for field in ("shape", "strides", "offsets"):
        if len(getattr(e, field)) != rank:
            raise checker.fail(child(path, field), "tile_view",
                               f"{field} has {len(getattr(e, field))} entries for a tile of {rank} dims")
    bpath = child(path, "base")
    pointers = {b.name: b.type for b in checker.params if b.type.pointer}
    if e.base not in pointers:
        raise checker.fail(bpath, "tile_view", f"a tile's base is a tensor param by name, got {e.base!r}")
    kernel_scalars = {b.name for b in checker.params if not b.type.pointer} | set(checker.meta)
    for field, wide in (("shape", False), ("strides", True)):
        for i, x in enumerate(getattr(e, field)):
            p = child(path, field, i)
            others = sorted(tiles.names_read(x) - kernel_scalars)
            if others:
                raise checker.fail(p, "tile_view", f"a tile's {field} reads scalar params, meta and literals "
                                   f"only (it is made once per kernel), not {others[0]!r}")
            _integer(checker, x, p, scope, f"a {field} entry", wide)
    last = e.strides[-1]
    if not (isinstance(last, int) and not isinstance(last, bool) and last == 1):
        raise checker.fail(child(path, "strides", rank - 1), "tile_view",
                           "the last stride is the literal 1 (a tile's rows are contiguous)")
    for i, x in enumerate(e.offsets):
        _integer(checker, x, child(path, "offsets", i), scope, "an offset", False)
    base = pointers[e.base]
    if base.dtype == "bool":
        raise checker.fail(bpath, "tile_block", "a tile is of numbers; load bool tensors through pointers")
    return ValueType(base.dtype)


def _integer(checker: Any, x: L.Expr, path: str, scope, what: str, wide: bool) -> None:
    t = checker.expr(x, path, scope)
    allowed = ("i32", "i64") if wide else ("i32",)
    if t.shape or t.pointer or t.dtype not in allowed:
        raise checker.fail(path, "needs_int", f"{what} is an {' or '.join(allowed)} scalar, got {t}")


def _block(checker: Any, block: tuple[int, ...], dtype: str, path: str) -> None:
    for i, size in enumerate(block):
        if size > tiles.MAX_BLOCK_DIM:
            raise checker.fail(child(path, i), "tile_block", f"a tile dim is at most {tiles.MAX_BLOCK_DIM}, got {size}")
    row = block[-1] * DTYPE_BITS[dtype] // 8
    if row < tiles.MIN_ROW_BYTES:
        raise checker.fail(child(path, len(block) - 1), "tile_block",
                           f"a tile's last dim spans {tiles.MIN_ROW_BYTES} bytes or more, got {row}")


def tile_load(checker: Any, e: L.TileLoad, path: str, scope) -> ValueType:
    base = _view(checker, e, path, len(e.block), scope)
    block = checker.shape(e.block, child(path, "block"))
    _block(checker, block, base.dtype, child(path, "block"))
    return checker.expr(tiles.as_load(e), child(path, tiles.AS_LOAD), scope)


def tile_store(checker: Any, s: L.TileStore, path: str, scope) -> None:
    base = _view(checker, s, path, len(s.offsets), scope)
    tensor = next(b.tensor for b in checker.params if b.name == s.base)
    if not checker.tensors[tensor].is_output:
        raise checker.fail(child(path, "base"), "store_to_input", f"{s.base!r} is an input; inputs are read-only")
    vpath = child(path, "value")
    value = checker.expr(s.value, vpath, scope)
    if len(value.shape) != len(s.offsets):
        raise checker.fail(vpath, "shape_mismatch", f"a tile_store of {len(s.offsets)} offsets writes a block of "
                           f"{len(s.offsets)} dims, got {value}")
    checker.fits(value, ValueType(base.dtype, value.shape), vpath, "the stored value")
    _block(checker, value.shape, base.dtype, vpath)
    checker.store(tiles.as_store(s, value.shape), child(path, tiles.AS_STORE), scope)
