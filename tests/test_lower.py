"""Lowering to TTIR: every construct of the language lowers and passes MLIR's verifier, the
TTIR says what the interpreter means (predicates, NaN handling, rounding, zero ``other``),
and broken input fails with a LoweringError that names the AST node.

``CATALOGUE`` (kernels covering every op, dtype and form) is shared with test_compile.py,
which compiles each one to cubin and, on a GPU, runs it against the interpreter.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from kernelgen.lang import nodes as L
from kernelgen.check.checker import ValueType, check
from kernelgen.errors import LoweringError
from kernelgen.lang.nodes import Kernel
from kernelgen.lower.lowering import KernelParam, LoweredKernel, NativeOutput, lower, parse_mlir_diagnostics

# /tmp/vadd.json: the vector add of the project's brief.
VADD: dict[str, Any] = {
    "name": "vadd",
    "inputs": [{"name": "x", "dtype": "f32", "shape": ["N"]}, {"name": "y", "dtype": "f32", "shape": ["N"]}],
    "outputs": [{"name": "out", "dtype": "f32", "shape": ["N"]}],
    "params": [{"name": "x"}, {"name": "y"}, {"name": "out"}, {"name": "N"}],
    "meta": [{"name": "BLOCK", "value": 1024}],
    "grid": [{"op": "cdiv", "lhs": "N", "rhs": "BLOCK"}],
    "body": [
        {"op": "let", "name": "offs", "value": {"op": "add", "lhs": {"op": "mul", "lhs": {"op": "program_id"}, "rhs": "BLOCK"},
                                                "rhs": {"op": "arange", "size": "BLOCK"}}},
        {"op": "let", "name": "mask", "value": {"op": "lt", "lhs": "offs", "rhs": "N"}},
        {"op": "store", "ptr": {"op": "add", "lhs": "out", "rhs": "offs"}, "mask": "mask",
         "value": {"op": "add", "lhs": {"op": "load", "ptr": {"op": "add", "lhs": "x", "rhs": "offs"}, "mask": "mask"},
                   "rhs": {"op": "load", "ptr": {"op": "add", "lhs": "y", "rhs": "offs"}, "mask": "mask"}}}]}

FLOATS = ("f32", "f16", "bf16", "f64")
INTS = ("i32", "i64")
DTYPES = ("f32", "f16", "bf16", "f64", "i32", "i64", "bool")
MATH = ("exp", "exp2", "log", "log2", "log1p", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "sin", "cos")


# ---------------------------------------------------------------------------------------------
# Building kernels


def op(kind: str, /, **fields: Any) -> dict[str, Any]:
    return {"op": kind, **fields}


def un(name: str, x: Any) -> dict[str, Any]:
    return op(name, x=x)


def bin_(name: str, lhs: Any, rhs: Any) -> dict[str, Any]:
    return op(name, lhs=lhs, rhs=rhs)


def let(name: str, value: Any) -> dict[str, Any]:
    return op("let", name=name, value=value)


def store(ptr: Any, value: Any, mask: Any = None) -> dict[str, Any]:
    return op("store", ptr=ptr, value=value, **({"mask": mask} if mask is not None else {}))


def load(ptr: Any, mask: Any = None, other: Any = None) -> dict[str, Any]:
    fields = {"mask": mask} if mask is not None else {}
    if other is not None:
        fields["other"] = other
    return op("load", ptr=ptr, **fields)


@dataclass(frozen=True)
class Case:
    """A test kernel, the sizes to run it with, and how closely a GPU must match the
    interpreter (relative and absolute tolerance for floats; integers and bools exactly)."""

    name: str
    kernel: dict[str, Any]
    sizes: dict[str, int] = field(default_factory=dict)
    tolerance: tuple[float, float] = (1e-5, 1e-5)


LOADED = {"a": "x", "b": "y", "c": "z"}
TOLERANCE = {"f32": (1e-5, 1e-5), "f16": (1e-3, 1e-3), "bf16": (1e-2, 1e-2), "f64": (1e-12, 1e-12)}


def elementwise(name: str, inputs: dict[str, str], outputs: dict[str, tuple[str, Any]],
                block: int = 128, scalars: dict[str, str] | None = None,
                lets: list[dict[str, Any]] | None = None) -> Case:
    """A 1-D kernel over N elements: inputs ``a``, ``b``, ``c`` are loaded (masked) into
    ``x``, ``y``, ``z``; each output is one expression over them (after ``lets``).
    ``scalars`` are scalar inputs, passed as params of the same name."""
    scalars = scalars or {}
    body = [let("offs", bin_("add", bin_("mul", op("program_id"), "B"), op("arange", size="B"))),
            let("m", bin_("lt", "offs", "N"))]
    body += [let(LOADED[n], load(bin_("add", n, "offs"), "m")) for n in inputs]
    body += lets or []
    body += [store(bin_("add", n, "offs"), expr, "m") for n, (_, expr) in outputs.items()]
    kernel = {
        "name": name,
        "inputs": [{"name": n, "dtype": d, "shape": ["N"]} for n, d in inputs.items()]
                  + [{"name": n, "dtype": d} for n, d in scalars.items()],
        "outputs": [{"name": n, "dtype": d, "shape": ["N"]} for n, (d, _) in outputs.items()],
        "params": [{"name": n} for n in [*inputs, *outputs, *scalars, "N"]],
        "meta": [{"name": "B", "value": block}],
        "grid": [bin_("cdiv", "N", "B")],
        "body": body,
    }
    dtypes = [d for d, _ in outputs.values()] + list(inputs.values())
    tolerance = max((TOLERANCE.get(d, (0.0, 0.0)) for d in dtypes), key=lambda t: t[0])
    return Case(name, kernel, {"N": 1000}, tolerance if tolerance[0] else TOLERANCE["f32"])


def tile_kernel(name: str, inputs: dict[str, tuple[str, list[int]]], outputs: dict[str, tuple[str, list[int]]],
                body: list[dict[str, Any]], tolerance: tuple[float, float] = (1e-5, 1e-5)) -> Case:
    """A single-program kernel over fixed-shape tensors (unmasked, provably in bounds)."""
    kernel = {
        "name": name,
        "inputs": [{"name": n, "dtype": d, "shape": s} for n, (d, s) in inputs.items()],
        "outputs": [{"name": n, "dtype": d, "shape": s} for n, (d, s) in outputs.items()],
        "params": [{"name": n} for n in [*inputs, *outputs]],
        "grid": [1],
        "body": body,
    }
    return Case(name, kernel, {}, tolerance)


def grid_offsets(rows: int, cols: int, name: str = "offs") -> list[dict[str, Any]]:
    """``rows_r`` [rows], ``cols_c`` [cols] and the row-major offsets [rows, cols]."""
    return [let("rows_r", op("arange", size=rows)), let("cols_c", op("arange", size=cols)),
            let(name, bin_("add", bin_("mul", op("expand_dims", x="rows_r", axis=1), cols),
                           op("expand_dims", x="cols_c", axis=0)))]


# ---------------------------------------------------------------------------------------------
# The catalogue: every op of the language, in every dtype and form it takes


def unary_cases() -> list[Case]:
    cases = [elementwise(f"{name}_{d}", {"a": d}, {"o": (d, un(name, "x"))})
             for d in ("f32", "f64") for name in (*MATH, "abs", "neg", "floor", "ceil", "round")]
    cases += [elementwise(f"{name}_{d}", {"a": d}, {"o": (d, un(name, "x"))})
              for d in ("f16", "bf16") for name in ("abs", "neg", "floor", "ceil", "round")]
    cases += [elementwise(f"{name}_{d}", {"a": d}, {"o": (d, un(name, "x"))}) for d in INTS for name in ("abs", "neg")]
    cases.append(elementwise("exp2_ftz_f32", {"a": "f32"}, {"o": ("f32", un("exp2_ftz", "x"))}))
    cases.append(elementwise("not_bool", {"a": "bool"}, {"o": ("bool", un("not", "x"))}))
    cases.append(elementwise("type_info", {"a": "f16"}, {  # torch.finfo/iinfo constants, per dtype
        "o": ("f16", bin_("maximum", "x", op("finfo", dtype="f16", what="eps"))),
        **{f"o_{d}_{w}": (d, op("finfo", dtype=d, what=w)) for d in ("f32", "bf16", "f64") for w in ("max", "tiny")},
        "o_i64": ("i64", op("iinfo", dtype="i64", what="min")), "o_e4m3": ("f32", op("finfo", dtype="f8e4m3", what="max"))}))
    cases.append(elementwise("exp_of_int_literal", {"a": "f32"}, {"o": ("f32", bin_("add", "x", un("exp", 1)))}))
    return cases


def binary_cases() -> list[Case]:
    cases = []
    for d in FLOATS + INTS:
        names = ["add", "sub", "mul", "maximum", "minimum"]
        names += ["div", "rem"] if d in FLOATS else ["idiv", "rem", "cdiv"]
        if d in ("f32", "f64"):
            names.append("pow")
        outputs = {f"o_{n}": (d, bin_(n, "x", "y")) for n in names}
        cases.append(elementwise(f"arith_{d}", {"a": d, "b": d}, outputs))
        compare = {f"o_{n}": ("bool", bin_(n, "x", "y")) for n in ("eq", "ne", "lt", "le", "gt", "ge")}
        cases.append(elementwise(f"compare_{d}", {"a": d, "b": d}, compare))
    cases.append(elementwise("compare_bool", {"a": "bool", "b": "bool"},
                             {f"o_{n}": ("bool", bin_(n, "x", "y")) for n in ("eq", "ne")}))
    for d in ("bool",) + INTS:
        cases.append(elementwise(f"logic_{d}", {"a": d, "b": d},
                                 {f"o_{n}": (d, bin_(n, "x", "y")) for n in ("and", "or", "xor")}))
    return cases


def literal_cases() -> list[Case]:
    """Weak literals take the operation's dtype; an integer with a float literal computes in f32."""
    return [
        elementwise("weak_literals", {"a": "f32", "b": "i32", "c": "f16"}, {
            "o_int_float": ("f32", bin_("add", "y", 0.5)),
            "o_f16_int": ("f16", bin_("mul", "z", 3)),
            "o_f16_float": ("f16", bin_("sub", "z", 0.1)),
            "o_literal_first": ("f32", bin_("sub", 1, "x")),
            "o_inf": ("f32", bin_("maximum", "x", "-inf")),
            "o_weak_product": ("f32", bin_("add", "x", bin_("mul", 2, 3))),
            "o_int_ops": ("i32", bin_("add", bin_("idiv", "y", 3), bin_("add", bin_("rem", "y", -3), bin_("cdiv", "y", 4)))),
            "o_int_div_float": ("f32", bin_("div", "y", 2.0)),
        }),
        elementwise("weak_i64", {"a": "i64"}, {"o": ("i64", bin_("add", "x", 7)),
                                               "o_big": ("i64", bin_("mul", "x", 4294967296))}),
        elementwise("let_literal", {"a": "bf16"}, {"o": ("bf16", bin_("add", "x", "k"))}, lets=[let("k", 0.1)]),
    ]


