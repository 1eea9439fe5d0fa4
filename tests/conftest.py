"""What several of kernelgen's own tests share: the TritonBench-T sample beside the checkout, and
GPU mode's settings for tests marked ``gpu``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Every run draws the same examples (derandomized): a CI run is reproducible, and a failure is a
# drawn kernel to fix, not a coin toss between runs. HYPOTHESIS_PROFILE=explore draws new
# examples each run (what found the faults the closing notes list).
settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# The sample lives beside the project (../shared), never inside it; $KERNELGEN_TRITONBENCH_ROOT
# points elsewhere (a copy on a GPU machine), as it does for the benchmark's own track.
TRITONBENCH_SAMPLE = Path(os.environ.get("KERNELGEN_TRITONBENCH_ROOT")
                          or Path(__file__).resolve().parents[1] / ".." / "shared" / "tritonbench-t-sample")


@pytest.fixture(scope="session")
def sample():
    """The loaded sample; the test skips, saying where it looked, when it is absent."""
    from kernelgen.tritonbench import load_tritonbench

    if not (TRITONBENCH_SAMPLE / "data").is_dir():
        pytest.skip(f"the TritonBench-T sample is not at {TRITONBENCH_SAMPLE.resolve()}")
    return load_tritonbench(TRITONBENCH_SAMPLE)


@pytest.fixture(scope="module")
def gpu_settings():
    """GPU mode as the plugin runs it (no timing), with an executor shared by a module's tests;
    as the plugin's workers do, turns on this worker's GPU and a timeout under load retried
    alone, and its share of the cores (``pytest -n 14`` shares one GPU and 16 cores)."""
    from kernelgen.gpu.devices import executor_env, share_cpu_threads, worker_gpu
    from kernelgen.gpu.executor import Executor
    from kernelgen.gpu.launch import prepare_gpu
    from kernelgen.harness.pipeline import Settings

    share_cpu_threads()
    env = executor_env(worker_gpu())
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        with Executor(env=env, initializer=prepare_gpu, default_timeout=60.0, grace=2.0) as executor:
            yield Settings(gpu=True, executor=executor, time_kernels=False)
