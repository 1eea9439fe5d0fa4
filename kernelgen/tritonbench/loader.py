"""Read a TritonBench-T checkout (github.com/thunlp/TritonBench) as it is, into typed records.

The loader reads the official layout unchanged and absorbs its quirks:

* ``data/TritonBench_T_v1.jsonl`` is, despite its name, ONE JSON array of operator records
  (true JSON Lines is read too). A record's ``name`` is the PyTorch API it is modelled on
  (``torch.div``, ``torch.Tensor.index_fill_``); the operator's id is its file's stem, which is
  what the official evaluator keys on.
* ``data/TritonBench_T_v1/<file>`` holds the PyTorch reference, a line of exactly 146 ``#``,
  then the test: ``def test_<x>()`` filling a dict of results, and a driver line
  ``test_results = test_<x>()`` (sometimes followed by ``print(test_results)``: the official
  evaluator compares stdout, which kernelgen never does). File names are not function names:
  ``Adam.py`` defines ``simple_adam_step``, ``index_fill_.py`` ends in an underscore, and
  reference functions shadow builtins (``max``, ``sum``, ``abs``). Tests allocate on ``cuda``
  and most draw random inputs without seeding.
* ``data/TritonBench_T_{simp,comp}_alpac_v1.json`` hold the prompts (``instruction``,
  ``input``, ``output``). A prompt belongs to the record whose ``description`` contains its
  ``Functional Description``, the rule of the official ``EVAL/eval_T/0_call_acc.py``; the
  prompt's ``Wrapper Entry Information`` is the record's ``func_inputs``, sometimes with no
  signature at all (``torch.mean``'s is prose only).
* ``performance_metrics/perf_T/golden_metrics/<stem>_perf.py`` generate the timing inputs.
  They import a ``performance_utils`` module that is not part of the data, so they are read
  statically (:class:`_PerfScript`), never imported. Their measured results are
  ``golden_results/<stem>.json`` (``<stem>.py.json`` for two operators upstream: SGD, lu).

Nothing here runs dataset code, except :func:`load_reference_namespace` when asked.
"""

from __future__ import annotations

import ast
import functools
import json
import math
import operator as op
import re
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Callable, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from kernelgen.errors import Diagnostic, KernelgenError

RECORDS_FILE = Path("data/TritonBench_T_v1.jsonl")
SOURCES_DIR = Path("data/TritonBench_T_v1")
PROMPT_FILES = {"simp": Path("data/TritonBench_T_simp_alpac_v1.json"),
                "comp": Path("data/TritonBench_T_comp_alpac_v1.json")}
PERF_SCRIPTS_DIR = Path("performance_metrics/perf_T/golden_metrics")
PERF_RESULTS_DIR = Path("performance_metrics/perf_T/golden_results")

SEPARATOR = "#" * 146
"""The line (and nothing else on it) between an operator's reference and its test."""

_PROMPT_SECTIONS = ("Functional Description: ", "Wrapper Entry Information: ", "Math: ", "other: ",
                    "After generation, verify")


class TritonBenchError(KernelgenError):
    """A TritonBench checkout that cannot be read. Each diagnostic's path is the file at fault,
    followed by ``#`` and a JSON pointer when the fault is one field of a JSON file."""

    stage = "tritonbench"


def _problem(path: Path | str, code: str, message: str) -> TritonBenchError:
    return TritonBenchError(Diagnostic(str(path), code, message))


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ---------------------------------------------------------------------------------------------
# The records, as the dataset writes them


