"""Every diagnostic code the judging stages raise is in the one registry (kernelgen.lang.rules), and
the prompt states each with its condition.

A code is found in the source, not at run time, so that a rule no test happens to trigger is
still covered: a string literal shaped like a code (``snake_case`` of two words or more, as
every code is) passed positionally or
as ``code=`` to ``Diagnostic(...)`` or to a function whose name ends in ``error`` or ``fail``
(``self.error``, ``self.fail``, ``HostError``, ``_error``), or the first item of a returned
``(code, message)`` pair (the parser's messages). Messages have spaces and paths start with
``/``, so neither is taken for a code (a one-word message is not either).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import kernelgen
from kernelgen.model.prompt import language_reference
from kernelgen.lang.rules import RULES

# Paths under kernelgen/, without .py.
JUDGING_MODULES = ("lang/parse", "check/checker", "check/host", "check/statements", "check/blocks", "check/dots", "check/tiles",
                   "lang/generic", "lang/limits", "check/bounds", "host/plan", "host/wrapper", "check/polymorphism",
                   "interp/execute", "interp/program", "interp/blocks", "interp/budget", "check/sequence",
                   "interp/accesses", "interp/barrier", "interp/memorder", "interp/lanes", "interp/pipelining", "interp/proxies",
                   "interp/trips",
                   "task/verify")
CODE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+$")


def _callee(call: ast.Call) -> str:
    function = call.func
    if isinstance(function, ast.Name):
        return function.id
    return function.attr if isinstance(function, ast.Attribute) else ""


def codes_raised(source: str) -> dict[str, int]:
    """Each code a module's source raises, with the line of its first use."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(source)):
        candidates: list[ast.expr] = []
        if isinstance(node, ast.Call):
            name = _callee(node).lower()
            if name == "diagnostic" or name.endswith(("error", "fail")):
                candidates += node.args
            candidates += [k.value for k in node.keywords if k.arg == "code"]
        elif isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple) and len(node.value.elts) == 2:
            candidates.append(node.value.elts[0])
        for value in candidates:
            if isinstance(value, ast.Constant) and isinstance(value.value, str) and CODE.match(value.value):
                found.setdefault(value.value, node.lineno)
    return found


@pytest.mark.parametrize("module", JUDGING_MODULES)
def test_every_code_a_stage_raises_is_registered(module: str) -> None:
    path = Path(kernelgen.__file__).parent / f"{module}.py"
    missing = {code: line for code, line in codes_raised(path.read_text()).items() if code not in RULES}
    assert not missing, (f"kernelgen/{module}.py raises codes not in kernelgen/lang/rules.py RULES "
                         f"(add one line there each: code -> condition): {missing}")


def test_every_registered_code_is_raised_somewhere() -> None:
    raised: set[str] = set()
    for module in JUDGING_MODULES:
        raised |= set(codes_raised((Path(kernelgen.__file__).parent / f"{module}.py").read_text()))
    assert set(RULES) <= raised, f"registered but never raised: {sorted(set(RULES) - raised)}"


def test_the_prompt_states_every_code_with_its_condition() -> None:
    reference = language_reference()
    for code, condition in RULES.items():
        assert f"{code}: {condition}" in reference, code


def test_the_scan_finds_codes_in_each_form() -> None:
    source = '''
def f(self, d):
    self.error("/a", "first_code", "a message")
    raise self.fail(child(path, "x"), "second_code", f"{d}")
    raise HostError(Diagnostic("/b", "third_code", "x"))
    raise KernelgenError("text", code="fourth_code")
    raise _error(index, "a message", "fifth_code")
    return "sixth_code", "a message"
    return child(path, "not_a_code")
'''
    assert set(codes_raised(source)) == {"first_code", "second_code", "third_code", "fourth_code", "fifth_code",
                                         "sixth_code"}
