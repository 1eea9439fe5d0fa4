"""Operations across a block (scans, sort, argsort, top-k, gather, histogram) through every stage
that runs without a GPU: the interpreter's meaning against torch written out independently
(NaN, -0.0, ties, integer wrap-around, out-of-range indices), the TTIR each lowers to, the PTX
compiled from it for sm_90, and the emitted Triton run in Triton's interpreter and compiled by
Triton's frontend for sm_90. The example kernels are in ``block_kernels``."""

from __future__ import annotations

import os
from pathlib import Path

import block_kernels as B
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_emit import (TritonInterpreter, compile_for_sm90, computes_in_bf16, needs_real_triton, rounds_to_bf16,
                       triton_interpreter)  # noqa: F401 (a fixture)

from kernelgen.draw.strategies import block_op_kernels

from kernelgen.check.checker import check
from kernelgen.gpu.compile import compile_kernel
from kernelgen.emit.module import emit_triton, wrapper_name
from kernelgen.errors import InterpreterError
from kernelgen.interp.execute import interpret
from kernelgen.lower.lowering import lower
from kernelgen.lang.parse import kernel_from_obj

NAN, INF = float("nan"), float("inf")


def checked(doc: dict, meta: dict[str, int] | None = None):
    return check(kernel_from_obj(doc), meta)


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal values, NaN where NaN, and the sign of each zero."""
    return a.shape == b.shape and a.dtype == b.dtype and bool(((a == b) | (a.isnan() & b.isnan())).all()) and \
        bool((a.signbit() == b.signbit())[a == 0].all())


# ---------------------------------------------------------------------------------------------
# The interpreter's meaning


def test_row_cumsum_and_running_max_with_nan_and_reverse() -> None:
    x = torch.tensor([[1.0, 2.0, NAN, 4.0, -1.0], [3.0, -3.0, 0.5, 8.0, 2.0]])
    for reverse in (False, True):
        out = interpret(checked(B.row_cumsum(reverse=reverse)), [x])
        flip = (lambda t: t.flip(1)) if reverse else (lambda t: t)
        want = flip(torch.cumsum(flip(x).double(), 1)).float()
        assert same_bits(out["out"], want)
        peak = flip(torch.cummax(flip(x), 1).values)
        assert same_bits(out["peak"], peak)
    # NaN carries onward only: before it the maximum is the numbers'
    assert interpret(checked(B.row_cumsum()), [x])["peak"][0].tolist()[:2] == [1.0, 2.0]


def test_integer_cumsum_wraps_around() -> None:
    x = torch.tensor([[2**30, 2**30, 2**30, 5]], dtype=torch.int32)
    out = interpret(checked(B.row_cumsum("i32")), [x])["out"]
    assert out.tolist() == [[2**30, -2**31, -2**30, -2**30 + 5]]


def test_row_sort_orders_nan_last_negative_zero_first_and_ties_by_index() -> None:
    x = torch.tensor([[3.0, 0.0, -0.0, NAN, 1.0, 3.0, -INF, 0.0, 2.0]])
    out = interpret(checked(B.row_sort()), [x])
    assert same_bits(out["out"], torch.tensor([[-INF, -0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 3.0, NAN]]))
    assert out["order"].tolist() == [[6, 2, 1, 7, 4, 8, 0, 5, 3]]
    down = interpret(checked(B.row_sort(descending=True)), [x])
    assert same_bits(down["out"], torch.tensor([[NAN, 3.0, 3.0, 2.0, 1.0, 0.0, 0.0, -0.0, -INF]]))
    assert down["order"].tolist() == [[3, 0, 5, 8, 4, 1, 7, 2, 6]]  # ties keep index order descending too


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f64", "i32", "i64"])
def test_row_sort_of_each_dtype_is_torchs_sort(dtype: str) -> None:
    torch_dtype = {"f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64, "i32": torch.int32,
                   "i64": torch.int64}[dtype]
    x = (torch.randn(3, 13, generator=torch.Generator().manual_seed(1)) * 50).to(torch_dtype)
    doc = B.row_sort(dtype)
    if dtype in ("f64", "i64"):  # argsort takes 32-bit keys: keep the values only
        doc["body"] = doc["body"][:-1]
        doc["outputs"], doc["params"] = doc["outputs"][:1], [p for p in doc["params"] if p["name"] != "order"]
    out = interpret(checked(doc), [x])
    assert torch.equal(out["out"], torch.sort(x, dim=1).values)
    if "order" in out:
        assert torch.equal(out["order"].long(), torch.sort(x, dim=1, stable=True).indices)


def test_topk_of_a_row_gives_values_and_first_indices() -> None:
    x = torch.tensor([[5.0, 1.0, 5.0, -2.0, 7.0, 0.0], [1.0, 2.0, 3.0, 4.0, NAN, 3.0]])
    out = interpret(checked(B.row_topk()), [x])
    assert same_bits(out["top"], torch.tensor([[7.0, 5.0, 5.0, 1.0], [NAN, 4.0, 3.0, 3.0]]))
    assert out["at"].tolist() == [[4, 0, 2, 1], [4, 3, 2, 5]]


def test_histogram_counts_masked_lanes_only() -> None:
    x = torch.tensor([1, 2, 2, 7, 0] * 9, dtype=torch.int32)
    out = interpret(checked(B.block_histogram()), [x])["counts"]
    for p in range(2):
        want = torch.bincount(x[32 * p: 32 * (p + 1)].long(), minlength=8).to(torch.int32)
        assert torch.equal(out[p], want)
    assert int(out.sum()) == x.numel()


def test_a_histogram_value_outside_the_bins_is_an_error() -> None:
    x = torch.tensor([1, 2, 8, 0], dtype=torch.int32)
    with pytest.raises(InterpreterError) as caught:
        interpret(checked(B.block_histogram()), [x])
    assert (caught.value.path, caught.value.code) == ("/body/3/value", "index_out_of_range")
    assert "histogram value 8 is outside 0..7" in str(caught.value)


def test_gather_permutes_each_row_and_refuses_an_index_outside_it() -> None:
    x = torch.randn(3, 10, generator=torch.Generator().manual_seed(2))
    perm = torch.stack([torch.randperm(10, generator=torch.Generator().manual_seed(r)) for r in range(3)]).int()
    out = interpret(checked(B.row_gather()), [x, perm])["out"]
    assert torch.equal(out, torch.gather(x, 1, perm.long()))
    perm[1, 4] = 10  # inside the block (16), outside the row's values: still read from the block
    assert interpret(checked(B.row_gather()), [x, perm])["out"][1, 4] == 0.0  # masked lanes loaded 0
    perm[1, 4] = 16
    with pytest.raises(InterpreterError) as caught:
        interpret(checked(B.row_gather()), [x, perm])
    assert caught.value.code == "index_out_of_range" and "gather index 16 is outside 0..15" in str(caught.value)


def test_a_gather_from_a_small_source_reads_the_table_rows() -> None:
    table = torch.randn(2, 32, generator=torch.Generator().manual_seed(3))
    idx = torch.randint(0, 2, (32, 32), generator=torch.Generator().manual_seed(4), dtype=torch.int32)
    out = interpret(checked(B.small_source_gather()), [table, idx])["out"]
    assert torch.equal(out, torch.gather(table, 0, idx.long()))


# ---------------------------------------------------------------------------------------------
# TTIR and PTX

KERNELS = {"row_cumsum": B.row_cumsum(), "row_cumsum_i64": B.row_cumsum("i64", reverse=True),
           "row_sort": B.row_sort(), "row_sort_bf16_down": B.row_sort("bf16", descending=True),
           "row_sort_i32": B.row_sort("i32"), "row_topk": B.row_topk(), "row_topk_f16": B.row_topk("f16", k=8),
           "block_histogram": B.block_histogram(), "tile_histogram": B.tile_histogram(), "row_gather": B.row_gather(),
           "small_source_gather": B.small_source_gather(), "gather_beside_cumsum": B.gather_beside_cumsum()}
TTIR = {"row_cumsum": ['"tt.scan"', "reverse = false", "arith.addf", "arith.maximumf", "tt.scan.return"],
        "row_cumsum_i64": ["reverse = true", "arith.addi", "arith.maxsi"],
        "row_sort": ["tt.bitcast", "tt.reshape", '"tt.reduce"', "arith.xori", "arith.cmpi sgt", "arith.shli"],
        "row_sort_bf16_down": ["tt.bitcast", "i16"],
        "row_sort_i32": ['"tt.reduce"', "arith.xori"],
        "row_topk": ["arith.maxsi", "tt.bitcast"],
        "row_topk_f16": ["i16"],
        "block_histogram": ["tt.histogram"],
        "tile_histogram": ["tt.reshape", "tt.histogram", "arith.select"],
        "row_gather": ["tt.gather", "axis = 1"],
        "small_source_gather": ["tt.broadcast", "tt.reshape", "tt.gather", "axis = 0"],
        "gather_beside_cumsum": ["tt.gather", "tt.expand_dims", '"tt.scan"', "axis = 2", '"tt.reduce"']}


@pytest.mark.parametrize("name", list(KERNELS))
def test_each_kernel_lowers_to_the_ops_triton_would_build(name: str) -> None:
    ttir = lower(checked(KERNELS[name])).ttir
    for op in TTIR[name]:
        assert op in ttir, op


@pytest.mark.parametrize("name", list(KERNELS))
def test_each_kernel_compiles_to_ptx_for_sm_90(name: str) -> None:
    ptx = compile_kernel(checked(KERNELS[name]), "sm_90", in_process=True, cache=False).ptx
    assert ".visible .entry" in ptx and ".target sm_90" in ptx


def test_a_masked_histogram_reaches_the_gpu_with_no_reshape_free_to_reorder_its_lanes() -> None:
    """Triton 3.6 marks a 1-D reshape used only by reductions or histograms ``allow_reorder``,
    values and mask each on its own: the H200 then counted lanes against other lanes' mask bits.
    The histogram the GPU compiles takes no mask, and no reordering reshape feeds it."""
    ttgir = compile_kernel(checked(B.tile_histogram()), "sm_90", in_process=True, cache=False).ttgir
    defined = {line.split("=")[0].strip(): line for line in ttgir.splitlines() if " = " in line}
    histograms = [line for line in ttgir.splitlines() if "tt.histogram" in line]
    assert histograms
    for line in histograms:
        operands = line.split("tt.histogram")[1].split(":")[0].split(",")
        assert len(operands) == 1, line
        assert "allow_reorder" not in defined[operands[0].strip()], defined[operands[0].strip()]


def test_a_block_of_one_element_sorts_and_a_full_topk_is_a_descending_sort() -> None:
    tiny = checked(B.row_sort(), {"BLOCK": 1})
    assert ".visible .entry" in compile_kernel(tiny, "sm_90", in_process=True, cache=False).ptx
    assert interpret(tiny, [torch.tensor([[2.5]])])["out"].tolist() == [[2.5]]
    full = checked(B.row_topk(k=16), {"BLOCK": 16})
    assert ".visible .entry" in compile_kernel(full, "sm_90", in_process=True, cache=False).ptx


def test_a_scan_in_a_kernel_with_a_gather_compiles_walled_off_from_its_layout() -> None:
    """Triton 3.6 gives a gather's result a layout sized for its source (repeated to 512
    elements); on a smaller block a tt.scan that takes it on fails ConvertTritonGPUToLLVM (a
    random tile kernel, cummax of a [1, 1] block added to a gather's result). The lowering puts
    such a scan between a leading axis of 1 and a reduction over it; a kernel without a gather
    keeps the plain scan."""
    for block in (1, 4):
        for warps in (1, 4):
            kernel = B.gather_beside_cumsum(block)
            kernel["num_warps"] = warps
            ptx = compile_kernel(checked(kernel), "sm_90", in_process=True, cache=False).ptx
            assert ".visible .entry" in ptx, (block, warps)
    assert '"tt.reduce"' not in lower(checked(B.row_cumsum())).ttir
    x = torch.tensor([[1.0, 2.0, 4.0], [8.0, -1.0, 0.5]])
    out = interpret(checked(B.gather_beside_cumsum()), [x])["out"]
    assert torch.equal(out, x.cumsum(1) + torch.cat([x[:, 1:], torch.zeros(2, 1)], 1))


# ---------------------------------------------------------------------------------------------
# The emitted Triton

INPUTS = {
    "row_cumsum": lambda: [torch.tensor([[1.0, 2.0, NAN, 4.0, -1.0], [3.0, -3.0, 0.5, 8.0, 2.0]])],
    "row_cumsum_i64": lambda: [torch.tensor([[2**62, 2**62, 3, -9, 4]], dtype=torch.int64)],
    "row_sort": lambda: [torch.tensor([[3.0, 0.0, -0.0, NAN, 1.0, 3.0, -INF, 0.0, 2.0], [1.0] * 9])],
    "row_sort_i32": lambda: [torch.tensor([[3, -5, 3, 2**31 - 1, -2**31, 0, 7]], dtype=torch.int32)],
    "row_topk": lambda: [torch.tensor([[5.0, 1.0, 5.0, -2.0, 7.0, 0.0], [1.0, 2.0, 3.0, 4.0, NAN, 3.0]])],
    "row_topk_f16": lambda: [torch.tensor([[5.0, 1.0, 5.0, -0.0, 7.0, 0.0, 0.0, 1.5, 2.0, NAN]], dtype=torch.float16)],
    "block_histogram": lambda: [torch.tensor([1, 2, 2, 7, 0, 3] * 7, dtype=torch.int32)],
    "tile_histogram": lambda: [torch.randint(0, 8, (700,), generator=torch.Generator().manual_seed(5), dtype=torch.int32)],
    "gather_beside_cumsum": lambda: [torch.tensor([[1.0, 2.0, 4.0], [8.0, -1.0, 0.5], [NAN, 3.0, -0.0]])],
    "row_gather": lambda: [torch.randn(3, 10, generator=torch.Generator().manual_seed(2)),
                           torch.stack([torch.randperm(10, generator=torch.Generator().manual_seed(r))
                                        for r in range(3)]).int()],
}


@pytest.mark.parametrize("name", list(INPUTS))
def test_emitted_triton_agrees_with_the_interpreter(name: str, triton_interpreter: TritonInterpreter) -> None:
    """Exact agreement (bits, NaN places, zero signs), except the f32 cumsum's rounding order."""
    kernel = checked(KERNELS[name])
    args = dict(zip((i.name for i in kernel.kernel.inputs), INPUTS[name]()))
    expected = interpret(kernel, args)
    actual = triton_interpreter.run(emit_triton(kernel), wrapper_name(kernel.kernel), list(args.values()))
    for (output, want), got in zip(expected.items(), actual):
        if name == "row_cumsum" and output == "out":
            torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6, equal_nan=True)
        else:
            assert same_bits(got, want), f"{output}: {got} != {want}"


