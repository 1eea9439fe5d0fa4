"""Round 17 (shift draws: finite "large negative" sentinels in place of -inf) candidates:
python tools/redteam_round17/make.py [NAME ...] (writes into tools/redteam_round17/).
Each is a minimal edit of the task's golden."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from redteam_candidates import Round, find_let, golden, loops  # noqa: E402
from redteam_round4 import B, U, cast, let, where  # noqa: E402

ROUND = Round()
ROUND.out = Path(__file__).resolve().parent
kernel, write = ROUND.kernel, ROUND.write

LOG2E = 1.4426950408889634


def carry(loop, name):
    """The carry entry of this loop named so."""
    return next(c for c in loop["carry"] if c["name"] == name)


def set_init(loop, name, value):
    """A carry's initial value: a scalar literal, or the value of the full() it starts from."""
    c = carry(loop, name)
    if isinstance(c["init"], dict):
        c["init"]["value"] = value
    else:
        c["init"] = value


# ================================================================ attention
@kernel
def attention_f16_running_max_init_minus_1e4():
    g = golden("hard/attention_f16")
    set_init(loops(g["body"])[0], "m_i", -10000.0)
    write("hard/attention_f16", "running_max_init_minus_1e4", "wrong_result",
          "the running maximum m_i starts at -1e4 (in log2 units, q . k * 0.125 * log2e) instead of -inf. Right "
          "while some key of every row scores above -1e4, which q, k of ordinary scales always do; a row whose "
          "scores all lie below keeps m = -1e4, every p = exp2(score - m) flushes to 0, l = 0 and the row is "
          "0/0 = NaN. Input: S = 1, q = 1, k = -1024, v = 1 everywhere (f16; q . k = -65536, -11819 in log2 "
          "units): torch 1 (all 64), the kernel NaN.", g)


@kernel
def attention_causal_mha_f16_causal_mask_minus_1e4():
    g = golden("hard/attention_causal_mha_f16")
    branch = next(s for s in loops(g["body"])[0]["body"] if s.get("op") == "if")
    branch["results"][0]["then"]["y"] = -10000.0
    write("hard/attention_causal_mha_f16", "causal_mask_minus_1e4", "wrong_result",
          "the causal mask fills future keys with the raw score -1e4 (the 'large negative' of many attention "
          "codes) instead of -inf: their weight exp((-1e4 - max) / 8) vanishes while a visible key scores above "
          "about -9000, but a query whose visible scores all lie below -1e4 puts its weight on the future keys "
          "(and on the block's lanes past S, which load the last key's v). Input: B = H = 1, S = 2, q = 1, "
          "k = -256 everywhere (q . k = -16384), v[0] = 0, v[1] = 1: row 0 torch 0 (sees key 0 only), the "
          "kernel 1.", g)


@kernel
def cross_attention_bf16_tail_mask_minus_1e5():
    g = golden("hard/cross_attention_bf16")
    find_let(g["body"], "t_qk")["value"]["y"] = -100000.0
    write("hard/cross_attention_bf16", "tail_mask_minus_1e5", "wrong_result",
          "the tail block's padding keys (key >= SK) get the raw score -1e5 instead of -inf (round 16's -1e4, "
          "pushed further down): a query whose real scores all lie below -1e5 puts all its weight on the "
          "padding keys, whose v rows load as 0. Input: B = SQ = H = SK = 1, q = 16, k = -128 everywhere "
          "(bf16; q . k = -131072), v = 1: torch 1 (all 64), the kernel 0.", g)


@kernel
def alibi_attention_f16_mask_minus_65504():
    g = golden("expert/alibi_attention_f16")
    find_let(g["body"], "scores")["value"]["y"] = -65504.0
    write("expert/alibi_attention_f16", "mask_minus_65504", "wrong_result",
          "masked keys (future keys and lanes past S) get the score -65504 (the f16 lowest, as if the scores "
          "were f16) instead of -inf; the scores are f32 (q . k / 8 - slope * distance), and a query whose "
          "visible scores all lie below -65504 puts its weight on the masked keys. Input: B = H = 1, S = 1, "
          "q = 4, k = -2048 everywhere (f16; q . k / 8 = -65536), v = 1, slopes = [0.5]: torch 1 (all 64), the "
          "kernel ~0 (the lanes past S load v = 0 and take all but e^-32 of the weight).", g)


