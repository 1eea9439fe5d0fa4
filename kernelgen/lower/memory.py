"""The lowering's memory accesses: loads, stores and atomics, with their cache modifiers,
eviction policies and memory orders.

A mixin that :class:`kernelgen.lower.lowering._Lowering` inherits, kept apart so that lowering.py holds
the arithmetic and the kernel's frame: these methods are where Triton's pointer ops, bool
bytes in memory and the float atomic max/min built from integer rmws live. They call the
lowering's own methods through ``self`` and do not import lowering.py back.
"""

from __future__ import annotations

from typing import Any

from triton._C.libtriton import ir

from kernelgen.lang import nodes as L
from kernelgen.check import tile_access as tiles
from kernelgen.check.checked import FLOAT_DTYPES, ValueType, child
from kernelgen.lower.control import Lowered

_SEMANTICS = {"relaxed": "RELAXED", "acquire": "ACQUIRE", "release": "RELEASE", "acq_rel": "ACQUIRE_RELEASE"}
_SCOPES = {"gpu": "GPU", "cta": "CTA", "sys": "SYSTEM"}


def _modifiers(cache: str | None) -> tuple[Any, Any]:
    """A load's or store's ``cache`` as Triton's (cache modifier, eviction policy): one of the
    two at most, since ptxas refuses pairs such as ``.cg`` with ``L1::evict_first``."""
    if cache is not None and cache.startswith("evict_"):
        return ir.CACHE_MODIFIER.NONE, getattr(ir.EVICTION_POLICY, cache.upper())
    return (ir.CACHE_MODIFIER.NONE if cache is None else getattr(ir.CACHE_MODIFIER, cache.upper()),
            ir.EVICTION_POLICY.NORMAL)


