from mk import *
g = golden("expert/flash_decoding_f16")
body = g["launches"][0]["body"]
for s in body:
    if s.get("op") == "let" and s["name"] == "per_split":
        s["value"] = B("minimum", s["value"], 8)
write("flash_decoding_f16_splits_capped_at_8_blocks", "expert/flash_decoding_f16", "wrong_result",
 "Each of the 16 splits walks at most 8 key blocks of 64 (per_split = minimum(cdiv(cdiv(S, 64), 16), 8): a program's work bounded at 512 keys, sized for an 8192-token context): the 16 splits cover 16 * 8 * 64 = 8192 keys and every key past 8192 is dropped from the softmax and the output. "
 "Right for every S <= 8192, wrong for S in (8192, 32768] (the task's range; the bench's S is 32768). Input: B = H = 1, S = 16384, seed 0: the output is the attention over the first 8192 keys only.", g)
