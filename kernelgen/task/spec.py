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
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, Union

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from kernelgen.lang import nodes as L
from kernelgen.errors import Diagnostic, KernelgenError
from kernelgen.task.metrics import TIERS
from kernelgen.task.ranges import Domain, ScalarRange, SizeRange, StrictModel

if TYPE_CHECKING:
    from kernelgen.task.compare import Tolerance as CompareTolerance

Tier = Literal["easy", "med", "hard", "expert"]

DEFAULT_TOLERANCE = {"f32": (1e-4, 1e-5), "f16": (1e-2, 1e-2), "bf16": (2e-2, 2e-2), "f64": (1e-9, 1e-12),
                     "i32": (0.0, 0.0), "i64": (0.0, 0.0), "bool": (0.0, 0.0),
                     "f8e4m3": (0.125, 2.0 ** -6), "f8e5m2": (0.25, 2.0 ** -6),
                     "i8": (0.0, 0.0), "u8": (0.0, 0.0), "i16": (0.0, 0.0)}


class TaskError(KernelgenError):
    stage = "tasks"


class Tolerance(StrictModel):
    """rtol and atol as torch.isclose takes them (rtol = atol = 0: equal values); or ``steps``
    (no rtol): f16 and bf16 outputs compare in representable steps, as fp8 ones always do
    (:mod:`kernelgen.task.compare`), for a reference that rounds an f32 (or wider) value once, as
    an elementwise op does; outputs of other dtypes take their dtype's default. An ``atol`` with
    ``steps`` counts an element within it of the reference as equal: for outputs that cancel to
    near zero in f32 (a layer norm's ``normed * weight + bias``), where the kernel's few f32 ulps
    of the terms are many steps of the tiny result. ``signed_zeros``:
    a zero must also have the reference's sign (isclose finds -0.0 equal to +0.0), where the
    sign of zero is the task's point (copysign) or the output moves bits (a transpose).
    ``products``: the name of a size K where each output element is a sum of K products of the
    inputs (a matmul's K; the outputs multilinear in the inputs); an element then also passes
    within the rounding an f32 accumulation of them makes on tensor cores
    (:mod:`kernelgen.task.products`)."""

    rtol: float | None = Field(None, ge=0)
    atol: float | None = Field(None, ge=0)
    signed_zeros: bool = False
    steps: bool = False
    products: str | None = None

    @model_validator(mode="after")
    def _one_criterion(self) -> Tolerance:
        given = self.rtol is not None, self.atol is not None
        if self.steps and given[0]:
            raise ValueError("steps replaces rtol: give at most an atol (for outputs that cancel to near zero)")
        if not self.steps and not all(given):
            raise ValueError("give rtol and atol (or steps: true)")
        return self


class Signature(StrictModel):
    inputs: list[L.Input]
    outputs: list[L.Input] = Field(min_length=1)


ArgValue = Union[L.JsonValue, list[int], list[float]]


