"""A catalogue of malformed kernels, each one small change to a valid example, with the exact
diagnostic (code and JSON path) the parser or the checker must give for it.

A model repairs its kernel from these diagnostics, so each must point at the node at fault;
a case that reports more than its one finding (a cascade) fails too.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from test_rules import codes_raised

import kernelgen
from kernelgen.check.checker import check
from kernelgen.lang.rules import RULES
from kernelgen.errors import KernelgenError, SchemaError, SemanticError
from kernelgen.lang.parse import kernel_from_obj

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
REMOVE = object()


def example(name: str) -> dict[str, Any]:
    return json.loads((EXAMPLES / f"{name}.json").read_text())


# Statement indices of the bases, named so that each case reads as the one change it makes.
VADD = example("vector_add")  # 0 block_start, 1 offsets, 2 in_bounds, 3 x_block, 4 y_block, 5 store
SOFTMAX = example("softmax")  # 4: first loop (carry 0 row_max, 1 row_sum; body 2 chunk, 6 new_sum), 6: second
MATMUL = example("matmul")  # 7: the K loop (body 5 a_tile, 8 b_tile, 9 new_acc = dot), 9: store


def mutated(base: dict[str, Any], edits: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``base`` with each JSON pointer set to its value (REMOVE deletes it; an index
    one past a list's end appends)."""
    doc = copy.deepcopy(base)
    for pointer, value in edits.items():
        *parents, last = pointer.lstrip("/").split("/")
        node = doc
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        key: Any = int(last) if isinstance(node, list) else last
        if value is REMOVE:
            del node[key]
        elif isinstance(node, list) and key == len(node):
            node.append(value)
        else:
            node[key] = value
    return doc


def diagnose(doc: dict[str, Any], meta: dict[str, int] | None = None) -> list[tuple[str, str]]:
    """(path, code) of every diagnostic for a document; [] when it parses and checks."""
    try:
        check(kernel_from_obj(doc), meta)
    except (SchemaError, SemanticError) as exc:
        return [(d.path, d.code) for d in exc.diagnostics]
    return []


def full(shape: list, value: Any, dtype: str) -> dict[str, Any]:
    return {"op": "full", "shape": shape, "value": value, "dtype": dtype}


def case(case_id: str, base: dict[str, Any], edits: dict[str, Any], code: str, path: str):
    return pytest.param(base, edits, code, path, id=case_id)


LOAD_X = {"op": "load", "ptr": {"op": "add", "lhs": "x", "rhs": "offsets"}, "mask": "in_bounds"}
LOAD_Y = {"op": "load", "ptr": {"op": "add", "lhs": "y", "rhs": "offsets"}, "mask": "in_bounds"}
# vector_add with y_block (statement 4) out of an if on a scalar: y where N > 7, else zeros.
BRANCHED = mutated(VADD, {"/body/4": {"op": "if", "cond": {"op": "gt", "lhs": "N", "rhs": 7}, "results": [
    {"name": "y_block", "then": LOAD_Y, "else": {"op": "full", "shape": ["BLOCK"], "value": 0.0, "dtype": "f32"}}]}})

