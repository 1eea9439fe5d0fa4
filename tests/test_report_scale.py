"""Scale: shards partition a selection, xdist workers each own one GPU, progress bars only on a terminal."""

from __future__ import annotations

import fcntl
import io
import os
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

import pytest
import torch
from hypothesis import given, strategies as st

from kernelgen.gpu.devices import (Gpu, assign_gpu, cpu_threads, executor_env, gpu_pool, gpu_record, parse_nvidia_smi,
                               share_cpu_threads, worker_gpu, worker_index)
from kernelgen.gpu.executor import Executor
from kernelgen.harness.progress import progress
from kernelgen.report.plugin import RunReports, gpu_assignment
from kernelgen.task.results import CaseResult
from kernelgen.harness.sharding import Shard, ShardError, parse_shard, select

NVIDIA_SMI = """\
0, GPU-6f1c2a9e-0000-4000-8000-000000000000, NVIDIA H200, 9.0, 570.124.06
1, GPU-7a2d3b0f-1111-4111-8111-111111111111, NVIDIA H200, 9.0, 570.124.06
"""
H200S = parse_nvidia_smi(NVIDIA_SMI)
REPO = Path(__file__).resolve().parents[1]


# -- shards --------------------------------------------------------------------------------


@pytest.mark.parametrize("spec, shard", [("1/1", Shard(1, 1)), ("2/4", Shard(2, 4)), (" 3 / 3 ", Shard(3, 3))])
def test_shard_specs(spec: str, shard: Shard) -> None:
    assert parse_shard(spec) == shard


@pytest.mark.parametrize("spec", ["0/2", "3/2", "1/0", "1", "a/b", "1/2/3", "-1/2", ""])
def test_bad_shard_specs_are_clear_errors(spec: str) -> None:
    with pytest.raises(ShardError) as error:
        parse_shard(spec)
    assert error.value.code == "bad_shard" and "--shard" in str(error.value)


# Cases as (task, sample): every sample of a task must land in the task's shard.
cases = st.lists(st.tuples(st.sampled_from([f"task{i}" for i in range(40)]), st.integers(0, 3)), max_size=120)


@given(cases, st.integers(1, 7))
def test_shards_partition_the_cases_and_keep_tasks_whole(items: list[tuple[str, int]], count: int) -> None:
    shards = [select(items, lambda item: item[0], Shard(index, count)) for index in range(1, count + 1)]
    kept = [shard_kept for shard_kept, _ in shards]
    assert sorted(item for shard in kept for item in shard) == sorted(items)
    tasks = [{task for task, _ in shard} for shard in kept]
    assert all(a.isdisjoint(b) for i, a in enumerate(tasks) for b in tasks[i + 1:])
    sizes = [len(t) for t in tasks]
    assert max(sizes) - min(sizes) <= 1  # dealt round-robin: balanced to one task
    for shard_kept, dropped in shards:
        assert sorted(shard_kept + dropped) == sorted(items)
        assert shard_kept == [item for item in items if item in shard_kept]  # collection order kept


def test_shards_do_not_depend_on_collection_order() -> None:
    items = [f"t{i}" for i in range(10)]
    forward, _ = select(items, str, Shard(2, 3))
    backward, _ = select(items[::-1], str, Shard(2, 3))
    assert sorted(forward) == sorted(backward) == ["t1", "t4", "t7"]


# -- GPUs per worker -----------------------------------------------------------------------


def test_nvidia_smi_listing_is_parsed() -> None:
    assert H200S == [Gpu(0, "GPU-6f1c2a9e-0000-4000-8000-000000000000", "NVIDIA H200", "9.0", "570.124.06"),
                     Gpu(1, "GPU-7a2d3b0f-1111-4111-8111-111111111111", "NVIDIA H200", "9.0", "570.124.06")]
    assert H200S[0].target == "sm_90"
    assert parse_nvidia_smi("No devices were found\n") == []


@pytest.mark.parametrize("worker, index", [(None, 0), ("gw0", 0), ("gw1", 1), ("gw2", 0), ("gw3", 1)])
def test_each_worker_owns_one_gpu_round_robin(worker: str | None, index: int) -> None:
    assert assign_gpu(worker, H200S).index == index


def test_worker_index_and_no_gpu() -> None:
    assert worker_index("gw12") == 12 and worker_index("master") == 0
    assert assign_gpu("gw3", []) is None and executor_env(None) == {}


