"""The prompt: what a model is told about the kernel language, the task and the answer format.

Nothing in it is written twice by hand. The language reference is rendered from the compact
JSON schema (:func:`kernelgen.lang.schema.kernel_schema`, itself generated from the Pydantic models
of :mod:`kernelgen.lang.nodes`) with each node's docstring, which states the node's rules (with
the diagnostic code each raises) and its numeric semantics; the host expressions, the typing
rules and what the bounds check proves are the bullet lists of the host's, the checker's and
the bounds check's module docstrings; the diagnostic codes are the registry
:data:`kernelgen.lang.rules.RULES`; the worked examples are the files under ``examples/``. A change
to the language changes the prompt with it.

The system prompt (reference, examples, answer format) is kept within
:data:`SYSTEM_PROMPT_TOKEN_BUDGET`; ``kernelgen prompt --tokens`` prints its size.

A repair prompt (:func:`repair_messages`) shows the model its previous answer with the
diagnostics (JSON path, code, message) and asks for the corrected whole document. It stays one
system and one user message, so every provider, including the bare-prompt ones, sees the same.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Literal, Sequence

from pydantic import BaseModel, ConfigDict

from kernelgen.check import bounds

from kernelgen.host import plan as host
from kernelgen.check import checker
from kernelgen.lang import nodes as L
from kernelgen.errors import Diagnostic, SchemaError
from kernelgen.lang.limits import MAX_NAME_LENGTH
from kernelgen.lang.parse import kernel_from_obj
from kernelgen.lang.rules import RULES
from kernelgen.lang.schema import kernel_schema

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"
# The system prompt with its default examples, in bytes/4 (no tokenizer's data is at hand
# offline): 4437 before the reference became the complete manual (issue 14), which was to
# grow it by at most 30%. The reference comes first; worked examples are added, smallest
# first, in what it leaves (:func:`example_budget`), so a longer manual shows fewer examples
# rather than a longer prompt. Wave 2 (issue 16) grows the language by atomics, several
# launches, if/else, scans, sort and random numbers: their manual text gets about 1900 tokens
# more (5768 -> 7680), still a small part of any served model's context. Tiles (TMA copies,
# what GEMMs and attention need to reach cuBLAS and SDPA on sm_90; issue 17) take about 250
# more; the budget grows by 512 so that three worked examples still fit (7680 -> 8192). Wave 3's
# verdicts (issue 31: program orders, reads of memory nothing wrote, duplicate lanes, the memory
# budget, and the verification codes a repair round can show) take about 200 more (8192 -> 8448).
# Issue 34 (operators as PyTorch defines them) takes about 880 more: derived dtypes
# (acc_of/float_of, PyTorch's compute and result dtypes of a dtype variable) about 100; i8, u8
# and i16 with their rules and the i8 dot about 100; the barrier (and missing_barrier), join,
# round, finfo/iinfo and i64 sorts about 300; the host side (optional scalars and ints, tuples of
# floats, call shapes, in-place outputs, host values and conditionals, and the host rules the
# checker enforced unsaid) about 380. The budget grows by the least that keeps three worked
# examples (8448 -> 9285), within the 10240 the issue allows. Issue 31: the memory order of
# atomics (release/acquire between a program's update and another's reliance on it, and
# unordered_read) takes about 95 more (9285 -> 9380), again the least that keeps three examples.
# Aliasing outputs (Output alias, aliased_input: in-place operators that store only what they
# change) take about 55 more, with Output's text tightened (9380 -> 9434), the least again.
# Issue 33: what a division per element costs (div.rn's slow path: a reciprocal taken once ran up
# to 1.27x as fast on the H200), and the softmax example multiplying by its sum's reciprocal,
# take 52 more (9434 -> 9486), the least again. Which grid axis to put the column blocks on (axis
# 0 is dispatched first; measured up to 5% on an H100) takes 40 more (9486 -> 9526), the least again.
# A loop's unroll and meta values by dtype binding (one kernel's f16 and f32 calls with the tiles
# each can hold in shared memory) take 145 more (9526 -> 9671), the least again. That a pipelined
# loop must not load what it stored in a recent trip (stale_pipelined_load) takes 55 more
# (9671 -> 9726), the least again. That a tile_store's elements are not accessed again in the launch,
# nor a store's by a tile access (TMA copies are unordered: tile_proxy_order), takes 66 more (9726 -> 9792).
# That a scalar (a block of fewer elements than threads) is stored by one thread and loaded by all, so
# read back into another shape it needs a barrier (red-team round 32), takes 35 more (9792 -> 9827), the least again.
# That a scalar atomic is one thread's (its release, and its read of other lanes' atomics, need a barrier
# first: round 33) takes 37 more (9827 -> 9864), the least again. That a lane is the thread Triton lays
# each access on (by its pointer's contiguity and dtype), and that a reduction across warps is a barrier
# (rounds 32, 33: kernelgen.gpu.layouts), takes 30 more (9864 -> 9894), the least again.
SYSTEM_PROMPT_TOKEN_BUDGET = 9894

ANSWER_FORMAT = (
    "Answer with exactly one JSON document: the kernel AST, an object with the fields of "
    "Kernel above. No prose, no Markdown fences, no comments, nothing before or after it.")

# Short names for the schema's shared definitions, explained once in the notation line.
_ABBREVIATIONS = {"Expr": "E", "Stmt": "S", "Name": "name", "Dim": "dim"}
_TYPE_NAMES = {"integer": "int", "number": "number", "boolean": "bool", "string": "string",
               "null": "null", "object": "object"}


class Message(BaseModel):
    """One message of a chat prompt."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str