def select_cases() -> list[Case]:
    cases = [
        elementwise("where_f32", {"a": "f32", "b": "f32"}, {"o": ("f32", op("where", cond=bin_("lt", "x", "y"), x="x", y="y"))}),
        elementwise("where_literals", {"a": "f32"}, {"o": ("i32", op("where", cond=bin_("lt", "x", 0), x=-1, y=1))}),
        elementwise("where_f16_bool", {"a": "f16", "b": "bool"}, {"o": ("f16", op("where", cond="y", x="x", y=0.5))}),
    ]
    for d in FLOATS:
        cases.append(elementwise(f"fma_{d}", {"a": d, "b": d, "c": d}, {
            "o": (d, op("fma", x="x", y="y", z="z")), "o_literal": (d, op("fma", x="x", y="y", z=1.0))}))
    cases += [
        elementwise("clamp_f32", {"a": "f32"}, {"o": ("f32", op("clamp", x="x", lo=-1.0, hi=1.0))}),
        elementwise("clamp_f16", {"a": "f16", "b": "f16"}, {"o": ("f16", op("clamp", x="x", lo="y", hi=0.5))}),
        elementwise("clamp_i32", {"a": "i32", "b": "i32"}, {"o": ("i32", op("clamp", x="x", lo="y", hi=10))}),
    ]
    return cases


def cast_cases() -> list[Case]:
    cases = [elementwise(f"cast_from_{src}", {"a": src}, {f"o_{dst}": (dst, op("cast", x="x", dtype=dst)) for dst in DTYPES})
             for src in DTYPES]
    cases.append(elementwise("cast_literals", {"a": "f32"}, {
        "o_float_to_int": ("i32", op("cast", x=3.7, dtype="i32")),
        "o_int_to_f16": ("f16", op("cast", x=2, dtype="f16")),
        "o_bool": ("bool", op("cast", x=True, dtype="bool")),
        "o_float_to_f64": ("f64", op("cast", x=0.1, dtype="f64")),
    }))
    return cases


