from gen import *
k = golden("easy/sigmoid_bf16")
# y = x < -24 ? 0 : sigmoid(x)
k["body"][-1]["value"] = op("cast", x=op("where", cond=op("lt", lhs="v", rhs=-24.0), x=0.0, y=op("sigmoid", x="v")), dtype="bf16")
write("sigmoid_bf16_flushes_below_minus_24", "easy/sigmoid_bf16",
      "stores 0 wherever x < -24 ('sigmoid underflows there'): sigmoid(-24) = 3.8e-11 is a normal bf16 number and "
      "sigmoid stays nonzero in bf16 down to x ~ -92; the task compares in bf16 steps with no atol. Input: x = [-30.0]: "
      "torch gives 9.36e-14 (bf16), the kernel 0.", k)
