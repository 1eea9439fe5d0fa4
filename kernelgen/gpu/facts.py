"""What the compiler made of a kernel, as facts a model can act on (and a person can read).

:func:`kernel_facts` reads one compiled kernel (:class:`kernelgen.gpu.compile.CompiledKernel`):

* **registers per thread and local memory (spills)** from the cubin's resource usage, as
  ``cuobjdump --dump-resource-usage`` (shipped with Triton) reports them: Triton's own
  ``n_regs``/``n_spills`` come from the driver when a kernel is *loaded*, so a compile without a
  GPU has no other source. Local memory in a Triton kernel is spill space (Triton's
  ``n_spills`` is the same number of bytes / 4).
* **shared memory** per program: Triton's ``shared`` (dynamic) plus the cubin's static shared.
* **global loads and stores** from the PTX: every ``ld.global`` / ``st.global`` with its width
  in bits, ``.v2``/``.v4``/``.v8`` marking a vectorized one; asynchronous copies into shared
  memory count as loads, vectorized when they move 8 or 16 bytes (``cp.async``) or a whole tile
  (TMA, ``cp.async.bulk``).
* **dots and tensor cores**: ``tt.dot`` in the TTIR against ``mma`` / ``wgmma`` in the PTX.
* **an occupancy estimate**: resident warps per SM from registers, shared memory and
  ``num_warps`` under the target's limits (:data:`SM_LIMITS`), computed as CUDA's occupancy
  calculator does (registers are allocated per warp in units of 256 within each of the SM's
  four sub-partitions; each program also reserves 1 KiB of shared memory).

The same facts feed the optimization rounds (:mod:`kernelgen.model.optimize`) and ``kernelgen
compile FILE --facts``; :func:`format_facts` is the one rendering both show.
"""

from __future__ import annotations

import functools
import re
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence, Union

from kernelgen.errors import CompileError, Diagnostic

if TYPE_CHECKING:
    from kernelgen.gpu.compile import CompiledKernel


@dataclass(frozen=True)
class SMLimits:
    """One streaming multiprocessor's limits (CUDA C Programming Guide, table of technical
    specifications per compute capability)."""

    max_warps: int
    max_blocks: int
    registers: int
    shared_bytes: int  # the largest shared-memory carveout per SM
    max_shared_per_block: int
    reserved_shared_per_block: int = 1024
    register_unit: int = 256  # registers are allocated per warp in multiples of this
    sub_partitions: int = 4
    shared_unit: int = 128


SM_LIMITS: dict[str, SMLimits] = {
    "sm_80": SMLimits(max_warps=64, max_blocks=32, registers=65536, shared_bytes=167936, max_shared_per_block=166912),
    "sm_86": SMLimits(max_warps=48, max_blocks=16, registers=65536, shared_bytes=102400, max_shared_per_block=101376),
    "sm_89": SMLimits(max_warps=48, max_blocks=24, registers=65536, shared_bytes=102400, max_shared_per_block=101376),
    "sm_90": SMLimits(max_warps=64, max_blocks=32, registers=65536, shared_bytes=233472, max_shared_per_block=232448),
}


@dataclass(frozen=True)
class Accesses:
    """The global loads (or stores) of a kernel's PTX: instruction counts by width in bits, and
    how many of them are vectorized (``.v2``/``.v4``/``.v8``, or an async copy)."""

    count: int
    vectorized: int
    widths: dict[int, int]

    def describe(self) -> str:
        if not self.count:
            return "none"
        widths = ", ".join(f"{n} x {bits}-bit" for bits, n in sorted(self.widths.items(), reverse=True))
        if self.vectorized == self.count:
            verdict = "all vectorized"
        elif self.vectorized == 0:
            verdict = "not vectorized"
        else:
            verdict = f"{self.vectorized} vectorized, {self.count - self.vectorized} not"
        return f"{self.count} instructions, {verdict} ({widths})"


@dataclass(frozen=True)
class Occupancy:
    """Resident programs and warps per SM, and what limits them first."""

    blocks: int
    warps: int
    max_warps: int
    limited_by: str

    @property
    def fraction(self) -> float:
        return self.warps / self.max_warps


@dataclass(frozen=True)
class KernelFacts:
    """The compiler's facts about one compiled kernel (see the module docstring)."""

    name: str
    target: str
    num_warps: int
    num_stages: int
    registers: int
    local_bytes: int
    shared_bytes: int
    loads: Accesses
    stores: Accesses
    dots: int
    mma: int
    wgmma: int
    occupancy: Occupancy

    @property
    def tensor_cores(self) -> bool:
        return self.mma + self.wgmma > 0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "tensor_cores": self.tensor_cores,
                "occupancy_fraction": self.occupancy.fraction}


