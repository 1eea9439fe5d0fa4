"""Triton 3.6's interpreter reduces with a custom combine function (kernelgen's NaN-propagating
maximum, its argmax with torch's tie order) one element at a time, a Python call each: the
baseline's CPU mode spent most of its time there (row_top2: 55 s, 1.4 s a program of 1024
lanes). :func:`kernelgen.baseline.interpreter_fixes.patch_triton_interpreter_reduce` combines neighbouring pairs
as blocks; these kernels check it gives what the interpreter's own reduction gives."""

from __future__ import annotations

import pytest
import torch
from triton.runtime import interpreter

from kernelgen.emit.helpers import HELPERS
from kernelgen.baseline.child import load_module
from kernelgen.baseline.interpreter_fixes import patch_triton_interpreter_reduce

SOURCE = '''
import triton
import triton.language as tl

CALLS = []
''' + HELPERS["_maximum_propagating_nan"] + HELPERS["_argmax_combine"] + '''

@triton.jit
def _counted_maximum(a, b):
    CALLS.append(1)
    return tl.maximum(a, b)


@triton.jit
def _scalar_minimum(a, b):
    if a < b:
        return a
    return b


@triton.jit
def reductions(x, row_max, row_argmax, col_max, total_max, counted, minimum, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)
    cols = tl.arange(0, C)
    block = tl.load(x + rows[:, None] * C + cols[None, :])
    tl.store(row_max + rows, tl.reduce(block, 1, _maximum_propagating_nan))
    index = tl.broadcast_to(cols[None, :], (R, C))
    tl.store(row_argmax + rows, tl.reduce((block, index), 1, _argmax_combine)[1])
    tl.store(col_max + cols[None, :], tl.reduce(block, 0, _maximum_propagating_nan, keep_dims=True))
    tl.store(total_max, tl.reduce(block, None, _maximum_propagating_nan))
    tl.store(counted, tl.reduce(tl.load(x + cols), 0, _counted_maximum))
    tl.store(minimum, tl.reduce(tl.load(x + cols), 0, _scalar_minimum))
'''


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    """The module above, its kernels run by Triton's interpreter."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    path = tmp_path / "reductions.py"
    path.write_text(SOURCE)
    return load_module(path, "reductions")


def _run(kernels, x: torch.Tensor) -> tuple[list[torch.Tensor], int]:
    """The kernel's outputs on ``x`` (R x C), and how many times the counted combine function ran."""
    R, C = x.shape
    outputs = [torch.empty(R), torch.empty(R, dtype=torch.int32), torch.empty(C), torch.empty(1),
               torch.empty(1), torch.empty(1)]
    kernels.CALLS.clear()
    kernels.reductions[(1,)](x, *outputs, R=R, C=C)
    return outputs, len(kernels.CALLS)


@pytest.fixture
def x() -> torch.Tensor:
    """Rows with ties (the argmax takes the lower column) and NaN (it wins, and propagates); the
    first element is not its row's minimum (a combine function that took a block's truth as
    True would keep it)."""
    x = torch.randn(8, 16)
    x[0, 0] = 9.0
    x[1, [3, 9]] = 5.0
    x[2, 6] = float("nan")
    x[3, [2, 12]] = float("nan")
    return x


def test_block_reduction_gives_the_sequential_result(kernels, monkeypatch, x) -> None:
    operations = interpreter.ReduceOps
    monkeypatch.setattr(operations, "generic_reduce", getattr(operations.generic_reduce, "original",
                                                              operations.generic_reduce))
    sequential, calls = _run(kernels, x)
    assert calls == 15  # why the patch exists: one call per element after the first
    patch_triton_interpreter_reduce()
    patch_triton_interpreter_reduce()  # idempotent
    blocked, calls = _run(kernels, x)
    assert calls == 4  # log2(16) block steps
    for got, want in zip(blocked, sequential):
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
    assert blocked[1].tolist() == x.argmax(dim=1).tolist()
    assert blocked[5].item() == x[0].min().item()  # the control-flow combine reduced sequentially
