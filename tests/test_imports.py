"""kernelgen's modules import each other without cycles.

The graph: one node per module of the ``kernelgen`` package (a package is its ``__init__``);
an edge from A to B for every ``import`` or ``from ... import`` statement anywhere in A's
source (module level, inside functions and under ``if TYPE_CHECKING``, relative ones resolved)
that names B, or names a submodule of a package B imports from (``from kernelgen import check``
names ``kernelgen.check.checker``). A name inside a module (``from kernelgen.check.checker import check``)
points at that module. The implicit import of parent packages is not an edge: a package's
``__init__`` may re-export its submodules without creating a cycle with each of them. The test
asserts that this graph has no cycle, so a function-level import is no way around it.

The stages are packages in an order (:data:`STAGES`, lowest first): a module imports only from
its own package and from packages below it, never from a stage above (the interpreter knows
nothing of the GPU, the GPU nothing of pytest). ``errors`` and ``env`` sit below every stage;
``cli`` is the entry point above them all.
"""

from __future__ import annotations

import ast
from pathlib import Path

import kernelgen

PACKAGE_DIR = Path(kernelgen.__file__).resolve().parent

# Lowest first. A name is a top-level module or a package of kernelgen.
STAGES = ("errors", "env", "lang", "check", "host", "interp", "lower", "emit", "draw", "task", "gpu", "model",
          "baseline", "harness", "tritonbench", "report", "commands", "cli")
MAX_LINES = 700
MAX_TOP_LEVEL_MODULES = 12


def module_files() -> dict[str, Path]:
    files = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = ["kernelgen", *path.relative_to(PACKAGE_DIR).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    return files


def imported_names(module: str, path: Path) -> set[str]:
    """Every dotted name an import statement in ``path`` names, relative ones resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        targets = set()
        for name in imported_names(module, path):
            while name and name not in files:  # a name inside a module: the module
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path that returns to its start, or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                return stack[stack.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_kernelgen_has_no_import_cycles() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_graph_sees_function_level_and_relative_imports(tmp_path: Path) -> None:
    source = "from . import b\n\ndef f():\n    from .c import g\n    import kernelgen.d\n"
    path = tmp_path / "a.py"
    path.write_text(source)
    assert imported_names("kernelgen.x.a", path) >= {"kernelgen.x.b", "kernelgen.x.c.g", "kernelgen.d"}
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_graph_covers_the_package() -> None:
    graph = import_graph()
    assert {"kernelgen.check.checker", "kernelgen.check.bounds", "kernelgen.tritonbench.evaluate"} <= set(graph)
    assert "kernelgen.check.checked" in graph["kernelgen.check.bounds"]


def stage_of(module: str) -> str:
    """The stage a module of kernelgen belongs to: its top-level package or module."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "errors"  # the package's __init__ imports nothing


def test_every_module_belongs_to_a_stage() -> None:
    assert {stage_of(module) for module in module_files()} <= set(STAGES)


def test_no_stage_imports_from_a_stage_above_it() -> None:
    rank = {stage: i for i, stage in enumerate(STAGES)}
    climbs = sorted(f"{module} imports {target}" for module, targets in import_graph().items()
                    for target in targets if rank[stage_of(target)] > rank[stage_of(module)])
    assert not climbs, "imports from a higher stage:\n" + "\n".join(climbs)


def test_the_package_stays_navigable() -> None:
    """At most a dozen modules beside the stage packages, and no module past 700 lines."""
    top = [path.name for path in PACKAGE_DIR.glob("*.py") if path.name != "__init__.py"]
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top
    long = {str(path.relative_to(PACKAGE_DIR)): n for path in PACKAGE_DIR.rglob("*.py")
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules past {MAX_LINES} lines: {long}"
