"""Which GPU a pytest process owns, found without creating a CUDA context.

With ``pytest -n N`` each xdist worker (``PYTEST_XDIST_WORKER`` = gw0, gw1, ...) runs its
launches on one GPU: worker index modulo the number of GPUs, so 4 workers on 2 GPUs put two
workers on each. The choice reaches CUDA through the environment of the worker's executor
child (``CUDA_VISIBLE_DEVICES``, with ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` so that the index means
what ``nvidia-smi`` shows), set before that child initializes CUDA. A process outside xdist
counts as worker 0.

The pytest processes themselves never initialize CUDA (:mod:`kernelgen.gpu.executor` owns the
context), so GPUs are listed with ``nvidia-smi``, which asks the driver through NVML: it creates
no context and allocates nothing on any GPU. Two checks elsewhere in the harness were read for
the same property: ``torch.cuda.is_available()`` (:func:`gpu_unavailable_reason`) calls
``cudaGetDeviceCount``, which initializes the driver (``cuInit``) but creates no context and no
allocation; ``torch.cuda.get_device_capability()`` runs torch's lazy CUDA initialization in the
calling process, so the default target is taken from ``nvidia-smi``'s compute capability
instead (torch is asked only where ``nvidia-smi`` is missing).

A ``CUDA_VISIBLE_DEVICES`` already set for the whole run restricts the pool: its entries
(``nvidia-smi`` indices or GPU UUIDs) are the GPUs the workers share out.
"""

from __future__ import annotations

import csv
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, MutableMapping, Sequence

NVIDIA_SMI_QUERY = "index,uuid,name,compute_cap,driver_version"
WORKER_VARIABLE = "PYTEST_XDIST_WORKER"


@functools.lru_cache(maxsize=1)
def gpu_unavailable_reason() -> str | None:
    """Why GPU work cannot run here, or None when a CUDA GPU is present."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU on this machine"
    return None


@dataclass(frozen=True)
class Gpu:
    """One GPU as the driver lists it (``index``: nvidia-smi's, i.e. PCI bus order)."""

    index: int
    uuid: str
    name: str
    compute_capability: str
    driver: str

    @property
    def target(self) -> str:
        """The compile target, e.g. ``sm_90`` for compute capability 9.0."""
        return "sm_" + self.compute_capability.replace(".", "")


def parse_nvidia_smi(text: str) -> list[Gpu]:
    """GPUs from ``nvidia-smi --query-gpu=index,uuid,name,compute_cap,driver_version
    --format=csv,noheader``."""
    gpus = []
    for row in csv.reader(text.splitlines(), skipinitialspace=True):
        if len(row) == 5 and row[0].strip().isdigit():
            index, uuid, name, capability, driver = (field.strip() for field in row)
            gpus.append(Gpu(int(index), uuid, name, capability, driver))
    return gpus


@functools.lru_cache(maxsize=1)
def list_gpus() -> tuple[Gpu, ...]:
    """The machine's GPUs, from nvidia-smi; empty where it is absent or finds none."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return ()
    try:
        listing = subprocess.run([smi, f"--query-gpu={NVIDIA_SMI_QUERY}", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(parse_nvidia_smi(listing.stdout))


def worker_index(worker: str | None) -> int:
    """``gw3`` -> 3; a process outside xdist (None) is worker 0."""
    if not worker:
        return 0
    match = re.fullmatch(r"gw(\d+)", worker)
    return int(match.group(1)) if match else 0


def gpu_pool(gpus: Sequence[Gpu], visible: str | None) -> list[Gpu]:
    """The GPUs this run may use: all of them, or those ``CUDA_VISIBLE_DEVICES`` names (by
    index or UUID, in its order). An empty value hides every GPU, as it does for CUDA."""
    if visible is None:
        return list(gpus)
    by_name = {str(gpu.index): gpu for gpu in gpus} | {gpu.uuid: gpu for gpu in gpus}
    entries = [entry.strip() for entry in visible.split(",") if entry.strip()]
    return [by_name[entry] for entry in entries if entry in by_name]


def assign_gpu(worker: str | None, pool: Sequence[Gpu]) -> Gpu | None:
    """The GPU that ``worker`` owns: its index modulo the pool's size (None: no GPU)."""
    if not pool:
        return None
    return pool[worker_index(worker) % len(pool)]


def worker_gpu(environ: Mapping[str, str] | None = None, gpus: Sequence[Gpu] | None = None) -> Gpu | None:
    """The GPU this process owns, from its environment and the machine's GPUs."""
    environ = os.environ if environ is None else environ
    pool = gpu_pool(list_gpus() if gpus is None else gpus, environ.get("CUDA_VISIBLE_DEVICES"))
    return assign_gpu(environ.get(WORKER_VARIABLE), pool)


def executor_env(gpu: Gpu | None) -> dict[str, str]:
    """The environment that pins an executor child to ``gpu`` and names the lock through which
    it takes turns on that GPU with other workers' children, and the machine's job-slot lock
    (a timeout under load is retried alone; nothing when there is no GPU)."""
    if gpu is None:
        return {}
    from kernelgen.gpu.timing import ALONE_VARIABLE, LOCK_VARIABLE

    env = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": str(gpu.index)}
    lock, machine = gpu_lock_path(gpu), alone_lock_path()
    env = env if lock is None else {**env, LOCK_VARIABLE: str(lock)}
    return env if machine is None else {**env, ALONE_VARIABLE: str(machine)}


def alone_lock_path(directory: str | None = None) -> Path | None:
    """The machine's job-slot lock (kernelgen.gpu.timing.retried_alone), shared by the workers
    with the same temporary directory; None where it can be neither made nor read."""
    path = Path(directory or tempfile.gettempdir()) / "kernelgen-jobs.lock"
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_CREAT, 0o644))
    except OSError:
        return None
    return path


