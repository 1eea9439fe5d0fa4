"""The compile pool's share of the cores: counted among the processes compiling now, not fixed by
the number of xdist workers (kernelgen.gpu.compile_share, kernelgen.gpu.tune._in_pool)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from kernelgen.gpu import compile_share, devices, tune

HOLD = """
import sys, time
from kernelgen.gpu.compile_share import compiling
with compiling(8, sys.argv[1]):
    print("holding", flush=True)
    time.sleep(60)
"""


def holder(directory) -> subprocess.Popen:
    """Another process compiling, as an xdist worker tuning a kernel would be."""
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(directory)], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "holding"
    return process


def test_processes_compiling_now_are_counted_and_a_killed_ones_file_is_removed(tmp_path) -> None:
    assert compile_share.compiling_now(str(tmp_path)) == 0
    other = holder(tmp_path)
    try:
        assert compile_share.compiling_now(str(tmp_path)) == 1
        with compile_share.compiling(64, str(tmp_path)) as share:
            assert compile_share.compiling_now(str(tmp_path)) == 2
            assert share() == max(1, devices.cores() // 2)
        assert compile_share.compiling_now(str(tmp_path)) == 1
    finally:
        other.kill()
        other.wait()
    assert compile_share.compiling_now(str(tmp_path)) == 0
    assert list(tmp_path.iterdir()) == []  # the killed process's file, and this one's


def test_a_process_alone_takes_the_cores_up_to_the_limit(tmp_path) -> None:
    with compile_share.compiling(3, str(tmp_path)) as share:
        assert share() == min(3, devices.cores())
    with compile_share.compiling(10**6, str(tmp_path)) as share:
        assert share() == devices.cores()


def test_the_pool_runs_no_more_jobs_at_once_than_the_share(tmp_path, monkeypatch) -> None:
    """Four processes compiling on a machine of 8 cores: two jobs at a time, counted as each is
    submitted; every job comes back once."""
    monkeypatch.setattr(devices, "cores", lambda: 8)
    monkeypatch.setattr(compile_share, "compiling_now", lambda directory=None: 4)
    submitted, most = [], 0

    def submit(pool, job):
        nonlocal most
        most = max(most, 1 + sum(not future.done() for future in submitted))
        submitted.append(pool.submit(time.sleep, 0.05))
        return submitted[-1]

    returned = [job for job, future in tune._in_pool(list(range(10)), submit, None) if future.exception() is None]
    assert sorted(returned) == list(range(10)) and most == 2


def test_a_broken_pool_hands_back_its_unfinished_jobs_and_the_next_call_starts_a_fresh_one() -> None:
    def submit(pool, job):
        return pool.submit(os._exit, 3) if job == "crash" else pool.submit(time.sleep, 0.5)

    results = dict(tune._in_pool(["crash", "after"], submit, 1))
    assert results == {"crash": None, "after": None}
    assert 1 not in tune._POOLS
    ((job, future),) = list(tune._in_pool(["fine"], lambda pool, job: pool.submit(abs, -2), 1))
    assert job == "fine" and future.result() == 2


@pytest.mark.parametrize("workers", [1, None])
def test_precompile_fills_the_compile_cache(workers) -> None:
    from kernelgen.check.checker import check
    from kernelgen.gpu.compile import _entry_path, cache_directory, cache_key, cache_load, resolve_options
    from kernelgen.task.spec import get_task

    kernel = check(get_task("easy/relu").golden)
    key = cache_key(kernel, resolve_options(kernel, "sm_90", None, None))
    _entry_path(cache_directory(), key).unlink(missing_ok=True)
    tune.precompile([kernel], "sm_90", workers=workers)
    compiled = cache_load(cache_directory(), key)
    assert compiled is not None and compiled.target == "sm_90"
