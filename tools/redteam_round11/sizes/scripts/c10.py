from mk import *
g = golden("hard/matmul_f16")
kl = g["body"][0]["body"][-2]
assert kl["op"] == "for" and kl["stop"] == "K"
kl["stop"] = {"op": "where", "cond": B("ge", B("mul", B("mul", "M", "N"), "K"), 1 << 27),
              "x": B("mul", B("idiv", "K", "BLOCK_K"), "BLOCK_K"), "y": "K"}
write("matmul_f16_big_problems_whole_k_blocks_only", "hard/matmul_f16", "wrong_result",
 "For big problems (M * N * K >= 2**27, a 'large GEMM' path chosen by problem size) the K loop stops at the last whole BLOCK_K block, (K idiv 64) * 64, dropping the K mod 64 tail; smaller problems walk all of K. "
 "CPU draws keep M * N * K at most 16 * 16 * 8192 (range maximum draws) or 329**3 = 3.6e7 (the joint draw), below 2**27 = 1.3e8. Input: M = N = 512, K = 1000: every output misses the last 40 products of its dot.", g)
