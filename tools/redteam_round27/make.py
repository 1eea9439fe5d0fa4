"""Round 27 candidates: multi-launch / scratch / atomics orderings (area A) and integer edge cases
(area B). Each is a minimal edit of a task's golden (bench/<tier>/<task>.yaml) or of a catalogue
control (tests/redteam/*_control.json); ``_control`` ones are still right.

Run from the repository root: ``.venv/bin/python tools/redteam_round27/make.py`` writes NAME.json
here; judge with ``.venv/bin/python tools/redteam_verdicts.py tools/redteam_round27/*.json``;
``.venv/bin/python tools/redteam_round27/demo.py`` shows each wrong one wrong on an allowed input.
"""
import copy
import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent


def golden(task):
    return copy.deepcopy(yaml.safe_load((ROOT / "bench" / f"{task}.yaml").read_text())["golden"])


def catalogue(name):
    return copy.deepcopy(json.loads((ROOT / "tests" / "redteam" / f"{name}.json").read_text())["kernel"])


def B(op, lhs, rhs):
    return {"op": op, "lhs": lhs, "rhs": rhs}


def cast(x, dtype):
    return {"op": "cast", "x": x, "dtype": dtype}


CANDIDATES = {}


def candidate(name, task, outcome, why, kernel):
    assert not (ROOT / "tests" / "redteam" / f"{name}.json").exists(), name
    CANDIDATES[name] = (task, outcome, why, kernel)


# --- A1: the "last program finishes" reduction, ticket drawn BEFORE the program's own share is added.
k = catalogue("col_sum_bf16_last_row_chunk_acq_rel_ticket_control")
body = k["launches"][0]["body"]
i_add = next(i for i, s in enumerate(body) if s.get("op") == "atomic_add" and s.get("name") is None)
i_tkt = next(i for i, s in enumerate(body) if s.get("op") == "atomic_add" and s.get("name") == "ticket")
assert i_tkt == i_add + 1
body[i_add], body[i_tkt] = body[i_tkt], body[i_add]
candidate("col_sum_bf16_last_chunk_ticket_before_own_add", "med/col_sum_bf16", "wrong_result",
          "The 'last row chunk copies out' col sum (acq_rel ticket, relaxed adds) but each program takes its "
          "ticket BEFORE adding its own column sums to the scratch: the program that draws the last ticket may "
          "read the scratch while another program, which took its ticket earlier, has not yet added its share "
          "(on a GPU: program A takes ticket k, stalls; program B takes the last ticket and reads). The "
          "interpreter's orders (lockstep, reversed, shuffled: programs alone to completion or chunks in lockstep) "
          "never stop a program between two of its statements while another runs, so the last ticket always "
          "sees every add.", k)

# A1 control: same with the order kept (copy of the catalogue control is not needed: it exists).

# --- B1: bincount with per-block counts narrowed to i16, BLOCK 65536 (a block of > 32767 equal bytes wraps).
k = golden("expert/bincount_bytes")
k["meta"] = [{"name": "BLOCK", "value": 65536}]
last = k["body"][-1]
last["val"] = cast(cast("block_counts", "i16"), "i64")
candidate("bincount_bytes_block_counts_i16_block_65536", "expert/bincount_bytes", "wrong_result",
          "Per-program bin counts narrowed to i16 before the i64 atomic add, with BLOCK = 65536: a block holding "
          "more than 32767 copies of one byte value (x constant, allowed: every value in [0, 255]) wraps "
          "(65536 equal values count 0). Random and extreme (250..255) inputs put at most ~N/6 in a bin.", k)
k = golden("expert/bincount_bytes")
k["meta"] = [{"name": "BLOCK", "value": 65536}]
k["body"][-1]["val"] = cast(cast("block_counts", "i32"), "i64")
candidate("bincount_bytes_block_counts_i32_block_65536_control", "expert/bincount_bytes", "ok",
          "CONTROL (correct): the same BLOCK = 65536 with the per-block counts kept in i32 (at most 65536).", k)


# --- A2: float atomic adds whose result needs lockstep's program order (a launch binding no old values
# is never rerun under another order): program row-chunk 0 adds +H then -H to every column around the
# others' adds; in lockstep every +H lands, then every -H, then the shares: exact. On a GPU another
# program's share may land between +H and -H and is rounded away (|share| << ulp(H) = 2**17).
H = 2.0 ** 40
k = golden("med/col_sum_bf16")
body = k["body"]
i_add = next(i for i, s in enumerate(body) if s.get("op") == "atomic_add")
first_chunk = B("and", "col_in_bounds", B("eq", {"op": "program_id", "axis": 1}, 0))
bump = lambda v: {"op": "atomic_add", "ptr": B("add", "out", "cols"),
                  "val": {"op": "full", "shape": ["BLOCK_N"], "value": v, "dtype": "f32"},
                  "mask": first_chunk, "sem": "relaxed"}
