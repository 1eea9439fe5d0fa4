"""Python signatures as data: from a parsed ``def``, or from the text that opens a TritonBench-T
prompt's ``Wrapper Entry Information`` (which is sometimes a signature and sometimes prose).

Both the dataset reader (:mod:`kernelgen.tritonbench.loader`) and the static reading of perf
scripts (:mod:`kernelgen.tritonbench.perf_script`) read ``def``s this way.
"""

from __future__ import annotations

import ast
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def top_functions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions a module (or a class body, wrapped as one) defines at its top level."""
    return {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


ParamKind = Literal["positional_only", "positional_or_keyword", "var_positional", "keyword_only",
                    "var_keyword"]


class SignatureParam(_Frozen):
    """``default`` and ``annotation`` are Python source text; ``default`` is None for a
    required parameter."""

    name: str
    kind: ParamKind
    default: str | None = None
    annotation: str | None = None


class WrapperSignature(_Frozen):
    name: str
    params: list[SignatureParam]
    returns: str | None = None

    def render(self, annotations: bool = True) -> str:
        """The signature as Python writes it: ``div(input, other, *, rounding_mode=None)``."""
        parts: list[str] = []
        for i, p in enumerate(self.params):
            if p.kind == "keyword_only" and (i == 0 or self.params[i - 1].kind not in
                                             ("keyword_only", "var_positional")):
                parts.append("*")
            text = {"var_positional": "*", "var_keyword": "**"}.get(p.kind, "") + p.name
            if annotations and p.annotation:
                text += f": {p.annotation}"
            if p.default is not None:
                text += f" = {p.default}" if annotations and p.annotation else f"={p.default}"
            parts.append(text)
            if p.kind == "positional_only" and (i + 1 == len(self.params)
                                                or self.params[i + 1].kind != "positional_only"):
                parts.append("/")
        returns = f" -> {self.returns}" if annotations and self.returns else ""
        return f"{self.name}({', '.join(parts)}){returns}"

    def __str__(self) -> str:
        return self.render()


def signature_of(function: ast.FunctionDef | ast.AsyncFunctionDef) -> WrapperSignature:
    """The signature of a parsed ``def``."""
    a = function.args

    def param(arg: ast.arg, kind: ParamKind, default: ast.expr | None) -> SignatureParam:
        return SignatureParam(name=arg.arg, kind=kind,
                              default=None if default is None else ast.unparse(default),
                              annotation=None if arg.annotation is None else ast.unparse(arg.annotation))

    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    params = [param(arg, "positional_only" if i < len(a.posonlyargs) else "positional_or_keyword",
                    default) for i, (arg, default) in enumerate(zip(positional, defaults))]
    if a.vararg:
        params.append(param(a.vararg, "var_positional", None))
    params += [param(arg, "keyword_only", default) for arg, default in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        params.append(param(a.kwarg, "var_keyword", None))
    return WrapperSignature(name=function.name, params=params,
                            returns=None if function.returns is None else ast.unparse(function.returns))


# No space before "(": "input (Tensor): ..." opens a parameter's prose, not a signature.
_SIGNATURE_START = re.compile(r"\s*(?:def\s+)?([A-Za-z_][\w.]*)\(")


def _balanced_end(text: str, start: int) -> int | None:
    """The index just past the bracket that closes ``text[start]``, skipping quoted strings."""
    closing = {"(": ")", "[": "]", "{": "}"}
    stack: list[str] = []
    i = start
    while i < len(text):
        ch = text[i]
        if ch in "'\"":
            end = text.find(ch, i + 1)
            if end < 0:
                return None
            i = end
        elif ch in closing:
            stack.append(closing[ch])
        elif stack and ch == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    return None


def _annotation_at(text: str, at: int) -> str | None:
    """The annotation starting at ``text[at]``: a bracketed group, or a dotted name with an
    optional ``[...]`` subscript."""
    if text[at:at + 1] in ("(", "["):
        end = _balanced_end(text, at)
        return text[at:end] if end else None
    name = re.match(r"[A-Za-z_][\w.]*", text[at:])
    if not name:
        return None
    end = at + name.end()
    if text[end:end + 1] == "[":
        end = _balanced_end(text, end) or end
    return text[at:end]


def parse_wrapper_entry(text: str) -> WrapperSignature | None:
    """The Python signature that opens a prompt's ``Wrapper Entry Information``, or None when
    it opens with prose. The name may be dotted (``linalg.svd``); the return annotation is the
    first bracketed group or dotted name after ``->`` (the prose after it is not code)."""
    match = _SIGNATURE_START.match(text)
    if not match:
        return None
    end = _balanced_end(text, match.end() - 1)
    if end is None:
        return None
    try:
        function = ast.parse(f"def _{text[match.end() - 1:end]}: pass").body[0]
    except SyntaxError:
        return None
    assert isinstance(function, ast.FunctionDef)
    arrow = re.match(r"\s*->\s*", text[end:])
    returns = _annotation_at(text, end + arrow.end()) if arrow else None
    signature = signature_of(function)
    return signature.model_copy(update={"name": match.group(1), "returns": returns})