# ---------------------------------------------------------------------------------------------
# The PTX

# An instruction's opcode with its qualifiers, after an optional predicate: "ld.global.v4.b32".
_OPCODE = re.compile(r"^\s*(?:@!?%\w+\s+)?((?:ld|st)\.global[\w.:]*|cp\.async[\w.:]*|wgmma\.mma_async[\w.:]*"
                     r"|mma\.sync[\w.:]*)(?:\s+(.*))?$", re.MULTILINE)
_ELEMENT_BITS = re.compile(r"\.[bsuf](8|16|32|64|128)\b")
_VECTOR = re.compile(r"\.v(2|4|8)\b")
_CP_SIZE = re.compile(r"\],\s*(0x10|0x8|0x4|16|8|4)\b")
# A TMA copy moves a whole tile; it is counted as one access of this width.
TMA_BITS = 1024


def ptx_accesses(ptx: str) -> tuple[Accesses, Accesses, int, int]:
    """The global loads and stores of a PTX text, and its ``mma`` and ``wgmma`` counts."""
    loads: dict[int, int] = {}
    stores: dict[int, int] = {}
    vectorized = {"ld": 0, "st": 0}
    mma = wgmma = 0
    for match in _OPCODE.finditer(ptx):
        opcode, operands = match.group(1), match.group(2) or ""
        if opcode.startswith("wgmma"):
            wgmma += 1
            continue
        if opcode.startswith("mma"):
            mma += 1
            continue
        if opcode.startswith("cp.async"):
            shared, global_ = opcode.find("shared"), opcode.find(".global")
            if shared < 0 or global_ < 0:
                continue  # commit_group, wait_group, mbarrier arrivals, L2 prefetches: nothing reaches the SM
            # cp.async.cg.shared.global [dst], [src], 16: a load into shared memory;
            # cp.async.bulk.tensor...: a TMA copy of a whole tile, either way.
            kind = "ld" if shared < global_ else "st"
            size = _CP_SIZE.search(operands)
            bits = int(size.group(1), 0) * 8 if size else TMA_BITS
            table = loads if kind == "ld" else stores
            table[bits] = table.get(bits, 0) + 1
            vectorized[kind] += bits >= 64
            continue
        kind = opcode[:2]
        element = _ELEMENT_BITS.search(opcode)
        lanes = _VECTOR.search(opcode)
        bits = (int(element.group(1)) if element else 32) * (int(lanes.group(1)) if lanes else 1)
        table = loads if kind == "ld" else stores
        table[bits] = table.get(bits, 0) + 1
        vectorized[kind] += lanes is not None
    return (Accesses(sum(loads.values()), vectorized["ld"], loads),
            Accesses(sum(stores.values()), vectorized["st"], stores), mma, wgmma)


def ttir_dots(ttir: str) -> int:
    """How many ``tt.dot`` operations the kernel's TTIR has (each a matrix product of blocks)."""
    return len(re.findall(r"\btt\.dot\b", ttir))


# ---------------------------------------------------------------------------------------------
# The cubin's resource usage

_USAGE = re.compile(r"Function\s+(\S+):\s*REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")


@functools.lru_cache(maxsize=1)
def _cuobjdump() -> str:
    from triton import knobs

    tool = knobs.nvidia.cuobjdump
    if tool is None:
        raise CompileError(Diagnostic("", "no_cuobjdump", "Triton's cuobjdump is not installed: the kernel's "
                                      "register and local-memory use cannot be read"))
    return tool.path


def resource_usage(cubin: bytes, name: str) -> dict[str, int]:
    """``REG``, ``STACK``, ``SHARED`` (static) and ``LOCAL`` of kernel ``name`` in a cubin."""
    with tempfile.TemporaryDirectory(prefix="kernelgen-facts-") as directory:
        path = Path(directory) / "kernel.cubin"
        path.write_bytes(cubin)
        completed = subprocess.run([_cuobjdump(), "--dump-resource-usage", str(path)],
                                   capture_output=True, text=True, timeout=60)
    usages = {m.group(1): m for m in _USAGE.finditer(completed.stdout)}
    found = usages.get(name) or (next(iter(usages.values())) if len(usages) == 1 else None)
    if completed.returncode != 0 or found is None:
        raise CompileError(Diagnostic("", "no_resource_usage", f"cuobjdump reported no resource usage for "
                                      f"{name}: {(completed.stderr or completed.stdout).strip()[:500]}"))
    return {"REG": int(found.group(2)), "STACK": int(found.group(3)), "SHARED": int(found.group(4)),
            "LOCAL": int(found.group(5))}


