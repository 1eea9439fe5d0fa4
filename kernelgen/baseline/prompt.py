"""The raw-LLM baseline's prompt: the answer's form and the rules it is checked by
(:mod:`kernelgen.baseline.answer`, whose tables it states), and each task's exact signature."""

from __future__ import annotations

from kernelgen.baseline.answer import ALLOWED_IMPORTS, ALLOWED_TENSOR_METHODS, ALLOWED_TORCH_CALLS, EntryPoint

TORCH_DTYPE_OF = {"f32": "torch.float32", "f16": "torch.float16", "bf16": "torch.bfloat16", "f64": "torch.float64",
                   "i32": "torch.int32", "i64": "torch.int64", "bool": "torch.bool", "i8": "torch.int8",
                   "u8": "torch.uint8", "i16": "torch.int16"}

def system_prompt() -> str:
    """What every baseline prompt says: the answer's form and the rules it is checked by."""
    allowed_calls = ", ".join(sorted(c.removeprefix("torch.") for c in ALLOWED_TORCH_CALLS
                                     if not c.startswith("torch.cuda.")))
    methods = ", ".join(f".{m}()" for m in sorted(ALLOWED_TENSOR_METHODS))
    return "\n".join([
        "You write GPU kernels in Triton (triton 3.x, Python) for PyTorch tensors.",
        "",
        "Answer with one Markdown code block, ```python ... ```, holding a complete Python module:",
        "- one or more @triton.jit kernels that do all of the computation;",
        "- a launcher: a Python function with exactly the name, the arguments (names and order) and the "
        "return value the task gives. It receives contiguous CUDA tensors, allocates the outputs, computes "
        "the grid and launches the kernel as kernel[grid](...), then returns the outputs.",
        "",
        "The answer is checked before it runs, and fails on any of:",
        f"- an import other than {', '.join(m for m in ALLOWED_IMPORTS if m != '__future__')} "
        "(and triton.language.extra.libdevice, and driver from triton.runtime);",
        "- PyTorch computing outside the kernel: the launcher may call torch." + allowed_calls.replace(", ", ", torch.")
        + " to allocate, and the tensor methods " + methods + " (.to() only to move between devices), and read "
        ".shape, .dtype and .device; no other torch function (torch.matmul, torch.softmax, F.*), no tensor "
        "arithmetic, comparison or indexing with tensors, no dtype conversion;",
        "- eval, exec, compile, open, getattr, hasattr, type and similar builtins, attributes with double "
        "underscores, and any use of os, sys, subprocess or the network;",
        "- a @triton.jit kernel used other than launched as a statement, kernel[grid](...): no reading its "
        "attributes or the launch's result, no passing it to a function or storing it;",
        "- a module, or a torch or triton function, held as a value (in a list, a default argument, a variable) "
        "instead of called where it is named, and assigning to a library's members.",
        "The same limits on PyTorch hold while the code runs: a torch call outside them stops the run.",
        "",
        "Write no tests, no example usage and no prints.",
    ])


def task_prompt(task) -> str:
    """The user message for a :class:`kernelgen.task.spec.Task`: its semantics and exact signature."""
    entry = EntryPoint.for_task(task)
    outputs = [o.name for o in entry.outputs]
    returns = outputs[0] if len(outputs) == 1 else f"({', '.join(outputs)}) as a tuple"
    # A dtype variable's name stands for the dtypes the calls give it (the task's prompt lists them).
    dtypes = ", ".join(f"{spec.name}: {TORCH_DTYPE_OF.get(spec.dtype, spec.dtype)}"
                       for spec in (*entry.inputs, *entry.outputs) if spec.shape is not None)
    return "\n".join([
        task.render_prompt(),
        "",
        f"Write the launcher as `{entry.python_signature()}`, returning {returns}.",
        f"Tensor dtypes: {dtypes}." if dtypes else "",
    ]).rstrip() + "\n"


def baseline_messages(task) -> tuple:
    """The chat messages of the baseline for a task: the rules (system) and the task (user)."""
    from kernelgen.model.prompt import Message

    return (Message(role="system", content=system_prompt()), Message(role="user", content=task_prompt(task)))

