"""Mutation testing of the verdicts: small edits of golden kernels, the slips a careless model makes, each
judged as an answer in CPU mode; the survivors (judged ok) are judged again with other seeds and more shapes.

An edit is one of (``--ops``, all by default):

* ``edge``: a comparison's edge moved (``lt`` <-> ``le``, ``gt`` <-> ``ge``): an off-by-one mask or bound;
* ``int``: an integer literal one more or one less (offsets, strides, loop bounds, clamp ends);
* ``float``: a float literal scaled by 1.001 (a mistyped constant), or 0.0 made 1e-6;
* ``arith``: ``add`` <-> ``sub``, ``maximum`` <-> ``minimum``;
* ``mask``: a load's, store's or atomic's mask dropped;
* ``other``: a masked load's ``other`` replaced (given: by 0; absent: by 1.0), the neutral value of a
  reduction forgotten or mistaken (``-inf`` -> 0 for a max over negative rows);
* ``narrow``: an f32 ``cast``, ``full`` or ``dot`` accumulator made f16 or bf16;
* ``size``: one use of a size replaced by another size (rows for columns);
* ``axis``: a ``program_id``'s or ``num_programs``' axis changed;
* ``stop``: a loop's ``stop`` one less;
* ``drop``: a store or atomic statement left out;
* ``divide``: ``cdiv`` <-> ``idiv`` (a grid or a loop that rounds down: a partial last block dropped);
* ``logic``: ``and`` <-> ``or`` (a two-sided mask or bound that lets either side through);
* ``guard``: a ``where`` replaced by one of its branches (a guard or a neutral value forgotten).

Each mutant is judged as ``evaluate_answer`` judges an answer (``Settings(gpu=False, compile=False)``). One
judged ``ok`` is equivalent to its golden (the edit changes nothing an input the prompt allows can show: a mask
on lanes never stored, a block's size) or a false pass of the harness. The second look tells some of them
apart: the same verdict with ``--seeds`` other seeds and ``--shapes`` random shapes each; a mutant wrong there
is a false pass at the default seed that another draw finds (the verdict rests on luck). The others are
listed for a reader: equivalent ones, or false passes no draw finds (a red-team round's material).

Run from the repository root (CPU; about 2 s a mutant, more for the heavy tasks):
``.venv/bin/python tools/mutants.py --tier easy --per-task 6 --out /tmp/mutants.jsonl`` (or task ids:
``tools/mutants.py med/row_sum hard/maxpool2x2 --ops edge,other``). ``--survivors`` keeps each surviving
mutant's kernel in its JSON line, for catalogue files (tests/redteam).
"""
from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import time
from pathlib import Path
from collections import Counter
from typing import Any, Iterator

from kernelgen.harness.pipeline import Settings, evaluate_answer
from kernelgen.task.spec import get_task, load_tasks

JsonPath = tuple  # keys and indices from the kernel's root
_DELETE = object()  # replaced()'s value that removes the key or item

# The edits that swap a node's op for its twin, by kind (in the order they are tried).
OP_SWAPS = {
    "edge": {"lt": "le", "le": "lt", "gt": "ge", "ge": "gt"},
    "arith": {"add": "sub", "sub": "add", "maximum": "minimum", "minimum": "maximum"},
    "divide": {"cdiv": "idiv", "idiv": "cdiv"},
    "logic": {"and": "or", "or": "and"},
}
SHAPE_KEYS = {"axis", "size", "num_stages", "shape", "block", "dims", "axes"}  # powers of two, axes: not slips
NAME_KEYS = {"name", "var", "op", "dtype", "cache", "sem", "scope", "base", "precision", "what", "kind"}