class OperatorRecord(BaseModel):
    """One entry of ``TritonBench_T_v1.jsonl``. Unknown keys are ignored, so that a later
    release with more statistics still loads; absent prose fields read as empty."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str
    file: Annotated[str, Field(pattern=r"^[^/\\]+\.py$")]
    func_inputs: str
    description: str
    math: str = ""
    other: str = ""
    example: str = ""
    torch_code: str = ""
    torch_cnt: int
    params_cnt: int
    difficulty: int


class Prompt(BaseModel):
    """One alpaca-format prompt, exactly as the file holds it (other keys are ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    instruction: str
    input: str
    output: str

    def section(self, header: str) -> str | None:
        """The text after ``header`` (e.g. ``"Wrapper Entry Information: "``) up to the next
        section of the instruction, or None where the instruction has no such section."""
        start = self.instruction.find(header)
        if start < 0:
            return None
        start += len(header)
        ends = [i for h in _PROMPT_SECTIONS if (i := self.instruction.find("\n" + h, start)) >= 0]
        return self.instruction[start:min(ends, default=len(self.instruction))]

    @property
    def functional_description(self) -> str:
        """The description the official evaluator matches a prompt to its operator by."""
        text = self.instruction.split("Functional Description: ")[-1]
        return text.split("Wrapper Entry Information:")[0].replace("\n", "")


class Prompts(_Frozen):
    simp: Prompt
    comp: Prompt


# ---------------------------------------------------------------------------------------------
# Wrapper signatures

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


# ---------------------------------------------------------------------------------------------
# Reference and test sources


class ReferenceCode(_Frozen):
    """The part of an operator's file before the separator line: the PyTorch reference.
    ``entry`` is the function the test calls (the wrapper a model's code must define)."""

    source: str
    entry: str
    signature: WrapperSignature


class TestCode(_Frozen):
    """The part after the separator line. ``first_line`` is its first line's number in the
    file. ``seeded``: it seeds a random generator itself (most do not, so a runner that
    compares two runs seeds before each). ``redefines``: reference functions the test part
    defines again, which would shadow the code under test."""

    source: str
    function: str
    first_line: int
    seeded: bool
    redefines: list[str] = []


def split_source(text: str, path: Path | str = "") -> tuple[str, str, int]:
    """Split an operator file at its separator: (reference, test, the test's first line).

    The separator is a line of exactly 146 ``#`` (surrounding whitespace ignored); a longer or
    shorter run of ``#`` is a comment. Where several lines qualify, the last one splits, as the
    official evaluator's ``split("#" * 146)[-1]`` does. ``reference + separator line + test``
    is the file again.
    """
    lines = text.splitlines(keepends=True)
    found = [i for i, line in enumerate(lines) if line.strip() == SEPARATOR]
    if not found:
        raise _problem(path, "missing_separator",
                       "no line of exactly 146 '#' separates the reference from its test")
    at = found[-1]
    return "".join(lines[:at]), "".join(lines[at + 1:]), at + 2


def _parse_python(source: str, path: Path | str, what: str, first_line: int = 1) -> ast.Module:
    """Parse one part of a file; ``first_line`` is where the part starts, for the message."""
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        line = (exc.lineno or 1) + first_line - 1
        raise _problem(path, "bad_python", f"the {what} is not valid Python (line {line}: {exc.msg})") from None


def _top_functions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _called_names(node: ast.AST) -> list[str]:
    """Names called directly (``f(...)``), in order of first appearance."""
    names: dict[str, None] = {}
    for call in ast.walk(node):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
            names.setdefault(call.func.id)
    return list(names)


def _is_driver(statement: ast.stmt, test_function: str) -> bool:
    """A module-level statement of the test part that runs the test or prints its results."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
        return False
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) \
            and isinstance(statement.value.func, ast.Name) and statement.value.func.id == "print":
        return True
    return test_function in _called_names(statement)


def _test_function(tree: ast.Module, path: Path | str) -> str:
    tests = [name for name in _top_functions(tree) if name.startswith("test_")]
    driven = [name for name in tests if any(_is_driver(s, name) for s in tree.body)]
    chosen = driven or tests
    if len(chosen) != 1:
        found = ", ".join(tests) or "none"
        raise _problem(path, "no_test_function",
                       f"expected one module-level 'def test_...()' after the separator, found {found}")
    return chosen[0]


def _entry_function(reference: ast.Module, test: ast.Module, test_function: str,
                    preferred: list[str], path: Path | str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    """The reference function the test calls: the wrapper a model's code must provide.

    Where the test calls several reference functions (helpers), the one named like the prompt's
    signature, the file or the test wins, else the first called.
    """
    defined = _top_functions(reference)
    called = [n for n in _called_names(_top_functions(test)[test_function]) if n in defined]
    for name in [*preferred, *called]:
        if name in defined and (name in called or not called):
            return defined[name]
    raise _problem(path, "no_wrapper",
                   f"{test_function} calls none of the reference's functions ({', '.join(defined) or 'none'})")


def _seeds(tree: ast.Module) -> bool:
    return any(isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
               and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
               in ("manual_seed", "manual_seed_all", "seed")
               for node in ast.walk(tree))


# ---------------------------------------------------------------------------------------------
# Performance inputs and results


class PerfTensor(_Frozen):
    kind: Literal["tensor"] = "tensor"
    shape: list[int]
    dtype: str


class PerfScalar(_Frozen):
    """A plain value passed to the operator (a float, an int tuple, ``torch.float16``)."""

    kind: Literal["scalar"] = "scalar"
    value: JsonValue


class PerfObject(_Frozen):
    """A value the static reading does not model (an ``nn.Linear``, a loss function): its
    source text."""

    kind: Literal["object"] = "object"
    source: str


class PerfInput(_Frozen):
    """In a :class:`PerfCall`: the case's argument at ``index``."""

    kind: Literal["input"] = "input"
    index: int


PerfArg = Annotated[Union[PerfTensor, PerfScalar, PerfObject], Field(discriminator="kind")]
PerfCallArg = Annotated[Union[PerfInput, PerfTensor, PerfScalar, PerfObject], Field(discriminator="kind")]


class PerfCase(_Frozen):
    """One entry of the perf script's ``input_tensors``: the inputs of one timed call."""

    args: list[PerfArg]


class PerfCall(_Frozen):
    """How the script's ``call_op()`` calls the wrapper on a case: ``logsumexp(case[0],
    dim=0)`` is ``args=[PerfInput(0)], keywords={"dim": 0}``."""

    args: list[PerfCallArg]
    keywords: dict[str, PerfCallArg]


class PerfResult(BaseModel):
    """One measured point of ``golden_results``: PyTorch's own time on these inputs."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    input_size: list[JsonValue]
    ms: float
    gbps: float | None = Field(None, alias="GB/s")
    tflops: float | None = Field(None, alias="TFLOPS")


class Perf(_Frozen):
    """``cases`` and ``call`` are None where the script builds its inputs or calls the wrapper
    in a way the static reading cannot follow; ``unresolved`` then says what stopped it."""

    script: Path
    results_file: Path
    cases: list[PerfCase] | None
    call: PerfCall | None
    unresolved: str | None = None
    results: list[PerfResult]


# ---------------------------------------------------------------------------------------------
# The benchmark


class Operator(_Frozen):
    """One TritonBench-T operator. ``name`` is the file's stem (the operator's id);
    ``torch_name`` is the record's ``name``, the PyTorch API it is modelled on."""

    name: str
    torch_name: str
    file: str
    path: Path
    description: str
    func_inputs: str
    math: str
    other: str
    example: str
    torch_code: str
    difficulty: int
    params_cnt: int
    torch_cnt: int
    prompts: Prompts
    reference: ReferenceCode
    test: TestCode
    prompt_signature: WrapperSignature | None
    perf: Perf

    @property
    def wrapper(self) -> str:
        """The function a model's code must define: the one the test calls."""
        return self.reference.entry

    @property
    def signature(self) -> WrapperSignature:
        """The wrapper's signature as the reference defines it (what the test exercises)."""
        return self.reference.signature


