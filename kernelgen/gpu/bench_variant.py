"""Without a GPU, whether the launches a GPU would make of a kernel fit its shared memory (CPU mode's
compile stage): the variant a bench launch compiles is not the one CPU mode compiles."""

from __future__ import annotations

import re
from typing import Any, Mapping, Union

from kernelgen.check.checked import Checked
from kernelgen.errors import Diagnostic, KernelgenError, LaunchError
from kernelgen.gpu.compile import CompiledKernel, compile_document, divisible_params
from kernelgen.gpu.facts import SM_LIMITS
from kernelgen.host.plan import LaunchPlan, sequence_for_sizes


def bench_variant_fits(checked: Checked, compiled: Union[CompiledKernel, list[CompiledKernel]],
                       bench_sizes: Mapping[str, int], scalars: Mapping[str, Any], target: str) -> None:
    """Without a GPU, whether the launches a GPU would make fit its shared memory; raises the
    :class:`LaunchError` a GPU's launch gives (``out_of_shared_memory``) where one does not.

    ``compiled`` is the unspecialized variant CPU mode compiles. A GPU launches, at sizes that are
    multiples of 16 (the bench sizes are), a variant specialized for them (:func:`divisible_params`),
    and only there can Triton prove a loop's dot operands aligned and pipeline them through shared
    memory, a stage's tiles each: a five-stage matmul of [128, 64] and [64, 256] f16 tiles needs
    50176 bytes unspecialized and 311336 at its bench sizes, past sm_90's 232448 (round 32). So a
    kernel whose loops hold a dot or a TMA copy is compiled again as its bench launch is."""
    limits = SM_LIMITS.get(target)
    if limits is None:
        return
    built = compiled if isinstance(compiled, list) else [compiled]
    if any(re.search(r"\btt\.(dot|descriptor_load)\b", each.ttir) and "scf.for" in each.ttir for each in built):
        built = built + (bench_variant(checked, bench_sizes, scalars, target) or [])
    for each in built:
        shared = int(each.metadata.get("shared", 0))
        if shared > limits.max_shared_per_block:
            sizes = ", ".join(f"{name}={value}" for name, value in bench_sizes.items())
            at = f" at the bench sizes ({sizes})" if each.metadata.get("divisible_by_16") else ""
            raise LaunchError(Diagnostic("", "out_of_shared_memory",
                                         f"kernel {each.name} needs {shared} bytes of shared memory per block{at}; "
                                         f"{target} allows {limits.max_shared_per_block}: use smaller blocks or "
                                         "fewer pipeline stages"))


def bench_plans(checked: Checked, bench_sizes: Mapping[str, int], scalars: Mapping[str, Any]) -> list[LaunchPlan] | None:
    """Each launch's plan at ``bench_sizes``; None where none specializes a param (:func:`divisible_params`:
    the unspecialized variant is that launch's) or no launch is made at these sizes."""
    if not bench_sizes:
        return None
    try:
        plans = sequence_for_sizes(checked, bench_sizes, scalars)
    except KernelgenError:  # no launch at these sizes: the draws' verdict says why
        return None
    return plans if any(divisible_params(plan) for plan in plans) else None


def bench_variant(checked: Checked, bench_sizes: Mapping[str, int], scalars: Mapping[str, Any],
                  target: str) -> list[CompiledKernel] | None:
    """Each launch of the variant a launch at ``bench_sizes`` compiles (its integer params that
    are multiples of 16 specialized); None where :func:`bench_plans` is."""
    plans = bench_plans(checked, bench_sizes, scalars)
    if plans is None:
        return None
    specialized = compile_document(checked, target=target, plans=plans)
    return specialized if isinstance(specialized, list) else [specialized]
