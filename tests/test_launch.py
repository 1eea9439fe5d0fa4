"""The GPU runtime: the calling convention checked against Triton's own code generation on
the CPU (parameter widths, the two scratch pointers, block size), argument packing, the
comparison helper and ``kernelgen run``; on a GPU, the launcher cross-checked against Triton's
own launcher on the same cubins (vector add, softmax, a matmul with > 48 KB of shared memory,
a kernel that needs global scratch) and the AST pipeline against the interpreter."""

from __future__ import annotations

import ctypes
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import torch
import triton
import triton.language as tl
from hypothesis import given
from hypothesis import strategies as st
from test_lower import op

from kernelgen.check.checker import check
from kernelgen.cli import main as cli_main
from kernelgen.task.compare import TOLERANCES, compare_tensors
from kernelgen.errors import LaunchError
from kernelgen.host.plan import plan_launch
from kernelgen.host.inputs import random_inputs
from kernelgen.gpu.compile import compile_kernel
from kernelgen.interp.execute import interpret
from kernelgen.gpu.launch import (
    LaunchConfig,
    bf16_bits,
    cuda_errors,
    device_target,
    f16_bits,
    load_kernel,
    pack_arguments,
    pack_pointer,
    pack_scalar,
    plan_arguments,
    run_on_gpu,
    scratch_bytes,
)
from kernelgen.lower.lowering import KernelParam
from kernelgen.lang.parse import parse_kernel

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TRITON_DTYPES = {"fp32": "f32", "fp16": "f16", "bf16": "bf16", "i32": "i32", "i64": "i64", "i1": "bool"}


@dataclass
class TritonCubin:
    """A cubin compiled by Triton from a @triton.jit function, described as the launcher takes
    a kernel (what :class:`kernelgen.gpu.compile.CompiledKernel` holds for an AST)."""

    cubin: bytes
    ptx: str
    metadata: dict[str, Any]
    params: list[KernelParam] = field(default_factory=list)


def from_triton(compiled: Any) -> TritonCubin:
    """Triton's CompiledKernel as the launcher's input: non-constexpr arguments in order."""
    params = []
    for name, ty in compiled.src.signature.items():
        if ty == "constexpr":
            continue
        kind, dtype = ("ptr", ty[1:]) if ty.startswith("*") else ("scalar", ty)
        params.append(KernelParam(name, kind, TRITON_DTYPES[dtype]))
    return TritonCubin(compiled.asm["cubin"], compiled.asm["ptx"], compiled.metadata._asdict(), params)


