"""Variants of task goldens as a bench folder of their own, to time configurations the quick
tuner does not search (programs of several launches, load eviction hints) with the harness's
own timer and against torch.compile, before one is written into the golden.

Each variant is a copy of the task ``<task>_v<k>`` whose golden has some meta values,
``num_warps`` (every launch), ``num_stages`` (every launch's, or every loop's) or load hints changed:

    python tools/golden_variants.py --out /tmp/variants med/col_mean_var \\
        "BLOCK_N=64 warps=8" "SPLIT=64" + hard/maxpool2x2 "load0=evict_last load1=evict_last"
    KERNELGEN_BENCH_DIR=/tmp/variants pytest bench/med bench/hard -m "not ablation" \\
        --kg-mode gpu --kg-tune off --kg-compiled on --kg-results variants.jsonl
    python tools/speedup_table.py variants.jsonl

A spec item ``NAME=VALUE`` sets a meta value, ``warps=N`` and ``stages=N`` every launch's
warps and stages, ``loop_stages=N`` every ``for`` loop's ``num_stages`` (a loop whose loads feed
no dot is software-pipelined only with its own), ``unroll=N`` every ``for`` loop's ``unroll``
(``loopK_unroll=N``: the K-th loop's, 0-based in file order), ``loadK=HINT`` the cache hint of the golden's K-th load (0-based, in file
order: ``evict_first``, ``evict_last``, ``ca``, ``cg``, ``cv``), ``literal=N,M`` (``literal=*``:
every size) writes those sizes into the bodies as the task's bench sizes (compiled for exact
sizes, as Inductor's static shapes are: such a variant is wrong at other sizes, so time it with
``tools/inductor_kernels.py``, which does not verify, not with pytest), ``grid=swap`` swaps
the grid's first two axes (and the body's ``program_id``/``num_programs`` axes 0 and 1 with them), so
that consecutive programs walk the other axis: the launch order of a 2-D pointwise tiling,
rows first or columns first, is not something the tuner searches; ``divide=reciprocal``
multiplies by a reciprocal where the golden divides an f32 tile by a literal, a scalar or a
smaller tile broadcast over it; ``divide=rsqrt`` writes each ``div`` of 1.0 by a scalar inside a
``for`` loop (a running mean's weight 1 / (j + 1)) as ``rsqrt(x) * rsqrt(x)``, two approximate
MUFU ops (about 4 ulp) where the correctly rounded division branches to its slow path in every
trip, which keeps an unrolled loop from issuing its trips' loads together.
``+`` starts the next task.
"""

from __future__ import annotations

import argparse
import copy
import math
import re
import sys
from pathlib import Path
from typing import Any, Callable

import yaml

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _nodes(node: object, op: str, found: list[dict]) -> list[dict]:
    """Every ``op`` node (a load, a for loop) under ``node``, in document order."""
    if isinstance(node, dict):
        if node.get("op") == op:
            found.append(node)
        for value in node.values():
            _nodes(value, op, found)
    elif isinstance(node, list):
        for value in node:
            _nodes(value, op, found)
    return found


def _literal(node: object, sizes: dict[str, int]) -> object:
    """``node`` with every expression that names one of ``sizes`` replaced by its value."""
    if isinstance(node, str):
        return sizes.get(node, node)
    if isinstance(node, list):
        return [_literal(value, sizes) for value in node]
    if isinstance(node, dict):
        return {key: value if key in ("name", "var") else _literal(value, sizes) for key, value in node.items()}
    return node


def _rewrite_typed(golden: dict, rewrite: Callable[[dict, Any, bool], bool]) -> int:
    """Call ``rewrite(node, types, looped)`` on every node of the golden's bodies, children first:
    ``types[field]`` is the checker's type of the node's child ``field`` (``types[""]`` the
    node's own), ``looped`` whether it lies inside a for loop. Returns how many it rewrote
    (returned True for)."""
    import json

    from kernelgen.check.checked import launches_of
    from kernelgen.check.checker import check
    from kernelgen.lang.parse import parse_kernel

    checked = check(parse_kernel(json.dumps(golden)))
    count = 0
    for launch, each in zip(golden.get("launches") or [golden], launches_of(checked)):
        def walk(node: object, path: str, looped: bool) -> None:
            nonlocal count
            if isinstance(node, list):
                for index, value in enumerate(node):
                    walk(value, f"{path}/{index}", looped)
            elif isinstance(node, dict):
                for key, value in list(node.items()):
                    walk(value, f"{path}/{key}", looped or node.get("op") == "for")
                count += bool(rewrite(node, _Types(each.types, path), looped))

        walk(launch.get("body", []), "/body", False)
    return count


class _Types:
    """A node's view of its launch's types: ``self[field]`` is the type of the node's child."""

    def __init__(self, types: dict, path: str) -> None:
        self.types, self.path = types, path

    def __getitem__(self, field: str) -> Any:
        return self.types.get(f"{self.path}/{field}" if field else self.path)


def _rsqrt_weights(golden: dict) -> int:
    """Rewrite each ``div`` of 1.0 by a scalar inside a for loop as ``rsqrt(x) * rsqrt(x)``;
    returns how many were rewritten (see the module doc)."""
    def rewrite(node: dict, types: _Types, looped: bool) -> bool:
        rhs = types["rhs"]
        if not (looped and node.get("op") == "div" and node.get("lhs") == 1.0 and rhs is not None and not rhs.shape):
            return False
        root = {"op": "rsqrt", "x": node["rhs"]}
        node.clear()
        node.update({"op": "mul", "lhs": root, "rhs": copy.deepcopy(root)})
        return True

    return _rewrite_typed(golden, rewrite)


