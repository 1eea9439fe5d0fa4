"""The kernel language: a JSON AST at tile level with Triton's semantics.

A kernel is one program instance of a launch grid working on blocks (tensors of static
power-of-two shape). It is written as expression trees with ``let`` bindings: a bare JSON
string names a value, a JSON number or boolean is a literal, an object with an ``op`` is an
operation. The host side (the call's inputs, the outputs, the grid, what the kernel's
parameters are bound to) is part of the AST, so the harness runs a kernel from its AST alone.

The meaning of every construct is written once, in :mod:`kernelgen.interp.execute`; the rules a
valid kernel obeys are checked by :mod:`kernelgen.check.checker`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag

from kernelgen.lang.fields import DTYPE_VARIABLE, FLOAT_LITERAL_NAMES, IDENTIFIER, Dim, Name, Stages, Unroll  # noqa: F401 (re-exported)
from kernelgen.lang.fields import exact_int as _exact_int
from kernelgen.lang.leaf_nodes import Barrier, DeviceInfo, Node, ProgramId

DTYPES = ("f32", "f16", "bf16", "f64", "i32", "i64", "bool", "f8e4m3", "f8e5m2", "i8", "u8", "i16")
Dtype = Literal["f32", "f16", "bf16", "f64", "i32", "i64", "bool", "f8e4m3", "f8e5m2", "i8", "u8", "i16"]

DtypeRef = Union[Dtype, Annotated[str, Field(pattern=DTYPE_VARIABLE)]]


UNARY_OPS = ("exp", "exp2", "exp2_ftz", "log", "log2", "log1p", "sqrt", "rsqrt", "tanh", "sigmoid", "erf",
             "sin", "cos", "abs", "neg", "floor", "ceil", "round", "not")
BINARY_OPS = ("add", "sub", "mul", "div", "idiv", "rem", "cdiv", "pow", "maximum", "minimum",
              "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor", "shl", "shr", "lshr", "umulhi")
REDUCE_OPS = ("sum", "max", "min", "argmax", "argmin")
SCAN_OPS = ("cumsum", "cumprod", "cummax", "cummin")
ARITHMETIC_OPS = ("add", "sub", "mul", "div", "idiv", "rem", "cdiv", "pow", "maximum", "minimum")
COMPARISON_OPS = ("eq", "ne", "lt", "le", "gt", "ge")
LOGICAL_OPS = ("and", "or", "xor")
ATOMIC_OPS = ("atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor", "atomic_xchg",
              "atomic_cas")
BIT_OPS = ("shl", "shr", "lshr", "umulhi")
RANDOM_OPS = ("rand", "randn", "randint")


# ---------------------------------------------------------------------------------------------
# Expressions


class Arange(Node):
    """The i32 block [0, 1, ..., size-1]."""

    op: Literal["arange"]
    size: Dim


class DtypeVariable(Node):
    """``name`` (capitalized: ``T``) may stand for a dtype in inputs, outputs, full, cast. A call
    binds it to PyTorch's promotion of its inputs' values, one of ``of`` (bad_arguments); every
    variant must check. Undeclared: bad_dtype_variable."""

    name: Annotated[str, Field(pattern=DTYPE_VARIABLE)]
    of: Annotated[list[Dtype], Field(min_length=1)]


class DerivedDtype(Node):
    """``name``: a dtype derived per binding from one variable, used as one (not as an input's
    dtype or binds): ``acc_of`` T, what torch computes and sums T in (f16/bf16/fp8/f32: f32,
    f64: f64, integers/bool: i64); ``float_of`` T, a float op's result (torch.log; integers/bool:
    f32, floats kept). Not one of the two, a cycle: bad_dtype_variable."""

    name: Annotated[str, Field(pattern=DTYPE_VARIABLE)]
    acc_of: Annotated[str, Field(pattern=DTYPE_VARIABLE)] | None = None
    float_of: Annotated[str, Field(pattern=DTYPE_VARIABLE)] | None = None


class Full(Node):
    """A block of ``shape`` (``[]``: a scalar) filled with ``value`` of exactly ``dtype``: bool
    takes true/false, integers an integer in range, floats a number or "inf"/"nan" (bad_value).
    Use it for a concrete-typed constant (literals are weak)."""

    op: Literal["full"]
    shape: list[Dim]
    value: Union[bool, int, float, Literal["inf", "-inf", "nan"]]
    dtype: DtypeRef


class Load(Node):
    """Read through pointers (not_a_pointer): the pointee's dtype, the pointer's shape. Lanes
    where ``mask`` is false are not read and give ``other`` (default 0/false). ``cache``:
    Triton's cache_modifier (.ca/.cg/.cv) or eviction_policy; speed only."""

    op: Literal["load"]
    ptr: Expr
    mask: Expr | None = None
    other: Expr | None = None
    cache: Literal["ca", "cg", "cv", "evict_first", "evict_last"] | None = None


