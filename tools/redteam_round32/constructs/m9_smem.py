import sys, json; sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from lib import *
T = "hard/matmul_f16"
k = golden(T)
k["num_stages"] = 5
def walk(n):
    if isinstance(n, dict):
        if n.get("op") == "for" and "num_stages" in n: n["num_stages"] = 5
        for v in n.values(): walk(v)
    elif isinstance(n, list):
        for v in n: walk(v)
walk(k["body"])
d = {"task": T, "outcome": "launch_error", "compile": True,
     "why": ("The golden with num_stages 5 (kernel and K loop): 5 stages of a [128, 64] and a [64, 256] f16 tile are "
             "5 x 48 KiB = 240 KiB of shared memory (plus the epilogue's), past the H100/H200's 227 KiB per block "
             "(232448 bytes, kernelgen/gpu/facts.py SM_LIMITS sm_90): Triton compiles it, and the launch fails "
             "(OutOfResources: shared memory) on every GPU call. CPU mode interprets the kernel, whose values are "
             "right, and never asks whether the compiled kernel's metadata['shared'] fits the target."),
     "kernel": k}
(OUT / "matmul_f16_five_stages_past_shared_memory.json").write_text(json.dumps(d, indent=1) + "\n")
print("wrote")
