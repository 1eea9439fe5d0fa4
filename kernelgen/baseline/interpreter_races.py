"""Races between the programs of one launch, found in Triton's interpreter (the baseline's CPU mode).

Triton 3.6's interpreter runs a launch's programs one after another in grid order, so a kernel
whose programs race on a GPU (a plain read-modify-write of an output several programs add to, a
block reading the prefix its neighbour stores in the same launch, a "last program" that reads
partial results no release made visible) computes the sequential result there and passes. The
GPU's schedule is not sequential: such a kernel is wrong, and kernelgen's own interpreter fails
it as ``race`` (:mod:`kernelgen.interp.accesses`). :func:`patch_triton_interpreter_races` makes
the baseline's CPU mode apply the same rules: it records every element each program loads,
stores and updates atomically during a launch, and after the launch finds two programs whose
accesses to one element conflict:

* one stores it and another loads, stores or updates it atomically (stores of one value by
  several programs excepted: no order can show which landed);
* one updates it atomically and another loads or stores it;
* two update it with different atomic operations, an exchange or compare-and-swap of different
  values, or with an atomic scoped to its own program (``scope="cta"``); an atomic that writes
  back what it read (an add of zero: the atomic load of a spin on a flag) updates nothing.

Two conflicting accesses are ordered, and no race, where the earlier program made a release
atomic (``sem`` "release" or "acq_rel", Triton's default) at or after its access and the later
one an acquire atomic at or before its own, on a common element: the "last program" pattern done
right (partials, then an ``acq_rel`` ticket; the program holding the last ticket reads them and
resets the counter), or a lock. Two conflicting atomics do not order each other, and a program's
atomic on an element does not order its own later load of it after other programs' atomics (the
last to add to a sum is not the last to have finished adding: a ticket taken on entry). That is
judged on the interpreter's one order, so it is lenient: synchronisation that holds in this order
but not in every order a GPU may run (the ticket taken before the partial is stored, then a second
counter both programs update) is not found. Masked-off lanes are never accesses.

The programs also run in a shuffled order, one per launch, seeded by the launch's number in the
process (a verdict repeats): a kernel whose result depends on the order without racing (slots
claimed through an atomic's old value, a float sum's rounding) shows the result of an order a GPU
may choose rather than of grid order, which such a kernel may have been written to pass.

A program waiting for another of its launch (a spin on a flag or a lock a later program sets) never
ends in the interpreter, which runs one program at a time: a program that repeats one load (or an
atomic that changes nothing: an add of zero, a compare-and-swap) :data:`SPIN_REPEATS` times in a
row, with no other memory operation between, raises :class:`Spinning`, which the sandbox's child
reports as a timeout (not judged without a GPU) at once rather than at the interpreter's time limit.

Every access must also fall inside a tensor the launch was given (its storage, as the interpreter
holds it): Triton's interpreter loads and stores through raw host pointers, so a lane past the end
of a row block read the heap (often zeros, which a sum does not see) and a store there wrote into
whatever lay beyond. On a GPU such an access reads another allocation's memory or faults, and
kernelgen's interpreter fails it as ``out_of_bounds``; here it raises :class:`OutOfBounds` before
the access is made, and the finding is kept as a race's is.

The log lives in the answer's process, as the interpreter does; tampering with it could only
hide a race, which is where the interpreter alone leaves a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

READ, WRITE, ATOMIC = 0, 1, 2
_DOES = {READ: "loads", WRITE: "stores", ATOMIC: "updates atomically"}
# A spin's iterations in a row (a loop whose only memory operation is one same load: no kernel
# computes by that; at about half a millisecond an iteration the interpreter tells one in seconds).
SPIN_REPEATS = 5_000


class RaceFound(RuntimeError):
    """Two programs of one launch race on an element (the message names both and the element)."""


class OutOfBounds(RuntimeError):
    """A program's access falls outside every tensor its launch was given."""


OUT_OF_BOUNDS = "out of bounds"  # how its message starts (a race's: "race")


class Spinning(RuntimeError):
    """A program waits for another of its launch, which the interpreter runs only after it."""


@dataclass
class _Atomic:
    time: int
    addresses: np.ndarray
    release: bool
    acquire: bool


