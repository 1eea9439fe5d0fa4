"""kernelgen's modules import each other without cycles.

The graph: one node per module of the ``kernelgen`` package (a package is its ``__init__``);
an edge from A to B for every ``import`` or ``from ... import`` statement anywhere in A's
source (module level, inside functions and under ``if TYPE_CHECKING``, relative ones resolved)
that names B, or names a submodule of a package B imports from (``from kernelgen import check``
names ``kernelgen.check``). A name inside a module (``from kernelgen.check import check``)
points at that module. The implicit import of parent packages is not an edge: a package's
``__init__`` may re-export its submodules without creating a cycle with each of them. The test
asserts that this graph has no cycle, so a function-level import is no way around it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import kernelgen

PACKAGE_DIR = Path(kernelgen.__file__).resolve().parent


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
    assert {"kernelgen.check", "kernelgen.bounds", "kernelgen.tritonbench.evaluate"} <= set(graph)
    assert "kernelgen.checked" in graph["kernelgen.bounds"]
