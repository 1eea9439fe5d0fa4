from mk import *
g = golden("easy/relu")
g["meta"] = [{"name": "BLOCK", "value": 128}]
g["grid"] = [B("minimum", B("cdiv", "N", "BLOCK"), 65535)]
write("relu_grid_capped_65535_programs_of_128", "easy/relu", "wrong_result",
 "grid minimum(cdiv(N, 128), 65535) (a model capping the grid at CUDA's 65535 limit, which binds only axes 1 and 2): programs cover 65535 * 128 = 8388480 elements, so for N in (8388480, 16777216] (the task's range) the last elements are never written.", g)
