"""Other forms of goldens, as variant task files for ``KERNELGEN_BENCH_DIR`` (issue 33: the
measurements in swiglu_mlp_f16's, linear_optional_bias's, linear_bias_gelu_f16's,
maxpool2x2's, prelu_channels's, gemv_f16's, row_mean_bf16's, avg_pool1d_stride's, row_var's and
col_mean_var's golden comments), which ``tools/golden_variants.py``
(meta values, warps, stages, hints) cannot write: matmul_f16's persistent tile-load form applied
to the GEMMs, row_mean_bf16's rows per program, and the forms
maxpool2x2, prelu_channels and gemv_f16 now have (Inductor's flat range of outputs per program, x
as a row), with their block sizes and warps as arguments.

    python tools/golden_forms.py --out /tmp/variants swiglu-fused 23 128 128 8 3
    python tools/golden_forms.py --out /tmp/variants swiglu-two 27 128 128 8 3
    python tools/golden_forms.py --out /tmp/variants linear-bias 30 128 128 64 8 3
    python tools/golden_forms.py --out /tmp/variants linear-gelu 1 128 256 64 8 3
    python tools/golden_forms.py --out /tmp/variants maxpool-flat 1 512 8 1
    python tools/golden_forms.py --out /tmp/variants prelu-flat 1 1024 4
    python tools/golden_forms.py --out /tmp/variants glu-flat 1 1024 4
    python tools/golden_forms.py --out /tmp/variants gemv-row-x 1 4 256 4
    python tools/golden_forms.py --out /tmp/variants row-mean-rows 1 8 256 4
    python tools/golden_forms.py --out /tmp/variants avgpool-flat 1 512 8 1
    python tools/golden_forms.py --out /tmp/variants row-var-rows 1 2 512 16
    python tools/golden_forms.py --out /tmp/variants col-mean-var-columns-first 1 32 32 128 2
    python tools/golden_forms.py --out /tmp/variants col-argmin-split 1 32 32 128 4
    python tools/golden_forms.py --out /tmp/variants col-sum-split 1 32 32 128 2

``swiglu-fused K BM BN WARPS STAGES``: both dots per tile, two f32 accumulators; ``swiglu-two``:
silu(x @ w1) into f32 scratch by one launch, multiplied into x @ w3 by a second;
``linear-bias K BM BN BK WARPS STAGES [F32_BN]``: linear_f16's form with linear_optional_bias's bias
epilogue (F32_BN: BLOCK_N for the f32 call, a meta ``when``); ``linear-gelu``, the same with linear_bias_gelu_f16's bias and exact GELU;
``maxpool-flat K BLOCK WARPS EVICT_LAST``, ``prelu-flat K BLOCK WARPS`` and ``glu-flat K BLOCK WARPS``
(glu_halves): Inductor's flat range of outputs per program; ``gemv-row-x K BLOCK_N BLOCK_K WARPS``: x loaded as a [1, BLOCK_K] row; ``row-mean-rows K ROWS
BLOCK WARPS``: row_mean_bf16 over [ROWS, BLOCK] tiles, as Inductor's mean; ``avgpool-flat BLOCK WARPS
EVICT_LAST``: avg_pool1d_stride over a flat range of outputs; ``row-var-rows ROWS BLOCK WARPS``:
row_var in row_std_f16's [ROWS, BLOCK] Welford form; ``col-mean-var-columns-first SPLIT BLOCK_M
BLOCK_N WARPS``: col_mean_var's first launch with the column block as the grid's first axis;
``col-argmin-split`` and ``col-sum-split SPLIT BLOCK_M BLOCK_N WARPS``: col_argmin and col_sum_bf16 as
split reductions (SPLIT row chunks into scratch, a second launch combining them). Each writes ``<tier>/<task>_v<K>.yaml`` under ``--out``; time them as
golden_variants.py says."""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import Any

import yaml

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _tile_load(base: str, shape: list, strides: list, block: list, offsets: list) -> dict:
    return {"op": "tile_load", "base": base, "shape": shape, "strides": strides, "block": block, "offsets": offsets}


ROW0 = {"op": "mul", "lhs": "tile_m", "rhs": "BLOCK_M"}
COL0 = {"op": "mul", "lhs": "tile_n", "rhs": "BLOCK_N"}


def _tile_store(base: str, value: Any) -> dict:
    return {"op": "tile_store", "base": base, "shape": ["M", "N"], "strides": ["N", 1], "offsets": [ROW0, COL0],
            "value": value}


def _meta(bm: int, bn: int, bk: int) -> list[dict]:
    return [{"name": "BLOCK_M", "value": bm}, {"name": "BLOCK_N", "value": bn}, {"name": "BLOCK_K", "value": bk},
            {"name": "GROUP_M", "value": 8}]


