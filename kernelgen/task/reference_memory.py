"""The GPU memory a task's reference holds at its largest draws, measured without that memory.

GPU mode runs the reference on the GPU at every draw, its largest sizes among them (each size at
its range's maximum, :func:`kernelgen.task.draws.range_max_draw`). The draws' budget counts the
inputs and outputs only; what the reference builds on the way can be far more: SDPA in f64 (no
fused kernel takes f64) holds the S x S scores of every (batch, head) at once, and
alibi_attention_f16's reference needed 74 GiB at B = 4, H = 16, S = 8192, so that a correct kernel
got a harness error (CUDA out of memory) on an 80 GB H100 (2026-12-05). Here the reference runs
on meta tensors (shapes, no data) under a dispatch mode that counts each new storage's bytes while
it lives; the inputs count too. On the meta device SDPA takes its math path, so for f16 and f32,
where CUDA has fused kernels, the figure is an upper bound. A reference that reads values (an
``.item()``, a data-dependent shape, an operator without a meta kernel) cannot run there: its
figure is None, with the reason."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Mapping

from kernelgen.task.spec import Task

# A reference's peak at a GPU draw stays within half an 80 GB card: the workers take turns on the
# GPU (kernelgen.gpu.timing.gpu_turn) and free their caches after each, so the other half is
# room for their contexts and what they keep between turns.
REFERENCE_BYTE_BUDGET = 40 << 30


@dataclass(frozen=True)
class ReferencePeak:
    """The most bytes one reference call holds at once at ``sizes`` (None where it cannot be
    measured on meta tensors, ``why_not`` says why)."""

    task: str
    sizes: dict[str, int]
    nbytes: int | None
    why_not: str | None = None


def reference_peak(task: Task, sizes: Mapping[str, int], seed: int = 0) -> ReferencePeak:
    """The reference's peak memory at ``sizes``: its inputs plus the most bytes of the storages it
    makes that are alive at once (a concrete task: a variant's dtypes bound)."""
    import torch

    from kernelgen.task.verify import make_inputs

    inputs = make_inputs(task, sizes, seed, extreme=True, shapes_only=True)
    storages = {id(v.untyped_storage()): v.untyped_storage() for v in inputs.values() if isinstance(v, torch.Tensor)}
    counter = _storage_counter(set(storages))  # an input returned or changed in place is counted once
    try:
        with counter:
            task.reference_function()(*inputs.values())
    except Exception as error:  # noqa: BLE001 (any failure on meta tensors: not measurable)
        return ReferencePeak(task.id, dict(sizes), None, f"{type(error).__name__}: {str(error).splitlines()[0][:160]}")
    return ReferencePeak(task.id, dict(sizes), sum(s.nbytes() for s in storages.values()) + counter.peak)


def largest_draw_peaks(task: Task) -> list[ReferencePeak]:
    """The reference's peak at each of the task's range-maximum GPU draws (one per size name;
    a task without sizes: its one draw), for each variant."""
    from kernelgen.task.draws import range_max_draw

    peaks = []
    for concrete in task.variant_tasks():
        for sizes in [range_max_draw(concrete, name, gpu=True).sizes for name in concrete.sizes] or [{}]:
            peaks.append(reference_peak(concrete, sizes))
    return peaks


def _storage_counter(known: set[int]) -> Any:
    """A dispatch mode adding each storage an operator returns (not one of ``known``, the ids of
    storages counted already) to ``live`` until it is freed (a storage's Python object lives as
    long as the storage: its finalizer runs when it goes), ``peak`` the most at once."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    class StorageCounter(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.live = self.peak = 0
            self.seen = set(known)

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            result = func(*args, **(kwargs or {}))
            for leaf in tree_leaves(result):
                if isinstance(leaf, torch.Tensor):
                    self._count(leaf.untyped_storage())
            return result

        def _count(self, storage: Any) -> None:
            key = id(storage)
            if key in self.seen:  # a view of a storage already counted
                return
            self.seen.add(key)
            self.live += storage.nbytes()
            self.peak = max(self.peak, self.live)
            weakref.finalize(storage, self._free, key, storage.nbytes())

        def _free(self, key: int, nbytes: int) -> None:
            self.live -= nbytes
            self.seen.discard(key)

    return StorageCounter()