SEMANTIC_CASES = [
    # names
    # operations across a block (x_block, /body/3, is an f32 [BLOCK] load)
    case("scan-axis-outside-the-rank", VADD, {"/body/3/value": {"op": "cumsum", "x": LOAD_X, "axis": 1}},
         "bad_axis", "/body/3/value/axis"),
    case("cumsum-of-f16", VADD, {"/body/3/value": {"op": "cumsum", "axis": 0,
                                                   "x": {"op": "cast", "x": LOAD_X, "dtype": "f16"}}},
         "needs_f32", "/body/3/value/x"),
    case("sort-of-a-scalar", VADD, {"/body/3/value": {"op": "sort", "x": 1.5}}, "bad_axis", "/body/3/value/x"),
    case("sort-of-bools", VADD, {"/body/3/value": {"op": "sort", "x": "in_bounds"}}, "bad_operand", "/body/3/value/x"),
    case("argsort-of-f64", VADD, {"/body/3/value": {"op": "argsort", "x": {"op": "cast", "x": LOAD_X, "dtype": "f64"}}},
         "bad_operand", "/body/3/value/x"),
    case("topk-of-more-than-the-axis", VADD, {"/body/3/value": {"op": "topk", "x": LOAD_X, "k": 2048}},
         "bad_value", "/body/3/value/k"),
    case("topk-k-not-a-power-of-two", VADD, {"/body/3/value": {"op": "topk", "x": LOAD_X, "k": 3}},
         "not_power_of_two", "/body/3/value/k"),
    case("gather-index-of-another-rank", VADD, {"/body/3/value": {"op": "gather", "src": LOAD_X, "axis": 0,
                                                                   "index": full([2, 4], 0, "i32")}},
         "shape_mismatch", "/body/3/value/index"),
    case("gather-float-index", VADD, {"/body/3/value": {"op": "gather", "src": LOAD_X, "index": LOAD_X, "axis": 0}},
         "needs_int", "/body/3/value/index"),
    case("histogram-of-floats", VADD, {"/body/3/value": {"op": "histogram", "x": LOAD_X, "bins": 16}},
         "needs_int", "/body/3/value/x"),
    case("histogram-of-a-2d-block", VADD, {"/body/3/value": {"op": "histogram", "x": full([4, 4], 0, "i32"),
                                                             "bins": 16}},
         "shape_mismatch", "/body/3/value/x"),
    case("use-of-unbound-name", VADD, {"/body/5/value/rhs": "z_block"}, "undefined_name", "/body/5/value/rhs"),
    case("use-before-let", VADD, {"/body/0/value/rhs": "offsets"}, "undefined_name", "/body/0/value/rhs"),
    case("size-used-without-param", VADD, {"/params": [{"name": "x"}, {"name": "y"}, {"name": "out"}]},
         "undefined_name", "/body/2/value/rhs"),
    case("unknown-name-in-grid", VADD, {"/grid/0/lhs": "L"}, "undefined_name", "/grid/0/lhs"),
    case("param-bound-to-unknown-name", VADD, {"/params/3": {"name": "n", "value": "L"}},
         "undefined_name", "/params/3/value"),
    case("loop-value-used-after-loop", SOFTMAX, {"/body/6/body/3/value/lhs/x/rhs": "new_max"},
         "undefined_name", "/body/6/body/3/value/lhs/x/rhs"),
    case("let-rebinds-a-name", VADD, {"/body/4/name": "x_block", "/body/5/value/rhs": "x_block"},
         "duplicate_name", "/body/4/name"),
    case("param-declared-twice", VADD, {"/params/4": {"name": "x"}}, "duplicate_name", "/params/4/name"),
    case("let-in-loop-rebinds-carry", MATMUL, {"/body/7/body/10": {"op": "let", "name": "acc", "value": 0.0}},
         "duplicate_name", "/body/7/body/10/name"),
    case("loop-var-shadows-let", SOFTMAX, {"/body/4/var": "row_start", "/body/4/body/0/value/lhs": "row_start"},
         "duplicate_name", "/body/4/var"),
    case("size-named-like-input", VADD, {"/inputs/1/shape/0": "x"}, "duplicate_name", "/inputs/1/shape/0"),
    case("if-result-bound-in-one-branch-only", BRANCHED,
         {"/body/4/then": [{"op": "let", "name": "t", "value": LOAD_Y}], "/body/4/results/0/then": "t",
          "/body/4/results/0/else": "t"}, "undefined_name", "/body/4/results/0/else"),
    case("let-in-branch-used-after-if", BRANCHED,
         {"/body/4/else": [{"op": "let", "name": "t", "value": 1.0}], "/body/5/value/rhs": "t"},
         "undefined_name", "/body/5/value/rhs"),
    case("if-result-rebinds-a-name", BRANCHED, {"/body/4/results/0/name": "x_block", "/body/5/value/rhs": "x_block"},
         "duplicate_name", "/body/4/results/0/name"),
    case("let-in-branch-rebinds-outer-name", BRANCHED, {"/body/4/then": [{"op": "let", "name": "block_start", "value": 0}]},
         "duplicate_name", "/body/4/then/0/name"),
    # if
    case("if-condition-is-a-block", BRANCHED, {"/body/4/cond": "in_bounds"}, "needs_scalar", "/body/4/cond"),
    case("if-condition-is-an-integer", BRANCHED, {"/body/4/cond": "N"}, "needs_bool", "/body/4/cond"),
    case("if-result-dtypes-differ", BRANCHED, {"/body/4/results/0/else/dtype": "f16"},
         "if_result_type", "/body/4/results/0"),
    case("if-result-shapes-differ", BRANCHED, {"/body/4/results/0/else/shape": []},
         "if_result_type", "/body/4/results/0"),
    case("if-result-float-literal-for-int", BRANCHED, {"/body/4/results/0/then": {"op": "cast", "x": LOAD_Y, "dtype": "i32"},
                                                        "/body/4/results/0/else": 0.5}, "if_result_type", "/body/4/results/0"),
    case("if-result-pointer-and-number", BRANCHED, {"/body/4/results/0/then": "y"}, "if_result_type", "/body/4/results/0"),
    # dtypes
    case("add-f32-and-f16", VADD, {"/inputs/1/dtype": "f16"}, "dtype_mismatch", "/body/5/value/rhs"),
    case("store-f32-into-f16", VADD, {"/outputs/0/dtype": "f16"}, "dtype_mismatch", "/body/5/value"),
    case("load-other-of-another-dtype", VADD, {"/body/3/value/other": True}, "dtype_mismatch", "/body/3/value/other"),
    case("where-of-pointer-and-number", VADD,
         {"/body/5/ptr": {"op": "where", "cond": "in_bounds", "x": {"op": "add", "lhs": "out", "rhs": "offsets"}, "y": 0}},
         "dtype_mismatch", "/body/5/ptr"),
    case("bool-mixed-with-number", VADD, {"/body/2/value": {"op": "eq", "lhs": {"op": "lt", "lhs": "offsets", "rhs": "N"}, "rhs": 1}},
         "dtype_mismatch", "/body/2/value/rhs"),
    # shapes
    case("add-of-unbroadcastable-blocks", VADD, {"/body/5/value/rhs": full([128], 0.0, "f32")}, "shape_mismatch", "/body/5/value"),
    case("mask-of-another-shape", VADD, {"/body/5/mask": full([2], True, "bool")}, "shape_mismatch", "/body/5/mask"),
    case("stored-value-larger-than-pointer", VADD, {"/body/5/value": full([2, 256], 0.0, "f32")},
         "shape_mismatch", "/body/5/value"),
    case("reshape-changes-size", VADD, {"/body/5/value": {"op": "reshape", "x": "x_block", "shape": [128]}},
         "shape_mismatch", "/body/5/value/shape"),
    case("broadcast-of-non-unit-dim", VADD, {"/body/5/value": {"op": "broadcast", "x": "x_block", "shape": [512]}},
         "shape_mismatch", "/body/5/value/shape"),
    case("meta-block-not-power-of-two", VADD, {"/meta/0/value": 1000}, "not_power_of_two", "/body/1/value/rhs/size"),
    case("full-shape-not-power-of-two", VADD, {"/body/5/value/rhs": full([3], 0.0, "f32")}, "not_power_of_two",
         "/body/5/value/rhs/shape/0"),
    case("written-block-too-large", VADD, {"/body/5/value/rhs": full([1024, 2048], 0.0, "f32")}, "block_too_large",
         "/body/5/value/rhs/shape"),
    case("arange-too-large", VADD, {"/meta/0/value": 1 << 21}, "block_too_large", "/body/1/value/rhs"),
    case("broadcast-product-too-large", VADD,
         {"/meta/0/value": 2048, "/body/5/value/rhs": {"op": "add", "lhs": {"op": "expand_dims", "x": "y_block", "axis": 1},
                                                       "rhs": {"op": "expand_dims", "x": "y_block", "axis": 0}}},
         "block_too_large", "/body/5/value/rhs"),
    # axes
    # hints and modifiers
    case("contiguity-of-a-scalar", VADD, {"/body/1/value": {"op": "hint", "x": "block_start", "max_contiguous": [4]}},
         "bad_hint", "/body/1/value/max_contiguous"),
    case("hint-on-a-float", VADD, {"/body/1/value": {"op": "hint", "x": 1.5, "multiple_of": [2]}},
         "bad_hint", "/body/1/value/x"),
    case("hint-false-on-a-constant", VADD, {"/body/1/value": {"op": "hint", "x": 6, "multiple_of": [4]}},
         "bad_hint", "/body/1/value"),
    case("contiguity-of-strided-offsets", VADD, {"/body/1/value": {
        "op": "hint", "x": {"op": "add", "lhs": "block_start", "rhs": {"op": "mul", "lhs": {"op": "arange", "size": "BLOCK"},
                                                                      "rhs": 2}}, "max_contiguous": [2]}},
         "bad_hint", "/body/1/value"),
    case("runs-starting-off-alignment", VADD, {"/body/1/value": {
        "op": "hint", "x": {"op": "add", "lhs": {"op": "arange", "size": "BLOCK"}, "rhs": 1},
        "max_contiguous": [4], "multiple_of": [4]}}, "bad_hint", "/body/1/value"),
    case("program-axis-outside-grid", VADD, {"/body/0/value/lhs/axis": 1}, "bad_axis", "/body/0/value/lhs/axis"),
    case("reduce-axis-outside-rank", SOFTMAX, {"/body/4/body/3/value/rhs/axis": 1}, "bad_axis", "/body/4/body/3/value/rhs/axis"),
    case("reduce-of-scalar", SOFTMAX, {"/body/4/body/3/value/rhs/x": "row_max"}, "bad_axis", "/body/4/body/3/value/rhs/x"),
    case("expand-dims-past-rank", MATMUL, {"/body/2/value/axis": 2}, "bad_axis", "/body/2/value/axis"),
    case("trans-dims-not-permutation", MATMUL, {"/body/7/body/9/value/rhs": {"op": "trans", "x": "b_tile", "dims": [0, 0]}},
         "bad_axis", "/body/7/body/9/value/rhs/dims"),
    case("stride-dim-outside-rank", VADD, {"/params/3": {"name": "N", "value": {"op": "stride", "of": "x", "dim": 1}}},
         "bad_axis", "/params/3/value/dim"),
    # dot
    case("dot-inner-dims-differ", MATMUL, {"/body/7/body/9/value/rhs": "a_tile"}, "dot_shape", "/body/7/body/9/value"),
    case("dot-block-under-16", MATMUL, {"/meta/0/value": 8}, "dot_shape", "/body/7/body/9/value"),
    case("dot-of-1d-blocks", MATMUL, {"/body/7/body/9/value/lhs": {"op": "cast", "x": "ks", "dtype": "f16"}},
         "dot_shape", "/body/7/body/9/value"),
    case("dot-acc-of-another-shape", MATMUL, {"/body/7/body/9/value/acc": full(["BLOCK_M", "BLOCK_K"], 0.0, "f32")},
         "dot_shape", "/body/7/body/9/value/acc"),
    case("dot-of-f16-and-f32", MATMUL, {"/inputs/1/dtype": "f32"}, "dot_dtype", "/body/7/body/9/value"),
    case("add-of-fp8", VADD, {"/inputs/0/dtype": "f8e4m3", "/inputs/1/dtype": "f8e4m3", "/outputs/0/dtype": "f8e4m3"},
         "fp8_storage", "/body/5/value/lhs"),
    case("umulhi-of-i8", VADD, {"/inputs/0/dtype": "i8", "/inputs/1/dtype": "i8", "/outputs/0/dtype": "i8",
                                "/body/5/value": {"op": "umulhi", "lhs": "x_block", "rhs": "y_block"}},
         "narrow_int", "/body/5/value/lhs"),
    case("bitcast-f32-to-i64", VADD, {"/body/5/value": {"op": "bitcast", "x": "x_block", "dtype": "i64"},
                                      "/outputs/0/dtype": "i64"}, "bad_bitcast", "/body/5/value/dtype"),
    case("dot-of-integers", MATMUL, {"/inputs/0/dtype": "i32", "/inputs/1/dtype": "i32"}, "dot_dtype", "/body/7/body/9/value"),
    case("dot-f16-result-with-f32-acc", MATMUL, {"/body/7/body/9/value/dtype": "f16"}, "dot_dtype", "/body/7/body/9/value/acc"),
    case("dot-f16-result-of-f32-operands", MATMUL, {"/inputs/0/dtype": "f32", "/inputs/1/dtype": "f32",
                                                    "/body/7/body/9/value/dtype": "f16"},
         "dot_dtype", "/body/7/body/9/value/dtype"),
    case("tf32-precision-of-f16", MATMUL, {"/body/7/body/9/value/precision": "tf32"}, "dot_dtype",
         "/body/7/body/9/value/precision"),
    case("undeclared-dtype-variable", VADD, {"/inputs/0/dtype": "T"}, "bad_dtype_variable", "/inputs/0/dtype"),
    case("dot-of-f64", MATMUL, {"/inputs/0/dtype": "f64", "/inputs/1/dtype": "f64"}, "dot_dtype",
         "/body/7/body/9/value"),
    case("f64-plus-f32", VADD, {"/inputs/0/dtype": "f64"}, "dtype_mismatch", "/body/5/value/rhs"),
    case("float-param-of-i32", VADD, {"/params/3": {"name": "N", "value": 0.5, "dtype": "i32"}}, "bad_binding",
         "/params/3/dtype"),
    # loops
    case("carry-changes-dtype", SOFTMAX, {"/body/4/carry/1/next": {"op": "cast", "x": "new_sum", "dtype": "f16"}},
         "loop_carry_type", "/body/4/carry/1/next"),
    case("carry-changes-shape", SOFTMAX, {"/body/4/carry/0/next": {"op": "maximum", "lhs": "row_max", "rhs": "chunk"}},
         "loop_carry_type", "/body/4/carry/0/next"),
    case("pointer-carry-becomes-number", SOFTMAX, {"/body/4/carry/2": {"name": "p", "init": "x_row", "next": 0}},
         "loop_carry_type", "/body/4/carry/2/next"),
    case("loop-stop-is-a-block", SOFTMAX, {"/body/4/stop": "lanes"}, "needs_scalar", "/body/4/stop"),
    case("loop-stop-is-a-float", SOFTMAX, {"/body/4/stop": 2.5}, "needs_int", "/body/4/stop"),
    case("loop-step-zero", SOFTMAX, {"/body/4/step": 0}, "bad_value", "/body/4/step"),
    case("flatten-without-inner-loop", SOFTMAX, {"/body/4/flatten": True}, "flatten_nest", "/body/4/flatten"),
    # memory
    case("store-into-input", VADD, {"/body/5/ptr/lhs": "x"}, "store_to_input", "/body/5/ptr"),
    case("param-binds-aliased-input", VADD, {"/outputs/0/into": "x", "/outputs/0/alias": True},
         "aliased_input", "/params/0/name"),
    case("store-through-where-of-input", VADD,
         {"/body/5/ptr": {"op": "where", "cond": "in_bounds", "x": {"op": "add", "lhs": "out", "rhs": "offsets"},
                          "y": {"op": "add", "lhs": "y", "rhs": "offsets"}}},
         "store_to_input", "/body/5/ptr"),
    case("unmasked-store-past-the-end", VADD, {"/body/5/mask": REMOVE}, "unproven_bounds", "/body/5"),
    case("unmasked-load-past-the-end", VADD, {"/body/3/value/mask": REMOVE}, "unproven_bounds", "/body/3/value"),
    case("unmasked-load-at-negative-offset", VADD, {"/body/5/value/rhs": {"op": "load", "ptr": {"op": "sub", "lhs": "y", "rhs": 1}}},
         "unproven_bounds", "/body/5/value/rhs"),
    case("unmasked-load-through-loaded-offset", VADD,
         {"/body/5/value/rhs": {"op": "load", "ptr": {"op": "add", "lhs": "y", "rhs": {"op": "cast", "x": "x_block", "dtype": "i32"}}}},
         "unproven_bounds", "/body/5/value/rhs"),
    case("unmasked-load-in-loop-past-row", SOFTMAX, {"/body/4/body/2/value/mask": REMOVE, "/body/4/body/2/value/other": REMOVE},
         "unproven_bounds", "/body/4/body/2/value"),
    case("load-through-integer", VADD, {"/body/3/value/ptr": "offsets"}, "not_a_pointer", "/body/3/value/ptr"),
    case("store-through-integer", VADD, {"/body/5/ptr": "offsets"}, "not_a_pointer", "/body/5/ptr"),
    # atomics (vector_add's store made an atomic; out is f32)
    case("atomic-xor-of-floats", VADD, {"/body/5/op": "atomic_xor", "/body/5/val": "x_block", "/body/5/value": REMOVE},
         "atomic_dtype", "/body/5/ptr"),
    case("atomic-add-with-cmp", VADD, {"/body/5/op": "atomic_add", "/body/5/val": "x_block", "/body/5/value": REMOVE,
                                       "/body/5/cmp": 0.0}, "bad_atomic", "/body/5/cmp"),
    case("atomic-add-into-input", VADD, {"/body/5/op": "atomic_add", "/body/5/val": "x_block", "/body/5/value": REMOVE,
                                         "/body/5/ptr/lhs": "x"}, "store_to_input", "/body/5/ptr"),
    # host-only arguments and views
    case("choice-without-choices", VADD, {"/inputs/2": {"name": "mode", "role": "choice"}},
         "bad_signature", "/inputs/2/choices"),
    case("dim-without-rows-view", VADD, {"/inputs/2": {"name": "dim", "role": "dim"}},
         "bad_signature", "/inputs/2/role"),
    case("load-other-without-mask", VADD, {"/body/3/value/mask": REMOVE, "/body/3/value/other": 0.0},
         "other_without_mask", "/body/3/value/other"),
    # operands
    case("pointer-times-int", VADD, {"/body/3/value/ptr/op": "mul"}, "bad_operand", "/body/3/value/ptr"),
    case("pointer-plus-pointer", VADD, {"/body/3/value/ptr/rhs": "y"}, "needs_int", "/body/3/value/ptr/rhs"),
    case("pointer-offset-float", VADD, {"/body/3/value/ptr/rhs": 1.5}, "needs_int", "/body/3/value/ptr/rhs"),
    case("arithmetic-on-bools", VADD, {"/body/5/mask": {"op": "add", "lhs": "in_bounds", "rhs": "in_bounds"}},
         "bad_operand", "/body/5/mask"),
    case("ordering-bools", VADD, {"/body/5/mask": {"op": "lt", "lhs": "in_bounds", "rhs": "in_bounds"}},
         "bad_operand", "/body/5/mask"),
    case("reduce-of-bools", SOFTMAX, {"/body/4/body/3/value/rhs/x": "in_row"}, "bad_operand", "/body/4/body/3/value/rhs/x"),
    case("and-of-floats", VADD, {"/body/5/value/op": "and"}, "bad_operand", "/body/5/value"),
    case("div-of-integers", VADD, {"/body/0/value/op": "div"}, "needs_float", "/body/0/value"),
    case("floor-of-integer", VADD, {"/body/1/value": {"op": "floor", "x": {"op": "arange", "size": "BLOCK"}}},
         "needs_float", "/body/1/value/x"),
    case("idiv-of-floats", VADD, {"/body/5/value/op": "idiv"}, "needs_int", "/body/5/value"),
    case("host-arithmetic-on-float", VADD, {"/grid/0/lhs": 2.5}, "needs_int", "/grid/0/lhs"),
    case("output-shape-of-tensor", VADD, {"/outputs/0/shape/0": "x"}, "needs_int", "/outputs/0/shape/0"),
    case("mask-of-integers", VADD, {"/body/3/value/mask": "offsets"}, "needs_bool", "/body/3/value/mask"),
    case("where-condition-of-floats", VADD, {"/body/5/value": {"op": "where", "cond": "x_block", "x": "x_block", "y": 0.0}},
         "needs_bool", "/body/5/value/cond"),
    case("not-of-integer", VADD, {"/body/2/value": {"op": "not", "x": "offsets"}}, "needs_bool", "/body/2/value/x"),
    case("exp-of-f16", VADD, {"/body/5/value": {"op": "exp", "x": {"op": "cast", "x": "x_block", "dtype": "f16"}}},
         "needs_f32", "/body/5/value/x"),
    case("sum-of-f16", SOFTMAX, {"/body/4/body/5/value/x": {"op": "cast", "x": "chunk", "dtype": "f16"}},
         "needs_f32", "/body/4/body/5/value/x"),
    case("pow-of-integers", VADD, {"/body/1/value/op": "pow"}, "needs_f32", "/body/1/value"),
    case("size-as-block-dim", VADD, {"/body/1/value/rhs/size": "N"}, "not_constexpr", "/body/1/value/rhs/size"),
    # host and binding
    case("numel-inside-kernel", VADD, {"/body/2/value/rhs": {"op": "numel", "of": "x"}}, "host_only", "/body/2/value/rhs"),
    case("num-sms-inside-kernel", VADD, {"/body/2/value/rhs": {"op": "num_sms"}}, "host_only", "/body/2/value/rhs"),
    case("num-sms-in-output-shape", VADD, {"/outputs/0/shape/0": {"op": "num_sms"}}, "device_dependent",
         "/outputs/0/shape/0"),
    case("program-id-in-grid", VADD, {"/grid/0": {"op": "program_id"}}, "device_only", "/grid/0"),
    case("exp-in-output-shape", VADD, {"/outputs/0/shape/0": {"op": "exp", "x": "N"}}, "device_only", "/outputs/0/shape/0"),
    case("output-never-stored", VADD, {"/outputs/1": {"name": "extra", "dtype": "f32", "shape": ["N"]}},
         "output_not_written", "/outputs/1"),
    case("tensor-param-with-dtype", VADD, {"/params/0/dtype": "f32"}, "bad_binding", "/params/0/dtype"),
    case("float-param-as-i32", VADD, {"/params/4": {"name": "scale", "value": 1.5, "dtype": "i32"}},
         "bad_binding", "/params/4/dtype"),
    case("float-in-i32-block", VADD, {"/body/5/value/rhs": full([256], 1.5, "i32")}, "bad_value", "/body/5/value/rhs/value"),
    # literals: each must fit the dtype it takes
    case("i32-block-value-too-big", VADD, {"/body/5/value/rhs": full([256], 1 << 40, "i32")}, "literal_out_of_range",
         "/body/5/value/rhs/value"),
    case("i32-plus-2-pow-31", VADD, {"/body/1/value/lhs": {"op": "add", "lhs": "block_start", "rhs": 1 << 31}},
         "literal_out_of_range", "/body/1/value/lhs/rhs"),
    case("i32-compared-with-i64-literal", VADD, {"/body/2/value/rhs": 1 << 40}, "literal_out_of_range",
         "/body/2/value/rhs"),
    case("literal-beyond-i64", VADD, {"/body/5/value/rhs": 10 ** 400}, "literal_out_of_range", "/body/5/value/rhs"),
    case("literal-beyond-i64-in-grid", VADD, {"/grid/0/lhs": -(10 ** 30)}, "literal_out_of_range", "/grid/0/lhs"),
    case("float-literal-beyond-f32", VADD, {"/body/5/value/rhs": 1e39}, "literal_out_of_range", "/body/5/value/rhs"),
    case("float-literal-beyond-f16", VADD,
         {"/body/5/value": {"op": "cast", "dtype": "f32", "x": {"op": "mul", "rhs": 70000.0,
                                                                "lhs": {"op": "cast", "x": "x_block", "dtype": "f16"}}}},
         "literal_out_of_range", "/body/5/value/x/rhs"),
    case("f16-block-value-too-big", VADD, {"/body/5/value/rhs": {"op": "cast", "x": full([256], 1e5, "f16"), "dtype": "f32"}},
         "literal_out_of_range", "/body/5/value/rhs/x/value"),
    case("loop-bound-beyond-the-loop-var", SOFTMAX, {"/body/4/stop": 1 << 40}, "literal_out_of_range", "/body/4/stop"),
    case("param-literal-beyond-i32", VADD, {"/params/4": {"name": "big", "value": 1 << 40}},
         "literal_out_of_range", "/params/4/value"),
    case("meta-value-beyond-i32", VADD, {"/meta/0/value": 1 << 40}, "literal_out_of_range", "/meta/0/value"),
    # names
    case("let-name-too-long", VADD, {"/body/4/name": "y" * 65, "/body/5/value/rhs": "y" * 65}, "name_too_long",
         "/body/4/name"),
    case("kernel-name-too-long", VADD, {"/name": "k" * 65}, "name_too_long", "/name"),
    case("kernel-named-underscore", VADD, {"/name": "_"}, "bad_name", "/name"),
    case("meta-value-zero", VADD, {"/meta/0/value": 0}, "bad_value", "/meta/0/value"),
    case("fixed-input-size-zero", VADD, {"/inputs/0/shape/0": 0, "/outputs/0/shape/0": "N"}, "bad_value",
         "/inputs/0/shape/0"),
]

