"""The raw-LLM baseline's static stage: extracting the code, parsing it, and the rules that
refuse escapes from the sandbox and PyTorch doing the kernel's work; and its prompt."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelgen.lang import nodes as L
from kernelgen.baseline.answer import (ALLOWED_TENSOR_METHODS, ALLOWED_TORCH_CALLS, RULES, EntryPoint, check_answer,
                                       extract_code)
from kernelgen.baseline.prompt import baseline_messages, system_prompt, task_prompt
from kernelgen.check.checker import check
from kernelgen.emit.module import emit_triton, wrapper_name
from kernelgen.errors import Outcome

ENTRY = EntryPoint("scaled_add", (L.Input(name="x", dtype="f32", shape=["N"]), L.Input(name="y", dtype="f32", shape=["N"]),
                                  L.Input(name="scale", dtype="f32")),
                   (L.Input(name="out", dtype="f32", shape=["N"]),))

GOOD = textwrap.dedent('''\
    import math

    import torch
    import triton
    import triton.language as tl


    @triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=4)], key=["n"])
    @triton.jit
    def scaled_add_kernel(x_ptr, y_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        y = tl.load(y_ptr + offs, mask=mask, other=0.0)
        tl.store(out_ptr + offs, x + scale * y, mask=mask)


    def scaled_add(x: torch.Tensor, y: torch.Tensor, scale: float) -> torch.Tensor:
        assert x.is_contiguous() and x.shape == y.shape
        x = x.contiguous().view(-1)
        out = torch.empty_like(x)
        n = x.numel()
        factor = float(scale) * 1.0 + math.sqrt(0.0)
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
        scaled_add_kernel[grid](x, y, out, n, factor)
        return out.view(y.shape)


    if __name__ == "__main__":
        import numpy as np
        a = torch.randn(100)
        print(torch.allclose(scaled_add(a, a, 2.0), a + 2 * a), np.pi)
    ''')


def changed(code: str, old: str, new: str) -> str:
    """``code`` with ``old`` replaced, which must be there (a replacement that misses would
    test the unchanged answer)."""
    assert old in code, old
    return code.replace(old, new)


def fenced(code: str, tag: str = "python") -> str:
    return f"Here is the kernel.\n\n```{tag}\n{code}```\n\nIt masks the tail block."


def with_launcher_line(line: str) -> str:
    """GOOD with one more line at the top of the launcher's body."""
    return changed(GOOD, "    assert x.is_contiguous()", f"    {line}\n    assert x.is_contiguous()")


def codes(answer: str, entry: EntryPoint = ENTRY) -> list[str]:
    return [d.code for d in check_answer(answer, entry).diagnostics]


# -- extraction ------------------------------------------------------------------------------


def test_the_first_complete_python_block_is_the_code() -> None:
    answer = "Install it:\n```bash\npip install triton\n```\nThen:\n```python\nx = 1\n```\n```python\ny = 2\n```"
    assert extract_code(answer) == ("x = 1\n", True)


@pytest.mark.parametrize("opening, closing", [("```", "```"), ("```py", "```"), ("```Python", "````"),
                                              ("~~~python", "~~~"), ("  ```python", "  ```")])
def test_fence_forms(opening: str, closing: str) -> None:
    assert extract_code(f"text\n{opening}\nx = 1\n{closing}\nmore") == ("x = 1\n", True)


def test_an_unterminated_fence_is_not_a_block() -> None:
    answer = "```python\nimport torch\ndef f(x):\n    return x"
    assert extract_code(answer) == (answer, False)
    assert check_answer(answer, ENTRY).outcome is Outcome.SYNTAX_ERROR


def test_a_complete_block_before_an_unterminated_one_is_used() -> None:
    assert extract_code("```python\na = 1\n```\n```python\nb = 2") == ("a = 1\n", True)


def test_without_a_block_the_whole_answer_is_the_code() -> None:
    verdict = check_answer(GOOD, ENTRY)
    assert verdict.ok and not verdict.fenced and verdict.code == GOOD


_PLAIN_LINE = st.text(st.characters(blacklist_characters="`~\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"), max_size=40)


@settings(max_examples=200)
@given(before=st.lists(_PLAIN_LINE, max_size=4), code=st.lists(_PLAIN_LINE, min_size=1, max_size=8),
       after=st.lists(_PLAIN_LINE, max_size=4))