def _reciprocal(golden: dict) -> int:
    """Rewrite each f32 division of a tile by a literal, a scalar or a smaller tile broadcast
    over it (one value per row: a norm, a sum) as a multiplication by the divisor's reciprocal,
    taken once per divisor element: what ATen's
    own kernels do for a constant (hardsigmoid multiplies by 1/6) and what Inductor's ``/``
    costs (the 2-ulp ``div.full.f32``), against the correctly rounded ``div.rn.f32`` per element
    that the language's ``div`` lowers to. Returns how many were rewritten."""
    def rewrite(node: dict, types: _Types, looped: bool) -> bool:
        lhs, rhs, result = types["lhs"], types["rhs"], types[""]
        if not (node.get("op") == "div" and lhs is not None and rhs is not None and result is not None
                and result.dtype == "f32" and math.prod(rhs.shape) < math.prod(lhs.shape)):
            return False
        divisor = node["rhs"]
        node["op"] = "mul"
        node["rhs"] = (1.0 / divisor if isinstance(divisor, (int, float)) and divisor
                       else {"op": "div", "lhs": 1.0, "rhs": divisor})
        return True

    return _rewrite_typed(golden, rewrite)


def _swap_grid(launch: dict) -> None:
    """Swap a launch's first two grid axes and the body's axis 0 and 1 program ids with them."""
    grid = launch.get("grid") or []
    if len(grid) < 2:
        raise SystemExit(f"grid=swap: launch {launch.get('name')!r} has a one-axis grid")
    grid[0], grid[1] = grid[1], grid[0]
    for op in ("program_id", "num_programs"):
        for node in _nodes(launch["body"], op, []):
            axis = node.get("axis", 0)
            if axis in (0, 1):
                node["axis"] = 1 - axis


def apply(golden: dict, spec: str, bench_sizes: dict[str, int] | None = None) -> dict:
    """The golden with the spec's changes (see the module docstring)."""
    launches = golden.get("launches") or [golden]
    loads = _nodes(golden, "load", [])
    for item in spec.split():
        name, _, value = item.partition("=")
        if not value:
            raise SystemExit(f"{item!r}: a spec item is NAME=VALUE")
        if name == "literal":
            names = list(bench_sizes or {}) if value == "*" else value.split(",")
            sizes = {size: (bench_sizes or {})[size] for size in names}
            for launch in launches:  # the grids keep the names: the checker proves bounds against them
                launch["body"] = _literal(launch["body"], sizes)
        elif name == "divide" and value == "reciprocal":
            if not _reciprocal(golden):
                raise SystemExit(f"{item!r}: the golden divides no f32 tile by a literal, a scalar or a broadcast tile")
        elif name == "divide" and value == "rsqrt":
            if not _rsqrt_weights(golden):
                raise SystemExit(f"{item!r}: no for loop of the golden divides 1.0 by a scalar")
        elif name == "grid" and value == "swap":
            for launch in launches:
                _swap_grid(launch)
        elif name in ("warps", "stages"):
            for launch in launches:
                launch["num_" + name] = int(value)
        elif name == "loop_stages":
            loops = _nodes(golden, "for", [])
            if not loops:
                raise SystemExit(f"{item!r}: the golden has no for loop")
            for loop in loops:
                loop["num_stages"] = int(value)
        elif name == "unroll" or re.fullmatch(r"loop\d+_unroll", name):
            loops = _nodes(golden, "for", [])
            chosen = loops if name == "unroll" else loops[int(name[4:-7]):int(name[4:-7]) + 1]
            if not chosen:
                raise SystemExit(f"{item!r}: the golden has {len(loops)} for loops")
            for loop in chosen:
                loop["unroll"] = int(value)
        elif re.fullmatch(r"load\d+", name):
            index = int(name[4:])
            if index >= len(loads):
                raise SystemExit(f"{item!r}: the golden has {len(loads)} loads")
            loads[index]["cache"] = value
        else:
            meta = {m["name"]: m for m in golden.get("meta", [])}
            if name not in meta:
                raise SystemExit(f"{item!r}: the golden has no meta value {name!r} (it has {sorted(meta)})")
            meta[name]["value"] = int(value)
    return golden


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the variant bench folder (KERNELGEN_BENCH_DIR)")
    parser.add_argument("items", nargs="+", help="TIER/TASK SPEC... [+ TIER/TASK SPEC...]")
    args = parser.parse_args()
    groups: list[list[str]] = [[]]
    for item in args.items:
        if item == "+":
            groups.append([])
        else:
            groups[-1].append(item)
    for group in filter(None, groups):
        task_path, specs = group[0], group[1:]
        tier, task = task_path.split("/")
        source = yaml.safe_load((BENCH / tier / f"{task}.yaml").read_text())
        (args.out / tier).mkdir(parents=True, exist_ok=True)
        for k, spec in enumerate(["", *specs]):
            variant = copy.deepcopy(source)
            variant["golden"] = apply(variant["golden"], spec, source.get("bench_sizes"))
            path = args.out / tier / f"{task}_v{k}.yaml"
            path.write_text(yaml.safe_dump(variant, sort_keys=False))
            print(f"{path}: {spec or 'as written'}", file=sys.stderr)


if __name__ == "__main__":
    main()
