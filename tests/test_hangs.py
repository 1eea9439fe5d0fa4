"""A harness that never hangs (issue 32, item 5): every job ends at its limit, waiting for the
GPU turn is not part of a job's limit, no turn is held while a kernel compiles or runs away, a
timeout under load is retried once alone, the interpreter's budget ends a CPU case unjudged,
and TritonBench tests import the operator under its own name.

The never-ending answers (tests/answers/) are judged here: in CPU mode (`not_judged`) and, on a
GPU (marked ``gpu``), in the executor (`timeout` within the job's limit). Run the GPU ones beside
a loaded run (`pytest bench tests/test_hangs.py -n 8`) to see the other workers finish."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelgen.errors import Diagnostic, KernelTimeout, OutOfMemory, Outcome
from kernelgen.gpu import timing
from kernelgen.gpu.executor import Executor
from kernelgen.harness.pipeline import Settings, evaluate_answer
from kernelgen.task.spec import get_task

ANSWERS = Path(__file__).parent / "answers"
REPO = Path(__file__).resolve().parents[1]

# -- jobs in the executor ----------------------------------------------------------------


def take_a_turn(seconds: float) -> float:
    """In the executor's child: the GPU turn, held for ``seconds``; how long the call took."""
    start = time.monotonic()
    with timing.gpu_turn():
        time.sleep(seconds)
    return time.monotonic() - start


HOLD = """
import fcntl, os, sys, time
descriptor = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(descriptor, {mode})
open(sys.argv[2], "w").write("held")
time.sleep(float(sys.argv[3]))
"""


def holding(lock: Path, seconds: float, tmp_path: Path, shared: bool = False) -> subprocess.Popen:
    """Another process holding ``lock`` (exclusively, or shared: a job slot) for ``seconds``."""
    flag = tmp_path / f"held-{time.monotonic_ns()}"
    mode = "fcntl.LOCK_SH" if shared else "fcntl.LOCK_EX"
    process = subprocess.Popen([sys.executable, "-c", HOLD.format(mode=mode), str(lock), str(flag), str(seconds)])
    while not flag.exists():
        assert process.poll() is None
        time.sleep(0.01)
    return process


def test_waiting_for_the_turn_does_not_count_against_the_jobs_limit(tmp_path: Path) -> None:
    """Another worker holds the GPU for 3 s; a job of 0.3 s with a limit of 1.5 s waits, then
    runs, and is not a timeout (before, the wait ate the limit: a correct golden timed out
    under -n 8)."""
    lock = tmp_path / "gpu.lock"
    lock.touch()
    with Executor(env={"KERNELGEN_GPU_LOCK": str(lock)}) as executor:
        executor.call(take_a_turn, 0.0, timeout=120)  # started, this module imported: not the job's time
        other = holding(lock, 3.0, tmp_path)
        try:
            took = executor.call(take_a_turn, 0.3, timeout=1.5)
        finally:
            other.kill()
            other.wait()
    assert took >= 2.0  # it waited for the other's turn


def prepare_then_run(prepare_s: float, run_s: float) -> str:
    """In the executor's child: ``prepare_s`` of the harness's own work (as a large draw is
    made), then ``run_s`` of the job proper (as a kernel runs)."""
    with timing.harness_work():
        time.sleep(prepare_s)
    time.sleep(run_s)
    return "done"


def test_the_harness_work_in_a_job_does_not_count_against_its_limit() -> None:
    """A job whose inputs take 2.5 s to draw (a 200-million-element draw on a loaded machine
    takes a minute) and whose kernel takes 0.2 s is within a 1 s limit; the same job whose
    kernel runs 3 s is not (GPU mode, -n 14: four correct red-team controls got ``timeout``,
    each while the harness drew and checked its own inputs)."""
    with Executor() as executor:
        executor.call(prepare_then_run, 0.0, 0.0, timeout=120)  # started: not the job's time
        assert executor.call(prepare_then_run, 2.5, 0.2, timeout=1.0) == "done"
        start = time.monotonic()
        with pytest.raises(KernelTimeout):
            executor.call(prepare_then_run, 0.1, 3600, timeout=1.0)
        assert time.monotonic() - start < 5.0


