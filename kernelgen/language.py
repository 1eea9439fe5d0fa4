"""The kernel language: a JSON AST at tile level with Triton's semantics.

A kernel is one program instance of a launch grid working on blocks (tensors of static
power-of-two shape). It is written as expression trees with ``let`` bindings: a bare JSON
string names a value, a JSON number or boolean is a literal, an object with an ``op`` is an
operation. The host side is part of the AST: the call's inputs, each output's shape and
dtype, the grid and how the call's values bind to the kernel's parameters, so the harness
runs a kernel from its AST alone.

The meaning of every construct is written once, in :mod:`kernelgen.interpret`; the rules a
valid kernel obeys are checked by :mod:`kernelgen.check`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag
from pydantic_core import PydanticCustomError

DTYPES = ("f32", "f16", "bf16", "i32", "i64", "bool")
Dtype = Literal["f32", "f16", "bf16", "i32", "i64", "bool"]

FLOAT_LITERAL_NAMES = ("inf", "-inf", "nan")
IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]*$"


def _not_a_literal(name: str) -> str:
    """A bound name spelled like a float literal would never be read: its uses are the literal."""
    if name in FLOAT_LITERAL_NAMES:
        raise PydanticCustomError("reserved_name", "'{name}' is a float literal, not a name; choose another name",
                                  {"name": name})
    return name


def _exact_int(value: Any) -> Any:
    """Pydantic's strict mode still lets ``true`` and ``4.0`` through a Literal of ints (they
    compare equal); an integer field of the language takes JSON integers only."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return value


Name = Annotated[str, Field(pattern=IDENTIFIER), AfterValidator(_not_a_literal)]
# A block dimension: a power of two, or the name of a meta-parameter.
Dim = Union[int, Name]

UNARY_OPS = ("exp", "exp2", "log", "log2", "log1p", "sqrt", "rsqrt", "tanh", "sigmoid", "erf",
             "sin", "cos", "abs", "neg", "floor", "ceil", "not")
BINARY_OPS = ("add", "sub", "mul", "div", "idiv", "rem", "cdiv", "pow", "maximum", "minimum",
              "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor")
REDUCE_OPS = ("sum", "max", "min", "argmax", "argmin")
ARITHMETIC_OPS = ("add", "sub", "mul", "div", "idiv", "rem", "cdiv", "pow", "maximum", "minimum")
COMPARISON_OPS = ("eq", "ne", "lt", "le", "gt", "ge")
LOGICAL_OPS = ("and", "or", "xor")


class Node(BaseModel):
    """Strict: no coercion, so ``true`` or ``1500.0`` where an int goes, ``1`` where a bool
    goes, are schema errors rather than silently read as another value."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


# ---------------------------------------------------------------------------------------------
# Expressions


class ProgramId(Node):
    """This program's index on a grid axis (program_id), or the grid's size there."""

    op: Literal["program_id", "num_programs"]
    axis: Annotated[Literal[0, 1, 2], BeforeValidator(_exact_int)] = 0


class Arange(Node):
    """The i32 block [0, 1, ..., size-1]."""

    op: Literal["arange"]
    size: Dim


class Full(Node):
    """A block of ``shape`` (``[]``: a scalar) filled with ``value``."""

    op: Literal["full"]
    shape: list[Dim]
    value: Union[bool, int, float, Literal["inf", "-inf", "nan"]]
    dtype: Dtype


class Load(Node):
    """Read through pointers; lanes where ``mask`` is false give ``other``."""

    op: Literal["load"]
    ptr: Expr
    mask: Expr | None = None
    other: Expr | None = None


class Unary(Node):
    op: Literal[UNARY_OPS]  # type: ignore[valid-type]
    x: Expr


class Binary(Node):
    """Elementwise ``lhs op rhs``. ``div`` is true division of floats; on integers ``idiv``
    truncates toward zero, ``rem`` takes the dividend's sign and ``cdiv`` is ``(lhs + rhs - 1)
    idiv rhs`` (the ceiling for non-negative operands); comparisons give bool; ``and``/``or``/
    ``xor`` take bools or integers."""

    op: Literal[BINARY_OPS]  # type: ignore[valid-type]
    lhs: Expr
    rhs: Expr


class Where(Node):
    """Elementwise ``cond ? x : y``."""

    op: Literal["where"]
    cond: Expr
    x: Expr
    y: Expr


class Fma(Node):
    """Fused ``x * y + z``."""

    op: Literal["fma"]
    x: Expr
    y: Expr
    z: Expr


class Clamp(Node):
    """``min(max(x, lo), hi)``."""

    op: Literal["clamp"]
    x: Expr
    lo: Expr
    hi: Expr


class Cast(Node):
    op: Literal["cast"]
    x: Expr
    dtype: Dtype


class Reduce(Node):
    """Reduce along ``axis``; argmax/argmin give the first index of the extremum (i32)."""

    op: Literal[REDUCE_OPS]  # type: ignore[valid-type]
    x: Expr
    axis: int
    keepdims: bool = False


class Dot(Node):
    """[M,K] x [K,N] (+ ``acc``) accumulated in ``dtype``; M, N, K >= 16."""

    op: Literal["dot"]
    lhs: Expr
    rhs: Expr
    acc: Expr | None = None
    dtype: Literal["f32", "f16"] = "f32"
    precision: Literal["ieee", "tf32"] = "ieee"


class ExpandDims(Node):
    op: Literal["expand_dims"]
    x: Expr
    axis: int


class Reshape(Node):
    """``reshape`` keeps row-major order; ``broadcast`` stretches dims of size 1."""

    op: Literal["reshape", "broadcast"]
    x: Expr
    shape: list[Dim]


class Trans(Node):
    """Permute axes (default: reverse)."""

    op: Literal["trans"]
    x: Expr
    dims: list[int] | None = None


class TensorInfo(Node):
    """Host only: tensor ``of``'s stride along ``dim`` (elements), or its element count."""

    op: Literal["stride", "numel"]
    of: Name
    dim: int = 0


