"""Red-team round 10 candidates: cheap approximations that fit inside the f16/bf16 default
tolerances (ten and five steps) on every draw: a sigmoid through an exp written as 2^n times a
quadratic in the fraction (3.8e-3 relative), and the fast inverse square root (0x5f3759df, one
Newton step: 1.75e-3) in a layer norm and under a standard deviation's sqrt. Each is a minimal edit
of a golden. Three more are known gaps, written but not in the catalogue (the tolerance that
catches them failed, or would fail, the golden where tensor-core sums or a cancellation move it):
``swiglu_mlp_f16_quadratic_exp_sigmoid``, ``swiglu_mlp_f16_gate_up_rounded_to_f16`` and
``rmsnorm_backward_bf16_bit_hack_rsqrt``; ``redteam_verdicts.py`` flags them as false passes.

Run from the repository root: ``python tools/redteam_round10.py [NAME ...] [--out DIR]`` (default
``redteam_candidates/``), then ``python tools/redteam_verdicts.py DIR/*.json``."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from redteam_candidates import Round, find_let, golden  # noqa: E402 - the round-2 script's helpers
from redteam_round4 import B, U, cast  # noqa: E402
from redteam_round9 import bit_hack_rsqrt  # noqa: E402

ROUND = Round()
kernel, write = ROUND.kernel, ROUND.write
LOG2E = 1.4426950408889634
# The least-squares quadratic for 2^f on [0, 1): relative error up to 3.8e-3.
QUADRATIC = (1.0037623671976608, 0.6494277979243126, 0.34265635352590046)


def quadratic_exp(x: object) -> dict:
    """exp(x) as 2^n q(f): t = x log2(e) clamped to [-126, 126], n = floor(t), f = t - n, 2^n
    built from its exponent bits."""
    t = {"op": "clamp", "x": B("mul", x, LOG2E), "lo": -126.0, "hi": 126.0}
    n = U("floor", t)
    f = B("sub", t, n)
    q = B("add", QUADRATIC[0], B("mul", f, B("add", QUADRATIC[1], B("mul", f, QUADRATIC[2]))))
    two_n = {"op": "bitcast", "x": B("shl", B("add", cast(n, "i32"), 127), 23), "dtype": "f32"}
    return B("mul", q, two_n)


def _replace(node: object, op: str, make) -> object:
    """``node`` with every ``op`` node replaced by ``make(its x)``."""
    if isinstance(node, dict):
        if node.get("op") == op:
            return make(_replace(node["x"], op, make))
        return {k: _replace(v, op, make) for k, v in node.items()}
    if isinstance(node, list):
        return [_replace(v, op, make) for v in node]
    return node


def quadratic_sigmoid(x: object) -> dict:
    return B("div", 1.0, B("add", 1.0, quadratic_exp(U("neg", x))))


@kernel
def swiglu_f16_quadratic_exp_sigmoid():
    g = golden("easy/swiglu_f16")
    find_let(g["body"], "activated")["value"] = B("mul", "g", quadratic_sigmoid("g"))
    write("easy/swiglu_f16", "quadratic_exp_sigmoid", "wrong_result",
          "sigmoid as 1 / (1 + exp(-g)) with exp written as 2^n times a least-squares quadratic in the fraction: "
          "up to 3.8e-3 off exp, 3.6e-3 off silu. Input: gate = -1.3877, up = 2: torch gives -0.55469, the kernel "
          "-0.55273, 4 f16 steps apart. The f16 default tolerance (1e-2 + 1e-2 |out|) holds every such error, so "
          "every draw passed; caught by the task's tolerance (rtol 2e-3: the reference's own double rounding is "
          "at most 1.5e-3)", g, code="mismatch")


@kernel
def add_layernorm_bf16_bit_hack_rsqrt():
    g = golden("hard/add_layernorm_bf16")
    let = find_let(g["body"], "inv_std")
    let["value"] = bit_hack_rsqrt(let["value"]["x"])
    write("hard/add_layernorm_bf16", "bit_hack_rsqrt", "wrong_result",
          "each row's 1/std by the fast inverse square root (0x5f3759df - (bits >> 1), one Newton step), up to "
          "1.75e-3 off, where the prompt asks for rsqrt in f32. Input: x = [[-1.5, -2, 2, 0.5]], residual 0, "
          "weight 1, bias 0, eps 1e-5: torch's last y is 0.46875, the kernel's 0.46680. The bf16 default "
          "(rtol = atol = 2e-2, five steps) passed every row; caught since the task compares in bf16 steps",
          g, code="mismatch")


@kernel
def row_std_f16_bit_hack_sqrt():
    g = golden("med/row_std_f16")
    g["body"] = _replace(g["body"], "sqrt", lambda v: B("mul", v, bit_hack_rsqrt(v)))
    write("med/row_std_f16", "bit_hack_sqrt", "wrong_result",
          "sqrt(variance) as variance times the fast inverse square root (one Newton step), up to 1.75e-3 off. "
          "Input: x = [[0, 1]]: torch gives 0.5, the kernel 0.49927, 3 f16 steps below. The f16 default (ten "
          "steps) passed every row; caught since the task compares in f16 steps", g, code="mismatch")


@kernel
def swiglu_mlp_f16_quadratic_exp_sigmoid():
    g = golden("hard/swiglu_mlp_f16")
    let = find_let(g["body"], "gated")
    let["value"] = _replace(let["value"], "sigmoid", quadratic_sigmoid)
    write("hard/swiglu_mlp_f16", "quadratic_exp_sigmoid", "wrong_result",
          "round 10's quadratic-exp sigmoid in the MLP's silu (3.6e-3 off). NOT IN THE CATALOGUE: a known gap. "
          "rtol 1.5e-3, atol 1e-4 catches it in CPU mode, but the H200's tensor-core sums differ from torch's by "
          "up to 4 f16 steps (linear_bias_gelu_f16's task file), so that bound is not safe on the GPU", g,
          code="mismatch")


@kernel
def swiglu_mlp_f16_gate_up_rounded_to_f16():
    g = golden("hard/swiglu_mlp_f16")
    let = find_let(g["body"], "gated")
    rounded = lambda n: cast(cast(n, "f16"), "f32")  # noqa: E731
    let["value"] = B("mul", B("mul", rounded("gate_acc"), U("sigmoid", rounded("gate_acc"))), rounded("up_acc"))
    write("hard/swiglu_mlp_f16", "gate_up_rounded_to_f16", "wrong_result",
          "rounds both f32 GEMM results to f16 before the silu and the product, which the prompt rules out: 1-2 "
          "f16 steps off on about a third of the elements. NOT IN THE CATALOGUE: a known gap, for "
          "swiglu_mlp_f16_quadratic_exp_sigmoid's reason", g, code="mismatch")


@kernel
def rmsnorm_backward_bf16_bit_hack_rsqrt():
    g = golden("expert/rmsnorm_backward_bf16")
    let = find_let(g["launches"][0]["body"], "rstd")
    let["value"] = bit_hack_rsqrt(let["value"]["x"])
    write("expert/rmsnorm_backward_bf16", "bit_hack_rsqrt", "wrong_result",
          "rstd by the fast inverse square root (one Newton step). At N = 1, grad_x = rstd g (1 - x^2 rstd^2) "
          "cancels and magnifies its error: x = 1, grad_y = 1, weight = 1, eps = 1e-3 gives 4.33e-3 against "
          "torch's 1.00e-3. NOT IN THE CATALOGUE: a known gap. Only the atol of 2e-2 lets it pass, and the bound "
          "that catches it in CPU mode (rtol 8e-3, atol 1e-4) does so on the M = N = 1 draw alone; grad_x's "
          "cancellation on the GPU is unmeasured", g, code="mismatch")


# (new kernels above)
if __name__ == "__main__":
    ROUND.main(sys.argv[1:])
