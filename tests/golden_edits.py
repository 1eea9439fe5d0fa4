"""Edits of golden ASTs that tests need: a generic golden pinned to one concrete dtype (what a
model writes when it ignores the calls' other dtypes)."""

from __future__ import annotations

import json
from typing import Any


def pinned(answer: str, dtype: str) -> str:
    """``answer`` with every dtype variable replaced by ``dtype`` and the variables dropped (an
    AST without variables comes back unchanged)."""
    kernel = json.loads(answer)
    variables = {v["name"] for v in kernel.pop("dtypes", [])}

    def edit(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: (dtype if k in ("dtype", "binds") and v in variables else edit(v)) for k, v in node.items()}
        if isinstance(node, list):
            return [edit(v) for v in node]
        return node

    return json.dumps(edit(kernel))
