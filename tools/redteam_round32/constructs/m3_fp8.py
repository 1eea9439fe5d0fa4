import sys, json; sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from lib import *
T = "expert/fp8_gemm_rowwise_bf16"
g = golden(T)
def make(BK, BM=64, BN=32, stages=1):
    rows = op("add", lhs=op("mul", lhs=op("program_id", axis=1), rhs="BLOCK_M"), rhs=op("arange", size="BLOCK_M"))
    cols = op("add", lhs=op("mul", lhs=op("program_id", axis=0), rhs="BLOCK_N"), rhs=op("arange", size="BLOCK_N"))
    body = [
        op("let", name="rows", value=rows), op("let", name="cols", value=cols),
        op("let", name="ks", value=op("arange", size="BLOCK_K")),
        {"op": "for", "var": "k0", "stop": "K", "step": "BLOCK_K", "num_stages": stages,
         "carry": [{"name": "acc", "init": op("full", shape=["BLOCK_M", "BLOCK_N"], value=0.0, dtype="f32"), "next": "new_acc"}],
         "body": [
            op("let", name="kk", value=op("add", lhs="k0", rhs="ks")),
            op("let", name="a_tile", value=op("load",
                ptr=op("add", lhs="a", rhs=op("add", lhs=op("mul", lhs=op("expand_dims", x="rows", axis=1), rhs="K"), rhs=op("expand_dims", x="kk", axis=0))),
                mask=op("and", lhs=op("expand_dims", x=op("lt", lhs="rows", rhs="M"), axis=1), rhs=op("expand_dims", x=op("lt", lhs="kk", rhs="K"), axis=0)))),
            op("let", name="w_tile", value=op("load",
                ptr=op("add", lhs="w", rhs=op("add", lhs=op("mul", lhs=op("expand_dims", x="cols", axis=0), rhs="K"), rhs=op("expand_dims", x="kk", axis=1))),
                mask=op("and", lhs=op("expand_dims", x=op("lt", lhs="cols", rhs="N"), axis=0), rhs=op("expand_dims", x=op("lt", lhs="kk", rhs="K"), axis=1)))),
            op("let", name="new_acc", value=op("dot", lhs="a_tile", rhs="w_tile", acc="acc")),
         ]},
        op("let", name="sa", value=op("load", ptr=op("add", lhs="a_scale", rhs="rows"), mask=op("lt", lhs="rows", rhs="M"))),
        op("let", name="sw", value=op("load", ptr=op("add", lhs="w_scale", rhs="cols"), mask=op("lt", lhs="cols", rhs="N"))),
        op("store", ptr=op("add", lhs="out", rhs=op("add", lhs=op("mul", lhs=op("expand_dims", x="rows", axis=1), rhs="N"), rhs=op("expand_dims", x="cols", axis=0))),
           value=op("cast", x=op("mul", lhs=op("mul", lhs="acc", rhs=op("expand_dims", x="sa", axis=1)), rhs=op("expand_dims", x="sw", axis=0)), dtype="bf16"),
           mask=op("and", lhs=op("expand_dims", x=op("lt", lhs="rows", rhs="M"), axis=1), rhs=op("expand_dims", x=op("lt", lhs="cols", rhs="N"), axis=0))),
    ]
    return {"name": g["name"], "inputs": g["inputs"], "outputs": g["outputs"], "params": g["params"],
            "meta": [{"name": "BLOCK_M", "value": BM}, {"name": "BLOCK_N", "value": BN}, {"name": "BLOCK_K", "value": BK}],
            "grid": [op("cdiv", lhs="N", rhs="BLOCK_N"), op("cdiv", lhs="M", rhs="BLOCK_M")],
            "num_warps": 4, "num_stages": stages, "body": body}
if __name__ == "__main__":
    why = ("BLOCK_K 2048 (64 x 32 output tiles, one pipelining stage so the 128 KiB + 64 KiB operand tiles fit the "
           "H100's 227 KiB of shared memory): each dot sums 2048 fp8 products in the tensor cores' fp8 accumulator "
           "before it is added to acc in f32 (the language's fp8 dot: 'the dot's K summed at ~2**-14 precision, then "
           "added to acc'; Triton's max_num_imprecise_acc = the dot's K). Hopper's fp8 wgmma keeps ~14 bits while it "
           "accumulates (DeepSeek-V3: ~2% relative error at K 4096; the task's own golden note: plain Triton's "
           "whole-K fp8 accumulation ran 1.4-7x past the bf16 tolerance at K >= 2931 on the H200), so the bf16 "
           "results are off by about the tolerance and more, growing with K up to 8192. The interpreter computes the "
           "fp8 dot as torch.bmm of the exact f32 values (kernelgen/interp/program.py _dot): no accumulation loss "
           "at any BLOCK_K, so the task's tolerance, set for the golden's 256-wide dots, never sees it.")
    write("fp8_gemm_rowwise_bf16_block_k_2048_imprecise_fp8_accumulation", T, why, make(2048))
    write("fp8_gemm_rowwise_bf16_pointer_loads_block_k_128_control", T,
          "CONTROL: the same pointer-load kernel with BLOCK_K 128 (each dot's fp8 accumulation over 128 products, as "
          "the golden's 256, far below bf16's tolerance).", make(128, stages=3), outcome="ok")