def gpu_lock_path(gpu: Gpu, directory: str | None = None) -> Path | None:
    """The lock file of ``gpu`` (made if missing, readable by all), shared by the processes that
    run work on it with the same temporary directory: named by the GPU's UUID. None where it can
    be neither made nor read (then workers time without turns)."""
    path = Path(directory or tempfile.gettempdir()) / f"kernelgen-gpu-{gpu.uuid}.lock"
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    except OSError:
        return None
    os.close(descriptor)
    return path


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def cpu_threads(environ: Mapping[str, str] | None = None) -> int:
    """CPU threads per process for one xdist worker: the cores this process may use, shared
    out among the run's workers (``PYTEST_XDIST_WORKER_COUNT``)."""
    environ = os.environ if environ is None else environ
    workers = int(environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    return max(1, cores() // max(workers, 1))


def share_cpu_threads(environ: MutableMapping[str, str] | None = None) -> None:
    """Give this worker and the processes it starts (executor child, compile worker, sandbox)
    their share of the cores, unless ``OMP_NUM_THREADS`` is set for the run.

    torch's default, one thread per core in every process, oversubscribes the cores once
    several workers compute at once: on the 2-GPU H200 machine (32 cores), ``pytest bench/easy
    -n 2 --kg-mode gpu`` took 66 s that way, 46 s with 8 threads per process, and 84 s with -n 1.
    """
    environ = os.environ if environ is None else environ
    if environ.get("OMP_NUM_THREADS") or WORKER_VARIABLE not in environ:
        return
    threads = cpu_threads(environ)
    environ["OMP_NUM_THREADS"] = str(threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)


def gpu_record(gpu: Gpu | None, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What a case result records about where it ran: the xdist worker and its GPU."""
    environ = os.environ if environ is None else environ
    record: dict[str, Any] = {"worker": environ.get(WORKER_VARIABLE, "main")}
    if gpu is not None:
        record |= {"index": gpu.index, "name": gpu.name, "uuid": gpu.uuid}
    return record

