"""The baseline's rule on what a launcher does with its ``@triton.jit`` kernels: it launches them,
``kernel[grid](...)``, as a statement, and nothing else.

A kernel object and a launch's result are where a GPU and Triton's interpreter differ: on a GPU a
kernel is a ``JITFunction`` (with ``.src``, ``.cache_key``, ...) and a launch returns the compiled
kernel; in the interpreter it is an ``InterpretedFunction`` (with ``.rewrite``) and a launch
returns None. The interpreter judges races and out-of-bounds accesses in CPU mode and in GPU
mode's second look (:func:`kernelgen.baseline.ablation._in_the_interpreter`), so an answer reading
either (``try: kernel.src``, ``if kernel[grid](...) is not None``) could race on the GPU and show
the interpreter an honest path. A kernel passed to a function or stored (a dict of kernels by
dtype) can be read there, so only the launch is allowed, of kernels defined anywhere (a kernel
nested in the launcher too), and a kernel is made by decorating, not by calling ``triton.jit``
(whose result a name would hold unseen); calls between kernels, inside jitted code, are device
calls and stay allowed, as does the code under ``if __name__ == "__main__":``.
"""

from __future__ import annotations

import ast
from typing import Callable, Collection, Iterator

CODE = "kernel_as_value"
RULE = ("a @triton.jit kernel used other than launched as a statement, kernel[grid](...): its attributes, a "
        "launch's result, the kernel passed to a function or stored (they differ between a GPU and Triton's "
        "interpreter)")


def kernel_uses(tree: ast.Module, is_jit: Callable[[ast.AST], bool],
                skipped: Collection[int]) -> Iterator[tuple[ast.AST, str]]:
    """Each use of a jitted kernel (a function anywhere whose decorator ``is_jit``) other than a
    launch statement, and each kernel made by calling ``triton.jit`` rather than decorating with
    it, outside the nodes ``skipped`` (the main guard's code, by ``id``) and the kernels' own
    bodies, with what it does."""
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    kernels = [f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
               and any(is_jit(d) for d in f.decorator_list)]
    names = {f.name for f in kernels}
    inside = set(skipped) | {id(n) for f in kernels for n in ast.walk(f)}
    decorators = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  for d in f.decorator_list for n in ast.walk(d)}
    for node in ast.walk(tree):
        if id(node) in inside:
            continue
        if isinstance(node, ast.Call) and id(node) not in decorators and is_jit(node.func):
            yield node, ("triton.jit called as a function: decorate the kernel with @triton.jit (a kernel held as a "
                         "value differs between a GPU and Triton's interpreter)")
            continue
        if not (isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load)):
            continue
        subscript = parents.get(id(node))
        call = parents.get(id(subscript))
        if isinstance(subscript, ast.Subscript) and subscript.value is node and isinstance(call, ast.Call) \
                and call.func is subscript:
            if not isinstance(parents.get(id(call)), ast.Expr):
                yield call, (f"the result of launching {node.id} is used: a launch returns the compiled kernel on "
                             "a GPU and None in Triton's interpreter; launch it as a statement")
            continue
        what = f"{node.id}.{subscript.attr} reads an attribute of the kernel" \
            if isinstance(subscript, ast.Attribute) and subscript.value is node else f"the kernel {node.id} is used as a value"
        yield node, (f"{what}: a launcher only launches its kernels, {node.id}[grid](...) (a kernel object differs "
                     "between a GPU and Triton's interpreter)")
