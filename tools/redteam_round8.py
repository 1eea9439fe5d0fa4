"""Red-team round 8 candidates: argmax-like kernels that compare with ``>`` or ``<``, so that a
NaN never wins, where torch.argmax, argmin and amax count NaN as the extremum (the first NaN's
index; a row holding NaN has NaN as its maximum). Each is a minimal edit of a golden.
row_argmax's two are edits of its lane-wise golden (2026-12-04); the catalogue's
``row_argmax_chunk_merge_gt_drops_nan`` and ``row_argmax_peeled_first_chunk_then_gt`` are the same
edits of the golden before it, which reduced each chunk and merged (``git show 4f2f40c:tools/redteam_round8.py``).

Run from the repository root: ``python tools/redteam_round8.py [NAME ...] [--out DIR]`` (default
``redteam_candidates/``), then ``python tools/redteam_verdicts.py DIR/*.json``."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from redteam_candidates import Round, find_let, golden, loops  # noqa: E402 - the round-2 script's helpers
from redteam_round4 import B  # noqa: E402
from redteam_round5 import W, let  # noqa: E402

ROUND = Round()
kernel, write = ROUND.kernel, ROUND.write
CATALOGUE = Path(__file__).resolve().parents[1] / "tests" / "redteam"


@kernel
def row_argmax_lane_gt_drops_nan():
    g = golden("med/row_argmax")
    find_let(loops(g["body"])[0]["body"], "improves")["value"] = B("gt", "chunk", "best_value")
    write("med/row_argmax", "lane_gt_drops_nan", "wrong_result",
          "merges each chunk into its lanes' running maxima with chunk > best_value: a NaN compares false, so "
          "no lane ever keeps one, and the row's index is that of its largest number, where torch.argmax gives "
          "the first NaN's index. Input: x = [[1, nan, 3]]: torch gives 1, the kernel 2. No draw held NaN "
          "(integers in [-20, 20]); caught since the extreme draws put NaN and infinities in x", g, code="mismatch")


@kernel
def row_argmax_peeled_first_chunk_lanes_then_gt():
    g = golden("med/row_argmax")
    loop = loops(g["body"])[0]
    first = {"op": "load", "ptr": B("add", "x_row", "lanes"), "mask": B("lt", "lanes", "N"), "other": "-inf"}
    at = g["body"].index(loop)
    g["body"][at:at] = [let("first_chunk", first)]
    loop["start"] = "BLOCK"
    loop["carry"][0]["init"] = "first_chunk"
    loop["carry"][1]["init"] = "lanes"
    find_let(loop["body"], "improves")["value"] = B("gt", "chunk", "best_value")
    write("med/row_argmax", "peeled_first_chunk_lanes_then_gt", "wrong_result",
          "takes the first chunk as its lanes' running maxima before the loop (so a NaN there is kept, and wins "
          "the final reduction), then merges later chunks with chunk > best_value: right for a row whose first "
          "NaN lies in its first 1024 columns, wrong where the first NaN comes later (it never wins). Input: a "
          "row of 1025 zeros with x[0, 1024] = nan: torch gives 1024, the kernel 0. Caught only by extreme-draw "
          "rows that hold one NaN past the first block (kernelgen.task.verify.with_lone_nan_lines): rows holding "
          "NaN at one element in 48 have one in their first 1024 columns", g, code="mismatch")


@kernel
def col_argmin_lane_lt_drops_nan():
    g = golden("med/col_argmin")
    loop = loops(g["body"])[0]
    find_let(loop["body"], "better")["value"] = B("lt", "tile", "best_v")
    find_let(g["body"], "col_idx")["value"] = {
        "op": "min", "axis": 0,
        "x": W(B("eq", "best_v", {"op": "expand_dims", "x": "col_min", "axis": 0}), "best_i", 2147483647)}
    write("med/col_argmin", "lane_lt_drops_nan", "wrong_result",
          "keeps per lane the least value and its row with tile < best_v, then the first row among the lanes "
          "equal to the column's minimum: a NaN never compares less, so it is never kept, where torch.argmin "
          "gives the first NaN's row. Input: x = [[1], [nan], [0]]: torch gives 1, the kernel 2. No draw held "
          "NaN (integers in [-10, 10]); caught since the extreme draws put NaN and infinities in x", g,
          code="mismatch")


@kernel
def top1_mask_lane_max_by_gt_drops_nan():
    g = golden("med/top1_mask")
    loop = loops(g["body"])[0]
    find_let(loop["body"], "new_lane_max")["value"] = W(B("gt", "chunk", "lane_max"), "chunk", "lane_max")
    write("med/top1_mask", "lane_max_by_gt_drops_nan", "wrong_result",
          "keeps the running lane maximum as where(chunk > lane_max, chunk, lane_max): a NaN compares false and "
          "is dropped, so a row holding NaN marks its largest numbers, where x == x.amax(...) marks nothing "
          "(amax is NaN). Input: x = [[1, nan, 3]]: torch gives [False, False, False], the kernel "
          "[False, False, True]. No draw held NaN (integers in [-3, 3]); caught since the extreme draws put "
          "NaN and infinities in x", g, code="mismatch")


@kernel
def col_argmin_atomic_min_of_row_control():
    entry = json.loads((CATALOGUE / "col_argmin_atomic_min_of_row_control.json").read_text())
    claim = entry["kernel"]["launches"][1]["body"]
    hit = find_let(claim, "hit")["value"]
    if hit["rhs"]["op"] == "eq":  # as catalogued before NaN was drawn: a NaN minimum is never hit
        hit["rhs"] = B("or", hit["rhs"], B("ne", "tile", "tile"))
    write("med/col_argmin", "atomic_min_of_row_control", "ok",
          "CONTROL (correct): the counterpart of the first-CAS-wins and atomic_max-of--row kernels: after a launch "
          "that finds each column's minimum (minimum and min propagate NaN), each program atomic_mins its block's "
          "first matching row into out (i64, init 2**31-1), a row matching where it equals the minimum or is NaN "
          "(the minimum is NaN exactly where the column holds one). min commutes, so the lowest matching row wins "
          "in any order. Checked here under other schedules too (programs in reverse linear order, one program at "
          "a time forward/reverse/random, and float atomic adds rounded after every add): ok in all. The match "
          "was equality alone until the extreme draws held NaN", entry["kernel"])


# (new kernels above)
if __name__ == "__main__":
    ROUND.main(sys.argv[1:])