def test_cuda_visible_devices_of_the_run_restricts_the_pool() -> None:
    assert gpu_pool(H200S, None) == H200S
    assert gpu_pool(H200S, "1") == [H200S[1]]
    assert gpu_pool(H200S, H200S[1].uuid + ",0") == [H200S[1], H200S[0]]
    assert gpu_pool(H200S, "") == []
    assert worker_gpu({"PYTEST_XDIST_WORKER": "gw2", "CUDA_VISIBLE_DEVICES": "1"}, H200S) == H200S[1]
    assert worker_gpu({"PYTEST_XDIST_WORKER": "gw3"}, H200S) == H200S[1]


def test_the_executor_child_sees_its_workers_gpu_and_its_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    env = executor_env(assign_gpu("gw3", H200S))
    lock = tmp_path / f"kernelgen-gpu-{H200S[1].uuid}.lock"
    assert env == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "1", "KERNELGEN_GPU_LOCK": str(lock),
                   "KERNELGEN_ALONE_LOCK": str(tmp_path / "kernelgen-jobs.lock")}
    assert lock.is_file(), "the lock file exists before any child opens it read-only"
    assert executor_env(assign_gpu("gw1", H200S)) == env, "two workers on one GPU share its lock"
    assert executor_env(assign_gpu("gw2", H200S))["KERNELGEN_GPU_LOCK"] != str(lock)
    with Executor(env=env) as executor:
        assert executor.call(os.getenv, "CUDA_VISIBLE_DEVICES") == "1"
        assert executor.call(os.getenv, "CUDA_DEVICE_ORDER") == "PCI_BUS_ID"


HOLD_A_TURN = """
import os, sys, time
from kernelgen.gpu.timing import gpu_turn
with gpu_turn():
    with gpu_turn():  # re-entrant: a nested turn in the same process does not wait for itself
        open(sys.argv[1], "w").write(str(time.monotonic()))
        time.sleep(float(sys.argv[2]))
"""