@kernel
def flash_decoding_f16_lane_max_init_minus_1e4():
    g = golden("expert/flash_decoding_f16")
    set_init(loops(g["launches"][0]["body"])[0], "m_i", -10000.0)
    write("expert/flash_decoding_f16", "lane_max_init_minus_1e4", "wrong_result",
          "each split's per-lane running maxima start at -1e4 (log2 units) instead of the golden's -1e30: a "
          "query whose scores q . k * 0.125 * log2e all lie below -1e4 keeps m = -1e4 on every lane, every p "
          "flushes to 0, every split's sum is 0 and the combine divides 0 by 0. Input: B = H = 1, S = 1, "
          "q = 1, k = -1024, v = 1 (f16; score -11819 in log2 units): torch 1 (all 64), the kernel NaN.", g)


@kernel
def flash_decoding_f16_combine_floor_minus_1e4():
    g = golden("expert/flash_decoding_f16")
    ov = find_let(g["launches"][1]["body"], "overall")
    ov["value"] = B("maximum", ov["value"], -10000.0)
    write("expert/flash_decoding_f16", "combine_floor_minus_1e4", "wrong_result",
          "the split combine floors the overall maximum at -1e4 (log2 units), a 'guard' against empty splits "
          "(whose maximum is the -1e30 lane init), instead of using max(part_max) as it is: when every "
          "split's maximum lies below -1e4, each weight exp2(part_max - (-1e4)) flushes to 0, total = 0 and "
          "the output is 0/0. Input: B = H = 1, S = 1, q = 1, k = -1024, v = 1 (f16; score -11819 in log2 "
          "units): torch 1 (all 64), the kernel NaN.", g)


@kernel
def sliding_window_attention_f16_mask_minus_1e4():
    g = golden("expert/sliding_window_attention_f16")
    find_let(g["body"], "scores")["value"]["y"] = -10000.0
    write("expert/sliding_window_attention_f16", "mask_minus_1e4", "wrong_result",
          "keys outside the window (and lanes past S) get the score -1e4 instead of -inf: a query whose "
          "visible scores (q . k / 8) all lie below -1e4 puts its weight on the masked keys. Input: B = H = 1, "
          "S = 1, window = 1, q = 1, k = -2048 everywhere (f16; q . k / 8 = -16384), v = 1: torch 1 (all 64), "
          "the kernel 0 (the lanes past S load v = 0).", g)


@kernel
def paged_attention_decode_f16_mask_minus_65504():
    g = golden("expert/paged_attention_decode_f16")
    find_let(g["body"], "scores")["value"]["y"] = -65504.0
    write("expert/paged_attention_decode_f16", "mask_minus_65504", "wrong_result",
          "tokens past the sequence's length get the score -65504 (the f16 lowest) instead of -inf; the scores "
          "are f32 (q . k / 8), and a query whose real scores all lie below -65504 puts its weight on the "
          "padding lanes, whose v loads as 0. Input: B = H = P = MAXP = 1, block_table = [[0]], seq_lens = [1], "
          "q = 4, k_cache = -2048 everywhere (q . k / 8 = -65536), v_cache = 1: torch 1 (all 64), the kernel "
          "~0 (e^-32 / 63).", g)


# ================================================================ softmax rows and columns
@kernel
def softmax_f16_row_max_init_minus_1e4():
    g = golden("med/softmax_f16")
    set_init(loops(g["body"])[0], "row_max", -10000.0)
    write("med/softmax_f16", "row_max_init_minus_1e4", "wrong_result",
          "the running row maximum starts at -1e4 instead of -inf: a row whose values all lie below -1e4 "
          "(f16 reaches -65504) keeps max = -1e4, every exp(x - max) underflows, the sum is 0 and each "
          "probability 0 * inf = NaN. Input: x = [[-16384, -16384]] (f16): torch [0.5, 0.5], the kernel "
          "[nan, nan].", g)


