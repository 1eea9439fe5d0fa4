import sys, json; sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from lib import *
T = "med/col_sum_bf16"
base = json.load(open(ROOT / "tests/redteam/col_sum_bf16_running_sums_through_memory_pipelined.json"))["kernel"]
def make(block, warps, barrier=False, stages=1):
    k = copy.deepcopy(base)
    k["meta"] = [{"name": "BLOCK_N", "value": block}]
    k["num_warps"] = warps
    loop = k["body"][2]
    loop["num_stages"] = stages
    if barrier:
        loop["body"].append(op("barrier"))
    return k
if __name__ == "__main__":
    why = ("Each trip (a row) loads the running f32 column sums from out, adds the row's bf16 values and stores them back "
           "(no pipelining: the loop's num_stages is 1; BLOCK_N 1024, 4 warps), with no barrier in the loop. In order, as "
           "the interpreter runs it, each lane reads what the same lane stored the trip before. On sm_90 Triton's coalesce "
           "pass gives each load/store its own layout: the memory ops of one slice (here all of them, through cols) take "
           "the largest vector width among them, and only stores are capped at their own 128 bits. The bf16 load of x "
           "gives 8 elements per thread, so the f32 load of out gets sizePerThread 8 (thread t holds columns 8t..8t+7) "
           "while the f32 store of out keeps 4 (thread t holds 4t..4t+3 and 512+4t..): column 8 is stored by thread 2 and "
           "loaded by thread 1, column 256 stored by thread 64 (warp 2) and loaded by thread 32 (warp 1). Without a "
           "bar.sync between a trip's store and the next trip's load, warps that run ahead read sums from before the other "
           "warp's store: rows are lost. kernelgen/interp/barrier.py counts accesses of one block shape at one position "
           "as one thread ('Triton gives blocks of one shape one layout'), so no missing_barrier.")
    write("col_sum_bf16_running_sums_through_memory_unpipelined_vector_widths", T, why, make(1024, 4))
    write("col_sum_bf16_running_sums_through_memory_barrier_control", T,
          "CONTROL: the same running sums through memory, with a barrier at the end of each trip (after the store): the "
          "next trip's load, whatever thread makes it, sees the store.", make(1024, 4, barrier=True), outcome="ok")
