"""Autotuning: the harness, not the model, picks a kernel's block sizes, warps and stages.

A model writes its ``meta`` values and ``num_warps`` blind; Triton's own kernels rely on
``@triton.autotune`` for exactly this choice. The search space comes from the kernel itself:

* ``quick``: the configuration as written (the kernel's ``num_stages``, default 3) and its
  one-at-a-time variations: each power-of-two meta value halved and doubled, each other
  ``num_warps`` in {2, 4, 8, 16}, each other ``num_stages`` in {1..5}. A few dozen candidates
  at most, so that tuning costs seconds per kernel (compile included);
* ``full``: the product of each meta value times 1/2, 1, 2 and 4, every ``num_warps`` and every
  ``num_stages``, nearest to the as-written configuration first, capped at :data:`FULL_MAX`.

Candidates the checker rejects (a block dim that is no longer a power of two, a literal past
its range...) or that would give a block fewer elements than threads are dropped before
compiling; the rest compile in parallel in a process pool (the compile cache is shared; its
processes busy at once are this process's share of the cores among those compiling now), and
those whose shared memory exceeds the target's limit are dropped before timing. The GPU times
each candidate as soon as it is built; the fastest is then verified on every drawn size
assignment like any answer, and one that fails is dropped for the next fastest. The
configuration as written, already verified, always remains the fallback.

A program of several launches (:mod:`kernelgen.check.sequence`) is not tuned: it runs and is timed
as written. Its meta values are shared by every launch and shape its scratch tensors, so its
candidates would be joint configurations, with a warps/stages choice per launch; that search is
left for later, and the pipeline and ``kernelgen tune`` say so rather than tune one launch.

The choice is cached on disk by (kernel hash, GPU name, size bucket, mode) under the compile
cache's directory, so a rerun of the same kernel on the same GPU pays nothing
(:func:`cached_tune`); a cached choice is verified again before it is used.

A call of a polymorphic kernel (a TritonBench wrapper, a task's listed call) also selects a
:class:`Variant`: its choices' indices, presence flags and dtype binding. Those are never
searched; each candidate is checked for the variant, and the variant is part of the cache's
bucket, so that each call gets its own choice (:mod:`kernelgen.gpu.calls`).

Timing and verifying are parameters of :func:`select` and :func:`search`: the pipeline passes
the executor's GPU jobs, the tests pass plain functions (a seam, not a mock of the GPU).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Collection, Iterator, Mapping, Sequence

from kernelgen.lang import nodes as L
from kernelgen.check.checker import CheckedKernel, check
from kernelgen.errors import KernelgenError

MODES = ("off", "quick", "full")
WARPS = (2, 4, 8, 16)  # the language's num_warps goes to 16, as Inductor's reduction configs do
STAGES = (1, 2, 3, 4, 5)
DEFAULT_STAGES = 3
QUICK_FACTORS = (0.5, 2.0)
FULL_FACTORS = (0.5, 1.0, 2.0, 4.0)
QUICK_MAX = 32
FULL_MAX = 256
# Shared memory one block may use (opt-in maximum, bytes), per target.
SHARED_LIMIT = {"sm_90": 227 * 1024, "sm_80": 163 * 1024, "sm_86": 99 * 1024, "sm_89": 99 * 1024}
CACHE_SUBDIR = "tune"
# A configuration replaces the one as written only when the search timed it this much faster: the
# search's few repetitions are noisier than the case's final timing (on the H200 a 1% "win" of
# rmsnorm_f16's search timed 2% slower in the final 100 repetitions).
MIN_GAIN = 0.03
MAX_WORKERS = 8  # compile processes at most (default: a share of the cores, kernelgen.gpu.compile_share)


@dataclass(frozen=True, order=True)
class Config:
    """One point of the search space: meta values, warps per program, pipelining stages."""

    meta: tuple[tuple[str, int], ...]
    num_warps: int
    num_stages: int = DEFAULT_STAGES

    @classmethod
    def as_written(cls, kernel: L.Kernel, variant: Variant | None = None) -> Config:
        """The kernel's own configuration; its meta values the variant's (a ``when`` by dtype)."""
        from kernelgen.lang.generic import meta_values

        values = meta_values(kernel, dict(variant.dtypes) if variant is not None and variant.dtypes else None)
        return cls(tuple(values.items()), kernel.num_warps, kernel.num_stages)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Config:
        return cls(tuple((str(k), int(v)) for k, v in data["meta"].items()), int(data["num_warps"]),
                   int(data["num_stages"]))

    def to_dict(self) -> dict[str, Any]:
        return {"meta": dict(self.meta), "num_warps": self.num_warps, "num_stages": self.num_stages}

    def label(self) -> str:
        return " ".join([*(f"{k}={v}" for k, v in self.meta), f"warps={self.num_warps}", f"stages={self.num_stages}"])


@dataclass(frozen=True)
class Variant:
    """What a call fixes beside the searched values (see the module doc): meta values of its
    choices and presence flags, and its dtype binding. Empty for a task's kernel."""

    meta: tuple[tuple[str, int], ...] = ()
    dtypes: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, meta: Mapping[str, int] | None = None, dtypes: Mapping[str, str] | None = None) -> Variant:
        return cls(tuple(sorted((meta or {}).items())), tuple(sorted((dtypes or {}).items())))

    def check(self, kernel: L.Kernel, config: Config) -> CheckedKernel:
        """``kernel`` checked for this variant with ``config``'s meta values."""
        return check(kernel, {**dict(self.meta), **dict(config.meta)}, dict(self.dtypes) or None)

    def label(self) -> str:
        return " ".join([*(f"{k}={v}" for k, v in self.meta), *(f"{k}={v}" for k, v in self.dtypes)])


