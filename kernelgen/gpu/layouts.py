"""Which thread of a program touches each element of each memory access, as Triton lays it out.

The interpreter's barrier check (:mod:`kernelgen.interp.barrier`) must know when two accesses of
one element within a program are made by different threads: only a barrier orders those. Without
a compile it takes two accesses of one block shape at one position as one thread's; Triton does
not. Its coalescing pass gives every load, store and atomic a layout of its own from its pointer's
contiguity and alignment, and a variant compiled for arguments that are multiples of 16 (as a
launch at such sizes is: :func:`kernelgen.gpu.compile.divisible_params`) may differ again: at
M, N multiples of 16, a running column sum kept in f32 scratch is loaded 8 elements a thread
(the layout of the bf16 load beside it) and stored 4 a thread, so the next trip's load of an
element is another warp's (red-team round 32). The final TTGIR holds each access's layout, and its
locations are the AST's JSON paths (the lowering's), so the owner of every element of every
access is read off the compiled kernel, in every variant a GPU may launch.

The owner of an element is the lowest thread holding it: Triton stores a replicated element from
that one thread (its redundant-data mask clears the broadcast bits of the lane and warp ids), and
the interpreter counts a replicated load as its lowest thread's unless its value reaches other
threads (:mod:`kernelgen.interp.replicated`, which it keeps)."""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence, Union

import torch

from kernelgen.check.checked import Checked, CheckedKernel, child, launches_of
from kernelgen.check.sequence import nodes
from kernelgen.check.tile_access import AS_LOAD
from kernelgen.gpu.bench_variant import bench_plans
from kernelgen.gpu.compile import CompiledKernel, compile_kernel, divisible_params
from kernelgen.interp.barrier import Layouts
from kernelgen.lang import nodes as L

# The TTGIR operations that read or write global memory through a block of pointers.
_ACCESS_OPS = ("tt.load", "tt.store", "tt.atomic_rmw", "tt.atomic_cas", "ttg.async_copy_global_to_local")
_OP = re.compile(r"(?:=\s*|^\s*)(" + "|".join(re.escape(op) for op in _ACCESS_OPS) + r")\b")
_ALIAS = re.compile(r"^(#\w+)\s*=\s*(#ttg\.\w+<.*>)\s*$")
_LOC_ALIAS = re.compile(r'^(#loc\d*)\s*=\s*loc\("([^"]*)":\d+:\d+\)')
_LOC_USE = re.compile(r'loc\((?:(#loc\d*)|"([^"]*)":\d+:\d+)\)\s*$')
_ACROSS = re.compile(r'"tt\.(reduce|scan)"\(.*\baxis = (\d+)')
_MAX_THREADS = 1024  # 32 warps
_MAX_CLASSES = 1 << 20  # the barrier check's lane numbers (kernelgen.interp.barrier)


def document_threads(checked: Checked, compiled: Union[CompiledKernel, list[CompiledKernel]],
                     bench_sizes: Mapping[str, int], scalars: Mapping[str, Any],
                     target: str) -> list[Layouts | None] | None:
    """Per launch of a document, :func:`access_threads` over ``compiled`` (the variant compiled
    without specialization) and those launches at ``bench_sizes`` and at sizes like them compile:
    every integer param there a multiple of 16 specialized, and each such set less one (Triton
    specializes each argument on its own: a GEMM at K = 4096, N = 4095 widens a reload to its
    x tiles' 8 elements a thread while the store through the same pointer keeps 1, round 34); for
    the launches that :func:`needs_threads`; None when none does."""
    launches = launches_of(checked)
    if not any(needs_threads(each) for each in launches):
        return None
    variants = [compiled if isinstance(compiled, list) else [compiled]]
    bench = bench_plans(checked, bench_sizes, scalars)
    if bench is not None:
        sets = [tuple(divisible_params(plan)) for plan in bench]
        names = sorted({name for each in sets for name in each})
        for left_out in [None] + (names if len(names) > 1 else []):
            each_set = [tuple(n for n in params if n != left_out) for params in sets]
            built = [compile_kernel(launch, target=target, divisible_by_16=params)
                     for launch, params in zip(launches, each_set)]
            variants.append(built)
    return [access_threads(launch, [variant[i].ttgir for variant in variants]) if needs_threads(launch) else None
            for i, launch in enumerate(launches)]


