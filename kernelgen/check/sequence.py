"""Programs of several launches: how one document becomes a sequence of ordinary kernels.

A document with ``launches`` (:class:`kernelgen.lang.nodes.Launch`) is a program: its kernels run
in list order on one stream and share the call's inputs, its outputs and host-allocated
``scratch`` tensors. Rather than teach every stage a second kind of kernel, each launch is
*projected* onto a plain :class:`~kernelgen.lang.nodes.Kernel` (:func:`launch_kernel`): the
document's inputs, view, dtype variables and meta, its outputs followed by the scratch tensors
(as outputs, so stores into them are allowed and their shapes are host expressions), and the
launch's own params, grid, warps, stages and body. The checker, bounds analysis, interpreter,
lowering, compiler, launcher and emitter then handle each launch as the kernel it is; this
module adds what only the sequence knows:

* where a projected kernel's diagnostic lies in the document (:func:`document_path`:
  ``/body/3`` of launch 1 is ``/launches/1/body/3``, its output 2 past the document's outputs is
  ``/scratch/1``);
* the document's form (``bad_program``: a program has no top-level params, grid or body; a
  single kernel has all three) and the rules over the sequence (:func:`sequence_diagnostics`):
  a launch loads a scratch (not zero-filled) or output only after some launch up to it stores
  into it (``read_before_write``), some launch loads each scratch (``scratch_unread``: a
  scratch nothing reads is a mistake, not an optimization), some launch stores each output
  (``output_not_written``).

Where grids and meta live: each launch has its own grid (phases differ in their programs);
meta-parameters are the document's, shared by every launch and by the host expressions of
scratch shapes, so a block size that shapes a scratch tensor means the same in both phases.
"""

from __future__ import annotations

import copy
import re
from typing import Iterator

from kernelgen.lang import nodes as L
from kernelgen.check.checked import CheckedKernel, CheckedProgram, child
from kernelgen.check.tile_access import AS_LOAD, AS_STORE
from kernelgen.errors import Diagnostic, KernelgenError

# The document-level fields a launch carries for itself.
_LAUNCH_FIELDS = ("body", "params", "grid", "num_warps", "num_stages", "name")


def form_diagnostics(kernel: L.Kernel) -> list[Diagnostic]:
    """A document is one kernel (params, grid, body) or a program (launches), never both.

    The checker's first finding, not the parser's: a JSON schema with one object at its root
    (what providers' structured outputs take) cannot say "one of two forms", so the decoding
    grammar allows both or neither, and whatever the grammar allows must parse. A kernel's
    missing part is the parser's ``missing_field`` all the same."""
    own = [f for f in ("params", "grid", "body") if getattr(kernel, f) is not None]
    if kernel.is_program:
        return [Diagnostic(f"/{f}", "bad_program", f"a program's launches carry their own {f}; remove the "
                           "document's") for f in own]
    found = [Diagnostic(f"/{f}", "missing_field", f"required field {f!r} is missing (several kernels: "
                        "write 'launches' instead)") for f in ("params", "grid", "body") if f not in own]
    if kernel.scratch:
        found.append(Diagnostic("/scratch", "bad_program", "scratch goes with launches"))
    return found


def launch_name_diagnostics(kernel: L.Kernel) -> list[Diagnostic]:
    """Launches have distinct names (each is a kernel of the compiled and emitted program)."""
    found: list[Diagnostic] = []
    seen: dict[str, int] = {}
    for i, launch in enumerate(kernel.launches):
        if launch.name in seen:
            found.append(Diagnostic(f"/launches/{i}/name", "duplicate_name",
                                    f"launch {seen[launch.name]} is already named {launch.name!r}"))
        seen.setdefault(launch.name, i)
    return found


def launch_kernel(kernel: L.Kernel, index: int) -> L.Kernel:
    """Launch ``index`` of a program as a plain kernel (see the module's docstring)."""
    launch = kernel.launches[index]
    scratch = [L.Output(name=s.name, dtype=s.dtype, shape=s.shape) for s in kernel.scratch]
    return L.Kernel(name=launch.name, view=kernel.view, dtypes=kernel.dtypes, inputs=kernel.inputs,
                    outputs=[*kernel.outputs, *scratch], params=launch.params, meta=kernel.meta,
                    host_values=kernel.host_values,
                    grid=launch.grid, num_warps=launch.num_warps or kernel.num_warps,
                    num_stages=launch.num_stages or kernel.num_stages, body=launch.body)


def scratch_names(kernel: L.Kernel) -> frozenset[str]:
    return frozenset(s.name for s in kernel.scratch)


_OUTPUT = re.compile(r"^/outputs/(\d+)(.*)$")


