"""The TritonBench-T track's golden answers: what the ``reference`` provider answers.

Each operator has a golden AST in ``bench/tritonbench/golden/<operator>.json`` (the operator's
id: its file's stem): all 30 of the sample have one. An operator without one (in a full
checkout, the operators nobody has written one for yet) is unsupported with its own code
(``no_golden``), so no operator is silently dropped.

Where the dataset's reference and its prompt disagree, a golden follows the reference (the
oracle of the operator's tests, and what published scores were measured against): ``std``
accepts ``correction`` and ignores it, ``sub_gelu``'s exact form is ``x * erf(x / sqrt(2)) / 2``
(GELU without its ``1 +``), as their references compute.
"""

from __future__ import annotations

from pathlib import Path

from kernelgen.errors import Diagnostic, KernelgenError, Outcome
from kernelgen.task.spec import bench_root


class UnsupportedOperator(KernelgenError):
    """The kernel language cannot express the operator (or no golden answer exists yet)."""

    stage = "generate"
    outcome = Outcome.UNSUPPORTED


def track_directory(root: Path | None = None) -> Path:
    """``bench/tritonbench`` (under ``$KERNELGEN_BENCH_DIR`` when set)."""
    return (root or bench_root()) / "tritonbench"


def golden_answer(operator: str, directory: Path | None = None) -> str:
    """The golden AST's text for an operator id; :class:`UnsupportedOperator` where there is none."""
    directory = directory or track_directory()
    path = directory / "golden" / f"{operator}.json"
    if path.is_file():
        return path.read_text(encoding="utf-8")
    raise UnsupportedOperator(Diagnostic("", "no_golden", f"no golden AST for {operator} (nothing in {path})"))