def test_a_turn_waits_a_bounded_time_and_a_missing_lock_is_no_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Held elsewhere past LOCK_WAIT_S, a turn goes on without the lock and warns (a slow
    kernel timed by another worker must not make this one time out); a lock file that is gone
    warns and locks nothing; a lock directory that cannot hold the file names no lock. (The
    wait no longer counts against a job's limit: LOCK_WAIT_S only bounds a turn that never ends.)"""
    from kernelgen.gpu import timing

    lock = tmp_path / "gpu.lock"
    lock.touch()
    env = {**os.environ, "KERNELGEN_GPU_LOCK": str(lock), "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen([sys.executable, "-c", HOLD_A_TURN, str(tmp_path / "held"), "30"], env=env)
    try:
        while not (tmp_path / "held").exists() or not (tmp_path / "held").read_text():
            assert holder.poll() is None
        monkeypatch.setenv("KERNELGEN_GPU_LOCK", str(lock))
        monkeypatch.setattr(timing, "LOCK_WAIT_S", 0.3)
        monkeypatch.setattr(timing, "_warned", set())
        start = time.monotonic()
        with pytest.warns(RuntimeWarning, match="held the GPU lock .* runs without it"):
            with timing.gpu_turn():
                waited = time.monotonic() - start
        assert 0.3 <= waited < 10
    finally:
        holder.kill()
    monkeypatch.setenv("KERNELGEN_GPU_LOCK", str(tmp_path / "gone.lock"))
    with pytest.warns(RuntimeWarning, match="cannot be opened"):
        with timing.gpu_turn():
            pass
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no" / "such" / "dir"))
    assert "KERNELGEN_GPU_LOCK" not in executor_env(H200S[0]) and "KERNELGEN_ALONE_LOCK" not in executor_env(H200S[0])


FORK_IN_A_TURN = """
import os, sys
from kernelgen.gpu import timing
with timing.gpu_turn():
    child = os.fork()
    if child == 0:
        os._exit(0 if (timing._turns_held, timing._held) == (0, None) else 1)
    _, status = os.waitpid(child, 0)
    sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_a_process_forked_in_a_turn_does_not_own_it(tmp_path: Path) -> None:
    lock = tmp_path / "gpu.lock"
    lock.touch()
    env = {**os.environ, "KERNELGEN_GPU_LOCK": str(lock), "PYTHONPATH": str(REPO)}
    assert subprocess.run([sys.executable, "-c", FORK_IN_A_TURN], env=env, timeout=60).returncode == 0


def test_processes_sharing_a_gpu_take_turns(tmp_path: Path) -> None:
    """The second process's turn (a timed window, a verification) starts only when the first's
    has ended; without the variable nothing waits."""
    lock = tmp_path / "gpu.lock"
    lock.touch()
    env = {**os.environ, "KERNELGEN_GPU_LOCK": str(lock), "PYTHONPATH": str(REPO)}
    first = subprocess.Popen([sys.executable, "-c", HOLD_A_TURN, str(tmp_path / "a"), "1.5"], env=env)
    while not (tmp_path / "a").exists() or not (tmp_path / "a").read_text():
        assert first.poll() is None, "the first process died before its turn"
    second = subprocess.run([sys.executable, "-c", HOLD_A_TURN, str(tmp_path / "b"), "0"], env=env, timeout=60)
    assert first.wait(timeout=60) == 0 and second.returncode == 0
    assert float((tmp_path / "b").read_text()) - float((tmp_path / "a").read_text()) >= 1.4
    del env["KERNELGEN_GPU_LOCK"]
    alone = subprocess.Popen([sys.executable, "-c", HOLD_A_TURN, str(tmp_path / "c"), "30"], env=env)
    try:
        subprocess.run([sys.executable, "-c", HOLD_A_TURN, str(tmp_path / "d"), "0"], env=env, timeout=20, check=True)
    finally:
        alone.kill()


def test_torch_compiles_autotuning_benchmarks_take_turns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """max-autotune times its candidates on the GPU while compiling: those runs wait for
    another worker's turn (a timed window) to end, through torch's own hook."""
    from torch._inductor.runtime import benchmarking

    from kernelgen.gpu import timing

    lock = tmp_path / "gpu.lock"
    lock.touch()
    env = {**os.environ, "KERNELGEN_GPU_LOCK": str(lock), "PYTHONPATH": str(REPO)}
    monkeypatch.setenv("KERNELGEN_GPU_LOCK", str(lock))
    # A fresh benchmarker and tag, so that the rest of this process keeps torch's own.
    monkeypatch.setattr(benchmarking, "benchmarker", type(benchmarking.benchmarker)())
    previous = benchmarking._gpu_benchmark_lock_context
    with torch.compiler.config.patch(cache_key_tag=""):  # a config module: monkeypatch would delete it after
        assert timing.inductor_timed_by_harness() == "timed"
    try:
        holder = subprocess.Popen([sys.executable, "-c", HOLD_A_TURN, str(tmp_path / "a"), "1.5"], env=env)
        while not (tmp_path / "a").exists() or not (tmp_path / "a").read_text():
            assert holder.poll() is None, "the holder died before its turn"
            time.sleep(0.01)
        waited = timing.waited_seconds()
        with benchmarking.maybe_gpu_benchmark_lock():
            entered = time.monotonic()
            assert timing._held is not None
        assert holder.wait(timeout=60) == 0
        assert entered - float((tmp_path / "a").read_text()) >= 1.4
        assert timing.waited_seconds() - waited >= 1.0  # what compile_s leaves out
    finally:
        benchmarking.set_gpu_benchmark_lock_context(previous)


def test_threads_of_one_process_take_turns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second thread's turn starts when the first's ends, and nesting in a thread does not
    wait for itself (Inductor may benchmark from a worker thread)."""
    import threading

    from kernelgen.gpu import timing

    lock = tmp_path / "gpu.lock"
    lock.touch()
    monkeypatch.setenv("KERNELGEN_GPU_LOCK", str(lock))
    spans: dict[str, tuple[float, float]] = {}
    inside = threading.Event()

    def turn(name: str, hold: float) -> None:
        with timing.gpu_turn(), timing.gpu_turn():
            start = time.monotonic()
            inside.set()
            time.sleep(hold)
            spans[name] = (start, time.monotonic())

    first = threading.Thread(target=turn, args=("first", 0.5))
    first.start()
    inside.wait(timeout=10)
    second = threading.Thread(target=turn, args=("second", 0.0))
    second.start()
    first.join(timeout=10)
    second.join(timeout=10)
    assert spans["second"][0] >= spans["first"][1]
    assert timing._held is None and timing._turns_held == 0


def test_torch_compiles_autotuner_ranks_candidates_by_the_harness_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inductor's own benchmarker measured the host's launch time for short kernels (0.17-0.33 ms
    for reduction configurations that take 0.04-0.33 ms on the H200), so its choices were noise:
    its ``benchmark_gpu`` is replaced, once, by the harness's timer, whose median ranks
    candidates; every repetition where asked for all, and ``inf`` (pass over it) for a call too
    slow to time in a turn. Its caches' key tag gains the harness's, keeping a user's."""
    from torch._inductor.runtime import benchmarking

    from kernelgen.errors import Diagnostic, KernelTimeout
    from kernelgen.gpu import timing

    class Benchmarker:
        def benchmark_gpu(self, fn, **kwargs):  # noqa: ANN001, ANN201 - as Inductor's
            raise AssertionError("Inductor's own benchmarker ran")

    calls = []

    def windows(fn, flush, repetitions, warmup):  # noqa: ANN001, ANN202 - timed_windows' stand-in
        calls.append((fn(), repetitions, warmup))
        if fn() == "slow":
            raise KernelTimeout(Diagnostic("", "timeout", "one call takes 70 s"))
        return timing.Windows([0.3, 0.1, 0.2, 0.9], attempts=1, late=0)

    monkeypatch.setattr(benchmarking, "benchmarker", Benchmarker())
    monkeypatch.setattr(timing, "timed_windows", windows)
    monkeypatch.setattr(timing, "flush_buffer", lambda: None)
    previous = getattr(benchmarking, "_gpu_benchmark_lock_context", None)
    try:
        with torch.compiler.config.patch(cache_key_tag="mine"):  # a config module: monkeypatch would delete it
            assert timing.inductor_timed_by_harness() == timing.inductor_timed_by_harness() == "timed"
            assert torch.compiler.config.cache_key_tag == f"mine+{timing.CACHE_KEY_TAG}"
        bench = benchmarking.benchmarker.benchmark_gpu
        assert bench(lambda: "a", warmup=25, rep=100) == pytest.approx(0.25)
        assert calls == [("a", timing.AUTOTUNE_REPETITIONS, timing.AUTOTUNE_WARMUP)]
        assert bench(lambda: "a", return_mode="all") == [0.3, 0.1, 0.2, 0.9]
        assert bench(lambda: "slow") == float("inf") and bench(lambda: "slow", return_mode="all") == [float("inf")]
        monkeypatch.setattr(benchmarking, "benchmarker", object())
        assert timing.inductor_timed_by_harness() == "none"
    finally:
        if hasattr(benchmarking, "set_gpu_benchmark_lock_context"):
            benchmarking.set_gpu_benchmark_lock_context(previous)


def test_a_case_records_its_worker_and_gpu() -> None:
    assert gpu_record(H200S[1], {"PYTEST_XDIST_WORKER": "gw3"}) == \
        {"worker": "gw3", "index": 1, "name": "NVIDIA H200", "uuid": H200S[1].uuid}
    assert gpu_record(None, {}) == {"worker": "main"}


def test_the_summary_lists_each_workers_gpu() -> None:
    def ran_on(worker: str) -> CaseResult:
        gpu = assign_gpu(worker, H200S)
        return CaseResult(task="relu", tier="easy", provider="p", model="m", outcome="ok", mode="gpu",
                          target="sm_90", extra={"gpu": gpu_record(gpu, {"PYTEST_XDIST_WORKER": worker})})

    results = [ran_on(w) for w in ("gw10", "gw1", "gw0", "gw1", "gw2", "gw3")]
    assert gpu_assignment(results) == ["worker gw0: GPU 0 (NVIDIA H200), 1 cases",
                                       "worker gw1: GPU 1 (NVIDIA H200), 2 cases",
                                       "worker gw2: GPU 0 (NVIDIA H200), 1 cases",
                                       "worker gw3: GPU 1 (NVIDIA H200), 1 cases",
                                       "worker gw10: GPU 0 (NVIDIA H200), 1 cases"]


def test_a_bad_shard_is_a_usage_error_of_pytest() -> None:
    run = subprocess.run([sys.executable, "-m", "pytest", "--shard", "3/2", "--collect-only", "-q", "-p",
                          "no:cacheprovider", "tests/test_report_scale.py"], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == pytest.ExitCode.USAGE_ERROR
    assert "--shard 3/2: INDEX must be between 1 and COUNT" in run.stderr


# -- progress bars -------------------------------------------------------------------------


def test_progress_passes_items_through_off_a_terminal() -> None:
    stream = io.StringIO()
    assert list(progress(range(5), description="runs", stream=stream)) == [0, 1, 2, 3, 4]
    assert stream.getvalue() == ""


def test_progress_draws_a_bar_on_a_terminal() -> None:
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))  # a pty starts 0 columns wide
    with open(leader, "rb", buffering=0) as screen, open(follower, "w") as terminal:
        assert list(progress(["a", "b"], description="runs", unit="run", stream=terminal)) == ["a", "b"]
        terminal.flush()
        drawn = screen.read(4096).decode()
    assert "runs:" in drawn and "/2 [" in drawn


def test_a_failure_of_wandb_ends_tracking_not_the_run(pytestconfig: pytest.Config,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_API_KEY", "secret-key-123")
    reports = RunReports(pytestconfig, "online", None)

    def unreachable(result: CaseResult) -> None:
        raise ConnectionError("api.wandb.ai refused key secret-key-123")

    assert reports._tracking(unreachable, None) is None
    assert reports.wandb is None
    assert reports.notes == ["W&B stopped, the run went on without it: ConnectionError: api.wandb.ai refused key ***"]


def test_workers_share_the_cores_out() -> None:
    cores = cpu_threads({})
    assert cores >= 1
    assert cpu_threads({"PYTEST_XDIST_WORKER_COUNT": str(cores * 4)}) == 1
    assert cpu_threads({"PYTEST_XDIST_WORKER_COUNT": "2"}) == max(1, cores // 2)


def test_a_worker_sets_its_thread_count_unless_the_run_did() -> None:
    environ = {"PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_WORKER_COUNT": "1"}
    before = torch.get_num_threads()
    try:
        share_cpu_threads(environ)
        assert environ["OMP_NUM_THREADS"] == str(cpu_threads(environ)) == str(torch.get_num_threads())
    finally:
        torch.set_num_threads(before)
    chosen = {"PYTEST_XDIST_WORKER": "gw1", "OMP_NUM_THREADS": "3"}
    share_cpu_threads(chosen)
    assert chosen["OMP_NUM_THREADS"] == "3"
    outside_xdist: dict[str, str] = {}
    share_cpu_threads(outside_xdist)
    assert outside_xdist == {}


def test_a_plain_xdist_run_of_tests_shares_the_cores_out(tmp_path: Path) -> None:
    """Not only the benchmark's cases: `pytest tests -n 2` on two cores ran two workers of two torch threads
    each, and the red-team catalogue's CPU cases took four times as long as in one process."""
    (tmp_path / "test_threads.py").write_text(
        "import os, torch\n"
        "def _record():\n"
        "    name = os.environ['PYTEST_XDIST_WORKER']\n"
        f"    open(os.path.join({str(tmp_path)!r}, name + '.txt'), 'w').write(str(torch.get_num_threads()))\n"
        "def test_one():\n"
        "    _record()\n"
        "def test_two():\n"
        "    _record()\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "PYTEST_XDIST_WORKER",
                                                            "PYTEST_XDIST_WORKER_COUNT", "PYTEST_ADDOPTS")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "kernelgen.harness.plugin",
                           "-p", "no:cacheprovider", "-p", "no:randomly", str(tmp_path / "test_threads.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    counts = {path.stem: int(path.read_text()) for path in tmp_path.glob("gw*.txt")}
    assert counts and set(counts.values()) == {cpu_threads({"PYTEST_XDIST_WORKER_COUNT": "2"})}, counts


@pytest.mark.gpu
def test_a_turn_gives_the_gpu_memory_it_cached_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers share one GPU and take turns on it: what a turn's process freed goes back to the
    device when the turn ends, not into its caching allocators, or the next worker's largest
    draw ends in CUDA out of memory (14 workers on the H200: one kept 83 GiB)."""
    import cupy

    from kernelgen.gpu import timing

    lock = tmp_path / "gpu.lock"
    lock.touch()
    monkeypatch.setenv("KERNELGEN_GPU_LOCK", str(lock))
    # What the worker holds before the turn stays: live memory of earlier tests in this process,
    # such as cuBLAS's workspace after a matmul (32 MiB on the H200), which empty_cache keeps. Their
    # freed blocks still cached are let go first: the turn lets them go too (2 MiB of an earlier
    # test's under -n 16 on the H100, 2026-12-06), and they are not what the turn is judged on.
    torch.cuda.init()
    torch.cuda.empty_cache()
    cupy.get_default_memory_pool().free_all_blocks()
    held = torch.cuda.memory_reserved(), cupy.get_default_memory_pool().total_bytes()
    with timing.gpu_turn():
        tensor = torch.empty(256 * 2**20, dtype=torch.float32, device="cuda")
        array = cupy.empty(256 * 2**20, dtype=cupy.float32)
        del tensor, array
        assert torch.cuda.memory_reserved() >= held[0] + 2**30
        assert cupy.get_default_memory_pool().total_bytes() >= held[1] + 2**30
    assert (torch.cuda.memory_reserved(), cupy.get_default_memory_pool().total_bytes()) == held