# ---------------------------------------------------------------------------------------------
# Token counts


@dataclass(frozen=True)
class TokenCount:
    """A number of tokens and how it was obtained: ``tokenizer:<name>`` (exact, the model's
    own), ``tiktoken:<encoding>`` (a close estimate for most BPE models) or ``bytes/4``."""

    count: int
    method: str


def count_tokens(text: str, tokenizer: Any = None) -> TokenCount:
    """Count with the model's tokenizer (a transformers tokenizer) when given, else estimate."""
    if tokenizer is not None:
        name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
        return TokenCount(len(tokenizer.encode(text, add_special_tokens=False)), f"tokenizer:{name}")
    encoding = _tiktoken_encoding()
    if encoding is not None:
        return TokenCount(len(encoding.encode(text, disallowed_special=())), f"tiktoken:{encoding.name}")
    return TokenCount(bytes_estimate(text), "bytes/4")


def bytes_estimate(text: str) -> int:
    """Tokens as UTF-8 bytes / 4: the estimate with no tokenizer, and the unit of the prompt's
    budget (the same on every machine, whatever tokenizer is installed)."""
    return math.ceil(len(text.encode("utf-8")) / 4)


@functools.lru_cache(maxsize=1)
def _tiktoken_encoding() -> Any:
    """tiktoken's cl100k encoding when tiktoken is installed and its data is at hand (it is
    downloaded on first use, which fails offline: then the estimate is bytes/4)."""
    if importlib.util.find_spec("tiktoken") is None:
        return None
    import tiktoken

    try:
        return tiktoken.get_encoding("cl100k_base")
    except Exception:  # any failure to fetch its data means: no tiktoken here
        return None


# ---------------------------------------------------------------------------------------------
# The language reference


def _docstring_section(doc: str, heading: str) -> str:
    """The bullet list under the line of ``doc`` that starts with ``heading``."""
    lines = doc.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(heading)]
    if not starts:
        raise LookupError(f"the docstring has no section {heading!r} for the prompt")
    section: list[str] = []
    for line in lines[starts[0] + 1:]:
        if not line.strip():
            if section:
                break
            continue
        if section and not line.lstrip().startswith("* "):
            section[-1] += " " + line.strip()  # a bullet's continuation: one line per bullet
        else:
            section.append(line)
    return "\n".join(section).replace("``", "`")


