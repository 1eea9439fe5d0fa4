from mk import *
import copy
g = golden("hard/rms_norm_batched")
body = g["body"]
i = next(k for k, s in enumerate(body) if s["op"] == "for")
loop = body[i]
capped = copy.deepcopy(loop)
capped["stop"] = B("minimum", "H", B("mul", "BLOCK", 4))
body[i] = {"op": "if", "cond": B("eq", "HAS_WEIGHT", 1), "then": [loop], "else": [capped],
           "results": [{"name": "sq", "then": "partial_squares", "else": "partial_squares"}]}
for s in body:
    if s["op"] == "let" and s["name"] == "mean_square":
        s["value"]["lhs"]["x"] = "sq"
write("rms_norm_batched_no_weight_path_squares_first_4_chunks", "hard/rms_norm_batched", "wrong_result",
 "The no-weight path (HAS_WEIGHT == 0, the f16_no_weight call and the unlisted bf16/f32 no-weight calls) sums the squares over at most 4 chunks of 1024 (loop stop minimum(H, 4 * BLOCK)) but divides by H: for H > 4096 the mean square leaves out x[..., 4096:], so y is too large by sqrt(H / 4096)-ish. The weighted path is the golden's. "
 "Input: f16_no_weight call, B = S = 1, H = 8192, x ~ N(0, 0.01): y is about sqrt(2) times torch's. A later listed call is not drawn at its range's maximum in CPU mode (pipeline.verify_calls: no_range_max), and its other draws keep H <= 4 * extent / sorted 2 * extent.", g)