NO_VARIANT = Variant()


@dataclass
class Candidate:
    config: Config
    checked: CheckedKernel


@dataclass
class Pruned:
    config: Config
    reason: str


@dataclass
class Timed:
    config: Config
    kernel_ms: float


@dataclass
class Choice:
    """What the tuning chose and why: the timed candidates fastest first, those dropped."""

    config: Config
    kernel_ms: float
    as_written: Config
    as_written_ms: float | None
    timed: list[Timed] = field(default_factory=list)
    pruned: list[Pruned] = field(default_factory=list)
    failed: list[Pruned] = field(default_factory=list)
    seconds: float = 0.0
    cached: bool = False

    def record(self, mode: str) -> dict[str, Any]:
        """The fields of :class:`kernelgen.task.results.Tuning`."""
        return {"mode": mode, "config": self.config.to_dict(), "as_written": self.as_written.to_dict(),
                "kernel_ms": self.kernel_ms, "as_written_ms": self.as_written_ms,
                "speedup_vs_as_written": (self.as_written_ms / self.kernel_ms
                                          if self.as_written_ms and self.kernel_ms else None),
                "candidates": len(self.timed), "pruned": len(self.pruned),
                "failed": [f"{f.config.label()}: {f.reason}" for f in self.failed],
                "seconds": self.seconds, "cached": self.cached}


def validate_mode(mode: str, option: str = "--kg-tune") -> str:
    if mode not in MODES:
        raise ValueError(f"{option} takes {', '.join(MODES)}, not {mode!r}")
    return mode


# -- the search space ------------------------------------------------------------------------


def _power_of_two(value: int) -> bool:
    return value >= 1 and value & (value - 1) == 0


def _scaled(value: int, factors: Sequence[float]) -> list[int]:
    """``value`` times each factor, for a power of two only (other meta values are not block
    sizes: a loop count or a group size stays as written)."""
    if not _power_of_two(value):
        return [value]
    return sorted({int(value * f) for f in factors if value * f >= 1})