@kernel
def softmax_f16_pad_zero_in_max():
    g = golden("med/softmax_f16")
    body = loops(g["body"])[0]["body"]
    find_let(body, "chunk")["value"]["x"]["other"] = 0.0
    ns = find_let(body, "new_sum")
    ns["value"]["rhs"]["x"] = where(B("lt", "cols", "N"), ns["value"]["rhs"]["x"], 0.0)
    write("med/softmax_f16", "pad_zero_in_max", "wrong_result",
          "the block's padding lanes load 0 (other=0) and are zeroed after the exp instead of loading -inf, so "
          "their 0 enters the row maximum: a row whose values all lie below about -104 (exp(x - 0) underflows "
          "f32) sums to 0 and every probability is 0 * inf = NaN; rows of ordinary values are exact. Input: "
          "x = [[-200, -200]] (f16, N = 2 < BLOCK): torch [0.5, 0.5], the kernel [nan, nan].", g)


@kernel
def softmax_temperature_max_first_element():
    g = golden("med/softmax_temperature")
    branch = next(s for s in g["body"] if s.get("op") == "if")
    find_let(branch["then"], "row_max1")["value"] = B("div", {"op": "load", "ptr": "x_row"}, "temperature")
    write("med/softmax_temperature", "max_first_element", "wrong_result",
          "the one-block path (N <= BLOCK) subtracts the row's first score x[0] / T instead of its maximum: "
          "exact in reals, but exp(score - x[0] / T) overflows f32 once another score lies more than ~88 above "
          "it (inf / inf = NaN). A shift draw does not see it (its rows are constant, so x[0] is the "
          "maximum). Input: x = [[0, 100]], temperature = 1: torch [3.72e-44, 1], the kernel [0, nan].", g)


@kernel
def softmax_cols_global_max_init_minus_1e5():
    g = golden("med/softmax_cols")
    set_init(loops(g["launches"][1]["body"])[0], "gm", -100000.0)
    write("med/softmax_cols", "global_max_init_minus_1e5", "wrong_result",
          "the normalize kernel's column maximum over the splits' partial maxima starts at -1e5 instead of "
          "-inf: a column whose values all lie below -1e5 gets gm = -1e5, its sum l * exp(m - gm) underflows "
          "to 0 and every output is exp(x - gm) * inf = 0 * inf = NaN. Input: x = [[-131072], [-131072]] "
          "(M = 2, N = 1): torch [[0.5], [0.5]], the kernel NaN.", g)


@kernel
def masked_softmax_fill_minus_1e4():
    g = golden("med/masked_softmax")
    find_let(g["body"], "scores")["value"]["y"] = -10000.0
    write("med/masked_softmax", "fill_minus_1e4", "wrong_result",
          "masked positions get the score -1e4 (Hugging Face's masked_fill value) instead of -inf: they enter "
          "the row's maximum and sum. While a kept score lies above about -9900 their weight exp(-1e4 - max) is "
          "0; a row whose kept scores all lie below -1e4 gets max = -1e4, the masked lanes sum to their count "
          "and every kept probability flushes to 0. Input: x = [[-20000, -20000]], mask = [[True, False]]: "
          "torch [1, 0], the kernel [0, 0].", g)


@kernel
def log_softmax_rows_other_minus_1e5():
    g = golden("med/log_softmax_rows")
    find_let(loops(g["body"])[0]["body"], "chunk")["value"]["other"] = -100000.0
    write("med/log_softmax_rows", "other_minus_1e5", "wrong_result",
          "the statistics pass loads the block's padding lanes (cols >= N) as -1e5 instead of -inf: each adds "
          "exp(-1e5 - max) to the sum, 0 while the row's maximum lies above about -99900; a row whose values all "
          "lie below -1e5 gets max = -1e5 and a sum of (BLOCK - N). Input: x = [[-131072, -131072]] "
          "(N = 2, BLOCK = 4096): torch [-0.693, -0.693], the kernel [-31080.3, -31080.3] "
          "(x + 1e5 - log 4094).", g)


@kernel
def softmax_entropy_row_max_init_minus_30000():
    g = golden("med/softmax_entropy")
    set_init(loops(g["body"])[0], "row_max", -30000.0)
    write("med/softmax_entropy", "row_max_init_minus_30000", "wrong_result",
          "the running maximum starts at -30000 instead of -inf: a row whose logits all lie below -30000 "
          "keeps max = -30000, every weight exp(x - max) underflows, the sum is 0 and the entropy "
          "log 0 - 0 / 0 = NaN. Input: x = [[-65536, -65536]]: torch log 2 = 0.6931, the kernel NaN.", g)