class TileLoad(Node):
    """The block at ``offsets`` (one per dim; may be negative or past the end) of tensor
    ``base`` (an input or output name) viewed as ``shape`` with ``strides`` (elements; last 1):
    elements outside [0, shape) read 0. ``block`` dims: powers of two <= 256, the last >= 16
    bytes. ``shape``/``strides`` use params, meta and literals only (tile_view). sm_90: one
    TMA copy where strides and the last extent are 16-byte multiples, else pointer loads."""

    op: Literal["tile_load"]
    base: Name
    shape: list[Expr]
    strides: list[Expr]
    block: list[Dim]
    offsets: list[Expr]


class Unary(Node):
    """``not``: bool. ``abs``, ``neg``: any number, same dtype (integers wrap). ``floor``,
    ``ceil``, ``round`` (half to even,
    torch.round): floats, same dtype, exact (needs_float). The rest take f32 or f64 (needs_f32: cast
    f16/bf16 first), same dtype (f64: libdevice's double versions, rsqrt 1/sqrt); ``sqrt`` is correctly rounded; ``exp`` is the hardware's
    ex2.approx.f32 of ``x*log2(e)`` (2.4 ulp for ``|x|<1``, growing with ``|x|``: 63 ulp near
    88); ``exp2`` ex2.approx.f32, ``rsqrt`` rsqrt.approx.f32, the others CUDA libdevice's: all
    within 2.5 ulp (measured), not correctly rounded; ``sigmoid`` is ``1/(1+exp(-x))`` with that
    ``exp``. ``exp2_ftz``: f32 only, ``exp2`` with results below 2**-126 flushed to 0
    (ex2.approx.ftz.f32: one instruction where ``exp2`` takes four; for softmax exponents, where
    it made flash attention 12% faster on an H200). NaN in, NaN out."""

    op: Literal[UNARY_OPS]  # type: ignore[valid-type]
    x: Expr


class Binary(Node):
    """Elementwise ``lhs op rhs`` of one dtype (dtype_mismatch).
    Float ``add``/``sub``/``mul`` round to nearest even, never fused into an fma;
    ``div`` (floats only: needs_float) is correctly rounded (div.rn, f16/bf16 through f32; a slow
    path per element: where the tolerance allows, a tile times a reciprocal taken once per row ran
    up to 1.27x as fast);
    ``rem`` is C fmod (exact); ``pow`` (f32/f64: needs_f32) is libdevice powf/pow (2.5 ulp).
    Integers: ``idiv`` truncates toward zero, ``rem`` takes the dividend's sign, ``cdiv`` is
    ``(lhs + rhs - 1) idiv rhs``, a division by zero gives 0, overflow wraps; ``idiv``/``cdiv``
    take integers only (needs_int).
    ``shl``, ``shr`` (arithmetic) and ``lshr`` (logical) shift integers by ``rhs`` bits
    (needs_int); an amount outside 0..width-1 gives 0 (shr: the sign's fill). ``umulhi``: the
    high half of the unsigned double-width product of integers.
    ``maximum``/``minimum`` propagate NaN. Comparisons give bool (bools: eq/ne only), false with
    NaN except ``ne``; ``and``/
    ``or``/``xor`` take bools or integers (bad_operand). Pointers: ``ptr + int``, ``int + ptr``,
    ``ptr - int`` (offsets in elements) only."""

    op: Literal[BINARY_OPS]  # type: ignore[valid-type]
    lhs: Expr
    rhs: Expr