def document_path(kernel: L.Kernel, index: int, path: str) -> str:
    """Where a path of launch ``index``'s projected kernel lies in the document."""
    head = path.split("/")[1] if path.startswith("/") else ""
    if head in _LAUNCH_FIELDS:
        return f"/launches/{index}{path}"
    found = _OUTPUT.match(path)
    if found and int(found.group(1)) >= len(kernel.outputs):
        return f"/scratch/{int(found.group(1)) - len(kernel.outputs)}{found.group(2)}"
    return path


def relocate(kernel: L.Kernel, index: int, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Diagnostics of launch ``index``'s kernel, with document paths (naming the launch where
    the path alone would not)."""
    if not kernel.is_program:
        return list(diagnostics)
    return [Diagnostic(document_path(kernel, index, d.path), d.code, d.message) for d in diagnostics]


def relocated(kernel: L.Kernel, index: int, error: KernelgenError) -> KernelgenError:
    """``error`` of launch ``index`` (its class and outcome kept), with document paths."""
    moved = copy.copy(error)
    moved.diagnostics = relocate(kernel, index, error.diagnostics)
    moved.args = ("\n".join(str(d) for d in moved.diagnostics),)
    return moved


def accesses(checked: CheckedKernel) -> tuple[set[str], set[str], set[str]]:
    """The tensors a checked kernel may load from, may store into, and may update atomically
    (pointer bases). An atomic reads what is there: it needs a value stored by an earlier launch
    or a fill (zero scratch, an output's init), and it writes its tensor (a program whose only
    writes are atomic adds into an output that starts at 0 writes that output). An
    ``atomic_xchg`` whose old values are not bound (no ``name``) reads nothing: it is a store."""
    loaded: set[str] = set()
    stored: set[str] = set()
    updated: set[str] = set()
    for node, path in nodes(checked.kernel.body, "/body"):
        if isinstance(node, L.Load):
            loaded |= checked.types[child(path, "ptr")].bases
        elif isinstance(node, L.TileLoad):
            loaded |= checked.types[child(path, AS_LOAD, "ptr")].bases
        elif isinstance(node, L.Store):
            stored |= checked.types[child(path, "ptr")].bases
        elif isinstance(node, L.TileStore):
            stored |= checked.types[child(path, AS_STORE, "ptr")].bases
        elif isinstance(node, L.Atomic) and node.op == "atomic_xchg" and node.name is None:
            stored |= checked.types[child(path, "ptr")].bases
        elif isinstance(node, L.Atomic):
            updated |= checked.types[child(path, "ptr")].bases
    return loaded, stored, updated


def nodes(item: object, path: str) -> Iterator[tuple[object, str]]:
    """Every AST node under ``item`` (a node or a list) with its JSON path, without recursion."""
    stack: list[tuple[object, str]] = [(item, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, list):
            stack.extend((v, child(where, i)) for i, v in enumerate(node))
        elif isinstance(node, L.Node):
            yield node, where
            stack.extend((value, child(where, key)) for key, value in L.node_fields(node))


def sequence_diagnostics(kernel: L.Kernel, launches: list[CheckedKernel]) -> list[Diagnostic]:
    """The rules only the whole sequence can judge (the module's docstring)."""
    found: list[Diagnostic] = []
    # Zero-filled scratch and outputs with an init fill or an aliased input's values hold values
    # before any launch runs.
    zeroed = {s.name for s in kernel.scratch if s.zero} | {o.name for o in kernel.outputs if o.prefilled}
    kinds = {**{o.name: "output" for o in kernel.outputs}, **{s.name: "scratch" for s in kernel.scratch}}
    written: set[str] = set()
    read: set[str] = set()
    for i, checked in enumerate(launches):
        loaded, stored, updated = accesses(checked)
        before = set(written)
        written |= stored | updated
        unfilled = ((loaded - written) | (updated - before)) & set(kinds)
        for name in sorted(unfilled - zeroed):
            reads = "loads" if name in loaded - written else "updates atomically"
            found.append(Diagnostic(f"/launches/{i}", "read_before_write",
                                    f"launch {i} ({checked.kernel.name}) {reads} {kinds[name]} {name!r} before any "
                                    f"launch stores into it ({'order the launches so one writes it first' if kinds[name] == 'output' else 'reorder the launches, or declare it zero'})"))
        read |= loaded | updated
    for i, s in enumerate(kernel.scratch):
        if s.name not in read:
            found.append(Diagnostic(f"/scratch/{i}", "scratch_unread",
                                    f"no launch loads scratch {s.name!r}; remove it or read it in a later launch"))
    for i, out in enumerate(kernel.outputs):
        if out.name not in written:
            found.append(Diagnostic(f"/outputs/{i}", "output_not_written",
                                    f"no launch stores into output {out.name!r}"))
    return found


def program_of(kernel: L.Kernel, launches: list[CheckedKernel]) -> CheckedProgram:
    first = launches[0]
    return CheckedProgram(L.inline_host_values(kernel), launches, dict(first.meta), first.sizes)
