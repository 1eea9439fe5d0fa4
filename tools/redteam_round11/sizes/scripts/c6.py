from mk import *
g = golden("med/vecmat")
body = g["body"]
i = next(k for k, s in enumerate(body) if s["op"] == "for")
general = body[i:]
col_mask = B("lt", "cols", "N")
fast = [
  {"op": "let", "name": "row0", "value": {"op": "load", "ptr": B("add", "x", "cols"), "mask": col_mask}},
  {"op": "let", "name": "w", "value": {"op": "load", "ptr": B("add", "v", "cols"), "mask": B("lt", "cols", "M"), "other": 0.0}},
  {"op": "store", "ptr": B("add", "out", "cols"), "value": B("mul", "w", "row0"), "mask": col_mask},
]
g["body"] = body[:i] + [{"op": "if", "cond": B("eq", "M", 1), "then": fast, "else": general}]
write("vecmat_single_row_path_v_by_column_lanes", "med/vecmat", "wrong_result",
 "A single-row fast path (M == 1: out = v[0] * x[0, :], no loop) written as an elementwise product that loads v with the column lanes (v[cols], masked to v's length M), so out[n] = 0 for every n >= 1 instead of v[0] * x[0, n]. M > 1 takes the golden loop. "
 "Right only where N == 1; the draws with M == 1 all have N == 1 ({M: 1, N: 1}: the hypothesis edge and the targeted/sorted draws along N put M at 16 or small but not 1 together with N > 1 here). Input: M = 1, N = 2, v = [2], x = [[1, 1]]: torch [2, 2], the kernel [2, 0].", g)