def test_a_job_that_runs_away_in_its_turn_ends_at_its_limit_and_frees_the_turn(tmp_path: Path) -> None:
    lock = tmp_path / "gpu.lock"
    lock.touch()
    with Executor(env={"KERNELGEN_GPU_LOCK": str(lock)}) as executor:
        executor.call(take_a_turn, 0.0, timeout=120)
        start = time.monotonic()
        with pytest.raises(KernelTimeout) as caught:
            executor.call(take_a_turn, 3600, timeout=1.0)
        assert caught.value.outcome == Outcome.TIMEOUT and time.monotonic() - start < 5.0
        assert executor.call(take_a_turn, 0.0, timeout=120) < 1.0  # the killed child's turn is free


def test_a_slow_function_times_fewer_repetitions_and_one_too_slow_is_a_timeout() -> None:
    assert timing.fitted_repetitions(0.001, 100, 10) == (100, 10)
    repetitions, warmup = timing.fitted_repetitions(1.0, 100, 10)
    assert warmup == 1 and 3 <= repetitions and (repetitions + warmup) * 1.0 <= timing.TURN_LIMIT_S
    assert timing.fitted_repetitions(1.0, 1, 3) == (1, 3)
    with pytest.raises(KernelTimeout):
        timing.fitted_repetitions(timing.TURN_LIMIT_S / 2, 100, 10)


# -- a timeout under load is retried once alone ----------------------------------------------


class Attempts:
    """An attempt that times out (or runs out of GPU memory) the first ``failures`` times;
    records when each started."""

    def __init__(self, failures: int, error: type = KernelTimeout) -> None:
        self.failures, self.started, self.error = failures, [], error

    def __call__(self) -> str:
        self.started.append(time.monotonic())
        if len(self.started) <= self.failures:
            raise self.error(Diagnostic("", "timeout", "verify_job did not finish within 60 s"))
        return "done"


def test_running_out_of_gpu_memory_under_load_is_retried_once_alone(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Other workers' inputs and contexts held part of the card: alone, the reference may fit."""
    slots = tmp_path / "jobs.lock"
    slots.touch()
    monkeypatch.setenv(timing.ALONE_VARIABLE, str(slots))
    other = holding(slots, 1.5, tmp_path, shared=True)
    try:
        attempt = Attempts(failures=1, error=OutOfMemory)
        assert timing.retried_alone(attempt) == "done"
        assert attempt.started[1] - attempt.started[0] >= 1.0
    finally:
        other.kill()
        other.wait()
    attempt = Attempts(failures=1, error=OutOfMemory)  # nobody else running: the verdict at once
    with pytest.raises(OutOfMemory) as caught:
        timing.retried_alone(attempt)
    assert len(attempt.started) == 1 and caught.value.outcome == Outcome.HARNESS_ERROR


def test_cuda_out_of_memory_in_the_reference_says_where() -> None:
    """torch's error, raised in the reference at a draw, becomes a harness error naming the task,
    the sizes and how to measure the reference (not an uncaught exception with PTX in it)."""
    import torch

    from kernelgen.gpu.case import reference_out_of_memory

    with pytest.raises(OutOfMemory) as caught:
        with reference_out_of_memory(get_task("alibi_attention_f16"), {"B": 4, "H": 16, "S": 8192}):
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 32.00 GiB. GPU 0 has a total "
                                         "capacity of 79.18 GiB of which 12.20 GiB is free. Process 3779 has ...")
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.code == "reference_out_of_memory" and caught.value.stage == "verify"
    assert "alibi_attention_f16 at {'B': 4, 'H': 16, 'S': 8192}" in diagnostic.message
    assert "Tried to allocate 32.00 GiB" in diagnostic.message and "Process 3779" not in diagnostic.message
    assert "tools/reference_memory.py alibi_attention_f16" in diagnostic.message


def test_a_timeout_under_load_is_retried_once_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    slots = tmp_path / "jobs.lock"
    slots.touch()
    monkeypatch.setenv(timing.ALONE_VARIABLE, str(slots))
    other = holding(slots, 1.5, tmp_path, shared=True)  # another worker's job, for 1.5 s more
    try:
        attempt = Attempts(failures=1)
        assert timing.retried_alone(attempt) == "done"
        assert attempt.started[1] - attempt.started[0] >= 1.0  # the retry waited for the other job to end
    finally:
        other.kill()
        other.wait()
    other = holding(slots, 1.5, tmp_path, shared=True)
    try:
        with pytest.raises(KernelTimeout, match="also when retried alone"):
            timing.retried_alone(Attempts(failures=2))
    finally:
        other.kill()
        other.wait()


