from gen import *
k = golden("easy/sign")
body = k["body"][:3]
body.append(op("let", name="s", value=op("clamp", x=op("mul", lhs="v", rhs=1.0e30), lo=-1.0, hi=1.0)))
body.append(op("store", ptr=op("add", lhs="y", rhs="offs"), value=op("where", cond=op("eq", lhs="v", rhs="v"), x="s", y=0.0), mask="mask"))
k["body"] = body
write("sign_branchless_clamp_of_scaled_x", "easy/sign",
      "branchless sign: clamp(x * 1e30, -1, 1) (NaN mapped to 0): right for zeros, infinities, NaN and every |x| >= 1e-30, "
      "but a nonzero |x| < 1e-30 (a normal f32 down to 1.2e-38, and subnormals) gives |x| * 1e30 < 1 instead of +-1. "
      "Input: x = [1e-35, -3e-38, 1e-45]: torch gives [1, -1, 1], the kernel [1e-5, -3e-8, 1.4e-15].", k)
