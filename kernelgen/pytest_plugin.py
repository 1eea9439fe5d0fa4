"""kernelgen's pytest plugin: loaded by the project's conftest.py and as a pytest11 entry point.

A thin layer over :mod:`kernelgen.pipeline`: it parametrises a test per (task, sample), asks
the provider for answers (cached for the session), hands each answer to
:func:`~kernelgen.pipeline.evaluate_answer`, reports the outcome, feeds GPU timings to
pytest-benchmark, and prints a summary per tier and outcome. In other projects it stays inert:
it adds options and the ``gpu`` skip, nothing else.
"""

from __future__ import annotations

import functools
import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from kernelgen.errors import Outcome

RESULT_KEY = "kernelgen_result"


@functools.lru_cache(maxsize=1)
def gpu_unavailable_reason() -> str | None:
    """Why GPU work cannot run here, or None when a CUDA GPU is present."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU on this machine"
    return None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kernelgen", "kernelgen benchmark")

    def option(name: str, ini: str, help_text: str, default: Any = None, **kwargs: Any) -> None:
        group.addoption(name, dest=ini, default=None, help=f"{help_text} (ini: {ini}; default: {default})", **kwargs)
        parser.addini(ini, help_text, default=None if default is None else str(default))

    option("--llm", "kg_llm", "provider of the kernels: reference, openai, nim, ollama, gemini, remote, hf, replay:DIR",
           "reference")
    option("--model", "kg_model", "model name sent to the provider")
    option("--base-url", "kg_base_url", "the provider's base URL")
    option("--samples", "kg_samples", "answers per task (pass@k uses them all)", 1)
    option("--repair-rounds", "kg_repair_rounds", "rounds of diagnostics sent back to the model after a failure", 0)
    option("--target", "kg_target", "compile target (sm_80, sm_86, sm_89, sm_90); default: the GPU present, else sm_90")
    option("--kg-shapes", "kg_shapes", "hypothesis-drawn size assignments checked per case", 5)
    option("--kg-seed", "kg_seed", "seed of the shape and input draws", 0)
    option("--kg-mode", "kg_mode", "auto (GPU when present), cpu (interpreter, no launch) or gpu", "auto")
    option("--kg-timeout", "kg_timeout", "seconds one kernel launch may take before it counts as a timeout", 60)


def _value(config: pytest.Config, name: str, default: Any, kind: type = str) -> Any:
    value = getattr(config.option, name, None)
    if value is None:
        value = config.getini(name) or None
    return default if value is None else kind(value)


class Session:
    """What one pytest session shares between cases: settings, the provider, generations."""

    def __init__(self, config: pytest.Config) -> None:
        from kernelgen.pipeline import Settings

        self.config = config
        self.llm = _value(config, "kg_llm", "reference")
        self.model = _value(config, "kg_model", "golden" if self.llm == "reference" else "")
        self.base_url = _value(config, "kg_base_url", None)
        self.samples = _value(config, "kg_samples", 1, int)
        self.repair_rounds = _value(config, "kg_repair_rounds", 0, int)
        mode = _value(config, "kg_mode", "auto")
        if mode not in ("auto", "cpu", "gpu"):
            raise pytest.UsageError(f"--kg-mode takes auto, cpu or gpu, not {mode!r}")
        reason = gpu_unavailable_reason()
        if mode == "gpu" and reason:
            raise pytest.UsageError(f"--kg-mode gpu: {reason}")
        self.gpu = mode == "gpu" or (mode == "auto" and reason is None)
        self.skipped_reason = None if self.gpu else (reason or "--kg-mode cpu")
        target = _value(config, "kg_target", None) or self._default_target()
        self.settings = Settings(target=target, shapes=_value(config, "kg_shapes", 5, int),
                                 seed=_value(config, "kg_seed", 0, int), gpu=self.gpu,
                                 timeout_s=_value(config, "kg_timeout", 60.0, float))
        self._executor = None

    def _default_target(self) -> str:
        if gpu_unavailable_reason() is None:
            import torch

            major, minor = torch.cuda.get_device_capability()
            return f"sm_{major}{minor}"
        return "sm_90"

    @property
    def executor(self):
        if self._executor is None and self.gpu:
            from kernelgen.executor import Executor

            self._executor = Executor()
        return self._executor

    def close(self) -> None:
        if self._executor is not None:
            self._executor.close()

    def answers(self, task) -> list[tuple[str, Any, str]]:
        """``samples`` answers for ``task``: (text, generation info, prompt)."""
        return _answers(self, task.id)

    def run(self, task, sample: int):
        from kernelgen.pipeline import evaluate_answer

        text, info, prompt = self.answers(task)[sample]
        self.settings.executor = self.executor
        return evaluate_answer(task, text, self.settings, provider=self.llm, model=self.model,
                               sample=sample, generation=info, prompt=prompt)


@functools.lru_cache(maxsize=None)
def _cached_answers(llm: str, task_id: str, samples: int) -> tuple:
    from kernelgen.parse import kernel_to_json
    from kernelgen.results import GenerationInfo
    from kernelgen.tasks import get_task

    task = get_task(task_id)
    if llm == "reference":
        return tuple((kernel_to_json(task.golden), GenerationInfo(), task.render_prompt()) for _ in range(samples))
    raise pytest.UsageError(f"--llm {llm}: unknown provider")


def _answers(session: Session, task_id: str) -> tuple:
    return _cached_answers(session.llm, task_id, session.samples)


_SESSION_KEY = pytest.StashKey[Session]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_SESSION_KEY] = None  # made on first use: a plain `pytest tests` pays nothing
    _results.clear()


def kg_session(config: pytest.Config) -> Session:
    session = config.stash.get(_SESSION_KEY, None)
    if session is None:
        session = Session(config)
        config.stash[_SESSION_KEY] = session
    return session


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(_SESSION_KEY, None)
    if session is not None:
        session.close()


def _tier_of(path: Path) -> str | None:
    from kernelgen.tasks import TIERS

    return path.parent.name if path.parent.name in TIERS else None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "kg_case" not in metafunc.fixturenames:
        return
    from kernelgen.tasks import load_tasks

    tier = _tier_of(Path(str(metafunc.definition.fspath)))
    if tier is None:
        raise pytest.UsageError(f"{metafunc.definition.fspath}: kernelgen cases live in bench/<tier>/")
    samples = _value(metafunc.config, "kg_samples", 1, int)
    params = []
    for task in load_tasks(tier):
        for sample in range(samples):
            case_id = task.id if samples == 1 else f"{task.id}-s{sample}"
            params.append(pytest.param((task.id, sample), id=case_id,
                                       marks=[getattr(pytest.mark, tier), pytest.mark.pipeline]))
    metafunc.parametrize("kg_case", params)


def run_pipeline_case(kg_case: tuple[str, int], request: pytest.FixtureRequest) -> None:
    """One task's sample through the constrained pipeline (re-exported by bench/<tier>/)."""
    from kernelgen.tasks import get_task

    session = kg_session(request.config)
    task_id, sample = kg_case
    result = session.run(get_task(task_id), sample)
    request.node.user_properties.append((RESULT_KEY, result.model_dump_json(exclude={"artifacts"})))
    if result.timing is not None:
        _record_benchmark(request, result)
    if not result.ok:
        first = result.first_diagnostic()
        pytest.fail(f"{result.outcome.value} at {result.stage}: {first}", pytrace=False)