def test_a_job_run_alone_takes_no_slot_of_its_own_and_holds_off_others(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Every executor call holds a slot; within ``alone`` this process's own calls go ahead (no
    deadlock on its own lock) while another worker's job waits at the gate."""
    monkeypatch.setenv(timing.ALONE_VARIABLE, str(tmp_path / "jobs.lock"))
    with Executor() as executor:
        with timing.alone():
            assert executor.call(os.getpid, timeout=60) == executor.pid
            waiting = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys; "
                                        "d = os.open(sys.argv[1] + '.gate', os.O_RDONLY); fcntl.flock(d, fcntl.LOCK_EX)",
                                        str(tmp_path / "jobs.lock")])
            time.sleep(0.5)
            assert waiting.poll() is None  # at the gate
        assert waiting.wait(timeout=30) == 0  # through it once the job alone is done
    assert not timing.others_running()


def test_a_timeout_with_no_other_job_running_is_the_verdict_at_once(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(timing.ALONE_VARIABLE, str(tmp_path / "jobs.lock"))
    attempt = Attempts(failures=1)
    with pytest.raises(KernelTimeout, match="within 60 s$"):
        timing.retried_alone(attempt)
    assert len(attempt.started) == 1
    monkeypatch.delenv(timing.ALONE_VARIABLE)
    attempt = Attempts(failures=1)  # one process (no variable): no retry either
    with pytest.raises(KernelTimeout):
        timing.retried_alone(attempt)
    assert len(attempt.started) == 1


# -- the baseline's sandbox: a reported wait counts only while the turn is really held ----------


# A child that reports, on the pipe argv[1], the start (argv[3]) and end (argv[4]) of argv[2] s.
SANDBOXED = """
import os, sys, time
fd = int(sys.argv[1])
os.write(fd, sys.argv[3].encode() + b"\\n")
time.sleep(float(sys.argv[2]))
os.write(fd, sys.argv[4].encode() + b"\\n")
time.sleep(0.2)
"""


@pytest.mark.parametrize("held", [True, False])
def test_the_sandbox_stops_its_clock_only_for_a_real_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          held: bool) -> None:
    from kernelgen.baseline.sandbox import _wait_within

    lock = tmp_path / "gpu.lock"
    lock.touch()
    monkeypatch.setenv("KERNELGEN_GPU_LOCK", str(lock))
    other = holding(lock, 3.0, tmp_path) if held else None
    read, write = os.pipe()
    child = subprocess.Popen([sys.executable, "-c", SANDBOXED, str(write), "2.0", "wait", "turn"], pass_fds=(write,))
    os.close(write)
    try:
        code = _wait_within(child, read, 1.0)
        assert (code == 0) == held  # a wait nobody causes (an answer that claims one) is no excuse
    finally:
        os.close(read)
        child.kill()
        child.wait()
        if other is not None:
            other.kill()
            other.wait()


@pytest.mark.parametrize("allowance, finishes", [(5.0, True), (0.5, False)])
def test_the_sandbox_does_not_count_compiles_up_to_their_allowance(allowance: float, finishes: bool) -> None:
    """2 s of reported compiling within a 1 s limit: not counted under a 5 s allowance; past a
    0.5 s allowance the rest counts, so an answer that only claims to compile gains no more."""
    from kernelgen.baseline.sandbox import _wait_within

    read, write = os.pipe()
    child = subprocess.Popen([sys.executable, "-c", SANDBOXED, str(write), "2.0", "compile", "compiled"],
                             pass_fds=(write,))
    os.close(write)
    try:
        assert (_wait_within(child, read, 1.0, allowance) == 0) == finishes
    finally:
        os.close(read)
        child.kill()
        child.wait()


