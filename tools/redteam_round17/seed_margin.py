"""How many query rows of the shift draw score below the sentinel (all keys equal, so a row is one score), for
seeds 0..39: the -65504 sentinels of paged and alibi attention are caught only where some row does.
Run from the repository root: .venv/bin/python tools/redteam_round17/seed_margin.py"""
import torch
from kernelgen.task.spec import get_task
from kernelgen.task.draws import shift_draws
from kernelgen.task.shifts import with_shift
from kernelgen.task.verify import make_inputs, size_seed
for tid, kname, thr in [("expert/paged_attention_decode_f16", "k_cache", -65504.0), ("expert/alibi_attention_f16", "k", -65504.0),
                        ("hard/cross_attention_bf16", "k", -1e5)]:
    t = get_task(tid); hits = []
    for seed in range(40):
        ds = shift_draws(t, seed)
        if not ds: hits.append(None); continue
        d = ds[0]
        inp = with_shift(t, make_inputs(t, d.sizes, seed), d.order, size_seed(t, d.sizes, seed))
        q = inp["q"].double(); k = inp[kname].double()
        if tid.endswith("paged_attention_decode_f16"):
            kk = k[0, 0]                     # [H, 64], same for every page and slot
            s = 0.125 * (q * kk[None]).sum(-1)  # [B, H]
        elif "alibi" in tid:
            s = 0.125 * (q * k[:, :, :1, :]).sum(-1)  # [B, H, S]
        else:
            s = (q * k[:, :1]).sum(-1)  # [B, SQ, H] raw
        hits.append(int((s < thr).sum()))
    print(tid, "rows below", thr, "per seed:", hits)