class TritonBench(_Frozen):
    root: Path
    operators: list[Operator]

    def operator(self, name: str) -> Operator:
        for operator in self.operators:
            if operator.name == name:
                return operator
        raise KeyError(name)


def load_tritonbench(root: Path | str) -> TritonBench:
    """Read every TritonBench-T operator of the checkout at ``root``, in the records' order.

    Raises :class:`TritonBenchError` for a root that is not a checkout, and otherwise with one
    diagnostic per file at fault across the whole checkout (a missing operator file is
    reported, never skipped).
    """
    root = Path(root)
    missing = [str(p) for p in (RECORDS_FILE, SOURCES_DIR) if not (root / p).exists()]
    if not root.is_dir() or missing:
        why = ("it is not a directory" if not root.is_dir()
               else f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing")
        raise _problem(root, "not_a_checkout", f"{root} is not a TritonBench checkout: {why}")
    records = _read_records(root / RECORDS_FILE)
    prompts = _match_prompts(root, records)
    operators: list[Operator] = []
    diagnostics: list[Diagnostic] = []
    seen: dict[str, int] = {}
    for index, record in enumerate(records):
        stem = record.file.removesuffix(".py")
        if stem in seen:
            diagnostics.append(Diagnostic(f"{root / RECORDS_FILE}#/{index}/file", "duplicate_operator",
                                          f"{record.file} is also the file of record {seen[stem]}"))
            continue
        seen[stem] = index
        try:
            operators.append(_load_operator(root, record, prompts[index]))
        except TritonBenchError as exc:
            diagnostics += exc.diagnostics
    if diagnostics:
        raise TritonBenchError(diagnostics)
    return TritonBench(root=root, operators=operators)


def _read_text(path: Path, missing_code: str = "missing_file", missing: str = "") -> str:
    if not path.is_file():
        raise _problem(path, missing_code, missing or f"{path.name} is missing")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise _problem(path, "bad_encoding", f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _read_json(path: Path) -> Any:
    text = _read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _problem(path, "bad_json", f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None


def _field_problems(exc: ValidationError, where: str) -> list[Diagnostic]:
    """One diagnostic per invalid field of the JSON item at ``where`` (a file#pointer)."""
    return [Diagnostic("/".join([where, *(str(step) for step in error["loc"])]), "bad_record", error["msg"])
            for error in exc.errors()]


def _read_records(path: Path) -> list[OperatorRecord]:
    """The operator records: a JSON array (the released file), or JSON Lines."""
    try:
        document = _read_json(path)
    except TritonBenchError as exc:
        if exc.code != "bad_json":
            raise
        try:
            document = [json.loads(line) for line in _read_text(path).splitlines() if line.strip()]
        except json.JSONDecodeError:
            raise exc from None
    return _validated_array(path, document, OperatorRecord, "operator records")


def _validated_array(path: Path, document: Any, model: Any, what: str) -> list[Any]:
    """Each item of a JSON array as ``model``; every bad field reported at once."""
    if not isinstance(document, list):
        raise _problem(path, "bad_json", f"expected a JSON array of {what}, got {type(document).__name__}")
    items, diagnostics = [], []
    for index, item in enumerate(document):
        try:
            items.append(model.model_validate(item))
        except ValidationError as exc:
            diagnostics += _field_problems(exc, f"{path}#/{index}")
    if diagnostics:
        raise TritonBenchError(diagnostics)
    return items


def _match_prompts(root: Path, records: list[OperatorRecord]) -> list[Prompts]:
    """Each record's simp and comp prompts, matched by description like the official evaluator
    (a prompt's Functional Description is contained in exactly one record's description; an
    exact match breaks a tie)."""
    descriptions = [r.description.replace("\n", "") for r in records]
    found: dict[str, list[Prompt | None]] = {}
    diagnostics: list[Diagnostic] = []
    for kind, relative in PROMPT_FILES.items():
        path = root / relative
        document = _read_json(path)
        if not isinstance(document, list):
            raise _problem(path, "bad_json", f"expected a JSON array of prompts, got {type(document).__name__}")
        slots: list[Prompt | None] = [None] * len(records)
        for index, item in enumerate(document):
            try:
                prompt = Prompt.model_validate(item)
            except ValidationError as exc:
                diagnostics += _field_problems(exc, f"{path}#/{index}")
                continue
            key = prompt.functional_description
            matches = [i for i, d in enumerate(descriptions) if key in d]
            if len(matches) > 1:
                matches = [i for i in matches if descriptions[i].strip() == key.strip()] or matches
            where = f"{path}#/{index}/instruction"
            if not matches:
                diagnostics.append(Diagnostic(where, "unmatched_prompt",
                                              "its Functional Description is in no operator record's description"))
            elif len(matches) > 1:
                names = ", ".join(records[i].file for i in matches)
                diagnostics.append(Diagnostic(where, "ambiguous_prompt", f"its Functional Description matches {names}"))
            elif slots[matches[0]] is not None:
                diagnostics.append(Diagnostic(where, "duplicate_prompt",
                                              f"a second {kind} prompt for {records[matches[0]].file}"))
            else:
                slots[matches[0]] = prompt
        diagnostics += [Diagnostic(str(path), "missing_prompt", f"no {kind} prompt describes {records[i].file}")
                        for i, slot in enumerate(slots) if slot is None]
        found[kind] = slots
    if diagnostics:
        raise TritonBenchError(diagnostics)
    return [Prompts(simp=simp, comp=comp) for simp, comp in zip(found["simp"], found["comp"])]


def _load_operator(root: Path, record: OperatorRecord, prompts: Prompts) -> Operator:
    path = root / SOURCES_DIR / record.file
    stem = record.file.removesuffix(".py")
    text = _read_text(path, "missing_operator_file", f"operator {stem} ({record.name}) has no file {record.file}")
    reference_source, test_source, test_line = split_source(text, path)
    reference = _parse_python(reference_source, path, "reference (before the separator)")
    test = _parse_python(test_source, path, "test (after the separator)", test_line)
    test_function = _test_function(test, path)
    prompt_signature = parse_wrapper_entry(record.func_inputs)
    preferred = [name for name in (prompt_signature.name.split(".")[-1] if prompt_signature else None, stem,
                                   test_function.removeprefix("test_")) if name]
    entry = _entry_function(reference, test, test_function, preferred, path)
    redefined = sorted(set(_top_functions(reference)) & set(_top_functions(test)))
    return Operator(
        name=stem, torch_name=record.name, file=record.file, path=path,
        description=record.description, func_inputs=record.func_inputs, math=record.math,
        other=record.other, example=record.example, torch_code=record.torch_code,
        difficulty=record.difficulty, params_cnt=record.params_cnt, torch_cnt=record.torch_cnt,
        prompts=prompts,
        reference=ReferenceCode(source=reference_source, entry=entry.name, signature=signature_of(entry)),
        test=TestCode(source=test_source, function=test_function, first_line=test_line,
                      seeded=_seeds(test), redefines=redefined),
        prompt_signature=prompt_signature,
        perf=_load_perf(root, stem))


def _load_perf(root: Path, stem: str) -> Perf:
    script = root / PERF_SCRIPTS_DIR / f"{stem}_perf.py"
    results_file = next((p for p in (root / PERF_RESULTS_DIR / f"{stem}.json",
                                     root / PERF_RESULTS_DIR / f"{stem}.py.json") if p.is_file()),
                        root / PERF_RESULTS_DIR / f"{stem}.json")
    source = _read_text(script, missing=f"operator {stem} has no perf script {script.name}")
    document = _read_json(results_file)
    results = _validated_array(results_file, document, PerfResult, "results")
    cases, call, unresolved = _read_perf_script(_parse_python(source, script, "perf script"))
    return Perf(script=script, results_file=results_file, cases=cases, call=call, unresolved=unresolved,
                results=results)


# ---------------------------------------------------------------------------------------------
# Static reading of a perf script's get_input_tensors()


class _Unresolved(Exception):
    """The perf script does something the static reading does not follow."""


@dataclass(frozen=True)
class _Dtype:
    name: str


@dataclass(frozen=True)
class _Tensor:
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class _Ref:
    """A module, class or function known by its dotted name (``torch.nn.Linear``)."""

    dotted: str


@dataclass(frozen=True)
class _Opaque:
    source: str


@dataclass
class _Object:
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Input:
    """In ``call_op()``: the case's argument at ``index``."""

    index: int


class _WrapperCalled(Exception):
    """``call_op()`` reached its call of the operator; reading stops there."""

    def __init__(self, args: list[Any], kwargs: dict[str, Any]) -> None:
        super().__init__()
        self.args_, self.kwargs = args, kwargs


_TORCH_DTYPES = {"float32": "float32", "float": "float32", "float16": "float16", "half": "float16",
                 "bfloat16": "bfloat16", "float64": "float64", "double": "float64", "int64": "int64",
                 "long": "int64", "int32": "int32", "int": "int32", "int16": "int16", "short": "int16",
                 "int8": "int8", "uint8": "uint8", "bool": "bool", "complex64": "complex64",
                 "cfloat": "complex64", "complex128": "complex128", "cdouble": "complex128"}
_DTYPE_METHODS = {"float": "float32", "half": "float16", "double": "float64", "long": "int64", "int": "int32",
                  "bool": "bool", "bfloat16": "bfloat16"}
_SHAPE_KEEPING_METHODS = frozenset({
    "cuda", "cpu", "contiguous", "clone", "detach", "requires_grad_", "abs", "abs_", "exp", "log", "sqrt",
    "neg", "sigmoid", "tanh", "relu", "softmax", "log_softmax", "clamp", "clamp_", "clamp_min", "normal_",
    "uniform_", "fill_", "zero_", "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "pow", "sign",
    "square", "sin", "cos", "exp_", "log_", "sqrt_", "round", "floor", "ceil", "tril", "triu", "pin_memory"})
_FLOAT_FACTORIES = frozenset({"rand", "randn", "zeros", "ones", "empty"})
_LIKE_FACTORIES = frozenset({"rand_like", "randn_like", "zeros_like", "ones_like", "empty_like", "full_like"})
_BINARY = {ast.Add: op.add, ast.Sub: op.sub, ast.Mult: op.mul, ast.Div: op.truediv, ast.FloorDiv: op.floordiv,
           ast.Mod: op.mod, ast.Pow: op.pow}
_COMPARE = {ast.Eq: op.eq, ast.NotEq: op.ne, ast.Lt: op.lt, ast.LtE: op.le, ast.Gt: op.gt, ast.GtE: op.ge,
            ast.Is: op.is_, ast.IsNot: op.is_not, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_BUILTINS: dict[str, Callable[..., Any]] = {
    "range": range, "len": len, "int": int, "float": float, "min": min, "max": max, "abs": abs,
    "round": round, "tuple": tuple, "list": list, "zip": lambda *a: list(zip(*a)),
    "enumerate": lambda *a: list(enumerate(*a)), "bool": bool, "sum": sum}
_MAX_STEPS = 100_000


_OPERATOR_MODULE = "TorchBench_v1."
"""Perf scripts import the operator under test as ``from TorchBench_v1.<op> import <wrapper>``."""


def _read_perf_script(module: ast.Module) -> tuple[list[PerfCase] | None, PerfCall | None, str | None]:
    """The timed cases and the wrapper call of a perf script, each None where the static
    reading cannot follow the script, with what stopped it."""
    script = _PerfScript(module)
    try:
        inputs = script.inputs()
    except _Unresolved as exc:
        return None, None, f"get_input_tensors(): {exc}"
    cases = [PerfCase(args=[_perf_arg(v) for v in _case_args(item)]) for item in inputs]
    try:
        call = script.operator_call(inputs[0] if inputs else ())
    except _Unresolved as exc:
        return cases, None, f"call_op(): {exc}"
    return cases, call, None


def _case_args(item: Any) -> list[Any]:
    return list(item) if isinstance(item, (tuple, list)) else [item]


class _PerfScript:
    """Follows a perf script's ``get_input_tensors()`` and ``call_op()`` on shapes and dtypes
    alone.

    The scripts subclass ``Performance_Metrics`` (absent from the data) and append one tuple
    of arguments per timed call to ``self.input_tensors``, with loops over ``range``, tuple
    unpacking, ``torch.rand(...)``-style factories and ``self.dtype or torch.float32``;
    ``call_op(case)`` unpacks a case and calls the operator. This evaluates exactly those
    constructs: tensors become (shape, dtype) and are never allocated; the constructor's
    defaults bind ``self`` (``self.dtype`` is its ``dtype`` default, as the base class stores
    it); a factory called with ``dtype=None`` gets torch's default float32. Calls it does not
    model (``nn.Linear(...)``) become opaque values; anything else that it cannot follow (a
    ``while`` loop, a helper method) raises :class:`_Unresolved`.
    """

    def __init__(self, module: ast.Module) -> None:
        self.globals: dict[str, Any] = {}
        self.steps = 0
        self.this = _Object()
        self.run([s for s in module.body if isinstance(s, (ast.Import, ast.ImportFrom))], self.globals)
        self.methods = next((_top_functions(ast.Module(body=node.body, type_ignores=[]))
                             for node in module.body if isinstance(node, ast.ClassDef)
                             and any(isinstance(m, ast.FunctionDef) and m.name == "get_input_tensors"
                                     for m in node.body)), {})

    def inputs(self) -> list[Any]:
        """``self.input_tensors`` after the constructor and ``get_input_tensors()`` ran."""
        if "get_input_tensors" not in self.methods:
            raise _Unresolved("no class defines get_input_tensors()")
        init = self.methods.get("__init__")
        if init is not None:
            env: dict[str, Any] = {"self": self.this}
            for p in signature_of(init).params[1:]:
                if p.kind in ("var_positional", "var_keyword"):
                    env[p.name] = () if p.kind == "var_positional" else {}
                elif p.default is not None:
                    env[p.name] = self.eval(ast.parse(p.default, mode="eval").body, env)
            self.this.attrs["dtype"] = env.get("dtype")
            self.run([s for s in init.body if not _calls_super(s)], env)
        self.run(self.methods["get_input_tensors"].body, {"self": self.this})
        inputs = self.this.attrs.get("input_tensors")
        if not isinstance(inputs, list):
            raise _Unresolved("it leaves no list in self.input_tensors")
        return inputs

    def operator_call(self, case: Any) -> PerfCall:
        """The operator call ``call_op()`` makes on a case shaped like ``case``."""
        method = self.methods.get("call_op")
        if method is None or len(method.args.args) != 2:
            raise _Unresolved("no method call_op(self, case)")
        size = len(case) if isinstance(case, (tuple, list)) else None
        marker = _Input(0) if size is None else tuple(_Input(i) for i in range(size))
        try:
            self.run(method.body, {"self": self.this, method.args.args[1].arg: marker})
        except _WrapperCalled as called:
            return PerfCall(args=[_perf_arg(a) for a in called.args_],
                            keywords={k: _perf_arg(v) for k, v in called.kwargs.items()})
        raise _Unresolved(f"it calls nothing imported from {_OPERATOR_MODULE.rstrip('.')}")

    # Statements

    def step(self) -> None:
        self.steps += 1
        if self.steps > _MAX_STEPS:
            raise _Unresolved(f"it runs more than {_MAX_STEPS} steps")

    def run(self, statements: list[ast.stmt], env: dict[str, Any]) -> bool:
        """Run statements; True once a ``return`` ran."""
        for s in statements:
            self.step()
            if isinstance(s, ast.Import):
                for alias in s.names:
                    top = alias.name.split(".")[0]  # "import torch.nn" binds torch
                    env[alias.asname or top] = _Ref(alias.name if alias.asname else top)
            elif isinstance(s, ast.ImportFrom):
                for alias in s.names:
                    env[alias.asname or alias.name] = _Ref(f"{s.module or ''}.{alias.name}")
            elif isinstance(s, ast.Assign):
                value = self.eval(s.value, env)
                for target in s.targets:
                    self.assign(target, value, env)
            elif isinstance(s, ast.AnnAssign) and s.value is not None:
                self.assign(s.target, self.eval(s.value, env), env)
            elif isinstance(s, ast.AugAssign):
                load = ast.Name(s.target.id, ast.Load()) if isinstance(s.target, ast.Name) else s.target
                self.assign(s.target, self.binary(s.op, self.eval(load, env), self.eval(s.value, env)), env)
            elif isinstance(s, ast.For) and not s.orelse:
                for item in self.iterate(self.eval(s.iter, env)):
                    self.step()
                    self.assign(s.target, item, env)
                    if self.run(s.body, env):
                        return True
            elif isinstance(s, ast.If):
                if self.run(s.body if self.truth(self.eval(s.test, env)) else s.orelse, env):
                    return True
            elif isinstance(s, ast.Expr):
                self.eval(s.value, env)
            elif isinstance(s, ast.Return):
                if s.value is not None:
                    self.eval(s.value, env)
                return True
            elif not isinstance(s, ast.Pass):
                raise _Unresolved(f"line {s.lineno}: {type(s).__name__} statements are not followed")
        return False

    def assign(self, target: ast.expr, value: Any, env: dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = self.iterate(value)
            if len(items) != len(target.elts):
                raise _Unresolved(f"line {target.lineno}: cannot unpack {len(items)} values into {len(target.elts)}")
            for t, v in zip(target.elts, items):
                self.assign(t, v, env)
        elif isinstance(target, ast.Attribute) and isinstance(owner := self.eval(target.value, env), _Object):
            owner.attrs[target.attr] = value
        else:
            raise _Unresolved(f"line {target.lineno}: assignment to {ast.unparse(target)}")

    # Expressions

    def eval(self, node: ast.expr, env: dict[str, Any]) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            for table in (env, self.globals):
                if node.id in table:
                    return table[node.id]
            if node.id in _BUILTINS:
                return _Ref(node.id)
            raise _Unresolved(f"line {node.lineno}: {node.id!r} has no value here")
        if isinstance(node, (ast.Tuple, ast.List)):
            items: list[Any] = []
            for element in node.elts:
                if isinstance(element, ast.Starred):
                    items += self.iterate(self.eval(element.value, env))
                else:
                    items.append(self.eval(element, env))
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.Attribute):
            return self.attribute(self.eval(node.value, env), node.attr, node)
        if isinstance(node, ast.BinOp):
            return self.binary(node.op, self.eval(node.left, env), self.eval(node.right, env))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
            value = self.eval(node.operand, env)
            if isinstance(node.op, ast.Not):
                return not self.truth(value)
            if isinstance(value, _Tensor):
                return value
            return self.python(op.neg if isinstance(node.op, ast.USub) else op.pos, value)
        if isinstance(node, ast.BoolOp):
            value = None
            for operand in node.values:
                value = self.eval(operand, env)
                if self.truth(value) == isinstance(node.op, ast.Or):
                    break
            return value
        if isinstance(node, ast.Compare):
            left = self.eval(node.left, env)
            for comparison, right_node in zip(node.ops, node.comparators):
                right = self.eval(right_node, env)
                if not self.python(_COMPARE[type(comparison)], left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return self.eval(node.body if self.truth(self.eval(node.test, env)) else node.orelse, env)
        if isinstance(node, ast.Subscript):
            container, index = self.eval(node.value, env), self.eval(node.slice, env)
            if isinstance(container, (tuple, list, str)):
                return self.python(op.getitem, container, index)
        if isinstance(node, ast.Slice):
            bounds = [None if b is None else self.eval(b, env) for b in (node.lower, node.upper, node.step)]
            return slice(*bounds)
        if isinstance(node, ast.ListComp) and len(node.generators) == 1 and not node.generators[0].is_async:
            generator, out = node.generators[0], []
            for item in self.iterate(self.eval(generator.iter, env)):
                self.step()
                scope = dict(env)
                self.assign(generator.target, item, scope)
                if all(self.truth(self.eval(c, scope)) for c in generator.ifs):
                    out.append(self.eval(node.elt, scope))
            return out
        if isinstance(node, ast.Call):
            return self.call(node, env)
        raise _Unresolved(f"line {node.lineno}: {ast.unparse(node)!r} is not followed")

    def truth(self, value: Any) -> bool:
        if isinstance(value, (_Tensor, _Object, _Input)):
            raise _Unresolved("the truth of a tensor or an object")
        return bool(value)

    def python(self, function: Callable[..., Any], *args: Any) -> Any:
        """A Python operation on plain values, with the failures a script could provoke caught."""
        if any(isinstance(a, (_Tensor, _Ref, _Opaque, _Object, _Input)) for a in args):
            raise _Unresolved(f"{getattr(function, '__name__', 'an operation')} on a modelled value")
        try:
            return function(*args)
        except (TypeError, ValueError, ArithmeticError, IndexError, KeyError) as exc:
            raise _Unresolved(f"{type(exc).__name__}: {exc}") from None

    def iterate(self, value: Any) -> list[Any]:
        if isinstance(value, range) and len(value) > _MAX_STEPS:
            raise _Unresolved(f"a loop of {len(value)} iterations")
        if isinstance(value, (range, tuple, list, str)):
            return list(value)
        raise _Unresolved(f"iteration over {_describe(value)}")

    def binary(self, operator_node: ast.operator, left: Any, right: Any) -> Any:
        if isinstance(left, _Tensor) or isinstance(right, _Tensor):
            return _tensor_binary(operator_node, left, right)
        if isinstance(operator_node, ast.Pow) and isinstance(right, int) and abs(right) > 256:
            raise _Unresolved(f"an exponent of {right}")
        if type(operator_node) not in _BINARY:
            raise _Unresolved(f"the operator {type(operator_node).__name__}")
        return self.python(_BINARY[type(operator_node)], left, right)

    def attribute(self, owner: Any, name: str, node: ast.Attribute) -> Any:
        if isinstance(owner, _Ref):
            if owner.dotted == "torch" and name in _TORCH_DTYPES:
                return _Dtype(_TORCH_DTYPES[name])
            return _Ref(f"{owner.dotted}.{name}")
        if isinstance(owner, _Object) and name in owner.attrs:
            return owner.attrs[name]
        if isinstance(owner, _Tensor):
            if name == "shape":
                return owner.shape
            if name == "dtype":
                return _Dtype(owner.dtype)
            if name == "ndim":
                return len(owner.shape)
            if name == "T":
                return _Tensor(owner.shape[::-1], owner.dtype)
        if isinstance(owner, _Opaque):
            return _Opaque(ast.unparse(node))
        raise _Unresolved(f"line {node.lineno}: {ast.unparse(node)!r} is not followed")

    def call(self, node: ast.Call, env: dict[str, Any]) -> Any:
        args: list[Any] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args += self.iterate(self.eval(a.value, env))
            else:
                args.append(self.eval(a, env))
        if any(k.arg is None for k in node.keywords):
            raise _Unresolved(f"line {node.lineno}: **kwargs in a call")
        kwargs = {k.arg: self.eval(k.value, env) for k in node.keywords if k.arg is not None}
        if isinstance(node.func, ast.Attribute):
            receiver = self.eval(node.func.value, env)
            name = node.func.attr
            if isinstance(receiver, list) and name in ("append", "extend"):
                receiver.append(args[0]) if name == "append" else receiver.extend(self.iterate(args[0]))
                return None
            if isinstance(receiver, dict) and name == "get":
                return self.python(receiver.get, *args)
            if isinstance(receiver, _Tensor):
                return _tensor_method(receiver, name, args, kwargs, node)
            if isinstance(receiver, _Opaque):
                return _Opaque(ast.unparse(node))
            function = self.attribute(receiver, name, node.func)
        else:
            function = self.eval(node.func, env)
        if not isinstance(function, _Ref):
            raise _Unresolved(f"line {node.lineno}: call of {ast.unparse(node.func)}")
        if function.dotted.startswith(_OPERATOR_MODULE):
            raise _WrapperCalled(args, kwargs)
        if function.dotted in _BUILTINS:
            return self.python(functools.partial(_BUILTINS[function.dotted], **kwargs), *args)
        if function.dotted.startswith("math.") and callable(getattr(math, function.dotted[5:], None)):
            return self.python(getattr(math, function.dotted[5:]), *args)
        if function.dotted.startswith("torch.") and "." not in function.dotted[6:]:
            made = _torch_factory(function.dotted[6:], args, kwargs, node)
            if made is not None:
                return made
        return _Opaque(ast.unparse(node))


def _calls_super(statement: ast.stmt) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "super"
               for n in ast.walk(statement))


def _dims(value: Any, node: ast.AST) -> tuple[int, ...]:
    items = value if isinstance(value, (tuple, list)) else (value,)
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in items):
        raise _Unresolved(f"line {getattr(node, 'lineno', '?')}: a shape of {_describe(value)}")
    return tuple(items)


def _dtype_of(kwargs: dict[str, Any], default: str) -> str:
    dtype = kwargs.get("dtype")
    return dtype.name if isinstance(dtype, _Dtype) else default


def _nested_shape(data: Any) -> tuple[int, ...]:
    if isinstance(data, (list, tuple)):
        return (len(data),) + (_nested_shape(data[0]) if data else ())
    return ()


def _flatten(data: Any) -> list[Any]:
    return [x for item in data for x in _flatten(item)] if isinstance(data, (list, tuple)) else [data]


def _torch_factory(name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> _Tensor | None:
    """The tensor a ``torch.<name>(...)`` factory makes, or None for any other torch call."""
    if name in _FLOAT_FACTORIES:
        shape = kwargs["size"] if "size" in kwargs else args[0] if len(args) == 1 else tuple(args)
        return _Tensor(_dims(shape, node), _dtype_of(kwargs, "float32"))
    if name == "randint":
        shape = kwargs.get("size", args[-1] if args else None)
        return _Tensor(_dims(shape, node), _dtype_of(kwargs, "int64"))
    if name == "full" and len(args) >= 2:
        fill = args[1]
        default = "bool" if isinstance(fill, bool) else "int64" if isinstance(fill, int) else "float32"
        return _Tensor(_dims(args[0], node), _dtype_of(kwargs, default))
    if name in _LIKE_FACTORIES and args and isinstance(args[0], _Tensor):
        return _Tensor(args[0].shape, _dtype_of(kwargs, args[0].dtype))
    if name == "tensor" and args:
        values = _flatten(args[0])
        default = ("bool" if all(isinstance(v, bool) for v in values) else
                   "int64" if all(isinstance(v, int) for v in values) else "float32")
        return _Tensor(_nested_shape(args[0]), _dtype_of(kwargs, default))
    if name == "arange" and args and all(isinstance(a, (int, float)) for a in args):
        start, end, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) > 2 else 1)
        default = "int64" if all(isinstance(a, int) for a in args) else "float32"
        return _Tensor((max(0, math.ceil((end - start) / step)),), _dtype_of(kwargs, default))
    if name == "randperm" and args:
        return _Tensor(_dims(args[0], node), _dtype_of(kwargs, "int64"))
    if name == "eye" and args:
        return _Tensor(_dims((args[0], args[1] if len(args) > 1 else args[0]), node), _dtype_of(kwargs, "float32"))
    if name in ("linspace", "logspace") and len(args) >= 3:
        return _Tensor(_dims(args[2], node), _dtype_of(kwargs, "float32"))
    return None


def _tensor_method(tensor: _Tensor, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
    if name in _DTYPE_METHODS:
        return _Tensor(tensor.shape, _DTYPE_METHODS[name])
    if name == "to":
        dtype = next((a for a in [*args, kwargs.get("dtype")] if isinstance(a, _Dtype)), None)
        return _Tensor(tensor.shape, dtype.name if dtype else tensor.dtype)
    if name in _SHAPE_KEEPING_METHODS:
        return tensor
    if name == "t" and len(tensor.shape) <= 2:
        return _Tensor(tensor.shape[::-1], tensor.dtype)
    if name == "unsqueeze" and len(args) == 1 and isinstance(args[0], int):
        at = args[0] if args[0] >= 0 else len(tensor.shape) + 1 + args[0]
        return _Tensor(tensor.shape[:at] + (1,) + tensor.shape[at:], tensor.dtype)
    if name in ("view", "reshape"):
        shape = list(args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args)
        if shape.count(-1) == 1:
            known = math.prod(d for d in shape if d != -1)
            shape[shape.index(-1)] = math.prod(tensor.shape) // known if known else 0
        return _Tensor(_dims(tuple(shape), node), tensor.dtype)
    return _Opaque(ast.unparse(node))


def _tensor_binary(operator_node: ast.operator, left: Any, right: Any) -> _Tensor:
    tensors = [v for v in (left, right) if isinstance(v, _Tensor)]
    others = [v for v in (left, right) if not isinstance(v, _Tensor)]
    if any(not isinstance(v, (int, float, bool)) for v in others):
        raise _Unresolved(f"tensor arithmetic with {_describe(others[0])}")
    dtype = tensors[0].dtype
    if any(isinstance(v, float) for v in others) and not dtype.startswith(("float", "bfloat", "complex")):
        dtype = "float32"
    if isinstance(operator_node, ast.MatMult) and len(tensors) == 2:
        a, b = tensors[0].shape, tensors[1].shape
        if len(a) == 2 and len(b) == 2 and a[1] == b[0]:
            return _Tensor((a[0], b[1]), dtype)
        raise _Unresolved(f"a matmul of shapes {list(a)} and {list(b)}")
    shapes = [t.shape for t in tensors]
    rank = max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + s for s in shapes]
    out = []
    for dims in zip(*padded):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise _Unresolved(f"shapes {[list(s) for s in shapes]} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return _Tensor(tuple(out), dtype)


def _describe(value: Any) -> str:
    if isinstance(value, _Tensor):
        return f"a {value.dtype} tensor of shape {list(value.shape)}"
    if isinstance(value, _Opaque):
        return value.source
    if isinstance(value, _Ref):
        return value.dotted
    if isinstance(value, _Dtype):
        return f"torch.{value.name}"
    if isinstance(value, _Object):
        return "self"
    if isinstance(value, _Input):
        return f"case[{value.index}]"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_describe(v) for v in value) + ")"
    return repr(value)


def _plain(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def _perf_arg(value: Any) -> PerfInput | PerfTensor | PerfScalar | PerfObject:
    if isinstance(value, _Input):
        return PerfInput(index=value.index)
    if isinstance(value, _Tensor):
        return PerfTensor(shape=list(value.shape), dtype=value.dtype)
    if isinstance(value, _Dtype):
        return PerfScalar(value=f"torch.{value.name}")
    if _plain(value):
        return PerfScalar(value=json.loads(json.dumps(value)))
    return PerfObject(source=_describe(value))


# ---------------------------------------------------------------------------------------------
# Running the reference (on request)


@dataclass(frozen=True)
class FunctionSources:
    """The source text of the wrapper's ``def`` in the reference and of the test's ``def``."""

    reference: str
    test: str


def function_sources(operator: Operator) -> FunctionSources:
    """The reference function (the wrapper) and the test function, as written in the file."""
    reference = _top_functions(ast.parse(operator.reference.source))[operator.reference.entry]
    test = _top_functions(ast.parse(operator.test.source))[operator.test.function]
    return FunctionSources(reference=_segment(operator.reference.source, reference),
                           test=_segment(operator.test.source, test))


def _segment(source: str, node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    lines = source.splitlines(keepends=True)
    return "".join(lines[first - 1:node.end_lineno])


_CUDA_DEVICE = re.compile(r"cuda(:\d+)?")


class _OnDevice(ast.NodeTransformer):
    """Moves hard-coded CUDA allocations to ``device``: a string constant that is exactly a
    CUDA device name (``'cuda'``, ``'cuda:0'``) becomes ``device``, and every ``x.cuda(...)``
    becomes ``x.to(device)``. Strings that merely mention cuda (docstrings) are untouched."""

    def __init__(self, device: str) -> None:
        self.device = device

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, str) and _CUDA_DEVICE.fullmatch(node.value):
            return ast.copy_location(ast.Constant(self.device), node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "cuda":
            moved = ast.Call(func=ast.Attribute(node.func.value, "to", ast.Load()),
                             args=[ast.Constant(self.device)], keywords=[])
            return ast.copy_location(moved, node)
        return node


def load_reference_namespace(operator: Operator, device: str = "cuda") -> types.ModuleType:
    """Compile the operator's reference and test into a fresh module, without running the test.

    The reference part runs as written; the test part runs except its driver statements
    (``test_results = test_x()``, ``print(...)``), so ``module.<test function>()`` runs the
    test on request and the wrapper is ``getattr(module, operator.wrapper)``. Line numbers are
    the file's.

    ``device``: the tests allocate on ``'cuda'``. For any other device (``'cpu'`` where the
    track runs without a GPU) both parts are rewritten at the AST level before compiling:
    every string constant that is exactly ``'cuda'`` or ``'cuda:N'`` becomes ``device``, and
    every ``x.cuda(...)`` call becomes ``x.to(device)``. ``torch.cuda.*`` calls are left as
    they are (``torch.cuda.manual_seed`` is harmless without a GPU).
    """
    module = types.ModuleType(f"tritonbench_{operator.name}")
    module.__file__ = str(operator.path)
    parts = ((operator.reference.source, 1, None), (operator.test.source, operator.test.first_line,
                                                    operator.test.function))
    for source, first_line, test_function in parts:
        tree = ast.parse(source)
        if test_function is not None:
            tree.body = [s for s in tree.body if not _is_driver(s, test_function)]
        if device != "cuda":
            tree = ast.fix_missing_locations(_OnDevice(device).visit(tree))
        ast.increment_lineno(tree, first_line - 1)
        exec(compile(tree, str(operator.path), "exec"), module.__dict__)  # noqa: S102 - dataset code, on request
    return module