def walk(node: Any, path: JsonPath = ()) -> Iterator[tuple[JsonPath, Any]]:
    """Every value in the kernel with its path, parents before children."""
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from walk(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from walk(value, path + (i,))


def replaced(kernel: dict, path: JsonPath, value: Any) -> dict:
    out = copy.deepcopy(kernel)
    parent = out
    for key in path[:-1]:
        parent = parent[key]
    if value is _DELETE:
        parent.pop(path[-1])
    else:
        parent[path[-1]] = value
    return out


def _atomic(op: Any) -> bool:
    return isinstance(op, str) and op.startswith("atomic")


def _in_meta(path: JsonPath) -> bool:
    """Meta values and launch settings: a block's size is the tuner's choice, not a slip."""
    return bool({"meta", "num_warps", "num_stages", "inputs", "outputs", "params"} & set(path))


def mutations(kernel: dict, sizes: list[str]) -> Iterator[tuple[str, str, dict]]:
    """(operator, description, mutant) for every edit of the kernel the operators make."""
    for path, node in walk(kernel):
        where = "/" + "/".join(str(p) for p in path)
        if _in_meta(path):
            continue
        if isinstance(node, dict):
            op = node.get("op")
            for kind, swaps in OP_SWAPS.items():
                if op in swaps:
                    yield kind, f"{where}: {op} -> {swaps[op]}", replaced(kernel, path + ("op",), swaps[op])
            if op == "where":
                for branch in ("x", "y"):
                    yield "guard", f"{where}: where -> its {branch}", replaced(kernel, path, node[branch])
            if op in ("load", "store") or _atomic(op):
                if node.get("mask") is not None:
                    yield "mask", f"{where}: mask dropped", replaced(kernel, path + ("mask",), _DELETE)
            if op == "load" and node.get("mask") is not None:
                if node.get("other") is not None:
                    if node["other"] not in (0, 0.0, False):
                        yield "other", f"{where}: other {node['other']!r} -> 0", replaced(kernel, path + ("other",), 0)
                else:
                    yield "other", f"{where}: other 1.0", replaced(kernel, path + ("other",), 1.0)
            if op in ("cast", "full") and node.get("dtype") == "f32":
                for dtype in ("f16", "bf16"):
                    yield "narrow", f"{where}: {op} f32 -> {dtype}", replaced(kernel, path + ("dtype",), dtype)
            if op == "dot" and node.get("dtype", "f32") == "f32":
                yield "narrow", f"{where}: dot accumulates f16", replaced(kernel, path + ("dtype",), "f16")
            if op in ("program_id", "num_programs"):
                axis = node.get("axis", 0)
                for other_axis in {0, 1, 2} - {axis}:
                    yield "axis", f"{where}: {op} axis {axis} -> {other_axis}", replaced(
                        kernel, path + ("axis",), other_axis)
            if op == "for":
                yield "stop", f"{where}: stop one less", replaced(
                    kernel, path + ("stop",), {"op": "sub", "lhs": node["stop"], "rhs": 1})
            if op == "store" or _atomic(op):
                if isinstance(path[-1], int):
                    yield "drop", f"{where}: {op} left out", replaced(kernel, path, _DELETE)
        elif isinstance(node, bool) or not path:
            continue
        elif isinstance(node, int) and not SHAPE_KEYS & set(path[-2:]):
            for delta in (1, -1):
                yield "int", f"{where}: {node} -> {node + delta}", replaced(kernel, path, node + delta)
        elif isinstance(node, float):
            new = node * 1.001 if node != 0.0 else 1e-6
            yield "float", f"{where}: {node!r} -> {new!r}", replaced(kernel, path, new)
        elif isinstance(node, str) and node in sizes and path[-1] not in NAME_KEYS:
            for other in sizes:
                if other != node:
                    yield "size", f"{where}: {node} -> {other}", replaced(kernel, path, other)


def judge(task, kernel: dict, seed: int = 0, shapes: int = 5) -> tuple[str, str]:
    result = evaluate_answer(task, json.dumps(kernel), Settings(gpu=False, compile=False, seed=seed, shapes=shapes))
    return result.outcome.value, str(result.first_diagnostic() or "")[:300]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tasks", nargs="*", help="task ids (tier/name); default: --tier's")
    parser.add_argument("--tier", default=None)
    parser.add_argument("--ops", default="edge,int,float,arith,mask,other,narrow,size,axis,stop,drop,divide,logic,"
                                         "guard")
    parser.add_argument("--per-task", type=int, default=6, help="mutants drawn per task (0: all)")
    parser.add_argument("--seed", type=int, default=0, help="which mutants are drawn")
    parser.add_argument("--seeds", type=int, default=2, help="other seeds a survivor is judged at")
    parser.add_argument("--shapes", type=int, default=12, help="random shapes at those seeds")
    parser.add_argument("--out", type=Path, default=None, help="one JSON line per mutant")
    parser.add_argument("--survivors", action="store_true", help="keep each survivor's kernel in --out")
    args = parser.parse_args(argv)
    ops = set(args.ops.split(","))
    tasks = [get_task(t) for t in args.tasks] if args.tasks else load_tasks(args.tier)
    out = args.out.open("a") if args.out else None
    counts: Counter[str] = Counter()
    for task in tasks:
        golden = task.golden.model_dump(mode="json", by_alias=True, exclude_none=True)
        found = [m for m in mutations(golden, sorted(task.sizes)) if m[0] in ops]
        rng = random.Random(f"{args.seed}:{task.id}")
        chosen = found if not args.per_task or len(found) <= args.per_task else rng.sample(found, args.per_task)
        for op, description, mutant in chosen:
            start = time.time()
            outcome, first = judge(task, mutant)  # a crash of the harness is its outcome harness_error
            record = {"task": task.id, "op": op, "edit": description, "outcome": outcome, "first": first}
            if outcome == "ok":
                record["again"] = "equivalent?"
                for seed in range(1, args.seeds + 1):
                    again, why = judge(task, mutant, seed=seed, shapes=args.shapes)
                    if again != "ok":
                        record["again"] = f"FALSE PASS at seed 0: seed {seed} gives {again}: {why}"
                        break
                if args.survivors:
                    record["kernel"] = mutant
            record["seconds"] = round(time.time() - start, 1)
            label = "survives" if outcome == "ok" else outcome
            counts[label] += 1
            line = f"{task.id} [{op}] {description}: {outcome}"
            if outcome == "ok":
                line += f"  <== {record['again']}"
            print(line, f"({record['seconds']} s)", flush=True)
            if out:
                out.write(json.dumps(record) + "\n")
                out.flush()
    if out:
        out.close()
    print("summary:", json.dumps(counts, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