SCHEMA_CASES = [
    case("unknown-op", VADD, {"/body/0/value/op": "matmul"}, "unknown_op", "/body/0/value/op"),
    case("unknown-statement", VADD, {"/body/5/op": "print"}, "unknown_op", "/body/5/op"),
    case("object-without-op", VADD, {"/body/0/value": {"lhs": 1, "rhs": 2}}, "missing_field", "/body/0/value/op"),
    case("load-without-ptr", VADD, {"/body/3/value/ptr": REMOVE}, "missing_field", "/body/3/value/ptr"),
    case("kernel-without-grid", VADD, {"/grid": REMOVE}, "missing_field", "/grid"),
    case("misspelled-field", VADD, {"/body/3/value/maks": "in_bounds"}, "unknown_field", "/body/3/value/maks"),
    case("unknown-top-level-field", VADD, {"/version": 2}, "unknown_field", "/version"),
    case("meta-value-not-an-int", VADD, {"/meta/0/value": "big"}, "bad_type", "/meta/0/value"),
    case("body-not-a-list", VADD, {"/body": {"op": "let"}}, "bad_type", "/body"),
    case("expression-is-a-list", VADD, {"/body/0/value": [1, 2]}, "bad_type", "/body/0/value"),
    case("name-not-an-identifier", VADD, {"/body/0/name": "2nd"}, "bad_name", "/body/0/name"),
    case("reference-not-an-identifier", VADD, {"/body/5/value/lhs": "x block"}, "bad_name", "/body/5/value/lhs"),
    case("unknown-dtype", VADD, {"/inputs/0/dtype": "f8"}, "bad_value", "/inputs/0/dtype"),
    case("num-warps-not-power-of-two", VADD, {"/num_warps": 3}, "bad_value", "/num_warps"),
    case("num-stages-past-8", VADD, {"/num_stages": 9}, "bad_value", "/num_stages"),
    case("loop-num-stages-zero", SOFTMAX, {"/body/4/num_stages": 0}, "bad_value", "/body/4/num_stages"),
    case("unknown-cache-modifier", VADD, {"/body/3/value/cache": "cs"}, "bad_value", "/body/3/value/cache"),
    case("program-axis-3", VADD, {"/body/0/value/lhs/axis": 3}, "bad_value", "/body/0/value/lhs/axis"),
    case("no-outputs", VADD, {"/outputs": []}, "bad_type", "/outputs"),
    case("grid-of-four-axes", VADD, {"/grid": [1, 1, 1, 1]}, "bad_type", "/grid"),
    case("meta-value-true", VADD, {"/meta/0/value": True}, "bad_type", "/meta/0/value"),
    case("meta-value-float", VADD, {"/meta/0/value": 1024.0}, "bad_type", "/meta/0/value"),
    case("let-named-nan", VADD, {"/body/4/name": "nan"}, "reserved_name", "/body/4/name"),
    case("if-else-spelled-else_", BRANCHED, {"/body/4/else_": []}, "unknown_field", "/body/4/else_"),
    case("if-result-without-else", BRANCHED, {"/body/4/results/0/else": REMOVE}, "missing_field",
         "/body/4/results/0/else"),
]