def _persistent(template: dict, stages: int, dots: list[tuple[str, str]], epilogue: list[dict]) -> list[dict]:
    """matmul_f16's tile walk (``template``: its golden) with one accumulator per (name, weight) in
    ``dots``, each x tile multiplied by the weight's [BLOCK_K, BLOCK_N] tile, then ``epilogue``."""
    outer = copy.deepcopy(template["body"][0])
    outer["num_stages"] = stages
    inner = outer["body"][-2]
    x_tile = _tile_load("x", ["M", "K"], ["K", 1], ["BLOCK_M", "BLOCK_K"], [ROW0, "k0"])
    inner["carry"] = [{"name": a, "init": {"op": "full", "shape": ["BLOCK_M", "BLOCK_N"], "value": 0.0, "dtype": "f32"},
                       "next": "new_" + a} for a, _ in dots]
    inner["body"] = [{"op": "let", "name": "x_tile", "value": x_tile}] + [
        {"op": "let", "name": "new_" + a, "value": {"op": "dot", "lhs": "x_tile", "acc": a,
                                                    "rhs": _tile_load(w, ["K", "N"], ["N", 1], ["BLOCK_K", "BLOCK_N"],
                                                                      ["k0", COL0])}} for a, w in dots]
    outer["body"][-1:] = epilogue
    return [outer]


def swiglu(fused: bool, bm: int, bn: int, warps: int, stages: int) -> dict:
    task = yaml.safe_load((BENCH / "hard" / "swiglu_mlp_f16.yaml").read_text())
    matmul = yaml.safe_load((BENCH / "hard" / "matmul_f16.yaml").read_text())["golden"]
    old = task["golden"]
    silu = lambda g: {"op": "mul", "lhs": g, "rhs": {"op": "sigmoid", "x": g}}  # noqa: E731
    head = {"name": old["name"], "inputs": old["inputs"], "outputs": old["outputs"], "meta": _meta(bm, bn, 64)}
    if fused:
        product = {"op": "cast", "x": {"op": "mul", "lhs": silu("gate_acc"), "rhs": "up_acc"}, "dtype": "f16"}
        task["golden"] = {**head, "params": old["params"], "grid": matmul["grid"], "num_warps": warps,
                          "num_stages": stages,
                          "body": _persistent(matmul, stages, [("gate_acc", "w1"), ("up_acc", "w3")],
                                              [_tile_store("out", product)])}
        return task
    sizes = [{"name": "M"}, {"name": "N"}, {"name": "K"}]
    gate = _tile_load("gate", ["M", "N"], ["N", 1], ["BLOCK_M", "BLOCK_N"], [ROW0, COL0])
    product = {"op": "cast", "x": {"op": "mul", "lhs": gate, "rhs": "up_acc"}, "dtype": "f16"}
    launch = {"grid": matmul["grid"], "num_warps": warps, "num_stages": stages}
    task["golden"] = {**head, "scratch": [{"name": "gate", "dtype": "f32", "shape": ["M", "N"]}], "launches": [
        {"name": "gate_projection", "params": [{"name": "x"}, {"name": "w1"}, {"name": "gate"}, *sizes], **launch,
         "body": _persistent(matmul, stages, [("gate_acc", "w1")], [_tile_store("gate", silu("gate_acc"))])},
        {"name": "up_projection", "params": [{"name": "x"}, {"name": "w3"}, {"name": "gate"}, {"name": "out"}, *sizes],
         **launch, "body": _persistent(matmul, stages, [("up_acc", "w3")], [_tile_store("out", product)])}]}
    return task


def _linear_with_epilogue(task_name: str, epilogue: Any, bm: int, bn: int, bk: int, warps: int, stages: int) -> dict:
    """linear_f16's persistent tile walk for ``task_name``, its store's value ``epilogue(h)`` where
    h is the f32 tile plus the bias row (``bias_read``: the bias load's mask)."""
    task = yaml.safe_load((BENCH / "hard" / f"{task_name}.yaml").read_text())
    linear = yaml.safe_load((BENCH / "hard" / "linear_f16.yaml").read_text())["golden"]
    outer = copy.deepcopy(linear["body"][0])
    outer["num_stages"] = stages
    store = outer["body"][-1]
    cols = {"op": "add", "lhs": COL0, "rhs": {"op": "arange", "size": "BLOCK_N"}}
    read = epilogue.bias_read
    bias = {"op": "load", "ptr": {"op": "add", "lhs": "bias", "rhs": "cols"}, "mask": read}
    store["value"] = epilogue.value({"op": "add", "lhs": "acc", "rhs": "bias_row"})
    outer["body"][-1:] = [{"op": "let", "name": "cols", "value": cols},
                          {"op": "let", "name": "bias_row",
                           "value": {"op": "expand_dims", "x": {"op": "cast", "x": bias, "dtype": "f32"}, "axis": 0}},
                          store]
    old = task["golden"]
    task["golden"] = {**{k: old[k] for k in ("name", "dtypes", "inputs", "outputs", "params") if k in old},
                      "meta": _meta(bm, bn, bk), "grid": linear["grid"], "num_warps": warps, "num_stages": stages,
                      "body": [outer]}
    return task


