"""Compiling to cubin: every kernel of the lowering catalogue compiles for sm_90 (and a set for
sm_80/86/89) with Triton's own stages; the cache, the crash-isolating worker and the
``kernelgen compile`` command; on a GPU, every catalogue kernel agrees with the interpreter.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_lower import CASES, VADD, checked_case, wrapped_copy

from kernelgen.check.checker import ValueType, check
from kernelgen.cli import main as cli_main
from kernelgen.gpu.compile import (CompiledKernel, CompilerProcess, cache_directory, cache_key, cache_load,
                               cache_store, compile_in_process, compile_kernel, compiler_process, divisible_params,
                               resolve_options)
from kernelgen.errors import CompileError, CompileTimeout, LoweringError, Outcome
from kernelgen.env import CACHE_DIR_VARIABLE
from kernelgen.host.plan import plan_for_sizes
from kernelgen.lang.nodes import Kernel
from kernelgen.lang.parse import parse_kernel

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ELF_MAGIC = b"\x7fELF"


def vadd():
    return check(Kernel.model_validate(VADD))


def example(name: str):
    return check(parse_kernel((EXAMPLES / f"{name}.json").read_text()))


def assert_complete(compiled: CompiledKernel, target: str) -> None:
    assert compiled.cubin[:4] == ELF_MAGIC
    assert f".visible .entry {compiled.name}(" in compiled.ptx
    assert f".target {target}" in compiled.ptx
    assert "tt.func public" in compiled.ttir and "ttg.num-warps" in compiled.ttgir
    assert "define" in compiled.llir
    for key in ("name", "num_warps", "num_stages", "shared", "global_scratch_size", "global_scratch_align",
                "profile_scratch_size", "profile_scratch_align", "params"):
        assert key in compiled.metadata
    assert compiled.target == compiled.metadata["target"] == target


# ---------------------------------------------------------------------------------------------
# Every kernel compiles


def test_f64_computes_in_double_precision_with_libdevice() -> None:
    """f64 functions are libdevice's double versions and f64 division is div.rn.f64: nothing
    of an f64 kernel goes through f32."""
    ptx = {name: compile_kernel(checked_case(name), "sm_90", in_process=True, cache=False).ptx
           for name in ("exp_f64", "sigmoid_f64", "arith_f64")}
    assert "ex2.approx" not in ptx["exp_f64"] and "cvt.rn.f32.f64" not in ptx["exp_f64"]
    assert "fma.rn.f64" in ptx["exp_f64"] and "ld.global.b64" in ptx["exp_f64"]
    assert "div.rn.f64" in ptx["sigmoid_f64"] and "div.rn.f64" in ptx["arith_f64"]
    assert "cvt.rn.f32.f64" not in ptx["arith_f64"]


@pytest.mark.parametrize("name", list(CASES))
def test_every_catalogue_kernel_compiles_for_sm_90(name: str) -> None:
    checked = checked_case(name)
    compiled = compile_kernel(checked, "sm_90", in_process=True, cache=False)
    assert_complete(compiled, "sm_90")
    assert compiled.name == checked.kernel.name
    assert compiled.params == tuple((p.name, "ptr" if p.type.pointer else "scalar", p.type.dtype) for p in checked.params)


@pytest.mark.parametrize("target", ["sm_80", "sm_86", "sm_89"])
@pytest.mark.parametrize("name", ["vadd", "argmax_bf16", "dot_bf16_ieee_f32", "dot_f32_tf32_f32_acc", "loops"])
def test_kernels_compile_for_older_targets(name: str, target: str) -> None:
    assert_complete(compile_kernel(checked_case(name), target, in_process=True, cache=False), target)


@pytest.mark.parametrize("name", sorted(p.stem for p in EXAMPLES.glob("*.json")))
def test_examples_compile(name: str) -> None:
    assert_complete(compile_kernel(example(name), "sm_90", in_process=True, cache=False), "sm_90")


def test_matmul_uses_tensor_cores() -> None:
    assert "wgmma.mma_async" in compile_kernel(example("matmul"), "sm_90", in_process=True, cache=False).ptx
    assert "mma.sync" in compile_kernel(example("matmul"), "sm_80", in_process=True, cache=False).ptx


def test_vector_add_loads_are_vectorized_when_n_is_a_multiple_of_16() -> None:
    compiled = compile_kernel(vadd(), "sm_90", divisible_by_16=["N"], in_process=True, cache=False)
    assert re.search(r"ld\.global\.(v4|v2)\.b32|ld\.global\.b128", compiled.ptx)
    assert re.search(r"st\.global\.(v4|v2)\.b32|st\.global\.b128", compiled.ptx)
    assert compiled.metadata["divisible_by_16"] == ["N"]
    # Without the guarantee, `offs < N` may change within any group of lanes: one element each.
    plain = compile_kernel(vadd(), "sm_90", in_process=True, cache=False)
    assert "ld.global.v4" not in plain.ptx and "ld.global.b32" in plain.ptx


def test_hints_vectorize_loads_of_offsets_wrapped_with_rem() -> None:
    """Triton's idiom ``(pid * B + arange(B)) rem N`` hides contiguity from the compiler: one
    element per load and store, unless a hint states it (max_contiguous, multiple_of)."""
    accesses = {}
    for hinted in (False, True):
        checked = check(Kernel.model_validate(wrapped_copy(hinted)))
        ptx = compile_kernel(checked, "sm_90", in_process=True, cache=False).ptx
        accesses[hinted] = set(re.findall(r"(?:ld|st)\.global[.:\w]*", ptx))
    assert accesses[False] == {"ld.global.cg.b32", "st.global.L1::evict_last.L2::cache_hint.b32"}
    assert accesses[True] == {"ld.global.cg.v4.b32", "st.global.L1::evict_last.L2::cache_hint.v4.b32"}


def test_offsets_taken_mod_a_param_specialized_as_divisible_vectorize_without_a_hint() -> None:
    """A param specialized as ``divisible_by_16`` is a nonzero multiple of 16, so ``x rem N``
    needs no guard for N = 0; the guard's selects hid N's divisibility from Triton's axis
    analysis, and a column gathered by a flat offset (Inductor's ``offs % N``) loaded one
    element at a time. Unspecialized, the guard stays (division by zero gives 0)."""
    checked = check(Kernel.model_validate(wrapped_copy(False)))
    specialized = compile_kernel(checked, "sm_90", divisible_by_16=["N"], in_process=True, cache=False)
    assert set(re.findall(r"(?:ld|st)\.global[.:\w]*", specialized.ptx)) == {
        "ld.global.cg.v4.b32", "st.global.L1::evict_last.L2::cache_hint.v4.b32"}
    assert re.findall(r"arith\.select|arith\.remsi", specialized.ttir) == ["arith.remsi"]
    plain = compile_kernel(checked, "sm_90", in_process=True, cache=False)
    assert re.findall(r"arith\.select|arith\.remsi", plain.ttir) == ["arith.select", "arith.remsi", "arith.select"]


def test_num_stages_defaults_to_the_kernel_and_a_loop_keeps_its_own() -> None:
    checked = checked_case("staged_row_sums")
    compiled = compile_kernel(checked, "sm_90", in_process=True, cache=False)
    assert compiled.metadata["num_stages"] == 4 and "tt.num_stages = 2" in compiled.ttir
    assert compile_kernel(checked, "sm_90", num_stages=1, in_process=True, cache=False).metadata["num_stages"] == 1


def test_divisible_params_are_the_integer_params_that_are_nonzero_multiples_of_16() -> None:
    checked = vadd()
    assert divisible_params(plan_for_sizes(checked, {"N": 4096})) == ("N",)
    assert divisible_params(plan_for_sizes(checked, {"N": 1000})) == ()
    # 0 is a multiple of 16, but a specialized param is divided by without a guard for zero
    assert divisible_params(plan_for_sizes(checked, {"N": 0})) == ()


def test_num_warps_defaults_to_the_kernel_and_can_be_overridden() -> None:
    checked = check(Kernel.model_validate({**VADD, "num_warps": 8}))
    assert compile_kernel(checked, "sm_90", in_process=True, cache=False).metadata["num_warps"] == 8
    assert compile_kernel(checked, "sm_90", num_warps=2, in_process=True, cache=False).metadata["num_warps"] == 2


@pytest.mark.parametrize("target, num_warps, num_stages, code", [
    ("sm_70", None, 3, "bad_target"), ("hopper", None, 3, "bad_target"),
    ("sm_90", 3, 3, "bad_option"), ("sm_90", 32, 3, "bad_option"), ("sm_90", None, 0, "bad_option")])
def test_bad_options_are_compile_errors(target: str, num_warps: int | None, num_stages: int, code: str) -> None:
    with pytest.raises(CompileError) as caught:
        compile_kernel(vadd(), target, num_warps, num_stages, in_process=True, cache=False)
    assert caught.value.code == code


def test_targets_may_be_spelled_without_the_underscore() -> None:
    assert resolve_options(vadd(), "SM90", None, 3).target == "sm_90"


# ---------------------------------------------------------------------------------------------
# The cache


def test_a_cache_hit_returns_the_stored_kernel_without_compiling(tmp_path: Path, monkeypatch) -> None:
    first = compile_kernel(vadd(), "sm_90", cache_dir=tmp_path, in_process=True)
    assert len(list(tmp_path.rglob("*.kgc"))) == 1

    def no_compiling(*args: Any) -> CompiledKernel:
        raise AssertionError("a cache hit must not compile")

    monkeypatch.setattr("kernelgen.gpu.compile.compile_in_process", no_compiling)
    again = compile_kernel(vadd(), "sm_90", cache_dir=tmp_path, in_process=True)
    assert again == first
    assert again.params == first.params


def test_the_cache_key_covers_everything_the_output_depends_on() -> None:
    checked = vadd()
    base = resolve_options(checked, "sm_90", None, 3)
    keys = {
        cache_key(checked, base),
        cache_key(check(Kernel.model_validate(VADD), {"BLOCK": 512}), base),
        cache_key(checked, dataclasses.replace(base, target="sm_80")),
        cache_key(checked, dataclasses.replace(base, num_warps=8)),
        cache_key(checked, dataclasses.replace(base, num_stages=2)),
        cache_key(checked, dataclasses.replace(base, divisible_by_16=("N",))),
        cache_key(check(Kernel.model_validate({**VADD, "name": "vadd2"})), base),
    }
    assert len(keys) == 7
    assert cache_key(vadd(), base) == cache_key(checked, base)


def test_an_unreadable_entry_is_recompiled_and_rewritten(tmp_path: Path) -> None:
    checked = vadd()
    key = cache_key(checked, resolve_options(checked, "sm_90", None, 3))
    entry = tmp_path / key[:2] / f"{key}.kgc"
    entry.parent.mkdir(parents=True)
    entry.write_bytes(b"\x00\x00\x00\x05{not json")
    assert cache_load(tmp_path, key) is None
    compiled = compile_kernel(checked, "sm_90", cache_dir=tmp_path, in_process=True)
    assert cache_load(tmp_path, key) == compiled


def test_concurrent_writers_never_leave_a_partial_entry(tmp_path: Path) -> None:
    compiled = compile_kernel(vadd(), "sm_90", in_process=True, cache=False)
    key = "ab" + "0" * 62
    failures: list[str] = []

    def write() -> None:
        for _ in range(20):
            cache_store(tmp_path, key, compiled)

    def read() -> None:
        for _ in range(200):
            loaded = cache_load(tmp_path, key)
            if loaded is not None and loaded != compiled:
                failures.append("a reader saw a different entry")

    cache_store(tmp_path, key, compiled)
    threads = [threading.Thread(target=write) for _ in range(4)] + [threading.Thread(target=read) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert [p.name for p in (tmp_path / "ab").iterdir()] == [f"{key}.kgc"]


def test_the_cache_directory_comes_from_the_environment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path))
    assert cache_directory() == tmp_path / "compile"
    assert cache_directory(tmp_path / "given") == tmp_path / "given"
    compile_kernel(vadd(), "sm_90", in_process=True)
    assert len(list(tmp_path.rglob("*.kgc"))) == 1


# ---------------------------------------------------------------------------------------------
# The worker process


def test_a_crash_in_the_compiler_fails_that_job_and_the_next_compile_works() -> None:
    with pytest.raises(CompileError) as caught:
        compiler_process().call(os.abort)
    assert caught.value.code == "compiler_crashed"
    assert "SIGABRT" in str(caught.value)
    compiled = compile_kernel(vadd(), "sm_90", cache=False)
    assert compiled.cubin[:4] == ELF_MAGIC


def test_a_crash_reports_what_the_compiler_printed_during_that_job() -> None:
    compiler_process().call(exec, "import os; os.write(2, b'an earlier job')")
    with pytest.raises(CompileError) as caught:
        compiler_process().call(exec, "import os; os.write(2, b'LLVM ERROR: out of registers'); os.abort()")
    assert caught.value.code == "compiler_crashed"
    assert str(caught.value).endswith("its last output:\nLLVM ERROR: out of registers")


def test_a_compiler_that_exits_fails_the_job_not_the_caller() -> None:
    with pytest.raises(CompileError) as caught:
        compiler_process().call(sys.exit, 3)
    assert caught.value.code == "compiler_error" and "SystemExit" in str(caught.value)


def _running(pid: int) -> bool:
    """Whether any thread of ``pid`` has yet to exit: a killed process's main thread turns
    zombie before its other threads are gone, and until they are its parent cannot reap it."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
        return any((t / "stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X") for t in tasks)
    except FileNotFoundError:
        return False


def test_a_killed_worker_is_replaced_before_the_next_job() -> None:
    compile_kernel(vadd(), "sm_90", cache=False)
    pid = compiler_process().pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    # dead once the kernel has run its exit (a zombie, or reaped): under load that took more
    # than the 0.2 s this test once slept, and the next job met a process still dying
    deadline = time.monotonic() + 30
    while _running(pid):
        assert time.monotonic() < deadline, "the killed compiler process did not die within 30 s"
        time.sleep(0.05)
    assert compile_kernel(vadd(), "sm_90", cache=False).cubin[:4] == ELF_MAGIC
    assert compiler_process().pid not in (None, pid)


def test_a_stuck_job_times_out_and_the_worker_is_replaced() -> None:
    """A compile past its limit ends in timeout, as every job does (issue 32)."""
    with pytest.raises(CompileTimeout) as caught:
        compiler_process().call(time.sleep, 30, timeout=1.0)
    assert caught.value.code == "compile_timeout" and caught.value.outcome == Outcome.TIMEOUT
    assert compile_kernel(vadd(), "sm_90", cache=False).cubin[:4] == ELF_MAGIC


def test_errors_cross_the_process_boundary_with_their_class_and_path() -> None:
    checked = vadd()
    broken = dataclasses.replace(checked, types={**checked.types, "/body/0/value/rhs": ValueType("i32", (512,))})
    with pytest.raises(LoweringError) as caught:
        compile_kernel(broken, "sm_90", cache=False)
    assert (caught.value.path, caught.value.code) == ("/body/0/value/rhs", "mlir_verify")


def test_a_ptxas_failure_is_a_compile_error_with_what_ptxas_said(monkeypatch) -> None:
    # Triton reads PTXAS_OPTIONS when its NVIDIA backend is imported: a fresh worker sees it.
    monkeypatch.setenv("PTXAS_OPTIONS", "--no-such-ptxas-option")
    worker = CompilerProcess()
    try:
        with pytest.raises(CompileError) as caught:
            worker.call(compile_in_process, vadd(), resolve_options(vadd(), "sm_90", None, 3))
    finally:
        worker.close()
    assert caught.value.code == "ptxas_failed"
    assert "no-such-ptxas-option" in str(caught.value)


# ---------------------------------------------------------------------------------------------
# Random well-typed kernels (kernelgen.draw.strategies)


GENERATED = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_generated_kernels_lower_verify_and_compile() -> None:
    strategies = pytest.importorskip("kernelgen.draw.strategies")

    @GENERATED
    @given(st.data())
    def compiles(data: st.DataObject) -> None:
        generated = data.draw(strategies.kernels())
        assert compile_kernel(check(generated.kernel), "sm_90", cache=False).cubin[:4] == ELF_MAGIC

    compiles()


@pytest.mark.gpu
def test_generated_kernels_agree_with_the_interpreter_on_the_gpu() -> None:
    strategies = pytest.importorskip("kernelgen.draw.strategies")
    from kernelgen.interp.execute import interpret
    from kernelgen.gpu.launch import run_on_gpu

    @GENERATED
    @given(st.data())
    def agrees(data: st.DataObject) -> None:
        generated = data.draw(strategies.kernels())
        checked = check(generated.kernel)
        compiled = compile_kernel(checked, cache=False)
        args = generated.arguments()
        assert generated.mismatches(interpret(checked, args), run_on_gpu(compiled, checked, args, to_cpu=True)) == []

    agrees()


def with_ifs(generated: Any) -> bool:
    return bool({"if", "if results"} & generated.constructs())


def test_generated_kernels_with_ifs_lower_verify_and_compile() -> None:
    """scf.if with results of every dtype and shape, nested, inside loops, stores under ifs."""
    strategies = pytest.importorskip("kernelgen.draw.strategies")

    @GENERATED
    @given(st.data())
    def compiles(data: st.DataObject) -> None:
        generated = data.draw(strategies.kernels().filter(with_ifs))
        assert compile_kernel(check(generated.kernel), "sm_90", cache=False).cubin[:4] == ELF_MAGIC

    compiles()


@pytest.mark.gpu
def test_generated_kernels_with_ifs_agree_with_the_interpreter_on_the_gpu() -> None:
    """Per-program branches on the GPU mean what the interpreter's per-program selection says."""
    strategies = pytest.importorskip("kernelgen.draw.strategies")
    from kernelgen.interp.execute import interpret
    from kernelgen.gpu.launch import run_on_gpu

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def agrees(data: st.DataObject) -> None:
        generated = data.draw(strategies.kernels().filter(with_ifs))
        checked = check(generated.kernel)
        compiled = compile_kernel(checked, cache=False)
        args = generated.arguments()
        assert generated.mismatches(interpret(checked, args), run_on_gpu(compiled, checked, args, to_cpu=True)) == []

    agrees()


# ---------------------------------------------------------------------------------------------
# kernelgen compile


@pytest.fixture
def vadd_file(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path / "cache"))
    path = tmp_path / "vadd.json"
    path.write_text(json.dumps(VADD))
    return path