def test_a_fenced_block_is_extracted_exactly(before: list[str], code: list[str], after: list[str]) -> None:
    answer = "\n".join([*before, "```python", *code, "```", *after])
    assert extract_code(answer) == ("\n".join(code) + "\n", True)


@settings(max_examples=300)
@given(answer=st.text(max_size=400))
def test_any_text_gets_a_verdict_not_an_exception(answer: str) -> None:
    verdict = check_answer(answer, ENTRY)
    assert verdict.outcome in (Outcome.OK, Outcome.SYNTAX_ERROR, Outcome.NO_KERNEL, Outcome.FORBIDDEN_CONSTRUCT)
    assert verdict.ok or verdict.diagnostics
    assert all(d.code in RULES for d in verdict.diagnostics)


# -- parsing ---------------------------------------------------------------------------------


def test_a_good_answer_passes() -> None:
    verdict = check_answer(fenced(GOOD), ENTRY)
    assert verdict.ok, verdict.diagnostics
    assert verdict.fenced and verdict.code == GOOD


@pytest.mark.parametrize("guard", [
    'if __name__ != "__main__":',  # true on import: not a main guard
    'if __name__ == "__main__":\n    pass\nelse:',  # the else runs on import
])
def test_only_the_body_of_a_real_main_guard_is_exempt(guard: str) -> None:
    """Round 19: numpy imported and torch.matmul called where the rules took a branch that runs
    on import for the main guard's never-run body."""
    code = changed(GOOD, 'if __name__ == "__main__":', guard)
    verdict = check_answer(fenced(code), ENTRY)
    assert verdict.outcome is Outcome.FORBIDDEN_CONSTRUCT
    assert "forbidden_import" in [d.code for d in verdict.diagnostics], verdict.diagnostics


def test_a_syntax_error_names_its_line_and_column() -> None:
    verdict = check_answer(fenced(changed(GOOD, "def scaled_add(x", "def scaled_add(x,,")), ENTRY)
    assert verdict.outcome is Outcome.SYNTAX_ERROR
    (diagnostic,) = verdict.diagnostics
    assert diagnostic.code == "syntax_error" and diagnostic.line == 18 and diagnostic.col > 0


@pytest.mark.parametrize("answer", ["", "   \n", "I am sorry, I cannot write that kernel.", "```python\n```"])
def test_no_code_is_no_kernel(answer: str) -> None:
    verdict = check_answer(answer, ENTRY)
    assert verdict.outcome is Outcome.NO_KERNEL and [d.code for d in verdict.diagnostics] == ["no_code"]


# -- the kernel and the launcher -------------------------------------------------------------


@pytest.mark.parametrize("change, code", [
    (lambda g: changed(g, "@triton.jit\n", ""), "no_jit_kernel"),
    (lambda g: changed(g, "def scaled_add(x:", "def launch(x:"), "no_entry_point"),
    (lambda g: changed(g, "scale: float)", "scale: float, extra)"), "entry_signature"),
    (lambda g: changed(g, "y: torch.Tensor, scale: float)", "y: torch.Tensor)"), "entry_signature"),
    (lambda g: changed(g, "scaled_add_kernel[grid](x, y, out, n, factor)", "pass"), "no_launch"),
])
def test_missing_kernel_launcher_or_launch(change, code: str) -> None:
    verdict = check_answer(change(GOOD), ENTRY)
    assert verdict.outcome is Outcome.NO_KERNEL
    assert code in [d.code for d in verdict.diagnostics]


def test_a_kernel_nested_in_the_launcher_is_only_launched_too() -> None:
    verdict = check_answer(fenced(with_launcher_line("@triton.jit\n    def probe():\n        pass\n    probe.src")), ENTRY)
    assert verdict.outcome is Outcome.FORBIDDEN_CONSTRUCT
    assert [(d.code, d.line) for d in verdict.diagnostics] == [("kernel_as_value", 22)]