@pytest.mark.parametrize("base,edits,code,path", SEMANTIC_CASES + SCHEMA_CASES)
def test_malformed_kernel_gets_one_diagnostic_at_its_node(base, edits, code, path) -> None:
    assert diagnose(mutated(base, edits)) == [(path, code)]


def test_the_bases_are_valid() -> None:
    for base in (VADD, SOFTMAX, MATMUL, BRANCHED):
        assert diagnose(base) == []


FP8_MATMUL = mutated(MATMUL, {"/inputs/0/dtype": "f8e4m3", "/inputs/1/dtype": "f8e5m2"})  # BLOCK_K 32
TARGET_CASES = [pytest.param(FP8_MATMUL, 86, "fp8_target", "/body/7/body/9/value", id="fp8-dot-on-sm_86")]


@pytest.mark.parametrize("base,capability,code,path", TARGET_CASES)
def test_a_target_without_a_construct_is_refused_at_its_node(base, capability, code, path) -> None:
    assert diagnose(base) == []
    with pytest.raises(SemanticError) as caught:
        check(kernel_from_obj(base), capability=capability)
    assert [(d.path, d.code) for d in caught.value.diagnostics] == [(path, code)]
    check(kernel_from_obj(base), capability=89)


def test_every_checker_rule_has_a_case() -> None:
    """Every code the checker, its limits and the bounds check raise (the registry also holds
    the parser's and the runtime's) has a case here."""
    covered = {c.values[2] for c in SEMANTIC_CASES + TARGET_CASES}
    raised = set()
    for module in ("check/checker", "check/host", "check/statements", "check/blocks", "check/dots", "lang/generic", "lang/limits",
                   "check/bounds"):
        raised |= set(codes_raised((Path(kernelgen.__file__).parent / f"{module}.py").read_text()))
    assert covered == raised and covered <= set(RULES)