def search_space(kernel: L.Kernel, mode: str, variant: Variant | None = None) -> list[Config]:
    """The candidate configurations of ``kernel`` (for ``variant``'s dtypes), the as-written one
    first (see the module doc)."""
    validate_mode(mode, "mode")
    base = Config.as_written(kernel, variant)
    if mode == "off":
        return [base]
    if mode == "quick":
        found = [base]
        for i, (name, value) in enumerate(base.meta):
            for scaled in _scaled(value, QUICK_FACTORS):
                meta = base.meta[:i] + ((name, scaled),) + base.meta[i + 1:]
                found.append(Config(meta, base.num_warps, base.num_stages))
        # A block and the warps that run it scaled together (the same elements per thread), as
        # Inductor's reduction heuristics pair rows or a reduction block with num_warps.
        for i, (name, value) in enumerate(base.meta):
            for scaled in _scaled(value, QUICK_FACTORS):
                warps = base.num_warps * 2 if scaled > value else base.num_warps // 2
                if scaled != value and warps in WARPS:
                    meta = base.meta[:i] + ((name, scaled),) + base.meta[i + 1:]
                    found.append(Config(meta, warps, base.num_stages))
        found += [Config(base.meta, w, base.num_stages) for w in WARPS if w != base.num_warps]
        found += [Config(base.meta, base.num_warps, s) for s in STAGES if s != base.num_stages]
        return list(dict.fromkeys(found))[:QUICK_MAX]
    metas = itertools.product(*[[(name, v) for v in _scaled(value, FULL_FACTORS)] for name, value in base.meta])
    every = [Config(tuple(meta), w, s) for meta in metas for w in WARPS for s in STAGES]
    every.sort(key=lambda c: (_distance(base, c), c))
    return list(dict.fromkeys([base, *every]))[:FULL_MAX]


def _distance(base: Config, other: Config) -> float:
    """How far a configuration is from the as-written one (log2 steps summed)."""
    steps = sum(abs(math.log2(v / dict(base.meta)[k])) for k, v in other.meta)
    return (steps + abs(math.log2(other.num_warps / base.num_warps))
            + abs(other.num_stages - base.num_stages))


# -- pruning --------------------------------------------------------------------------------


def largest_block(checked: CheckedKernel) -> int:
    """The most elements of any block value in the kernel (1 for a kernel of scalars)."""
    return max((math.prod(t.shape) for t in checked.types.values() if t.shape), default=1)


def prune(kernel: L.Kernel, configs: Sequence[Config],
          variant: Variant = NO_VARIANT) -> tuple[list[Candidate], list[Pruned]]:
    """The configurations the checker accepts (for ``variant``) and whose blocks have at least
    as many elements as the program has threads (more warps than that only idle); the rest
    with the reason."""
    kept: list[Candidate] = []
    pruned: list[Pruned] = []
    base = Config.as_written(kernel, variant)
    for config in configs:
        try:
            checked = variant.check(kernel, config)
        except KernelgenError as error:
            pruned.append(Pruned(config, f"checker: {error.diagnostics[0].code}: {error.diagnostics[0].message}"))
            continue
        threads = 32 * config.num_warps
        if config != base and largest_block(checked) < threads:
            pruned.append(Pruned(config, f"largest block has {largest_block(checked)} elements, "
                                         f"fewer than {threads} threads"))
            continue
        kept.append(Candidate(config, checked))
    return kept, pruned


def shared_memory_problem(metadata: Mapping[str, Any], target: str) -> str | None:
    """Why a compiled kernel cannot launch for its shared memory on ``target``, or None."""
    limit = SHARED_LIMIT.get(target)
    shared = int(metadata.get("shared", 0))
    if limit is not None and shared > limit:
        return f"shared memory {shared // 1024} KB exceeds {target}'s {limit // 1024} KB"
    return None


# -- compiling in parallel --------------------------------------------------------------------


def _compile_in_pool(checked: CheckedKernel, target: str, num_warps: int | None, num_stages: int | None,
                     divisible_by_16: tuple[str, ...]) -> tuple[str, Any]:
    """One candidate in a pool process (pool processes are daemons and cannot start the
    isolated compile worker: they compile in process; a crash breaks the pool, see below)."""
    from kernelgen.gpu.compile import compile_job, compile_kernel

    return compile_job(lambda: compile_kernel(checked, target, num_warps, num_stages,
                                              divisible_by_16=divisible_by_16, in_process=True), ())


_POOLS: dict[int, ProcessPoolExecutor] = {}