def block_accesses(checked: CheckedKernel) -> dict[str, list[str]]:
    """The paths of a launch's loads, stores and atomics through blocks of pointers (scalars and
    tile accesses aside), by the tensor each may touch."""
    found: dict[str, list[str]] = {}
    for node, path in nodes(checked.kernel.body, "/body"):
        if isinstance(node, (L.Load, L.Store, L.Atomic)) and not path.endswith("/" + AS_LOAD):
            t = checked.types[child(path, "ptr")]
            if t.shape:
                for base in t.bases:
                    found.setdefault(base, []).append(path)
    return found


def needs_threads(checked: CheckedKernel) -> bool:
    """Whether two block accesses of one tensor, one of them a write, may meet within a program
    (a launch whose tensors are each only read, or written by one statement, never asks), and the
    launch has no tile access (TMA copies are ordered by their own rules)."""
    if any(isinstance(node, (L.TileLoad, L.TileStore)) for node, _ in nodes(checked.kernel.body, "/body")):
        return False
    writes = {base for node, path in nodes(checked.kernel.body, "/body")
              if isinstance(node, (L.Store, L.Atomic)) for base in checked.types[child(path, "ptr")].bases}
    return any(len(paths) > 1 and base in writes for base, paths in block_accesses(checked).items())


def access_threads(checked: CheckedKernel, ttgirs: Sequence[str]) -> Layouts | None:
    """Per block access's path, a number for the thread that touches each element of its block
    (flat, row-major) in every variant's TTGIR of ``ttgirs`` at once: equal for two accesses exactly
    where every variant gives them one thread (``Layouts.classes``: each number's thread per
    variant); and the reductions and scans that move values between warps (through shared memory,
    behind a barrier) in every variant. None where some variant lacks an access's layout (an
    access the compiler removed, a layout this module does not read): the barrier check then
    keeps its own rule for the whole launch."""
    paths = sorted({path for each in block_accesses(checked).values() for path in each})
    per_variant: dict[str, list[torch.Tensor]] = {path: [] for path in paths}
    barriers: set[str] | None = None
    for ttgir in ttgirs:
        across = _across_warps(ttgir)
        barriers = across if barriers is None else barriers & across
        owners = _owners_by_path(ttgir)
        for path in paths:
            found = owners.get(path)
            if found is None or found[0] != tuple(checked.types[child(path, "ptr")].shape):
                return None
            per_variant[path].append(found[1])
    if not paths:
        return Layouts({}, frozenset(barriers or ()))
    stacked = [torch.stack(per_variant[path], dim=1) for path in paths]  # [elements, variants] each
    classes, numbers = torch.unique(torch.cat(stacked), dim=0, return_inverse=True)
    if len(classes) > _MAX_CLASSES:
        return None
    threads = dict(zip(paths, numbers.to(torch.int32).split([len(each) for each in stacked])))
    return Layouts(threads, frozenset(barriers or ()), tuple(tuple(row) for row in classes.tolist()))


def _aliases(ttgir: str) -> tuple[dict[str, str], dict[str, str]]:
    """The layout aliases and the location aliases (to JSON paths) a TTGIR text defines."""
    aliases: dict[str, str] = {}
    locs: dict[str, str] = {}
    for line in ttgir.splitlines():
        if m := _ALIAS.match(line):
            aliases[m.group(1)] = m.group(2)
        elif m := _LOC_ALIAS.match(line):
            locs[m.group(1)] = m.group(2)
    return aliases, locs


def _path(line: str, locs: dict[str, str]) -> str | None:
    """The JSON path an operation's line is located at."""
    where = _LOC_USE.search(line)
    if where is None:
        return None
    return where.group(2) if where.group(2) is not None else locs.get(where.group(1))