GPU_INPUTS = {**INPUTS, "row_sort_bf16_down": lambda: [torch.tensor(
    [[3.0, 0.0, -0.0, NAN, 1.0, 3.0, -INF, 0.0, 2.0, 0.0078125]], dtype=torch.bfloat16)]}


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(GPU_INPUTS))
def test_the_gpu_agrees_with_the_interpreter_bit_for_bit(name: str) -> None:
    """The compiled TTIR on the GPU: the same bits (zero signs, NaN places, tie order) as the
    interpreter, but the f32 cumsum (a tree of additions)."""
    from kernelgen.gpu.compile import default_target
    from kernelgen.gpu.launch import run_on_gpu

    kernel = checked(KERNELS[name])
    args = dict(zip((i.name for i in kernel.kernel.inputs), GPU_INPUTS[name]()))
    actual = run_on_gpu(compile_kernel(kernel, default_target()), kernel, args, to_cpu=True)
    for output, want in interpret(kernel, args).items():
        if name == "row_cumsum" and output == "out":
            torch.testing.assert_close(actual[output], want, rtol=1e-6, atol=1e-6, equal_nan=True)
        else:
            assert same_bits(actual[output], want), f"{output}: {actual[output]} != {want}"


@needs_real_triton
@pytest.mark.parametrize("name", list(KERNELS))
def test_emitted_triton_compiles_for_sm_90(name: str, tmp_path: Path) -> None:
    assert ".visible .entry" in compile_for_sm90(checked(KERNELS[name]), tmp_path)


