from mk import *
import copy
g = golden("hard/linear_f16")
outer = g["body"][0]; outer["flatten"] = False
kloop = [s for s in outer["body"] if s["op"] == "for"][0]
i = outer["body"].index(kloop)
wrong = copy.deepcopy(kloop)
# decode path: the weight tile read as a [K, N] row-major matrix (the layout of W^T), no trans
wrong["body"][0]["value"]["rhs"] = {"op": "tile_load", "base": "weight", "shape": ["K", "N"], "strides": ["N", 1],
    "block": ["BLOCK_K", "BLOCK_N"], "offsets": ["k0", B("mul", "tile_n", "BLOCK_N")]}
outer["body"][i] = {"op": "if", "cond": B("eq", "M", 1), "then": [wrong], "else": [kloop],
                    "results": [{"name": "acc_out", "then": "acc", "else": "acc"}]}
st = outer["body"][i + 1]
st["value"]["x"] = "acc_out"
write("linear_f16_decode_path_weight_as_k_by_n", "hard/linear_f16", "wrong_result",
 "A decode fast path: when M == 1 the K loop reads the weight tile as a row-major [K, N] matrix (W^T's layout, the classic nn.Linear layout slip) instead of [N, K] transposed; M > 1 takes the golden path. "
 "Where N == 1 or K == 1 the two layouts are the same memory, so the slip shows only with M == 1, N >= 2 and K >= 2 together. Input: M = 1, N = 2, K = 2, x = [[1, 0]], weight = [[1, 2], [3, 4]]: torch y = [[1, 3]], the kernel [[1, 2]].", g)
