"""Other forms of two GEMM goldens, as variant task files for ``KERNELGEN_BENCH_DIR`` (issue 33:
the measurements in swiglu_mlp_f16's and linear_optional_bias's golden comments): the persistent,
tile-load form of matmul_f16 / linear_f16 applied to them, which ``tools/golden_variants.py``
(meta values, warps, stages, hints) cannot write.

    python tools/gemm_forms.py --out /tmp/variants swiglu-fused 23 128 128 8 3
    python tools/gemm_forms.py --out /tmp/variants swiglu-two 27 128 128 8 3
    python tools/gemm_forms.py --out /tmp/variants linear-bias 30 128 128 64 8 3

``swiglu-fused K BM BN WARPS STAGES``: both dots per tile, two f32 accumulators; ``swiglu-two``:
silu(x @ w1) into f32 scratch by one launch, multiplied into x @ w3 by a second;
``linear-bias K BM BN BK WARPS STAGES``: linear_f16's form with linear_optional_bias's bias
epilogue. Each writes ``<tier>/<task>_v<K>.yaml`` under ``--out``; time them as golden_variants.py
says."""

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


def linear_bias(bm: int, bn: int, bk: int, warps: int, stages: int) -> dict:
    task = yaml.safe_load((BENCH / "hard" / "linear_optional_bias.yaml").read_text())
    linear = yaml.safe_load((BENCH / "hard" / "linear_f16.yaml").read_text())["golden"]
    outer = copy.deepcopy(linear["body"][0])
    outer["num_stages"] = stages
    store = outer["body"][-1]
    cols = {"op": "add", "lhs": COL0, "rhs": {"op": "arange", "size": "BLOCK_N"}}
    read = {"op": "and", "lhs": {"op": "lt", "lhs": "cols", "rhs": "N"}, "rhs": {"op": "eq", "lhs": "HAS_BIAS", "rhs": 1}}
    bias = {"op": "load", "ptr": {"op": "add", "lhs": "bias", "rhs": "cols"}, "mask": read}
    store["value"] = {"op": "cast", "x": {"op": "add", "lhs": "acc", "rhs": "bias_row"}, "dtype": "T"}
    outer["body"][-1:] = [{"op": "let", "name": "cols", "value": cols},
                          {"op": "let", "name": "bias_row",
                           "value": {"op": "expand_dims", "x": {"op": "cast", "x": bias, "dtype": "f32"}, "axis": 0}},
                          store]
    old = task["golden"]
    task["golden"] = {**{k: old[k] for k in ("name", "dtypes", "inputs", "outputs", "params")},
                      "meta": _meta(bm, bn, bk), "grid": linear["grid"], "num_warps": warps, "num_stages": stages,
                      "body": [outer]}
    return task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the variant bench folder (KERNELGEN_BENCH_DIR)")
    parser.add_argument("form", choices=["swiglu-fused", "swiglu-two", "linear-bias"])
    parser.add_argument("numbers", nargs="+", type=int, help="K, then the form's block sizes, warps and stages")
    args = parser.parse_args()
    k, *config = args.numbers
    if args.form == "linear-bias":
        task, name = linear_bias(*config), "linear_optional_bias"
    else:
        task, name = swiglu(args.form == "swiglu-fused", *config), "swiglu_mlp_f16"
    (args.out / "hard").mkdir(parents=True, exist_ok=True)
    path = args.out / "hard" / f"{name}_v{k}.yaml"
    path.write_text(yaml.safe_dump(task, sort_keys=False))
    print(path)


if __name__ == "__main__":
    main()
