from mk import *
import copy
g = golden("expert/splitk_gemv_f16")
body = g["body"]
i = next(k for k, s in enumerate(body) if s["op"] == "for")
j = max(k for k, s in enumerate(body) if s["op"] == "for")
general = body[i:j + 1]
slipped = copy.deepcopy(general)
def fix(node):
    if isinstance(node, dict):
        if node.get("op") == "add" and node.get("lhs") == "w_rows":
            ks = node["rhs"]["x"]  # expand_dims(ks, 0)
            return B("add", "weight", B("add", B("mul", {"op": "expand_dims", "x": ks, "axis": 0}, "N"), "wcols"))
        return {k: fix(v) for k, v in node.items()}
    if isinstance(node, list):
        return [fix(v) for v in node]
    return node
slipped = fix(slipped)
assert json.dumps(slipped) != json.dumps(general)
g["params"].append({"name": "M"})
g["body"] = body[:i] + [{"op": "if", "cond": B("eq", "M", 1), "then": slipped, "else": general,
                         "results": [{"name": "acc_out", "then": "acc2", "else": "acc2"}]}] + body[j + 1:]
g["body"][-1]["value"]["x"]["x"] = "acc_out"
write("splitk_gemv_f16_single_row_weight_as_k_by_n", "expert/splitk_gemv_f16", "wrong_result",
 "The single-token path (M == 1, the bench's decode case) reads weight[n, k] at k * N + n, i.e. as a row-major [K, N] matrix (W^T's layout) instead of nn.Linear's [N, K] (n * K + k); M > 1 takes the golden loops. "
 "Where N == 1 or K == 1 the two layouts are the same memory, and every draw with M == 1 has N == 1 or K == 1 ({1,1,1}, the sorted K = 17202 and range_max K = 32767 draws with N = 1). Input: M = 1, N = 2, K = 2, x = [[1, 0]], weight = [[1, 2], [3, 4]]: torch y = [[1, 3]], the kernel [[1, 2]].", g)