def test_the_catalogue_is_large() -> None:
    assert len(SEMANTIC_CASES) + len(SCHEMA_CASES) >= 45


def test_independent_errors_are_all_reported() -> None:
    """Errors in unrelated statements are all reported; uses of a value whose definition
    failed are not reported again."""
    doc = mutated(VADD, {"/body/3/value/ptr/op": "mul", "/body/4/value/mask": "offsets"})
    assert diagnose(doc) == [("/body/3/value/ptr", "bad_operand"), ("/body/4/value/mask", "needs_bool")]


def test_hints_are_proven_refuted_or_trusted() -> None:
    """Offsets ``pid * BLOCK + arange(BLOCK)`` are contiguous and their runs start at multiples
    of BLOCK (proven); a claim on a loaded value cannot be seen and is trusted."""
    offsets = VADD["body"][1]["value"]
    proven = {"/body/1/value": {"op": "hint", "x": offsets, "max_contiguous": [1024],
                                "multiple_of": [1024]}}
    trusted = {"/body/4/value/ptr/rhs": {"op": "hint", "x": {"op": "cast", "x": "x_block", "dtype": "i32"},
                                         "max_contiguous": [1024]}}
    assert diagnose(mutated(VADD, proven)) == []
    # pid * BLOCK is an unknown multiple of 1024: runs starting at it + 1 are not aligned to 1024
    assert diagnose(mutated(VADD, {"/body/1/value": {**proven["/body/1/value"], "x": {
        "op": "add", "lhs": offsets, "rhs": 1}}})) == [("/body/1/value", "bad_hint")]
    # pid alone may be anything: a claim that its runs start at multiples of 4 is trusted
    assert diagnose(mutated(VADD, {"/body/1/value": {"op": "hint", "max_contiguous": [1024], "multiple_of": [4], "x": {
        "op": "add", "lhs": {"op": "program_id"}, "rhs": {"op": "arange", "size": "BLOCK"}}}})) == []
    assert diagnose(mutated(VADD, trusted)) == []