# ================================================================ cross entropy, KL
@kernel
def cross_entropy_row_max_init_minus_1e4():
    g = golden("hard/cross_entropy")
    set_init(loops(g["body"])[0], "row_max", -10000.0)
    write("hard/cross_entropy", "row_max_init_minus_1e4", "wrong_result",
          "the running maximum starts at -1e4 instead of -inf: a row whose logits all lie below -1e4 keeps "
          "max = -1e4, the sum of exp(x - max) underflows to 0 and logsumexp = -1e4 + log 0 = -inf. "
          "Input: logits = [[-20000, -20000]], target = [0]: torch log 2 = 0.6931, the kernel -inf.", g)


@kernel
def cross_entropy_label_smoothing_row_max_init_zero():
    g = golden("hard/cross_entropy_label_smoothing")
    set_init(loops(g["body"])[0], "row_max", 0.0)
    write("hard/cross_entropy_label_smoothing", "row_max_init_zero", "wrong_result",
          "the running maximum starts at 0 (as a max(x, 0) stabiliser would), not -inf: exact while a row's "
          "largest logit is above about -87, but a row whose logits all lie below -104 sums exp(x - 0) to 0 "
          "and logsumexp is -inf. Input: logits = [[-200, -200]], target = [0], smoothing = 0.1: torch log 2 "
          "= 0.6931, the kernel -inf.", g)


@kernel
def log_softmax_nll_lane_max_init_minus_1e4():
    g = golden("hard/log_softmax_nll")
    branch = next(s for s in g["body"] if s.get("op") == "if")
    set_init(loops(branch["else"])[0], "lane_max", -10000.0)
    write("hard/log_softmax_nll", "lane_max_init_minus_1e4", "wrong_result",
          "the chunked path (C <= CHUNK or C > BLOCK) starts its per-lane maxima at -1e4 instead of -inf: in a "
          "row whose logits all lie below -1e4 no lane's maximum moves, each sum adds exp(-|x - (-1e4)|) = 0, "
          "and log_sum = log 0 = -inf, so log_probs = +inf and nll = +inf. Input: logits = [[-20000, -20000]], "
          "target = [0]: torch log_probs [-0.6931, -0.6931], nll 0.6931; the kernel inf.", g)


@kernel
def cross_entropy_backward_row_max_init_minus_65504():
    g = golden("expert/cross_entropy_backward")
    set_init(loops(g["launches"][1]["body"])[0], "row_max", -65504.0)
    write("expert/cross_entropy_backward", "row_max_init_minus_65504", "wrong_result",
          "the softmax's running maximum starts at -65504 (the f16 lowest, in an f32 task) instead of -inf. A "
          "row at -65536 still works (exp(-32) is a normal f32, and the ratio is right); a row whose logits "
          "all lie below about -65610 sums to 0 and every p = 0 * inf = NaN. Input: logits = "
          "[[-131072, -131072]], target = [0], grad_loss = 1, label_smoothing = 0: torch [[-0.5, 0.5]], the "
          "kernel NaN.", g)


@kernel
def distill_kl_teacher_max_init_minus_1e4():
    g = golden("hard/distill_kl")
    set_init(loops(g["body"])[0], "teacher_max", -10000.0)
    write("hard/distill_kl", "teacher_max_init_minus_1e4", "wrong_result",
          "the teacher's running maximum starts at -1e4 instead of -inf: a teacher row whose logits / T all "
          "lie below -1e4 keeps max = -1e4, teacher_sum = 0 and the divergence is 0 / 0 = NaN. Input: "
          "teacher = [[-20000, -20000]], student = [[0, 0]], T = 1: torch 0, the kernel NaN.", g)


# ================================================================ row range, routing
@kernel
def row_range_min_init_plus_65504():
    g = golden("med/row_range")
    set_init(loops(g["body"])[0], "lane_min", 65504.0)
    write("med/row_range", "min_init_plus_65504", "wrong_result",
          "the per-lane minima start at 65504 (the f16 largest) instead of +inf, in an f32 task: a row whose "
          "values all lie above 65504 gets min = 65504. Input: x = [[70000, 70000]]: torch 0, the kernel 4496.", g)


