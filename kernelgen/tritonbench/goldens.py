"""The TritonBench-T track's golden answers: what the ``reference`` provider answers.

Each operator the kernel language can express has a golden AST in
``bench/tritonbench/golden/<operator>.json`` (the operator's id: its file's stem); each one it
cannot express has its reason in ``bench/tritonbench/unsupported.json``. An operator with
neither (in a full checkout, the operators nobody has triaged yet) is also unsupported, with
its own code, so no operator is silently dropped.

Where the dataset's reference and its prompt disagree, a golden follows the reference (the
oracle of the operator's tests, and what published scores were measured against): ``std``
accepts ``correction`` and ignores it, ``sub_gelu``'s exact form is ``x * erf(x / sqrt(2)) / 2``
(GELU without its ``1 +``), as their references compute.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from kernelgen.errors import Diagnostic, KernelgenError, Outcome
from kernelgen.tasks import bench_root


class UnsupportedOperator(KernelgenError):
    """The kernel language cannot express the operator (or no golden answer exists yet)."""

    stage = "generate"
    outcome = Outcome.UNSUPPORTED


def track_directory(root: Path | None = None) -> Path:
    """``bench/tritonbench`` (under ``$KERNELGEN_BENCH_DIR`` when set)."""
    return (root or bench_root()) / "tritonbench"


@functools.lru_cache(maxsize=4)
def unsupported_reasons(directory: Path) -> dict[str, str]:
    """Operator id -> why the language cannot express it."""
    path = directory / "unsupported.json"
    if not path.is_file():
        return {}
    reasons = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(reasons, dict) or not all(isinstance(v, str) for v in reasons.values()):
        raise KernelgenError(Diagnostic(str(path), "bad_unsupported_list",
                                        "expected a JSON object: operator id -> reason"))
    return reasons


def golden_answer(operator: str, directory: Path | None = None) -> str:
    """The golden AST's text for an operator id; :class:`UnsupportedOperator` where there is none."""
    directory = directory or track_directory()
    path = directory / "golden" / f"{operator}.json"
    if path.is_file():
        return path.read_text(encoding="utf-8")
    reason = unsupported_reasons(directory).get(operator)
    if reason is not None:
        raise UnsupportedOperator(Diagnostic("", "unsupported", reason))
    raise UnsupportedOperator(Diagnostic("", "no_golden", f"no golden AST for {operator} (nothing in {path}) "
                                         "and no reason in unsupported.json: it has not been triaged"))