class Variant(StrictModel):
    """One way the task is called, as PyTorch users call the operator: a binding of each of the
    task's dtype variables (``dtypes``), and ``args``: the value of each host-only input
    (``dtype=`` as a dtype name such as ``f32`` or null, ``dim``, ``keepdim``, a choice) and
    null for an optional tensor the call omits; ``tolerance``: this call's, where the task's
    (or its dtypes' default) does not fit it. A task checks and times every variant."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_]*$")
    dtypes: dict[str, L.Dtype] = {}
    args: dict[str, ArgValue] = {}
    tolerance: Tolerance | None = None

    def describe(self) -> str:
        parts = [f"{name}={dtype}" for name, dtype in self.dtypes.items()]
        parts += [f"{name}={_show_arg(value)}" for name, value in self.args.items()]
        return ", ".join(parts) or "as declared"


def _show_arg(value: ArgValue) -> str:
    if value is None:
        return "None"
    if isinstance(value, str) and value in L.DTYPES:
        from kernelgen.host.plan import TORCH_DTYPES

        return f"torch.{TORCH_DTYPES[value]}"
    return repr(value)


# torch functions that make a tensor from nothing: on the CPU unless told where.
_FACTORIES = frozenset({"arange", "empty", "eye", "full", "linspace", "logspace", "ones", "rand", "randint",
                        "randn", "randperm", "tensor", "zeros"})


def _check_placement(source: str) -> None:
    """A reference or eager twin runs on the inputs' device (the GPU in GPU mode): a tensor
    it makes without ``device=`` lands on the CPU, and mixing the two fails only on a GPU,
    never in CPU mode, where tasks are tested. So every factory call names its device."""
    import ast

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _FACTORIES \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch" \
                and not any(k.arg in ("device", None) for k in node.keywords):
            raise ValueError(f"line {node.lineno}: torch.{node.func.attr}(...) needs device= (e.g. the device "
                             "of an input): the function runs on the inputs' device")


class Task(StrictModel):
    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    tier: Tier
    prompt: str = Field(min_length=20)
    # Dtype variables the signature may name (``dtype: T``); each variant binds every one.
    dtypes: list[L.DtypeVariable] = []
    signature: Signature
    # The calls the task checks and times (kernelgen.task.variants); none: the signature as declared.
    variants: list[Variant] = []
    # Set by the harness on the concrete task of one variant (Task.variant_tasks), never in a file.
    variant: Variant | None = None
    reference: str
    eager: str | None = None
    sizes: dict[str, SizeRange] = {}
    bench_sizes: dict[str, int] = {}
    # Each scalar input's bench value (timing, FLOP counts) and, optionally, the range it is
    # drawn from per size assignment when checking (else it keeps the bench value).
    scalars: dict[str, Union[float, int, bool]] = {}
    scalar_ranges: dict[str, ScalarRange] = {}
    domains: dict[str, Domain] = {}
    # Where ``eager`` draws from PyTorch's generator and the reference from the kernel's Philox
    # stream: scalar values at which both compute one function (dropout's p = 0, an eager check).
    eager_scalars: dict[str, Union[float, int, bool]] = {}
    # Where a task promises numerical stability: the domains of some checks' inputs (large
    # magnitudes, with long rows), so unstable formulas fail.
    extreme_domains: dict[str, Domain] = {}
    # False where the prompt promises centred inputs (kernelgen.task.offset's large common offset).
    offset_draws: bool = True
    # False where the prompt promises finite inputs, or where the golden does not follow PyTorch on
    # NaN, infinities and signed zeros (the YAML says where): no nonfinite draw (kernelgen.task.nonfinite);
    # a list of inputs: those left out of it (the golden departs from PyTorch at their specials only).
    nonfinite_draws: Union[bool, list[str]] = True
    # False where the prompt asks for an intermediate that overflows where the reference's result does not
    # (x**3 in f32): no spread draw past 2**32 (kernelgen.task.spread.WIDE_ORDER).
    wide_spread: bool = True
    # False where the golden follows a stable formula PyTorch's CPU reference does not at a line wholly
    # infinite (Welford's running mean gives NaN where torch's mean of a row of -inf is -inf; PyTorch's
    # CUDA kernels use Welford too): no such lines in the nonfinite draw (kernelgen.task.nonfinite).
    nonfinite_lines: bool = True
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
        _check_placement(source)
        return source

    @field_validator("eager")
    @classmethod
    def _defines_eager(cls, source: str | None) -> str | None:
        if source is not None:
            compile(source, "<eager>", "exec")
            if "def eager(" not in source:
                raise ValueError("the eager source must define `def eager(...)`")
            _check_placement(source)
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
        scalar_inputs = {i.name for i in self.signature.inputs if i.shape is None and i.is_plain}
        if set(self.scalars) != scalar_inputs:
            raise ValueError(f"scalars must give a value for each scalar input {sorted(scalar_inputs)}")
        for name, domain in list(self.domains.items()) + list(self.extreme_domains.items()):
            if name not in names:
                raise ValueError(f"domains names {name!r}, which is not an input")
            problem = _starts_problem(name, domain, self) or _same_as_problem(name, domain, self) \
                or _bound_names_problem(name, domain, self) or _offset_with_problem(name, domain, self)
            if problem is not None:
                raise ValueError(problem)
        if isinstance(self.nonfinite_draws, list) and set(self.nonfinite_draws) - set(names):
            raise ValueError(f"nonfinite_draws names {sorted(set(self.nonfinite_draws) - set(names))}, which are not "
                             "inputs")
        for name, drawn in self.scalar_ranges.items():
            if name not in scalar_inputs:
                raise ValueError(f"scalar_ranges names {name!r}, which is not a scalar input")
            below = self.scalar_ranges.get(drawn.at_least) if drawn.at_least is not None else None
            if drawn.at_least is not None and (below is None or below.model_dump(exclude={"extreme", "at_least"})
                                               != drawn.model_dump(exclude={"extreme", "at_least"})
                                               or self.scalars[drawn.at_least] > self.scalars[name]):
                raise ValueError(f"scalar_ranges: {name} is at least {drawn.at_least!r}, which must be a scalar "
                                 f"drawn from the same range, its bench value at most {name}'s")
            seed = next((i for i in self.signature.inputs if i.name == drawn.at_rand and i.shape is None), None) \
                if drawn.at_rand is not None else None
            if drawn.at_rand is not None and (seed is None or seed.dtype not in ("i32", "i64") or drawn.min is None):
                raise ValueError(f"scalar_ranges: {name} is compared with rand seeded by {drawn.at_rand!r}, which must "
                                 f"be an integer scalar input (and {name} a range with min and max)")
            if not drawn.holds(self.scalars[name]):
                # the timed value unchecked: a kernel may do anything there (cap a window at
                # 512 when the bench's is 1024, and time half the work)
                raise ValueError(f"scalars gives {name} = {self.scalars[name]!r}, which its scalar_ranges "
                                 f"({drawn.describe()}) never draws: the timed value must be a checked one")
        for name in self.eager_scalars:
            if name not in scalar_inputs:
                raise ValueError(f"eager_scalars names {name!r}, which is not a scalar input")
        problem = _variant_problem(self)
        if problem is not None:
            raise ValueError(problem)
        for tolerance in [self.tolerance] + [v.tolerance for v in self.variants]:
            if tolerance is not None and tolerance.products is not None and tolerance.products not in self.sizes:
                raise ValueError(f"tolerance: products names {tolerance.products!r}, which is not a size "
                                 f"({', '.join(sorted(self.sizes))})")
        return self

    # -- derived views ---------------------------------------------------------------------

    @property
    def name(self) -> str:
        return f"{self.tier}/{self.id}"

    @property
    def in_place(self) -> bool:
        """Whether the task's operator changes an input (its golden writes an output ``into``
        one): every answer is then called through its wrapper, so that what it leaves in its
        inputs is judged (:func:`kernelgen.task.verify.inputs_as_reference`)."""
        return any(out.into is not None for out in self.golden.outputs)

    def variant_tasks(self) -> list[Task]:
        """The concrete task of each variant (its dtypes bound, ``variant`` set), in order; a
        task without variants is its own one."""
        return [self._concrete(v) for v in self.variants] or [self]

    def _concrete(self, variant: Variant) -> Task:
        def bound(spec: L.Input) -> L.Input:
            return spec.model_copy(update={"dtype": variant.dtypes.get(spec.dtype, spec.dtype)}) \
                if spec.dtype is not None else spec

        signature = Signature(inputs=[bound(i) for i in self.signature.inputs],
                              outputs=[bound(o) for o in self.signature.outputs])
        return self.model_copy(update={"signature": signature, "dtypes": [], "variants": [], "variant": variant,
                                       "tolerance": variant.tolerance or self.tolerance})

    def tolerance_for(self, dtype: str) -> CompareTolerance:
        """What an output (or in-place input) of ``dtype`` is compared with."""
        from kernelgen.task.compare import Tolerance as CompareTolerance

        own = self.tolerance
        if own is None or own.steps:  # steps: rtol and atol for the dtypes that do not step
            rtol, atol = DEFAULT_TOLERANCE[dtype]
        else:
            rtol, atol = own.rtol, own.atol
        steps = own is not None and own.steps
        return CompareTolerance(rtol, atol, own is not None and own.signed_zeros, steps,
                                step_atol=(own.atol or 0.0) if steps else 0.0)

    def reference_function(self) -> Callable[..., Any]:
        return _compiled_source(self.id, self.reference, "reference")

    def eager_function(self) -> Callable[..., Any]:
        """What speedups are measured against: the idiomatic PyTorch of the task in its own
        dtypes (``eager``), where the reference computes in higher precision for accuracy (an
        f16 matmul's reference upcasts to f32, which no one would time as PyTorch's speed)."""
        if self.eager is None:
            return self.reference_function()
        return _compiled_source(self.id, self.eager, "eager")

    def nonfinite_inputs(self) -> list[str]:
        """The float inputs checked with NaN, infinities and signed zeros among their values
        (:mod:`kernelgen.task.nonfinite`): plain tensors of f16, bf16, f32 or f64 whose ordinary
        domain holds each element on its own (normal, or uniform: its bounds then keep NaN and
        the values past them out), not ties, nor those ``nonfinite_draws`` lists; none where it is
        false. Where the golden multiplies matrices (``dot``) only vectors (a bias, a row's scale, an
        epilogue's: round 33's relu as z * (z > 0) passed at a bias of -inf), since a matmul's result
        at NaN and infinities is its BLAS's (the GPU machine's PyTorch 2.11 gave NaN where 2.13's gave
        inf for one f16 linear), and its operands are matrices (a block's scales too)."""
        from kernelgen.check.sequence import nodes

        if not self.nonfinite_draws:
            return []
        vectors = self.golden is not None and any(isinstance(node, L.Dot) for node, _ in nodes(self.golden, ""))
        names = []
        for spec in self.signature.inputs:
            domain = self.domains.get(spec.name)
            if spec.is_plain and spec.shape is not None and spec.dtype in ("f16", "bf16", "f32", "f64") \
                    and (not vectors or len(spec.shape) == 1) \
                    and (self.nonfinite_draws is True or spec.name not in self.nonfinite_draws) \
                    and (domain is None or (domain.kind in ("normal", "uniform") and domain.by_element
                                            and not domain.ties)):
                names.append(spec.name)
        return names

    def render_signature(self) -> str:
        def shape(spec: L.Input) -> str:
            if spec.shape is not None:
                optional = ", optional (default None)" if spec.optional else ""
                return f"tensor [{', '.join(map(str, spec.shape))}]{optional}"
            drawn = self.scalar_ranges.get(spec.name)
            return "scalar" if drawn is None else f"scalar, {drawn.describe()}"

        def describe(spec: L.Input) -> str:
            if not spec.is_plain:
                binds = f", binds {spec.binds}" if spec.binds else ""
                return f"  {spec.name}: role {spec.role}{binds}" + (f", default {spec.default!r}" if spec.optional else "")
            optional = ", optional (default None)" if spec.shape is None and spec.present is not None else ""
            return f"  {spec.name}: {spec.dtype} {shape(spec)}{optional}"

        lines = []
        if self.dtypes:
            lines.append("Dtype variables: " + "; ".join(f"{v.name} in {{{', '.join(v.of)}}}" for v in self.dtypes))
        lines.append("Inputs, in this order:")
        lines += [describe(i) for i in self.signature.inputs]
        lines.append("Outputs (returned, in this order):")
        # An output whose shape the call's arguments set (keepdim, a stride) leaves it to the prompt.
        lines += [f"  {o.name}: {o.dtype} {shape(o) if o.shape is not None else 'tensor, shaped as stated above'}"
                  for o in self.signature.outputs]
        if self.variants:
            lines.append("Calls checked and timed (one kernel must serve them all):")
            lines += [f"  {v.name}: {v.describe()}" for v in self.variants]
            if self.dtypes or any(i.present is not None for i in self.signature.inputs):
                lines.append("Every other call a PyTorch user may make (each binding of the dtype variables with each "
                             "presence of the optional arguments) is checked too, at small sizes.")
        if self.sizes:
            ranges = ", ".join(f"{n} in [{r.min}, {r.max}]" for n, r in self.sizes.items())
            lines.append(f"Sizes: {ranges}; any value in range, not only powers of two. "
                         "Tensors are contiguous (row-major).")
        if self.extreme_domains:
            drawn = "; ".join(f"{name}: {domain.describe()}" for name, domain in self.extreme_domains.items())
            lines.append(f"Extreme values are checked: some checks, at large sizes, draw them ({drawn}).")
        if self.nonfinite_inputs():
            lines.append(f"IEEE special values are checked: NaN, +-inf and +-0 among the values of "
                         f"{', '.join(self.nonfinite_inputs())} (those within a uniform domain's bounds), "
                         f"with PyTorch's results for them.")
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
        widest = {v.name: max(DTYPE_BYTES[d] for d in v.of) for v in self.dtypes}
        elements = nbytes = 0
        for spec in self.signature.inputs + self.signature.outputs:
            if spec.shape is not None:
                numel = math.prod(d if isinstance(d, int) else sizes[d] for d in spec.shape)
                elements += numel
                nbytes += numel * (DTYPE_BYTES.get(spec.dtype) or widest[spec.dtype])
        return elements, nbytes

    def flop_count(self, sizes: dict[str, int]) -> int:
        return self._host_value(self.flops, sizes)

    def _host_value(self, expr: L.Expr, sizes: dict[str, int]) -> int:
        """A host expression of the task's sizes and scalars (``flops``, ``min_bytes``)."""
        from kernelgen.host.plan import HostEnv, eval_host

        return int(eval_host(expr, HostEnv(dict(sizes), dict(self.scalars), {})))


def _starts_problem(name: str, domain: Domain, task: Task) -> str | None:
    """What is wrong with a ``starts`` domain of input ``name``, or None: it needs a 1-D
    integer tensor and a total that is a size name."""
    if domain.kind != "starts":
        return None
    spec = next(i for i in task.signature.inputs if i.name == name)
    if spec.shape is None or len(spec.shape) != 1 or spec.dtype not in ("i32", "i64"):
        return f"domains/{name}: segment starts are drawn for a 1-D i32 or i64 tensor"
    if domain.total not in task.sizes:
        return f"domains/{name}/total: {domain.total!r} is not a size name of the task"
    return None


def _bound_names_problem(name: str, domain: Domain, task: Task) -> str | None:
    """What is wrong with the names a domain's bounds and specials use, or None: each is a
    size name or a choice input (the call's value: :func:`kernelgen.task.verify.domain_env`)."""
    allowed = set(task.sizes) | {i.name for i in task.signature.inputs if i.role == "choice"}

    def names(expr: Any) -> set[str]:
        if isinstance(expr, str):
            return set() if expr in L.FLOAT_LITERAL_NAMES else {expr}
        if isinstance(expr, BaseModel):
            return {n for field in type(expr).model_fields for n in names(getattr(expr, field))
                    if field != "op"}
        return set()

    for part in ("low", "high", "specials"):
        value = getattr(domain, part)
        unknown = sorted(set().union(*(names(v) for v in (value if isinstance(value, list) else [value]))) - allowed)
        if unknown:
            return f"domains/{name}/{part}: {unknown[0]!r} is neither a size name nor a choice input"
    return None


def _offset_with_problem(name: str, domain: Domain, task: Task) -> str | None:
    """What is wrong with a domain's ``offset_with`` or ``offset_draws``, or None: ``offset_with``
    names another float tensor input, ``name`` a float tensor of a normal domain; ``offset_draws``
    moves a normal domain or a uniform one of literal bounds."""
    if domain.offset_draws and (domain.kind not in ("normal", "uniform") or not all(
            isinstance(b, (int, float)) for b in (domain.low, domain.high))):
        return f"domains/{name}/offset_draws: only a normal domain, or a uniform one of literal bounds, is moved"
    if domain.offset_with is None:
        return None
    floats = {i.name for i in task.signature.inputs if i.shape is not None and i.dtype in ("f16", "bf16", "f32", "f64")}
    if domain.offset_with not in floats - {name} or name not in floats or domain.kind != "normal":
        return (f"domains/{name}/offset_with: {domain.offset_with!r} must be another float tensor input, and "
                f"{name!r} a float tensor of a normal domain")
    return None


def _same_as_problem(name: str, domain: Domain, task: Task) -> str | None:
    """What is wrong with a domain's ``same_as``, or None: it names an input drawn before
    ``name``, of its shape and dtype."""
    if domain.same_as is None:
        return None
    inputs = [i.name for i in task.signature.inputs]
    spec, other = (next((i for i in task.signature.inputs if i.name == n), None) for n in (name, domain.same_as))
    if other is None or inputs.index(domain.same_as) >= inputs.index(name):
        return f"domains/{name}/same_as: {domain.same_as!r} is not an input before {name!r}"
    if other.shape != spec.shape or other.dtype != spec.dtype or spec.shape is None:
        return f"domains/{name}/same_as: {domain.same_as!r} is not a tensor of the shape and dtype of {name!r}"
    return None


def _variant_problem(task: Task) -> str | None:
    """What is wrong with a task's dtype variables and variants (where, and what), or None."""
    declared = {v.name: v for v in task.dtypes}
    if len(declared) != len(task.dtypes):
        return "dtypes: a dtype variable is declared twice"
    specs = [("inputs", i, s) for i, s in enumerate(task.signature.inputs)]
    specs += [("outputs", i, s) for i, s in enumerate(task.signature.outputs)]
    for kind, index, spec in specs:
        if spec.dtype is not None and spec.dtype not in L.DTYPES and spec.dtype not in declared:
            return (f"signature/{kind}/{index}/dtype: {spec.dtype} is not a dtype nor a dtype variable "
                    f"declared in dtypes (declared: {', '.join(declared) or 'none'})")
    host_only = {s.name: s for s in task.signature.inputs if not s.is_plain}
    omittable = {s.name for s in task.signature.inputs if s.is_plain and s.optional
                 and (s.shape is not None or s.present is not None)}
    needs_variants = [n for n, s in host_only.items() if not s.optional]
    if not task.variants and (declared or needs_variants):
        what = f"dtype variables {list(declared)}" if declared else f"the host-only input {needs_variants[0]!r}"
        return f"variants: the task has {what}; list the calls it checks in variants"
    names: set[str] = set()
    for index, variant in enumerate(task.variants):
        where = f"variants/{index}"
        if variant.name in names:
            return f"{where}/name: {variant.name!r} names another variant too"
        names.add(variant.name)
        if set(variant.dtypes) != set(declared):
            return f"{where}/dtypes: binds {sorted(variant.dtypes)}, the task's dtype variables are {sorted(declared)}"
        for name, dtype in variant.dtypes.items():
            if dtype not in declared[name].of:
                return f"{where}/dtypes/{name}: {dtype} is not among {name}'s dtypes {declared[name].of}"
        for name, value in variant.args.items():
            if name not in host_only and name not in omittable:
                return (f"{where}/args/{name}: not a host-only input nor an optional tensor of the signature "
                        f"(those are {sorted(host_only) + sorted(omittable)})")
            if name in omittable and value is not None:
                return f"{where}/args/{name}: an optional tensor's argument is null (omitted) or left out (drawn)"
            role = host_only[name].role if name in host_only else None
            if role == "dtype" and value is not None and value not in L.DTYPES:
                return f"{where}/args/{name}: a dtype= argument is null or one of {list(L.DTYPES)}, got {value!r}"
            if role == "dim" and not (value is None or isinstance(value, (int, list)) and not isinstance(value, bool)):
                return f"{where}/args/{name}: dim is an int, a list of ints or null, got {value!r}"
            if role == "choice" and value not in (host_only[name].choices or []):
                return f"{where}/args/{name}: {value!r} is not one of its choices {host_only[name].choices}"
            if role == "keepdim" and not isinstance(value, bool):
                return f"{where}/args/{name}: keepdim is true or false, got {value!r}"
        for name in needs_variants:
            if name not in variant.args:
                return f"{where}/args: gives no value for the host-only input {name!r}"
    return None


DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i32": 4, "i64": 8, "bool": 1, "f8e4m3": 1, "f8e5m2": 1,
               "i8": 1, "u8": 1, "i16": 2}


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
    return Path(__file__).resolve().parents[2] / "bench"


# libyaml's parser where PyYAML was built with it: the pure-Python one takes about 3.5 s over
# the benchmark's task files, which every pytest process and every command that lists tasks reads.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_task_file(path: Path) -> Task:
    try:
        data = yaml.load(path.read_text(), Loader=_YAML_LOADER)
    except yaml.YAMLError as exc:
        raise TaskError(Diagnostic(str(path), "task_syntax", f"not valid YAML: {exc}")) from None
    if not isinstance(data, dict):
        raise TaskError(Diagnostic(str(path), "task_schema", "a task file holds one mapping"))
    tier = path.parent.name
    if "variant" in data:
        raise TaskError(Diagnostic(str(path), "task_schema",
                                   "variant: set by the harness on one call's task; a file lists its calls in 'variants'"))
    data.setdefault("tier", tier)
    data.setdefault("id", path.stem)
    try:
        task = Task.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = "/".join(str(p) for p in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        raise TaskError(Diagnostic(str(path), "task_schema", f"{where}: {message}" if where else message)) from None
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
