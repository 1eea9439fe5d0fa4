"""Round 28 candidates: faults that only an ordinary-domain input at a size (or in a band of sizes) the extreme-domain
draws cover, but the ordinary ones do not, would show. Each is a minimal edit of a task's golden
(bench/<tier>/<task>.yaml); ``_control`` ones are still right.

Run from the repository root: ``.venv/bin/python tools/redteam_round28/make.py`` writes NAME.json
here; judge with ``.venv/bin/python tools/redteam_verdicts.py tools/redteam_round28/*.json``;
``.venv/bin/python tools/redteam_round28/demo.py`` shows each wrong one wrong on an allowed input.
"""
import copy
import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent


def golden(task):
    return copy.deepcopy(yaml.safe_load((ROOT / "bench" / f"{task}.yaml").read_text())["golden"])


def B(op, lhs, rhs):
    return {"op": op, "lhs": lhs, "rhs": rhs}


def walk(node):
    """Every dict inside ``node`` (depth first)."""
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from walk(v)


CANDIDATES = {}


def candidate(name, task, outcome, why, kernel):
    assert not (ROOT / "tests" / "redteam" / f"{name}.json").exists(), name
    CANDIDATES[name] = (task, outcome, why, kernel)


def topk_cap(task, cap, read):
    """The top-k golden with meta CAP = ``cap`` (scratch, store mask and the fallback test use it) but the finish
    launch reading only ``read`` candidate slots (its arange)."""
    k = golden(task)
    for m in k["meta"]:
        if m["name"] == "CAP":
            m["value"] = cap
    finish = next(l for l in k["launches"] if l["name"] == "finish")
    slots = next(n for n in walk(finish["body"]) if n.get("op") == "let" and n.get("name") == "slots")
    slots["value"] = {"op": "arange", "size": read}
    return k


# --- A1: top-k candidate list of CAP = 2 * 64 slots, the finish launch reads 64 of them: a row whose candidates
# number 65..128 takes the fast path and loses the later ones. Only ties overfill the list; the extreme domain's
# small integers overfill it past 128 at every large N (the exact fallback), and ordinary rows stay below 64.
candidate("row_topk8_cap_128_finish_reads_64_slots", "expert/row_topk8", "wrong_result",
          "Candidate list CAP = 128 (scratch, store mask, fallback test found <= CAP) but the finish launch loads "
          "arange(64) slots (the golden's CAP, left as a literal): a row with 65..128 candidates takes the fast "
          "path and drops the candidates stored in slots 64..127 (later columns). Candidates only number that many "
          "where ties at the threshold are many: integer-valued rows (allowed: any finite values) at N ~ 600..1100.",
          topk_cap("expert/row_topk8", 128, 64))
candidate("row_topk8_cap_128_control", "expert/row_topk8", "ok",
          "CONTROL (correct): CAP = 128 and the finish reads all 128 slots.", topk_cap("expert/row_topk8", 128, 128))
candidate("row_topk64_cap_512_finish_reads_256_slots", "expert/row_topk64", "wrong_result",
          "Candidate list CAP = 512 but the finish launch loads arange(256) slots: a row with 257..512 candidates "
          "(ties at the threshold: integer-valued rows at N ~ 2300..4600) drops the later ones.",
          topk_cap("expert/row_topk64", 512, 256))
candidate("row_topk64_cap_512_control", "expert/row_topk64", "ok",
          "CONTROL (correct): CAP = 512 and the finish reads all 512 slots.", topk_cap("expert/row_topk64", 512, 512))

# --- A2: row_top2's merge, when a chunk's best beats the running best, takes the chunk's own second as the new
# second and forgets the running best (right whenever the chunk maxima are monotone: sorted rows, or ties of the
# domain's top value in the first chunk, as every extreme integer row at large N).
k = golden("hard/row_top2")
rc = next(s for s in k["body"][3]["body"] if s.get("name") == "running_candidate")
rc["value"]["y"] = "-inf"  # the running best is no longer a candidate for second place
candidate("row_top2_chunk_win_forgets_running_best", "hard/row_top2", "wrong_result",
          "When a chunk's best beats the running best, the new second is the chunk's own second: the running best "
          "is dropped (a running best beaten later should become second). Right for a row whose maximum and second "
          "lie in one chunk or whose chunk maxima never rise; wrong for a random row past 2048 columns whose maximum "
          "lies in a later chunk than its runner-up.", k)

if __name__ == "__main__":
    for name, (task, outcome, why, kernel) in CANDIDATES.items():
        e = {"task": task, "outcome": outcome, "why": why}
        if outcome != "ok":
            e["code"] = "mismatch"
        e["kernel"] = kernel
        (OUT / f"{name}.json").write_text(json.dumps(e, indent=1) + "\n")
        print(name)
