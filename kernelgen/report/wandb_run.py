"""A benchmark run as a Weights & Biases run (``--wandb off|offline|online``).

Tracking is off unless asked for, so that a run writes no ``wandb/`` folder into the checkout:
``--wandb`` (or the ini key ``kg_wandb``) decides; else W&B's own ``WANDB_MODE`` (``disabled``,
``offline``, ``online``); else ``online`` where a W&B key is set (``WANDB_API_KEY``, in the
environment or ``.env``); else ``off``. An offline run is a folder under ``$WANDB_DIR/wandb``
(default: the working directory) that ``wandb sync`` uploads later. Without the ``wandb``
package a mode the environment selects gives way to ``off`` (with a note), and a mode asked
for on the command line is an error that names the install.

Written by the pytest controller only, as cases arrive: per case, its metrics (a history
step); at the end, a table of every case, the run's scores (per tier and overall) in the
summary, and the kernels (AST, TTIR, PTX per case) as one artifact of type ``kernels``. The
kernel files are written into the run's own folder (beside ``files/``, which W&B would also
upload as run files) and added to the artifact by reference to that folder, so an offline run
keeps everything ``wandb sync`` needs in one place.

The key is never handled here: wandb reads it from the environment itself.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any, Sequence

from kernelgen.env import getenv
from kernelgen.errors import KernelgenError, require
from kernelgen.task.metrics import FAST_P_THRESHOLDS, by_tier, max_samples, score
from kernelgen.task.results import CaseResult

MODES = ("off", "offline", "online")
# WANDB_MODE's values (wandb's own, old ones included) as our modes.
WANDB_MODES = {"disabled": "off", "offline": "offline", "dryrun": "offline", "online": "online", "run": "online"}
DEFAULT_PROJECT = "kernelgen"
KERNEL_FILES = {"ast": "ast.json", "ttir": "kernel.ttir", "ptx": "kernel.ptx"}
TABLE_COLUMNS = ["tier", "task", "sample", "track", "provider", "model", "outcome", "stage", "first_diagnostic",
                 "mode", "target", "gpu", "latency_s", "tokens_in", "tokens_out", "duration_s", "kernel_ms",
                 "eager_ms", "speedup", "gbps", "tflops", "roofline_fraction", "flagged", "compiled_ms",
                 "speedup_vs_compiled", "tuned_config", "as_written_ms", "tuning_s"]


class WandbError(KernelgenError):
    stage = "report"


def resolve_mode(requested: str | None) -> tuple[str, str | None]:
    """The W&B mode to use (see the module's docstring) and, when it had to give way, why."""
    if requested is not None and requested not in MODES:
        raise WandbError(f"--wandb takes {', '.join(MODES)}, not {requested!r}", code="bad_wandb_mode")
    if requested is not None:
        if requested != "off" and not _installed():
            require("wandb", f"--wandb {requested}", "track")
        return requested, None
    environment = os.environ.get("WANDB_MODE", "").strip().lower()
    if environment:
        if environment not in WANDB_MODES:
            raise WandbError(f"WANDB_MODE takes {', '.join(WANDB_MODES)}, not {environment!r}",
                             code="bad_wandb_mode")
        mode, why = WANDB_MODES[environment], f"WANDB_MODE={environment}"
    elif getenv("WANDB_API_KEY"):
        mode, why = "online", "WANDB_API_KEY is set"
    else:
        return "off", None
    if mode != "off" and not _installed():
        return "off", f"W&B: off ({why}, but the wandb package is not installed: pip install 'kernelgen[track]')"
    return mode, None


def _installed() -> bool:
    spec = importlib.util.find_spec("wandb")
    # W&B writes its runs into ./wandb: from the working directory that folder imports as a
    # namespace package (no origin), which is not the wandb package.
    return spec is not None and spec.origin is not None


def case_name(result: CaseResult) -> str:
    return result.task if result.sample == 0 else f"{result.task}-s{result.sample}"


def case_metrics(result: CaseResult) -> dict[str, Any]:
    """One case as a W&B history step."""
    metrics: dict[str, Any] = {
        "case/tier": result.tier, "case/task": result.task, "case/sample": result.sample,
        "case/outcome": result.outcome.value, "case/ok": int(result.ok), "case/duration_s": result.duration_s,
        "case/latency_s": result.generation.latency_s, "case/tokens_in": result.generation.tokens_in,
        "case/tokens_out": result.generation.tokens_out, "case/repair_rounds": result.generation.repair_rounds,
    }
    if result.timing is not None:
        t = result.timing
        metrics |= {"case/kernel_ms": t.kernel_ms, "case/eager_ms": t.eager_ms, "case/speedup": t.speedup,
                    "case/gbps": t.gbps, "case/tflops": t.tflops, "case/roofline_fraction": t.roofline_fraction}
        if t.speedup_vs_compiled is not None:
            metrics |= {"case/compiled_ms": t.compiled_ms, "case/speedup_vs_compiled": t.speedup_vs_compiled}
    if result.tuning is not None:
        metrics |= {"case/tuning_s": result.tuning.seconds, "case/as_written_ms": result.tuning.as_written_ms,
                    "case/tuned_kernel_ms": result.tuning.kernel_ms}
    return metrics


def table_row(result: CaseResult) -> list[Any]:
    t, g = result.timing, result.generation
    first = result.first_diagnostic()
    gpu = result.extra.get("gpu", {})
    return [result.tier, result.task, result.sample, result.track, result.provider, result.model,
            result.outcome.value, result.stage, str(first) if first else None, result.mode, result.target,
            gpu.get("name"), g.latency_s, g.tokens_in, g.tokens_out, result.duration_s,
            t.kernel_ms if t else None, t.eager_ms if t else None, t.speedup if t else None,
            t.gbps if t else None, t.tflops if t else None, t.roofline_fraction if t else None,
            t.flagged if t else None, t.compiled_ms if t else None, t.speedup_vs_compiled if t else None,
            json.dumps(result.tuning.config, sort_keys=True) if result.tuning else None,
            result.tuning.as_written_ms if result.tuning else None, result.tuning.seconds if result.tuning else None]


def run_scores(results: Sequence[CaseResult]) -> dict[str, Any]:
    """The run's scores as flat summary keys: ``easy/pass_rate``, ``all/fast_1.0``, ..."""
    ks = sorted({1, max_samples(results)})
    summary: dict[str, Any] = {}
    for group, cases in {**by_tier(results), "all": list(results)}.items():
        scores = score(cases, ks)
        summary[f"{group}/cases"] = scores.cases
        summary[f"{group}/pass_rate"] = scores.pass_rate
        for k, (value, _) in scores.pass_at.items():
            summary[f"{group}/pass@{k}"] = value
        for p in FAST_P_THRESHOLDS:
            if scores.fast[p] is not None:
                summary[f"{group}/fast_{p:g}"] = scores.fast[p]
        if scores.geomean is not None:
            summary[f"{group}/geomean_speedup"], summary[f"{group}/timed_cases"] = scores.geomean
        if scores.geomean_as_written is not None:
            summary[f"{group}/geomean_speedup_as_written"] = scores.geomean_as_written[0]
        if scores.geomean_compiled is not None:
            summary[f"{group}/geomean_speedup_vs_compiled"] = scores.geomean_compiled[0]
        if scores.tuning_s is not None:
            summary[f"{group}/tuning_s"], summary[f"{group}/tuned_kernels"] = scores.tuning_s
        for outcome, count in scores.outcomes.items():
            summary[f"{group}/outcome/{outcome}"] = count
    return summary


class WandbRun:
    """A W&B run fed case by case; started by the first case, so a session without kernelgen
    cases starts none."""

    def __init__(self, mode: str, config: dict[str, Any]) -> None:
        self.mode = mode
        self.config = config
        self.run: Any = None
        self.kernels_dir: Path | None = None
        self.results: list[CaseResult] = []

    def _start(self, first: CaseResult) -> None:
        wandb = require("wandb", "W&B tracking", "track")
        config = self.config | {"provider": first.provider, "model": first.model, "target": first.target,
                                "mode": first.mode}
        self.run = wandb.init(project=os.environ.get("WANDB_PROJECT") or DEFAULT_PROJECT, mode=self.mode,
                              job_type="benchmark", config=config, tags=[first.mode, first.target],
                              settings=wandb.Settings(silent=True, console="off"))
        self.kernels_dir = Path(self.run.dir).parent / "kernels"

    def add(self, result: CaseResult) -> None:
        result = result.scrubbed()
        if self.run is None:
            self._start(result)
        self.results.append(result)
        self.run.log(case_metrics(result))
        assert self.kernels_dir is not None
        folder = self.kernels_dir / result.tier / case_name(result)
        for name, file_name in KERNEL_FILES.items():
            if name in result.artifacts:
                folder.mkdir(parents=True, exist_ok=True)
                (folder / file_name).write_text(result.artifacts[name], encoding="utf-8")

    def finish(self) -> Path | None:
        """Log the table, the scores and the kernels, and close the run; its folder."""
        if self.run is None:
            return None
        wandb = require("wandb", "W&B tracking", "track")
        self.run.log({"cases": wandb.Table(columns=TABLE_COLUMNS, data=[table_row(r) for r in self.results])})
        self.run.summary.update(run_scores(self.results))
        if self.kernels_dir is not None and self.kernels_dir.is_dir():
            artifact = wandb.Artifact(f"kernels-{self.run.id}", type="kernels",
                                      description="AST, TTIR and PTX of every case, by tier and case")
            for path in sorted(self.kernels_dir.rglob("*")):
                if path.is_file():
                    artifact.add_file(str(path), name=path.relative_to(self.kernels_dir).as_posix(),
                                      policy="immutable")
            self.run.log_artifact(artifact)
        folder = Path(self.run.dir).parent
        self.run.finish()
        self.run = None
        return folder
