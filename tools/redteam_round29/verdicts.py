"""Judge round 29's answers (races between the programs of one launch) in CPU mode, as the
baseline does (kernelgen.baseline.ablation.evaluate_baseline with Settings(gpu=False)), or with
--gpu in GPU mode (on the GPU, then in Triton's interpreter; kernels not timed).

    .venv/bin/python tools/redteam_round29/verdicts.py [--gpu] [--kernelgen ROOT] [NAME ...]

One line per manifest entry (or per NAME given), tab-separated: name, task, expected, outcome,
the first diagnostic's message (200 characters) and the seconds the judgement took.
--kernelgen ROOT judges with the kernelgen of another checkout (e.g. an export of an earlier
commit: ``git archive HEAD | tar -x -C /tmp/kg_head``); default: this checkout's.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    root = HERE.parents[1]
    gpu = argv[:1] == ["--gpu"]
    argv = argv[1:] if gpu else argv
    if argv[:1] == ["--kernelgen"]:
        root, argv = Path(argv[1]).resolve(), argv[2:]
    sys.path.insert(0, str(root))
    import kernelgen
    from kernelgen.baseline.ablation import evaluate_baseline
    from kernelgen.harness.pipeline import Settings
    from kernelgen.task.spec import get_task

    if not Path(kernelgen.__file__).resolve().is_relative_to(root):
        print(f"kernelgen was imported from {kernelgen.__file__}, not from {root}", file=sys.stderr)
        return 2
    manifest = json.loads((HERE / "manifest.json").read_text())
    unknown = sorted(set(argv) - {entry["name"] for entry in manifest})
    if unknown:
        print(f"not in manifest.json: {', '.join(unknown)}", file=sys.stderr)
        return 2
    for entry in manifest:
        if argv and entry["name"] not in argv:
            continue
        start = time.perf_counter()
        result = evaluate_baseline(get_task(entry["task"]), (HERE / f"{entry['name']}.md").read_text(),
                                   Settings(gpu=gpu, time_kernels=False))
        seconds = time.perf_counter() - start
        first = result.diagnostics[0] if result.diagnostics else None
        message = "" if first is None else first.get("message", "") if isinstance(first, dict) else str(first)
        outcome = getattr(result.outcome, "value", result.outcome)
        print(f"{entry['name']}\t{entry['task']}\t{entry['expected']}\t{outcome}\t{message[:200]!r}\t{seconds:.1f}s"
              + (f"\tinterpreter: {result.extra.get('interpreter', 'not run')}" if gpu else ""),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
