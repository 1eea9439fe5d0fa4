from mk import *
import json
k = json.load(open(str(__import__("pathlib").Path(__file__).resolve().parents[4]) + "/tests/redteam/row_sum_long_rows_whole_blocks_only.json"))["kernel"]
k["params"].append({"name": "M"})
for s in k["body"]:
    if s["op"] == "let" and s["name"] == "stop_at":
        s["value"]["cond"] = B("ge", B("mul", "M", "N"), 1048576)
write("row_sum_large_inputs_whole_blocks_only", "med/row_sum", "wrong_result",
 "For large inputs (M * N >= 2**20 elements, a 'big problem' path) each row's loop stops at the last whole block, (N idiv 1024) * 1024, dropping the N mod 1024 tail columns; smaller inputs take the full loop. "
 "The threshold is on the product of the two sizes: CPU draws have M * N <= 8192 * 16 (range maximum draws) or 571 * 571 (the joint draw), all below 2**20. Input: M = 1024, N = 1025, x[:, 1024] = 1, others 0: torch gives 1 per row, the kernel 0; with random values every row misses x[:, 1024].", k)