def test_a_kernel_called_like_a_function_is_no_launch_and_a_refused_use() -> None:
    # On a GPU the call raises (a @triton.jit function runs only inside a kernel); Triton's
    # interpreter runs a kernel without language calls: a probe, refused as any other use.
    answer = changed(GOOD, "scaled_add_kernel[grid](x, y, out, n, factor)", "scaled_add_kernel(x, y, out, n, factor)")
    verdict = check_answer(answer, ENTRY)
    assert verdict.outcome is Outcome.FORBIDDEN_CONSTRUCT
    assert {"no_launch", "kernel_as_value"} <= {d.code for d in verdict.diagnostics}


def test_a_launch_in_a_helper_the_launcher_calls_counts() -> None:
    code = changed(GOOD, "    scaled_add_kernel[grid](x, y, out, n, factor)\n", "    _launch(grid, x, y, out, n, factor)\n")
    code = changed(code, "def scaled_add(x:", "def _launch(grid, x, y, out, n, factor):\n"
                   "    scaled_add_kernel[grid](x, y, out, n, factor)\n\n\ndef scaled_add(x:")
    assert check_answer(code, ENTRY).ok


def test_extra_launcher_arguments_with_defaults_and_jit_imported_by_name() -> None:
    code = changed(changed(GOOD, "scale: float)", "scale: float, block: int = 256)"), "@triton.jit", "@jit")
    code = changed(code, "import triton.language as tl", "import triton.language as tl\nfrom triton import jit")
    assert check_answer(code, ENTRY).ok


# -- forbidden constructs --------------------------------------------------------------------


@pytest.mark.parametrize("line, code", [
    ("import os", "forbidden_import"),
    ("import subprocess", "forbidden_import"),
    ("from socket import create_connection", "forbidden_import"),
    ("import numpy as np", "forbidden_import"),
    ("import importlib", "forbidden_import"),
    ("import torch.utils.cpp_extension", "forbidden_import"),
    ("from math import *", "forbidden_import"),
    ("from . import helpers", "forbidden_import"),
    ("eval('1 + 1')", "forbidden_builtin"),
    ("exec('x = 1')", "forbidden_builtin"),
    ("open('/etc/passwd').read()", "forbidden_builtin"),
    ("__import__('os').system('ls')", "forbidden_builtin"),
    ("compile('1', 'f', 'eval')", "forbidden_builtin"),
    ("getattr(torch, 'matmul')", "forbidden_builtin"),
    ("globals()['x'] = 1", "forbidden_builtin"),
    ("t = ().__class__.__bases__[0].__subclasses__()", "dunder_access"),
    ("b = __builtins__", "forbidden_builtin"),
    ("__name__ = '__main__'", "dunder_access"),
    ("triton.compile(None)", "forbidden_call"),
    ("triton.runtime.build._build('m', 'src.c', '.')", "forbidden_call"),
    # Library functions held as values: the rules cannot follow their calls (the sandbox's
    # torch guard refuses them as they run too).
    ("ops = [torch.matmul]", "module_as_value"),
    ("m = torch", "module_as_value"),
    ("torch.save = print", "module_assignment"),
    ("torch.Tensor.add = torch.Tensor.sub", "module_assignment"),
    ("t = type(x)", "forbidden_builtin"),
    # torch.cuda's members beyond the allowed calls: the jiterator compiles CUDA C++ from a
    # string and launches it inside torch, where the run-time guard does not look (round 19)
    ("jit = torch.cuda.jiterator._create_jit_fn", "module_as_value"),
    # What tells Triton's interpreter from a GPU: the kernel object (a JITFunction there, an
    # InterpretedFunction here) and a launch's result (the compiled kernel there, None here). The
    # interpreter judges races, so an answer reading them could race on the GPU alone.
    ("scaled_add_kernel.src", "kernel_as_value"),
    ("probe = scaled_add_kernel[(1,)](x, y, x, 0, 1.0)", "kernel_as_value"),
    ("assert scaled_add_kernel[(1,)](x, y, x, 0, 1.0) is None", "kernel_as_value"),
    ("kernels = {torch.float32: scaled_add_kernel}", "kernel_as_value"),
    ("print(scaled_add_kernel)", "kernel_as_value"),
    ("probe = triton.jit(scaled_add)", "kernel_as_value"),  # a kernel made by a call, not a decorator
    ("z = hasattr(x, 'shape')", "forbidden_builtin"),
])
def test_escapes_are_forbidden(line: str, code: str) -> None:
    verdict = check_answer(fenced(with_launcher_line(line)), ENTRY)
    assert verdict.outcome is Outcome.FORBIDDEN_CONSTRUCT
    assert code in [d.code for d in verdict.diagnostics]
    assert any(d.line == 19 for d in verdict.diagnostics if d.code == code)


