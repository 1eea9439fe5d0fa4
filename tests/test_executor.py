"""The executor: a call that raises, dies or hangs fails with its own error and outcome, and
the next call runs (in a fresh child where the old one died); no process outlives it.

The functions the child runs are module-level (they cross by reference): stdlib functions
where one does the job, small helpers below otherwise. The GPU tests at the end check the
same on real faults and hangs of kernels (a CUDA illegal address, an endless loop)."""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import operator
import os
import pickle
import signal
import threading
import time

import pytest
import torch

from kernelgen.errors import KernelTimeout, LaunchError, MissingDependency, Outcome, SchemaError, require
from kernelgen.gpu.executor import Executor, RemoteTraceback
from kernelgen.lang.parse import parse_kernel

GRACE_S = 0.5


def raise_cuda_error() -> None:
    raise LaunchError("an illegal memory access was encountered", code="cuda_error")


def raise_raw_cuda_error() -> None:
    """A CUDA error as torch raises it at a copy made after a kernel faulted, outside any
    cuda_errors block (torch.AcceleratorError is a RuntimeError)."""
    raise RuntimeError("CUDA error: an illegal memory access was encountered")


def raise_unpicklable() -> None:
    class LocalError(Exception):
        pass

    raise LocalError("defined inside a function")


def set_marker_variable() -> None:
    os.environ["KERNELGEN_EXECUTOR_INITIALIZED"] = "yes"


def fail_to_start() -> None:
    raise OSError("no device here")


def ignore_sigterm() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def is_reaped(pid: int) -> bool:
    """True when no process (running or zombie) has this id any more."""
    return not os.path.exists(f"/proc/{pid}")


@pytest.fixture
def executor():
    with Executor(default_timeout=30.0, grace=GRACE_S) as ex:
        yield ex


def test_returns_the_result_and_tensors_cross_by_value(executor: Executor) -> None:
    assert executor.call(operator.add, 2, 3) == 5
    x = torch.arange(10, dtype=torch.float32)
    y = executor.call(torch.mul, x, 2.5)
    assert torch.equal(y, x * 2.5)
    assert executor.call(dict, a=1, b=2) == {"a": 1, "b": 2}


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_fp8_tensors_cross_both_ways_bit_for_bit(executor: Executor, dtype: torch.dtype) -> None:
    """PyTorch pickles fp8 tensors but cannot unpickle them; the executor sends their bytes
    (an expert task's fp8 inputs and a random kernel's fp8 outputs cross this way)."""
    x = torch.tensor([0.0, -0.0, 1.5, -448.0, 0.001953125, float("nan")]).to(dtype)
    strided = torch.arange(12.0).to(dtype).reshape(3, 4).t()
    back = executor.call(dict, x=x, strided=strided)
    assert back["x"].dtype == dtype and torch.equal(back["x"].view(torch.uint8), x.view(torch.uint8))
    assert back["strided"].shape == (4, 3) and torch.equal(back["strided"].float(), strided.float())
    assert torch.equal(executor.call(torch.Tensor.float, x).view(torch.int32), x.float().view(torch.int32))


def test_an_exception_comes_back_with_its_remote_traceback_and_the_child_stays(executor: Executor) -> None:
    executor.call(operator.add, 1, 1)
    pid = executor.pid
    with pytest.raises(ZeroDivisionError) as info:
        executor.call(operator.truediv, 1, 0)
    assert isinstance(info.value.__cause__, RemoteTraceback)
    assert "ZeroDivisionError" in str(info.value.__cause__)
    assert executor.pid == pid
    assert executor.call(operator.mul, 6, 7) == 42


def test_a_kernelgen_error_keeps_its_class_code_and_path(executor: Executor) -> None:
    with pytest.raises(SchemaError) as info:
        executor.call(parse_kernel, '{"name": "k", "inputs": 3}')
    local = pytest.raises(SchemaError, parse_kernel, '{"name": "k", "inputs": 3}').value
    assert info.value.diagnostics == local.diagnostics
    assert str(info.value) == str(local)


def test_an_error_with_its_own_constructor_crosses_intact(executor: Executor) -> None:
    with pytest.raises(MissingDependency) as info:
        executor.call(require, "kernelgen_no_such_module", "testing the executor", "gpu")
    assert info.value.code == "missing_dependency"
    assert str(info.value).count("missing_dependency") == 1


def test_an_unpicklable_exception_is_reported_by_name(executor: Executor) -> None:
    with pytest.raises(RuntimeError, match="LocalError: defined inside a function"):
        executor.call(raise_unpicklable)
    assert executor.call(operator.neg, 3) == -3


def test_an_unpicklable_result_fails_the_call_not_the_child(executor: Executor) -> None:
    executor.call(operator.add, 1, 1)
    pid = executor.pid
    with pytest.raises(TypeError, match="pickle"):
        executor.call(threading.Lock)
    assert executor.pid == pid


