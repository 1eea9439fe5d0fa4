"""Round 13 candidates (offsets a fixed-size draw misses): python tools/redteam_round13/make.py [NAME ...]
(writes into tools/redteam_round13/). Each is a minimal edit of a task's golden."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from redteam_candidates import Round, find_let, golden  # noqa: E402
from redteam_round4 import B  # noqa: E402

ROUND = Round()
ROUND.out = Path(__file__).resolve().parent
kernel, write = ROUND.kernel, ROUND.write


@kernel
def layernorm_backward_one_pass_past_one_block():
    """The golden's first loop also sums raw squares; the variance is the golden's two-pass one
    where the row fits one block (N <= BLOCK) and E[x^2] - mean^2 past it."""
    g = golden("hard/layernorm_backward")
    first = [s for s in g["body"] if s.get("op") == "for"][0]
    first["carry"].append({"name": "partial_raw", "init": {"op": "full", "shape": ["BLOCK"], "value": 0.0, "dtype": "f32"},
                           "next": "new_partial_raw"})
    first["body"].append({"op": "let", "name": "new_partial_raw", "value": {"op": "fma", "x": "chunk", "y": "chunk", "z": "partial_raw"}})
    rstd = find_let(g["body"], "rstd")
    two_pass = rstd["value"]["x"]["lhs"]  # sum(partial_squares) / row_length
    one_pass = B("sub", B("div", {"op": "sum", "x": "partial_raw", "axis": 0}, "row_length"), B("mul", "mean", "mean"))
    rstd["value"]["x"]["lhs"] = {"op": "where", "cond": B("le", "N", "BLOCK"), "x": two_pass, "y": one_pass}
    write("hard/layernorm_backward", "one_pass_past_one_block", "wrong_result",
          "the golden's two-pass variance while a row fits one block (N <= 1024), and E[x^2] - mean^2 from raw "
          "squares summed in the first loop past it (a careless 'fast path for long rows'): the subtraction cancels "
          "on rows whose mean is large against their spread. The offset draws are rows of 147 (one block) and the "
          "long rows of the other draws are centred; the extreme domain [1000, 1004] that caught it is gone (it "
          "failed the golden at N = 2), so the long offset draw must (kernelgen/task/draws.py offset_draws: "
          "N = 10082, M = 4, x + 1024). Input: x = 1000 + randn(2, 2048), "
          "grad_y = randn, weight = ones, eps = 1e-5: grad_x off by up to 0.45 (3988 of 4096 elements).",
          g, code="mismatch")


@kernel
def normalize_rows_eps_inside_sqrt():
    """The norm as sqrt(sum x^2 + 1e-12): eps inside the sqrt, where the prompt takes max(norm, 1e-12)."""
    g = golden("med/normalize_rows")
    norm = find_let(g["body"], "norm")
    norm["value"] = {"op": "sqrt", "x": B("add", {"op": "sum", "x": "partial_squares", "axis": 0}, 1.0e-12)}
    write("med/normalize_rows", "eps_inside_sqrt", "wrong_result",
          "the norm as sqrt(sum of squares + 1e-12), eps inside the sqrt, where the prompt (F.normalize) takes "
          "max(sqrt(sum of squares), 1e-12): the same wherever sum x^2 >> 1e-12, which every ordinary draw is, and "
          "zero rows give 0 either way; a row of norm 1e-9 comes out 1e-3 of its size. The draws never made "
          "norms near 1e-12 (round 11's known gap); caught since normalize_rows' extreme draws are of scale "
          "1e-12. Input: x = 1e-9 * randn(2, 8): rows of unit norm in torch, of norm ~1e-3 in the kernel.",
          g, code="mismatch")


if __name__ == "__main__":
    ROUND.main(sys.argv[1:])