class Where(Node):
    """``cond ? x : y``: ``cond`` bool (needs_bool); ``x``, ``y`` unify like a
    binary op's operands, or are two pointers of one dtype. ``where(c, 1.0, 0.0)`` is a weak
    f32 block, ``where(c, 1, 0)`` a weak i32 one."""

    op: Literal["where"]
    cond: Expr
    x: Expr
    y: Expr


class Fma(Node):
    """``x * y + z`` of floats (needs_float), rounded once."""

    op: Literal["fma"]
    x: Expr
    y: Expr
    z: Expr


class Clamp(Node):
    """``minimum(maximum(x, lo), hi)`` of numbers: NaN in any operand gives NaN; ``lo > hi``
    gives ``hi``."""

    op: Literal["clamp"]
    x: Expr
    lo: Expr
    hi: Expr


class Cast(Node):
    """Any dtype to any (not pointers): float to narrower float rounds to nearest even
    (overflow: inf); float to integer truncates toward zero, saturates, NaN gives 0 (torch wraps
    i8/u8/i16: clamp first); integer and f64 to f16/bf16 round through f32; integer to integer
    wraps; to bool is ``!= 0`` (NaN is true); bool is 0 or 1. To f8e4m3/f8e5m2: rounded once to
    nearest even (as torch: f64, integers via f32), saturating at +-448/+-57344 (inf too), NaN
    stays NaN. fp8 values are storage only: load, store, cast, bitcast, dot, reshape/trans, carry
    (fp8_storage elsewhere)."""

    op: Literal["cast"]
    x: Expr
    dtype: DtypeRef


class Bitcast(Node):
    """``x``'s bits as ``dtype`` of the same width: i32/f32, i64/f64, f16/bf16/i16,
    f8e4m3/f8e5m2/i8/u8 (bad_bitcast)."""

    op: Literal["bitcast"]
    x: Expr
    dtype: DtypeRef


class Random(Node):
    """Triton's Philox (10 rounds) at each lane of integer ``offset`` for integer scalar
    ``seed``: ``randint`` i32 (the uint32's bits), ``rand`` f32 in [0, 1), ``randn`` f32 normal
    (Box-Muller: its log/sqrt/cos/sin within ulps); ``word`` k: the k-th of Triton's
    randint4x/rand4x/randn4x (0: randint/rand/randn). Same seed and offset, same bits."""

    op: Literal["rand", "randn", "randint"]
    seed: Expr
    offset: Expr
    word: Annotated[Literal[0, 1, 2, 3], BeforeValidator(_exact_int)] = 0


class Reduce(Node):
    """Reduce a block along ``axis`` (0..rank-1: bad_axis), dropping it (kept as 1 with
    ``keepdims``). ``sum`` takes f32, f64, i32, i64 (needs_f32), in a tree order (not sequential);
    ``max``/``min`` any number, NaN wins; argmax/argmin give the first index of the extremum
    (i32), NaN counting as it. A weak value reduces as f32."""

    op: Literal[REDUCE_OPS]  # type: ignore[valid-type]
    x: Expr
    axis: int
    keepdims: bool = False


class Scan(Node):
    """Running ``op`` of ``x`` along ``axis`` (bad_axis), same shape; ``reverse``: from the end.
    ``cumsum``/``cumprod`` take f32, f64, i32, i64 (needs_f32), in a tree order (not sequential),
    integers wrap; ``cummax``/``cummin`` any number, NaN propagates onward."""

    op: Literal[SCAN_OPS]  # type: ignore[valid-type]
    x: Expr
    axis: int
    reverse: bool = False


class Sort(Node):
    """``x`` (numbers, rank >= 1) sorted along its LAST axis (Triton sorts no other);
    ``argsort``: i32 indices of that order. Floats: -0.0 before 0.0, NaN above inf; ties keep
    index order (descending too). i64 sorts; argsort/argtopk take no i64/f64 (bad_operand: the
    index is packed beside a 32-bit key)."""

    op: Literal["sort", "argsort"]
    x: Expr
    descending: bool = False


