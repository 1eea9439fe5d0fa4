"""Text -> :class:`~kernelgen.lang.nodes.Kernel`, with errors that say where.

A model's answer may be truncated, mistyped or invent operations; every such failure becomes a
:class:`~kernelgen.errors.SchemaError` whose diagnostics carry a JSON pointer into the
document (and the line and column for text that is not JSON), never a traceback.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic

from kernelgen.errors import Diagnostic, SchemaError
from kernelgen.lang.nodes import Kernel
from kernelgen.lang.limits import show_name

MAX_DIAGNOSTICS = 20
# How deeply a document may nest objects and arrays. Every later stage walks expressions
# recursively (the checker, the lowering, pickling for the compile worker, which fails near 190
# levels), so depth is refused here, before anything recurses; 128 levels leave those a margin
# and are far beyond what a kernel needs (a deep expression is split by let bindings).
MAX_DEPTH = 128


def json_pointer(parts: list[str | int]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _pointer_for(loc: tuple[Any, ...], document: Any, kind: str) -> str:
    """Map a Pydantic error location onto the document.

    Pydantic's locations interleave the tags of the unions it tried with the document's keys:
    ``("body", 5, "store", "value", "op", "add", "lhs", "name")`` means the ``lhs`` of the
    ``add`` at ``/body/5/value``, tried as a name. Tags can coincide with keys (the expression
    tag ``op`` followed by the op's own value; the tag ``name``), so a step into the document
    is taken only into a container, or onto the first scalar field that is not such a tag,
    after which the rest are the scalar's own tags. A missing field is named as the last step;
    an unknown or missing op points at the node's ``op`` field.
    """
    parts: list[str | int] = []
    node = document
    steps = list(loc)
    index = 0
    while index < len(steps):
        step = steps[index]
        nxt = steps[index + 1] if index + 1 < len(steps) else None
        if isinstance(node, dict) and step == "op" and nxt is not None and nxt == node.get("op"):
            index += 2  # the expression tag "op", then the op's own value
            continue
        if isinstance(node, dict) and isinstance(step, str) and step in node:
            parts.append(step)
            node = node[step]
            if not isinstance(node, (dict, list)):
                break
        elif isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            parts.append(step)
            node = node[step]
        index += 1
    if isinstance(node, dict):
        if kind == "missing":
            parts.append(steps[-1])
        elif kind in ("union_tag_invalid", "union_tag_not_found"):
            parts.append("op")
    return json_pointer(parts)


def _message(error: dict[str, Any], document: Any, pointer: str) -> tuple[str, str]:
    kind = error["type"]
    if kind == "union_tag_invalid":
        ctx = error.get("ctx", {})
        return "unknown_op", (f"unknown op {ctx.get('tag')!r}; expected one of "
                              f"{ctx.get('expected_tags')}")
    if kind == "union_tag_not_found":
        return "missing_field", "an object here needs an 'op' field"
    if kind == "missing":
        return "missing_field", f"required field {error['loc'][-1]!r} is missing"
    if kind == "extra_forbidden":
        return "unknown_field", f"unknown field {error['loc'][-1]!r}"
    if kind == "literal_error":
        return "bad_value", f"{error['msg'].lower()}, got {error.get('input')!r}"
    if kind in ("recursion_loop", "recursion_depth_exceeded"):
        # Pydantic stops at a fixed depth (older versions call it a cyclic reference, which
        # JSON cannot have).
        return "too_deep", "expressions nest too deeply here; bind inner parts to names with let"
    if kind == "reserved_name":
        return "reserved_name", error["msg"]
    if kind == "string_pattern_mismatch" and pointer.endswith("/dtype"):
        # A dtype field takes a dtype or a dtype variable: one bad_value, as the dtype's own.
        return "bad_value", f"{error.get('input')!r} is neither a dtype nor a dtype variable's capitalized name"
    if kind == "string_pattern_mismatch":
        return "bad_name", f"{show_name(str(error.get('input')))} is not a valid identifier"
    return "bad_type", f"{error['msg']}, got {json.dumps(error.get('input'))[:80]}"


class _DuplicateKeys(dict):
    """A JSON object that named some keys more than once (``duplicates``), as decoded."""

    duplicates: list[str]


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``' object hook: a plain dict, or one that remembers its repeated keys (the
    decoder would silently keep the last value of each)."""
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    marked = _DuplicateKeys(obj)
    marked.duplicates = []
    for key, _ in pairs:
        if key in seen and key not in marked.duplicates:
            marked.duplicates.append(key)
        seen.add(key)
    return marked


def structure_diagnostics(document: Any) -> list[Diagnostic]:
    """What is wrong with a decoded document before its content is read: repeated keys in an
    object, and nesting deeper than :data:`MAX_DEPTH` (found without recursion)."""
    found: list[Diagnostic] = []
    stack: list[tuple[Any, list[str | int]]] = [(document, [])]
    while stack:
        node, parts = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        if len(parts) >= MAX_DEPTH:
            found.append(Diagnostic(json_pointer(parts), "too_deep",
                                    f"the document nests more than {MAX_DEPTH} levels deep here; "
                                    "bind inner parts of expressions to names with let"))
            break
        if isinstance(node, _DuplicateKeys):
            found.extend(Diagnostic(json_pointer(parts + [key]), "duplicate_key",
                                    f"key {show_name(key)} appears more than once in this object")
                         for key in node.duplicates)
        items = node.items() if isinstance(node, dict) else enumerate(node)
        stack.extend((value, parts + [key]) for key, value in reversed(list(items)))
    return found


def kernel_from_obj(document: Any) -> Kernel:
    """Validate a decoded JSON document as a kernel AST."""
    if not isinstance(document, dict):
        raise SchemaError(Diagnostic("", "bad_type",
                                     f"a kernel is a JSON object, got {type(document).__name__}"))
    problems = structure_diagnostics(document)
    if problems:
        raise SchemaError(problems[:MAX_DIAGNOSTICS])
    try:
        return Kernel.model_validate(document)
    except pydantic.ValidationError as exc:
        diagnostics: list[Diagnostic] = []
        seen: set[tuple[str, str]] = set()
        for error in exc.errors(include_url=False):
            pointer = _pointer_for(tuple(error["loc"]), document, error["type"])
            code, message = _message(error, document, pointer)
            if (pointer, code) in seen:
                continue
            seen.add((pointer, code))
            diagnostics.append(Diagnostic(pointer, code, message))
        raise SchemaError(_most_specific(diagnostics)[:MAX_DIAGNOSTICS]) from None


def _most_specific(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """A union that fails reports once per alternative; keep the deepest paths first, and drop
    'wrong type' reports at a path where a more specific one exists."""
    specific = {d.path for d in diagnostics if d.code != "bad_type"}
    kept = [d for d in diagnostics if not (d.code == "bad_type" and d.path in specific)]
    return sorted(kept, key=lambda d: -d.path.count("/"))


def parse_kernel(text: str | bytes) -> Kernel:
    """Parse a model's answer (JSON text) into a kernel AST.

    Raises :class:`SchemaError` with the line and column of a JSON syntax error, or the JSON
    pointer of every schema violation.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SchemaError(Diagnostic("", "json_syntax",
                                         f"not UTF-8 text (byte {exc.start})")) from None
    if not text.strip():
        raise SchemaError(Diagnostic("", "json_syntax", "empty document"))
    try:
        document = json.loads(text, object_pairs_hook=_object)
    except json.JSONDecodeError as exc:
        if exc.msg.startswith("Unterminated string"):
            # Raw newlines are not allowed in JSON strings, so the text ended inside this one.
            reason = "the document ends inside the string that starts here (truncated?)"
        elif exc.pos >= len(text.rstrip()):
            reason = "the document ends early (truncated?)"
        else:
            reason = exc.msg.removesuffix(" at")
        raise SchemaError(Diagnostic("", "json_syntax",
                                     f"line {exc.lineno} column {exc.colno}: {reason}")) from None
    except RecursionError:
        raise SchemaError(Diagnostic("", "json_syntax", "the document nests too deeply")) from None
    return kernel_from_obj(document)


def kernel_to_obj(kernel: Kernel) -> dict[str, Any]:
    """The kernel as a JSON-able object, with the fields its author wrote (an input's
    ``default`` means something even when it is null)."""
    return kernel.model_dump(mode="json", exclude_unset=True)


def kernel_to_json(kernel: Kernel, indent: int | None = None) -> str:
    return json.dumps(kernel_to_obj(kernel), indent=indent,
                      separators=None if indent else (",", ":"))