@dataclass
class LaunchLog:
    """Every access of one launch: per memory operation (numbered in the order they ran: an
    operation's number is its time) its program, kind and elements."""

    grid: tuple[int, int, int]
    kernel: str
    names: dict[int, tuple[str, int, int]]  # each tensor argument's address: its name, elements, bytes each
    seed: int
    # the memory of the launch's tensors as the programs address it (storages of the host copies):
    # sorted starts, ends (bytes) and names
    bounds: tuple[np.ndarray, np.ndarray, tuple[str, ...]] | None = None
    # the programs' linear ids in the order they run (made at the first program), and the
    # position in it of the one running: a program is named by its position
    order: np.ndarray | None = None
    running: int = 0
    addresses: list[np.ndarray] = field(default_factory=list)
    programs: list[int] = field(default_factory=list)
    kinds: list[int] = field(default_factory=list)
    # per operation: the stored values and their largest finite magnitude (stores; integers as
    # bits), the atomic's op, value bits and whether it is scoped to its program (atomics)
    details: list[Any] = field(default_factory=list)
    atomics: dict[int, list[_Atomic]] = field(default_factory=dict)
    barriers: dict[int, list[int]] = field(default_factory=dict)  # per program, the times of its tl.debug_barrier()
    _summed: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    # the running program's last memory operation that could be a spin's (barriers aside) and
    # how many times in a row it has run
    _repeated: tuple[int, int, Any, np.ndarray] | None = None
    _repeats: int = 0

    def record(self, program: int, kind: int, addresses: np.ndarray, detail: Any = None,
               release: bool = False, acquire: bool = False) -> None:
        if len(addresses):
            self._spin(program, kind, addresses, detail)
        time = len(self.programs)
        self.addresses.append(addresses)
        self.programs.append(program)
        self.kinds.append(kind)
        self.details.append(detail)
        if kind == ATOMIC and (release or acquire):
            self.atomics.setdefault(program, []).append(_Atomic(time, addresses, release, acquire))

    def _spin(self, program: int, kind: int, addresses: np.ndarray, detail: Any) -> None:
        """Count a load, or an atomic that changes nothing, repeating the program's last one;
        raise :class:`Spinning` at :data:`SPIN_REPEATS` in a row."""
        op = None if kind == READ else detail[0] if kind == ATOMIC and (
            detail[0] == "cas" or _reads_only(detail[0], int(detail[1].max(initial=0)))) else False
        last = self._repeated
        if op is False:
            self._repeated, self._repeats = None, 0
        elif last is not None and last[:3] == (program, kind, op) and np.array_equal(last[3], addresses):
            self._repeats += 1
            if self._repeats >= SPIN_REPEATS:
                does = "loads" if kind == READ else f"makes the atomic {op} on"
                raise Spinning(f"{self._program(program)} of {self.kernel} {does} {self._element(int(addresses[0]))} "
                               f"{SPIN_REPEATS} times in a row with no other memory operation: it waits for another "
                               "program of the launch, which Triton's interpreter runs only after it (one program at "
                               "a time; a GPU runs them at once)")
        else:
            self._repeated, self._repeats = (program, kind, op, addresses), 1

    def check_bounds(self, program: int, kind: int, addresses: np.ndarray, itemsize: int) -> None:
        """Raise :class:`OutOfBounds` (kept in :data:`RACES`) where an access of ``itemsize``-byte
        elements reaches outside every tensor of the launch."""
        if self.bounds is None or not len(addresses):
            return
        starts, ends, labels = self.bounds
        at = np.searchsorted(starts, addresses, side="right").astype(np.int64) - 1
        inside = (at >= 0) & (addresses + np.uint64(itemsize) <= ends[np.maximum(at, 0)])
        if inside.all():
            return
        first = int(np.flatnonzero(~inside)[0])
        address, nearest = int(addresses[first]), int(at[first])
        if nearest >= 0:
            where = (f"byte {address - int(starts[nearest])} of {labels[nearest]}, which holds "
                     f"{int(ends[nearest] - starts[nearest])} bytes")
        else:
            where = f"{int(starts[0]) - address} bytes before {labels[0]}"
        found = (f"{OUT_OF_BOUNDS} in {self.kernel}: {self._program(program)} {_DOES[kind]} the {itemsize}-byte "
                 f"element at {where}, outside every tensor the launch was given ({int(inside.size - inside.sum())} "
                 "such lanes in this access; masked-off lanes are none): on a GPU it reads or writes another "
                 "allocation's memory, or faults")
        RACES.found = RACES.found or found
        raise OutOfBounds(found)

    def barrier(self, program: int) -> None:
        """A ``tl.debug_barrier()``: an operation of no elements, which takes a time."""
        self.barriers.setdefault(program, []).append(len(self.programs))
        self.record(program, READ, np.zeros(0, np.uint64))

    def first_race(self) -> str | None:
        """The first conflicting pair that no release and acquire order, described; else None."""
        if len(set(self.programs)) < 2:
            return None
        sizes = [len(a) for a in self.addresses]
        address = np.concatenate(self.addresses)
        operation = np.repeat(np.arange(len(sizes)), sizes)
        lane = np.arange(len(address)) - np.repeat(np.cumsum([0, *sizes[:-1]]), sizes)
        order = np.lexsort((operation, address))
        address, operation, lane = address[order], operation[order], lane[order]
        program, kind = np.asarray(self.programs)[operation], np.asarray(self.kinds)[operation]
        starts = np.flatnonzero(np.r_[True, address[1:] != address[:-1]])
        shared = np.minimum.reduceat(program, starts) != np.maximum.reduceat(program, starts)
        written = np.maximum.reduceat((kind != READ).astype(np.int8), starts) > 0
        # elements both loaded and updated atomically (sums, not tickets): they order no load
        loaded = np.maximum.reduceat((kind == READ).astype(np.int8), starts) > 0
        updated = np.maximum.reduceat((kind == ATOMIC).astype(np.int8), starts) > 0
        self._summed = address[starts[loaded & updated]]
        ends = np.r_[starts[1:], len(address)]
        for start, end in zip(starts[shared & written], ends[shared & written]):
            race = self._race_at(int(address[start]), zip(operation[start:end].tolist(), lane[start:end].tolist(),
                                                          program[start:end].tolist(), kind[start:end].tolist()))
            if race:
                return race
        return None

    def _race_at(self, address: int, accesses) -> str | None:
        """Judge the accesses of one element: each program's, by kind, against every later
        program's (the interpreter ran them in that order)."""
        per: dict[int, dict[int, list[tuple[int, int]]]] = {}
        for op, lane, p, k in accesses:
            per.setdefault(p, {}).setdefault(k, []).append((op, lane))
        ordered = sorted(per)
        plain = [p for p in ordered if READ in per[p] or WRITE in per[p]]
        atomics = {self._atomic(op, lane) for p in ordered for op, lane in per[p].get(ATOMIC, ())}
        atomics = {(name, bits, cta) for name, bits, cta in atomics if not _reads_only(name, bits)}
        if len({name for name, _, _ in atomics}) > 1 or any(cta for _, _, cta in atomics) or len(
                {bits for name, bits, _ in atomics if name in ("xchg", "cas")}) > 1:
            pairs = [(p, q) for i, q in enumerate(ordered) for p in ordered[:i]]
        else:  # atomics alone do not conflict here: only pairs with a load or store can
            pairs = sorted({(min(x, y), max(x, y)) for x in plain for y in ordered if y != x})
        for p, q in pairs:
            for first, second, kinds in self._clashes(per[p], per[q]):
                if not self._ordered(p, first, q, second, set(kinds) == {ATOMIC, READ}):
                    return self._describe(address, p, q, kinds)
        return None

    def _clashes(self, earlier: dict, later: dict) -> Iterator[tuple[int, int, tuple[int, int]]]:
        """Each conflicting pair of two programs' accesses, by kind the one hardest to order
        (the earlier program's last access of the kind, the later one's first)."""
        for k1, k2 in ((WRITE, READ), (WRITE, WRITE), (WRITE, ATOMIC), (READ, WRITE), (ATOMIC, WRITE),
                       (ATOMIC, READ), (READ, ATOMIC)):
            if k1 in earlier and k2 in later:
                if k1 == k2 == WRITE and _one_value([self._stored(*a) for a in earlier[WRITE] + later[WRITE]]):
                    continue
                yield earlier[k1][-1][0], later[k2][0][0], (k1, k2)
        for op1, lane1 in earlier.get(ATOMIC, ()):
            name1, bits1, cta1 = self._atomic(op1, lane1)
            for op2, lane2 in later.get(ATOMIC, ()):
                name2, bits2, cta2 = self._atomic(op2, lane2)
                if _reads_only(name1, bits1) or _reads_only(name2, bits2):
                    continue  # an atomic load (a spin on a flag): it changes nothing another could overwrite
                if name1 != name2 or cta1 or cta2 or (name1 in ("xchg", "cas") and bits1 != bits2):
                    yield op1, op2, (ATOMIC, ATOMIC)

    def _stored(self, op: int, lane: int) -> tuple[float | int, float]:
        values, scale = self.details[op]
        return values[lane].item(), scale

    def _atomic(self, op: int, lane: int) -> tuple[str, int, bool]:
        name, bits, cta = self.details[op]
        return name, int(bits[lane]), cta

    def _ordered(self, p: int, first: int, q: int, second: int, loaded_sum: bool) -> bool:
        """Whether a release atomic of ``p`` and an acquire atomic of ``q`` on a common element
        order ``p``'s access before ``q``'s: the release at or after the access (after a
        ``tl.debug_barrier()`` that follows it, unless the release is the access: one thread
        issues a program's atomic, and its release covers the others' stores only behind a
        barrier), the acquire at or before ``q``'s access, and not the two accesses themselves
        (two atomics that conflict do not order each other, unless the later is a
        compare-and-swap, which writes only where it read the earlier's value: a lock);
        ``loaded_sum``: on an element no program loads (a load of a sum others add to atomically
        is ordered by a ticket, never by the loader's own addition to it: the last to add is not
        the last to have finished)."""
        fenced = [b for b in self.barriers.get(p, ()) if b > first]
        releases = [a for a in self.atomics.get(p, ()) if a.release and (
            a.time == first or any(first < b < a.time for b in fenced))]
        acquires = [a for a in self.atomics.get(q, ()) if a.acquire and a.time <= second]
        for release in releases:
            for acquire in acquires:
                if release.time == first and acquire.time == second and self.details[second][0] != "cas":
                    continue
                common = np.intersect1d(release.addresses, acquire.addresses)
                if loaded_sum:
                    common = np.setdiff1d(common, self._summed)
                if common.size:
                    return True
        return False

    def _describe(self, address: int, p: int, q: int, kinds: tuple[int, int]) -> str:
        element = self._element(address)
        first, second = _DOES[kinds[0]], _DOES[kinds[1]]
        return (f"race in {self.kernel}: {self._program(q)} {second} {element}, which {self._program(p)} "
                f"{first} in the same launch, and no release and acquire atomic orders the two: the GPU runs "
                "a launch's programs in any order and at once, Triton's interpreter one after another (an "
                "element one program stores may be neither stored with other bits, loaded nor atomically updated "
                "by another, and one that programs update atomically is neither stored nor loaded by another)")

    def _element(self, address: int) -> str:
        """The argument and element index an address falls in, as ``x[5]`` (flat), or the address."""
        for base, (name, size, itemsize) in sorted(self.names.items()):
            if base <= address < base + size * itemsize:
                return f"{name}[{(address - base) // itemsize}]"
        return f"the element at {address:#x}"

    def _program(self, position: int) -> str:
        g0, g1, g2 = self.grid
        program = int(self.order[position]) if self.order is not None else position
        ids = (program // (g1 * g2), (program // g2) % g1, program % g2)
        used = max((i + 1 for i, n in enumerate(self.grid) if n > 1), default=1)
        return f"program {ids[0]}" if used == 1 else f"program {tuple(ids[:used])}"


class RaceLog:
    """Whether launches are checked, the launch being recorded, how many have run (each one's
    order is seeded by its number: a verdict repeats), and the first race found in any launch
    (kept: an answer that catches the exception still fails)."""

    def __init__(self) -> None:
        self.checking = False
        self.launch: LaunchLog | None = None
        self.launches = 0
        self.found: str | None = None
        self.spinning: str | None = None  # a program found waiting for a later one (kept, as found is)


RACES = RaceLog()


def _tensors(values: Any) -> Iterator[Any]:
    """The tensors among a launch's host arguments: in tuples, and a tensor descriptor's base."""
    for value in values:
        if hasattr(value, "untyped_storage"):
            yield value
        elif isinstance(value, (tuple, list)):
            yield from _tensors(value)
        elif hasattr(getattr(value, "base", None), "untyped_storage"):
            yield value.base


def _one_value(stores: list[tuple[float | int, float]]) -> bool:
    """Stores of one value: the same bits, or floats within 1e-5 of the largest finite value
    their stores wrote (two programs computing one element of overlapping tiles may sum in
    another order in the interpreter, where a GPU's tiles sum alike: no wrong value hides in that)."""
    first = stores[0][0]
    if isinstance(first, float):
        atol = 1e-5 * max(scale for _, scale in stores)
        return all(v == first or (v != v and first != first) or abs(v - first) <= atol for v, _ in stores)
    return all(v == first for v, _ in stores)


def _reads_only(name: str, bits: int) -> bool:
    """An atomic that writes back what it read: an add or or of zero (the atomic load of a spin)."""
    return name in ("add", "fadd", "or", "xor") and bits == 0


def _bits(values: np.ndarray) -> np.ndarray:
    """Each element's bits as an integer (the interpreter's dtypes are 1, 2, 4 or 8 bytes wide)."""
    values = np.ascontiguousarray(values)
    return values.view(f"u{values.itemsize}").astype(np.uint64)


def patch_triton_interpreter_races() -> None:
    """Record each launch's accesses in Triton's interpreter and raise :class:`RaceFound` (and
    keep the finding in :data:`RACES`) after a launch whose programs race; from now on in this
    process (``RACES.checking = False`` stops it)."""
    RACES.checking = True
    import inspect

    from triton._C.libtriton import ir
    from triton.runtime import interpreter

    builder_class = interpreter.InterpreterBuilder
    if getattr(builder_class.create_masked_store, "kernelgen_races", False):
        return
    load, store = builder_class.create_masked_load, builder_class.create_masked_store
    rmw, cas = builder_class.create_atomic_rmw, builder_class.create_atomic_cas
    launch, grid_idx, barrier = (interpreter.GridExecutor.__call__, builder_class.set_grid_idx,
                                 builder_class.create_barrier)
    init_args = interpreter.GridExecutor._init_args_hst
    releasing = {ir.MEM_SEMANTIC.RELEASE, ir.MEM_SEMANTIC.ACQUIRE_RELEASE}
    acquiring = {ir.MEM_SEMANTIC.ACQUIRE, ir.MEM_SEMANTIC.ACQUIRE_RELEASE}
    op_names = {op: str(op).rsplit(".", 1)[-1].lower() for op in builder_class.ir_rmw_op_to_interpreter_rmw_op}

    def program() -> int:
        return RACES.launch.running

    def set_grid_idx(self, x, y, z):
        """The loop's next program is the shuffled order's next one."""
        log = RACES.launch
        if log is None:
            return grid_idx(self, x, y, z)
        g0, g1, g2 = self.grid_dim
        if log.order is None:
            log.order = np.random.default_rng(log.seed).permutation(g0 * g1 * g2)
            log.grid = (g0, g1, g2)
        log.running = (x * g1 + y) * g2 + z
        linear = int(log.order[log.running])
        return grid_idx(self, linear // (g1 * g2), (linear // g2) % g1, linear % g2)

    def lanes(ptrs, mask) -> tuple[np.ndarray, np.ndarray]:
        pointers = np.asarray(ptrs.data)
        if mask is None:
            return pointers.reshape(-1).astype(np.uint64), np.ones(pointers.shape, bool)
        taken = np.asarray(mask.data).astype(bool)  # an i1 block may come as integers
        pointers, taken = np.broadcast_arrays(pointers, taken)  # a None pointer's one element, a block's mask
        return pointers[taken].astype(np.uint64), taken

    def itemsize(ptrs) -> int:
        return max(1, getattr(ptrs.get_element_ty(), "primitive_bitwidth", 64) // 8)

    def create_masked_load(self, ptrs, mask, other, cache_modifier, eviction_policy, is_volatile):
        if RACES.launch is not None:
            addresses, _ = lanes(ptrs, mask)
            RACES.launch.check_bounds(program(), READ, addresses, itemsize(ptrs))
            RACES.launch.record(program(), READ, addresses)
        return load(self, ptrs, mask, other, cache_modifier, eviction_policy, is_volatile)

    def create_masked_store(self, ptrs, value, mask, cache_modifier, eviction_policy):
        if RACES.launch is not None:
            addresses, taken = lanes(ptrs, mask)
            RACES.launch.check_bounds(program(), WRITE, addresses, itemsize(ptrs))
            values = np.broadcast_to(np.asarray(value.data), taken.shape)[taken]
            if values.dtype.kind == "f":
                values = values.astype(np.float64)
                finite = np.abs(values[np.isfinite(values)])
                RACES.launch.record(program(), WRITE, addresses, (values, float(finite.max()) if finite.size else 0.0))
            else:
                RACES.launch.record(program(), WRITE, addresses, (_bits(values), 0.0))
        return store(self, ptrs, value, mask, cache_modifier, eviction_policy)

    def atomic(name: str, ptrs, value, mask, sem, scope) -> None:
        addresses, taken = lanes(ptrs, mask)
        RACES.launch.check_bounds(program(), ATOMIC, addresses, itemsize(ptrs))
        values = np.broadcast_to(np.asarray(value.data), taken.shape)[taken]
        cta = scope == ir.MEM_SYNC_SCOPE.CTA
        RACES.launch.record(program(), ATOMIC, addresses, (name, _bits(values), cta),
                            release=sem in releasing, acquire=sem in acquiring)

    def create_atomic_rmw(self, rmw_op, ptr, val, mask, sem, scope):
        if RACES.launch is not None:
            atomic(op_names.get(rmw_op, str(rmw_op)), ptr, val, mask, sem, scope)
        return rmw(self, rmw_op, ptr, val, mask, sem, scope)

    def create_atomic_cas(self, ptr, cmp, val, sem, scope):
        if RACES.launch is not None:
            atomic("cas", ptr, val, None, sem, scope)
        return cas(self, ptr, cmp, val, sem, scope)

    def _init_args_hst(self, args_dev, kwargs):
        """The host copies the programs address, named as the tensors they copy (a CUDA
        tensor's copy has an address of its own: GPU mode's look runs on CUDA tensors), and the
        memory they span, which bounds every access."""
        args_hst, kwargs_hst = init_args(self, args_dev, kwargs)
        log = RACES.launch
        if log is not None:
            pairs = zip((*args_dev, *kwargs.values()), (*args_hst, *kwargs_hst.values()))
            log.names = {int(hst.data_ptr()): log.names[int(dev.data_ptr())] for dev, hst in pairs
                         if hasattr(dev, "data_ptr") and hasattr(hst, "data_ptr") and int(dev.data_ptr()) in log.names}
            spans: dict[int, tuple[int, str]] = {}
            for tensor in _tensors((*args_hst, *kwargs_hst.values())):
                storage = tensor.untyped_storage()
                start, end = int(storage.data_ptr()), int(storage.data_ptr()) + int(storage.nbytes())
                label = log.names.get(int(tensor.data_ptr()), ("a tensor argument",))[0]
                if end > spans.get(start, (0, ""))[0]:
                    spans[start] = (end, label)
            starts = sorted(spans)
            log.bounds = (np.array(starts, np.uint64), np.array([spans[s][0] for s in starts], np.uint64),
                          tuple(spans[s][1] for s in starts))
        return args_hst, kwargs_hst

    def create_barrier(self):
        if RACES.launch is not None:
            RACES.launch.barrier(program())
        return barrier(self)

    def __call__(self, *args, **kwargs):
        if not RACES.checking:
            return launch(self, *args, **kwargs)
        names = {}
        signature = inspect.signature(self.fn)
        try:  # launch options (num_warps...) are not the kernel's parameters
            bound = signature.bind_partial(*args, **{k: v for k, v in kwargs.items()
                                                     if k in signature.parameters}).arguments
        except TypeError:
            bound = {}
        for name, value in bound.items():
            if hasattr(value, "data_ptr") and hasattr(value, "untyped_storage"):
                names[int(value.data_ptr())] = (name, int(value.numel()), int(value.element_size()))
        RACES.launches += 1
        outer, RACES.launch = RACES.launch, LaunchLog((1, 1, 1), getattr(self.fn, "__name__", "the kernel"), names,
                                                      seed=RACES.launches)
        try:
            launch(self, *args, **kwargs)
            log = RACES.launch  # its grid taken at its first program (set_grid_idx)
        except Exception as error:  # the interpreter wraps what a program raises in its own error
            cause: BaseException | None = error
            while cause is not None and not isinstance(cause, Spinning):
                cause = cause.__cause__
            if cause is not None:
                RACES.spinning = RACES.spinning or str(cause)
            raise
        finally:
            RACES.launch = outer
        found = log.first_race()
        if found:
            RACES.found = RACES.found or found
            raise RaceFound(found)

    for patched in (create_masked_load, create_masked_store, create_atomic_rmw, create_atomic_cas, set_grid_idx,
                    create_barrier, _init_args_hst, __call__):
        patched.kernelgen_races = True
    builder_class.set_grid_idx = set_grid_idx
    builder_class.create_barrier = create_barrier
    builder_class.create_masked_load = create_masked_load
    builder_class.create_masked_store = create_masked_store
    builder_class.create_atomic_rmw = create_atomic_rmw
    builder_class.create_atomic_cas = create_atomic_cas
    interpreter.GridExecutor._init_args_hst = _init_args_hst
    interpreter.GridExecutor.__call__ = __call__
