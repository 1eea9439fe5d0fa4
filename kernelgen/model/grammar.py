"""The answer's grammar (xgrammar), compiled from the kernel schema: for constrained decoding and
for validating answers that were not constrained.

Two compilations of the same schema, for two jobs:

* :func:`compile_grammar` for decoding (``kernelgen serve``, the ``hf`` provider): properties in
  schema order ("op" first) and compact separators, so a model spends no tokens on whitespace
  and cannot loop on it;
* the validation grammar behind :func:`validate_answer`: any key order and any whitespace,
  because a JSON object's key order and layout mean nothing, and Pydantic accepts them too; an
  answer is judged on its content, not on the layout a server's decoder happened to choose.

Both are cached per schema text (the schema hash identifies it), so a grammar is compiled once
per process. xgrammar (and the torch it imports) is imported where used.
"""

from __future__ import annotations

import functools
import json
import threading
from dataclasses import dataclass
from typing import Any

from kernelgen.errors import Diagnostic, SchemaError, require
from kernelgen.lang.nodes import Kernel
from kernelgen.lang.parse import json_pointer, parse_kernel
from kernelgen.lang.schema import schema_text

CONTEXT_CHARS = 40

_compilers: dict[int, tuple[Any, Any]] = {}
_compiled: dict[tuple[int, str], Any] = {}
_lock = threading.Lock()


def _xgrammar() -> Any:
    return require("xgrammar", "the kernel grammar", "llm")


def compile_grammar(tokenizer_info: Any, schema: str | None = None) -> Any:
    """The decoding grammar for a tokenizer (an ``xgrammar.TokenizerInfo``), compiled once per
    tokenizer and schema text; use it with ``xgrammar.contrib.hf.LogitsProcessor`` or a
    ``GrammarMatcher``."""
    xgr = _xgrammar()
    schema = schema if schema is not None else schema_text()
    key = (id(tokenizer_info), schema)
    with _lock:
        if key not in _compiled:
            if id(tokenizer_info) not in _compilers:
                # The table holds tokenizer_info itself, so that its id cannot be reused.
                _compilers[id(tokenizer_info)] = (tokenizer_info, xgr.GrammarCompiler(tokenizer_info))
            compiler = _compilers[id(tokenizer_info)][1]
            _compiled[key] = compiler.compile_json_schema(
                schema, any_whitespace=False, separators=(",", ":"), strict_mode=True)
        return _compiled[key]


@functools.lru_cache(maxsize=4)
def _validation_grammar(schema: str) -> Any:
    xgr = _xgrammar()
    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False)
    return compiler.compile_json_schema(schema, any_whitespace=True, any_order=True, strict_mode=True)


@dataclass(frozen=True)
class PrefixMatch:
    """The longest prefix of a text that the grammar accepts: its ``length`` in characters, and
    whether it is a ``complete`` document (rather than the start of one)."""

    length: int
    complete: bool


def match_prefix(text: str, schema: str | None = None) -> PrefixMatch:
    """How far the schema's grammar accepts ``text``.

    Whitespace around the document is not part of it: a text is one valid document when the
    match is complete and reaches ``len(text.rstrip())``.
    """
    xgr = _xgrammar()
    matcher = xgr.GrammarMatcher(_validation_grammar(schema if schema is not None else schema_text()),
                                 terminate_without_stop_token=True)
    lead = len(text) - len(text.lstrip())
    body = text.strip()
    if matcher.accept_string(body):
        return PrefixMatch(lead + len(body), matcher.is_terminated())
    # Acceptance is monotone in the prefix, and a rejected string leaves the matcher as it was,
    # so a binary search over prefix lengths finds the first rejected character.
    low, high = 0, len(body)  # body[:low] is accepted, body[:high] is not
    while high - low > 1:
        middle = (low + high) // 2
        if matcher.accept_string(body[:middle]):
            matcher.rollback(1)
            low = middle
        else:
            high = middle
    complete = matcher.accept_string(body[:low]) and matcher.is_terminated()
    return PrefixMatch(lead + low, complete)


def pointer_at(prefix: str) -> str:
    """The JSON pointer of the value being written at the end of ``prefix``, a prefix of a
    JSON document: where an answer stops or goes wrong."""
    stack: list[list[Any]] = []  # [kind, key or index, expecting a key]
    in_string = escaped = False
    string_start = 0
    for i, char in enumerate(prefix):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                top = stack[-1] if stack else None
                if top is not None and top[0] == "object" and top[2]:
                    top[1] = _json_string(prefix[string_start:i + 1])
            continue
        if char == '"':
            in_string, string_start = True, i
        elif char == "{":
            stack.append(["object", None, True])
        elif char == "[":
            stack.append(["array", 0, False])
        elif char in "}]":
            if stack:
                stack.pop()
        elif char == ":" and stack and stack[-1][0] == "object":
            stack[-1][2] = False
        elif char == "," and stack:
            if stack[-1][0] == "array":
                stack[-1][1] += 1
            else:
                stack[-1][1:] = [None, True]
    return json_pointer([entry[1] for entry in stack if entry[1] is not None])


def _json_string(literal: str) -> str:
    try:
        return json.loads(literal)
    except ValueError:
        return literal.strip('"')


def _where(text: str, position: int) -> str:
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    before = text[max(0, position - CONTEXT_CHARS):position]
    after = text[position:position + 1]
    return f"line {line} column {column}, after {before!r}" + (f" at {after!r}" if after else "")


def grammar_diagnostic(text: str, match: PrefixMatch) -> Diagnostic:
    """What the grammar says about a text that is not one valid document."""
    end = len(text.rstrip())
    path = pointer_at(text[:match.length])
    if not end:
        return Diagnostic(path, "grammar", "the answer is empty")
    if match.length >= end:
        return Diagnostic(path, "grammar", f"the answer ends at character {end} before the "
                                           "document is complete (truncated?)")
    if match.complete:
        extra = len(text) - len(text[match.length:].lstrip())
        return Diagnostic(path, "grammar", f"the document ends at character {match.length} but "
                                           f"the answer goes on ({_where(text, extra)}): "
                                           "answer with the JSON document alone")
    return Diagnostic(path, "grammar", f"the kernel grammar rejects character {match.length} "
                                       f"({_where(text, match.length)})")


def validate_answer(text: str) -> Kernel:
    """A model's answer checked by the grammar and then by the Pydantic model.

    Raises :class:`SchemaError`: first a diagnostic with code ``grammar``, the character
    position where the grammar stopped and the JSON path there, then what
    :func:`~kernelgen.lang.parse.parse_kernel` can say about the same text (a JSON syntax error's
    line and column, or the schema violations by path).
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SchemaError(Diagnostic("", "json_syntax", f"not UTF-8 text (character {exc.start})")) from None
    match = match_prefix(text)
    if match.complete and match.length == len(text.rstrip()):
        return parse_kernel(text)
    diagnostics = [grammar_diagnostic(text, match)]
    try:
        parse_kernel(text)
    except SchemaError as exc:
        diagnostics += [d for d in exc.diagnostics if d not in diagnostics]
    raise SchemaError(diagnostics)