class _OptionalBias:
    """linear_optional_bias: the bias read only where HAS_BIAS, the result in the call's dtype T."""
    bias_read = {"op": "and", "lhs": {"op": "lt", "lhs": "cols", "rhs": "N"}, "rhs": {"op": "eq", "lhs": "HAS_BIAS", "rhs": 1}}

    @staticmethod
    def value(h: dict) -> dict:
        return {"op": "cast", "x": h, "dtype": "T"}


class _ExactGelu:
    """linear_bias_gelu_f16: 0.5 h (1 + erf(h / sqrt 2)) in f32, rounded to f16 at the store."""
    bias_read = {"op": "lt", "lhs": "cols", "rhs": "N"}

    @staticmethod
    def value(h: dict) -> dict:
        half = {"op": "mul", "lhs": 0.5, "rhs": h}
        erf = {"op": "erf", "x": {"op": "mul", "lhs": h, "rhs": 0.7071067811865476}}
        return {"op": "cast", "x": {"op": "mul", "lhs": half, "rhs": {"op": "add", "lhs": 1.0, "rhs": erf}}, "dtype": "f16"}


def linear_bias(bm: int, bn: int, bk: int, warps: int, stages: int, f32_bn: int | None = None) -> dict:
    task = _linear_with_epilogue("linear_optional_bias", _OptionalBias, bm, bn, bk, warps, stages)
    if f32_bn is not None:  # the f32 call's BLOCK_N (a meta value by dtype): its tiles take twice the shared memory
        task["golden"]["meta"][1]["when"] = [{"dtypes": {"T": "f32"}, "value": f32_bn}]
    return task


def linear_gelu(bm: int, bn: int, bk: int, warps: int, stages: int) -> dict:
    return _linear_with_epilogue("linear_bias_gelu_f16", _ExactGelu, bm, bn, bk, warps, stages)


MAXPOOL_FLAT_BODY = """
- {op: let, name: outs, value: {op: add, lhs: {op: mul, lhs: {op: program_id}, rhs: BLOCK}, rhs: {op: arange, size: BLOCK}}}
- {op: let, name: in_range, value: {op: lt, lhs: outs, rhs: total}}
- {op: let, name: out_col, value: {op: rem, lhs: outs, rhs: OW}}
- {op: let, name: out_row, value: {op: idiv, lhs: outs, rhs: OW}}
- {op: let, name: upper, value: {op: add, lhs: {op: mul, lhs: out_row, rhs: {op: mul, lhs: 4, rhs: OW}}, rhs: {op: mul, lhs: out_col, rhs: 2}}}
- {op: let, name: pair_offsets, value: {op: add, lhs: {op: expand_dims, x: upper, axis: 1}, rhs: {op: expand_dims, x: {op: arange, size: 2}, axis: 0}}}
- {op: let, name: pair_mask, value: {op: expand_dims, x: in_range, axis: 1}}
- {op: let, name: top, value: {op: load, ptr: {op: add, lhs: x, rhs: pair_offsets}, mask: pair_mask, cache: CACHE}}
- {op: let, name: bottom, value: {op: load, ptr: {op: add, lhs: x, rhs: {op: add, lhs: pair_offsets, rhs: {op: mul, lhs: 2, rhs: OW}}}, mask: pair_mask, cache: CACHE}}
- {op: store, ptr: {op: add, lhs: out, rhs: outs}, value: {op: max, x: {op: maximum, lhs: top, rhs: bottom}, axis: 1}, mask: in_range}
"""


def _flat_form(tier: str, name: str, params: list[str], total: dict, block: int, warps: int, body: str) -> dict:
    """A task's file with its golden in Inductor's flat form: the golden's tensors, ``params``
    then ``total`` (the outputs' element count, a host value), BLOCK of them per program."""
    task = yaml.safe_load((BENCH / tier / f"{name}.yaml").read_text())
    old = task["golden"]
    task["golden"] = {"name": old["name"], "inputs": old["inputs"], "outputs": old["outputs"],
                      "params": [{"name": p} for p in params] + [{"name": "total", "value": total}],
                      "meta": [{"name": "BLOCK", "value": block}], "grid": [{"op": "cdiv", "lhs": total, "rhs": "BLOCK"}],
                      "num_warps": warps, "body": yaml.safe_load(body)}
    return task


