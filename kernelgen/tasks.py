"""Benchmark tasks: what a model is asked, how its answer is judged.

A task is one YAML file under ``bench/<tier>/``: the semantics in prose, the signature (inputs
with symbolic shapes, outputs), a PyTorch reference (the correctness oracle, computed in high
precision where it matters), optionally the idiomatic PyTorch ``eager`` code speedups are
measured against, the ranges sizes are drawn from, how inputs are drawn, a tolerance, the
sizes timings use, and a golden AST. The prompt a model
sees is the prose plus the signature rendered from the same data the harness checks, so the
two cannot disagree (the original baseline was judged against references that did not match
its prompts).
"""

from __future__ import annotations

import functools
import math
import os
import random
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from kernelgen import language as L
from kernelgen.errors import Diagnostic, KernelgenError

TIERS = ("easy", "med", "hard")
Tier = Literal["easy", "med", "hard"]

DEFAULT_TOLERANCE = {"f32": (1e-4, 1e-5), "f16": (1e-2, 1e-2), "bf16": (2e-2, 2e-2), "f64": (1e-9, 1e-12),
                     "i32": (0.0, 0.0), "i64": (0.0, 0.0), "bool": (0.0, 0.0),
                     "f8e4m3": (0.125, 2.0 ** -6), "f8e5m2": (0.25, 2.0 ** -6)}


class TaskError(KernelgenError):
    stage = "tasks"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SizeRange(_Model):
    """The values a size name is drawn from. ``cpu_max`` caps it where kernels run in the CPU
    interpreter (no GPU), which is orders of magnitude slower."""

    min: int = Field(1, ge=0)
    max: int = Field(ge=1)
    cpu_max: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> SizeRange:
        if self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        return self


class Domain(_Model):
    """How an input's values are drawn: normal (both signs, the default) scaled by ``scale``,
    uniform in [low, high], or integers in [low, high]."""

    kind: Literal["normal", "uniform", "integers"] = "normal"
    scale: float = 1.0
    low: float = -1.0
    high: float = 1.0

    def describe(self) -> str:
        if self.kind == "normal":
            return f"normal of scale {self.scale:g}"
        return f"{'integers' if self.kind == 'integers' else 'uniform'} in [{self.low:g}, {self.high:g}]"


class ScalarRange(_Model):
    """The values a scalar input is drawn from, per size assignment: uniform in [min, max]
    (log-uniform with ``log``, for eps-like scalars spanning decades; integers for an integer
    scalar), or one of ``values``. A kernel that hard-codes the bench value, or ignores the
    scalar, then fails; the range must make the scalar matter beyond the tolerance."""

    min: float | None = None
    max: float | None = None
    log: bool = False
    values: list[Union[float, int, bool]] | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _one_kind(self) -> ScalarRange:
        bounded = self.min is not None and self.max is not None
        if bounded == (self.values is not None) or (self.values is not None and (self.min, self.max) != (None, None)):
            raise ValueError("give either min and max, or values")
        if bounded and self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        if self.log and not (bounded and self.min > 0):
            raise ValueError("log needs min and max above 0")
        return self

    def describe(self) -> str:
        if self.values is not None:
            return f"one of {self.values}"
        return f"any value in [{self.min:g}, {self.max:g}]"

    def draw(self, rng: random.Random, integer: bool) -> Union[float, int, bool]:
        if self.values is not None:
            return rng.choice(self.values)
        if integer:
            return rng.randint(int(self.min), int(self.max))
        if self.log:
            return math.exp(rng.uniform(math.log(self.min), math.log(self.max)))
        return rng.uniform(self.min, self.max)


class Tolerance(_Model):
    rtol: float = Field(ge=0)
    atol: float = Field(ge=0)


class Signature(_Model):
    inputs: list[L.Input]
    outputs: list[L.Input] = Field(min_length=1)