def test_if_diagnostics_say_what_is_wrong_and_where() -> None:
    """Both sides' types for a result that differs; the shape of a block condition; an error
    in the condition does not hide one in a branch."""
    def messages(edits: dict[str, Any]) -> list[tuple[str, str, str]]:
        try:
            check(kernel_from_obj(mutated(BRANCHED, edits)))
        except SemanticError as exc:
            return [(d.path, d.code, d.message) for d in exc.diagnostics]
        return []

    ((path, code, message),) = messages({"/body/4/results/0/else/dtype": "f16"})
    assert "'y_block' is f32 in then but f16 in else" in message
    ((path, code, message),) = messages({"/body/4/cond": "in_bounds"})
    assert "scalar, got bool[1024]" in message and "where" in message
    both = messages({"/body/4/cond": "in_bounds", "/body/4/then": [{"op": "let", "name": "t", "value": "nope"}]})
    assert [(p, c) for p, c, _ in both] == [("/body/4/cond", "needs_scalar"), ("/body/4/then/0/value", "undefined_name")]


def test_meta_override_of_unknown_name() -> None:
    assert diagnose(VADD, meta={"BLOCK_SIZE": 128}) == [("/meta", "undefined_name")]


def test_meta_override_is_checked_like_the_kernel_value() -> None:
    assert diagnose(VADD, meta={"BLOCK": 100}) == [("/body/1/value/rhs/size", "not_power_of_two")]
    assert diagnose(VADD, meta={"BLOCK": 128}) == []