def compile_pool(workers: int) -> ProcessPoolExecutor:
    """This process's pool of at most ``workers`` compile processes (started as work comes),
    kept for the next kernel (starting one costs seconds of imports); stopped at exit."""
    import atexit
    import multiprocessing

    if workers not in _POOLS:
        if not _POOLS:
            atexit.register(lambda: [pool.shutdown(wait=False, cancel_futures=True) for pool in _POOLS.values()])
        _POOLS[workers] = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    return _POOLS[workers]


def _in_pool(jobs: Sequence[Any], submit: Callable[[ProcessPoolExecutor, Any], Any],
             workers: int | None) -> Iterator[tuple[Any, Any]]:
    """Each job with its future once done, run in the compile pool; a job the pool broke under
    comes back with None (the pool is dropped, the next call starts a fresh one). With
    ``workers`` None, as many jobs run at once as this process's share of the cores among the
    processes compiling now (:mod:`compile_share`), asked again as each job finishes: a worker
    left alone at a run's end takes the idle cores."""
    from concurrent.futures import FIRST_COMPLETED, wait

    from kernelgen.gpu.compile_share import compiling

    size = MAX_WORKERS if workers is None else max(1, workers)
    pool = compile_pool(size)
    waiting = list(reversed(jobs))
    running: dict[Any, Any] = {}
    broken = False
    with compiling(size) as share:
        def fill() -> None:  # before the finished go back, so that compiling goes on while they are timed
            nonlocal broken
            allowed = size if workers is not None else share()
            while waiting and not broken and len(running) < allowed:
                try:
                    running[submit(pool, waiting[-1])] = waiting[-1]
                except BrokenProcessPool:
                    broken = True
                else:
                    waiting.pop()

        fill()
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            finished = [(running.pop(future), future) for future in done]
            broken = broken or any(isinstance(future.exception(), BrokenProcessPool) for _, future in finished)
            fill()
            for job, future in finished:
                yield job, None if isinstance(future.exception(), BrokenProcessPool) else future
    if broken:
        _POOLS.pop(size).shutdown(wait=False)
        for job in reversed(waiting):
            yield job, None


def compile_candidates(candidates: Sequence[Candidate], target: str, divisible_by_16: Collection[str] = (),
                       workers: int | None = None) -> Iterator[tuple[Candidate, Any]]:
    """Each candidate with its CompiledKernel, or the KernelgenError compiling it raised, in
    the order they finish. A C++ crash breaks the pool: the candidates it left unfinished are
    compiled one by one in the crash-isolated compile worker (:func:`compile.compile_kernel`)
    and the next call starts a fresh pool."""
    from kernelgen.gpu.compile import compile_kernel, job_result

    divisible = tuple(sorted(set(divisible_by_16)))
    leftover: list[Candidate] = []
    submit = lambda pool, c: pool.submit(_compile_in_pool, c.checked, target, c.config.num_warps,  # noqa: E731
                                         c.config.num_stages, divisible)
    for candidate, future in _in_pool(candidates, submit, workers):
        if future is None:
            leftover.append(candidate)
            continue
        try:
            yield candidate, job_result(*future.result())
        except KernelgenError as error:
            yield candidate, error
    for candidate in leftover:
        try:
            yield candidate, compile_kernel(candidate.checked, target, candidate.config.num_warps,
                                            candidate.config.num_stages, divisible_by_16=divisible)
        except KernelgenError as error:
            yield candidate, error


def precompile(kernels: Sequence[CheckedKernel], target: str, workers: int | None = None) -> None:
    """Fill the compile cache with each kernel as written (its own warps and stages, no
    specialization), in parallel: a later :func:`compile.compile_kernel` of it is a cache hit.
    A kernel that fails to compile here, or crashes the pool, is left for that later compile
    to report in the crash-isolated worker."""
    for _ in _in_pool(kernels, lambda pool, k: pool.submit(_compile_in_pool, k, target, None, None, ()), workers):
        pass


# -- searching and choosing -----------------------------------------------------------------


TimeFn = Callable[[Candidate, Any], float]
VerifyFn = Callable[[Candidate], None]


