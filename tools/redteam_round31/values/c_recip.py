from gen import *
k = golden("easy/reciprocal_int")
body = k["body"]
big = op("cast", x=op("finfo", dtype="R", what="max"), dtype="C")
body[-1]["value"] = op("cast", x=op("clamp", x=op("div", lhs=1.0, rhs="v"), lo=op("neg", x=big), hi=big), dtype="R")
write("reciprocal_int_saturates_at_the_largest_finite", "easy/reciprocal_int",
      "clamps 1 / x to the output dtype's finite range ('never store inf'): 1 / 0 is exactly inf (torch.reciprocal of "
      "an integer or float zero), and in f16 every |x| < 2**-16 (subnormals) has 1 / x past 65504, which torch rounds "
      "to inf. Input: x = [0] (i32): torch gives [inf], the kernel 3.4028235e38; x = [6e-8, -0.0] (f16): torch gives "
      "[inf, -inf], the kernel [65504, -65504].", k)
