"""What several of kernelgen's own tests share: the TritonBench-T sample beside the checkout."""

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