def reduce_case(reduction: str, dtype: str) -> Case:
    """Rows and columns of a [16, 32] tile reduced, with keepdims, and the whole tile to a
    scalar (stored through a scalar pointer)."""
    out = "i32" if reduction in ("argmax", "argmin") else dtype
    body = grid_offsets(16, 32)
    body += [let("t", load(bin_("add", "a", "offs"))),
             store(bin_("add", "rows", "rows_r"), op(reduction, x="t", axis=1)),
             store(bin_("add", "cols", "cols_c"), op(reduction, x="t", axis=0)),
             store(bin_("add", "kept", op("expand_dims", x="rows_r", axis=1)), op(reduction, x="t", axis=1, keepdims=True)),
             store(bin_("add", "kept0", op("expand_dims", x="cols_c", axis=0)), op(reduction, x="t", axis=0, keepdims=True)),
             store("whole", op(reduction, x=op("reshape", x="t", shape=[512]), axis=0))]
    rtol = {"f32": 1e-4, "f64": 1e-12}.get(dtype, 0.0) if reduction == "sum" else 0.0
    return tile_kernel(f"{reduction}_{dtype}", {"a": (dtype, [16, 32])}, {
        "rows": (out, [16]), "cols": (out, [32]), "kept": (out, [16]), "kept0": (out, [32]), "whole": (out, [1])},
        body, (rtol, rtol))


def reduce_cases() -> list[Case]:
    cases = [reduce_case(r, d) for r in ("sum", "max", "min", "argmax", "argmin") for d in ("f32", "i32")]
    cases += [reduce_case(r, d) for r in ("max", "min", "argmax", "argmin") for d in ("f16", "bf16")]
    cases += [reduce_case(r, "i64") for r in ("sum", "max", "argmin")]
    cases += [reduce_case(r, "f64") for r in ("sum", "max", "min", "argmax")]
    return cases


def dot_case(dtype: str, precision: str = "ieee", result: str = "f32", with_acc: bool = False) -> Case:
    m, n, k = 32, 64, 32 if result == "i32" else 16  # an int8 dot (the low bytes of i32s): K >= 32
    body = grid_offsets(m, k, "a_offs") + [
        let("kr", op("arange", size=k)), let("nc", op("arange", size=n)),
        let("b_offs", bin_("add", bin_("mul", op("expand_dims", x="kr", axis=1), n), op("expand_dims", x="nc", axis=0))),
        let("c_offs", bin_("add", bin_("mul", op("expand_dims", x="rows_r", axis=1), n), op("expand_dims", x="nc", axis=0))),
    ]
    dot = op("dot", lhs=load(bin_("add", "a", "a_offs")), rhs=load(bin_("add", "b", "b_offs")), dtype=result,
             precision=precision)
    inputs = {"a": (dtype, [m, k]), "b": (dtype, [k, n])}
    if with_acc:
        dot["acc"] = load(bin_("add", "acc", "c_offs"))
        inputs["acc"] = (result, [m, n])
    body.append(store(bin_("add", "c", "c_offs"), dot))
    name = f"dot_{dtype}_{precision}_{result}" + ("_acc" if with_acc else "")
    tolerance = {"f32": (1e-4, 1e-4), "f16": (1e-2, 1e-2), "bf16": (1e-2, 1e-2), "i32": (0.0, 0.0)}[dtype]
    if precision == "tf32" or result == "f16":
        tolerance = (1e-2, 1e-2)
    return tile_kernel(name, inputs, {"c": (result, [m, n])}, body, tolerance)


def dot_cases() -> list[Case]:
    cases = []
    for with_acc in (False, True):
        cases += [dot_case("f16", with_acc=with_acc), dot_case("f16", result="f16", with_acc=with_acc),
                  dot_case("bf16", with_acc=with_acc), dot_case("f32", with_acc=with_acc),
                  dot_case("f32", "tf32", with_acc=with_acc), dot_case("i32", result="i32", with_acc=with_acc)]
    return cases


def shape_cases() -> list[Case]:
    body = grid_offsets(16, 32) + [
        let("t", load(bin_("add", "a", "offs"))),
        # trans of values and of pointers (tr[j][i] = t[i][j]); reshape keeps row-major order.
        let("offs_t", bin_("add", op("expand_dims", x="rows_r", axis=1), bin_("mul", op("expand_dims", x="cols_c", axis=0), 16))),
        store(op("trans", x=bin_("add", "tr", "offs_t")), op("trans", x="t")),
        store(bin_("add", "flat", op("arange", size=512)), op("reshape", x="t", shape=[512])),
        store(op("reshape", x=bin_("add", "flat2", "offs"), shape=[512]), load(op("reshape", x=bin_("add", "a", "offs"), shape=[512]))),
        # a 3-D permutation and back
        let("cube", op("reshape", x="t", shape=[4, 4, 32])),
        store(bin_("add", "perm", op("arange", size=512)),
              op("reshape", x=op("trans", x="cube", dims=[2, 0, 1]), shape=[512])),
        # broadcast of a column and of a scalar, expand_dims of a scalar
        store(bin_("add", "bcast", "offs"), op("broadcast", x=op("sum", x="t", axis=1, keepdims=True), shape=[16, 32])),
        store(bin_("add", "bscalar", op("arange", size=8)), op("broadcast", x=op("max", x=op("reshape", x="t", shape=[512]), axis=0), shape=[8])),
        store(bin_("add", "one", op("arange", size=1)), op("expand_dims", x=op("program_id"), axis=0)),
        store(bin_("add", "scalar_back", 0), op("reshape", x=op("expand_dims", x=op("cast", x=op("program_id"), dtype="f32"), axis=0), shape=[])),
    ]
    return [tile_kernel("shapes", {"a": ("f32", [16, 32])}, {
        "tr": ("f32", [32, 16]), "flat": ("f32", [512]), "flat2": ("f32", [512]), "perm": ("f32", [512]),
        "bcast": ("f32", [16, 32]), "bscalar": ("f32", [8]), "one": ("i32", [1]), "scalar_back": ("f32", [1])},
        body, (1e-4, 1e-4))]