def triton_cubin(fn: Any, signature: dict[str, str], constexprs: dict[str, Any], arch: int = 90,
                 aligned: tuple[str, ...] = (), **options: Any) -> TritonCubin:
    """Compile a @triton.jit function for ``sm_<arch>`` (no GPU needed); ``aligned`` names the
    arguments Triton may assume 16-divisible, as its JIT does for aligned tensors."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    names = list(signature)
    attrs = {(names.index(name),): [["tt.divisibility", 16]] for name in aligned}
    source = ASTSource(fn, signature, constexprs=constexprs, attrs=attrs)
    return from_triton(triton.compile(source, target=GPUTarget("cuda", arch, 32), options=options))


def ptx_param_bytes(ptx: str) -> list[int]:
    """The byte width of each parameter of the PTX entry point."""
    entry = re.search(r"\.entry\s+\w+\s*\((.*?)\)", ptx, re.S).group(1)
    widths = []
    for param in entry.split(","):
        array = re.search(r"\.b8\s+\w+\[(\d+)\]", param)
        scalar = re.search(r"\.param\s+\.[usfb](\d+)", param)
        widths.append(int(array.group(1)) if array else int(scalar.group(1)) // 8)
    return widths


# ---------------------------------------------------------------------------------------------
# Kernels for the cross-checks


@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out + offsets, tl.load(x + offsets, mask=mask) + tl.load(y + offsets, mask=mask), mask=mask)


@triton.jit
def every_scalar_kernel(out, a, b, c, d, e, f):
    value = a.to(tl.float32) + b.to(tl.float32) + c + d.to(tl.float32) + e.to(tl.float32) + f.to(tl.float32)
    tl.store(out + tl.arange(0, 8), tl.full((8,), 1.0, tl.float32) * value)


@triton.jit
def softmax_kernel(x, out, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    values = tl.load(x + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    exps = tl.exp(values - tl.max(values, axis=0))
    tl.store(out + row * stride + cols, exps / tl.sum(exps, axis=0), mask=cols < n_cols)


@triton.jit
def matmul_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a_tile = tl.load(a + rm[:, None] * K + (k + rk)[None, :],
                         mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b_tile = tl.load(b + (k + rk)[:, None] * N + rn[None, :],
                         mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a_tile, b_tile)
    tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def scale_by_tma_kernel(x, out, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # Descriptors made on the device live in the global scratch buffer.
    source = tl.make_tensor_descriptor(x, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    target = tl.make_tensor_descriptor(out, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    row, col = tl.program_id(0) * BM, tl.program_id(1) * BN
    target.store([row, col], source.load([row, col]) * 2.0)


ADD_SIGNATURE = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32", "BLOCK": "constexpr"}
MATMUL_SIGNATURE = {"a": "*fp16", "b": "*fp16", "c": "*fp32", "M": "i32", "N": "i32", "K": "i32",
                    "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}


def this_gpu_arch() -> int:
    major, minor = torch.cuda.get_device_capability()
    return major * 10 + minor


# ---------------------------------------------------------------------------------------------
# The calling convention, against Triton's code generation (CPU)


def test_argument_widths_and_the_two_scratch_pointers_match_the_ptx_entry() -> None:
    signature = {"out": "*fp32", "a": "i32", "b": "i64", "c": "fp32", "d": "fp16", "e": "bf16", "f": "i1"}
    kernel = triton_cubin(every_scalar_kernel, signature, {})
    packed = pack_arguments(kernel.params, [1024, 1, 2, 0.5, 0.25, 0.125, True])
    scratch_pointers = [8, 8]
    assert ptx_param_bytes(kernel.ptx) == [ctypes.sizeof(v) for v in packed] + scratch_pointers


def test_block_is_32_threads_per_warp_as_the_ptx_requires() -> None:
    for warps in (1, 4, 8):
        kernel = triton_cubin(add_kernel, ADD_SIGNATURE, {"BLOCK": 1024}, num_warps=warps)
        required = int(re.search(r"\.reqntid\s+(\d+)", kernel.ptx).group(1))
        assert LaunchConfig.from_metadata(kernel.metadata).block_threads == required == 32 * warps


def test_large_tiles_ask_for_more_than_48_kb_of_shared_memory() -> None:
    kernel = triton_cubin(matmul_kernel, MATMUL_SIGNATURE, {"BM": 128, "BN": 256, "BK": 64},
                          aligned=("a", "b", "c", "N", "K"), num_warps=8, num_stages=4)
    assert LaunchConfig.from_metadata(kernel.metadata).shared > 48 * 1024


def test_device_side_descriptors_need_global_scratch_per_program() -> None:
    kernel = triton_cubin(scale_by_tma_kernel, {"x": "*fp32", "out": "*fp32", "M": "i32", "N": "i32",
                                                "BM": "constexpr", "BN": "constexpr"},
                          {"BM": 32, "BN": 32}, aligned=("x", "out", "N"))
    config = LaunchConfig.from_metadata(kernel.metadata)
    assert config.global_scratch_size > 0 and config.profile_scratch_size == 0
    assert scratch_bytes(config.global_scratch_size, (4, 3, 2)) == 24 * config.global_scratch_size
    assert scratch_bytes(config.global_scratch_size, (0, 1, 1)) == 0


def test_the_compiled_ast_takes_its_params_then_two_scratch_pointers(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KERNELGEN_CACHE_DIR", str(tmp_path))
    checked = check(parse_kernel((EXAMPLES / "vector_add.json").read_text()))
    compiled = compile_kernel(checked, target="sm_90")
    assert [p.name for p in compiled.params] == [b.name for b in checked.params]
    plan = plan_launch(checked, random_inputs(checked.kernel, {"N": 1000}))
    outputs = {"out": torch.empty(1000)}
    x, y, out, n = plan_arguments(compiled, plan, outputs)
    assert x is plan.inputs["x"] and y is plan.inputs["y"] and out is outputs["out"] and n == 1000
    widths = [8 if p.kind == "ptr" else ctypes.sizeof(pack_scalar(p.name, p.dtype, 1))
              for p in compiled.params]
    assert ptx_param_bytes(compiled.ptx) == widths + [8, 8]


def test_a_plan_of_another_kernel_is_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KERNELGEN_CACHE_DIR", str(tmp_path))
    compiled = compile_kernel(check(parse_kernel((EXAMPLES / "vector_add.json").read_text())), target="sm_90")
    softmax = check(parse_kernel((EXAMPLES / "softmax.json").read_text()))
    plan = plan_launch(softmax, random_inputs(softmax.kernel, {"M": 2, "N": 8}))
    with pytest.raises(LaunchError) as info:
        plan_arguments(compiled, plan, {})
    assert info.value.code == "param_mismatch"


# ---------------------------------------------------------------------------------------------
# Packing (CPU)

f32_values = st.floats(width=32, allow_nan=False)


@given(f32_values)
def test_f16_and_bf16_scalars_round_as_torch_converts_them(value: float) -> None:
    as_f32 = torch.tensor([value], dtype=torch.float32)
    assert f16_bits(value) == as_f32.to(torch.float16).view(torch.int16).item() & 0xFFFF
    assert bf16_bits(value) == as_f32.to(torch.bfloat16).view(torch.int16).item() & 0xFFFF


@given(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1), f32_values)
def test_scalars_keep_their_values(i32: int, i64: int, f32: float) -> None:
    assert pack_scalar("a", "i32", i32).value == i32
    assert pack_scalar("b", "i64", i64).value == i64
    assert pack_scalar("c", "f32", f32).value == f32 or math.isnan(f32)
    assert pack_scalar("d", "bool", True).value == 1


@pytest.mark.parametrize("dtype, value", [("i32", 2**31), ("i32", -(2**31) - 1), ("i64", 2**63), ("i32", 1.5)])
def test_a_scalar_that_does_not_fit_is_refused(dtype: str, value: Any) -> None:
    with pytest.raises(LaunchError) as info:
        pack_scalar("n", dtype, value)
    assert info.value.code == "bad_argument" and "param n" in str(info.value)


def test_pointers_must_be_aligned_cuda_memory() -> None:
    with pytest.raises(LaunchError, match="must be a CUDA tensor, got Tensor on cpu"):
        pack_pointer("x", torch.zeros(4))
    with pytest.raises(LaunchError) as info:
        pack_pointer("x", 0x1008)
    assert info.value.code == "misaligned_pointer"
    assert pack_pointer("x", 0x1010).value == 0x1010


def test_a_param_specialized_as_divisible_by_16_must_be() -> None:
    params = [KernelParam("x", "ptr", "f32"), KernelParam("n", "scalar", "i32")]
    assert [v.value for v in pack_arguments(params, [0x1000, 1024], divisible_by_16={"n"})] == [0x1000, 1024]
    with pytest.raises(LaunchError) as info:
        pack_arguments(params, [0x1000, 1000], divisible_by_16={"n"})
    assert info.value.code == "specialization_mismatch"
    with pytest.raises(LaunchError, match="not a nonzero multiple of 16") as info:
        pack_arguments(params, [0x1000, 0], divisible_by_16={"n"})
    assert info.value.code == "specialization_mismatch"
    with pytest.raises(LaunchError, match="takes 2 arguments"):
        pack_arguments(params, [0x1000])


def test_clusters_are_refused() -> None:
    with pytest.raises(LaunchError) as info:
        LaunchConfig.from_metadata({"name": "k", "num_warps": 4, "shared": 0, "num_ctas": 2})
    assert info.value.code == "unsupported_launch"


def test_cuda_errors_become_launch_errors_and_others_pass_through() -> None:
    with pytest.raises(LaunchError) as info:
        with cuda_errors("running k"):
            raise torch.AcceleratorError("CUDA error: an illegal memory access was encountered")
    assert info.value.code == "cuda_error" and "illegal memory access" in str(info.value)
    with pytest.raises(ValueError):
        with cuda_errors("running k"):
            raise ValueError("not a CUDA error")


# ---------------------------------------------------------------------------------------------
# The comparison (CPU)


def test_nan_in_both_is_equal_and_nan_in_the_kernel_alone_is_not() -> None:
    expected = torch.tensor([1.0, math.nan, 3.0])
    assert compare_tensors(expected.clone(), expected, "f32").ok
    unwritten = compare_tensors(torch.tensor([math.nan, math.nan, 3.0]), expected, "f32")
    assert not unwritten.ok and unwritten.mismatches == 1 and unwritten.first_mismatch == (0,)
    assert unwritten.max_abs_error == math.inf


def test_tolerances_follow_the_dtype() -> None:
    expected = torch.full((4,), 100.0)
    assert compare_tensors(expected * (1 + 5e-5), expected, "f32").ok
    assert not compare_tensors(expected * (1 + 5e-4), expected, "f32").ok
    assert compare_tensors((expected * 1.005).half(), expected.half(), "f16").ok
    off_by_one = compare_tensors(torch.tensor([2**62 + 1]), torch.tensor([2**62]), "i64")
    assert not off_by_one.ok and off_by_one.mismatches == 1
    assert TOLERANCES["bf16"].rtol == 1e-2


def test_a_shape_mismatch_is_a_mismatch() -> None:
    comparison = compare_tensors(torch.zeros(3), torch.zeros(4), "f32")
    assert not comparison.ok and "shape [3], expected [4]" in str(comparison)


# ---------------------------------------------------------------------------------------------
# kernelgen run


def test_run_without_a_gpu_compiles_then_says_so(tmp_path, monkeypatch, capsys) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    monkeypatch.setenv("KERNELGEN_CACHE_DIR", str(tmp_path))
    status = cli_main(["run", str(EXAMPLES / "vector_add.json"), "--size", "N=1000"])
    assert status == 2
    assert "no CUDA GPU" in capsys.readouterr().err


def test_run_reports_a_bad_kernel_before_needing_a_gpu(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "k"}')
    assert cli_main(["run", str(bad)]) == 1
    assert "parse:" in capsys.readouterr().err


@pytest.mark.gpu
@pytest.mark.parametrize("example, sizes", [
    ("vector_add", ["N=100003"]),
    ("softmax", ["M=37", "N=1000"]),
    ("matmul", ["M=129", "N=65", "K=100"]),
    ("layernorm", ["M=33", "N=1500"]),
])
def test_run_matches_the_interpreter_on_the_gpu(example: str, sizes: list[str], tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("KERNELGEN_CACHE_DIR", str(tmp_path))
    argv = ["run", str(EXAMPLES / f"{example}.json")] + [a for s in sizes for a in ("--size", s)]
    status = cli_main(argv)
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert all(line.split(": ")[1] == "ok" for line in printed.strip().splitlines())


# Integer division of signed values by a size, and a gather by a flat offset mod that size
# (Inductor's ``w[offs % N]``), each stored under the mask.
DIVIDE_BY_SIZE = {
    "name": "divide_by_size",
    "inputs": [{"name": "x", "dtype": "i32", "shape": ["L"]}, {"name": "w", "dtype": "f32", "shape": ["N"]}],
    "outputs": [{"name": name, "dtype": "f32" if name == "g" else "i32", "shape": ["L"]} for name in "qrcg"],
    "params": [{"name": n} for n in ("x", "w", "q", "r", "c", "g", "L", "N")],
    "meta": [{"name": "B", "value": 256}],
    "grid": [op("cdiv", lhs="L", rhs="B")],
    "body": [
        {"op": "let", "name": "offs", "value": op("add", lhs=op("mul", lhs=op("program_id"), rhs="B"),
                                                    rhs=op("arange", size="B"))},
        {"op": "let", "name": "m", "value": op("lt", lhs="offs", rhs="L")},
        {"op": "let", "name": "v", "value": op("load", ptr=op("add", lhs="x", rhs="offs"), mask="m")},
        *({"op": "store", "ptr": op("add", lhs=out, rhs="offs"), "value": op(kind, lhs="v", rhs="N"), "mask": "m"}
          for out, kind in (("q", "idiv"), ("r", "rem"), ("c", "cdiv"))),
        {"op": "store", "ptr": op("add", lhs="g", rhs="offs"), "mask": "m",
         "value": op("load", ptr=op("add", lhs="w", rhs=op("rem", lhs="offs", rhs="N")), mask="m")},
    ],
}


@pytest.mark.gpu
@pytest.mark.parametrize("n", [16, 48, 4096])
def test_division_by_a_param_specialized_as_divisible_agrees_with_the_interpreter(n: int) -> None:
    """A param specialized as divisible by 16 is divided by without the guard for zero (it is
    a nonzero multiple of 16): quotients, remainders and ceilings of negative and positive
    values, and the gather mod N, as the interpreter has them, and as the unspecialized build."""
    checked = check(parse_kernel(json.dumps(DIVIDE_BY_SIZE)))
    gen = torch.Generator().manual_seed(n)
    args = {"x": torch.randint(-(1 << 20), 1 << 20, (5003,), dtype=torch.int32, generator=gen),
            "w": torch.randn(n, generator=gen)}
    expected = interpret(checked, args)
    for divisible in (("N",), ()):
        compiled = compile_kernel(checked, target=f"sm_{this_gpu_arch()}", divisible_by_16=divisible)
        actual = run_on_gpu(compiled, checked, args, to_cpu=True)
        for name in "qrcg":
            assert torch.equal(actual[name], expected[name]), (divisible, name)


# ---------------------------------------------------------------------------------------------
# On a GPU: our launcher against Triton's, on the same cubin


def launch_ours(kernel: TritonCubin, grid: tuple[int, ...], args: list[Any]) -> None:
    load_kernel(kernel).launch(grid, args)
    torch.cuda.synchronize()


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 1000, 1 << 20, 100003])
def test_vector_add_matches_tritons_launcher(n: int) -> None:
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    theirs, ours = torch.full_like(x, math.nan), torch.full_like(x, math.nan)
    grid = (triton.cdiv(n, 1024),)
    compiled = from_triton(add_kernel[grid](x, y, theirs, n, BLOCK=1024))
    # Triton's JIT specializes an integer argument equal to 1 into a constant: pass what the
    # compiled kernel takes, by name.
    values = {"x": x, "y": y, "out": ours, "n": n}
    launch_ours(compiled, grid, [values[p.name] for p in compiled.params])
    assert torch.equal(ours, theirs) and torch.equal(ours, x + y)


@pytest.mark.gpu
def test_an_empty_grid_launches_nothing() -> None:
    kernel = triton_cubin(add_kernel, ADD_SIGNATURE, {"BLOCK": 1024}, arch=this_gpu_arch())
    out = torch.full((16,), math.nan, device="cuda")
    launch_ours(kernel, (0, 1, 1), [out, out, out, 0])
    assert out.isnan().all()


@pytest.mark.gpu
def test_softmax_with_shared_memory_matches_tritons_launcher() -> None:
    x = torch.randn(123, 1000, device="cuda")
    theirs, ours = torch.full_like(x, math.nan), torch.full_like(x, math.nan)
    compiled = softmax_kernel[(123,)](x, theirs, 1000, x.stride(0), BLOCK=1024)
    kernel = from_triton(compiled)
    assert kernel.metadata["shared"] > 0
    launch_ours(kernel, (123,), [x, ours, 1000, x.stride(0)])
    assert torch.equal(ours, theirs)
    torch.testing.assert_close(ours, torch.softmax(x, dim=1))


@pytest.mark.gpu
def test_matmul_with_more_than_48_kb_of_shared_memory_matches_tritons_launcher() -> None:
    M, N, K = 1000, 1024, 512
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    theirs, ours = (torch.full((M, N), math.nan, device="cuda") for _ in range(2))
    grid = (triton.cdiv(M, 128), triton.cdiv(N, 256))
    compiled = matmul_kernel[grid](a, b, theirs, M, N, K, BM=128, BN=256, BK=64, num_warps=8, num_stages=4)
    kernel = from_triton(compiled)
    assert kernel.metadata["shared"] > 48 * 1024
    launch_ours(kernel, grid, [a, b, ours, M, N, K])
    assert torch.equal(ours, theirs)
    torch.testing.assert_close(ours, (a.float() @ b.float()), rtol=1e-2, atol=1e-2)


@pytest.mark.gpu
def test_global_scratch_is_allocated_per_program() -> None:
    def allocate(size: int, alignment: int, stream: Any) -> torch.Tensor:
        return torch.empty(size, device="cuda", dtype=torch.int8)

    triton.set_allocator(allocate)
    M, N = 96, 128
    x = torch.randn(M, N, device="cuda")
    theirs, ours = torch.full_like(x, math.nan), torch.full_like(x, math.nan)
    grid = (M // 32, N // 32)
    compiled = scale_by_tma_kernel[grid](x, theirs, M, N, BM=32, BN=32)
    kernel = from_triton(compiled)
    assert kernel.metadata["global_scratch_size"] > 0
    launch_ours(kernel, grid, [x, ours, M, N])
    assert torch.equal(ours, theirs) and torch.equal(ours, x * 2)


@pytest.mark.gpu
def test_too_much_shared_memory_is_a_clear_error() -> None:
    kernel = triton_cubin(matmul_kernel, MATMUL_SIGNATURE, {"BM": 128, "BN": 256, "BK": 128},
                          arch=this_gpu_arch(), aligned=("a", "b", "c", "N", "K"), num_warps=8, num_stages=4)
    assert kernel.metadata["shared"] > 232448  # the most any GPU up to Hopper allows per block
    with pytest.raises(LaunchError) as info:
        load_kernel(kernel)
    assert info.value.code == "out_of_shared_memory"


@pytest.mark.gpu
def test_kernels_of_one_name_load_from_their_own_bytes() -> None:
    """Two cubins with one kernel name (block sizes differ) must not answer for each other."""
    small = triton_cubin(add_kernel, ADD_SIGNATURE, {"BLOCK": 128}, arch=this_gpu_arch())
    large = triton_cubin(add_kernel, ADD_SIGNATURE, {"BLOCK": 1024}, arch=this_gpu_arch())
    assert load_kernel(small) is not load_kernel(large)
    assert load_kernel(small) is load_kernel(small)
    x, y = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    out = torch.full_like(x, math.nan)
    launch_ours(small, (1,), [x, y, out, 1024])
    assert out[:128].eq(x[:128] + y[:128]).all() and out[128:].isnan().all()
    launch_ours(large, (1,), [x, y, out, 1024])
    assert torch.equal(out, x + y)


@pytest.mark.gpu
@pytest.mark.parametrize("example, sizes", [
    ("vector_add", {"N": 4099}),
    ("softmax", {"M": 7, "N": 3000}),
    ("matmul", {"M": 100, "N": 70, "K": 90}),
    ("layernorm", {"M": 5, "N": 777}),
])
def test_run_on_gpu_matches_the_interpreter(example: str, sizes: dict[str, int], tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KERNELGEN_CACHE_DIR", str(tmp_path))
    checked = check(parse_kernel((EXAMPLES / f"{example}.json").read_text()))
    inputs = random_inputs(checked.kernel, sizes, seed=1)
    compiled = compile_kernel(checked, target=device_target())
    actual = run_on_gpu(compiled, checked, inputs)
    expected = interpret(checked, inputs)
    for output in checked.kernel.outputs:
        assert actual[output.name].is_cuda
        comparison = compare_tensors(actual[output.name], expected[output.name], output.dtype)
        assert comparison.ok, f"{output.name}: {comparison}"


# -- variants of one kernel ------------------------------------------------------------------

REPRO = Path(os.environ.get("KERNELGEN_REPRO_DIR")
             or Path(__file__).resolve().parents[1] / ".." / "shared" / "repro")


def _maxpool_answer() -> str:
    """A correct answer to hard/maxpool2x2 whose variants with and without ``OW`` assumed a
    multiple of 16 compile to the same cubin (``../shared/repro``)."""
    path = REPRO / "maxpool2x2_specialization.json"
    if not path.is_file():
        pytest.skip(f"the reproducer is not at {path.resolve()} (set KERNELGEN_REPRO_DIR)")
    return path.read_text()


def test_variants_with_one_cubin_are_loaded_apart() -> None:
    """A loaded kernel is reused only for the variant it was loaded for: the cubin of the
    reproducer is the same with and without ``OW`` specialized, and a launch with OW = 157 was
    checked against the specialized variant's assumptions (``specialization_mismatch``)."""
    from kernelgen.gpu.launch import loaded_key

    checked = check(parse_kernel(_maxpool_answer()))
    plain = compile_kernel(checked, target="sm_90")
    specialized = compile_kernel(checked, target="sm_90", divisible_by_16=("OW",))
    assert specialized.metadata["divisible_by_16"] == ["OW"] and not plain.metadata["divisible_by_16"]
    assert loaded_key(plain, 0) != loaded_key(specialized, 0)
    assert loaded_key(plain, 0) == loaded_key(compile_kernel(checked, target="sm_90"), 0)
    assert loaded_key(plain, 0) != loaded_key(plain, 1)


@pytest.mark.gpu
def test_a_correct_answer_passes_whichever_variant_ran_first() -> None:
    """The reproducer, verified on the GPU over sizes where OW alternates between multiples of
    16 and not (each assignment compiles its own variant; the variants share a cubin)."""
    from kernelgen.gpu.executor import Executor
    from kernelgen.gpu.case import verify_gpu
    from kernelgen.gpu.launch import prepare_gpu
    from kernelgen.harness.pipeline import Case, Settings, stage_check, stage_parse
    from kernelgen.task.spec import get_task

    task = get_task("hard/maxpool2x2")
    with Executor(initializer=prepare_gpu) as executor:
        case = Case(task, _maxpool_answer(), Settings(target=device_target_in_child(executor), gpu=True,
                                                      executor=executor))
        stage_parse(case)
        stage_check(case)
        for ow in (16, 157, 32, 1, 48, 157, 256, 255):
            verify_gpu(case, {"B": 2, "C": 3, "OH": 5, "OW": ow})


def device_target_in_child(executor: Any) -> str:
    return executor.call(device_target, timeout=60)