def test_diagnostics_say_what_to_do() -> None:
    """Messages are for a model's repair round: they name the values involved."""
    with pytest.raises(SemanticError) as info:
        check(kernel_from_obj(mutated(VADD, {"/inputs/1/dtype": "f16"})))
    assert "f32" in str(info.value) and "f16" in str(info.value) and "cast" in str(info.value)
    with pytest.raises(SemanticError) as info:
        check(kernel_from_obj(mutated(VADD, {"/body/5/mask": REMOVE})))
    assert "N=1" in str(info.value) and "add a mask" in str(info.value)


def test_errors_carry_their_stage() -> None:
    with pytest.raises(KernelgenError) as info:
        check(kernel_from_obj(mutated(VADD, {"/body/5/value/rhs": "z"})))
    assert info.value.stage == "check" and info.value.to_dict()["outcome"] == "semantic_error"
    with pytest.raises(KernelgenError) as info:
        kernel_from_obj(mutated(VADD, {"/body/0/value/op": "matmul"}))
    assert info.value.stage == "parse" and info.value.to_dict()["outcome"] == "schema_error"


# Unmasked accesses the bounds analysis must accept: each is inside its tensor for every size.
PROVABLY_IN_BOUNDS = [
    pytest.param(
        {"/grid": ["N"], "/body": [
            {"op": "let", "name": "i", "value": {"op": "program_id"}},
            {"op": "store", "ptr": {"op": "add", "lhs": "out", "rhs": "i"},
             "value": {"op": "add", "lhs": {"op": "load", "ptr": {"op": "add", "lhs": "x", "rhs": "i"}},
                       "rhs": {"op": "load", "ptr": {"op": "add", "lhs": "y", "rhs": "i"}}}}]},
        id="program-id-over-grid-N"),
    pytest.param(
        {"/grid": [{"op": "cdiv", "lhs": "N", "rhs": "BLOCK"}], "/body/5/mask": REMOVE,
         "/body/5/ptr": {"op": "add", "lhs": "out", "rhs": {"op": "minimum", "lhs": "offsets", "rhs": {"op": "sub", "lhs": "N", "rhs": 1}}}},
        id="offsets-clamped-with-minimum"),
    pytest.param(
        {"/body/3/value": {"op": "load", "ptr": {"op": "add", "lhs": "x", "rhs": {"op": "rem", "lhs": "offsets", "rhs": "N"}}}},
        id="offsets-modulo-N"),
    pytest.param(
        {"/body/3/value": {"op": "load", "ptr": "x"}},
        id="first-element"),
    pytest.param(
        {"/body/3/value": {"op": "load", "ptr": {"op": "add", "lhs": "x", "rhs": {"op": "clamp", "x": "offsets", "lo": 0,
                                                                                     "hi": {"op": "sub", "lhs": "N", "rhs": 1}}}}},
        id="offsets-clamped"),
]