# ---------------------------------------------------------------------------------------------
# Random kernels of the blocks template (every output an operation across a tile)

RANDOM = settings(max_examples=8, deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                         HealthCheck.data_too_large])


@RANDOM
@given(data=st.data())
def test_random_block_kernels_agree_in_tritons_interpreter(data: st.DataObject,
                                                            triton_interpreter: TritonInterpreter) -> None:
    generated = data.draw(block_op_kernels())
    kernel = check(generated.kernel)
    if computes_in_bf16(kernel) or rounds_to_bf16(kernel):
        return  # NumPy has no bf16: compiled below instead
    args = generated.arguments(seed=5)
    expected = interpret(kernel, args)
    actual = triton_interpreter.run(emit_triton(kernel), wrapper_name(kernel.kernel), list(args.values()))
    problems = generated.mismatches(expected, dict(zip(expected, actual)))
    assert not problems, "\n".join(problems) + "\n" + emit_triton(kernel)


@RANDOM
@given(data=st.data())
def test_random_block_kernels_compile_to_ptx_both_ways(data: st.DataObject, tmp_path_factory) -> None:
    """kernelgen's TTIR through Triton's backend, and the emitted Triton through its frontend."""
    kernel = check(data.draw(block_op_kernels()).kernel)
    assert ".visible .entry" in compile_kernel(kernel, "sm_90", in_process=True, cache=False).ptx
    if os.environ.get("TRITON_INTERPRET") != "1":
        assert ".visible .entry" in compile_for_sm90(kernel, tmp_path_factory.mktemp("blocks"))