@pytest.mark.parametrize("line, code", [
    # Modules re-exported under allowed names: the rules look the path up in the library.
    ("from typing import sys", "module_path"),
    ("from triton.language.core import builtins", "module_path"),
    ("from triton.language.core import inspect as ins", "module_path"),
    ("tl.core.inspect.getfile(triton)", "module_path"),
    ("z = torch.os.getcwd()", "module_path"),
    ("z = torch.cuda.os", "module_path"),
    # The interpreter's machinery by name, and builtins as attributes.
    ("z = typing_alias.sys.modules", "module_path"),
    ("run = tl.core.builtins.exec", "forbidden_builtin"),
    ("z = x.getattr", "forbidden_builtin"),
    ("import typing\n    typing.get_type_hints(scaled_add)", "module_path"),
    ("import functools\n    functools._lru_cache_wrapper(len, 1, False, dict)", "module_path"),
    ("with torch._C.DisableTorchFunction():\n        pass", "torch_compute"),
])
def test_modules_reached_through_allowed_ones_are_forbidden(line: str, code: str) -> None:
    """The routes the sandbox catalogue's answers took to os, exec and ctypes (#36)."""
    verdict = check_answer(fenced(with_launcher_line(line)), ENTRY)
    assert verdict.outcome is Outcome.FORBIDDEN_CONSTRUCT, verdict.diagnostics
    assert code in [d.code for d in verdict.diagnostics], verdict.diagnostics


def test_modules_of_the_allowed_libraries_themselves_stay_allowed() -> None:
    line = "from triton.language.extra import libdevice\n    from torch import nn\n    import triton.language.core"
    assert check_answer(fenced(with_launcher_line(line)), ENTRY).ok


@pytest.mark.parametrize("line", [
    "z = torch.matmul(x, y)",
    "z = x @ y",
    "z = torch.nn.functional.softmax(x, dim=0)",
    "z = torch.softmax(x, 0)",
    "z = x.sum()",
    "z = x.exp()",
    "z = x + y",
    "z = -x",
    "z = x * 2",
    "x += y",
    "z = x > 0",
    "z = x[y.long()]",
    "x[:] = y",
    "z = x.T",
    "z = x.to(torch.float16)",
    "z = x.half()",
    "z = x.clone()",
    "z = sum(x)",
    "z = torch.randn(3)",
    "z = torch.compile(len)",
    "z = torch.ops.aten.add(x, y)",
    "mm = torch.matmul\n    z = mm(x, y)",
    "w = x.view(-1)\n    z = w.cumsum(0)",
    "for row in x:\n        z = row * 2",
])
def test_pytorch_doing_the_work_is_forbidden(line: str) -> None:
    verdict = check_answer(fenced(with_launcher_line(line)), ENTRY)
    assert verdict.outcome is Outcome.FORBIDDEN_CONSTRUCT, verdict.diagnostics
    assert "torch_compute" in [d.code for d in verdict.diagnostics]


def test_pytorch_in_a_helper_called_with_tensors_is_forbidden() -> None:
    code = with_launcher_line("y = _double(y)") + "\n\ndef _double(t):\n    return t * 2\n"
    assert "torch_compute" in codes(code)


def test_pytorch_inside_a_kernel_is_forbidden() -> None:
    """In Triton's interpreter a kernel's body is plain Python: torch there would just run."""
    code = changed(GOOD, "    mask = offs < n\n", "    mask = offs < n\n    torch.matmul(x_ptr, y_ptr)\n")
    assert "torch_compute" in codes(code)


