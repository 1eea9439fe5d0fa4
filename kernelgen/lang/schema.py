"""The kernel AST's JSON schema, compact enough to send with every request.

Pydantic inlines a union at every place it is used; the expression union alone would make the
schema 80 KB. Here every repeated sub-schema (an expression, a statement, a name, a block
dimension) becomes one ``$defs`` entry referenced by ``$ref``; titles, descriptions and
discriminator tables are dropped (the prompt carries the language reference, generated from
the same models' docstrings, see :mod:`kernelgen.model.prompt`); ``oneOf`` becomes ``anyOf`` (the
alternatives are disjoint by construction, and ``anyOf`` is what grammar compilers handle best).

The parser is stricter than the schema where JSON Schema, as grammar compilers take it, has no
words: a key repeated in an object, nesting past :data:`kernelgen.lang.parse.MAX_DEPTH` levels and a
name spelled like a float literal (``inf``, ``nan``) pass the grammar and are schema errors of
:func:`kernelgen.lang.parse.parse_kernel`; so a grammar never refuses what the parser accepts.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from kernelgen.lang.nodes import Kernel

# Fields whose null is a value the author writes (an input's default of None), not an
# omitted option.
_NULL_IS_A_VALUE = ("default",)


def _strip(node: Any, keep_null: bool = False) -> Any:
    if isinstance(node, list):
        return [_strip(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("title", "discriminator", "description"):
            continue
        if key == "properties":
            out[key] = {name: _strip(prop, keep_null=name in _NULL_IS_A_VALUE) for name, prop in value.items()}
            continue
        out["anyOf" if key == "oneOf" else key] = _strip(value)
    if "const" in out or "enum" in out:
        # The value fixes the type; saying it again costs bytes in every node.
        out.pop("type", None)
    options = out.get("anyOf")
    if options is None:
        return out
    if out.get("default", 0) is None and {"type": "null"} in options and not keep_null:
        # An optional field is omitted, never written as null: keep only the real type.
        options = [o for o in options if o != {"type": "null"}]
        del out["default"]
        if len(options) == 1:
            return {**{k: v for k, v in out.items() if k != "anyOf"}, **options[0]}
    # Flatten a union of unions (the expression union nests the operation union).
    flat: list[Any] = []
    for option in options:
        flat.extend(option["anyOf"] if set(option) == {"anyOf"} else [option])
    out["anyOf"] = flat
    return out


def _key(node: Any) -> str:
    return json.dumps(node, sort_keys=True)


def _is_expr(node: Any) -> bool:
    return (isinstance(node, dict) and isinstance(node.get("anyOf"), list)
            and any(isinstance(a, dict) and a.get("type") == "boolean" for a in node["anyOf"])
            and any(isinstance(a, dict) and "$ref" in a for a in node["anyOf"]))


def _is_stmt(node: Any) -> bool:
    return (isinstance(node, dict) and isinstance(node.get("anyOf"), list)
            and {"$ref": "#/$defs/Let"} in node["anyOf"])


def _shared_parts(schema: dict[str, Any]) -> dict[str, Any]:
    """Find the expression union, the identifier string and the dimension union."""
    found: dict[str, Any] = {}

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if "Expr" not in found and _is_expr(node):
                found["Expr"] = node
            if "Stmt" not in found and _is_stmt(node):
                found["Stmt"] = node
            if node.get("type") == "string" and node.get("pattern", "").startswith("^[A-Za-z_]") \
                    and "Name" not in found:
                found["Name"] = node
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(schema)
    name = found["Name"]
    found["Dim"] = {"anyOf": [{"type": "integer"}, name]}
    return found


def _replace(node: Any, table: dict[str, str], skip: int = 0) -> Any:
    if isinstance(node, dict):
        bare = {k: v for k, v in node.items() if k != "default"}
        ref = table.get(_key(bare))
        if ref is not None and not skip:
            return {"$ref": f"#/$defs/{ref}", **({"default": node["default"]} if "default" in node else {})}
        return {k: _replace(v, table) for k, v in node.items()}
    if isinstance(node, list):
        return [_replace(v, table) for v in node]
    return node


@functools.lru_cache(maxsize=1)
def kernel_schema() -> dict[str, Any]:
    """The JSON schema of :class:`~kernelgen.lang.nodes.Kernel`, with shared parts as ``$defs``."""
    schema = _strip(Kernel.model_json_schema())
    shared = _shared_parts(schema)
    table = {_key(part): name for name, part in shared.items()}
    defs = {name: _replace(part, table, skip=1) for name, part in shared.items()}
    # An expression's operation alternatives reference the node definitions already in $defs.
    schema = _replace(schema, table)
    schema["$defs"].update(defs)
    return schema


def schema_text() -> str:
    """The schema serialized compactly, as it is sent and hashed."""
    # Key order is kept: a grammar generates properties in schema order, and "op" comes first.
    return json.dumps(kernel_schema(), separators=(",", ":"))


def schema_hash() -> str:
    return hashlib.sha256(schema_text().encode()).hexdigest()[:16]
