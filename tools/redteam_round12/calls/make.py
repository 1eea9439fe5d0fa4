"""Round 12, theme CALLS AND SIZES: wrong kernels, each a small edit of a task's golden, built to pass
CPU mode. Run from the repository root: ``.venv/bin/python tools/redteam_round12/calls/make.py [NAME ...]``
(every builder without names); judge with ``.venv/bin/python tools/redteam_verdicts.py
tools/redteam_round12/calls/*.json``; ``demo.py`` runs each on the call and sizes its ``why`` names."""
import sys, json
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
from redteam_candidates import golden, find_let
OUT = Path(__file__).resolve().parent
BUILDERS = {}


def B(op, l, r): return {"op": op, "lhs": l, "rhs": r}
def U(op, x): return {"op": op, "x": x}
def EPS(t="T"): return {"op": "finfo", "dtype": t, "what": "eps"}
F16_EPS, BF16_EPS, F32_EPS = 2.0 ** -10, 2.0 ** -7, 2.0 ** -23


def builder(fn):
    BUILDERS[fn.__name__] = fn
    return fn


def write(task, what, outcome, why, kernel):
    name = f"{task.split('/')[1]}_{what}"
    (OUT / f"{name}.json").write_text(json.dumps({"task": task, "outcome": outcome, "why": why, "kernel": kernel}, indent=1) + "\n")
    print("wrote", name)


# -- 1. a path only an unlisted call takes, wrong past its 2 smallest draws --------------------

@builder
def layer_norm_unlisted():
    g = golden("med/layer_norm_optional")
    long_rows = g["body"][-1]["else"]
    bias_flag = find_let(long_rows, "read_bias")
    # f16 rows without a weight: the shift is read for the first chunk only
    bias_flag["value"] = B("and", B("eq", "HAS_BIAS", 1),
                           B("or", B("eq", "HAS_WEIGHT", 1), B("ne", EPS(), F16_EPS)))
    last = long_rows[-1]
    shift = find_let(last["body"], "shift")
    shift["value"]["x"]["mask"] = B("and", "in_row", B("or", "read_bias",
                                    B("and", B("eq", "HAS_BIAS", 1), B("eq", "chunk_start", 0))))
    write("med/layer_norm_optional", "f16_no_weight_long_rows_bias_first_chunk", "wrong_result",
          "in the long-row path (N > 4096) a call with T = f16, a bias and no weight adds the bias to the first "
          "4096 columns only (read_bias is false for that pattern; the shift's mask keeps chunk_start == 0). "
          "No listed call is f16 without a weight (f16_affine has one; bf16_bias_only is bf16), so only the "
          "unlisted call unlisted_f16_no_weight takes it, and verify_calls runs unlisted calls on the 2 smallest "
          "hypothesis draws only ({M: 1, N: 1}, {M: 9, N: 16}), far below the 4097 columns the path needs. "
          "Input: F.layer_norm(x f16 [1, 4100], (4100,), None, bias f16 [4100] = ones, 1e-5): torch gives "
          "normalized + 1 on every column; the kernel gives columns 4096..4099 without the + 1.", g)


@builder
def linear_unlisted():
    g = golden("hard/linear_optional_bias")
    body = g["body"]
    flag = find_let(body, "read_bias")
    # f32 with a bias: the bias is added in the first column tile only
    flag["value"] = B("and", flag["value"], B("or", B("ne", EPS(), F32_EPS), B("eq", "tile_n", 0)))
    write("hard/linear_optional_bias", "f32_bias_first_column_tile_only", "wrong_result",
          "an f32 call with a bias adds the bias in the first [128, 128] column tile only (tile_n == 0): "
          "columns 128.. get x @ w^T without it. The listed calls are f16/bf16 with and without a bias and "
          "f32 without one; f32 with a bias is the unlisted call unlisted_f32, verified on the 2 smallest "
          "hypothesis draws only ({M: 1, N: 1, K: 1}, {M: 97, N: 16, K: 3}): N never passes 128 there. "
          "Input: F.linear(x f32 [2, 3], w f32 [130, 3], bias f32 [130] = ones): y[:, 128:130] lack the + 1.", g)


@builder
def amax_unlisted():
    g = golden("med/amax_keepdim")
    loop = [s for s in g["body"][0]["else"] if s.get("op") == "for"][0]
    # dim=0 without keepdim: the column walk stops after its first BLOCK_R_COLS rows
    loop["stop"] = {"op": "where", "cond": B("and", B("eq", "dim", 0), B("eq", "keepdim", 0)),
                    "x": {"op": "minimum", "lhs": "M", "rhs": "BLOCK_R_COLS"}, "y": "M"}
    write("med/amax_keepdim", "dim0_no_keepdim_first_128_rows", "wrong_result",
          "with dim = 0 and keepdim = False (choice indices 0 and 0) the walk down the columns stops after the "
          "first BLOCK_R_COLS = 128 rows. The listed calls are dim -1/False, 1/True, 0/True, -2/False; dim = 0 with "
          "keepdim = False is only the unlisted call unlisted_rows_dim_0_keepdim_false, verified on the 2 smallest "
          "hypothesis draws ({M: 1, N: 1}, {M: 3, N: 100}): M never passes 128 there. Input: torch.amax(x, 0) of "
          "x f32 [130, 2] with x[129] = [100, 100] and the rest 0: torch gives [100, 100], the kernel [0, 0].", g)