def _render(node: dict[str, Any]) -> str:
    """A schema node in the reference's notation: ``E``, ``[dim]``, ``"f32"|"f16"``."""
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return _ABBREVIATIONS.get(name, name)
    if "const" in node:
        return json.dumps(node["const"])
    if "enum" in node:
        if tuple(node["enum"]) == L.DTYPES:
            return "dtype"
        return "|".join(json.dumps(v) for v in node["enum"])
    if "anyOf" in node:
        return "|".join(_render(option) for option in node["anyOf"])
    kind = node.get("type")
    if kind == "array":
        count = ""
        if "minItems" in node or "maxItems" in node:
            low, high = node.get("minItems", 0), node.get("maxItems")
            count = f"{{{low}..{high}}}" if high is not None else f"{{{low}+}}"
        return f"[{_render(node['items'])}]{count}"
    kinds = kind if isinstance(kind, list) else [kind]
    return "|".join(_TYPE_NAMES.get(k, "any") for k in kinds)


def _render_object(node: dict[str, Any]) -> str:
    required = set(node.get("required", ()))
    fields = []
    for key, value in node["properties"].items():
        text = f'"{key}"' + ("" if key in required else "?") + ":" + _render(value)
        if "default" in value and value["default"] != []:
            text += f"={json.dumps(value['default'])}"
        fields.append(text)
    return "{" + ",".join(fields) + "}"


def _doc(name: str) -> str:
    model = getattr(L, name, None)
    doc = (model.__dict__.get("__doc__") or "") if model is not None else ""
    return " ".join(doc.split()).replace("``", "`")


def _object_refs(node: Any, shared: set[str]) -> list[str]:
    """The object definitions ``node`` refers to, in order, leaving out the shared ones."""
    found: list[str] = []

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            ref = value.get("$ref", "").rsplit("/", 1)[-1]
            if ref and ref not in shared and ref not in found:
                found.append(ref)
            for item in value.values():
                visit(item)
        elif isinstance(value, list):
            for item in value:
                visit(item)

    visit(node)
    return found


def _entry(name: str, node: dict[str, Any]) -> str:
    doc = _doc(name)
    return f"{name} {_render_object(node)}" + (f"  {doc}" if doc else "")