@kernel
def moe_top2_routing_other_minus_1e4():
    g = golden("expert/moe_top2_routing")
    find_let(g["launches"][0]["body"], "row_logits")["value"]["other"] = -10000.0
    write("expert/moe_top2_routing", "other_minus_1e4", "wrong_result",
          "the router loads the lanes past E (and past T) as -1e4 instead of -inf: a token whose logits all lie "
          "below -1e4 picks two padding experts (index >= E) as its top 2. Input: logits = [[-20000, -20000]] "
          "(T = 1, E = 2): torch experts [[0, 1]], weights [[0.5, 0.5]], counts [1, 1]; the kernel picks experts "
          "past E, and the permute kernel then loads block_base out of bounds (offset 2 of 2 elements). No draw "
          "shows it: the logits domain has ties, so the task gets no shift draw.", g)


# ================================================================ controls
@kernel
def attention_f16_running_max_init_minus_3e38_control():
    g = golden("hard/attention_f16")
    set_init(loops(g["body"])[0], "m_i", -3.0e38)
    write("hard/attention_f16", "running_max_init_minus_3e38_control", "ok",
          "CONTROL (correct): the running maximum starts at -3e38, finite but below any score of f16 q, k "
          "(|q . k| <= 64 * 65504^2 = 2.7e11): m_new is the row's real maximum after the first block, and "
          "alpha = exp2(-3e38 - m_new) = 0.", g)


@kernel
def attention_causal_mha_f16_mul_then_sub_control():
    g = golden("hard/attention_causal_mha_f16")
    p = find_let(loops(g["body"])[0]["body"], "p")
    f = p["value"]["x"]
    p["value"]["x"] = B("sub", B("mul", f["x"], f["y"]), f["z"]["x"])
    write("hard/attention_causal_mha_f16", "mul_then_sub_control", "ok",
          "CONTROL (correct): p = exp2(qk * C - m) with the product rounded before the subtraction, not the "
          "golden's fma; m is the same rounded product of the row's largest score, so the largest key's "
          "exponent is exactly 0, and the rest are off by an ulp of qk * C.", g)


@kernel
def paged_attention_decode_f16_exp2_form_control():
    g = golden("expert/paged_attention_decode_f16")
    body = loops(g["body"])[0]["body"]
    for name in ("correction", "p"):
        s = find_let(body, name)
        s["value"] = U("exp2", B("mul", s["value"]["x"], LOG2E))
    write("expert/paged_attention_decode_f16", "exp2_form_control", "ok",
          "CONTROL (correct): exp(d) written as exp2(d * log2 e) for the correction and the weights "
          "(d = -inf still gives 0; d = 0 gives 1 exactly).", g)


@kernel
def softmax_f16_row_max_init_minus_65504_control():
    g = golden("med/softmax_f16")
    set_init(loops(g["body"])[0], "row_max", -65504.0)
    write("med/softmax_f16", "row_max_init_minus_65504_control", "ok",
          "CONTROL (correct): the running maximum starts at -65504, the f16 lowest. x is f16, so every finite "
          "x is >= -65504 and max(-65504, row) is the row's maximum; a row of -inf gives 0 * inf = NaN as "
          "torch does.", g)


@kernel
def masked_softmax_fill_neg_inf_as_neg_control():
    g = golden("med/masked_softmax")
    find_let(g["body"], "scores")["value"]["y"] = U("neg", "inf")
    write("med/masked_softmax", "fill_neg_inf_as_neg_control", "ok",
          "CONTROL (correct): masked positions filled with -(+inf), the same -inf written as a negation.", g)


@kernel
def cross_entropy_row_max_init_minus_1e30_control():
    g = golden("hard/cross_entropy")
    set_init(loops(g["body"])[0], "row_max", -1e30)
    write("hard/cross_entropy", "row_max_init_minus_1e30_control", "ok",
          "CONTROL (correct): the running maximum starts at -1e30, finite but far below any finite f32 logit "
          "a row of this task's draws holds; a row of -inf gives log 0 = -inf and -inf - -inf = NaN as torch "
          "does.", g)


if __name__ == "__main__":
    ROUND.main(sys.argv[1:])