def search(kernel: L.Kernel, mode: str, target: str, time_fn: TimeFn | None,
           divisible_by_16: Collection[str] = (), workers: int | None = None,
           space: Sequence[Config] | None = None, variant: Variant = NO_VARIANT) -> tuple[list[Timed], list[Pruned]]:
    """Build the search space (or take ``space``), prune it, compile the rest in parallel and
    time each candidate as soon as it is built (``time_fn(candidate, compiled) -> ms``; None:
    build only). Returns the timed candidates fastest first and every dropped one with why."""
    candidates, pruned = prune(kernel, search_space(kernel, mode, variant) if space is None else space, variant)
    timed: list[Timed] = []
    for candidate, compiled in compile_candidates(candidates, target, divisible_by_16, workers):
        if isinstance(compiled, KernelgenError):
            first = compiled.diagnostics[0]
            pruned.append(Pruned(candidate.config, f"compile: {first.code}: {first.message.splitlines()[0]}"))
            continue
        problem = shared_memory_problem(compiled.metadata, target)
        if problem is not None:
            pruned.append(Pruned(candidate.config, problem))
            continue
        if time_fn is None:
            continue
        try:
            timed.append(Timed(candidate.config, time_fn(candidate, compiled)))
        except KernelgenError as error:
            pruned.append(Pruned(candidate.config, f"timing: {error.diagnostics[0].code}"))
    # Compiles finish in any order: equal times keep the search space's order, so a tie goes to
    # the configuration nearer the as-written one on every run.
    rank = {c.config: i for i, c in enumerate(candidates)}
    timed.sort(key=lambda t: (t.kernel_ms, rank[t.config]))
    return timed, pruned


def select(kernel: L.Kernel, timed: Sequence[Timed], verify: VerifyFn,
           variant: Variant = NO_VARIANT) -> tuple[Timed, list[Pruned]]:
    """The fastest timed configuration that ``verify`` accepts (it raises KernelgenError on a
    wrong result), and those it rejected. The as-written configuration was verified by the
    pipeline already: reaching it, or a time within :data:`MIN_GAIN` of it, ends the search, and
    it is the answer when nothing clearly faster passes or nothing was timed (a search that did
    not time it keeps the fastest that passes)."""
    base = Config.as_written(kernel, variant)
    as_written_ms = next((t.kernel_ms for t in timed if t.config == base), math.nan)
    failed: list[Pruned] = []
    for entry in timed:
        if entry.config == base or entry.kernel_ms > as_written_ms * (1 - MIN_GAIN):
            break
        try:
            verify(Candidate(entry.config, variant.check(kernel, entry.config)))
        except KernelgenError as error:
            first = error.diagnostics[0]
            failed.append(Pruned(entry.config, f"{error.outcome.value}: {first.code}: {first.message[:200]}"))
            continue
        return entry, failed
    return Timed(base, as_written_ms), failed


def tune(kernel: L.Kernel, mode: str, target: str, time_fn: TimeFn, verify: VerifyFn,
         divisible_by_16: Collection[str] = (), workers: int | None = None, variant: Variant = NO_VARIANT) -> Choice:
    """Search, then select (see the module doc); the seconds spent include compiling."""
    start = time.perf_counter()
    timed, pruned = search(kernel, mode, target, time_fn, divisible_by_16, workers, variant=variant)
    chosen, failed = select(kernel, timed, verify, variant)
    base = Config.as_written(kernel, variant)
    as_written_ms = next((t.kernel_ms for t in timed if t.config == base), None)
    return Choice(chosen.config, chosen.kernel_ms, base, as_written_ms, timed, pruned, failed,
                  time.perf_counter() - start)


# -- the cache --------------------------------------------------------------------------------