def test_cli_prints_a_stage(vadd_file: Path, capsys) -> None:
    assert cli_main(["compile", str(vadd_file), "--target", "sm_90", "--emit", "ttir"]) == 0
    assert "tt.func public @vadd" in capsys.readouterr().out
    assert cli_main(["compile", str(vadd_file), "--target", "sm_80", "--emit", "ptx", "--meta", "BLOCK=256",
                     "--num-warps", "2"]) == 0
    ptx = capsys.readouterr().out
    assert ".target sm_80" in ptx and ".reqntid 64" in ptx


def test_cli_writes_a_cubin(vadd_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "vadd.cubin"
    assert cli_main(["compile", str(vadd_file), "--emit", "cubin", "-o", str(out), "--divisible-by-16", "N"]) == 0
    assert out.read_bytes()[:4] == ELF_MAGIC


def test_cli_prints_a_cubin_to_a_pipe(vadd_file: Path, capsysbinary) -> None:
    assert cli_main(["compile", str(vadd_file), "--emit", "cubin"]) == 0
    assert capsysbinary.readouterr().out[:4] == ELF_MAGIC


def test_cli_refuses_to_print_a_cubin_on_a_terminal(vadd_file: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert cli_main(["compile", str(vadd_file), "--emit", "cubin"]) == 1
    assert "-o PATH" in capsys.readouterr().err


def test_cli_compiles_the_variant_a_dtype_binding_names(tmp_path: Path, capsys, monkeypatch) -> None:
    """A generic kernel's calls compile apart (their tiles' shared memory differs by dtype):
    ``--dtype T=f16`` compiles that variant, the default is each variable's first dtype, and a
    variable or dtype the kernel does not declare is refused with what it does declare."""
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path / "cache"))
    generic = json.loads(json.dumps(VADD).replace('"dtype": "f32"', '"dtype": "T"'))
    path = tmp_path / "vadd_generic.json"
    path.write_text(json.dumps({**generic, "dtypes": [{"name": "T", "of": ["f32", "f16", "bf16"]}]}))
    ttir = {}
    for binding in ([], ["--dtype", "T=f16"], ["--dtype", " T = bf16 "]):
        assert cli_main(["compile", str(path), "--target", "sm_90", "--emit", "ttir", *binding]) == 0
        ttir[tuple(binding)] = capsys.readouterr().out
    assert "!tt.ptr<f32>" in ttir[()] and "!tt.ptr<f16>" not in ttir[()]
    assert "!tt.ptr<f16>" in ttir[("--dtype", "T=f16")] and "!tt.ptr<f32>" not in ttir[("--dtype", "T=f16")]
    assert "!tt.ptr<bf16>" in ttir[("--dtype", " T = bf16 ")]
    for binding, message in ((["--dtype", "U=f16"], "declares no dtype variable U (its variables: T)"),
                             (["--dtype", "T=i32"], "T takes one of f32, f16, bf16"),
                             (["--dtype", "T"], "--dtype takes NAME=DTYPE, got 'T'")):
        assert cli_main(["compile", str(path), "--target", "sm_90", *binding]) != 0
        assert message in capsys.readouterr().err
    concrete = tmp_path / "vadd.json"
    concrete.write_text(json.dumps(VADD))
    assert cli_main(["compile", str(concrete), "--dtype", "T=f16"]) != 0
    assert "vadd declares no dtype variable T (its variables: none)" in capsys.readouterr().err


