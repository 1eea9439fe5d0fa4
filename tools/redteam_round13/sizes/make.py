"""Round 13, theme SIZES: wrong kernels, each a small edit of a task's golden, whose wrong path is
reached only at sizes CPU mode's draws (kernelgen/task/draws.py, size_reads.py) do not produce.
Run from the repository root: ``.venv/bin/python tools/redteam_round13/sizes/make.py [NAME ...]``
(every builder without names); judge with ``.venv/bin/python tools/redteam_verdicts.py
tools/redteam_round13/sizes/*.json``; ``draws_of.py FILE.json [CALL]`` prints the draws a file is checked
on; ``unlisted_demo.py`` runs a file on an unlisted call."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
from redteam_candidates import Round, golden, find_let
from redteam_round4 import B, let as LET, where as W

R = Round()
R.out = Path(__file__).resolve().parent


def PID(axis=0): return {"op": "program_id", "axis": axis}
def NPROG(axis=0): return {"op": "num_programs", "axis": axis}
def EPS(t="T"): return {"op": "finfo", "dtype": t, "what": "eps"}
BF16_EPS = 2.0 ** -7


def insert_before(body, name, stmt):
    """Put ``stmt`` before the let binding ``name`` at the top level of ``body``."""
    at = next(i for i, s in enumerate(body) if s.get("op") == "let" and s["name"] == name)
    body.insert(at, stmt)


# -- 1. a threshold the kernel computes into a let: size_thresholds reads no comparison with it ------

@R.kernel
def silu_let_limit():
    g = golden("easy/silu")
    body = g["body"]
    insert_before(body, "mask", LET("big_n", B("mul", "BLOCK", 128)))
    mask = find_let(body, "mask")
    # large inputs: whole blocks only, 'the tail is handled by the small path'
    whole = B("sub", "N", {"op": "rem", "lhs": "N", "rhs": "BLOCK"})
    mask["value"] = B("lt", "offs", W(B("gt", "N", "big_n"), whole, "N"))
    R.write("easy/silu", "large_n_whole_blocks_only_past_let_limit", "wrong_result",
            "a large-input path past N > big_n, big_n = BLOCK * 128 = 131072 bound by a let: it masks to whole "
            "blocks (N - N % BLOCK), so the last N % 1024 elements are never written. size_thresholds reads only "
            "comparisons with literals and meta values, and big_n is a let name, so gt(N, big_n) gives no "
            "threshold; the literal 128 and BLOCK leave the extent at 1024 (past-extent draw < 4096); N is gridded "
            "and walked by no loop, so no range-maximum draw in CPU mode; hypothesis draws stop at cpu_max "
            "100000 and the offset draw is 32767. Input: silu of x = randn(131073): y[131072] unwritten.", g)


@R.kernel
def softsign_block_count_let():
    g = golden("easy/softsign")
    body = g["body"]
    insert_before(body, "mask", LET("n_blocks", {"op": "cdiv", "lhs": "N", "rhs": "BLOCK"}))
    mask = find_let(body, "mask")
    # more than 96 blocks: the last program is 'the tail program', left to a second launch never made
    is_tail = B("and", B("gt", "n_blocks", 96), B("eq", PID(), B("sub", "n_blocks", 1)))
    mask["value"] = B("and", mask["value"], {"op": "not", "x": is_tail})
    R.write("easy/softsign", "last_block_skipped_past_96_blocks_let", "wrong_result",
            "past 96 blocks (N > 98304) the last program writes nothing (a 'tail program' left to a second "
            "launch the kernel never makes). The comparison is gt(n_blocks, 96) with n_blocks = cdiv(N, BLOCK) "
            "bound by a let: size_thresholds does not follow lets, so it reads 96 (not 96 * 1024) and the extent "
            "stays 1024; N is gridded, so no range-maximum draw; hypothesis draws stop at 100000 (a uniform "
            "draw lands in (98304, 100000] with probability 1.7%); the offset draw is 32767. "
            "Input: softsign of x = randn(98305): y[98304] unwritten.", g)


# -- 2. a threshold on the number of programs ---------------------------------------------------------

@R.kernel
def hardswish_num_programs():
    g = golden("easy/hardswish")
    body = g["body"]
    mask = find_let(body, "mask")
    last = B("eq", PID(), B("sub", NPROG(), 1))
    mask["value"] = B("and", mask["value"], {"op": "not", "x": B("and", B("gt", NPROG(), 128), last)})
    R.write("easy/hardswish", "last_program_skipped_past_128_programs", "wrong_result",
            "with more than 128 programs the last program stores nothing. size_thresholds undoes "
            "gt(num_programs, 128) to 128 as if num_programs were a size, so the extent stays at BLOCK "
            "1024 (128 programs are 131072 elements); N is gridded, so no range-maximum draw; the "
            "hypothesis draws stop at cpu_max. Input: x = randn(131073): y[131072] unwritten.", g)


# -- 3. a threshold on a product of two gridded sizes past the joint draw's budget ----------------------

@R.kernel
def outer_product_threshold():
    g = golden("easy/outer")
    body = g["body"]
    col = find_let(body, "col_in_bounds")
    big = B("gt", B("mul", "M", "N"), 1048576)
    whole = B("sub", "N", {"op": "rem", "lhs": "N", "rhs": "BLOCK_N"})
    col["value"] = B("lt", "cols", W(big, whole, "N"))
    R.write("easy/outer", "large_output_whole_column_tiles_only", "wrong_result",
            "for outputs past 2**20 elements (M * N > 1048576) the kernel masks columns to whole BLOCK_N tiles, "
            "so the last N % 128 columns are unwritten. size_thresholds reads 1048576 as a threshold on M*N and "
            "makes it the extent, but the draws past it set one size to its range top (8192) with the other "
            "small (<= 17: 139264 elements); M and N are gridded, so no range-maximum draw; the joint draw's "
            "budget keeps M = N near 571 (326041); hypothesis draws stop at cpu_max 300. "
            "Input: outer of a = randn(1025), b = randn(1025): out[:, 1024] unwritten.", g)


# -- 4. a comparison of two sizes through lets (size_pairs reads bare size names only) --------------------

@R.kernel
def linear_tile_counts():
    g = golden("hard/linear_optional_bias")
    flag = find_let(g["body"], "read_bias")
    flag["value"] = B("and", flag["value"], B("or", B("le", "tiles_m", "tiles_n"), B("lt", "tile_n", 2)))
    R.write("hard/linear_optional_bias", "more_row_tiles_bias_first_256_columns", "wrong_result",
            "where there are more row tiles than column tiles (tiles_m > tiles_n, both lets of cdiv) the bias "
            "is added in the first two column tiles only: columns 256.. lack it. Wrong where cdiv(M, 128) > "
            "cdiv(N, 128) and N > 256 on every call with a bias. size_pairs reads comparisons of bare size "
            "names, so no ordering draw; the joint draw has M == N; hypothesis draws stop at cpu_max 160. "
            "Input (call f16_bias): x f16 [385, 1], w f16 [257, 1], bias ones: y[:, 256] lacks + 1.", g)


# -- 5. an unlisted call gets no ordering, joint or equality draws -----------------------------------

@R.kernel
def linear_unlisted_tall():
    g = golden("hard/linear_optional_bias")
    flag = find_let(g["body"], "read_bias")
    f32 = B("eq", EPS(), 2.0 ** -23)
    flag["value"] = B("and", flag["value"],
                      B("or", {"op": "not", "x": B("and", f32, B("gt", "M", "N"))}, B("lt", "tile_n", 2)))
    R.write("hard/linear_optional_bias", "f32_bias_tall_bias_first_256_columns", "wrong_result",
            "an f32 call with a bias (the unlisted call) where M > N adds the bias in the first two column "
            "tiles only. gt(M, N) is read by size_pairs, but verify_calls checks an unlisted call on its 2 "
            "smallest hypothesis draws, the past-extent and the range-maximum draws only ('small'): no "
            "ordering (size_order) draw, no joint draw. Those make one size large, the others small. "
            "Input (unlisted_f32): x f32 [300, 1], w [257, 1], bias ones: y[:, 256] lacks + 1.", g)


# -- 6. a threshold on one gridded size, wrong only where the looped size is long too ----------------

@R.kernel
def row_sum_many_rows():
    g = golden("med/row_sum")
    loop = [s for s in g["body"] if s.get("op") == "for"][0]
    # many rows: 'rows are short then', one block per row
    loop["stop"] = W(B("gt", "M", "BLOCK"), {"op": "minimum", "lhs": "N", "rhs": "BLOCK"}, "N")
    g["params"].append({"name": "M"})
    R.write("med/row_sum", "many_rows_one_block_per_row", "wrong_result",
            "past M > BLOCK = 1024 rows the row loop stops after one block (min(N, BLOCK)): rows longer than "
            "1024 lose their tail. The threshold M > 1024 is read and drawn (M past the extent, with N small), "
            "and N's range maximum is drawn (with M = 16), but no draw has both M > 1024 and N > 1024: the joint "
            "draw keeps both near 571, sorted and offset draws hold M at its minimum or 4, hypothesis M <= 48. "
            "Input: x = ones(1025, 1025): out = 1024 instead of 1025 in every row.", g)


# -- 7. expert: tokens past a let-computed cap dropped ------------------------------------------------

@R.kernel
def index_add_rows_token_cap():
    g = golden("expert/index_add_rows")
    scatter = g["launches"][1]
    body = scatter["body"]
    insert_before(body, "token_in_bounds", LET("max_tokens", B("mul", "BLOCK", 64)))
    t = find_let(body, "token_in_bounds")
    t["value"] = B("lt", "tokens", {"op": "minimum", "lhs": "T", "rhs": "max_tokens"})
    R.write("expert/index_add_rows", "tokens_past_65536_dropped_let_cap", "wrong_result",
            "the scatter launch drops tokens past max_tokens = BLOCK * 64 = 65536 (a let): "
            "tokens < minimum(T, max_tokens). No literal or meta value states 65536, so the extent stays 1024; "
            "T is gridded (cdiv(T, 16)), so no range-maximum draw in CPU mode; hypothesis T <= 2000; past-extent "
            "T < 4096. Input: V = 512, D = 1, T = 65537, index = arange(T) % 512, src = ones: out row "
            "65536 % 512 = 0 gets one addition fewer.", g)


@R.kernel
def index_add_rows_copy_cap():
    g = golden("expert/index_add_rows")
    copy = g["launches"][0]
    body = copy["body"]
    insert_before(body, "in_bounds", LET("max_copy", B("mul", "BLOCK", "BLOCK")))
    b = find_let(body, "in_bounds")
    b["value"] = B("lt", "offsets", {"op": "minimum", "lhs": "numel", "rhs": "max_copy"})
    R.write("expert/index_add_rows", "copy_launch_first_2pow20_elements", "wrong_result",
            "the first launch (out = x) copies only the first BLOCK * BLOCK = 2**20 elements of V * D (a let); "
            "elements past it keep whatever out held, then get the scatter's additions. The joint draw holds "
            "V * D near 330**2; past-extent V draws are < 4096 with D <= 17; V and D are gridded, no range "
            "maximum in CPU mode. Input: V = 1025, D = 1024, T = 1: out rows 1024.. differ from x.", g)


# -- 8. a power-of-two fast path (N & (N - 1) == 0): no draw reads a bit test ---------------------------

@R.kernel
def outer_pow2_stride():
    g = golden("easy/outer")
    body = g["body"]
    offs = find_let(body, "tile_offs")
    pow2 = B("and", B("eq", B("and", "N", B("sub", "N", 1)), 0), B("ge", "N", 512))
    stride = W(pow2, 512, "N")
    offs["value"] = B("add", B("mul", {"op": "expand_dims", "x": "rows", "axis": 1}, stride),
                      {"op": "expand_dims", "x": "cols", "axis": 0})
    R.write("easy/outer", "pow2_path_row_stride_512", "wrong_result",
            "a power-of-two path (N & (N - 1) == 0, N >= 512), specialised for the N = 512 shape, stores rows at "
            "a stride of 512: right at N = 512, rows overlap wrongly at N = 1024, 2048, ... size_equalities "
            "undoes eq(and(N, N - 1), 0) to nothing (0 is below 1); size_multiples reads rem only; the "
            "threshold 512 puts the extent at 4096 (the [32, 128] tile), and the draws past it avoid "
            "multiples of it; hypothesis draws stop at cpu_max 300. Input: a = randn(2), b = randn(1024).", g)


# -- 9. a listed call past the first gets no range-maximum draw -----------------------------------

@R.kernel
def rms_norm_bf16_loop_cap():
    g = golden("hard/rms_norm_batched")
    loop = [s for s in g["body"] if s.get("op") == "for"][0]
    g["body"].insert(g["body"].index(loop), LET("max_cols", B("mul", "BLOCK", 6)))
    bf16 = B("and", B("eq", EPS(), BF16_EPS), B("eq", "HAS_WEIGHT", 1))
    loop["stop"] = W(bf16, {"op": "minimum", "lhs": "H", "rhs": "max_cols"}, "H")
    R.write("hard/rms_norm_batched", "bf16_squares_first_6144_columns", "wrong_result",
            "for T = bf16 with a weight (the second listed call, bf16; bf16 without a weight is an unlisted call, which gets the range maxima) the sum of squares stops at max_cols = BLOCK * 6 = 6144 "
            "columns (a let). verify_calls runs the ranges' maxima (H = 8192) for the first call only "
            "(f16); the bf16 call's draws past the extent and its sorted draws stay below 4 * 1024 and "
            "8 * 1024 by chance of the seed, offset draws at H = 4096. Input (call bf16): x = ones(1, 1, 6145) "
            "bf16, weight ones: y = 1 / sqrt(6144/6145) instead of 1.", g)


# -- 10. caps on how many comparisons are read: size_pairs[:2], size_equalities[:4] ----------------

@R.kernel
def linear_third_pair():
    g = golden("hard/linear_optional_bias")
    body = g["body"]
    # a tuned kernel's heuristics: 'split K' and 'K-major' flags (harmless here), then a tall flag
    # (size_reads.nodes walks the body from its last statement: the tall flag, first in the body, is read last)
    insert_before(body, "pid", LET("tall", B("gt", "M", "N")))
    insert_before(body, "read_bias", LET("k_dominant", B("and", B("gt", "K", "M"), B("gt", "K", "N"))))
    flag = find_let(body, "read_bias")
    flag["value"] = B("and", flag["value"], B("or", B("or", "k_dominant", {"op": "not", "x": "tall"}), B("lt", "tile_n", 2)))
    R.write("hard/linear_optional_bias", "third_size_pair_tall_bias_first_256_columns", "wrong_result",
            "compares three pairs of sizes (K > M and K > N for a k_dominant flag, then M > N): where M > N "
            "(and K does not dominate) the bias is added in the first two column tiles only. size_pairs finds "
            "(K, N), (K, M) and (M, N) in that order (the tall flag is the body's first statement, the walk starts at the last) and ordering_draws takes the first two only: draws with "
            "K and M large (N at 1) and K and N large (M at 1), never M > N > 256. Input (f16_bias): x f16 "
            "[300, 1], w [257, 1], bias ones: y[:, 256] lacks + 1.", g)


@R.kernel
def row_sum_fifth_hidden_size():
    g = golden("med/row_sum")
    loop = [s for s in g["body"] if s.get("op") == "for"][0]
    # 'unrolled' trip ends for common hidden sizes; the 5120 case copied from the 4096 one
    stop = "N"
    for n, at in reversed([(768, 768), (1024, 1024), (2048, 2048), (4096, 4096), (5120, 4096)]):
        stop = W(B("eq", "N", n), at, stop)
    loop["stop"] = stop
    R.write("med/row_sum", "hidden_size_5120_loop_stops_at_4096", "wrong_result",
            "specialised loop ends for common hidden sizes N in {768, 1024, 2048, 4096, 5120}, the 5120 case "
            "copied from the 4096 one: at N == 5120 the row loop stops at 4096 and columns 4096.. are not "
            "summed. size_equalities finds the five values but equality_draws takes the first four (768, "
            "1024, 2048, 4096); the literal 5120 puts the extent there, and the draws past it are > 5120; the "
            "range maxima are 8192 and 8191; hypothesis draws stop at 2500. Input: x = ones(1, 5120): "
            "out = 4096 instead of 5120.", g)


@R.kernel
def linear_pair_read_first():
    g = golden("hard/linear_optional_bias")
    body = g["body"]
    insert_before(body, "pid", LET("k_dominant", B("and", B("gt", "K", "M"), B("gt", "K", "N"))))
    flag = find_let(body, "read_bias")
    flag["value"] = B("and", flag["value"], B("or", B("or", "k_dominant", B("le", "M", "N")), B("lt", "tile_n", 2)))
    R.write("hard/linear_optional_bias", "tall_pair_read_first_bias_first_256_columns", "wrong_result",
            "the same wrong kernel as third_size_pair_tall_bias_first_256_columns with its statements in the other "
            "order (k_dominant first, M <= N inside read_bias, near the body's end): size_pairs walks from the "
            "last statement and finds (M, N) first, so ordering_draws draws M = 570 > N = 569 and catches it. "
            "Input (f16_bias): x f16 [300, 1], w [257, 1], bias ones: y[:, 256] lacks + 1.", g)


if __name__ == "__main__":
    R.main(sys.argv[1:])