def kernel_hash(kernel: L.Kernel) -> str:
    text = json.dumps(kernel.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def size_bucket(sizes: Mapping[str, int]) -> str:
    """Sizes rounded up to powers of two: nearby problem sizes share a tuning choice."""
    return ",".join(f"{name}={1 << max(0, int(value) - 1).bit_length()}" for name, value in sorted(sizes.items()))


def bucket_label(sizes: Mapping[str, int], variant: Variant = NO_VARIANT) -> str:
    """A bucket as text (``N=8192``, ``M=1,N=4096 T=f32``): the sizes' bucket, then the variant."""
    return " ".join(part for part in (size_bucket(sizes), variant.label()) if part)


class TuneCache:
    """Choices on disk, one small JSON file per (kernel hash, GPU name, size bucket, mode), the
    bucket including a call's variant where it has one; written atomically (a private
    temporary file, then ``os.replace``)."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        from kernelgen.gpu.compile import cache_directory

        self.directory = Path(directory) if directory is not None else cache_directory() / CACHE_SUBDIR

    def key(self, kernel: L.Kernel, gpu: str, sizes: Mapping[str, int], mode: str,
            variant: Variant = NO_VARIANT) -> str:
        parts = [kernel_hash(kernel), gpu, size_bucket(sizes), mode]
        if variant != NO_VARIANT:  # a task's kernel keeps the keys it had before variants
            parts.append(variant.label())
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def load(self, kernel: L.Kernel, gpu: str, sizes: Mapping[str, int], mode: str,
             variant: Variant = NO_VARIANT) -> Choice | None:
        try:
            data = json.loads(self._path(self.key(kernel, gpu, sizes, mode, variant)).read_text())
            return Choice(Config.from_dict(data["config"]), float(data["kernel_ms"]),
                          Config.from_dict(data["as_written"]), data.get("as_written_ms"),
                          seconds=0.0, cached=True)
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def store(self, kernel: L.Kernel, gpu: str, sizes: Mapping[str, int], mode: str, choice: Choice,
              variant: Variant = NO_VARIANT) -> None:
        path = self._path(self.key(kernel, gpu, sizes, mode, variant))
        data = {"config": choice.config.to_dict(), "kernel_ms": choice.kernel_ms,
                "as_written": choice.as_written.to_dict(), "as_written_ms": choice.as_written_ms,
                "gpu": gpu, "sizes": dict(sizes), "variant": variant.label()}
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(json.dumps(data))
            os.replace(temporary, path)
        except OSError:
            temporary.unlink(missing_ok=True)


def cached_tune(cache: TuneCache, kernel: L.Kernel, gpu: str, sizes: Mapping[str, int], mode: str, target: str,
                time_fn: TimeFn, verify: VerifyFn, divisible_by_16: Collection[str] = (),
                variant: Variant = NO_VARIANT, workers: int | None = None) -> Choice:
    """The cached choice for (kernel, GPU, bucket of ``sizes``, mode, variant) when it still
    passes ``verify`` (the verification may have grown since it was stored); else a fresh
    :func:`tune`, stored when it timed anything. ``seconds`` counts the whole call, cache hit or
    not."""
    start = time.perf_counter()
    choice = cache.load(kernel, gpu, sizes, mode, variant)
    if choice is not None and choice.config != Config.as_written(kernel, variant):  # as written: verified already
        try:
            verify(Candidate(choice.config, variant.check(kernel, choice.config)))
        except KernelgenError:
            choice = None
    if choice is None:
        choice = tune(kernel, mode, target, time_fn, verify, divisible_by_16, workers, variant)
        if choice.timed:  # a search that timed nothing (a timeout, say) decided nothing to keep
            cache.store(kernel, gpu, sizes, mode, choice, variant)
    choice.seconds = time.perf_counter() - start
    return choice


def gpu_name(target: str) -> str:
    """The name the cache keys a choice by: this worker's GPU, else the compile target."""
    from kernelgen.gpu.devices import worker_gpu

    gpu = worker_gpu()
    return gpu.name if gpu is not None else target


def describe(timed: Sequence[Timed], pruned: Sequence[Pruned]) -> list[str]:
    """Lines for a person: the timed candidates fastest first, then the dropped ones."""
    lines = [f"{t.kernel_ms:9.4f} ms  {t.config.label()}" for t in timed]
    lines += [f"  dropped  {p.config.label()}: {p.reason}" for p in pruned]
    return lines



def choice_lines(choice: Choice) -> list[str]:
    """A choice for a person (a result's ``tuning`` artifact): what was chosen, the timed and
    dropped candidates, and the faster ones that failed verification."""
    return [f"chosen: {choice.config.label()}{' (cached)' if choice.cached else ''}",
            *describe(choice.timed, choice.pruned),
            *(f"  failed verification  {f.config.label()}: {f.reason}" for f in choice.failed)]
