from mk import *
g = golden("easy/relu")
g["meta"] = [{"name": "BLOCK", "value": 64}]
g["grid"] = [B("minimum", B("cdiv", "N", "BLOCK"), 65535)]
write("relu_grid_capped_65535_programs_of_64", "easy/relu", "wrong_result",
 "grid minimum(cdiv(N, 64), 65535): programs cover 65535 * 64 = 4194240 elements, so for N > 4194240 the last elements are never written. Input: N = 4194304: y[4194240:] unwritten. (Boundary probe: the largest N the CPU budget draws is 4194304.)", g)
import copy
g = golden("hard/linear_f16")
outer = g["body"][0]; outer["flatten"] = False
kloop = [s for s in outer["body"] if s["op"] == "for"][0]
i = outer["body"].index(kloop)
wrong = copy.deepcopy(kloop)
wrong["stop"] = B("mul", B("idiv", "K", "BLOCK_K"), "BLOCK_K")
outer["body"][i] = {"op": "if", "cond": B("eq", "M", 1), "then": [wrong], "else": [kloop],
                    "results": [{"name": "acc_out", "then": "acc", "else": "acc"}]}
outer["body"][i + 1]["value"]["x"] = "acc_out"
write("linear_f16_decode_path_drops_k_tail", "hard/linear_f16", "wrong_result",
 "A decode fast path (M == 1) whose K loop stops at the last whole BLOCK_K block, (K idiv 64) * 64, dropping the K mod 64 tail. Input: M = N = 1, K = 100.", g)