@pytest.mark.parametrize("fn, args, how", [
    (os._exit, (3,), "exited with status 3"),
    (os.abort, (), "SIGABRT"),
    (ctypes.string_at, (0,), "SIGSEGV"),
], ids=["os._exit", "os.abort", "segfault"])
def test_a_dying_child_fails_the_call_and_the_next_call_gets_a_fresh_one(executor: Executor, fn, args, how) -> None:
    executor.call(operator.add, 1, 1)
    old_pid = executor.pid
    with pytest.raises(LaunchError) as info:
        executor.call(fn, *args)
    assert info.value.code == "executor_died"
    assert info.value.outcome == Outcome.LAUNCH_ERROR
    assert how in str(info.value)
    assert is_reaped(old_pid)
    assert executor.call(operator.mul, 6, 7) == 42
    assert executor.pid != old_pid


def test_a_cuda_error_retires_the_child(executor: Executor) -> None:
    executor.call(operator.add, 1, 1)
    old_pid = executor.pid
    with pytest.raises(LaunchError) as info:
        executor.call(raise_cuda_error)
    assert info.value.code == "cuda_error"
    assert executor.pid is None and is_reaped(old_pid)
    assert executor.call(operator.mul, 6, 7) == 42


def test_a_cuda_error_raised_outside_the_launch_is_the_jobs_launch_error(executor: Executor) -> None:
    executor.call(operator.add, 1, 1)
    old_pid = executor.pid
    with pytest.raises(LaunchError) as info:
        executor.call(raise_raw_cuda_error)
    assert info.value.code == "cuda_error" and info.value.outcome == Outcome.LAUNCH_ERROR
    assert "raise_raw_cuda_error" in str(info.value) and "illegal memory access" in str(info.value)
    assert executor.pid is None and is_reaped(old_pid)
    assert executor.call(operator.mul, 6, 7) == 42


def test_a_call_past_its_timeout_is_killed_in_time(executor: Executor) -> None:
    executor.call(operator.add, 1, 1)
    old_pid = executor.pid
    start = time.monotonic()
    with pytest.raises(KernelTimeout) as info:
        executor.call(time.sleep, 60, timeout=0.5)
    elapsed = time.monotonic() - start
    assert info.value.outcome == Outcome.TIMEOUT and info.value.code == "timeout"
    assert 0.5 <= elapsed < 0.5 + GRACE_S + 2.0
    assert is_reaped(old_pid)
    assert executor.call(operator.mul, 6, 7) == 42
    assert executor.pid != old_pid


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_period(executor: Executor) -> None:
    executor.call(ignore_sigterm)
    old_pid = executor.pid
    start = time.monotonic()
    with pytest.raises(KernelTimeout):
        executor.call(time.sleep, 60, timeout=0.3)
    elapsed = time.monotonic() - start
    assert 0.3 + GRACE_S <= elapsed < 0.3 + GRACE_S + 2.0
    assert is_reaped(old_pid)
    assert executor.call(operator.mul, 6, 7) == 42


def test_the_child_gets_the_environment_and_the_initializer_runs_first() -> None:
    assert "KERNELGEN_EXECUTOR_TEST" not in os.environ
    with Executor(env={"KERNELGEN_EXECUTOR_TEST": "42"}, initializer=set_marker_variable) as executor:
        assert executor.call(os.getenv, "KERNELGEN_EXECUTOR_TEST") == "42"
        assert executor.call(os.getenv, "KERNELGEN_EXECUTOR_INITIALIZED") == "yes"
    assert "KERNELGEN_EXECUTOR_TEST" not in os.environ


def test_a_failing_initializer_fails_the_call_with_its_error() -> None:
    with Executor(initializer=fail_to_start) as executor:
        with pytest.raises(OSError, match="no device here"):
            executor.call(operator.add, 1, 1)
        assert executor.pid is None


def test_close_reaps_the_child_and_leaves_no_process() -> None:
    with Executor() as executor:
        executor.call(operator.add, 1, 1)
        pid = executor.pid
        assert not is_reaped(pid)
    assert is_reaped(pid)
    assert executor.pid is None
    assert pid not in {p.pid for p in multiprocessing.active_children()}


def test_a_forgotten_executor_stops_its_child_when_collected() -> None:
    executor = Executor()
    executor.call(operator.add, 1, 1)
    pid = executor.pid
    del executor
    gc.collect()
    assert is_reaped(pid)


def test_an_unpicklable_call_fails_in_the_caller_before_anything_runs(executor: Executor) -> None:
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        executor.call(lambda: 1)
    assert executor.pid is None


# ---------------------------------------------------------------------------------------------
# On a GPU: real faults and hangs


def compile_for_this_gpu(fn, signature: dict[str, str], constexprs: dict[str, int] | None = None):
    """A @triton.jit kernel compiled for the current GPU, as the launcher takes it."""
    from test_launch import triton_cubin

    major, minor = torch.cuda.get_device_capability()
    return triton_cubin(fn, signature, constexprs or {}, arch=major * 10 + minor)


