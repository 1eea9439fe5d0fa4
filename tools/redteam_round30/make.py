"""Round 30 candidates: answers that cheat through a meta value's ``when`` (a value per dtype binding,
kernelgen.lang.host_nodes.MetaWhen). A call's blocks and the constants its size comparisons hold are then
its own, not the first call's: a kernel wrong only in a band of sizes set by such a value is wrong only
for the calls the ``when`` names. And a loop's ``num_stages`` against a read of what the loop stored
(Triton's pipeliner issues a trip's loads trips early). Each wrong one is a minimal edit of a task's
golden (bench/<tier>/<task>.yaml) or a plain loop; ``_control`` ones are right.

Run from the repository root: ``.venv/bin/python tools/redteam_round30/make.py`` writes NAME.json into the
catalogue (tests/redteam, where tests/test_redteam.py judges them); judge them alone with
``.venv/bin/python tools/redteam_verdicts.py tests/redteam/*_when_*.json``.
"""
import copy
import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "redteam"
BIG = 1 << 30  # a threshold no size reaches: the listed calls never take the wrong path


def golden(task: str) -> dict:
    return copy.deepcopy(yaml.safe_load((ROOT / "bench" / f"{task}.yaml").read_text())["golden"])


def B(op: str, lhs, rhs) -> dict:
    return {"op": op, "lhs": lhs, "rhs": rhs}


def flag(cond: dict) -> dict:
    return {"op": "cast", "x": cond, "dtype": "i32"}


def stops_after_one_chunk(size: str, cut: str) -> dict:
    """``size`` written as arithmetic that is ``cut`` where cut < size <= 2 cut (one chunk of a
    loop stepping by cut), else ``size``: no comparison a careless reader sees as a branch."""
    band = B("mul", flag(B("gt", size, cut)), flag(B("le", size, B("mul", cut, 2))))
    return B("sub", size, B("mul", band, B("sub", size, cut)))


def sum_loop(block: int, when: list | None, stop: dict | None = None) -> dict:
    """sum_dtype's golden with BLOCK's ``when`` (and the loop's stop) replaced."""
    kernel = golden("med/sum_dtype")
    kernel["meta"] = [{"name": "BLOCK", "value": block, **({"when": when} if when else {})}]
    loop = next(s for s in kernel["body"] if s["op"] == "for")
    if stop is not None:
        loop["stop"] = stop
    return kernel


def gemm_k_band(when_value: int, binding: dict) -> dict:
    """linear_optional_bias's golden whose K loop stops after BLOCK_K columns where CUT < K <= 2 CUT;
    CUT is a meta value no block reads, out of reach but where ``when`` names the binding."""
    kernel = golden("hard/linear_optional_bias")
    kernel["meta"].append({"name": "CUT", "value": BIG, "when": [{"dtypes": binding, "value": when_value}]})
    tile_loop = next(s for s in kernel["body"] if s["op"] == "for")
    k_loop = next(s for s in tile_loop["body"] if s["op"] == "for")
    k_loop["stop"] = stops_after_one_chunk("K", "CUT")
    return kernel


def col_sum_through_memory(stages: int) -> dict:
    """col_sum_bf16 as a careless model pipelines it: a program per BLOCK_N columns, a trip per row
    reading back the running sums it stored in out the trip before (out starts at 0)."""
    cols = B("add", B("mul", {"op": "program_id"}, "BLOCK_N"), {"op": "arange", "size": "BLOCK_N"})
    loop = {"op": "for", "var": "m", "stop": "M", "num_stages": stages, "body": [
        {"op": "let", "name": "so_far", "value": {"op": "load", "ptr": B("add", "out", "cols"), "mask": "col_in"}},
        {"op": "let", "name": "row", "value": {"op": "cast", "dtype": "f32", "x": {
            "op": "load", "ptr": B("add", "x", B("add", B("mul", "m", "N"), "cols")), "mask": "col_in"}}},
        {"op": "store", "ptr": B("add", "out", "cols"), "value": B("add", "so_far", "row"), "mask": "col_in"}]}
    return {"name": "col_sum_bf16", "inputs": [{"name": "x", "dtype": "bf16", "shape": ["M", "N"]}],
            "outputs": [{"name": "out", "dtype": "f32", "shape": ["N"], "init": 0}],
            "params": [{"name": "x"}, {"name": "out"}, {"name": "M"}, {"name": "N"}],
            "meta": [{"name": "BLOCK_N", "value": 256}], "grid": [B("cdiv", "N", "BLOCK_N")],
            "body": [{"op": "let", "name": "cols", "value": cols},
                     {"op": "let", "name": "col_in", "value": B("lt", "cols", "N")}, loop]}


