from gen import *
k = golden("easy/swiglu_f16")
body = k["body"]
# keep the f16 loads, product gate*up in f16 first, then times sigmoid rounded to f16
body[2] = op("let", name="gh", value=op("load", ptr=op("add", lhs="gate", rhs="offs"), mask="mask"))
body[3] = op("let", name="uh", value=op("load", ptr=op("add", lhs="up", rhs="offs"), mask="mask"))
body[4] = op("let", name="sig", value=op("cast", x=op("sigmoid", x=op("cast", x="gh", dtype="f32")), dtype="f16"))
body[5] = op("store", ptr=op("add", lhs="out", rhs="offs"), value=op("mul", lhs=op("mul", lhs="gh", rhs="uh"), rhs="sig"), mask="mask")
write("swiglu_f16_gate_times_up_in_f16_first", "easy/swiglu_f16",
      "computes (gate * up) in f16 first and multiplies by sigmoid(gate) (rounded to f16) after: the f16 product "
      "overflows to inf wherever |gate * up| > 65504 even where the result silu(gate) * up is small (gate negative). "
      "Input: gate = [-12.0, -20.0], up = [8000.0, 5000.0]: torch gives [-0.5898, -2.98e-4], the kernel [-inf, nan] "
      "(sigmoid(-20) rounds to 0 in f16, and -inf * 0 is NaN). The extreme draws scale both inputs by one factor (16 here, "
      "the largest at which torch's output stays finite), so |gate * up| stays below ~2700", k)

k = golden("easy/softsign")
body = k["body"]
body[-1]["value"] = op("where", cond=op("gt", lhs=op("abs", x="v"), rhs=8.0),
                       x=op("where", cond=op("gt", lhs="v", rhs=0.0), x=1.0, y=-1.0),
                       y=op("div", lhs="v", rhs=op("add", lhs=1.0, rhs=op("abs", x="v"))))
write("softsign_saturates_past_8", "easy/softsign",
      "returns sign(x) wherever |x| > 8 (a 'saturated' fast path): softsign(9) = 0.9 is 0.1 from 1, and the error "
      "1/(1+|x|) stays above the f32 atol + rtol until |x| ~ 1e4. Input: x = [9.0, -100.0]: torch gives "
      "[0.9, -0.990099], the kernel [1, -1].", k)