@pytest.mark.parametrize("line", [
    "z = torch.empty((x.shape[0], 2), dtype=x.dtype, device=x.device)",
    "z = torch.zeros_like(x).zero_()",
    "z = x.new_empty(3).fill_(0.5)",
    "z = x.reshape(-1, 1).squeeze(1).unsqueeze(0).flatten()",
    "z = x.to(x.device)",
    "z = x.stride(0) * x.size(0) + x.numel() - x.dim() + x.element_size()",
    "z = scale * 2.0 - 1",
    "z = x.shape[0] // 2 if x.is_contiguous() else 0",
    "if x.dtype != torch.float32:\n        raise ValueError('f32 only')",
    "if x is None:\n        return x",
    "props = torch.cuda.get_device_properties(0)",
    "z = triton.next_power_of_2(x.numel())",
    "from triton.runtime import driver\n    sm = driver.active.utils.get_device_properties(0)",
    "from triton.language.extra import libdevice",
])
def test_allocation_shapes_and_launch_helpers_are_allowed(line: str) -> None:
    verdict = check_answer(fenced(with_launcher_line(line)), ENTRY)
    assert verdict.ok, verdict.diagnostics


def test_forbidden_beats_no_kernel_and_syntax_beats_both() -> None:
    no_kernel_and_forbidden = changed(changed(GOOD, "@triton.jit\n", ""), "import math", "import os")
    assert check_answer(no_kernel_and_forbidden, ENTRY).outcome is Outcome.FORBIDDEN_CONSTRUCT
    assert check_answer(no_kernel_and_forbidden + "\ndef (", ENTRY).outcome is Outcome.SYNTAX_ERROR


def test_every_violation_is_reported_with_its_line() -> None:
    code = with_launcher_line("import os\n    z = x.sum()\n    eval('1')")
    found = {(d.code, d.line) for d in check_answer(code, ENTRY).diagnostics}
    assert {("forbidden_import", 19), ("torch_compute", 20), ("forbidden_builtin", 21)} <= found


# -- the emitted Triton of every task is a correct answer by these rules ---------------------


def task_goldens() -> list:
    from kernelgen.errors import KernelgenError
    from kernelgen.task.spec import load_tasks

    try:
        return [pytest.param(task, id=task.id) for task in load_tasks()]
    except KernelgenError as exc:
        return [pytest.param(None, id="tasks", marks=pytest.mark.skip(reason=f"the tasks do not load: {exc}"))]


@pytest.mark.parametrize("task", task_goldens())
def test_emitted_golden_passes_the_rules(task) -> None:
    """No false positives on real kernels: the emitted Triton of each golden AST passes."""
    golden = task.golden
    entry = EntryPoint(wrapper_name(golden), tuple(golden.inputs),
                       tuple(L.Input(name=o.name, dtype=o.dtype) for o in golden.outputs))
    verdict = check_answer(fenced(emit_triton(check(golden))), entry)
    assert verdict.ok, verdict.diagnostics


# -- the prompt ------------------------------------------------------------------------------


def test_the_system_prompt_states_the_rules_from_their_tables() -> None:
    prompt = system_prompt()
    assert "```python" in prompt and "@triton.jit" in prompt and "kernel[grid](...)" in prompt
    for call in ALLOWED_TORCH_CALLS:
        if not call.startswith("torch.cuda."):
            assert call in prompt, call
    for method in ALLOWED_TENSOR_METHODS:
        assert f".{method}()" in prompt, method
    assert "numpy" not in prompt


def test_the_task_prompt_gives_the_exact_signature() -> None:
    tasks = pytest.importorskip("kernelgen.task.spec")
    try:
        task = next(t for t in tasks.load_tasks() if any(i.shape is None for i in t.signature.inputs))
    except tasks.TaskError as exc:
        pytest.skip(f"the tasks do not load: {exc}")
    entry = EntryPoint.for_task(task)
    system, user = baseline_messages(task)
    assert system.role == "system" and system.content == system_prompt()
    assert user.role == "user" and user.content == task_prompt(task)
    assert task.render_prompt() in user.content
    assert f"`{entry.python_signature()}`" in user.content
    assert entry.name == task.id and entry.python_signature().startswith(f"def {task.id}(")
    scalar = next(i for i in task.signature.inputs if i.shape is None)
    assert f"{scalar.name}: {'float' if scalar.dtype in ('f32', 'f16', 'bf16') else 'int'}" in user.content


def test_python_signature_of_several_outputs() -> None:
    entry = EntryPoint("stats", (L.Input(name="x", dtype="f32", shape=["N"]), L.Input(name="k", dtype="i32")),
                       (L.Input(name="lo", dtype="f32", shape=[]), L.Input(name="hi", dtype="f32", shape=[])))
    assert entry.python_signature() == "def stats(x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]"
    assert entry.tensor_positions == frozenset({0})