def maxpool_flat(block: int, warps: int, evict_last: int) -> dict:
    """maxpool2x2 as Inductor writes it: one flat range of BLOCK outputs per program, each
    output's row and column by division, its two input pairs loaded as [BLOCK, 2] tiles."""
    total = {"op": "mul", "lhs": {"op": "mul", "lhs": {"op": "mul", "lhs": "B", "rhs": "C"}, "rhs": "OH"}, "rhs": "OW"}
    body = MAXPOOL_FLAT_BODY.replace("CACHE", "evict_last" if evict_last else "evict_first")
    return _flat_form("hard", "maxpool2x2", ["x", "out", "OW"], total, block, warps, body)


PRELU_FLAT_BODY = """
- {op: let, name: offs, value: {op: add, lhs: {op: mul, lhs: {op: program_id}, rhs: BLOCK}, rhs: {op: arange, size: BLOCK}}}
- {op: let, name: in_range, value: {op: lt, lhs: offs, rhs: total}}
- {op: let, name: v, value: {op: load, ptr: {op: add, lhs: x, rhs: offs}, mask: in_range}}
- {op: let, name: slope, value: {op: load, ptr: {op: add, lhs: weight, rhs: {op: rem, lhs: offs, rhs: N}}, mask: in_range, cache: evict_last}}
- {op: store, ptr: {op: add, lhs: y, rhs: offs}, value: {op: where, cond: {op: gt, lhs: v, rhs: 0.0}, x: v, y: {op: mul, lhs: slope, rhs: v}}, mask: in_range}
"""


def prelu_flat(block: int, warps: int) -> dict:
    """prelu_channels as Inductor writes it: flat BLOCK elements per program, each one's slope
    gathered by its column (offset mod N), kept in cache (evict_last)."""
    return _flat_form("med", "prelu_channels", ["x", "weight", "y", "N"], {"op": "mul", "lhs": "M", "rhs": "N"},
                      block, warps, PRELU_FLAT_BODY)


GLU_FLAT_BODY = """
- {op: let, name: offs, value: {op: add, lhs: {op: mul, lhs: {op: program_id}, rhs: BLOCK}, rhs: {op: arange, size: BLOCK}}}
- {op: let, name: in_range, value: {op: lt, lhs: offs, rhs: total}}
- {op: let, name: value_offsets, value: {op: add, lhs: {op: mul, lhs: {op: idiv, lhs: offs, rhs: N}, rhs: {op: mul, lhs: 2, rhs: N}}, rhs: {op: rem, lhs: offs, rhs: N}}}
- {op: let, name: value, value: {op: load, ptr: {op: add, lhs: x, rhs: value_offsets}, mask: in_range}}
- {op: let, name: gate, value: {op: load, ptr: {op: add, lhs: x, rhs: {op: add, lhs: value_offsets, rhs: N}}, mask: in_range}}
- {op: store, ptr: {op: add, lhs: out, rhs: offs}, value: {op: mul, lhs: value, rhs: {op: sigmoid, x: gate}}, mask: in_range}
"""


def glu_flat(block: int, warps: int) -> dict:
    """glu_halves as Inductor writes it: flat BLOCK outputs per program, each one's row and
    column by division by N (vectorized where N is specialized as a multiple of 16, since the
    lowering leaves the guard for zero out there; 16 scalar loads a thread before)."""
    return _flat_form("med", "glu_halves", ["x", "out", "N"], {"op": "mul", "lhs": "M", "rhs": "N"},
                      block, warps, GLU_FLAT_BODY)


def gemv_row_x(block_n: int, block_k: int, warps: int) -> dict:
    """gemv_f16 with x loaded as Inductor loads it: a [1, BLOCK_K] row (evict_last), broadcast
    against the weight tile in registers (the golden's form since 2026-12-03; before, a
    [BLOCK_N, BLOCK_K] broadcast of x's pointers), with the given block sizes and warps."""
    task = yaml.safe_load((BENCH / "hard" / "gemv_f16.yaml").read_text())
    golden = task["golden"]
    golden["meta"] = [{"name": "BLOCK_N", "value": block_n}, {"name": "BLOCK_K", "value": block_k}]
    golden["num_warps"] = warps
    loop = next(s for s in golden["body"] if s.get("op") == "for")
    x_let = next(s for s in loop["body"] if s.get("name") == "x_chunk")
    row = {"op": "expand_dims", "x": "ks", "axis": 0}
    x_let["value"] = {"op": "cast", "x": {"op": "load", "ptr": {"op": "add", "lhs": "x", "rhs": row},
                                          "mask": {"op": "expand_dims", "x": "k_in_bounds", "axis": 0},
                                          "cache": "evict_last"}, "dtype": "f32"}
    return task


