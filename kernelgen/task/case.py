"""One benchmark case as the pipeline's stages see it: the settings it runs under and the
artifacts each stage adds.

It is its own module so that the GPU stages (:mod:`kernelgen.gpu.case`) and the stage table
(:mod:`kernelgen.harness.pipeline`), which calls them, both read a case without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelgen.lang import nodes as L
from kernelgen.check.checked import CheckedKernel
from kernelgen.task.results import Timing
from kernelgen.task.spec import Task


@dataclass
class Settings:
    """How cases run: where, on which target, how many shapes, with which seed."""

    target: str = "sm_90"
    shapes: int = 5
    seed: int = 0
    gpu: bool = False
    executor: Any = None
    timeout_s: float = 60.0
    time_kernels: bool = True
    compile: bool = True
    tune: str = "off"  # off, quick or full (kernelgen.gpu.tune); GPU mode only
    torch_compile: bool = False  # also time torch.compile of the eager code (a second baseline)
    # The baseline may run model code without its operating-system sandbox where bubblewrap
    # cannot run (--unsafe-sandbox: a developer's own machine; kernelgen.baseline.wall).
    unsafe_sandbox: bool = False


@dataclass
class Case:
    task: Task
    answer: str
    settings: Settings
    kernel: L.Kernel | None = None
    checked: CheckedKernel | None = None
    # A task with calls (kernelgen.task.variants): the kernel checked for each call, the listed ones
    # in order, then those no listed call makes (variants.unlisted_calls).
    calls_checked: list[CheckedKernel] = field(default_factory=list)
    compiled: Any = None
    # Per launch, the thread of each position of each block access, as the compiled variants lay
    # them out (kernelgen.gpu.layouts), for the barrier check; None where no launch needs them.
    layouts: list[Any] | None = None
    sizes_checked: list[dict[str, int]] = field(default_factory=list)
    timing: Timing | None = None
    # The launch configuration the kernel is compiled with (kernelgen.gpu.tune may change it with
    # ``checked``'s meta values): None means the kernel's own.
    num_warps: int | None = None
    num_stages: int | None = None
    tuning: dict[str, Any] | None = None
    # A task with calls, tuned: each call's kept configuration (kernelgen.gpu.tune.Config) by its
    # bucket's label (kernelgen.gpu.function.call_bucket), as the wrapper looks it up.
    call_configs: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