OpNode = Annotated[
    Union[ProgramId, Arange, Full, Load, Unary, Binary, Where, Fma, Clamp, Cast, Reduce, Dot,
          ExpandDims, Reshape, Trans, TensorInfo],
    Field(discriminator="op"),
]


def _expr_kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "name"
    if isinstance(value, dict) or isinstance(value, Node):
        return "op"
    return None


Ref = Annotated[str, Field(pattern=r"^([A-Za-z_][A-Za-z0-9_]*|-?inf|nan)$")]

# An expression: a name (string), a literal (number or boolean; "inf", "-inf" and "nan" are
# float literals) or an operation (object with "op").
Expr = Annotated[
    Union[
        Annotated[bool, Tag("bool")],
        Annotated[int, Tag("int")],
        Annotated[float, Tag("float")],
        Annotated[Ref, Tag("name")],
        Annotated[OpNode, Tag("op")],
    ],
    Discriminator(_expr_kind, custom_error_type="expr",
                  custom_error_message="expected a name, a number, a boolean or an object with 'op'"),
]


# ---------------------------------------------------------------------------------------------
# Statements


class Let(Node):
    """Bind a new name (names are never rebound)."""

    op: Literal["let"]
    name: Name
    value: Expr


class Store(Node):
    """Write ``value`` through pointers where ``mask`` is true."""

    op: Literal["store"]
    ptr: Expr
    value: Expr
    mask: Expr | None = None


class Carry(Node):
    """Loop-carried value: ``init`` before the loop, ``next`` after each iteration (in the
    body's scope); after the loop ``name`` holds the last value."""

    name: Name
    init: Expr
    next: Expr


class For(Node):
    """``for var in range(start, stop, step)`` with loop-carried values."""

    op: Literal["for"]
    var: Name
    start: Expr = 0
    stop: Expr
    step: Expr = 1
    carry: list[Carry] = []
    body: list[Stmt]


Stmt = Annotated[Union[Let, Store, For], Field(discriminator="op")]


# ---------------------------------------------------------------------------------------------
# The kernel and its host side


JsonValue = Union[bool, int, float, str, None]


class Input(Node):
    """A call argument, in call order: a tensor if ``shape`` is given (dims: size names or
    ints), else a scalar. With ``default`` (null included) it is optional. ``number``: a
    tensor that may be passed as a Python number. ``role``: a host-only argument: ``dim``
    (int, ints or null for all: the rows view's reduced dims), ``keepdim``, ``out`` (a tensor
    the first output is written into), ``inplace`` (write it into the first input),
    ``choice`` (one of ``choices``; in the kernel a meta name equal to its index), ``fixed``
    (only its default is accepted)."""

    name: Name
    dtype: Dtype | None = None
    shape: list[Dim] | None = None
    default: JsonValue = None
    number: bool = False
    role: Literal["dim", "keepdim", "out", "inplace", "choice", "fixed"] | None = None
    choices: list[JsonValue] | None = None

    @property
    def optional(self) -> bool:
        return "default" in self.model_fields_set

    @property
    def is_plain(self) -> bool:
        """An argument the kernel sees (a tensor or a scalar), not a host-only one."""
        return self.role is None


class Output(Node):
    """A returned tensor; ``shape``: host expressions over sizes."""

    name: Name
    dtype: Dtype
    shape: list[Expr]


class Param(Node):
    """Kernel parameter bound to a host ``value`` (default: ``name``): a tensor (its
    pointer), a size, a scalar input or an integer host expression."""

    name: Name
    value: Expr | None = None
    dtype: Literal["i32", "i64", "f32"] | None = None


class Meta(Node):
    """A compile-time constant (constexpr), e.g. a block size; tunable by the harness."""

    name: Name
    value: int


class Kernel(Node):
    """``view`` adapts calls of any rank: ``elementwise`` broadcasts the tensor inputs (numbers
    too) and shows the kernel each flattened, as 1-D ``[N]``; ``rows`` moves the ``dim``
    argument's axes last and shows each rank-2 input as ``[M, N]`` (N: the reduced elements).
    Outputs are reshaped back to the call's shapes."""

    name: Name
    view: Literal["elementwise", "rows"] | None = None
    inputs: list[Input]
    outputs: Annotated[list[Output], Field(min_length=1)]
    params: list[Param]
    meta: list[Meta] = []
    grid: Annotated[list[Expr], Field(min_length=1, max_length=3)]
    num_warps: Annotated[Literal[1, 2, 4, 8, 16], BeforeValidator(_exact_int)] = 4
    body: list[Stmt]


for _model in (Load, Unary, Binary, Where, Fma, Clamp, Cast, Reduce, Dot, ExpandDims, Reshape, Trans,
               Let, Store, Carry, For, Output, Param, Kernel):
    _model.model_rebuild()
