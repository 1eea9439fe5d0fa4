"""Round 25: sentinels in place of infinities, which only the up-scaled extreme draw reaches.

Run from the repository root: ``.venv/bin/python tools/redteam_round25/make.py`` writes NAME.json
here; judge with ``.venv/bin/python tools/redteam_verdicts.py tools/redteam_round25/*.json``. Each
is row_max's golden with the masked lanes' fill replaced: -1e9 (a finite "minus infinity") is
wrong for a row whose values all lie below it, which the extreme draw scaled by 2**32 holds; the
extreme draws also hold NaN, so before 2026-12-05 that draw was taken for an overflow and left
unjudged (verify.order_overflows compared it with an ordinary draw).
"""
import copy
import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent


def with_fill(fill):
    kernel = copy.deepcopy(yaml.safe_load((ROOT / "bench" / "med" / "row_max.yaml").read_text())["golden"])
    text = json.dumps(kernel).replace('"other": "-inf"', f'"other": {fill!r}')
    assert text != json.dumps(kernel), "row_max's golden no longer fills with -inf"
    return json.loads(text)


def sentinel_back_to_inf(fill):
    """Masked lanes read ``fill`` and a row maximum equal to it is stored as -inf (so a row of
    -inf, or of masked lanes only, still gives -inf): wrong only where every value of a row lies
    below ``fill`` and is finite."""
    kernel = with_fill(fill)
    store = [s for s in kernel["body"] if s["op"] == "store"][-1]
    store["value"] = {"op": "where", "cond": {"op": "le", "lhs": store["value"], "rhs": fill}, "x": "-inf",
                      "y": store["value"]}
    return kernel


CANDIDATES = {
    "row_max_sentinel_minus_1e9_back_to_inf": (
        "med/row_max", "wrong_result",
        "masked lanes read -1e9 and a maximum at or below -1e9 is stored as -inf: a row of -inf still gives -inf, but "
        "a row of finite values all below -1e9 gives -inf instead of its maximum (the extreme draw scaled by 2**32)",
        sentinel_back_to_inf(-1.0e9)),
    "row_max_masked_lanes_minus_1e9": (
        "med/row_max", "wrong_result",
        "masked lanes read -1e9 instead of -inf: a row whose values all lie below -1e9 (past its last full block) gets "
        "-1e9 as its maximum", with_fill(-1.0e9)),
    "row_max_masked_lanes_f32_lowest_control": (
        "med/row_max", "ok",
        "CONTROL (correct): masked lanes read f32's lowest finite value, below every finite f32 (a row of -inf alone "
        "would differ, and the domains draw none)", with_fill(-3.4028234663852886e38)),
}

for name, (task, outcome, why, kernel) in CANDIDATES.items():
    (OUT / f"{name}.json").write_text(json.dumps({"task": task, "outcome": outcome, "why": why, "kernel": kernel},
                                                 indent=1) + "\n")
    print(name)