@functools.lru_cache(maxsize=1)
def language_reference() -> str:
    """The kernel language, compactly: the document, its statements and its operations."""
    schema = kernel_schema()
    defs = schema["$defs"]
    statements = [r["$ref"].rsplit("/", 1)[-1] for r in defs["Stmt"]["anyOf"]]
    operations = [r["$ref"].rsplit("/", 1)[-1] for r in defs["Expr"]["anyOf"] if "$ref" in r]
    shared = set(_ABBREVIATIONS) | set(statements) | set(operations)
    # Each section lists its nodes followed by the parts they are made of (For: Carry).
    document = ["Kernel", *_object_refs(schema["properties"], shared)]
    document += _object_refs([defs[n] for n in document[1:]], shared | set(document))  # Output: CallShape
    statements += _object_refs([defs[s] for s in statements], shared)
    defs = {**defs, "Kernel": schema}
    title, intro = (" ".join(p.split()).replace("``", "`") for p in L.__doc__.split("\n\n")[:2])
    literals = ", ".join(json.dumps(n) for n in L.FLOAT_LITERAL_NAMES)
    lines = [
        f"# {title}",
        intro,
        "",
        f"Notation: E = expression (a name, a number, true/false, {literals}, or an operation "
        f"object); S = statement; name = identifier {defs['Name']['pattern']} of at most "
        f"{MAX_NAME_LENGTH} characters, not {' or '.join(json.dumps(n) for n in L.FLOAT_LITERAL_NAMES if n.isidentifier())}"
        "; dim = block "
        "dimension: a power-of-two int or a meta name; dtype = "
        + "|".join(L.DTYPES) + '. "key"?: optional (=default). [T]{1..3}: a list of 1 to 3 T.',
        "",
        "## The document",
        *(_entry(n, defs[n]) for n in document),
        "",
        "## Host expressions",
        _docstring_section(host.__doc__ or "", "Host expressions"),
        "",
        "## Statements (S)",
        *(_entry(n, defs[n]) for n in statements),
        "",
        "## Operations (E objects)",
        *(_entry(n, defs[n]) for n in operations),
        "",
        "## Typing rules",
        _docstring_section(checker.__doc__ or "", "Typing rules"),
        "",
        "## Bounds: what the checker proves about an unmasked load or store",
        _docstring_section(bounds.__doc__ or "", "Bounds: what the checker proves"),
        "",
        "## Diagnostic codes (code: condition)",
        *(f"{code}: {condition}" for code, condition in RULES.items()),
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Worked examples


@dataclass(frozen=True)
class Example:
    name: str
    text: str
    document: Any


def load_examples(directory: Path = EXAMPLES_DIR) -> list[Example]:
    """The example kernels under ``directory``, compact, smallest first."""
    examples = []
    for path in sorted(directory.glob("*.json")):
        document = json.loads(path.read_text())
        examples.append(Example(path.stem, json.dumps(document, separators=(",", ":")), document))
    return sorted(examples, key=lambda e: (len(e.text), e.name))


def example_budget() -> int:
    """Tokens (bytes/4) left for worked examples in the system prompt's budget: the budget less
    the prompt without examples and the section's heading."""
    return SYSTEM_PROMPT_TOKEN_BUDGET - bytes_estimate(system_prompt(())) - bytes_estimate("# Worked examples\n\n")


def select_examples(examples: Sequence[Example], *, budget: int | None = None,
                    exclude_names: Iterable[str] = (), exclude_document: Any = None) -> list[Example]:
    """Examples in order while they fit the token budget, leaving out any that would give the
    task's answer away: one named like the task, or the same AST as its golden answer. The
    budget defaults to :func:`example_budget`; each example costs its text and its heading."""
    if budget is None:
        budget = example_budget()
    excluded = set(exclude_names)
    golden = _canonical(exclude_document) if exclude_document is not None else None
    chosen, used = [], 0
    for example in examples:
        if example.name in excluded or example.document.get("name") in excluded:
            continue
        if golden is not None and _canonical(example.document) == golden:
            continue
        cost = bytes_estimate(f"## {example.name}\n{example.text}\n")
        if used + cost > budget:
            break
        chosen.append(example)
        used += cost
    return chosen


def _canonical(document: Any) -> Any:
    """A kernel document with every field spelled out, for comparing ASTs."""
    try:
        return kernel_from_obj(document).model_dump(mode="json")
    except SchemaError:
        return document


# ---------------------------------------------------------------------------------------------
# Prompts


def system_prompt(examples: Sequence[Example] = ()) -> str:
    sections = [language_reference()]
    if examples:
        sections.append("# Worked examples\n" + "\n".join(f"## {e.name}\n{e.text}" for e in examples))
    sections.append("# Answer format\n" + ANSWER_FORMAT)
    return "\n\n".join(sections)


def task_messages(task_prompt: str, *, task_id: str | None = None, golden: Any = None,
                  examples: Sequence[Example] | None = None) -> tuple[Message, ...]:
    """The messages for a task: the language and examples (system), the task (user).

    ``golden`` (the task's golden AST as a JSON object) keeps an identical example out.
    """
    if examples is None:
        examples = select_examples(load_examples() if EXAMPLES_DIR.is_dir() else [],
                                   exclude_names=[task_id] if task_id else [],
                                   exclude_document=golden)
    return (Message(role="system", content=system_prompt(examples)),
            Message(role="user", content=task_prompt.strip()))


def format_diagnostics(diagnostics: Sequence[Diagnostic]) -> str:
    return "\n".join(f"- {d.path or '/'}: {d.code}: {d.message}" for d in diagnostics)


def repair_messages(messages: Sequence[Message], answer: str,
                    diagnostics: Sequence[Diagnostic]) -> tuple[Message, ...]:
    """The task's messages with the previous answer and what is wrong with it.

    Only the latest answer is shown, so the prompt does not grow round after round.
    """
    system, task = messages[0], messages[-1]
    repair = (f"{task.content}\n\n# Your previous answer\n{answer.strip()}\n\n"
              "# What is wrong with it (JSON path: code: message)\n"
              f"{format_diagnostics(diagnostics)}\n\n"
              "Write the corrected kernel: the whole document again, not a patch. "
              + ANSWER_FORMAT)
    return (system, Message(role="user", content=repair))
