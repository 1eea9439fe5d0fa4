from mk import *
g = golden("hard/group_norm")
body = g["launches"][1]["body"]
n = 0
for s in body:
    if s["op"] == "for":
        s["stop"] = "PB"; n += 1
assert n == 2
write("group_norm_combine_one_block_of_64_partials", "hard/group_norm", "wrong_result",
 "The normalize launch combines its group's partials with one [PB = 64] block (its two partial loops stop at PB instead of np = 8 * cdiv(L, 4096)), as if 64 partials always held a group: right while cdiv(L, 4096) <= 8, i.e. L <= 32768 (the bench's L is 16384), "
 "but for L in (32768, 65536] (the task's range) the partials of chunks 8.. of each channel are left out of the mean and variance. Input: B = 1, L = 40000, seed 0.", g)
