"""``kernelgen tasks [--tier T] [--json]``: the benchmark's tasks."""

from __future__ import annotations

import argparse
import json

from kernelgen.task.metrics import TIERS


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tier", choices=TIERS, help="only this tier")
    parser.add_argument("--json", action="store_true", help="a JSON array of objects (id, tier, ...)")


def run(args: argparse.Namespace) -> int:
    from kernelgen.task.spec import load_tasks

    tasks = load_tasks(args.tier)
    if args.json:
        print(json.dumps([{"id": t.id, "tier": t.tier, "name": t.name,
                           "inputs": [i.model_dump(exclude_none=True) for i in t.signature.inputs],
                           "outputs": [o.model_dump(exclude_none=True) for o in t.signature.outputs],
                           "sizes": {k: v.model_dump(exclude_none=True) for k, v in t.sizes.items()},
                           "prompt": t.render_prompt()} for t in tasks], indent=2))
        return 0
    width = max((len(t.id) for t in tasks), default=4)
    for t in tasks:
        inputs = ", ".join(f"{i.name}:{i.dtype or i.role}" + (f"[{','.join(map(str, i.shape))}]" if i.shape else "")
                           for i in t.signature.inputs)
        first_line = t.prompt.strip().splitlines()[0]
        print(f"{t.tier:<5} {t.id:<{width}}  ({inputs})  {first_line[:70]}")
    print(f"{len(tasks)} tasks")
    return 0
