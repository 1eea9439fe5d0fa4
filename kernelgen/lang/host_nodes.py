"""The kernel and its host side (see :class:`Kernel`): the call's inputs, outputs, params, meta,
host values, scratch and launches. Part of :mod:`kernelgen.lang.nodes`, which imports every
class here and completes them (``Expr``, ``Stmt``, ``Dim``, ``DtypeRef``, ``DtypeVariable`` and
``DerivedDtype`` are its own, named here as forward references); import them from there.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, BeforeValidator, Field

from kernelgen.lang.fields import DTYPE_VARIABLE, Name, Stages
from kernelgen.lang.fields import exact_int as _exact_int
from kernelgen.lang.leaf_nodes import Node

JsonValue = Union[bool, int, float, str, None]
# An input's default: a JSON value, or ints or floats (a role ints or floats argument's).
DefaultValue = Union[JsonValue, list[int], list[float]]


class Input(Node):
    """A call argument, in call order: a tensor if ``shape`` is given (dims: size names, or
    ints >= 1), else a scalar (a 1-element tensor passes as its value); either needs
    ``dtype``. With ``default`` (null included) it is optional. An optional tensor or scalar of
    default null names ``present``: a meta name, 1 if the call passes it, else 0 and the tensor
    is zeros (its sizes appear in a required tensor), the scalar 0. ``number``: a
    tensor that may be passed as a Python number (or a tensor broadcasting to it): under the
    elementwise view it broadcasts with the rest; otherwise it is expanded to its shape, whose
    sizes appear in a tensor input that is not ``number``. ``batch`` (view null, not
    ``number``): ``shape[0]``, one size name shared by the batch inputs and only there, stands
    for any number of leading dims (0 too), broadcast between batched inputs as torch.matmul
    does and flattened into it. ``optional_dims``: sizes of ``shape`` a call of lower rank
    leaves out, all together, never all (matmul's 1-D operands: ``["M"]`` of
    ``["B","M","K"]``); the kernel sees them as 1. ``role``: a host-only argument, which takes no ``shape`` or ``number``:
    ``dim`` (int, ints or null for all: the rows view's reduced dims), ``keepdim`` (both with
    the rows view only; else a choice ``[false, true]`` and Output ``call_shapes``), ``out`` (a tensor the
    first output is copied into: write just
    ``{"name":"out","role":"out","default":null}``), ``inplace`` (a flag: if true, the first
    output goes into its ``into`` or the first input), ``choice`` (one of
    ``choices``, default among them; in the kernel a meta name equal to its index; a string
    argument lists the strings torch takes), ``fixed`` (needs ``default``; only
    it is accepted), ``dtype`` (a
    torch dtype or null, default null; ``binds``: the dtype variable it sets, and the inputs
    of that dtype are converted to it, as torch's ``dtype=``; null: promotion), ``ints`` (an
    int or a tuple/list of ints, e.g. ``kernel_size=(3, 3)``: ``items`` names a meta per item,
    an int fills them all; default null with ``present``: items 1 when None), ``floats`` (as
    ints, e.g. ``output_ratio=(0.5, 0.5)``: ``items`` names a scalar per item, ``dtype`` f32
    or f64; None: 0.0). Metas that choice, present and ints create are not declared in ``meta``.
    Breaking these
    is bad_signature. Inputs, sizes, outputs, meta and host values have distinct names."""

    name: Name
    dtype: DtypeRef | None = None
    shape: list[Dim] | None = None
    default: DefaultValue = None
    number: bool = False
    batch: bool = False
    optional_dims: list[Name] | None = None
    role: Literal["dim", "keepdim", "out", "inplace", "choice", "fixed", "dtype", "ints", "floats"] | None = None
    choices: list[JsonValue] | None = None
    binds: DtypeRef | None = None
    present: Name | None = None
    items: list[Name] | None = None

    @property
    def optional(self) -> bool:
        return "default" in self.model_fields_set

    @property
    def is_plain(self) -> bool:
        """An argument the kernel sees (a tensor or a scalar), not a host-only one."""
        return self.role is None


class CallShape(Node):
    """``when``: a bool host expression."""

    when: Expr
    shape: list[Expr]


class Output(Node):
    """A returned tensor; ``shape``: integer host expressions. It starts as garbage: an element no
    store writes fails (output_not_written: none is), one loaded or atomically updated before a
    write is read_before_write. ``batch``: ``shape[0]`` is a batch size name, the batched
    inputs' broadcast dims in the call. A dim of an ``optional_dims`` size the call left out is
    dropped. ``call_shapes`` (view null, not batch): the call gets it reshaped to the first
    whose ``when`` holds (same element count, else bad_arguments), e.g. ``keepdim``'s rank.
    ``into``: the tensor input an in-place operator writes (same shape, dtype), then returned
    (if a role ``inplace`` flag is true): the output is copied into it, or with ``alias`` (no
    init, batch, call_shapes, inplace flag; the input's dims) IS its memory, starting as its
    values, all written: store only what changes; no param binds it (aliased_input).
    ``raises`` (a precondition, e.g. ``ValueError``): a bool output, not batch, not returned
    (another is); a true element raises it with ``message``. ``init`` (e.g. 0 or "-inf" for
    atomics to accumulate into; bad_value): it starts so, every element written."""

    name: Name
    dtype: DtypeRef
    shape: list[Expr]
    batch: bool = False
    call_shapes: list[CallShape] = []
    into: Name | None = None
    raises: Literal["ValueError", "RuntimeError", "TypeError", "IndexError", "ZeroDivisionError"] | None = None
    message: str | None = None
    init: Union[bool, int, float, Literal["inf", "-inf", "nan"], None] = None
    alias: bool = False

    @property
    def prefilled(self) -> bool:
        """Whether the output holds values before any launch (an ``init`` fill, or the aliased
        input's): every element counts as written, none is read before a write."""
        return self.init is not None or self.alias


class Param(Node):
    """Kernel parameter bound to a host ``value`` (default: ``name``): a tensor gives its
    pointer (no ``dtype``); an integer host expression an i32 scalar, or ``dtype`` i64 (needed
    for values >= 2**31: bad_arguments), or the scalar input's own dtype; a float one an f32
    (f64: an f64 input's, or ``dtype`` f64; bad_binding otherwise); a bool scalar an i32. The body sees params, meta and its own names
    only (undefined_name)."""

    name: Name
    value: Expr | None = None
    dtype: Literal["i32", "i64", "f32", "f64"] | None = None


class HostValue(Node):
    """A named host expression for shapes, params and grids, evaluated in order (a later or
    unknown name: undefined_name)."""

    name: Name
    value: Expr


class MetaWhen(Node):
    """A meta value for the variants whose binding has these dtypes (variable to dtype: ``{"T": "f32"}``)."""

    dtypes: dict[Annotated[str, Field(pattern=DTYPE_VARIABLE)], "Dtype"]
    value: int


class Meta(Node):
    """A compile-time constant (constexpr), e.g. a block size: an i32 scalar in the body, a
    block dim (a power of two there), a name in host expressions; ``value`` >= 1. The harness
    may tune it (kept only if still correct). ``when``: values for some dtype bindings, the first
    that matches (e.g. a smaller tile for f32, whose tiles take twice the shared memory)."""

    name: Name
    value: int
    when: list[MetaWhen] = []


class Scratch(Node):
    """A tensor the launches share, allocated per call, not returned; ``shape``: integer host
    expressions; ``zero``: zero-filled, else garbage: an element is loaded (or atomically
    updated) only after a store unless ``zero`` (read_before_write); some launch loads it (scratch_unread)."""

    name: Name
    dtype: DtypeRef
    shape: list[Expr]
    zero: bool = False


class Launch(Node):
    """One kernel of a program: launches run in order on one stream, each seeing the document's
    inputs, outputs, scratch, sizes and meta; params, grid and body as Kernel's (num_warps,
    num_stages: default the document's). Races are judged per launch."""

    name: Name
    params: list[Param]
    grid: Annotated[list[Expr], Field(min_length=1, max_length=3)]
    num_warps: Annotated[Literal[1, 2, 4, 8, 16], BeforeValidator(_exact_int)] | None = None
    num_stages: Stages | None = None
    body: list[Stmt]


class Kernel(Node):
    """``view`` adapts calls of any rank: ``elementwise`` broadcasts the tensor inputs (numbers
    too) and shows the kernel each flattened, as 1-D ``[N]`` (each tensor input declared
    ``[N]``); ``rows`` needs a role ``dim`` input, moves its axes last and
    shows each rank-2 input as ``[M, N]`` (N: the reduced elements; one shape of size names,
    broadcast first; other ranks pass as they are). Outputs (rank 1 under elementwise,
    1 or 2 under rows) are reshaped back to the call's shapes. Breaking these is bad_signature.
    ``grid``: programs per axis, integer host expressions (at most 2**31-1 on axis 0, 65535 on
    axes 1 and 2: bad_grid; 0: none run). ``num_stages``: loops' pipelining depth.
    Several kernels (split-K, two phases): ``launches`` (and ``scratch``) instead of
    ``params``, ``grid``, ``body`` (bad_program); ``meta`` is shared. Random outputs are checked
    element by element against the Philox numbers the task states (not torch's generator)."""

    name: Name
    view: Literal["elementwise", "rows"] | None = None
    dtypes: list[Union[DtypeVariable, DerivedDtype]] = []
    inputs: list[Input]
    outputs: Annotated[list[Output], Field(min_length=1)]
    params: list[Param] | None = None
    meta: list[Meta] = []
    host_values: list[HostValue] = []
    grid: Annotated[list[Expr], Field(min_length=1, max_length=3)] | None = None
    num_warps: Annotated[Literal[1, 2, 4, 8, 16], BeforeValidator(_exact_int)] = 4
    num_stages: Stages = 3
    body: list[Stmt] | None = None
    scratch: list[Scratch] = []
    launches: list[Launch] = []

    @property
    def is_program(self) -> bool:
        """Several launches (the document's own params, grid and body are absent)."""
        return bool(self.launches)




def inline_host_values(kernel: Kernel) -> Kernel:
    """The kernel with each host value's name replaced by its expression (earlier ones inlined
    first) in output and scratch shapes, call shapes, params and grids, and ``host_values``
    emptied: what every stage after the checker reads, so that each sees plain host expressions.
    Names the list does not define stay as they are (the checker reports them)."""
    if not kernel.host_values:
        return kernel
    table = host_value_table(kernel)

    def shape(dims: list) -> list:
        return [inline_expr(d, table) for d in dims]

    def param(p: Param) -> Param:
        value = p.name if p.value is None else p.value
        return p.model_copy(update={"value": inline_expr(value, table)}) if _names_in(value, table) else p

    outputs = [out.model_copy(update={"shape": shape(out.shape), "call_shapes": [
        c.model_copy(update={"when": inline_expr(c.when, table), "shape": shape(c.shape)}) for c in out.call_shapes]})
        for out in kernel.outputs]
    launches = [launch.model_copy(update={"grid": shape(launch.grid), "params": [param(p) for p in launch.params]})
                for launch in kernel.launches]
    return kernel.model_copy(update={
        "host_values": [], "outputs": outputs, "launches": launches,
        "scratch": [s.model_copy(update={"shape": shape(s.shape)}) for s in kernel.scratch],
        "params": None if kernel.params is None else [param(p) for p in kernel.params],
        "grid": None if kernel.grid is None else shape(kernel.grid)})


def host_value_table(kernel: Kernel) -> dict[str, Expr]:
    """Each host value's expression with the earlier ones inlined."""
    table: dict[str, Expr] = {}
    for value in kernel.host_values:
        table[value.name] = inline_expr(value.value, table)
    return table


# The fields of the expressions a host expression may hold (TensorInfo's ``of`` names a tensor).
_HOST_OPERANDS = ("lhs", "rhs", "cond", "x", "y")


def inline_expr(expr: Expr, table: dict[str, Expr]) -> Expr:
    """``expr`` with each name in ``table`` replaced by its expression."""
    if isinstance(expr, str):
        return table.get(expr, expr)
    if isinstance(expr, BaseModel) and _names_in(expr, table):
        return expr.model_copy(update={key: inline_expr(getattr(expr, key), table)
                                       for key in _HOST_OPERANDS if hasattr(expr, key)})
    return expr


def _names_in(expr: Expr, table: dict[str, Expr]) -> bool:
    if isinstance(expr, str):
        return expr in table
    return isinstance(expr, BaseModel) and any(_names_in(getattr(expr, key), table)
                                          for key in _HOST_OPERANDS if hasattr(expr, key))