ROW_MEAN_BODY = """
- {op: let, name: rows, value: {op: add, lhs: {op: mul, lhs: {op: program_id}, rhs: ROWS}, rhs: {op: arange, size: ROWS}}}
- {op: let, name: row_in, value: {op: lt, lhs: rows, rhs: M}}
- {op: let, name: row_column, value: {op: expand_dims, x: rows, axis: 1}}
- {op: let, name: row_mask, value: {op: expand_dims, x: row_in, axis: 1}}
- {op: let, name: lanes, value: {op: arange, size: BLOCK}}
- op: for
  var: chunk_start
  stop: N
  step: BLOCK
  carry:
    - {name: partial_sums, init: {op: full, shape: [ROWS, BLOCK], value: 0.0, dtype: f32}, next: new_partial_sums}
  body:
    - {op: let, name: cols, value: {op: expand_dims, x: {op: add, lhs: chunk_start, rhs: lanes}, axis: 0}}
    - {op: let, name: in_tile, value: {op: and, lhs: row_mask, rhs: {op: lt, lhs: cols, rhs: N}}}
    - {op: let, name: chunk, value: {op: load, ptr: {op: add, lhs: x, rhs: {op: add, lhs: {op: mul, lhs: row_column, rhs: N}, rhs: cols}}, mask: in_tile, other: 0.0, cache: evict_first}}
    - {op: let, name: new_partial_sums, value: {op: add, lhs: partial_sums, rhs: {op: cast, x: chunk, dtype: f32}}}
- {op: let, name: means, value: {op: div, lhs: {op: sum, x: partial_sums, axis: 1}, rhs: {op: cast, x: N, dtype: f32}}}
- {op: store, ptr: {op: add, lhs: out, rhs: rows}, value: {op: cast, x: means, dtype: bf16}, mask: row_in}
"""


def row_mean_rows(rows: int, block: int, warps: int) -> dict:
    """row_mean_bf16 as Inductor's mean: [ROWS, BLOCK] tiles of ROWS rows per program, loads
    evict_first, one f32 sum per row."""
    task = yaml.safe_load((BENCH / "med" / "row_mean_bf16.yaml").read_text())
    old = task["golden"]
    task["golden"] = {"name": old["name"], "inputs": old["inputs"], "outputs": old["outputs"],
                      "params": [{"name": "x"}, {"name": "out"}, {"name": "M"}, {"name": "N"}],
                      "meta": [{"name": "ROWS", "value": rows}, {"name": "BLOCK", "value": block}],
                      "grid": [{"op": "cdiv", "lhs": "M", "rhs": "ROWS"}], "num_warps": warps,
                      "body": yaml.safe_load(ROW_MEAN_BODY)}
    return task


AVGPOOL_FLAT_BODY = """
- {op: let, name: offs, value: {op: add, lhs: {op: mul, lhs: {op: program_id}, rhs: BLOCK}, rhs: {op: arange, size: BLOCK}}}
- {op: let, name: in_range, value: {op: lt, lhs: offs, rhs: total}}
- {op: let, name: window, value: {op: add, lhs: x, rhs: {op: add, lhs: {op: mul, lhs: {op: idiv, lhs: offs, rhs: n_out}, rhs: L}, rhs: {op: mul, lhs: {op: rem, lhs: offs, rhs: n_out}, rhs: step}}}}
- op: for
  var: t
  stop: K
  carry: [{name: total_sum, init: {op: full, shape: [BLOCK], value: 0.0, dtype: f32}, next: new_total_sum}]
  body:
    - {op: let, name: new_total_sum, value: {op: add, lhs: total_sum, rhs: {op: load, ptr: {op: add, lhs: window, rhs: t}, mask: in_range, cache: CACHE}}}
- {op: store, ptr: {op: add, lhs: y, rhs: offs}, value: {op: mul, lhs: total_sum, rhs: {op: div, lhs: 1.0, rhs: {op: cast, x: K, dtype: f32}}}, mask: in_range}
"""


def avgpool_flat(block: int, warps: int, evict_last: int) -> dict:
    """avg_pool1d_stride as Inductor writes it: one flat range of BLOCK outputs over every channel
    per program (contiguous, aligned stores), each output's channel and position by division, its
    K inputs loaded evict_last (Inductor's hint: the next output's window shares their lines) or
    evict_first."""
    task = yaml.safe_load((BENCH / "med" / "avg_pool1d_stride.yaml").read_text())
    golden = task["golden"]
    total = {"op": "mul", "lhs": "C", "rhs": "n_out"}
    golden["params"] = [{"name": "x"}, {"name": "y"}, {"name": "L"}, {"name": "n_out"}, {"name": "step"},
                        {"name": "total", "value": total}]
    golden["meta"] = [{"name": "BLOCK", "value": block}]
    golden["grid"] = [{"op": "cdiv", "lhs": total, "rhs": "BLOCK"}]
    golden["num_warps"] = warps
    golden["body"] = yaml.safe_load(AVGPOOL_FLAT_BODY.replace("CACHE", "evict_last" if evict_last else "evict_first"))
    return task