class TopK(Node):
    """The ``k`` largest along the last axis, largest first (that axis becomes k), as a
    descending sort's first k; ``argtopk``: their i32 indices. k: a power of two <= the axis
    (bad_value)."""

    op: Literal["topk", "argtopk"]
    x: Expr
    k: Dim


class Gather(Node):
    """``out[..i..] = src[..index[..i..]..]`` along ``axis``: ``index`` integers of src's rank,
    dims equal except at axis (shape_mismatch); index's shape, src's dtype. An index outside
    0..src's axis-1 fails when run (index_out_of_range)."""

    op: Literal["gather"]
    src: Expr
    index: Expr
    axis: int


class Histogram(Node):
    """i32 counts ``[bins]``: ``out[b]`` = lanes of 1-D integer ``x`` equal to b where ``mask``.
    A counted value outside 0..bins-1 fails when run (index_out_of_range)."""

    op: Literal["histogram"]
    x: Expr
    bins: Dim
    mask: Expr | None = None


class Dot(Node):
    """[M,K] x [K,N] (+ ``acc`` of [M,N] in ``dtype``) accumulated in ``dtype``; M, N, K >= 16
    (dot_shape); both operands f16, bf16 or f32 of one dtype (not f64), or both fp8 (any mix;
    K >= 32; f32 result: the dot's K summed at ~2**-14 precision, then added to acc;
    sm_89+: fp8_target), or both i8 (or i32: their low bytes as -128..127) with ``dtype`` i32:
    int8 tensor cores (K >= 32), i32 sums, saturating; ``dtype`` f16 needs f16
    operands, ``tf32`` f32 ones (dot_dtype). ``ieee``: exact products; ``tf32``: operands
    rounded to 10-bit mantissas (tensor cores)."""

    op: Literal["dot"]
    lhs: Expr
    rhs: Expr
    acc: Expr | None = None
    dtype: Literal["f32", "f16", "i32"] = "f32"
    precision: Literal["ieee", "tf32"] = "ieee"


class ExpandDims(Node):
    """Insert a dim of size 1 at ``axis`` (0..rank)."""

    op: Literal["expand_dims"]
    x: Expr
    axis: int


class Reshape(Node):
    """``reshape`` keeps row-major order and the element count; ``broadcast`` stretches dims
    of size 1 (and adds leading ones) (shape_mismatch)."""

    op: Literal["reshape", "broadcast"]
    x: Expr
    shape: list[Dim]


class Join(Node):
    """tl.join: lhs and rhs (unified, broadcast as a binary op's) stacked on a new last axis of 2
    (``out[..., 0]`` = lhs). Concatenate along the last axis: join, trans the last two axes,
    reshape (``[n, 2]`` -> ``[2, n]`` -> ``[2n]``)."""

    op: Literal["join"]
    lhs: Expr
    rhs: Expr


class Trans(Node):
    """Permute axes (default: reverse); ``dims`` is a permutation (bad_axis)."""

    op: Literal["trans"]
    x: Expr
    dims: list[int] | None = None


class Hint(Node):
    """``x`` (integers) unchanged, promising as tl.multiple_of/tl.max_contiguous, so accesses
    at ``ptr + x`` vectorize (e.g. offsets wrapped with ``rem``): ``max_contiguous[d]`` c: each
    aligned run of c lanes on dim d counts up by 1; ``multiple_of[d]`` m: each run's first lane
    (each lane without c) is a multiple of m. Powers of two, one per dim (scalar: multiple_of
    only), c <= dim (bad_hint). Refuted where the checker sees x (arange, literals, meta,
    scalars with + - *: bad_hint), else trusted when compiled (false: wrong results), checked
    when run (hint_violated)."""

    op: Literal["hint"]
    x: Expr
    multiple_of: list[int] | None = None
    max_contiguous: list[int] | None = None