class MemoryLowering:
    """Loads, stores and atomics: needs the attributes and methods :class:`kernelgen.lower.lowering._Lowering` has."""

    def _load(self, e: L.Load, path: str, env) -> Any:
        t = self.types[path]
        ptr = self.operand(e.ptr, child(path, "ptr"), env, shape=t.shape)
        mask = other = None
        if e.mask is not None:
            mask = self.operand(e.mask, child(path, "mask"), env, "bool", t.shape)
            if e.other is not None:
                other = self.operand(e.other, child(path, "other"), env, t.dtype, t.shape)
        self.at(path)
        b = self.builder
        cache, eviction = _modifiers(e.cache)
        if mask is None:
            value = b.create_load(ptr, cache, eviction, False)
        else:
            if other is None:
                other = self.constant(0, t.dtype, t.shape)
            if t.dtype == "bool":
                other = b.create_int_cast(other, self.memory_type(t), False)
            value = b.create_masked_load(ptr, mask, other, cache, eviction, False)
        if t.dtype == "bool":
            zero_byte = b.get_int8(0)
            if t.shape:
                zero_byte = b.create_splat(self.memory_type(t), zero_byte)
            value = b.create_icmpNE(value, zero_byte)
        return value

    def tile_descriptors(self, body: list[L.Stmt], env: dict[str, Lowered]) -> None:
        """At the kernel's entry, one TMA descriptor per distinct view of the tiles whose
        strides and innermost extent are provably 16-byte multiples in this variant
        (:mod:`kernelgen.check.tile_access`);
        ``self.descriptors`` maps each such tile's path to its descriptor."""
        self.descriptors: dict[str, Any] = {}
        made: dict[str, Any] = {}
        b = self.builder
        aligned = tiles.tma_params(self.checked, self.divisible_by_16)
        for tile, path, block in tiles.tile_nodes(body, "/body", self.types):
            dtype = next(p.type.dtype for p in self.checked.params if p.name == tile.base)
            if not tiles.tma_aligned(tile, dtype, aligned, self.checked.meta):
                continue
            key = tiles.view_key(tile, block)
            if key not in made:
                shape = [self.operand(x, child(path, "shape", i), env, "i32") for i, x in enumerate(tile.shape)]
                strides = [self.operand(x, child(path, "strides", i), env, "i64") for i, x in enumerate(tile.strides)]
                self.at(path)
                made[key] = b.create_make_tensor_descriptor(env[tile.base], shape, strides, list(block),
                                                            dtype in ("i32", "i64", "i8", "i16"), ir.PADDING_OPTION.PAD_ZERO)
            self.descriptors[path] = made[key]

    def _tileload(self, e: L.TileLoad, path: str, env) -> Any:
        if path not in self.descriptors:
            return self._load(tiles.as_load(e), child(path, tiles.AS_LOAD), env)
        offsets = [self.operand(x, child(path, "offsets", i), env, "i32") for i, x in enumerate(e.offsets)]
        self.at(path)
        return self.builder.create_descriptor_load(self.descriptors[path], offsets, ir.CACHE_MODIFIER.NONE,
                                                   ir.EVICTION_POLICY.NORMAL)

    def tile_store(self, s: L.TileStore, path: str, env: dict[str, Lowered]) -> None:
        t = self.types[child(path, "value")]
        if path not in self.descriptors:
            self.store(tiles.as_store(s, t.shape), child(path, tiles.AS_STORE), env)
            return
        pointee = next(p.type.dtype for p in self.checked.params if p.name == s.base)
        value = self.operand(s.value, child(path, "value"), env, pointee, t.shape)
        offsets = [self.operand(x, child(path, "offsets", i), env, "i32") for i, x in enumerate(s.offsets)]
        self.at(path)
        self.builder.create_descriptor_store(self.descriptors[path], value, offsets)

    def memory_type(self, t: ValueType) -> Any:
        """The in-memory type of values of ``t`` (bytes for bool)."""
        element = self.scalar_type(t.dtype, memory=True)
        return self.builder.get_block_ty(element, list(t.shape)) if t.shape else element

    def store(self, s: L.Store, path: str, env: dict[str, Lowered]) -> None:
        pp = child(path, "ptr")
        t = self.types[pp]
        ptr = self.operand(s.ptr, pp, env)
        value = self.operand(s.value, child(path, "value"), env, t.dtype, t.shape)
        mask = self.operand(s.mask, child(path, "mask"), env, "bool", t.shape) if s.mask is not None else None
        self.at(path)
        b = self.builder
        if t.dtype == "bool":
            value = b.create_int_cast(value, self.memory_type(t), False)
        cache, eviction = _modifiers(s.cache)
        if mask is None:
            b.create_store(ptr, value, cache, eviction)
        else:
            b.create_masked_store(ptr, value, mask, cache, eviction)

    def atomic(self, a: L.Atomic, path: str, env: dict[str, Lowered]) -> Any:
        """tt.atomic_rmw / tt.atomic_cas as Triton's semantic.py builds them (float max/min
        included); returns the old values."""
        pp = child(path, "ptr")
        t = self.types[pp]
        ptr = self.operand(a.ptr, pp, env)
        val = self.operand(a.val, child(path, "val"), env, t.dtype, t.shape)
        cmp = self.operand(a.cmp, child(path, "cmp"), env, t.dtype, t.shape) if a.cmp is not None else None
        mask = (self.operand(a.mask, child(path, "mask"), env, "bool", t.shape) if a.mask is not None
                else self.constant(True, "bool", t.shape))
        self.at(path)
        b = self.builder
        sem = getattr(ir.MEM_SEMANTIC, _SEMANTICS[a.sem])
        scope = getattr(ir.MEM_SYNC_SCOPE, _SCOPES[a.scope])
        if cmp is not None:
            return b.create_atomic_cas(ptr, cmp, val, sem, scope)
        if a.op in ("atomic_max", "atomic_min") and t.dtype in FLOAT_DTYPES:
            # Non-negative floats order as signed integers of their bits, negative ones
            # reversed as unsigned: one rmw each, on the lanes of that sign.
            bits = "i32" if t.dtype == "f32" else "i64"
            int_t = ValueType(bits, t.shape)
            ival = b.create_bitcast(val, self.ir_type(int_t))
            iptr = b.create_bitcast(ptr, self.ir_type(ValueType(bits, t.shape, pointer=True)))
            negative = b.create_icmpSLT(ival, self.constant(0, bits, t.shape))
            positive = b.create_xor(negative, self.constant(True, "bool", t.shape))
            signed, unsigned = ("MAX", "UMIN") if a.op == "atomic_max" else ("MIN", "UMAX")
            up = b.create_atomic_rmw(getattr(ir.ATOMIC_OP, signed), iptr, ival, b.create_and(mask, positive),
                                     sem, scope)
            down = b.create_atomic_rmw(getattr(ir.ATOMIC_OP, unsigned), iptr, ival, b.create_and(mask, negative),
                                       sem, scope)
            return b.create_bitcast(b.create_select(positive, up, down), self.ir_type(ValueType(t.dtype, t.shape)))
        kind = "FADD" if a.op == "atomic_add" and t.dtype in FLOAT_DTYPES else a.op.removeprefix("atomic_").upper()
        return b.create_atomic_rmw(getattr(ir.ATOMIC_OP, kind), ptr, val, mask, sem, scope)