def loop_cases() -> list[Case]:
    chunk = [let("cols", bin_("add", "start", op("arange", size="B"))), let("in_row", bin_("lt", "cols", "N"))]
    # A running sum and max over chunks (f32 carries, a weak-literal init), a pointer carry,
    # and a count kept as a scalar i32.
    carried = {
        "name": "loops",
        "inputs": [{"name": "a", "dtype": "f32", "shape": ["N"]}],
        "outputs": [{"name": "sums", "dtype": "f32", "shape": ["B"]}, {"name": "peak", "dtype": "f32", "shape": [1]},
                    {"name": "count", "dtype": "i32", "shape": [1]}, {"name": "nested", "dtype": "i32", "shape": [1]},
                    {"name": "copy", "dtype": "f32", "shape": ["N"]}],
        "params": [{"name": "a"}, {"name": "sums"}, {"name": "peak"}, {"name": "count"}, {"name": "nested"},
                   {"name": "copy"}, {"name": "N"}, {"name": "N64", "value": "N", "dtype": "i64"}, {"name": "S", "value": 3}],
        "meta": [{"name": "B", "value": 64}],
        "grid": [1],
        "body": [
            op("for", var="start", stop="N", step="B", carry=[
                {"name": "acc", "init": op("full", shape=["B"], value=0.0, dtype="f32"), "next": "acc2"},
                {"name": "top", "init": "-inf", "next": "top2"},
                {"name": "n", "init": 0, "next": bin_("add", "n", 1)},
                {"name": "src", "init": "a", "next": bin_("add", "src", "B")},
                {"name": "dst", "init": "copy", "next": bin_("add", "dst", "B")},
            ], body=chunk + [
                let("lanes", bin_("lt", op("arange", size="B"), bin_("sub", "N", "start"))),
                let("chunk", load(bin_("add", "src", op("arange", size="B")), "lanes", 0.0)),
                store(bin_("add", "dst", op("arange", size="B")), "chunk", "lanes"),
                let("acc2", bin_("add", "acc", "chunk")),
                let("top2", bin_("maximum", "top", op("max", x=load(bin_("add", "a", "cols"), "in_row", "-inf"), axis=0))),
            ]),
            store(bin_("add", "sums", op("arange", size="B")), "acc"),
            store("peak", "top"),
            store("count", "n"),
            # nested loops (the outer carry continues from the inner one), an i64 loop
            # variable and a runtime step
            op("for", var="i", stop="N64", step="S", carry=[{"name": "total", "init": 0, "next": "t"}], body=[
                op("for", var="j", stop=4, carry=[{
                    "name": "t", "init": "total",
                    "next": bin_("add", "t", bin_("add", "j", op("cast", x=bin_("rem", "i", 2), dtype="i32")))}],
                   body=[]),
            ]),
            store("nested", "total"),
        ],
    }
    return [Case("loops", carried, {"N": 300}, (1e-4, 1e-4))]


def memory_cases() -> list[Case]:
    return [
        elementwise("load_other", {"a": "f32", "b": "f32"}, {
            "o": ("f32", bin_("add", load(bin_("add", "a", "offs"), bin_("lt", "offs", bin_("sub", "N", 7)), "y"), "x"))}),
        elementwise("bool_memory", {"a": "bool"}, {
            "o": ("bool", un("not", load(bin_("add", "a", "offs"), "m", True)))}),
        elementwise("scalar_param", {"a": "f32"}, {"o": ("f32", bin_("mul", "x", "alpha"))}, scalars={"alpha": "f32"}),
        elementwise("i64_offsets", {"a": "f32"}, {
            "o": ("f32", load(bin_("add", "a", op("cast", x="offs", dtype="i64")), "m"))}),
        elementwise("where_pointers", {"a": "f32", "b": "f32"}, {
            "o": ("f32", load(op("where", cond=bin_("lt", "x", 0.0), x=bin_("add", "a", "offs"), y=bin_("add", "b", "offs")), "m"))}),
        elementwise("pointer_sub", {"a": "f32"}, {
            "o": ("f32", load(bin_("sub", bin_("add", "a", bin_("add", "offs", 1)), 1), "m"))}),
    ]


def program_id_cases() -> list[Case]:
    flat = bin_("add", op("program_id", axis=0),
                bin_("mul", op("num_programs", axis=0),
                     bin_("add", op("program_id", axis=1), bin_("mul", op("num_programs", axis=1), op("program_id", axis=2)))))
    kernel = {
        "name": "program_ids",
        "inputs": [{"name": "g0", "dtype": "i32"}, {"name": "g1", "dtype": "i32"}, {"name": "g2", "dtype": "i32"}],
        "outputs": [{"name": "out", "dtype": "i32", "shape": [bin_("mul", bin_("mul", "g0", "g1"), "g2")]},
                    {"name": "sizes", "dtype": "i32", "shape": [3]}],
        "params": [{"name": "out"}, {"name": "sizes"}, {"name": "total", "value": bin_("mul", bin_("mul", "g0", "g1"), "g2")}],
        "grid": ["g0", "g1", "g2"],
        "body": [let("p", flat),
                 store(bin_("add", "out", "p"), bin_("add", bin_("mul", op("program_id", axis=2), 100),
                                                     bin_("add", bin_("mul", op("program_id", axis=1), 10), op("program_id", axis=0))),
                       bin_("lt", "p", "total")),
                 store(bin_("add", "sizes", op("arange", size=4)),
                       op("where", cond=bin_("eq", op("arange", size=4), 0), x=op("num_programs", axis=0),
                          y=op("where", cond=bin_("eq", op("arange", size=4), 1), x=op("num_programs", axis=1), y=op("num_programs", axis=2))),
                       bin_("and", bin_("lt", op("arange", size=4), 3), bin_("eq", "p", 0)))],
    }
    return [Case("program_ids", kernel, {}, (0.0, 0.0))]


def wrapped_copy(hinted: bool) -> dict[str, Any]:
    """A copy in Triton's idiom: offsets wrapped with ``rem`` (no mask), so the compiler cannot
    see that they are contiguous unless a hint says so; cache and eviction modifiers on both ends."""
    offs = bin_("rem", bin_("add", bin_("mul", op("program_id"), "B"), op("arange", size="B")), "N")
    if hinted:
        offs = op("hint", x=offs, multiple_of=[1024], max_contiguous=[1024])
    return {
        "name": "wrapped_copy_hinted" if hinted else "wrapped_copy",
        "inputs": [{"name": "x", "dtype": "f32", "shape": ["N"]}],
        "outputs": [{"name": "out", "dtype": "f32", "shape": ["N"]}],
        "params": [{"name": "x"}, {"name": "out"}, {"name": "N"}],
        "meta": [{"name": "B", "value": 1024}],
        "grid": [bin_("cdiv", "N", "B")],
        "body": [let("offs", offs),
                 op("store", ptr=bin_("add", "out", "offs"), cache="evict_last",
                    value=op("load", ptr=bin_("add", "x", "offs"), cache="cg"))],
    }