def cumsum_prefix_read_back(stages: int) -> dict:
    """row_cumsum_long's golden without its carried prefix: each chunk reads the last sum the
    previous chunk stored (a barrier after the store orders it across the program's threads)."""
    kernel = golden("expert/row_cumsum_long")
    loop = next(s for s in kernel["body"] if s["op"] == "for")
    loop["num_stages"] = stages
    loop["carry"] = []
    loop["body"] = [
        {"op": "let", "name": "cols", "value": B("add", "chunk_start", "lanes")},
        {"op": "let", "name": "in_row", "value": B("lt", "cols", "N")},
        {"op": "let", "name": "prefix", "value": {"op": "load", "ptr": B("add", "out_row", B("sub", "chunk_start", 1)),
                                                  "mask": B("gt", "chunk_start", 0), "other": 0.0}},
        {"op": "let", "name": "chunk", "value": {"op": "load", "ptr": B("add", "x_row", "cols"), "mask": "in_row",
                                                 "other": 0.0}},
        {"op": "store", "ptr": B("add", "out_row", "cols"), "value": B("add", {"op": "cumsum", "x": "chunk", "axis": 0},
                                                                        "prefix"), "mask": "in_row"},
        {"op": "barrier"}]
    return kernel


CANDIDATES = {
    "sum_dtype_when_unlisted_binding_one_chunk_band": (
        "med/sum_dtype", "wrong_result",
        sum_loop(8192, [{"dtypes": {"X": "f16", "Y": "f64"}, "value": 256}], stops_after_one_chunk("H", "BLOCK")),
        "the loop's stop is H - [BLOCK < H <= 2 BLOCK] (H - BLOCK), arithmetic: one chunk of two. BLOCK is 8192 "
        "(no H reaches the band) except by a when for X=f16, Y=f64, a binding no listed call takes: 256, so that "
        "call sums only its first 256 columns for H in 257..512. Its draws were read off the first call's "
        "kernel (BLOCK 8192) and it took only past_extent, range_max, size_order, at_equality, at_multiple and "
        "tiles ones: none in the band; a chunk edge (H = 257) or a crossing (H = 417) of its own shows it"),
    "sum_dtype_when_listed_call_one_chunk_band": (
        "med/sum_dtype", "wrong_result",
        sum_loop(8192, [{"dtypes": {"X": "f32", "Y": "f64"}, "value": 256}], stops_after_one_chunk("H", "BLOCK")),
        "the same band, by a when for the listed call f32_to_f64 (not the first): its draws were the first "
        "call's, whose kernel (BLOCK 8192) has no size comparison any H crosses, and no hypothesis draw fell in "
        "257..512; its own crossing (H = 417) shows it"),
    "linear_optional_bias_when_f32_k_loop_band": (
        "hard/linear_optional_bias", "wrong_result",
        gemm_k_band(1000, {"T": "f32"}),
        "the K loop stops at K - [CUT < K <= 2 CUT] (K - CUT), CUT a meta value no block reads: 2**30 (never "
        "reached) except by a when for T=f32 (the listed f32_no_bias call and the unlisted f32 call with a "
        "bias): 1000, so for K in 1001..2000 the f32 calls stop at k = 1000 (with BLOCK_K 64 the trips up to "
        "k0 = 960 cover K <= 1024: from K = 1025 on, wrong). The first call's draws (CUT 2**30) have no K "
        "in the band; the f32 call's own crossing does"),
    "sum_dtype_when_f64_block_control": (
        "med/sum_dtype", "ok",
        sum_loop(1024, [{"dtypes": {"Y": "f64"}, "value": 512}]),
        "right: sum_dtype's golden with BLOCK 512 for the f64 sums (a when on Y alone), 1024 otherwise"),
    # Not the when: a loop's num_stages, which a model adds for speed, against a read of what the loop
    # stored (kernelgen.interp.pipelining).
    "col_sum_bf16_running_sums_through_memory_pipelined": (
        "med/col_sum_bf16", "wrong_result", col_sum_through_memory(3),
        "each trip (a row) loads the running sums the trip before stored in out and stores them plus its row, "
        "in a loop with num_stages 3: right when the trips run in order (CPU mode passed it), but Triton's "
        "pipeliner copies a trip's loads two trips ahead (the TTGIR: async copies of out before the loop and "
        "after each trip's store for the trip after next), so the GPU adds rows to sums from before the last "
        "stores. stale_pipelined_load at the read of out", {"code": "stale_pipelined_load", "path": "/body/2/body/0/value"}),
    "row_cumsum_long_prefix_read_back_after_barrier_control": (
        "expert/row_cumsum_long", "ok", cumsum_prefix_read_back(3),
        "right: each chunk reads back the last sum the chunk before stored, in a loop with num_stages 3 and a "
        "barrier after the store; Triton does not pipeline a loop with a barrier in it (its TTGIR keeps a "
        "plain tt.load of out), so the read sees the store"),
}


def main() -> None:
    for name, (task, outcome, kernel, why, *first) in CANDIDATES.items():  # first: the diagnostic's code and path
        entry = {"task": task, "outcome": outcome, "why": why, **(first[0] if first else {}), "kernel": kernel}
        (OUT / f"{name}.json").write_text(json.dumps(entry, indent=1) + "\n")
        print(name)


if __name__ == "__main__":
    main()
