"""Red-team round 9 candidates: approximations that the f16/bf16 default tolerances (1e-2 and
2e-2, five to ten steps) let through on every draw: GELU by the tanh approximation where the
prompt asks for the exact erf GELU (its error is at most ~5e-4) and a row's rsqrt by the fast
inverse square root (1.75e-3 off), with controls that compute the exact function another way (so
the tighter comparison that catches the approximation must still pass them). Each is a minimal
edit of a golden. ``linear_bias_gelu_f16_tanh_approximate_gelu`` is not in the catalogue: it is a
known gap, which ``redteam_verdicts.py`` flags as a false pass (the task file says why), and its
control is judged under the task's default tolerance.

Run from the repository root: ``python tools/redteam_round9.py [NAME ...] [--out DIR]`` (default
``redteam_candidates/``), then ``python tools/redteam_verdicts.py DIR/*.json``."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from redteam_candidates import Round, find_let, golden  # noqa: E402 - the round-2 script's helpers
from redteam_round4 import B, U  # noqa: E402

ROUND = Round()
kernel, write = ROUND.kernel, ROUND.write

SQRT_2_OVER_PI = 0.7978845608028654


def tanh_cdf(h: str) -> dict:
    """0.5 (1 + tanh(sqrt(2/pi) (h + 0.044715 h^3))): the tanh approximation of Phi(h)."""
    inner = B("mul", SQRT_2_OVER_PI, B("add", h, B("mul", 0.044715, B("mul", h, B("mul", h, h)))))
    return B("mul", 0.5, B("add", 1.0, U("tanh", inner)))


@kernel
def linear_bias_gelu_f16_tanh_approximate_gelu():
    g = golden("hard/linear_bias_gelu_f16")
    find_let(g["body"], "gelu")["value"] = B("mul", "h", tanh_cdf("h"))
    write("hard/linear_bias_gelu_f16", "tanh_approximate_gelu", "wrong_result",
          "gelu by the tanh approximation (F.gelu(approximate='tanh')) where the prompt asks for the exact erf "
          "GELU: its error is at most 4.7e-4 (at h near -2.7), 10% of the value at h = -3 and 45% at h = -4. "
          "Input: h = -3 (x = [[1]], weight = [[1]], bias = [-4]): F.gelu gives -4.05e-3, the kernel -3.64e-3, "
          "about 100 f16 steps apart. Under the f16 default tolerance (rtol = atol = 1e-2) no h's error reaches atol's 1e-2, so "
          "every draw passes. NOT IN THE CATALOGUE: a known gap (bench/hard/linear_bias_gelu_f16.yaml says why "
          "two f16 steps failed the golden on the H200)", g, code="mismatch")


@kernel
def linear_bias_gelu_f16_distributed_gelu_control():
    g = golden("hard/linear_bias_gelu_f16")
    erf = {"op": "erf", "x": B("mul", "h", 0.7071067811865476)}
    half = B("mul", 0.5, "h")
    find_let(g["body"], "gelu")["value"] = {"op": "fma", "x": half, "y": erf, "z": half}
    write("hard/linear_bias_gelu_f16", "distributed_gelu_control", "ok",
          "CONTROL (correct): the exact GELU written as fma(0.5 h, erf(h / sqrt(2)), 0.5 h), another rounding "
          "of the same f32 value, well within the task's tolerance", g)


@kernel
def geglu_halves_bf16_distributed_gelu_control():
    g = golden("med/geglu_halves_bf16")
    erf = {"op": "erf", "x": B("mul", "gate", 0.7071067811865476)}
    find_let(g["body"], "gate_cdf")["value"] = {"op": "fma", "x": 0.5, "y": erf, "z": 0.5}
    write("med/geglu_halves_bf16", "distributed_gelu_control", "ok",
          "CONTROL (correct): Phi(b) as fma(0.5, erf(b / sqrt(2)), 0.5) instead of 0.5 * (1 + erf(b / sqrt(2))), "
          "another rounding of the same f32 value, so the two-step tolerance that catches the tanh "
          "approximation (rtol 8e-3, atol 1e-4) passes it", g)


def bit_hack_rsqrt(v: str) -> dict:
    """The fast inverse square root of f32 ``v``: 0x5f3759df - (bits >> 1), one Newton step
    (relative error up to 1.75e-3)."""
    y0 = {"op": "bitcast", "x": B("sub", 1597463007, B("shr", {"op": "bitcast", "x": v, "dtype": "i32"}, 1)), "dtype": "f32"}
    return B("mul", y0, B("sub", 1.5, B("mul", B("mul", 0.5, v), B("mul", y0, y0))))


@kernel
def rmsnorm_f16_bit_hack_rsqrt():
    g = golden("hard/rmsnorm_f16")
    let = find_let(g["body"], "inv_rms")
    let["value"] = bit_hack_rsqrt(let["value"]["x"])
    write("hard/rmsnorm_f16", "bit_hack_rsqrt", "wrong_result",
          "each row's rsqrt by the fast inverse square root (0x5f3759df - (bits >> 1), one Newton step), up "
          "to 1.75e-3 off, where the prompt asks for rsqrt in f32: every element of a row is scaled by the same "
          "error, two to four f16 steps. Input: a row x = [0.1] * 4, weight = [1] * 4: torch gives 1.0 (0.99999 "
          "before rounding), the kernel 0.99805, four f16 steps below it. The f16 default tolerance (rtol = atol "
          "= 1e-2, ten steps) passed every row; caught since the task compares in f16 steps (one step off near "
          "ties only): a row more than about one step off fails", g, code="mismatch")


@kernel
def rmsnorm_f16_divide_by_sqrt_control():
    g = golden("hard/rmsnorm_f16")
    let = find_let(g["body"], "inv_rms")
    let["value"] = B("div", 1.0, U("sqrt", let["value"]["x"]))
    write("hard/rmsnorm_f16", "divide_by_sqrt_control", "ok",
          "CONTROL (correct): each row's 1 / sqrt(mean square + eps) instead of rsqrt, a few f32 ulps from it: "
          "one f16 step off at most, near ties, so the comparison in f16 steps that catches the fast inverse "
          "square root passes it", g)


# (new kernels above)
if __name__ == "__main__":
    ROUND.main(sys.argv[1:])