def test_the_child_reports_tritons_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real compile (PTX for sm_90, no GPU needed) through the child's wrapper of
    ``triton.compiler.compile``, which Triton's JIT looks up at a kernel's first launch."""
    import triton
    import triton.compiler
    import triton.language as tl
    from triton.backends.compiler import GPUTarget

    from kernelgen.baseline.child import report_compiles

    @triton.jit
    def double(x, n, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        tl.store(x + offsets, tl.load(x + offsets, mask=offsets < n) * 2, mask=offsets < n)

    monkeypatch.setattr(triton.compiler, "compile", triton.compiler.compile)  # restored afterwards
    told: list[bytes] = []
    report_compiles(told.append)
    source = triton.compiler.ASTSource(double, {"x": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 64})
    compiled = triton.compiler.compile(source, target=GPUTarget("cuda", 90, 32))
    assert "ptx" in compiled.asm and told == [b"compile\n", b"compiled\n"]


# -- never-ending answers and the interpreter's budget ----------------------------------------


def test_the_never_ending_pipeline_answer_is_not_judged_on_the_cpu() -> None:
    start = time.monotonic()
    result = evaluate_answer(get_task("relu"), (ANSWERS / "never_ending_relu.json").read_text(),
                             Settings(gpu=False, compile=False, timeout_s=10.0))
    assert (result.outcome, result.diagnostics[0]["code"]) == (Outcome.NOT_JUDGED, "over_budget")
    assert time.monotonic() - start < 10.0


def wall_clock_entry(name: str) -> dict:
    return json.loads((Path(__file__).parent / "redteam" / "wall_clock" / f"{name}.json").read_text())


def test_a_triangular_loop_nest_is_refused_by_the_budget_before_it_runs() -> None:
    """An inner loop from the outer variable to the end does 3000 trips at the outer loop's
    start; the estimate once took only its last value (1 trip) and let the launch run."""
    entry = wall_clock_entry("silu_correct_with_a_triangular_idle_loop_nest")
    start = time.monotonic()
    result = evaluate_answer(get_task(entry["task"]), json.dumps(entry["kernel"]),
                             Settings(gpu=False, compile=False, timeout_s=60.0))
    assert (result.outcome, result.diagnostics[0]["code"]) == (Outcome.NOT_JUDGED, "over_budget")
    assert time.monotonic() - start < 10.0


def test_a_correct_kernel_past_the_interpreters_wall_clock_is_not_judged() -> None:
    """A loop bound the estimate cannot evaluate (a block's reduction) counts as one trip: the
    wall clock ends the launch."""
    entry = wall_clock_entry("silu_correct_with_a_block_bounded_idle_loop_nest")
    start = time.monotonic()
    result = evaluate_answer(get_task(entry["task"]), json.dumps(entry["kernel"]),
                             Settings(gpu=False, compile=False, timeout_s=2.0))
    assert (result.outcome, result.diagnostics[0]["code"]) == (Outcome.NOT_JUDGED, "timeout")
    assert time.monotonic() - start < 2.0 * 5  # the first draw's launch, stopped at its limit


def replayed(sample, tmp_path: Path, name: str, answer: str):
    from kernelgen.model.generation import GenerationCache, make_record
    from kernelgen.model.providers.base import Completion
    from kernelgen.model.providers.replay import ReplayProvider
    from kernelgen.tritonbench.generate import request_for
    from kernelgen.tritonbench.goldens import golden_answer

    request = request_for(sample.operator(name), "simp", golden_answer(name))
    completion = Completion(text=answer, provider="openai", model="recorded", latency_s=1.0, tokens_in=1,
                            tokens_out=1, token_source="server", constrained="response_format")
    GenerationCache(tmp_path).store(make_record(request, completion))
    return ReplayProvider(tmp_path)


def test_the_never_ending_tritonbench_answer_is_not_judged_on_the_cpu(sample, tmp_path: Path) -> None:
    from kernelgen.tritonbench.evaluate import evaluate_operator

    answer = (ANSWERS / "never_ending_tritonbench_relu.json").read_text()
    start = time.monotonic()
    result = evaluate_operator(sample.operator("relu"), replayed(sample, tmp_path, "relu", answer),
                               Settings(gpu=False, timeout_s=5.0))
    assert result.outcome == Outcome.NOT_JUDGED, result.diagnostics
    assert time.monotonic() - start < 30.0


def test_a_tritonbench_test_on_the_cpu_has_one_wall_clock_limit(sample, tmp_path: Path) -> None:
    """A loop nest the work estimate cannot see (its bound is a block's reduction), as a
    TritonBench answer: the test's whole run shares the limit and ends unjudged, not after one
    limit per launch."""
    from kernelgen.tritonbench.evaluate import evaluate_operator
    from kernelgen.tritonbench.goldens import golden_answer

    golden = json.loads(golden_answer("relu"))
    bound = wall_clock_entry("silu_correct_with_a_block_bounded_idle_loop_nest")["kernel"]["body"][:2]
    nest = {"op": "for", "var": "i", "stop": "n", "carry": [{"name": "count", "init": 0, "next": "inner"}], "body": [
        {"op": "for", "var": "j", "stop": "n", "carry": [{"name": "inner", "init": "count", "next": "more"}],
         "body": [{"op": "let", "name": "more", "value": {"op": "add", "lhs": "inner", "rhs": 1}}]}]}
    store = golden["body"][-1]
    store["value"] = {"op": "where", "cond": {"op": "eq", "lhs": "count", "rhs": -1}, "x": 0.0, "y": store["value"]}
    golden["body"] = golden["body"][:-1] + bound + [nest, store]
    start = time.monotonic()
    result = evaluate_operator(sample.operator("relu"), replayed(sample, tmp_path, "relu", json.dumps(golden)),
                               Settings(gpu=False, timeout_s=2.0))
    assert result.outcome == Outcome.NOT_JUDGED, result.diagnostics
    assert "over_budget" not in str(result.diagnostics), "the estimate saw the nest: the wall clock went untested"
    assert time.monotonic() - start < 20.0


# -- TritonBench: the test imports the operator under its own name ----------------------------


@pytest.mark.parametrize("where", ["in the test", "at module level"])
def test_a_test_that_imports_its_operator_by_name_runs(sample, tmp_path: Path, where: str) -> None:
    """`from relu import relu`, as 2 of the 166 upstream tests do: TritonBench's evaluator
    saves the answer as a module of that name, and so does the harness (for the reference's
    run and the answer's)."""
    from kernelgen.model.providers import make_provider
    from kernelgen.tritonbench import load_tritonbench
    from kernelgen.tritonbench.evaluate import evaluate_operator

    root = tmp_path / "checkout"
    shutil.copytree(sample.root, root)
    path = root / "data" / "TritonBench_T_v1" / "relu.py"
    text = path.read_text()
    if where == "in the test":
        text = text.replace("def test_relu():\n", "def test_relu():\n    from relu import relu\n")
    else:
        text = text.replace("def test_relu():\n", "from relu import relu\n\ndef test_relu():\n")
    path.write_text(text)
    before = sys.modules.get("relu")
    result = evaluate_operator(load_tritonbench(root).operator("relu"), make_provider("reference"),
                               Settings(gpu=False))
    assert result.ok, result.diagnostics
    assert sys.modules.get("relu") is before


# -- on a GPU: the never-ending answers end in timeout within the limit -----------------------


@pytest.fixture
def gpu_settings(monkeypatch: pytest.MonkeyPatch):
    """GPU settings with this worker's executor, GPU lock and job slots, as a benchmark run's."""
    from kernelgen.gpu.devices import executor_env, gpu_unavailable_reason, worker_gpu

    if gpu_unavailable_reason() is not None:
        pytest.skip(gpu_unavailable_reason())
    env = executor_env(worker_gpu())
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with Executor(env=env) as executor:
        yield Settings(gpu=True, executor=executor, timeout_s=20.0, time_kernels=False)


LIMIT_SLACK_S = 90.0  # compiling, starting the executor's child, and the retry alone under load


@pytest.mark.gpu
def test_on_a_gpu_the_never_ending_pipeline_answer_ends_in_timeout(gpu_settings) -> None:
    start = time.monotonic()
    result = evaluate_answer(get_task("relu"), (ANSWERS / "never_ending_relu.json").read_text(), gpu_settings)
    assert result.outcome == Outcome.TIMEOUT and result.stage == "launch", result.diagnostics
    assert time.monotonic() - start < 2 * gpu_settings.timeout_s + LIMIT_SLACK_S


@pytest.mark.gpu
def test_on_a_gpu_the_never_ending_tritonbench_answer_ends_in_timeout(sample, tmp_path: Path, gpu_settings) -> None:
    from kernelgen.tritonbench.evaluate import evaluate_operator

    answer = (ANSWERS / "never_ending_tritonbench_relu.json").read_text()
    start = time.monotonic()
    result = evaluate_operator(sample.operator("relu"), replayed(sample, tmp_path, "relu", answer), gpu_settings)
    assert result.outcome == Outcome.TIMEOUT, result.diagnostics
    assert time.monotonic() - start < 2 * gpu_settings.timeout_s + LIMIT_SLACK_S