class Task(_Model):
    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    tier: Tier
    prompt: str = Field(min_length=20)
    signature: Signature
    reference: str
    eager: str | None = None
    sizes: dict[str, SizeRange] = {}
    bench_sizes: dict[str, int] = {}
    # Each scalar input's bench value (timing, FLOP counts) and, optionally, the range it is
    # drawn from per size assignment when checking (else it keeps the bench value).
    scalars: dict[str, Union[float, int, bool]] = {}
    scalar_ranges: dict[str, ScalarRange] = {}
    domains: dict[str, Domain] = {}
    # Where a task promises numerical stability: the domains of some checks' inputs (large
    # magnitudes; those checks also have long rows), so unstable formulas fail.
    extreme_domains: dict[str, Domain] = {}
    tolerance: Tolerance | None = None
    flops: L.Expr = 0
    # The fewest bytes a kernel must move, where it is not every input read once and every
    # output written once (a gather reads the rows its ids name, which the data decides).
    min_bytes: L.Expr | None = None
    golden: L.Kernel

    @field_validator("reference")
    @classmethod
    def _defines_reference(cls, source: str) -> str:
        compile(source, "<reference>", "exec")
        if "def reference(" not in source:
            raise ValueError("the reference source must define `def reference(...)`")
        return source

    @field_validator("eager")
    @classmethod
    def _defines_eager(cls, source: str | None) -> str | None:
        if source is not None:
            compile(source, "<eager>", "exec")
            if "def eager(" not in source:
                raise ValueError("the eager source must define `def eager(...)`")
        return source

    @model_validator(mode="after")
    def _consistent(self) -> Task:
        names = [i.name for i in self.signature.inputs]
        symbols = {d for i in self.signature.inputs + self.signature.outputs for d in (i.shape or [])
                   if isinstance(d, str)}
        missing = symbols - set(self.sizes)
        if missing:
            raise ValueError(f"sizes has no range for {sorted(missing)}")
        unknown = set(self.sizes) - symbols
        if unknown:
            raise ValueError(f"sizes names {sorted(unknown)}, which no input or output uses")
        if set(self.bench_sizes) - set(self.sizes) or set(self.sizes) - set(self.bench_sizes):
            raise ValueError("bench_sizes must give a value for exactly the size names")
        scalar_inputs = {i.name for i in self.signature.inputs if i.shape is None}
        if set(self.scalars) != scalar_inputs:
            raise ValueError(f"scalars must give a value for each scalar input {sorted(scalar_inputs)}")
        for name in list(self.domains) + list(self.extreme_domains):
            if name not in names:
                raise ValueError(f"domains names {name!r}, which is not an input")
        for name in self.scalar_ranges:
            if name not in scalar_inputs:
                raise ValueError(f"scalar_ranges names {name!r}, which is not a scalar input")
        return self

    # -- derived views ---------------------------------------------------------------------

    @property
    def name(self) -> str:
        return f"{self.tier}/{self.id}"

    def tolerance_for(self, dtype: str) -> Tolerance:
        if self.tolerance is not None:
            return self.tolerance
        rtol, atol = DEFAULT_TOLERANCE[dtype]
        return Tolerance(rtol=rtol, atol=atol)

    def reference_function(self) -> Callable[..., Any]:
        return _compiled_source(self.id, self.reference, "reference")

    def eager_function(self) -> Callable[..., Any]:
        """What speedups are measured against: the idiomatic PyTorch of the task in its own
        dtypes (``eager``), where the reference computes in higher precision for accuracy (an
        f16 matmul's reference upcasts to f32, which no one would time as PyTorch's speed)."""
        if self.eager is None:
            return self.reference_function()
        return _compiled_source(self.id, self.eager, "eager")

    def render_signature(self) -> str:
        def shape(spec: L.Input) -> str:
            if spec.shape is not None:
                return f"tensor [{', '.join(map(str, spec.shape))}]"
            drawn = self.scalar_ranges.get(spec.name)
            return "scalar" if drawn is None else f"scalar, {drawn.describe()}"

        lines = ["Inputs, in this order:"]
        lines += [f"  {i.name}: {i.dtype} {shape(i)}" for i in self.signature.inputs]
        lines.append("Outputs (returned, in this order):")
        lines += [f"  {o.name}: {o.dtype} {shape(o)}" for o in self.signature.outputs]
        if self.sizes:
            ranges = ", ".join(f"{n} in [{r.min}, {r.max}]" for n, r in self.sizes.items())
            lines.append(f"Sizes: {ranges}; any value in range, not only powers of two. "
                         "Tensors are contiguous (row-major).")
        if self.extreme_domains:
            drawn = "; ".join(f"{name}: {domain.describe()}" for name, domain in self.extreme_domains.items())
            lines.append(f"Numerical stability is checked: some checks, at large sizes, draw extreme values ({drawn}).")
        return "\n".join(lines)

    def render_prompt(self) -> str:
        """What the model is asked: the semantics and the exact signature."""
        return f"Task {self.id}: {self.prompt.strip()}\n\n{self.render_signature()}"

    def bytes_moved(self, sizes: dict[str, int]) -> int:
        """The fewest bytes a kernel must move: ``min_bytes`` where the task gives it, else
        each input read once and each output written once."""
        if self.min_bytes is not None:
            return self._host_value(self.min_bytes, sizes)
        return self.footprint(sizes)[1]

    def footprint(self, sizes: Mapping[str, int]) -> tuple[int, int]:
        """(elements, bytes) of all tensor inputs and outputs at these sizes."""
        elements = nbytes = 0
        for spec in self.signature.inputs + self.signature.outputs:
            if spec.shape is not None:
                numel = math.prod(d if isinstance(d, int) else sizes[d] for d in spec.shape)
                elements += numel
                nbytes += numel * DTYPE_BYTES[spec.dtype]
        return elements, nbytes

    def flop_count(self, sizes: dict[str, int]) -> int:
        return self._host_value(self.flops, sizes)

    def _host_value(self, expr: L.Expr, sizes: dict[str, int]) -> int:
        """A host expression of the task's sizes and scalars (``flops``, ``min_bytes``)."""
        from kernelgen.host import HostEnv, eval_host

        return int(eval_host(expr, HostEnv(dict(sizes), dict(self.scalars), {})))


DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i64": 8, "bool": 1, "f8e4m3": 1, "f8e5m2": 1}


@functools.lru_cache(maxsize=None)
def _compiled_source(task_id: str, source: str, name: str) -> Callable[..., Any]:
    import torch
    import torch.nn.functional as F

    namespace: dict[str, Any] = {"torch": torch, "F": F, "math": math}
    exec(compile(source, f"<{name} of {task_id}>", "exec"), namespace)
    return namespace[name]


def bench_root() -> Path:
    """Where the task files are: $KERNELGEN_BENCH_DIR, else the checkout's bench/ folder."""
    env = os.environ.get("KERNELGEN_BENCH_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / "bench"


def load_task_file(path: Path) -> Task:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise TaskError(Diagnostic(str(path), "task_syntax", f"not valid YAML: {exc}")) from None
    if not isinstance(data, dict):
        raise TaskError(Diagnostic(str(path), "task_schema", "a task file holds one mapping"))
    tier = path.parent.name
    data.setdefault("tier", tier)
    data.setdefault("id", path.stem)
    try:
        task = Task.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = "/".join(str(p) for p in first["loc"])
        raise TaskError(Diagnostic(str(path), "task_schema", f"{where}: {first['msg']}")) from None
    if task.tier != tier or task.id != path.stem:
        raise TaskError(Diagnostic(str(path), "task_schema",
                                   f"file {tier}/{path.stem} holds task {task.tier}/{task.id}"))
    return task


@functools.lru_cache(maxsize=4)
def _load_all(root: str) -> tuple[Task, ...]:
    tasks: list[Task] = []
    seen: dict[str, Path] = {}
    for tier in TIERS:
        for path in sorted((Path(root) / tier).glob("*.yaml")):
            task = load_task_file(path)
            if task.id in seen:
                raise TaskError(Diagnostic(str(path), "duplicate_task", f"task id {task.id!r} is also in {seen[task.id]}"))
            seen[task.id] = path
            tasks.append(task)
    return tuple(tasks)


def load_tasks(tier: str | None = None, root: Path | None = None) -> list[Task]:
    """Every task (of one tier), in tier then file order."""
    tasks = _load_all(str(root or bench_root()))
    if tier is not None and tier not in TIERS:
        raise TaskError(Diagnostic("", "unknown_tier", f"tier {tier!r} is not one of {TIERS}"))
    return [t for t in tasks if tier is None or t.tier == tier]


def get_task(task_id: str, root: Path | None = None) -> Task:
    """A task by id (``relu``) or by tier/id (``easy/relu``)."""
    wanted = task_id.split("/")[-1]
    for task in load_tasks(root=root):
        if task.id == wanted:
            return task
    raise TaskError(Diagnostic("", "unknown_task", f"no task {task_id!r} under {root or bench_root()}"))