def _across_warps(ttgir: str) -> set[str]:
    """The paths of the reductions and scans whose operand spans several warps along their axis:
    Triton combines the warps' partial results through shared memory, with bar.sync between."""
    aliases, locs = _aliases(ttgir)
    found: set[str] = set()
    opened: list[int | None] = []  # per open region of a generic op: a reduction's or scan's axis
    for line in ttgir.splitlines():
        text = line.strip()
        if text.endswith("({"):
            m = _ACROSS.search(text)
            opened.append(int(m.group(2)) if m else None)
        elif text.startswith("})") and opened:
            axis = opened.pop()
            block = _first_block(text.split(" : ", 1)[-1])
            path = _path(text, locs)
            if axis is None or block is None or path is None:
                continue
            bases = _linear_bases(block[1], block[0], aliases)
            if bases is not None and any(vector[axis] for vector in bases[2]):
                found.add(path)
    return found


def _owners_by_path(ttgir: str) -> dict[str, tuple[tuple[int, ...], torch.Tensor]]:
    """Each access path's block shape and the owning thread of each of its elements; a path
    whose operations disagree (or whose layout is not read) is left out."""
    aliases, locs = _aliases(ttgir)
    found: dict[str, tuple[tuple[int, ...], torch.Tensor] | None] = {}
    for line in ttgir.splitlines():
        if not _OP.search(line):
            continue
        path = _path(line, locs)
        pointer = _pointer_block(line.rsplit(" loc(", 1)[0])
        if path is None or pointer is None:
            continue
        shape, layout = pointer
        owners = _owners(layout, shape, aliases)
        seen = found.get(path, ...)
        if owners is None or (seen is not ... and (seen is None or seen[0] != shape or not torch.equal(seen[1], owners))):
            found[path] = None
        elif seen is ...:
            found[path] = (shape, owners)
    return {path: value for path, value in found.items() if value is not None}


def _pointer_block(text: str) -> tuple[tuple[int, ...], str] | None:
    """The shape and layout of the first block of pointers in an operation's type."""
    start = text.find("x!tt.ptr<")
    return None if start < 0 else _first_block(text[text.rfind("tensor<", 0, start):])


def _first_block(text: str) -> tuple[tuple[int, ...], str] | None:
    """The shape and layout of the first ``tensor<...>`` type in ``text``."""
    opening = text.find("tensor<")
    body = None if opening < 0 else _bracketed(text, opening + len("tensor"))
    if body is None:
        return None
    parts = _split_top(body)
    dims = re.match(r"(\d+(?:x\d+)*)x", parts[0])
    if len(parts) != 2 or dims is None:
        return None
    return tuple(int(d) for d in dims.group(1).split("x")), parts[1].strip()


def _bracketed(text: str, at: int) -> str | None:
    """The text inside the angle brackets opening at ``text[at]``."""
    depth = 0
    for i in range(at, len(text)):
        if text[i] in "<{[(":
            depth += 1
        elif text[i] in ">}])" and not (text[i] == ">" and text[i - 1] == "-"):
            depth -= 1
            if depth == 0:
                return text[at + 1:i]
    return None


def _split_top(text: str) -> list[str]:
    """``text`` split at its commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<{[(":
            depth += 1
        elif ch in ">}])" and not (ch == ">" and text[i - 1] == "-"):
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _fields(attribute: str) -> dict[str, str]:
    """The ``{key = value, ...}`` fields of a layout attribute's text."""
    body = _bracketed(attribute, attribute.index("<"))
    if body is None or not body.startswith("{"):
        return {}
    return {key.strip(): value.strip() for key, _, value in
            (part.partition("=") for part in _split_top(body[1:-1]))}


def _ints(text: str) -> list[int]:
    return [int(v) for v in re.findall(r"-?\d+", text)]


def _bases(text: str) -> list[list[int]]:
    return [_ints(v) for v in re.findall(r"\[([^\[\]]*)\]", text)]