def pipelining_cases() -> list[Case]:
    """Hints, cache modifiers, and pipelining depth per kernel and per loop."""
    staged = {
        "name": "staged_row_sums",
        "inputs": [{"name": "x", "dtype": "f32", "shape": ["M", "N"]}],
        "outputs": [{"name": "out", "dtype": "f32", "shape": ["M"]}],
        "params": [{"name": "x"}, {"name": "out"}, {"name": "N"}],
        "meta": [{"name": "BK", "value": 64}],
        "grid": ["M"],
        "num_stages": 4,
        "body": [let("row", bin_("mul", op("program_id"), "N")),
                 op("for", var="k", stop="N", step="BK", num_stages=2, carry=[{
                     "name": "acc", "init": 0.0,
                     "next": bin_("add", "acc", op("sum", axis=0, x=load(
                         bin_("add", bin_("add", "x", "row"), "cols"), bin_("lt", "cols", "N"))))}],
                    body=[let("cols", op("hint", x=bin_("add", "k", op("arange", size="BK")), max_contiguous=[64]))]),
                 store(bin_("add", "out", op("program_id")), "acc")],
    }
    return [Case("wrapped_copy_hinted", wrapped_copy(True), {"N": 4096}),
            Case("staged_row_sums", staged, {"M": 5, "N": 300}, (1e-4, 1e-4))]


def tail_split() -> dict[str, Any]:
    """Full blocks unmasked in the then branch, the last (partial) block masked in the else
    branch: the bounds check proves the unmasked accesses from the condition."""
    offs = "offs"
    return {
        "name": "tail_split",
        "inputs": [{"name": "x", "dtype": "f32", "shape": ["N"]}],
        "outputs": [{"name": "y", "dtype": "f32", "shape": ["N"]}],
        "params": [{"name": "x"}, {"name": "y"}, {"name": "N"}],
        "meta": [{"name": "B", "value": 64}],
        "grid": [bin_("cdiv", "N", "B")],
        "body": [let("pid", op("program_id")),
                 let(offs, bin_("add", bin_("mul", "pid", "B"), op("arange", size="B"))),
                 op("if", cond=bin_("le", bin_("mul", bin_("add", "pid", 1), "B"), "N"),
                    then=[let("v", load(bin_("add", "x", offs))),
                          store(bin_("add", "y", offs), bin_("add", bin_("mul", "v", 2.0), 1.0))],
                    **{"else": [let("ok", bin_("lt", offs, "N")),
                                let("v", load(bin_("add", "x", offs), "ok")),
                                store(bin_("add", "y", offs), bin_("add", bin_("mul", "v", 2.0), 1.0), "ok")]})],
    }


def branch_formulas() -> dict[str, Any]:
    """A runtime scalar picks the formula (results of two types flow out, one of them a weak
    literal on each side); ``lt(pid, mode)`` makes the first ``mode`` programs take another."""
    return {
        "name": "branch_formulas",
        "inputs": [{"name": "x", "dtype": "f32", "shape": ["N"]}, {"name": "mode", "dtype": "i32"}],
        "outputs": [{"name": "y", "dtype": "f32", "shape": ["N"]}, {"name": "z", "dtype": "i32", "shape": ["N"]}],
        "params": [{"name": "x"}, {"name": "y"}, {"name": "z"}, {"name": "N"}, {"name": "mode"}],
        "meta": [{"name": "B", "value": 32}],
        "grid": [bin_("cdiv", "N", "B")],
        "body": [let("offs", bin_("add", bin_("mul", op("program_id"), "B"), op("arange", size="B"))),
                 let("ok", bin_("lt", "offs", "N")),
                 let("v", load(bin_("add", "x", "offs"), "ok")),
                 op("if", cond=bin_("gt", "mode", 0),
                    then=[let("sq", bin_("mul", "v", "v"))],
                    results=[{"name": "r", "then": bin_("add", "sq", 1.0), "else": un("neg", "v")},
                             {"name": "k", "then": 1, "else": 0.5}]),
                 op("if", cond=bin_("lt", op("program_id"), "mode"),
                    results=[{"name": "tag", "then": bin_("add", op("arange", size="B"), "mode"),
                              "else": op("full", shape=["B"], value=-1, dtype="i32")}]),
                 store(bin_("add", "y", "offs"), bin_("mul", "r", "k"), "ok"),
                 store(bin_("add", "z", "offs"), "tag", "ok")],
    }


def branch_in_loop() -> dict[str, Any]:
    """One program per row; a per-row flag loaded from memory (a data-dependent condition)
    picks, inside the loop, a sum or a running maximum as the carry's next value; a nested if
    without else stores the first chunk's first value; a pointer flows out of an if."""
    return {
        "name": "branch_in_loop",
        "inputs": [{"name": "x", "dtype": "f32", "shape": ["M", "N"]}, {"name": "flags", "dtype": "i32", "shape": ["M"]}],
        "outputs": [{"name": "acc_out", "dtype": "f32", "shape": ["M"]}, {"name": "first", "dtype": "f32", "shape": ["M"]},
                    {"name": "lo", "dtype": "f32", "shape": ["M"]}, {"name": "hi", "dtype": "f32", "shape": ["M"]}],
        "params": [{"name": "x"}, {"name": "flags"}, {"name": "acc_out"}, {"name": "first"}, {"name": "lo"},
                   {"name": "hi"}, {"name": "N"}],
        "meta": [{"name": "B", "value": 16}],
        "grid": ["M"],
        "body": [let("row", op("program_id")),
                 let("flag", bin_("gt", load(bin_("add", "flags", "row")), 0)),
                 let("x_row", bin_("add", "x", bin_("mul", "row", "N"))),
                 op("for", var="c", stop="N", step="B", carry=[{"name": "acc", "init": 0.0, "next": "acc2"}], body=[
                     let("cols", bin_("add", "c", op("arange", size="B"))),
                     let("in_row", bin_("lt", "cols", "N")),
                     let("chunk", load(bin_("add", "x_row", "cols"), "in_row", "-inf")),
                     op("if", cond="flag",
                        then=[let("s", op("sum", axis=0, x=op("where", cond="in_row", x="chunk", y=0.0)))],
                        results=[{"name": "acc2", "then": bin_("add", "acc", "s"),
                                  "else": bin_("maximum", "acc", op("max", x="chunk", axis=0))}]),
                     op("if", cond=bin_("eq", "c", 0),
                        then=[store(bin_("add", "first", "row"), load("x_row"))]),
                 ]),
                 store(bin_("add", "acc_out", "row"), "acc"),
                 op("if", cond=un("not", "flag"),
                    results=[{"name": "dst", "then": bin_("add", "lo", "row"), "else": bin_("add", "hi", "row")},
                             {"name": "other", "then": bin_("add", "hi", "row"), "else": bin_("add", "lo", "row")}]),
                 store("dst", "acc"),
                 store("other", un("neg", "acc"))],
    }