class TensorInfo(Node):
    """Host only (host_only in the body): tensor ``of``'s stride along ``dim`` (elements;
    tensors are contiguous), or its element count (``dim`` unused)."""

    op: Literal["stride", "numel"]
    of: Name
    dim: int = 0


class TypeInfo(Node):
    """torch.finfo(``dtype``).``what`` (eps, max, min: the lowest, tiny: the smallest normal) of
    a float dtype, torch.iinfo's max/min of an integer one (needs_float, needs_int, bad_value):
    a scalar of ``dtype`` (of f32 for fp8), per binding of a dtype variable."""

    op: Literal["finfo", "iinfo"]
    dtype: DtypeRef
    what: Literal["eps", "max", "min", "tiny"]


OpNode = Annotated[
    Union[ProgramId, Arange, Full, Load, TileLoad, Unary, Binary, Where, Fma, Clamp, Cast, Bitcast, Random, Reduce,
          Scan, Sort, TopK, Gather, Histogram, Dot, ExpandDims, Reshape, Join, Trans, Hint, TensorInfo,
          DeviceInfo, TypeInfo],
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
    """Bind a new name; names are never rebound, nor shadowed in a loop body (duplicate_name).
    A loop body's lets are gone after the loop."""

    op: Literal["let"]
    name: Name
    value: Expr


class Store(Node):
    """Write ``value`` (of the pointee's dtype) through pointers where ``mask`` is true.
    Only outputs are written: a pointer that may point into an input is store_to_input. In one
    launch an element a program stores is stored, loaded or atomically updated by no other
    (race, when run); lanes of one store write one value to an element (duplicate_store); every
    output element must be written (unwritten). ``cache``: as Load's (.wb/.cg/.cs/.wt)."""

    op: Literal["store"]
    ptr: Expr
    value: Expr
    mask: Expr | None = None
    cache: Literal["wb", "cg", "cs", "wt", "evict_first", "evict_last"] | None = None


class TileStore(Node):
    """Write ``value`` (the pointee's dtype) as the block at ``offsets`` of output ``base``
    viewed as TileLoad's; elements outside [0, shape) are not written. Store's rules hold. The launch
    accesses what it wrote no more, and no tile access touches what a store wrote (TMA copies are
    unordered: tile_proxy_order)."""

    op: Literal["tile_store"]
    base: Name
    shape: list[Expr]
    strides: list[Expr]
    offsets: list[Expr]
    value: Expr


class Atomic(Node):
    """tl.atomic_*: read-modify-write of ``val`` (cas: if old == ``cmp``, write ``val``) at
    each pointer where ``mask`` is true (cas: no mask), as Store's; ``name`` (optional) binds the old values (undefined where masked off;
    the launch then also runs in other program orders, which must give the same result: order_dependent). Programs may
    update one element with one op only, xchg/cas of one value (race). An atomic reads its element (not an unnamed xchg).
    dtypes (atomic_dtype): add f16/bf16/f32/f64/i32/i64; max, min, xchg f32/f64/i32/i64 (float max/min order bits as
    Triton: -0.0 < 0.0 < inf < NaN); and/or/xor, cas i32/i64. Float add rounds to the dtype after each add, in any order.
    ``sem``/``scope``: Triton's; ``cta`` is atomic within one program only (race). A named atomic relying on another
    program's update because it saw a later atomic of that program (ticket, flag) needs release (that update or a later
    atomic of its program) and acquire (an earlier named atomic reading the release): unordered_read; acq_rel does both.
    A scalar atomic is one thread's: its release covers the program's other threads' updates, and its old value their
    atomics, only after a barrier."""

    op: Literal[ATOMIC_OPS]  # type: ignore[valid-type]
    ptr: Expr
    val: Expr
    cmp: Expr | None = None
    mask: Expr | None = None
    name: Name | None = None
    sem: Literal["relaxed", "acquire", "release", "acq_rel"] = "acq_rel"
    scope: Literal["gpu", "cta", "sys"] = "gpu"


class Carry(Node):
    """Loop-carried value: ``init`` (a weak literal becomes concrete: ``0.0`` f32, ``0`` i32)
    before the loop, ``next`` after each iteration (in the body's
    scope, seeing the iteration's old carries); after the loop ``name`` holds
    the last value, or ``init`` when the loop ran zero times. ``next`` keeps ``init``'s dtype
    and shape (loop_carry_type)."""

    name: Name
    init: Expr
    next: Expr


class For(Node):
    """``for var in range(start, stop, step)``: bounds are integer
    scalars (needs_scalar, needs_int) evaluated once; it runs ``max(0, cdiv(stop - start,
    step))`` times (zero: the body never runs); ``step`` > 0 (a literal <= 0 is bad_value).
    ``var`` is i32, i64 if a bound is a non-literal i64, and is gone after the loop. There is
    no while or break: use masks, where or if. ``num_stages``: this loop's pipelining depth
    (a loop without a dot prefetches its loads only when given it): loads are issued trips early,
    so one must not read what the loop stored in a recent trip (carry it). ``flatten`` (speed only):
    pipeline this loop and the one for directly in its body as one loop (pipelined as the
    outer's num_stages, else the inner's), so a persistent kernel loads its next tile's first
    blocks during this tile's epilogue (a nest Triton cannot fuse is compiled unfused). Only for
    the outer loop of a nest of exactly two loops whose inner bounds are fixed outside the nest (flatten_nest).
    ``unroll`` (speed only): copies of the body per trip (the trips left over run one by one), so
    several trips' loads are in flight together unless a branch lies between them (div and sqrt
    take one). Not in a flattened nest (flatten_nest)."""

    op: Literal["for"]
    var: Name
    start: Expr = 0
    stop: Expr
    step: Expr = 1
    carry: list[Carry] = []
    num_stages: Stages | None = None
    flatten: bool = False
    unroll: Unroll | None = None
    body: list[Stmt]


class IfResult(Node):
    """A value out of an if: ``then`` in the then branch's scope, ``else`` in the else
    branch's (a name bound in one branch only is undefined in the other); after the if
    ``name`` holds the taken one. Same shape and dtype (a weak literal takes the other's;
    both weak: concrete) or pointers of one dtype (if_result_type)."""

    model_config = ConfigDict(serialize_by_alias=True)

    name: Name
    then: Expr
    else_: Expr = Field(alias="else")


class If(Node):
    """``if cond: then else: else``: ``cond`` a bool scalar (needs_scalar, needs_bool), per
    program (it may depend on program_id, params, loop vars, loads). Only the taken branch
    runs (stores, loads); lets inside are gone after the if, ``results`` flow out.
    E.g. full blocks unmasked, the last one masked."""

    model_config = ConfigDict(serialize_by_alias=True)

    op: Literal["if"]
    cond: Expr
    then: list[Stmt] = []
    else_: list[Stmt] = Field([], alias="else")
    results: list[IfResult] = []


Stmt = Annotated[Union[Let, Store, TileStore, Atomic, For, If, Barrier], Field(discriminator="op")]


def node_fields(node: BaseModel) -> list[tuple[str, Any]]:
    """A node's fields as (JSON key, value): an if's ``else`` is ``else_`` in Python."""
    return [(info.alias or name, getattr(node, name)) for name, info in type(node).model_fields.items()]


# ---------------------------------------------------------------------------------------------
# The kernel and its host side: kernelgen.lang.host_nodes, imported here (import them from this module).

from kernelgen.lang.host_nodes import (CallShape, DefaultValue, HostValue, Input, JsonValue, Kernel, Launch,  # noqa: E402,F401
                                       Meta, MetaWhen, Output, Param, Scratch, host_value_table, inline_expr,
                                       inline_host_values)

for _model in (CallShape, Output, HostValue, Param, Scratch, MetaWhen, Meta, Launch, Kernel, Input):
    _model.model_rebuild()  # their forward references are this module's names

for _model in (Load, TileLoad, Unary, Binary, Where, Fma, Clamp, Cast, Bitcast, Random, Reduce, Scan, Sort,
               TopK, Gather, Histogram, Dot, ExpandDims, Reshape, Join, Trans, Hint, Let, Store, TileStore, Atomic, Carry, For,
               IfResult, If):
    _model.model_rebuild()