def row_var_rows(rows: int, block: int, warps: int) -> dict:
    """row_var as Inductor's var: row_std_f16's golden (one Welford pass over [ROWS, BLOCK] tiles
    of ROWS rows per program), in f32, dividing by N - 1 and not taking the root."""
    task = yaml.safe_load((BENCH / "med" / "row_var.yaml").read_text())
    source = yaml.safe_load((BENCH / "med" / "row_std_f16.yaml").read_text())["golden"]
    old = task["golden"]
    body = copy.deepcopy(source["body"])
    store = body[-1]
    store["value"] = {"op": "div", "lhs": "m2", "rhs": {"op": "cast", "x": {"op": "sub", "lhs": "N", "rhs": 1}, "dtype": "f32"}}
    task["golden"] = {"name": old["name"], "inputs": old["inputs"], "outputs": old["outputs"],
                      "params": [{"name": "x"}, {"name": "out"}, {"name": "M"}, {"name": "N"}],
                      "meta": [{"name": "ROWS", "value": rows}, {"name": "BLOCK", "value": block}],
                      "grid": [{"op": "cdiv", "lhs": "M", "rhs": "ROWS"}], "num_warps": warps, "body": body}
    return task


def _swap_program_axes(node: object) -> object:
    """``node`` with ``program_id`` axes 0 and 1 exchanged."""
    if isinstance(node, list):
        return [_swap_program_axes(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _swap_program_axes(value) for key, value in node.items()}
    if node.get("op") == "program_id":
        node["axis"] = 1 - node.get("axis", 0)
    return node


def col_mean_var_columns_first(split: int, block_m: int, block_n: int, warps: int) -> dict:
    """col_mean_var with launch 1's grid as (column block, split): programs dispatched together
    read neighbouring column blocks of the same rows (as Inductor's flat x index, column fastest,
    orders them) instead of one column block in SPLIT row chunks far apart."""
    task = yaml.safe_load((BENCH / "med" / "col_mean_var.yaml").read_text())
    golden = task["golden"]
    first = golden["launches"][0]
    first["grid"] = list(reversed(first["grid"]))
    first["body"] = _swap_program_axes(first["body"])
    first["num_warps"] = warps
    for meta in golden["meta"]:
        meta["value"] = {"SPLIT": split, "BLOCK_M": block_m, "BLOCK_N": block_n}.get(meta["name"], meta["value"])
    return task


def _split_golden(old: dict, outputs: list, blocks: tuple[int, int, int, int], scratch: dict[str, str],
                  launches: list[dict]) -> dict:
    """A split reduction's golden in place of ``old``: meta SPLIT, BLOCK_M, BLOCK_N and BLOCK_C
    (``blocks``), each ``scratch`` tensor (name: dtype) of shape [SPLIT, N], and ``launches``."""
    return {"name": old["name"], "inputs": old["inputs"], "outputs": outputs,
            "meta": [{"name": name, "value": value}
                     for name, value in zip(("SPLIT", "BLOCK_M", "BLOCK_N", "BLOCK_C"), blocks)],
            "scratch": [{"name": name, "dtype": dtype, "shape": ["SPLIT", "N"]} for name, dtype in scratch.items()],
            "launches": launches}


COL_ARGMIN_SPLIT = """
- name: split_argmin
  params: [{name: x}, {name: split_values}, {name: split_rows}, {name: M}, {name: N}]
  grid: [{op: cdiv, lhs: N, rhs: BLOCK_N}, SPLIT]
  num_warps: WARPS
  body:
    - {op: let, name: split, value: {op: program_id, axis: 1}}
    - {op: let, name: chunk, value: {op: cdiv, lhs: M, rhs: SPLIT}}
    - {op: let, name: first_row, value: {op: mul, lhs: split, rhs: chunk}}
    - {op: let, name: end_row, value: {op: minimum, lhs: {op: add, lhs: first_row, rhs: chunk}, rhs: M}}
    - {op: let, name: cols, value: {op: add, lhs: {op: mul, lhs: {op: program_id, axis: 0}, rhs: BLOCK_N}, rhs: {op: arange, size: BLOCK_N}}}
    - {op: let, name: col_row, value: {op: expand_dims, x: cols, axis: 0}}
    - {op: let, name: col_in, value: {op: lt, lhs: col_row, rhs: N}}
    - {op: let, name: row_lanes, value: {op: expand_dims, x: {op: arange, size: BLOCK_M}, axis: 1}}
    - op: for
      var: row_start
      start: first_row
      stop: end_row
      step: BLOCK_M
      carry:
        - {name: best_v, init: {op: full, shape: [BLOCK_M, BLOCK_N], value: inf, dtype: f32}, next: nv}
        - {name: best_i, init: {op: add, lhs: {op: full, shape: [BLOCK_M, BLOCK_N], value: 0, dtype: i32}, rhs: {op: add, lhs: first_row, rhs: row_lanes}}, next: ni}
      body:
        - {op: let, name: rows, value: {op: add, lhs: row_start, rhs: row_lanes}}
        - {op: let, name: tile, value: {op: load, ptr: {op: add, lhs: x, rhs: {op: add, lhs: {op: mul, lhs: rows, rhs: N}, rhs: col_row}}, mask: {op: and, lhs: {op: lt, lhs: rows, rhs: end_row}, rhs: col_in}, other: inf, cache: evict_first}}
        - {op: let, name: better, value: {op: or, lhs: {op: lt, lhs: tile, rhs: best_v}, rhs: {op: and, lhs: {op: ne, lhs: tile, rhs: tile}, rhs: {op: eq, lhs: best_v, rhs: best_v}}}}
        - {op: let, name: nv, value: {op: where, cond: better, x: tile, y: best_v}}
        - {op: let, name: ni, value: {op: where, cond: better, x: rows, y: best_i}}
    - {op: let, name: col_min, value: {op: min, x: best_v, axis: 0}}
    - {op: let, name: col_idx, value: {op: min, x: {op: where, cond: {op: or, lhs: {op: eq, lhs: best_v, rhs: {op: expand_dims, x: col_min, axis: 0}}, rhs: {op: ne, lhs: best_v, rhs: best_v}}, x: best_i, y: 2147483647}, axis: 0}}
    - {op: let, name: partial, value: {op: add, lhs: {op: mul, lhs: split, rhs: N}, rhs: cols}}
    - {op: store, ptr: {op: add, lhs: split_values, rhs: partial}, value: col_min, mask: {op: lt, lhs: cols, rhs: N}}
    - {op: store, ptr: {op: add, lhs: split_rows, rhs: partial}, value: col_idx, mask: {op: lt, lhs: cols, rhs: N}}
- name: merge
  params: [{name: split_values}, {name: split_rows}, {name: out}, {name: N}]
  grid: [{op: cdiv, lhs: N, rhs: BLOCK_C}]
  num_warps: 4
  body:
    - {op: let, name: cols, value: {op: add, lhs: {op: mul, lhs: {op: program_id}, rhs: BLOCK_C}, rhs: {op: arange, size: BLOCK_C}}}
    - {op: let, name: col_in, value: {op: lt, lhs: cols, rhs: N}}
    - {op: let, name: offsets, value: {op: add, lhs: {op: mul, lhs: {op: expand_dims, x: {op: arange, size: SPLIT}, axis: 1}, rhs: N}, rhs: {op: expand_dims, x: cols, axis: 0}}}
    - {op: let, name: values, value: {op: load, ptr: {op: add, lhs: split_values, rhs: offsets}, mask: {op: expand_dims, x: col_in, axis: 0}, other: inf}}
    - {op: let, name: rows, value: {op: load, ptr: {op: add, lhs: split_rows, rhs: offsets}, mask: {op: expand_dims, x: col_in, axis: 0}, other: 2147483647}}
    - {op: let, name: col_min, value: {op: min, x: values, axis: 0}}
    - {op: let, name: col_idx, value: {op: min, x: {op: where, cond: {op: or, lhs: {op: eq, lhs: values, rhs: {op: expand_dims, x: col_min, axis: 0}}, rhs: {op: ne, lhs: values, rhs: values}}, x: rows, y: 2147483647}, axis: 0}}
    - {op: store, ptr: {op: add, lhs: out, rhs: cols}, value: {op: cast, x: col_idx, dtype: i64}, mask: col_in}
"""


def col_argmin_split(split: int, block_m: int, block_n: int, warps: int) -> dict:
    """col_argmin as a split reduction (Inductor's split for column reductions, as col_mean_var's
    golden): program (column block, split) keeps each column's least value and first row over
    its chunk of rows into [SPLIT, N] scratch, and a second launch takes the first row among the
    splits holding the column's least (NaN the least, as argmin counts it). A split without rows
    stores inf at row first_row >= M, which loses every tie to a split with rows."""
    task = yaml.safe_load((BENCH / "med" / "col_argmin.yaml").read_text())
    task["golden"] = _split_golden(task["golden"], task["golden"]["outputs"], (split, block_m, block_n, 64),
                                   {"split_values": "f32", "split_rows": "i32"},
                                   yaml.safe_load(COL_ARGMIN_SPLIT.replace("WARPS", str(warps))))
    return task


def col_sum_split(split: int, block_m: int, block_n: int, warps: int) -> dict:
    """col_sum_bf16 as Inductor's split sum: the golden's programs (column block, row chunk)
    store their column sums into a [SPLIT, N] f32 partial instead of adding them into a zeroed
    out with atomics, and a second launch sums the SPLIT partials of each column."""
    task = yaml.safe_load((BENCH / "med" / "col_sum_bf16.yaml").read_text())
    old = task["golden"]
    first = copy.deepcopy({k: old[k] for k in ("params", "grid", "body")})
    first["params"] = [{"name": "x"}, {"name": "partials"}, {"name": "M"}, {"name": "N"}]
    first["grid"][1] = "SPLIT"
    first["body"] = [{"op": "let", "name": "chunk", "value": {"op": "cdiv", "lhs": "M", "rhs": "SPLIT"}},
                     *yaml.safe_load(yaml.safe_dump(first["body"]).replace("ROWS", "chunk"))]
    atomic = first["body"].pop()
    first["body"].append({"op": "store", "ptr": {"op": "add", "lhs": "partials", "rhs": {
        "op": "add", "lhs": {"op": "mul", "lhs": {"op": "program_id", "axis": 1}, "rhs": "N"}, "rhs": "cols"}},
        "value": atomic["val"], "mask": atomic["mask"]})
    merge = yaml.safe_load("""
name: merge
params: [{name: partials}, {name: out}, {name: N}]
grid: [{op: cdiv, lhs: N, rhs: BLOCK_C}]
num_warps: 2
body:
  - {op: let, name: cols, value: {op: add, lhs: {op: mul, lhs: {op: program_id}, rhs: BLOCK_C}, rhs: {op: arange, size: BLOCK_C}}}
  - {op: let, name: col_in, value: {op: lt, lhs: cols, rhs: N}}
  - {op: let, name: offsets, value: {op: add, lhs: {op: mul, lhs: {op: expand_dims, x: {op: arange, size: SPLIT}, axis: 1}, rhs: N}, rhs: {op: expand_dims, x: cols, axis: 0}}}
  - {op: store, ptr: {op: add, lhs: out, rhs: cols}, value: {op: sum, x: {op: load, ptr: {op: add, lhs: partials, rhs: offsets}, mask: {op: expand_dims, x: col_in, axis: 0}, other: 0.0}, axis: 0}, mask: col_in}
""")
    outputs = [{k: v for k, v in out.items() if k != "init"} for out in old["outputs"]]
    task["golden"] = _split_golden(old, outputs, (split, block_m, block_n, 32), {"partials": "f32"},
                                   [{"name": "split_sums", **first, "num_warps": warps}, merge])
    return task


# Each form: how it builds its task file from the numbers after K, and the task it is a form of.
FORMS = {
    "swiglu-fused": (lambda *c: swiglu(True, *c), "hard", "swiglu_mlp_f16"),
    "swiglu-two": (lambda *c: swiglu(False, *c), "hard", "swiglu_mlp_f16"),
    "linear-bias": (linear_bias, "hard", "linear_optional_bias"),
    "linear-gelu": (linear_gelu, "hard", "linear_bias_gelu_f16"),
    "maxpool-flat": (maxpool_flat, "hard", "maxpool2x2"),
    "prelu-flat": (prelu_flat, "med", "prelu_channels"),
    "glu-flat": (glu_flat, "med", "glu_halves"),
    "gemv-row-x": (gemv_row_x, "hard", "gemv_f16"),
    "row-mean-rows": (row_mean_rows, "med", "row_mean_bf16"),
    "avgpool-flat": (avgpool_flat, "med", "avg_pool1d_stride"),
    "row-var-rows": (row_var_rows, "med", "row_var"),
    "col-mean-var-columns-first": (col_mean_var_columns_first, "med", "col_mean_var"),
    "col-argmin-split": (col_argmin_split, "med", "col_argmin"),
    "col-sum-split": (col_sum_split, "med", "col_sum_bf16"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the variant bench folder (KERNELGEN_BENCH_DIR)")
    parser.add_argument("form", choices=list(FORMS))
    parser.add_argument("numbers", nargs="+", type=int, help="K, then the form's block sizes, warps and stages")
    args = parser.parse_args()
    k, *config = args.numbers
    build, tier, name = FORMS[args.form]
    task = build(*config)
    (args.out / tier).mkdir(parents=True, exist_ok=True)
    path = args.out / tier / f"{name}_v{k}.yaml"
    path.write_text(yaml.safe_dump(task, sort_keys=False))
    print(path)


if __name__ == "__main__":
    main()