def _record_benchmark(request: pytest.FixtureRequest, result) -> None:
    """Hand the GPU times to pytest-benchmark (see :mod:`kernelgen.gpu_case` for how)."""
    from kernelgen.gpu_case import report_to_benchmark

    report_to_benchmark(request.getfixturevalue("benchmark"), result)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = None
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            reason = reason or gpu_unavailable_reason()
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


# -- the summary ---------------------------------------------------------------------------

# Results reach the controller through the reports (xdist forwards user_properties).
_results: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "call":
        return
    for key, value in report.user_properties:
        if key == RESULT_KEY:
            _results.append(value)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator (Chen et al., 2021): 1 - C(n-c, k) / C(n, k)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.prod((n - c - i) / (n - i) for i in range(k))


def summarize(results: list) -> list[str]:
    """The lines of the terminal summary for a list of CaseResults."""
    from kernelgen.results import CaseResult

    cases = [r if isinstance(r, CaseResult) else CaseResult.model_validate_json(r) for r in results]
    if not cases:
        return []
    lines = []
    providers = sorted({f"{c.provider}/{c.model}" for c in cases})
    modes = sorted({f"{c.mode} ({c.target})" for c in cases})
    lines.append(f"kernels from: {', '.join(providers)}; mode: {', '.join(modes)}")
    outcomes = [o.value for o in Outcome]
    by_tier: dict[str, list] = defaultdict(list)
    for c in cases:
        by_tier[c.tier].append(c)
    seen = [o for o in outcomes if any(c.outcome.value == o for c in cases)]
    header = f"{'tier':<12}{'cases':>6}{'pass':>7} " + "".join(f"{o:>16}" for o in seen)
    lines.append(header)
    for tier in sorted(by_tier, key=lambda t: ("easy", "med", "hard").index(t) if t in ("easy", "med", "hard") else 9):
        group = by_tier[tier]
        counts = Counter(c.outcome.value for c in group)
        rate = counts["ok"] / len(group)
        lines.append(f"{tier:<12}{len(group):>6}{rate:>7.0%} " + "".join(f"{counts[o]:>16}" for o in seen))
    per_task: dict[str, list] = defaultdict(list)
    for c in cases:
        per_task[c.task].append(c)
    k_values = sorted({1, max(len(v) for v in per_task.values())})
    for k in k_values:
        scores = [pass_at_k(len(v), sum(c.ok for c in v), k) for v in per_task.values() if len(v) >= k]
        lines.append(f"pass@{k}: {sum(scores) / len(scores):.1%} over {len(scores)} tasks")
    timed = [c for c in cases if c.ok and c.timing is not None]
    if timed:
        fast_1 = sum(c.timing.speedup > 1.0 for c in timed) / len(cases)
        geo = math.exp(sum(math.log(c.timing.speedup) for c in timed) / len(timed))
        lines.append(f"fast_1: {fast_1:.1%} of {len(cases)} cases; geometric-mean speedup over PyTorch eager: "
                     f"{geo:.2f}x over the {len(timed)} correct cases")
        flagged = [c.task for c in timed if c.timing.flagged]
        if flagged:
            lines.append(f"speedups above 10x, flagged for review: {', '.join(flagged)}")
    elif all(c.mode == "cpu" for c in cases):
        lines.append("launch and timing skipped: no GPU (kernels were checked, compiled and interpreted)")
    return lines


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    lines = summarize(_results)
    if lines:
        terminalreporter.write_sep("=", "kernelgen summary")
        for line in lines:
            terminalreporter.write_line(line)
