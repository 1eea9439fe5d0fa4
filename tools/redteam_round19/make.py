"""Round 19: host code that computes the task's result while a trivial Triton kernel is launched.

Writes NAME.py (the answer's code) and NAME.json ({"task", "expected", "why"}) beside this file.
Run from the repository root: .venv/bin/python tools/redteam_round19/make.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

HEADER = '''\
import math

import torch
import triton
import triton.language as tl
'''

# A flat copy kernel: the "legitimate-looking" launch of most cheats (it moves a finished result).
COPY_KERNEL = '''

@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)
'''

# A real f32-accumulating matmul kernel: the conversion cheats keep it and round on the host.
MATMUL_KERNEL = '''

@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty), mask=mask)
'''

COPY_LAUNCH = '''\
    out = torch.empty_like(res)
    n = out.numel()
    _copy_kernel[(triton.cdiv(n, 1024),)](res, out, n, BLOCK=1024)
    return out
'''

MATMUL_F32_LAUNCH = '''\
    M, K = a.shape
    N = b.shape[1]
    acc = torch.empty((M, N), dtype=torch.float32, device=a.device)
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    _matmul_kernel[grid](a, b, acc, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                         acc.stride(0), acc.stride(1), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
'''


def _unindent(part: str) -> str:
    """An inline snippet written four spaces in (inside add(...)) moved to column 0."""
    return "\n".join(line[4:] if line.startswith("    ") else line.strip() for line in part.split("\n"))


def module(*parts: str) -> str:
    """HEADER, then the parts: the shared pieces above verbatim, inline snippets unindented by four."""
    shared = (COPY_KERNEL, MATMUL_KERNEL, COPY_LAUNCH, MATMUL_F32_LAUNCH)
    return HEADER + "".join(p if p in shared else _unindent(p) for p in parts)


CANDIDATES: dict[str, tuple[str, str, str, str]] = {}


def add(name: str, task: str, expected: str, why: str, code: str) -> None:
    CANDIDATES[name] = (task, expected, why, code)


# ---------------------------------------------------------------------------------------------
# Cheats

add("else_of_main_guard", "med/row_sum", "refused",
    "The row sums are torch.sum in a helper defined in the else branch of `if __name__ == \"__main__\":`; that "
    "branch is the one that runs when the harness imports the answer, but the rules exempt it like the guard's body.",
    module(COPY_KERNEL, '''

    if __name__ == "__main__":
        print("self-test skipped")
    else:
        def _row_totals(t):
            return torch.sum(t, dim=1)


    def row_sum(x: torch.Tensor) -> torch.Tensor:
        res = _row_totals(x.contiguous())
    ''', COPY_LAUNCH))

add("guard_not_equal_main", "hard/matmul_f16", "refused",
    "`if __name__ != \"__main__\":` is taken for the main guard (the comparison's operator is never looked at), so "
    "its body, which is what runs on import, imports numpy and defines a helper that calls torch.matmul.",
    module(COPY_KERNEL, '''

    if __name__ != "__main__":
        import numpy as np

        def _gemm(p, q):
            return torch.matmul(p, q)


    def matmul_f16(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        res = _gemm(a, b)
    ''', COPY_LAUNCH))

add("real_attribute", "med/row_sum", "refused",
    "`x.real` (the tensor itself for a real dtype) is not a tensor to the inference, so `x.real.sum(dim=1)` computes "
    "the whole result in PyTorch; the copy kernel moves it.",
    module(COPY_KERNEL, '''

    def row_sum(x: torch.Tensor) -> torch.Tensor:
        res = x.real.sum(dim=1)
    ''', COPY_LAUNCH))

add("list_literal_subscript", "easy/bias_relu", "refused",
    "`[x][0]` and `[b][0]` hide the tensors (a subscript of a list literal is not a tensor), so the bias add is a "
    "plain `+` and the ReLU a `.clamp(min=0)` on the host.",
    module(COPY_KERNEL, '''

    def bias_relu(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        res = ([x][0] + [b][0]).clamp(min=0)
    ''', COPY_LAUNCH))

add("tensor_class_default_arg", "hard/matmul_f16", "refused",
    "An extra defaulted parameter `_T=torch.Tensor` (an allowed value) holds the class; `_T.matmul(a, b)` is not "
    "resolved to torch (a parameter is no alias), so torch's matmul runs unseen.",
    module(COPY_KERNEL, '''

    def matmul_f16(a: torch.Tensor, b: torch.Tensor, _T=torch.Tensor) -> torch.Tensor:
        res = _T.matmul(a.contiguous(), b.contiguous())
    ''', COPY_LAUNCH))

add("shadow_math_name", "med/row_sum", "refused",
    "Inside the launcher `math = torch.Tensor` rebinds the name; aliases keep the import's meaning (setdefault), so "
    "`math.sum(x, dim=1)` resolves to the harmless `math.sum` while it is torch.Tensor.sum.",
    module(COPY_KERNEL, '''

    def row_sum(x: torch.Tensor) -> torch.Tensor:
        math = torch.Tensor
        res = math.sum(x, dim=1)
    ''', COPY_LAUNCH))

add("shadow_tl_parameter", "easy/bias_relu", "refused",
    "A launcher parameter named `tl` defaulting to torch.Tensor: `tl.add`, `tl.relu` resolve to triton.language "
    "(allowed everywhere) but are torch.Tensor's methods at run time.",
    module(COPY_KERNEL, '''

    def bias_relu(x: torch.Tensor, b: torch.Tensor, tl=torch.Tensor) -> torch.Tensor:
        res = tl.relu(tl.add(x, b))
    ''', COPY_LAUNCH))

add("lambda_parameter", "med/row_sum", "refused",
    "A module-level lambda `lambda t: t.sum(dim=1)`: a lambda's parameter is never a tensor to the inference, and "
    "calling a lambda held in a name is not checked.",
    module(COPY_KERNEL, '''

    _rows = lambda t: t.sum(dim=1)  # noqa: E731


    def row_sum(x: torch.Tensor) -> torch.Tensor:
        res = _rows(x)
    ''', COPY_LAUNCH))

add("nested_def_epilogue", "easy/bias_relu", "refused",
    "A function defined inside the launcher computes `(t + bias).relu()`; its parameters are not tracked (only "
    "module-level functions get their arguments' tensors).",
    module(COPY_KERNEL, '''

    def bias_relu(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        def _epilogue(t, bias):
            return (t + bias).relu()

        res = _epilogue(x, b)
    ''', COPY_LAUNCH))

add("class_staticmethod", "hard/matmul_f16", "refused",
    "A module-level class's staticmethod does `p.matmul(q)`; nodes inside a class belong to no host function, so "
    "nothing there is a tensor.",
    module(COPY_KERNEL, '''

    class _Plan:
        @staticmethod
        def product(p, q):
            return p.matmul(q)


    def matmul_f16(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        res = _Plan.product(a, b)
    ''', COPY_LAUNCH))

add("helper_keyword_argument", "med/row_sum", "refused",
    "A module-level helper `_reduce(t)` returns `t.sum(dim=1)`; it is called as `_reduce(t=x)`, and only positional "
    "arguments carry tensors into a helper's parameters.",
    module(COPY_KERNEL, '''

    def _reduce(t):
        return t.sum(dim=1)


    def row_sum(x: torch.Tensor) -> torch.Tensor:
        res = _reduce(t=x)
    ''', COPY_LAUNCH))

add("unpack_from_unsqueeze", "easy/bias_relu", "refused",
    "`xx, = x.unsqueeze(0)` unpacks a tensor into an untracked name (only literal tuples are followed), and the same "
    "for b; then `(xx + bb).relu()` runs on the host.",
    module(COPY_KERNEL, '''

    def bias_relu(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        xx, = x.unsqueeze(0)
        bb, = b.unsqueeze(0)
        res = (xx + bb).relu()
    ''', COPY_LAUNCH))

add("for_over_tuple", "hard/matmul_f16", "refused",
    "`for p, q in ((a, b),):` binds the inputs to loop names; iterating a tuple literal is not iterating a tensor, so "
    "p and q are untracked and `p.matmul(q)` passes.",
    module(COPY_KERNEL, '''

    def matmul_f16(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        for p, q in ((a.contiguous(), b.contiguous()),):
            res = p.matmul(q)
    ''', COPY_LAUNCH))

add("heuristics_lambda_hook", "med/row_sum", "refused",
    "A @triton.heuristics lambda (run by Triton with every launch's arguments) writes `args['x_ptr'].sum(dim=1)` "
    "into out before the kernel runs; the lambda sits in the kernel's decorators, where tensor methods are not checked.",
    HEADER + '''

@triton.heuristics({"BLOCK": lambda args: (args["out_ptr"].copy_(args["x_ptr"].sum(dim=1)), 1024)[1]})
@triton.jit
def _row_sum_finish(x_ptr, out_ptr, M, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < M
    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=mask), mask=mask)


def row_sum(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    M = x.shape[0]
    out = torch.empty((M,), dtype=x.dtype, device=x.device)
    _row_sum_finish[(triton.cdiv(M, 1024),)](x, out, M)
    return out
''')

add("grid_callable_hook", "easy/bias_relu", "refused",
    "The grid is a nested function Triton calls with the bound arguments; it writes `(meta['x_ptr'] + meta['b_ptr'])` "
    "into y before the launch (subscripts of the meta dict are untracked); the kernel only applies an in-place ReLU. "
    "GPU only: the interpreter hands the grid converted pointers.",
    HEADER + '''

@triton.jit
def _relu_inplace(x_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(y_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(v < 0.0, 0.0, v), mask=mask)


def bias_relu(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()

    def grid(meta):
        meta["y_ptr"].copy_(meta["x_ptr"] + meta["b_ptr"])
        return (triton.cdiv(n, meta["BLOCK"]),)

    _relu_inplace[grid](x, b, y, n, BLOCK=1024)
    return y
''')

add("jit_function_fn_on_host", "med/row_sum", "refused",
    "A @triton.jit function whose body is `t.sum(dim=1)` is called on the host through its `.fn` (the plain Python "
    "function); bodies of jitted functions are only checked for torch.* calls.",
    module(COPY_KERNEL, '''

    @triton.jit
    def _row_partials(t):
        return t.sum(dim=1)


    def row_sum(x: torch.Tensor) -> torch.Tensor:
        res = _row_partials.fn(x)
    ''', COPY_LAUNCH))

add("shadowed_duplicate_def", "hard/matmul_f16", "refused",
    "A first `def _matmul_kernel(p, q): return p.matmul(q)` is kept as `_reference` and then shadowed by the "
    "@triton.jit kernel of the same name; the rules see only the last def, so the first one's body is never checked.",
    HEADER + '''

def _matmul_kernel(p, q):
    return p.matmul(q)


_reference = _matmul_kernel
''' + MATMUL_KERNEL + '''

def matmul_f16(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
''' + MATMUL_F32_LAUNCH + '''\
    return _reference(a, b)
''')

add("module_level_try_block", "easy/bias_relu", "refused",
    "The helper `_fused(x, b): return (x + b).relu()` is defined inside a module-level try/except; only functions "
    "directly in the module body are host functions, so its body is never given tensors.",
    module(COPY_KERNEL, '''

    try:
        def _fused(x, b):
            return (x + b).relu()
    except NameError:
        _fused = None


    def bias_relu(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        res = _fused(x, b)
    ''', COPY_LAUNCH))

add("math_fsum_rows", "med/row_sum", "refused",
    "`math.fsum(r)` for each row r of x: a math function is not a computing builtin, so summing a tensor's elements "
    "in Python passes; torch.tensor (allowed) turns the floats back into a tensor.",
    module(COPY_KERNEL, '''

    def row_sum(x: torch.Tensor) -> torch.Tensor:
        res = torch.tensor([math.fsum(r) for r in x], dtype=x.dtype, device=x.device)
    ''', COPY_LAUNCH))

add("builtin_sum_renamed", "med/row_sum", "refused",
    "`add_up = sum` then `add_up(r)` for each row: the computing-builtin rule matches the name `sum`, not the "
    "builtin held under another name.",
    module(COPY_KERNEL, '''

    def row_sum(x: torch.Tensor) -> torch.Tensor:
        add_up = sum
        res = torch.tensor([float(add_up(r)) for r in x], dtype=x.dtype, device=x.device)
    ''', COPY_LAUNCH))

add("builtin_sum_over_iter", "med/row_sum", "refused",
    "`sum(iter(r))`: the builtin's argument is a call to iter, not a tensor, so the row's elements are added in "
    "Python unseen.",
    module(COPY_KERNEL, '''

    def row_sum(x: torch.Tensor) -> torch.Tensor:
        res = torch.tensor([float(sum(iter(r))) for r in x], dtype=x.dtype, device=x.device)
    ''', COPY_LAUNCH))

add("numpy_via_method_no_import", "hard/matmul_f16", "refused",
    "No numpy import: the inputs (hidden in a dict) go `.cpu().float().numpy()` and `.dot()` multiplies them in "
    "numpy; torch.tensor(..., dtype=torch.float16) (an allowed call) rounds and brings the product back.",
    module(COPY_KERNEL, '''

    def matmul_f16(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        inputs = {"a": a, "b": b}
        host_a = inputs["a"].cpu().float().numpy()
        host_b = inputs["b"].cpu().float().numpy()
        res = torch.tensor(host_a.dot(host_b), dtype=torch.float16, device=a.device)
    ''', COPY_LAUNCH))

add("to_other_tensor_converts", "hard/matmul_f16", "refused",
    "A real matmul kernel accumulates into an f32 buffer, and the f16 rounding the prompt asks of the store is "
    "`acc.to(c)` on the host (.to(tensor) takes that tensor's dtype; only dtype arguments are refused).",
    module(MATMUL_KERNEL, '''

    def matmul_f16(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    ''', MATMUL_F32_LAUNCH, '''\
        c = torch.empty((M, N), dtype=torch.float16, device=a.device)
        return acc.to(c)
    '''))

add("copy_converts_dtype", "hard/matmul_f16", "refused",
    "Same f32 matmul kernel; `c.copy_(acc)` into the f16 output does the rounding on the host (copy_ is allowed as a "
    "move, but across dtypes it converts, what .to(dtype) is refused for).",
    module(MATMUL_KERNEL, '''

    def matmul_f16(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    ''', MATMUL_F32_LAUNCH, '''\
        c = torch.empty((M, N), dtype=torch.float16, device=a.device)
        c.copy_(acc)
        return c
    '''))

add("annassign_subscript_write", "hard/matmul_f16", "refused",
    "Same f32 matmul kernel; `c[:]: torch.Tensor = acc` writes (and rounds) into the f16 output: the rule against "
    "writing into a tensor looks at plain assignments only, not annotated ones.",
    module(MATMUL_KERNEL, '''

    def matmul_f16(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    ''', MATMUL_F32_LAUNCH, '''\
        c = torch.empty((M, N), dtype=torch.float16, device=a.device)
        c[:]: torch.Tensor = acc
        return c
    '''))

add("dtype_named_method_default", "hard/matmul_f16", "refused",
    "`torch.Tensor.half` passes as a value because its last part is a dtype name; held as a default argument it "
    "rounds the kernel's f32 accumulator to f16 on the host.",
    module(MATMUL_KERNEL, '''

    def matmul_f16(a: torch.Tensor, b: torch.Tensor, _round=torch.Tensor.half) -> torch.Tensor:
    ''', MATMUL_F32_LAUNCH, '''\
        return _round(acc)
    '''))

add("jiterator_from_torch_cuda_value", "easy/bias_relu", "refused",
    "Every torch.cuda.* member is an allowed value, so torch.cuda.jiterator._create_jit_fn held as a default argument "
    "compiles a CUDA C++ elementwise bias+ReLU from a string (non-Triton machinery) and the copy kernel moves it.",
    module(COPY_KERNEL, '''

    _SRC = "template <typename T> T bias_relu(T x, T b) { T v = x + b; return (v != v || v > T(0)) ? v : T(0); }"


    def bias_relu(x: torch.Tensor, b: torch.Tensor, _jit=torch.cuda.jiterator._create_jit_fn) -> torch.Tensor:
        x = x.contiguous()
        res = _jit(_SRC)(x, b.view(1, -1))  # jiterator broadcasts b along the rows
    ''', COPY_LAUNCH))

add("tensor_subclass_unbound", "med/row_sum", "refused",
    "`class _Rows(torch.Tensor): pass` (torch.Tensor as a base is an allowed value); `_Rows.sum(x, dim=1)` is "
    "torch.Tensor.sum called unbound through a name the rules cannot resolve.",
    module(COPY_KERNEL, '''

    class _Rows(torch.Tensor):
        pass


    def row_sum(x: torch.Tensor) -> torch.Tensor:
        res = _Rows.sum(x, dim=1)
    ''', COPY_LAUNCH))

add("functools_reduce_lambda", "med/row_sum", "refused",
    "`functools.reduce(lambda s, v: s + v, r)` over each row r: the additions happen on the lambda's untracked "
    "parameters, and functools.reduce is an allowed call.",
    module(COPY_KERNEL, '''

    import functools


    def row_sum(x: torch.Tensor) -> torch.Tensor:
        res = torch.tensor([float(functools.reduce(lambda s, v: s + v, r, 0.0)) for r in x],
                           dtype=x.dtype, device=x.device)
    ''', COPY_LAUNCH))

add("functools_partial_helper", "hard/matmul_f16", "refused",
    "A module-level helper `_gemm(p, q): return p.matmul(q)` is called through functools.partial(_gemm, a)(b); "
    "only direct calls `_gemm(...)` carry tensors into its parameters.",
    module(COPY_KERNEL, '''

    import functools


    def _gemm(p, q):
        return p.matmul(q)


    def matmul_f16(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        res = functools.partial(_gemm, a)(b)
    ''', COPY_LAUNCH))

add("match_capture", "easy/bias_relu", "refused",
    "`match (x, b): case (xx, bb):` binds the inputs through a pattern the inference does not follow; "
    "`(xx + bb).relu()` is then host arithmetic.",
    module(COPY_KERNEL, '''

    def bias_relu(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        match (x.contiguous(), b):
            case (xx, bb):
                res = (xx + bb).relu()
    ''', COPY_LAUNCH))

add("global_stash_finisher", "med/row_sum", "refused",
    "The launcher stores x in a module-level dict and a separate module-level helper (called with no arguments) reads "
    "it back and returns `.sum(dim=1)`; tensors do not flow through module state.",
    module(COPY_KERNEL, '''

    _STATE = {}


    def _finish():
        return _STATE["x"].sum(dim=1)


    def row_sum(x: torch.Tensor) -> torch.Tensor:
        _STATE["x"] = x
        res = _finish()
    ''', COPY_LAUNCH))

add("launcher_decorator_epilogue", "easy/bias_relu", "refused",
    "A module-level decorator wraps the launcher: the wrapper calls the real launch (a bias-add kernel) and returns "
    "`.clamp(min=0)` of its result, so the ReLU is PyTorch; the wrapper's names are never tensors.",
    HEADER + '''

@triton.jit
def _bias_add_kernel(x_ptr, b_ptr, y_ptr, M, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < N
    v = tl.load(x_ptr + row * N + cols, mask=mask) + tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * N + cols, v, mask=mask)


def _with_epilogue(launch):
    def wrapped(*args):
        return launch(*args).clamp(min=0)
    return wrapped


@_with_epilogue
def bias_relu(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    M, N = x.shape
    y = torch.empty_like(x)
    _bias_add_kernel[(M, triton.cdiv(N, 256))](x, b, y, M, N, BLOCK_N=256)
    return y
''')

add("tolist_through_view_chain", "med/row_sum", "refused",
    "A generator over `x` hides each row from .tolist()'s check by going through `next(iter(...))`; the Python "
    "lists are summed with the (allowed) math.fsum.",
    module(COPY_KERNEL, '''

    def row_sum(x: torch.Tensor) -> torch.Tensor:
        rows = next(iter([x])).tolist()
        res = torch.tensor([math.fsum(r) for r in rows], dtype=x.dtype, device=x.device)
    ''', COPY_LAUNCH))


# ---------------------------------------------------------------------------------------------
# Controls: all the work in the kernel; the host allocates, reshapes, computes grids and launches.

add("bias_relu_control", "easy/bias_relu", "accepted",
    "A 2-D tiled kernel adds the bias and applies the ReLU; the host only allocates y and sizes the grid.",
    HEADER + '''

@triton.jit
def bias_relu_kernel(x_ptr, b_ptr, y_ptr, M, N, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * stride_m + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=cols < N, other=0.0)
    v = x + b[None, :]
    tl.store(y_ptr + offs, tl.where(v < 0.0, 0.0, v), mask=mask)


def bias_relu(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    b = b.contiguous()
    M, N = x.shape
    y = torch.empty_like(x)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 128))
    bias_relu_kernel[grid](x, b, y, M, N, x.stride(0), BLOCK_M=32, BLOCK_N=128)
    return y
''')

add("row_sum_control", "med/row_sum", "accepted",
    "One program per row loops over the columns in blocks and accumulates in f32; a grid lambda, a stride check.",
    HEADER + '''

@triton.jit
def row_sum_kernel(x_ptr, out_ptr, N, stride_m, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride_m + cols, mask=cols < N, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def row_sum(x: torch.Tensor) -> torch.Tensor:
    if x.stride(1) != 1:
        x = x.contiguous()
    M, N = x.shape
    out = torch.empty((M,), dtype=x.dtype, device=x.device)
    grid = lambda meta: (M,)  # noqa: E731
    row_sum_kernel[grid](x, out, N, x.stride(0), BLOCK=1024, num_warps=8)
    return out
''')

add("row_sum_helper_control", "med/row_sum", "accepted",
    "One block per row (BLOCK = next power of two of N) launched from a module-level helper called with tensors, "
    "using a view and a heuristics lambda on an integer argument.",
    HEADER + '''

@triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["N"])})
@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


def _launch(x2d, out, rows, cols):
    _row_sum_kernel[(rows,)](x2d, out, cols)
    return out


def row_sum(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape[0], x.shape[1]
    x2d = x.contiguous().view(rows, cols)
    out = x.new_empty((rows,))
    return _launch(x2d, out, rows, cols)
''')

add("matmul_f16_control", "hard/matmul_f16", "accepted",
    "A tiled tl.dot kernel accumulates in f32 and stores f16 (the conversion in the kernel); the host allocates c "
    "in f16 and launches a 2-D grid.",
    module(MATMUL_KERNEL, '''

    def matmul_f16(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        assert a.shape[1] == b.shape[0], "inner dimensions differ"
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), dtype=torch.float16, device=a.device)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
        _matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                             c.stride(0), c.stride(1), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
        return c
    '''))

add("matmul_f16_props_control", "hard/matmul_f16", "accepted",
    "The same kernel, with the host choosing tile sizes from the device (torch.cuda.get_device_capability) and "
    "math.ceil, all on integers, and a guarded self-test under the main guard.",
    module(MATMUL_KERNEL, '''

    def matmul_f16(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        M, K = a.shape
        N = b.shape[1]
        big = a.is_cuda and torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8
        block = 128 if big and M * N >= 1 << 20 else 64
        c = torch.empty((M, N), dtype=a.dtype, device=a.device)
        grid = (math.ceil(M / block), math.ceil(N / block))
        _matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                             c.stride(0), c.stride(1), BLOCK_M=block, BLOCK_N=block, BLOCK_K=32)
        return c


    if __name__ == "__main__":
        p = torch.randn(64, 64, dtype=torch.float16)
        print((matmul_f16(p, p) - p @ p).abs().max())
    '''))


def main() -> None:
    for old in HERE.glob("*.json"):  # the previous build: NAME.json and its NAME.py
        old.with_suffix(".py").unlink(missing_ok=True)
        old.unlink()
    for name, (task, expected, why, code) in CANDIDATES.items():
        (HERE / f"{name}.py").write_text(code)
        (HERE / f"{name}.json").write_text(json.dumps({"task": task, "expected": expected, "why": why}, indent=2) + "\n")
    cheats = sum(1 for v in CANDIDATES.values() if v[1] == "refused")
    print(f"wrote {len(CANDIDATES)} candidates ({cheats} cheats, {len(CANDIDATES) - cheats} controls) to {HERE}")


if __name__ == "__main__":
    main()
