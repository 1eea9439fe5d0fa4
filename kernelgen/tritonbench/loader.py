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
  statically (:mod:`kernelgen.tritonbench.perf_script`), never imported. Their measured results are
  ``golden_results/<stem>.json`` (``<stem>.py.json`` for two operators upstream: SGD, lu;
  ``<stem>..json`` for solve_and_add_scaled_vector); grid_sample_with_affine has none.
  An operator's perf files never stop the dataset from loading: where the script or the
  results are missing or unreadable, :attr:`Perf.problems` says so, the operator is still
  evaluated for call and execution accuracy, and its speedup is not measured, for that reason.

Nothing here runs dataset code, except :func:`load_reference_namespace` when asked.
"""

from __future__ import annotations

import ast
import contextlib
import json
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Iterator

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from kernelgen.errors import Diagnostic, KernelgenError
from kernelgen.tritonbench.perf_script import PerfCall, PerfCase, read_perf_script
from kernelgen.tritonbench.signatures import WrapperSignature, parse_wrapper_entry, signature_of, top_functions

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
    tests = [name for name in top_functions(tree) if name.startswith("test_")]
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
    defined = top_functions(reference)
    called = [n for n in _called_names(top_functions(test)[test_function]) if n in defined]
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
# Performance results


class PerfResult(BaseModel):
    """One measured point of ``golden_results``: PyTorch's own time on these inputs."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    input_size: list[JsonValue]
    ms: float
    gbps: float | None = Field(None, alias="GB/s")
    tflops: float | None = Field(None, alias="TFLOPS")


class PerfProblem(_Frozen):
    """Why an operator's perf files do not yield a speedup: ``path`` is the file at fault
    (with a JSON pointer where one field is), ``code`` a stable code
    (``missing_file``, ``bad_json``, ``bad_record``, ``bad_python``, ``bad_encoding``)."""

    path: str
    code: str
    message: str

    def diagnostic(self) -> Diagnostic:
        return Diagnostic(self.path, self.code, self.message)


class Perf(_Frozen):
    """``cases`` and ``call`` are None where the script builds its inputs or calls the wrapper
    in a way the static reading cannot follow; ``unresolved`` then says what stopped it.

    ``results_file`` is None and ``results`` empty where the operator has no readable golden
    results; ``problems`` then holds why (also for a missing or unparsable script). An
    operator with problems is evaluated for accuracy; its speedup is not measured: the golden
    results are the sizes upstream measured and the official speedup's reference, so
    without them the operator has no speedup to report."""

    script: Path
    results_file: Path | None
    cases: list[PerfCase] | None
    call: PerfCall | None
    unresolved: str | None = None
    results: list[PerfResult]
    problems: list[PerfProblem] = []


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
    redefined = sorted(set(top_functions(reference)) & set(top_functions(test)))
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


RESULTS_NAMES = ("{stem}.json", "{stem}.py.json", "{stem}..json")
"""The names an operator's golden results go by upstream, the regular one first."""


def _load_perf(root: Path, stem: str) -> Perf:
    """The operator's perf script and golden results; a file that is missing or unreadable
    becomes one of :attr:`Perf.problems`, never an error of the whole dataset."""
    script = root / PERF_SCRIPTS_DIR / f"{stem}_perf.py"
    problems: list[PerfProblem] = []
    cases = call = unresolved = None
    try:
        source = _read_text(script, missing=f"operator {stem} has no perf script {script.name}")
        cases, call, unresolved = read_perf_script(_parse_python(source, script, "perf script"))
    except TritonBenchError as exc:
        problems += _perf_problems(exc)
        unresolved = exc.diagnostics[0].message
    candidates = [root / PERF_RESULTS_DIR / name.format(stem=stem) for name in RESULTS_NAMES]
    results_file = next((p for p in candidates if p.is_file()), None)
    results: list[PerfResult] = []
    try:
        if results_file is None:
            raise _problem(candidates[0], "missing_file", f"operator {stem} has no golden results "
                           f"{candidates[0].name} (nor {', '.join(p.name for p in candidates[1:])})")
        results = _validated_array(results_file, _read_json(results_file), PerfResult, "results")
    except TritonBenchError as exc:
        problems += _perf_problems(exc)
        results_file = None
    return Perf(script=script, results_file=results_file, cases=cases, call=call, unresolved=unresolved,
                results=results, problems=problems)


def _perf_problems(error: TritonBenchError) -> list[PerfProblem]:
    return [PerfProblem(path=d.path, code=d.code, message=d.message) for d in error.diagnostics]


# ---------------------------------------------------------------------------------------------
# Running the reference (on request)


@dataclass(frozen=True)
class FunctionSources:
    """The source text of the wrapper's ``def`` in the reference and of the test's ``def``."""

    reference: str
    test: str


def function_sources(operator: Operator) -> FunctionSources:
    """The reference function (the wrapper) and the test function, as written in the file."""
    reference = top_functions(ast.parse(operator.reference.source))[operator.reference.entry]
    test = top_functions(ast.parse(operator.test.source))[operator.test.function]
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
    with importable_as_itself(operator, module):
        for source, first_line, test_function in parts:
            tree = ast.parse(source)
            if test_function is not None:
                tree.body = [s for s in tree.body if not _is_driver(s, test_function)]
            if device != "cuda":
                tree = ast.fix_missing_locations(_OnDevice(device).visit(tree))
            ast.increment_lineno(tree, first_line - 1)
            exec(compile(tree, str(operator.path), "exec"), module.__dict__)  # noqa: S102 - dataset code, on request
    return module


def self_imports(operator: Operator) -> list[str]:
    """The modules the operator's test imports that are the operator itself: named after its file
    (``from <op> import <op>``, as 2 of TritonBench-T's 166 tests do) or its function, where
    TritonBench's evaluator puts the answer in a module of that name."""
    own = {operator.name, operator.wrapper}
    found = []
    for node in ast.walk(ast.parse(operator.test.source)):
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else \
            [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        found += [name for name in names if name in own and name not in found]
    return found


@contextlib.contextmanager
def importable_as_itself(operator: Operator, module: types.ModuleType) -> Iterator[None]:
    """Within it, the modules of :func:`self_imports` are ``module`` (the namespace the test runs
    in, whose wrapper is the reference's or the answer's): the test imports what it tests. The
    modules of those names that were there before come back after."""
    names = self_imports(operator)
    saved = {name: sys.modules.get(name) for name in names}
    try:
        sys.modules.update({name: module for name in names})
        yield
    finally:
        for name, previous in saved.items():
            if previous is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = previous
