from gen import *
k = golden("med/row_max")
loop = k["body"][3]
loop["carry"][0]["init"] = op("full", shape=["BLOCK"], value=-3.4028234663852886e38, dtype="f32")
loop["body"][1]["value"]["other"] = -3.4028234663852886e38
write("row_max_init_lowest_finite", "med/row_max",
      "starts the running maximum (and pads the tail lanes) at -FLT_MAX (-3.4028235e38, CUDA's usual sentinel) instead "
      "of -inf: a row that is all -inf gives -3.4028235e38 where amax gives -inf. Input: M = 1, N = 3, x = [[-inf, -inf, -inf]]: "
      "torch gives [-inf], the kernel [-3.4028235e38].", k)