def branch_cases() -> list[Case]:
    """if/else on scalar conditions: on program ids, a runtime scalar, a loaded value."""
    return [Case("tail_split", tail_split(), {"N": 1000}),
            Case("branch_formulas", branch_formulas(), {"N": 1000}),
            Case("branch_in_loop", branch_in_loop(), {"M": 7, "N": 100}, (1e-4, 1e-4))]


def atomic_cases() -> list[Case]:
    """Atomics whose outputs do not depend on the order (kernels of tests/test_atomics.py)."""
    from test_atomics import cas2d_kernel, column_kernel, distinct_kernel, rmw_kernel

    cases = [Case("col_sum_atomic", column_kernel("sum"), {"M": 300, "N": 70}, (1e-4, 1e-4)),
             Case("col_sum_atomic_bf16", {**column_kernel("sum", "bf16"), "name": "col_sum_atomic_bf16"},
                  {"M": 40, "N": 70}, (2e-2, 1e-1)),
             Case("col_max_atomic", column_kernel("max"), {"M": 300, "N": 70}, (0.0, 0.0)),
             Case("col_max_atomic_f64", {**column_kernel("max", "f64"), "name": "col_max_atomic_f64"},
                  {"M": 100, "N": 33}, (0.0, 0.0)),
             Case("distinct_cas", distinct_kernel("cas"), {"N": 1000}),
             Case("distinct_xchg", distinct_kernel("xchg"), {"N": 1000}), Case("cas2d", cas2d_kernel())]
    scopes = [("relaxed", "gpu"), ("acquire", "sys"), ("release", "gpu"), ("acq_rel", "sys")]
    for i, kind in enumerate(("add", "max", "min", "and", "or", "xor")):
        for dtype in ("i32", "i64"):
            sem, scope = scopes[(i + len(dtype)) % len(scopes)]
            cases.append(Case(f"rmw_{kind}_{dtype}", rmw_kernel(kind, dtype, False, sem, scope), {"N": 500}))
    return cases


def bit_cases() -> list[Case]:
    """Shifts by in-range and out-of-range amounts, umulhi, and bitcasts of every width."""
    cases = [elementwise(f"bits_{d}", {"a": d, "b": d}, {
        f"o_{n}": (d, bin_(n, "x", bin_("and", "y", 127 if d == "i64" else 63) if n != "umulhi" else "y"))
        for n in ("shl", "shr", "lshr", "umulhi")}) for d in INTS]
    cases.append(elementwise("bitcasts", {"a": "f32", "b": "i64", "c": "f16"}, {
        "o_f32_bits": ("i32", op("bitcast", x="x", dtype="i32")),
        "o_back": ("f32", op("bitcast", x=op("bitcast", x="x", dtype="i32"), dtype="f32")),
        "o_f64": ("f64", op("bitcast", x="y", dtype="f64")),
        "o_bf16": ("bf16", op("bitcast", x="z", dtype="bf16")),
        "o_literal": ("i32", op("bitcast", x=1.0, dtype="i32"))}))
    return cases


def random_cases() -> list[Case]:
    """Philox at i32 and i64 offsets, every word, an i64 seed; rand and randint are bit-exact,
    randn within its functions' ulps."""
    offsets64 = bin_("mul", op("cast", x="offs", dtype="i64"), 4294967311)
    outputs: dict[str, tuple[str, Any]] = {}
    for kind in ("randint", "rand", "randn"):
        dtype = "i32" if kind == "randint" else "f32"
        for word in range(4):
            outputs[f"o_{kind}{word}"] = (dtype, op(kind, seed="s", offset="offs", word=word))
        outputs[f"o_{kind}_64"] = (dtype, op(kind, seed="s64", offset=offsets64))
    exact = {n: v for n, v in outputs.items() if "randn" not in n}
    normal = {n: v for n, v in outputs.items() if "randn" in n}
    return [Case(c.name, c.kernel, c.sizes, tol) for c, tol in (
        (elementwise("philox", {"a": "f32"}, exact, scalars={"s": "i32", "s64": "i64"}), (0.0, 0.0)),
        (elementwise("philox_normal", {"a": "f32"}, normal, scalars={"s": "i32", "s64": "i64"}), (1e-5, 1e-5)))]


def fp8_cases() -> list[Case]:
    """fp8 loads, stores and casts both ways (bit-exact), and fp8 dots on tensor cores."""
    cases = [elementwise(f"cast_to_{d}", {"a": "f32", "b": "f16", "c": "bf16"}, {
        "o_f32": (d, op("cast", x="x", dtype=d)), "o_f16": (d, op("cast", x="y", dtype=d)),
        "o_bf16": (d, op("cast", x="z", dtype=d)), "o_int": (d, op("cast", x=op("cast", x="x", dtype="i32"), dtype=d))})
        for d in ("f8e4m3", "f8e5m2")]
    cases.append(elementwise("cast_from_fp8", {"a": "f8e4m3", "b": "f8e5m2"}, {
        **{f"o_{d}": (d, op("cast", x="x", dtype=d)) for d in ("f32", "f16", "bf16", "f64", "i32", "bool")},
        "o_e5m2_f32": ("f32", op("cast", x="y", dtype="f32")),
        "o_bits": ("f8e5m2", op("bitcast", x="x", dtype="f8e5m2")), "o_copy": ("f8e4m3", "x")}))
    cases.append(elementwise("cast_fp8_to_fp8", {"a": "f8e4m3", "b": "f8e5m2"}, {
        "o_e5m2": ("f8e5m2", op("cast", x="x", dtype="f8e5m2")), "o_e4m3": ("f8e4m3", op("cast", x="y", dtype="f8e4m3"))}))
    cases = [Case(c.name, c.kernel, c.sizes, (0.0, 0.0)) for c in cases]
    for lhs, rhs in (("f8e4m3", "f8e4m3"), ("f8e5m2", "f8e4m3")):
        m, n, k = 64, 64, 64
        body = grid_offsets(m, k, "a_offs") + [
            let("acc_in", op("full", shape=[m, n], value=0.5, dtype="f32")),
            store(bin_("add", "c", "a_offs"), op("dot", lhs=load(bin_("add", "a", "a_offs")),
                                                  rhs=load(bin_("add", "b", "a_offs")), acc="acc_in"))]
        # Hopper's fp8 MMA sums each 32-wide K step in a narrower accumulator (about 14 bits).
        cases.append(tile_kernel(f"dot_{lhs}_{rhs}", {"a": (lhs, [m, k]), "b": (rhs, [k, n])}, {"c": ("f32", [m, n])},
                                 body, (1e-3, 1e-2)))
    return cases