def _owners(layout: str, shape: tuple[int, ...], aliases: dict[str, str]) -> torch.Tensor | None:
    """The lowest thread holding each element of a block of ``shape`` in ``layout`` (TTGIR text:
    an alias or an attribute); None for a layout this module does not read."""
    bases = _linear_bases(layout, shape, aliases)
    if bases is None:
        return None
    registers, lanes, warps = bases
    numel = 1
    for extent in shape:
        numel *= extent
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]

    def spans(vectors: list[list[int]]) -> torch.Tensor:
        """Every XOR combination of ``vectors`` (coordinates), index i setting bit j for vector j."""
        points = torch.zeros((1, len(shape)), dtype=torch.int64)
        for vector in vectors:
            points = torch.cat([points, points ^ torch.tensor(vector, dtype=torch.int64)])
        return points

    per_thread = spans(registers)
    threads = spans(lanes + [[0] * len(shape)] * (5 - len(lanes)) + warps)  # lane bits first: thread id order
    if threads.shape[0] > _MAX_THREADS:
        return None
    coords = (threads[:, None, :] ^ per_thread[None, :, :]).reshape(-1, len(shape))
    flat = (coords * torch.tensor(strides, dtype=torch.int64)).sum(-1)
    ids = torch.arange(threads.shape[0], dtype=torch.int64).repeat_interleave(per_thread.shape[0])
    owners = torch.full((numel,), _MAX_THREADS, dtype=torch.int64)
    owners.scatter_reduce_(0, flat, ids, reduce="amin")
    if bool((owners == _MAX_THREADS).any()):
        return None
    return owners.to(torch.int32)


def _linear_bases(layout: str, shape: tuple[int, ...], aliases: dict[str, str]) \
        -> tuple[list[list[int]], list[list[int]], list[list[int]]] | None:
    """The register, lane and warp bases of ``layout`` over ``shape`` (Triton's linear layout)."""
    text = aliases.get(layout, layout)
    if text.startswith("#ttg.linear<"):
        fields = _fields(text)
        if _bases(fields.get("block", "[]")):
            return None
        return _bases(fields.get("register", "[]")), _bases(fields.get("lane", "[]")), _bases(fields.get("warp", "[]"))
    try:
        attribute = _attribute(text, aliases)
    except (KeyError, ValueError):  # fields missing or malformed: not read
        return None
    if attribute is None:
        return None
    builder, attr = attribute
    try:
        linear = builder.to_linear_layout(attr, list(shape))
    except (RuntimeError, ValueError):  # a layout Triton cannot lay over this shape
        return None
    if linear.block_bases:
        return None
    return [list(b) for b in linear.reg_bases], [list(b) for b in linear.lane_bases], [list(b) for b in linear.warp_bases]


_BUILDER: list[Any] = []


def _attribute(text: str, aliases: dict[str, str]) -> tuple[Any, Any] | None:
    """A blocked, nvidia_mma or slice layout's text as Triton's attribute (for its linear layout)."""
    if not _BUILDER:
        from triton._C.libtriton import gluon_ir, ir

        context = ir.context()
        ir.load_dialects(context)
        _BUILDER.extend([context, gluon_ir.GluonOpBuilder(context)])
    builder = _BUILDER[1]
    text = aliases.get(text, text)
    fields = _fields(text) if "<" in text else {}
    if text.startswith("#ttg.blocked<"):
        if "CTAsPerCGA" in fields and set(_ints(fields["CTAsPerCGA"])) != {1}:
            return None
        return builder, builder.get_blocked_layout(_ints(fields["sizePerThread"]), _ints(fields["threadsPerWarp"]),
                                                   _ints(fields["warpsPerCTA"]), _ints(fields["order"]), [])
    if text.startswith("#ttg.nvidia_mma<"):  # a dot's result, or a vector beside it (a bias)
        if "CTAsPerCGA" in fields and set(_ints(fields["CTAsPerCGA"])) != {1}:
            return None
        return builder, builder.get_mma_layout([int(fields["versionMajor"]), int(fields["versionMinor"])],
                                               _ints(fields["warpsPerCTA"]), [], _ints(fields["instrShape"]))
    if text.startswith("#ttg.slice<"):
        parent = _attribute(fields["parent"], aliases)
        if parent is None:
            return None
        return builder, builder.get_slice_layout(int(fields["dim"]), parent[1])
    return None