body[i_add:i_add] = [bump(H), bump(-H)]
candidate("col_sum_bf16_first_chunk_offset_add_then_remove", "med/col_sum_bf16", "wrong_result",
          "Row chunk 0 adds +2**40 to each column, then -2**40, before every chunk adds its column sums (an "
          "'offset' a model might add to keep the accumulator away from zero, or a cheat): in lockstep the +H "
          "and -H of chunk 0 cancel before any share lands, exactly; on a GPU another chunk's share (|share| ~ 10, "
          "ulp(2**40) = 2**17) may land between them and vanish. The launch binds no atomic old values, so the "
          "interpreter never reruns it under another program order.", k)

# --- B2: embedding ids narrowed to i16 before the row offset (ids >= 32768 wrap negative: V up to 131072).
k = golden("expert/embedding_bag_sum")
for st in k["body"]:
    if st.get("op") == "for":
        for t in st["body"]:
            if t.get("name") == "row_offsets":
                t["value"]["lhs"]["lhs"]["x"] = cast(cast("token_ids", "i16"), "i32")
candidate("embedding_bag_sum_ids_through_i16", "expert/embedding_bag_sum", "wrong_result",
          "Token ids narrowed to i16 before the row offset is computed (a model 'saving registers'): an id >= 32768 "
          "(allowed: V up to 131072, every id in [0, V)) wraps negative and gathers outside the table / a wrong row. "
          "The CPU draws keep V <= cpu_max 600.", k)

# --- B3: MoE routing, per-expert totals carried in i16 (an expert with > 32767 assignments wraps).
k = golden("expert/moe_top2_routing")
prefix = next(l for l in k["launches"] if l["name"] == "prefix")
loop = next(st for st in prefix["body"] if st.get("op") == "for")
loop["carry"][0]["init"]["dtype"] = "i16"
nxt = next(t for t in loop["body"] if t.get("name") == "new_totals")
nxt["value"]["rhs"] = cast(nxt["value"]["rhs"], "i16")
store = next(st for st in prefix["body"] if st.get("op") == "store")
store["value"] = cast("totals", "i32")
loop2 = [st for st in prefix["body"] if st.get("op") == "for"][1]
loop2["carry"][0]["init"] = B("sub", {"op": "cumsum", "x": cast("totals", "i32"), "axis": 0}, cast("totals", "i32"))
candidate("moe_top2_routing_expert_totals_i16", "expert/moe_top2_routing", "wrong_result",
          "The prefix launch sums each expert's block counts in an i16 carry: an expert chosen by more than 32767 of "
          "the T * 2 assignments (E = 2 and T >= 32768: every token picks both experts; or a dominant expert) wraps "
          "counts and every base after it. Allowed: T up to 65536, E >= 2.", k)

# --- A1b: the same hole with the ticket drawn on entry (first statement), before the program loads anything.
k = catalogue("col_sum_bf16_last_row_chunk_acq_rel_ticket_control")
body = k["launches"][0]["body"]
i_tkt = next(i for i, s in enumerate(body) if s.get("op") == "atomic_add" and s.get("name") == "ticket")
body.insert(0, body.pop(i_tkt))
candidate("col_sum_bf16_last_chunk_ticket_on_entry", "med/col_sum_bf16", "wrong_result",
          "The 'last row chunk copies out' col sum with the arrival ticket drawn as the program's first statement "
          "(an 'arrive, then work' counter): the program with the last ticket reads the scratch after its own add, "
          "but programs that arrived earlier may still be in their row loop. Lockstep runs every program's ticket, "
          "loop and add before any read; reversed and shuffled run programs to completion one at a time or in "
          "lockstep chunks, so the last ticket is always drawn after every other program finished.", k)

# --- B1b: the classic off-by-one width: BLOCK 256 with u8 per-block counts (255 fits; a block of 256 equal
# bytes counts 0).
k = golden("expert/bincount_bytes")
k["meta"] = [{"name": "BLOCK", "value": 256}]
k["body"][-1]["val"] = cast(cast("block_counts", "u8"), "i64")
candidate("bincount_bytes_block_256_counts_u8", "expert/bincount_bytes", "wrong_result",
          "BLOCK = 256 with the per-block counts in u8 ('a block has at most 255... 256 elements'): a block of 256 "
          "equal values (x constant over 256 aligned elements, allowed) counts 0 for that bin.", k)

# --- A2 probe: the same offset trick with the -H add's old value bound (unused): the launch now 'binds old
# values', so it is rerun under the reversed and shuffled orders.
k = json.loads(json.dumps(CANDIDATES["col_sum_bf16_first_chunk_offset_add_then_remove"][3]))
minus = [s for s in k["body"] if s.get("op") == "atomic_add" and s["val"].get("value") == -H][0]
minus["name"] = "unused_old"
candidate("col_sum_bf16_first_chunk_offset_add_then_remove_bound_probe", "med/col_sum_bf16", "wrong_result",
          "PROBE: the offset trick with the -H atomic's old value bound to an unused name: only that makes the "
          "interpreter rerun the launch under its other orders.", k)

if __name__ == "__main__":
    for name, (task, outcome, why, kernel) in CANDIDATES.items():
        e = {"task": task, "outcome": outcome, "why": why}
        if outcome != "ok":
            e["code"] = "mismatch"
        e["kernel"] = kernel
        (OUT / f"{name}.json").write_text(json.dumps(e, indent=1) + "\n")
        print(name)