def join_and_barrier_cases() -> list[Case]:
    """Two blocks joined; a block stored by rows, read back transposed after a barrier (another
    thread's lanes)."""
    body = grid_offsets(32, 32) + [
        let("t_offs", bin_("add", bin_("mul", op("expand_dims", x="cols_c", axis=0), 32),
                           op("expand_dims", x="rows_r", axis=1))),
        store(bin_("add", "o", "offs"), load(bin_("add", "a", "offs"))), op("barrier"),
        store(bin_("add", "t", "offs"), load(bin_("add", "o", "t_offs")))]
    join = op("max", x=op("join", lhs="x", rhs=op("cast", x="y", dtype="f32")), axis=1)
    return [elementwise("join_max", {"a": "f32", "b": "i32"}, {"o": ("f32", join)}),
            tile_kernel("barrier_transpose", {"a": ("f32", [32, 32])}, {"o": ("f32", [32, 32]), "t": ("f32", [32, 32])},
                        body, (0.0, 0.0))]


def catalogue() -> list[Case]:
    return [Case("vadd", VADD, {"N": 5000})] + unary_cases() + binary_cases() + literal_cases() + select_cases() \
        + cast_cases() + reduce_cases() + dot_cases() + shape_cases() + loop_cases() + memory_cases() + program_id_cases() \
        + pipelining_cases() + branch_cases() + atomic_cases() + bit_cases() + random_cases() + fp8_cases() \
        + join_and_barrier_cases()


CATALOGUE = catalogue()
CASES = {case.name: case for case in CATALOGUE}


def checked_case(name: str):
    return check(Kernel.model_validate(CASES[name].kernel))


# ---------------------------------------------------------------------------------------------
# Every kernel lowers and verifies


def test_catalogue_names_are_unique() -> None:
    assert len(CASES) == len(CATALOGUE)


@pytest.mark.parametrize("name", list(CASES))
def test_every_kernel_lowers_and_verifies(name: str) -> None:
    checked = checked_case(name)
    lowered = lower(checked)
    assert isinstance(lowered, LoweredKernel)
    assert lowered.name == checked.kernel.name
    assert f"tt.func public @{lowered.name}(" in lowered.ttir
    assert lowered.params == tuple(KernelParam(p.name, "ptr" if p.type.pointer else "scalar", p.type.dtype)
                                   for p in checked.params)