@pytest.mark.parametrize("edits", PROVABLY_IN_BOUNDS)
def test_bounds_analysis_accepts_provably_in_bounds_accesses(edits) -> None:
    assert diagnose(mutated(VADD, edits)) == []


@pytest.mark.parametrize("name, stage_error, code", [
    ("k" * (1 << 20), SemanticError, "name_too_long"),
    ("k-" * (1 << 19), SchemaError, "bad_name"),
], ids=["valid-identifier", "invalid-identifier"])
def test_a_name_of_a_megabyte_is_refused_with_a_short_message(name: str, stage_error, code: str) -> None:
    """A 5 MB kernel name once reached ptxas (error code -11); the refusal quotes only its start."""
    with pytest.raises(stage_error) as info:
        check(kernel_from_obj(mutated(VADD, {"/name": name})))
    ((path, found, message),) = [(d.path, d.code, d.message) for d in info.value.diagnostics]
    assert (path, found) == ("/name", code) and len(message) < 200


def test_f64_is_typed_like_triton() -> None:
    """A float literal with f64 takes f64; math, pow and sum keep f64; a float param may be f64."""
    doc = mutated(VADD, {"/inputs/0/dtype": "f64", "/inputs/1/dtype": "f64", "/outputs/0/dtype": "f64",
                         "/body/5/value": {"op": "add", "lhs": {"op": "exp", "x": {"op": "mul", "lhs": "x_block",
                                                                                    "rhs": 0.1}},
                                           "rhs": {"op": "pow", "lhs": "y_block", "rhs": 2.0}}})
    checked = check(kernel_from_obj(doc))
    assert [str(checked.types[p]) for p in ("/body/5/value", "/body/5/value/lhs", "/body/5/value/lhs/x",
                                            "/body/5/value/rhs")] == ["f64[1024]"] * 4
    assert checked.operand_dtypes["/body/5/value/lhs/x"] == "f64"
    bound = mutated(VADD, {"/params/3": {"name": "N"}, "/params/4": {"name": "s", "value": 0.5, "dtype": "f64"}})
    assert check(kernel_from_obj(bound)).params[-1].type.dtype == "f64"