def run_cubin(kernel, grid: tuple[int, int, int], tensors: list[torch.Tensor], scalars: list) -> list[torch.Tensor]:
    """Launch a cubin in the child on copies of CPU tensors; the tensors back on the CPU."""
    from kernelgen.gpu.launch import cuda_errors, load_kernel

    with cuda_errors("test kernel"):
        on_gpu = [t.cuda() for t in tensors]
        load_kernel(kernel).launch(grid, [*on_gpu, *scalars])
        torch.cuda.synchronize()
        return [t.cpu() for t in on_gpu]


@pytest.fixture(scope="module")
def gpu_kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def add_one(x, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x + offs, tl.load(x + offs, mask=offs < n) + 1.0, mask=offs < n)

    @triton.jit
    def store_far_away(x, far):
        # The offset arrives at run time, so the compiler cannot see the fault coming.
        tl.store(x + far, 1.0)

    @triton.jit
    def spin_forever(flag, laps):
        # The flag is 0 and nothing writes it. The volatile load and the store keep the loop:
        # LLVM deletes an endless loop without side effects.
        count = 0
        while tl.load(flag, volatile=True) == 0:
            count += 1
            tl.store(laps, count)

    return {
        "add_one": compile_for_this_gpu(add_one, {"x": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 256}),
        "store_far_away": compile_for_this_gpu(store_far_away, {"x": "*fp32", "far": "i64"}),
        "spin_forever": compile_for_this_gpu(spin_forever, {"flag": "*i32", "laps": "*i32"}),
    }


@pytest.fixture
def gpu_executor():
    from kernelgen.gpu.launch import prepare_gpu

    with Executor(initializer=prepare_gpu, default_timeout=60.0, grace=2.0) as ex:
        yield ex


def check_add_one(gpu_executor: Executor, kernels) -> None:
    x = torch.arange(1000, dtype=torch.float32)
    (y,) = gpu_executor.call(run_cubin, kernels["add_one"], (4, 1, 1), [x], [1000])
    assert torch.equal(y, x + 1)


@pytest.mark.gpu
def test_a_kernel_that_faults_fails_with_launch_error_and_the_next_one_passes(gpu_executor, gpu_kernels) -> None:
    check_add_one(gpu_executor, gpu_kernels)
    old_pid = gpu_executor.pid
    with pytest.raises(LaunchError) as info:
        gpu_executor.call(run_cubin, gpu_kernels["store_far_away"], (1, 1, 1), [torch.zeros(4)], [2**40])
    assert info.value.code == "cuda_error" and info.value.outcome == Outcome.LAUNCH_ERROR
    assert is_reaped(old_pid)
    check_add_one(gpu_executor, gpu_kernels)
    assert gpu_executor.pid != old_pid


def launch_unchecked(kernel, grid: tuple[int, int, int], tensors: list[torch.Tensor], scalars: list,
                     copy_back: bool) -> str:
    """Launch a cubin with no cuda_errors block and no synchronize: a fault is left for CUDA to
    report later, at the copy back (``copy_back``) or not at all within the job."""
    from kernelgen.gpu.launch import load_kernel

    on_gpu = [t.cuda() for t in tensors]
    load_kernel(kernel).launch(grid, [*on_gpu, *scalars])
    if copy_back:
        [t.cpu() for t in on_gpu]
    return "returned"


@pytest.mark.gpu
@pytest.mark.parametrize("copy_back", [True, False], ids=["reported_at_a_copy", "never_reported_by_the_job"])
def test_a_fault_cuda_reports_late_is_charged_to_the_job_that_caused_it(gpu_executor, gpu_kernels, copy_back) -> None:
    """Not to the next job of the process (another case's), nor as the harness's crash."""
    check_add_one(gpu_executor, gpu_kernels)
    with pytest.raises(LaunchError) as info:
        gpu_executor.call(launch_unchecked, gpu_kernels["store_far_away"], (1, 1, 1), [torch.zeros(4)], [2**40], copy_back)
    assert info.value.code == "cuda_error" and "launch_unchecked" in str(info.value)
    check_add_one(gpu_executor, gpu_kernels)


@pytest.mark.gpu
def test_a_kernel_that_hangs_times_out_and_the_next_one_passes(gpu_executor, gpu_kernels) -> None:
    check_add_one(gpu_executor, gpu_kernels)
    old_pid = gpu_executor.pid
    start = time.monotonic()
    with pytest.raises(KernelTimeout) as info:
        gpu_executor.call(run_cubin, gpu_kernels["spin_forever"], (1, 1, 1),
                          [torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)], [],
                          timeout=3.0)
    assert info.value.outcome == Outcome.TIMEOUT
    assert time.monotonic() - start < 3.0 + 2 * 2.0 + 5.0
    assert is_reaped(old_pid)
    check_add_one(gpu_executor, gpu_kernels)
