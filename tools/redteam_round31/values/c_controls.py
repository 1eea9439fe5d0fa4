from gen import *
k = golden("easy/sigmoid_bf16")
k["body"][-1]["value"] = op("cast", x=op("where", cond=op("lt", lhs="v", rhs=-89.0), x=0.0, y=op("sigmoid", x="v")), dtype="bf16")
write("sigmoid_bf16_flushes_below_minus_89_control", "easy/sigmoid_bf16",
      "CONTROL (correct): stores 0 only where x < -89, where exp(-x) overflows f32 and torch's f32 sigmoid is 0 too "
      "(sigmoid is a subnormal bf16 down to x ~ -88.7 and both give it). A fix that draws sigmoid's tail must keep this ok.",
      k, outcome="ok")

k = golden("easy/sign")
body = k["body"][:3]
body.append(op("let", name="s", value=op("clamp", x=op("mul", lhs=op("mul", lhs="v", rhs=1.0e30), rhs=1.0e30), lo=-1.0, hi=1.0)))
body.append(op("store", ptr=op("add", lhs="y", rhs="offs"), value=op("where", cond=op("eq", lhs="v", rhs="v"), x="s", y=0.0), mask="mask"))
k["body"] = body
write("sign_branchless_clamp_twice_scaled_control", "easy/sign",
      "CONTROL (correct): clamp((x * 1e30) * 1e30, -1, 1), NaN mapped to 0: the least subnormal (1.4e-45) scales to "
      "1.4e15, so every nonzero x gives +-1 (overflow to inf clamps too). A fix that draws tiny and subnormal x must keep this ok.",
      k, outcome="ok")