def test_cli_reports_bad_input_with_its_path(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**VADD, "body": VADD["body"][:2] + [
        {"op": "store", "ptr": {"op": "add", "lhs": "out", "rhs": "offs"}, "mask": "mask", "value": "missing"}]}))
    assert cli_main(["compile", str(bad), "--target", "sm_90"]) == 1
    assert "/body/2/value" in capsys.readouterr().err
    assert cli_main(["compile", str(tmp_path / "absent.json")]) == 1
    assert cli_main(["compile", str(bad), "--target", "sm_70"]) == 1


# ---------------------------------------------------------------------------------------------
# On a GPU: the compiled kernel computes what the interpreter computes


def assert_agrees(actual, expected, tolerance: tuple[float, float], what: str) -> None:
    import torch

    assert actual.dtype == expected.dtype and actual.shape == expected.shape, what
    if expected.is_floating_point():
        rtol, atol = tolerance
        torch.testing.assert_close(actual.float(), expected.float(), rtol=rtol, atol=atol, equal_nan=True, msg=what)
    else:
        mismatches = (actual != expected).nonzero()
        assert mismatches.numel() == 0, f"{what}: {mismatches.shape[0]} mismatches, first at {mismatches[0].tolist()}"


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CASES))
def test_gpu_agrees_with_the_interpreter(name: str) -> None:
    from kernelgen.host.inputs import random_inputs
    from kernelgen.interp.execute import interpret
    from kernelgen.gpu.launch import run_on_gpu

    case = CASES[name]
    checked = checked_case(name)
    compiled = compile_kernel(checked, cache=False)
    for seed in range(3):
        args = random_inputs(checked.kernel, case.sizes, seed=seed)
        expected = interpret(checked, args)
        actual = run_on_gpu(compiled, checked, args, to_cpu=True)
        for out in checked.kernel.outputs:
            assert_agrees(actual[out.name], expected[out.name], case.tolerance, f"{name}.{out.name} (seed {seed})")