def test_the_catalogue_covers_every_op_of_the_language() -> None:
    used: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "op" in node:
                used.add(node["op"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk([case.kernel["body"] for case in CATALOGUE])
    device_ops = {*L.UNARY_OPS, *L.BINARY_OPS, *L.REDUCE_OPS, "program_id", "num_programs", "arange", "full", "load",
                  "where", "fma", "clamp", "cast", "dot", "expand_dims", "reshape", "broadcast", "trans",
                  "hint", "let", "store", "for", "if", "bitcast", "finfo", "iinfo", "barrier", "join", *L.ATOMIC_OPS,
                  *L.RANDOM_OPS}
    assert device_ops - used == set()


# ---------------------------------------------------------------------------------------------
# The TTIR says what the interpreter means


def ttir_of(case: str) -> str:
    return lower(checked_case(case)).ttir


def test_pointer_arguments_are_16_byte_aligned_and_sizes_only_when_asked() -> None:
    checked = check(Kernel.model_validate(VADD))
    plain = lower(checked).ttir
    assert plain.count("tt.divisibility = 16") == 3
    assert re.search(r"%arg3: i32 loc", plain)
    specialized = lower(checked, divisible_by_16=["N"]).ttir
    assert re.search(r"%arg3: i32 \{tt.divisibility = 16 : i32\}", specialized)


def test_divisible_by_16_must_name_integer_params() -> None:
    with pytest.raises(LoweringError) as caught:
        lower(check(Kernel.model_validate(VADD)), divisible_by_16=["x"])
    assert (caught.value.path, caught.value.code) == ("/params", "bad_specialization")


def test_masked_load_without_other_reads_zero() -> None:
    ttir = ttir_of("vadd")
    assert re.search(r"arith.constant dense<0.000000e\+00> : tensor<1024xf32>", ttir)
    assert len(re.findall(r"tt.load %\w+, %\w+, %\w+ :", ttir)) == 2


def test_comparisons_are_ordered_except_ne() -> None:
    ttir = ttir_of("compare_f32")
    assert {p for p in re.findall(r"arith.cmpf (\w+)", ttir)} == {"oeq", "une", "olt", "ole", "ogt", "oge"}
    assert {p for p in re.findall(r"arith.cmpi (\w+)", ttir_of("compare_i64"))} >= {"eq", "ne", "slt", "sle", "sgt", "sge"}


def test_float_arithmetic_is_ieee_and_nan_propagating() -> None:
    ttir = ttir_of("arith_f32")
    for expected in ("arith.addf", "arith.subf", "arith.mulf", "tt.precise_divf", "arith.maximumf",
                     "arith.minimumf", '"__nv_fmodf"', '"__nv_powf"'):
        assert expected in ttir
    assert "arith.divf" not in ttir and "arith.remf" not in ttir


def test_integer_division_truncates_and_gives_zero_for_zero_divisors() -> None:
    ttir = ttir_of("arith_i32")
    assert "arith.divsi" in ttir and "arith.remsi" in ttir
    # idiv, rem and cdiv each guard their divisor: a compare with 0 and two selects.
    assert ttir.count("arith.select") >= 6


def test_f16_division_runs_in_f32() -> None:
    ttir = ttir_of("arith_f16")
    assert re.search(r"tt.precise_divf %\w+, %\w+ : tensor<128xf32>", ttir)
    assert "arith.truncf" in ttir


def test_transcendentals_use_libdevice_where_the_math_dialect_is_inexact() -> None:
    assert '"__nv_tanhf"' in ttir_of("tanh_f32")
    assert '"__nv_log1pf"' in ttir_of("log1p_f32")
    sigmoid = ttir_of("sigmoid_f32")
    assert "math.exp" in sigmoid and "tt.precise_divf" in sigmoid
    assert "tt.precise_sqrt" in ttir_of("sqrt_f32")


def test_negation_flips_the_sign_of_zero() -> None:
    assert "arith.constant dense<-0.000000e+00>" in ttir_of("neg_f32")


def test_argmax_is_the_least_index_holding_the_maximum() -> None:
    ttir = ttir_of("argmax_f32")
    # Five argmaxes, each a max and then a min over the indices that hold it: one-operand
    # reductions only (a two-operand one gave wrong indices on an H200 after a reshape).
    assert len(re.findall(r'"tt.reduce"\(%\w+\)', ttir)) == 10
    assert not re.findall(r'"tt.reduce"\(%\w+, %\w+\)', ttir)
    # NaN counts as the maximum (values compared with themselves); ties keep the least index.
    assert "arith.cmpf oeq" in ttir and "arith.cmpf une" in ttir and "arith.minsi" in ttir


def test_reductions_of_half_floats_run_in_f32() -> None:
    ttir = ttir_of("max_bf16")
    assert "arith.extf" in ttir and "arith.maximumf" in ttir and "arith.truncf" in ttir


def test_dot_precision_and_accumulator() -> None:
    assert "inputPrecision = tf32" in ttir_of("dot_f32_tf32_f32")
    ieee = ttir_of("dot_f32_ieee_f32")
    # IEEE is tt.dot's default precision, which MLIR does not print.
    assert re.search(r"tt.dot %\w+, %\w+, %\w+ :", ieee)
    assert re.search(r"arith.constant dense<0.000000e\+00> : tensor<32x64xf32>", ieee)
    assert "tensor<32x64xf16>" in ttir_of("dot_f16_ieee_f16_acc")
    int8 = ttir_of("dot_i32_ieee_i32_acc")  # the low bytes of i32 operands, i32 sums
    assert re.search(r"arith.trunci %\w+ : tensor<32x32xi32> to tensor<32x32xi8>", int8)
    assert re.search(r"tt.dot %\w+, %\w+, %\w+ : tensor<32x32xi8> \* tensor<32x64xi8> -> tensor<32x64xi32>", int8)


def test_loops_carry_values_and_pointers() -> None:
    ttir = ttir_of("loops")
    assert ttir.count("scf.for") >= 3
    assert re.search(r"iter_args\(.*!tt.ptr<f32>", ttir)
    assert re.search(r"scf.for %\w+ = %\w+ to %\w+ step %\w+ .*: i64", ttir)


def test_bool_tensors_are_bytes_in_memory() -> None:
    ttir = ttir_of("bool_memory")
    assert "!tt.ptr<i8>" in ttir and "!tt.ptr<i1>" not in ttir
    assert "arith.extui" in ttir


def test_program_id_and_num_programs_on_three_axes() -> None:
    ttir = ttir_of("program_ids")
    for axis in "xyz":
        assert f"tt.get_program_id {axis}" in ttir and f"tt.get_num_programs {axis}" in ttir


def test_every_op_carries_the_location_of_its_ast_node() -> None:
    lowered = lower(check(Kernel.model_validate(VADD)))
    locations = set(re.findall(r'loc\("([^"]*)":0:0\)', lowered.ttir))
    assert {"/body/0/value/rhs", "/body/1/value", "/body/2", "/body/2/value"} <= locations


# ---------------------------------------------------------------------------------------------
# Broken input: a LoweringError that names the node


def with_type(checked, path: str, value_type: ValueType):
    return dataclasses.replace(checked, types={**checked.types, path: value_type})


def test_verifier_errors_name_the_ast_path() -> None:
    # The type table says arange makes 512 lanes where the offsets have 1024: tt.broadcast
    # cannot stretch 512 to 1024, and MLIR's verifier says so at the node that broadcasts.
    checked = with_type(check(Kernel.model_validate(VADD)), "/body/0/value/rhs", ValueType("i32", (512,)))
    with pytest.raises(LoweringError) as caught:
        lower(checked)
    error = caught.value
    assert error.stage == "lower" and error.code == "mlir_verify"
    assert error.path == "/body/0/value/rhs"
    assert "broadcast" in str(error).lower()


def test_op_verifier_errors_name_the_ast_path() -> None:
    # A load typed f16 through an f32 pointer: its zero 'other' is f16, which tt.load rejects.
    checked = with_type(check(Kernel.model_validate(VADD)), "/body/2/value/lhs", ValueType("f16", (1024,)))
    with pytest.raises(LoweringError) as caught:
        lower(checked)
    assert caught.value.path == "/body/2/value/lhs"
    assert "tt.load" in caught.value.diagnostics[0].message


def test_python_side_failures_name_the_innermost_node() -> None:
    checked = check(Kernel.model_validate(VADD))
    types = dict(checked.types)
    del types["/body/1/value/rhs"]
    with pytest.raises(LoweringError) as caught:
        lower(dataclasses.replace(checked, types=types))
    assert (caught.value.path, caught.value.code) == ("/body/1/value/rhs", "lowering_failed")


def test_a_host_only_node_in_the_body_is_a_lowering_error() -> None:
    checked = check(Kernel.model_validate(VADD))
    body = list(checked.kernel.body)
    body[1] = body[1].model_copy(update={"value": L.TensorInfo(op="numel", of="x")})
    with pytest.raises(LoweringError) as caught:
        lower(dataclasses.replace(checked, kernel=checked.kernel.model_copy(update={"body": body})))
    assert caught.value.path == "/body/1/value"


def test_mlir_diagnostics_are_parsed_with_their_paths() -> None:
    text = ("/body/3/value:0:0: error: 'tt.dot' op operand types differ\n"
            "see current operation: %0 = tt.dot\n"
            "-:0:0: error: something without a path\n"
            "/body/1:0:0: warning: ignored\n")
    diagnostics = parse_mlir_diagnostics(text, "mlir_verify", "/body")
    assert [(d.path, d.code) for d in diagnostics] == [("/body/3/value", "mlir_verify"), ("/body", "mlir_verify")]
    assert "see current operation" in diagnostics[0].message
    assert parse_mlir_diagnostics("LLVM ERROR: out of memory\n", "llir_failed")[0].message == "LLVM ERROR: out of memory"


def test_native_output_captures_what_c_code_writes_to_the_descriptors() -> None:
    with NativeOutput() as captured:
        os.write(2, b"from fd 2\n")
        os.write(1, b"from fd 1\n")
    assert captured.text == "from fd 2\nfrom fd 1\n"
    with NativeOutput() as nothing:
        pass
    assert nothing.text == ""


def test_a_float_literal_cast_to_f64_is_the_f64_value() -> None:
    """Not 0.1 rounded to f32 first: the literal adopts f64, as it does in f64 arithmetic."""
    import torch

    from kernelgen.interp.execute import interpret

    checked = check(Kernel.model_validate(CASES["cast_literals"].kernel))
    outputs = interpret(checked, {"a": torch.zeros(1000)})
    assert outputs["o_float_to_f64"][0].item() == 0.1
    assert "1.000000e-01 : f64" in lower(checked).ttir