@builder
def maximum_unlisted():
    g = golden("easy/maximum_generic")
    # T is f32 exactly where 0.1 rounds to f32's 0.1 (ints: 0; f16, bf16, f64: other values)
    is_f32 = B("eq", {"op": "cast", "x": {"op": "cast", "x": 0.1, "dtype": "T"}, "dtype": "f64"}, 0.10000000149011612)
    mask = find_let(g["body"], "mask")
    lane = B("sub", "offs", B("mul", {"op": "program_id"}, "BLOCK"))
    mask["value"] = B("and", mask["value"], B("or", U("not", is_f32), B("lt", lane, 512)))
    write("easy/maximum_generic", "f32_half_blocks", "wrong_result",
          "for T = f32 each program of 1024 elements handles its first 512 only (as if f32 had been given a "
          "512-element block, the grid left at cdiv(M*N, 1024)): elements 512..1023 of every block are never "
          "written. The listed calls bind T to i32, i64, f16, bf16 and f64; f32 is the unlisted call "
          "unlisted_f32, verified on the 2 smallest hypothesis draws only ({M: 1, N: 1}, {M: 17, N: 7}: 119 "
          "elements). Input: torch.maximum(a, b) of f32 [1, 600]: out[0, 512:600] unwritten (the kernel's y "
          "there is whatever the buffer held).", g)


# -- 2. a path taken only where a gridded size is a multiple of a block ------------------------

@builder
def relu_even():
    g = golden("easy/relu")
    g["meta"][0]["value"] = 2048
    body = g["body"]
    store = body[-1]
    even = B("eq", B("rem", "N", "BLOCK"), 0)
    fast = {"op": "where", "cond": B("gt", "v", 0.0), "x": "v", "y": 0.0}
    store["value"] = {"op": "where", "cond": even, "x": fast, "y": store["value"]}
    write("easy/relu", "even_n_path_nan_to_zero", "wrong_result",
          "BLOCK 2048 and an EVEN_N path (N % BLOCK == 0, as Triton kernels specialise whole blocks) that computes "
          "where(v > 0, v, 0): NaN becomes 0, where torch.relu keeps NaN. The path is never run: N is gridded "
          "and looped by nothing, so CPU mode draws no range maximum for it; the draw past the extent avoids "
          "multiples of the extent (2048) on purpose; there is no joint/equality draw for a task of one size "
          "(the joint and offset draws use odd sizes anyway); equality_draws undoes eq(rem(N, BLOCK), 0) to 0 "
          "and drops it; the hypothesis edges (…1024, 1025, 4097) hold no multiple of 2048, and a uniform draw in "
          "[1, 100000] is one with probability 1/2048. Input: x = [nan] + [1.0] * 2047 (N = 2048): torch gives "
          "y[0] = nan, the kernel 0.", g)



# -- 3. a path taken where one size exceeds another, wrong only where both are large ---------------

@builder
def linear_tall():
    g = golden("hard/linear_optional_bias")
    flag = find_let(g["body"], "read_bias")
    # tall problems (M > N): the bias is read for the first two column tiles (256 columns) only
    flag["value"] = B("and", flag["value"], B("or", B("le", "M", "N"), B("lt", "tile_n", 2)))
    write("hard/linear_optional_bias", "tall_m_over_n_bias_first_256_columns", "wrong_result",
          "where M > N (a 'tall' problem, as swap-AB or split heuristics pick a path by comparing two sizes) the "
          "bias is added in the first two [128, 128] column tiles only: columns 256.. lack it. Wrong only where "
          "M > N > 256, on every call with a bias (f16_bias, the first listed call, included). No draw has that: "
          "the hypothesis draws stop at cpu_max 160; the draws past the extent and the range maxima make one "
          "size large and the others small (M = 8192 with N <= 17; N large with M small); the joint, equality "
          "and offset draws hold M == N == K; size_thresholds and size_equalities look only at comparisons of a "
          "size with a fixed value, so gt(M, N) yields no draw. Input: F.linear(x f16 [300, 1], w f16 [257, 1], "
          "bias f16 [257] = ones) (call f16_bias): y[:, 256] lacks the + 1.", g)


if __name__ == "__main__":
    for name in sys.argv[1:] or list(BUILDERS):
        BUILDERS[name]()