@pytest.mark.gpu
@pytest.mark.parametrize("name, sizes", [("vector_add", {"N": 4096}), ("matmul", {"M": 128, "N": 256, "K": 64}),
                                         ("softmax", {"M": 8, "N": 2048})])
def test_gpu_specialized_kernels_agree_with_the_interpreter(name: str, sizes: dict[str, int]) -> None:
    from kernelgen.host.inputs import random_inputs
    from kernelgen.interp.execute import interpret
    from kernelgen.gpu.launch import run_on_gpu

    checked = example(name)
    args = random_inputs(checked.kernel, sizes, seed=0)
    divisible = divisible_params(plan_for_sizes(checked, sizes))
    assert divisible
    compiled = compile_kernel(checked, divisible_by_16=divisible, cache=False)
    expected = interpret(checked, args)
    actual = run_on_gpu(compiled, checked, args, to_cpu=True)
    for out in checked.kernel.outputs:
        assert_agrees(actual[out.name], expected[out.name], (1e-3, 1e-3), f"{name}.{out.name}")


def test_full_blocks_under_an_if_vectorize_where_masked_blocks_do_not() -> None:
    """The tail split: the then branch's unmasked accesses (proven by the condition) become
    128-bit loads and stores; the masked tail, like a masked vector add whose size is not a
    known multiple of 16, stays scalar."""
    accesses = re.compile(r"(?:ld|st)\.global[.\w]*")
    split = check(Kernel.model_validate(CASES["tail_split"].kernel), {"B": 1024})
    ptx = compile_kernel(split, "sm_90", in_process=True, cache=False).ptx
    assert {"ld.global.v4.b32", "st.global.v4.b32", "ld.global.b32", "st.global.b32"} <= set(accesses.findall(ptx))
    plain = compile_kernel(checked_case("vadd"), "sm_90", in_process=True, cache=False).ptx
    assert not any(".v4" in found for found in accesses.findall(plain))
