"""The emitted launcher's part for batch dims and optional dims (:mod:`kernelgen.check.polymorphism`).

:func:`kernelgen.emit.module.emit_triton`'s launcher takes a call at the call's ranks, as the wrapper
does: these lines turn the arguments into the shapes the kernel sees (NumPy's gufunc rules,
torch.matmul's overloads) and the outputs back. ``names`` maps an AST name to its Python name
in the launcher (the emitter's namer, so nothing here shadows another name).
"""

from __future__ import annotations

from typing import Callable

from kernelgen.lang import nodes as L
from kernelgen.check.polymorphism import layout


def _python_tuple(items: list[str]) -> str:
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def batch_lines(kernel: L.Kernel, names: Callable[[str], str]) -> list[str]:
    """A call's ranks as the kernel's (kernelgen.check.polymorphism, NumPy's gufunc rules): left-out
    optional dims become 1s, the batch inputs' leading dims broadcast and flatten into one."""
    lines: list[str] = []
    batched: list[tuple[str, int]] = []
    for inp in kernel.inputs:
        if not (inp.batch or inp.optional_dims):
            continue
        name, core = names(inp.name), list(inp.shape[1:] if inp.batch else inp.shape)
        whole = f"{name}.dim() {'>=' if inp.batch else '=='} {len(core)}"
        if inp.optional_dims:
            kept = [d for d in core if d not in inp.optional_dims]
            shown = iter(range(len(kept)))
            lines += [f"{names(inp.name + '_whole')} = {whole}",
                      f'assert {names(inp.name + "_whole")} or {name}.dim() == {len(kept)}, '
                      f'f"{inp.name}: expected {layout(inp)}, got {{tuple({name}.shape)}}"',
                      f"{name} = {name} if {names(inp.name + '_whole')} else {name}.reshape("
                      f"{_python_tuple(['1' if d in inp.optional_dims else f'{name}.shape[{next(shown)}]' for d in core])})"]
        else:
            lines.append(f'assert {whole}, f"{inp.name}: expected {layout(inp)}, got {{tuple({name}.shape)}}"')
        if inp.batch:
            batched.append((name, len(core)))
    if batched:
        leads = ", ".join(f"{name}.shape[:-{core}]" for name, core in batched)
        lines.append(f"{names('batch_shape')} = torch.broadcast_shapes({leads})")
        for name, core in batched:
            lines.append(f"{name} = {name}.expand({names('batch_shape')} + {name}.shape[-{core}:]).reshape("
                         f"({names('batch_shape')}.numel(),) + {name}.shape[-{core}:]).contiguous()")
    return lines


def unbatch_lines(kernel: L.Kernel, names: Callable[[str], str]) -> list[str]:
    """The outputs at the call's ranks: left-out dims dropped, the batch dims restored."""
    lines: list[str] = []
    left_out = {d: inp for inp in kernel.inputs for d in inp.optional_dims or ()}
    for out in kernel.outputs:
        name = names(out.name)
        for j in reversed(range(len(out.shape))):
            d = out.shape[j]
            if isinstance(d, str) and d in left_out:
                lines.append(f"{name} = {name} if {names(left_out[d].name + '_whole')} else {name}.squeeze({j})")
        if out.batch:
            lines.append(f"{name} = {name}.reshape({names('batch_shape')} + {name}.shape[1:])")
    return lines