# ---------------------------------------------------------------------------------------------
# Occupancy


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def estimate_occupancy(target: str, registers: int, shared_bytes: int, num_warps: int) -> Occupancy:
    """Resident programs per SM of a kernel with ``registers`` per thread, ``shared_bytes`` per
    program and ``num_warps`` warps, on ``target``; the smallest of the warp, block, register
    and shared-memory limits (named in ``limited_by``)."""
    sm = SM_LIMITS[target]
    limits = {"warps": sm.max_warps // num_warps, "programs per SM": sm.max_blocks}
    per_warp = _round_up(max(registers, 1) * 32, sm.register_unit)
    warps_by_registers = (sm.registers // sm.sub_partitions // per_warp) * sm.sub_partitions
    limits["registers"] = warps_by_registers // num_warps if per_warp * num_warps <= sm.registers else 0
    per_block = _round_up(shared_bytes + sm.reserved_shared_per_block, sm.shared_unit)
    limits["shared memory"] = sm.shared_bytes // per_block if shared_bytes <= sm.max_shared_per_block else 0
    limited_by = min(limits, key=lambda k: limits[k])
    blocks = limits[limited_by]
    return Occupancy(blocks=blocks, warps=blocks * num_warps, max_warps=sm.max_warps, limited_by=limited_by)


# ---------------------------------------------------------------------------------------------
# The facts


def kernel_facts(compiled: CompiledKernel) -> KernelFacts:
    """The facts about one compiled kernel (its cubin, PTX, TTIR and Triton's metadata)."""
    usage = resource_usage(compiled.cubin, compiled.name)
    loads, stores, mma, wgmma = ptx_accesses(compiled.ptx)
    meta = compiled.metadata
    num_warps = int(meta.get("num_warps", 4))
    shared = int(meta.get("shared", 0)) + usage["SHARED"]
    return KernelFacts(name=compiled.name, target=compiled.target, num_warps=num_warps,
                       num_stages=int(meta.get("num_stages", 3)), registers=usage["REG"],
                       local_bytes=usage["LOCAL"], shared_bytes=shared, loads=loads, stores=stores,
                       dots=ttir_dots(compiled.ttir), mma=mma, wgmma=wgmma,
                       occupancy=estimate_occupancy(compiled.target, usage["REG"], shared, num_warps))


@dataclass
class ProgramFacts:
    """The facts of each launch of a program of several kernels, in launch order."""

    launches: list[KernelFacts]

    def to_dict(self) -> dict[str, Any]:
        return {"launches": [facts.to_dict() for facts in self.launches]}


def document_facts(compiled: Union[CompiledKernel, Sequence[CompiledKernel]]) -> Union[KernelFacts, ProgramFacts]:
    """:func:`kernel_facts` of a compiled kernel, or of each kernel of a compiled program."""
    if isinstance(compiled, (list, tuple)):
        return ProgramFacts([kernel_facts(each) for each in compiled])
    return kernel_facts(compiled)


def _tensor_core_line(facts: KernelFacts) -> str:
    if not facts.dots:
        return "dots: none"
    used = [f"{n} {kind}" for kind, n in (("wgmma", facts.wgmma), ("mma", facts.mma)) if n]
    if used:
        return f"dots: {facts.dots} tt.dot, on tensor cores ({', '.join(used)} instructions in the PTX)"
    return f"dots: {facts.dots} tt.dot, NOT on tensor cores (no mma/wgmma in the PTX: they run as FMAs)"


def format_facts(facts: Union[KernelFacts, ProgramFacts]) -> list[str]:
    """The facts as bullet lines, the same for the model's feedback and for a person (a
    program's: each launch's under its name)."""
    if isinstance(facts, ProgramFacts):
        return [line for i, each in enumerate(facts.launches)
                for line in [f"- launch {i} ({each.name}):", *("  " + item for item in format_facts(each))]]
    occupancy = facts.occupancy
    spills = (f"{facts.local_bytes} bytes of local memory per thread (register spills)" if facts.local_bytes
              else "no spills")
    return [
        f"- compiled for {facts.target} with num_warps {facts.num_warps}, num_stages {facts.num_stages}",
        f"- registers per thread: {facts.registers}; {spills}",
        f"- shared memory per program: {facts.shared_bytes} bytes",
        f"- global loads: {facts.loads.describe()}",
        f"- global stores: {facts.stores.describe()}",
        f"- {_tensor_core_line(facts)}",
        f"- occupancy estimate: {occupancy.blocks} programs = {occupancy.warps} of {occupancy.max_warps} warps "
        f"per SM ({occupancy.fraction:.0%}), limited by {occupancy.limited_by}",
    ]
