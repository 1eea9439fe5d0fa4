"""kernelgen's pytest plugin: loaded by the project's conftest.py and as a pytest11 entry point.

A thin layer over :mod:`kernelgen.pipeline`: it parametrises a test per (task, sample), asks
the provider for answers (cached for the session), hands each answer to
:func:`~kernelgen.pipeline.evaluate_answer`, reports the outcome, feeds GPU timings to
pytest-benchmark, and prints a summary per tier and outcome. In other projects it stays inert:
it adds options and the ``gpu`` skip, nothing else.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from kernelgen.errors import Outcome
from kernelgen.metrics import by_tier, fast_p, geomean_speedup, max_samples, mean_pass_at_k

RESULT_KEY = "kernelgen_result"

# Reports and scale (results store, W&B, Allure, --shard): kernelgen.report.plugin; the
# TritonBench-T track: kernelgen.tritonbench.pytest_plugin.
pytest_plugins = ["kernelgen.report.plugin", "kernelgen.tritonbench.pytest_plugin"]


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from kernelgen import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


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
    option("--optimize-rounds", "kg_optimize_rounds", "rounds in which a correct kernel's times and compiler facts "
           "go back to the model for a faster one (GPU mode)", 0)
    option("--temperature", "kg_temperature", "sampling temperature (use > 0 with --samples > 1)", 0.0)
    option("--max-tokens", "kg_max_tokens", "the most tokens an answer may have", 4096)
    option("--kg-cache", "kg_cache", "the generation cache (shared by xdist workers; replay with --llm replay:DIR)",
           ".kernelgen-cache/generations")
    option("--target", "kg_target", "compile target (sm_80, sm_86, sm_89, sm_90); default: the GPU present, else sm_90")
    option("--kg-shapes", "kg_shapes", "hypothesis-drawn size assignments checked per case", 5)
    option("--kg-seed", "kg_seed", "seed of the shape and input draws", 0)
    option("--kg-mode", "kg_mode", "auto (GPU when present), cpu (interpreter, no launch) or gpu", "auto")
    option("--kg-timeout", "kg_timeout", "seconds one kernel launch may take before it counts as a timeout", 60)
    option("--kg-tune", "kg_tune", "autotune each correct kernel's meta values, num_warps and num_stages: off, "
           "quick or full (GPU mode; a no-op without a GPU)", "quick")
    option("--kg-compiled", "kg_compiled", "also time torch.compile of each task's eager code, a second baseline: "
           "on or off (GPU mode)", "on")


def _value(config: pytest.Config, name: str, default: Any, kind: type = str) -> Any:
    value = getattr(config.option, name, None)
    if value is None:
        value = config.getini(name) or None
    return default if value is None else kind(value)


def tuning_options(config: pytest.Config) -> tuple[str, bool]:
    """``--kg-tune`` and ``--kg-compiled`` validated: the tuning mode and whether torch.compile
    is timed (defaults: quick and on; both do nothing without a GPU)."""
    from kernelgen.tune import MODES

    tune = _value(config, "kg_tune", "quick")
    if tune not in MODES:
        raise pytest.UsageError(f"--kg-tune takes {', '.join(MODES)}, not {tune!r}")
    compiled = _value(config, "kg_compiled", "on")
    if compiled not in ("on", "off"):
        raise pytest.UsageError(f"--kg-compiled takes on or off, not {compiled!r}")
    return tune, compiled == "on"


class Session:
    """What one pytest session shares between cases: settings, the provider, generations."""

    def __init__(self, config: pytest.Config) -> None:
        from kernelgen.devices import share_cpu_threads
        from kernelgen.pipeline import Settings
        from kernelgen.providers import ProviderOptions, Sampling, make_provider

        share_cpu_threads()  # before the executor and compile workers start
        self.config = config
        self.llm = _value(config, "kg_llm", "reference")
        self.samples = _value(config, "kg_samples", 1, int)
        self.repair_rounds = _value(config, "kg_repair_rounds", 0, int)
        self.optimize_rounds = _value(config, "kg_optimize_rounds", 0, int)
        self.sampling = Sampling(temperature=_value(config, "kg_temperature", 0.0, float),
                                 max_tokens=_value(config, "kg_max_tokens", 4096, int),
                                 seed=_value(config, "kg_seed", 0, int))
        self.provider = make_provider(self.llm, ProviderOptions(base_url=_value(config, "kg_base_url", None),
                                                                model=_value(config, "kg_model", None)))
        cache_dir = Path(_value(config, "kg_cache", str(config.rootpath / ".kernelgen-cache" / "generations")))
        from kernelgen.generation import GenerationCache

        self.cache = GenerationCache(cache_dir)
        mode = _value(config, "kg_mode", "auto")
        if mode not in ("auto", "cpu", "gpu"):
            raise pytest.UsageError(f"--kg-mode takes auto, cpu or gpu, not {mode!r}")
        reason = gpu_unavailable_reason()
        if mode == "gpu" and reason:
            raise pytest.UsageError(f"--kg-mode gpu: {reason}")
        self.gpu = mode == "gpu" or (mode == "auto" and reason is None)
        target = _value(config, "kg_target", None) or self._default_target()
        tune, torch_compile = tuning_options(config)
        self.settings = Settings(target=target, shapes=_value(config, "kg_shapes", 5, int),
                                 seed=_value(config, "kg_seed", 0, int), gpu=self.gpu,
                                 timeout_s=_value(config, "kg_timeout", 60.0, float),
                                 tune=tune if self.gpu else "off", torch_compile=torch_compile and self.gpu)
        self._executor = None

    def _default_target(self) -> str:
        if gpu_unavailable_reason() is None:
            from kernelgen.devices import worker_gpu

            gpu = worker_gpu()  # from nvidia-smi: torch would initialize CUDA in this process
            if gpu is not None:
                return gpu.target
            import torch

            major, minor = torch.cuda.get_device_capability()
            return f"sm_{major}{minor}"
        return "sm_90"

    @property
    def executor(self):
        if self._executor is None and self.gpu:
            from kernelgen.devices import executor_env, worker_gpu
            from kernelgen.executor import Executor

            self._executor = Executor(env=executor_env(worker_gpu()))  # this xdist worker's GPU
        return self._executor

    def close(self) -> None:
        if self._executor is not None:
            self._executor.close()

    def answer(self, task, sample: int):
        """One sample's answer (after its repair rounds), from the provider or the cache."""
        from functools import partial

        from kernelgen.generation import task_request
        from kernelgen.pipeline import static_diagnostics
        from kernelgen.repair import generate_with_repair

        request = task_request(task, self.sampling, sample)
        if self.repair_rounds:
            evaluate = partial(static_diagnostics, task, settings=self.settings)
        else:
            evaluate = lambda text: None  # noqa: E731 - nothing to repair: judged once, by the pipeline
        return request, generate_with_repair(self.provider, request, evaluate, self.repair_rounds, self.cache)

    def run_baseline(self, task, sample: int):
        """One sample of the raw-LLM baseline: the model answers with Triton Python (free text,
        no schema); the repair rounds send back the static rules' findings."""
        from kernelgen.ablation import evaluate_baseline, reference_answer, rule_diagnostics
        from kernelgen.baseline import baseline_messages
        from kernelgen.providers import GenerationRequest
        from kernelgen.repair import generate_with_repair

        request = GenerationRequest(messages=baseline_messages(task), sampling=self.sampling, sample_index=sample,
                                    json_schema=None, reference=reference_answer(task))
        evaluate = (lambda text: rule_diagnostics(task, text)) if self.repair_rounds else (lambda text: None)
        generated = generate_with_repair(self.provider, request, evaluate, self.repair_rounds, self.cache)
        self.settings.executor = self.executor
        record = generated.final.record
        return evaluate_baseline(task, generated.text, self.settings, provider=record.provider,
                                 model=record.model or "", sample=sample,
                                 generation=self._generation_info(generated), prompt=request.prompt_text())

    @staticmethod
    def _generation_info(generated):
        from kernelgen.results import GenerationInfo

        return GenerationInfo(latency_s=generated.latency_s, tokens_in=generated.tokens_in,
                              tokens_out=generated.tokens_out, retries=generated.retries,
                              repair_rounds=generated.repair_rounds, cached=generated.final.record.cached)

    def run(self, task, sample: int):
        import json

        from kernelgen.pipeline import evaluate_answer

        request, generated = self.answer(task, sample)
        info = self._generation_info(generated)
        self.settings.executor = self.executor
        record = generated.final.record
        result = evaluate_answer(task, generated.text, self._untuned if self.optimize_rounds else self.settings,
                                 provider=record.provider, model=record.model or "", sample=sample,
                                 generation=info, prompt=request.prompt_text())
        if generated.repair_rounds:
            result.artifacts["repair_rounds"] = json.dumps(generated.to_dict()["rounds"], indent=2)
        if self.optimize_rounds and result.ok:
            result = self.optimize(task, request, result)
            if self.settings.tune != "off" and result.ok:
                result = self.tune_final(task, result)
        return result

    @property
    def _untuned(self):
        """The settings of the optimization rounds: tuning applies to the final kernel only."""
        import dataclasses

        return dataclasses.replace(self.settings, tune="off")

    def tune_final(self, task, result):
        """The optimization rounds' final kernel tuned: its answer judged again with tuning, and
        the tuned timing and choice put into the result (its rounds stay as they were)."""
        from kernelgen.pipeline import evaluate_answer

        tuned = evaluate_answer(task, result.artifacts["answer"], self.settings, provider=result.provider,
                                model=result.model, sample=result.sample, generation=result.generation)
        if not tuned.ok:
            return result
        artifacts = {**result.artifacts, "tuning": tuned.artifacts.get("tuning", "")}
        return result.model_copy(update={"timing": tuned.timing, "tuning": tuned.tuning, "artifacts": artifacts,
                                         "extra": {**result.extra, **tuned.extra}})

    def optimize(self, task, request, first):
        """The optimization rounds after a correct answer (none without a GPU: facts only)."""
        from functools import partial

        from kernelgen.optimize import answer_facts, optimize
        from kernelgen.pipeline import evaluate_answer

        evaluate = partial(evaluate_answer, task, settings=self._untuned, provider=first.provider,
                           model=first.model, sample=first.sample, generation=first.generation)
        return optimize(self.provider, request, first, self.optimize_rounds, evaluate,
                        partial(answer_facts, task, settings=self.settings), self.cache)


_SESSION_KEY = pytest.StashKey[Session]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_SESSION_KEY] = None  # made on first use: a plain `pytest tests` pays nothing
    _results.clear()
    _unjudged.clear()


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


def _case_params(config: pytest.Config, tier: str | None, track_mark: Any, extra_marks: tuple = ()) -> list:
    from kernelgen.tasks import load_tasks

    samples = _value(config, "kg_samples", 1, int)
    params = []
    for task in load_tasks(tier):
        for sample in range(samples):
            case_id = task.id if samples == 1 else f"{task.id}-s{sample}"
            params.append(pytest.param((task.id, sample), id=case_id,
                                       marks=[getattr(pytest.mark, task.tier), track_mark, *extra_marks]))
    return params


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "kg_case" in metafunc.fixturenames:
        tier = _tier_of(Path(str(metafunc.definition.fspath)))
        if tier is None:
            raise pytest.UsageError(f"{metafunc.definition.fspath}: kernelgen cases live in bench/<tier>/")
        metafunc.parametrize("kg_case", _case_params(metafunc.config, tier, pytest.mark.pipeline))
    if "kg_baseline_case" in metafunc.fixturenames:
        metafunc.parametrize("kg_baseline_case", _case_params(metafunc.config, None, pytest.mark.baseline,
                                                              (pytest.mark.ablation,)))


def report_case(request: pytest.FixtureRequest, result) -> None:
    """Hand a case's result to the reports, the summary and pytest-benchmark; fail the test
    with the outcome, the stage and the first diagnostic when it is not ok."""
    request.config.hook.pytest_kernelgen_case_result(config=request.config, item=request.node, result=result)
    request.node.user_properties.append((RESULT_KEY, result.model_dump_json(exclude={"artifacts"})))
    if result.timing is not None:
        _record_benchmark(request, result)
    if not result.ok:
        first = result.first_diagnostic()
        pytest.fail(f"{result.outcome.value} at {result.stage}: {first}", pytrace=False)


def run_pipeline_case(kg_case: tuple[str, int], request: pytest.FixtureRequest) -> None:
    """One task's sample through the constrained pipeline (re-exported by bench/<tier>/)."""
    from kernelgen.tasks import get_task

    task_id, sample = kg_case
    report_case(request, kg_session(request.config).run(get_task(task_id), sample))


def run_baseline_case(kg_baseline_case: tuple[str, int], request: pytest.FixtureRequest) -> None:
    """One task's sample through the raw-LLM baseline (re-exported by bench/ablation/)."""
    from kernelgen.tasks import get_task

    from kernelgen.ablation import interpreter_limitation

    task_id, sample = kg_baseline_case
    session = kg_session(request.config)
    task = get_task(task_id)
    limitation = None if session.gpu else interpreter_limitation(task)
    if limitation:
        pytest.skip(limitation)
    report_case(request, session.run_baseline(task, sample))


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
# The kernelgen cases that failed with no result (an error before or outside the judging: the
# provider, a fixture), by node id: the summary says how many its scores leave out.
_unjudged: set[str] = set()
CASE_KEY = "kernelgen_case"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if {"kg_case", "kg_baseline_case"} & set(getattr(item, "fixturenames", ())):
        item.user_properties.append((CASE_KEY, "1"))  # so that its reports say what it is


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    keys = {key for key, _ in report.user_properties}
    if report.when == "call":
        _results.extend(value for key, value in report.user_properties if key == RESULT_KEY)
    if report.failed and CASE_KEY in keys and RESULT_KEY not in keys:
        _unjudged.add(report.nodeid)


def summarize(results: list) -> list[str]:
    """The lines of the terminal summary for a list of CaseResults: per track (the constrained
    pipeline, the raw-LLM baseline) and tier, the outcome counts and scores, and the paired
    comparison of the two tracks where both ran. (TritonBench-T prints its own summary.)"""
    from kernelgen.optimize import optimization_summary
    from kernelgen.results import CaseResult

    cases = [r if isinstance(r, CaseResult) else CaseResult.model_validate_json(r) for r in results]
    cases = [c for c in cases if c.track in ("pipeline", "baseline")]
    if not cases:
        return []
    lines = []
    providers = sorted({f"{c.provider}/{c.model}" for c in cases})
    modes = sorted({f"{c.mode} ({c.target})" for c in cases})
    lines.append(f"kernels from: {', '.join(providers)}; mode: {', '.join(modes)}")
    outcomes = [o.value for o in Outcome]
    seen = [o for o in outcomes if any(c.outcome.value == o for c in cases)]
    lines.append(f"{'track':<9}{'tier':<7}{'cases':>6}{'pass':>7} " + "".join(f"{o:>16}" for o in seen))
    tracks = [t for t in ("pipeline", "baseline") if any(c.track == t for c in cases)]
    for track in tracks:
        for tier, group in by_tier(c for c in cases if c.track == track).items():
            counts = Counter(c.outcome.value for c in group)
            lines.append(f"{track:<9}{tier:<7}{len(group):>6}{counts['ok'] / len(group):>7.0%} "
                         + "".join(f"{counts[o]:>16}" for o in seen))
    for track in tracks:
        lines.extend(_track_scores(track, [c for c in cases if c.track == track]))
        lines.extend(optimization_summary(track, [c for c in cases if c.track == track]))
    if len(tracks) == 2:
        lines.append(_paired(cases))
    if all(c.mode == "cpu" for c in cases):
        lines.append("launch and timing skipped: no GPU (kernels were checked, compiled and interpreted)")
    return lines


def _track_scores(track: str, cases: list) -> list[str]:
    lines = []
    for k in sorted({1, max_samples(cases)}):
        value = mean_pass_at_k(cases, k)
        if value is not None:
            lines.append(f"{track}: pass@{k}: {value[0]:.1%} over {value[1]} tasks")
    timed = geomean_speedup(cases)
    if timed is not None:
        lines.append(f"{track}: fast_1: {fast_p(cases, 1.0):.1%} of {len(cases)} cases; geometric-mean speedup "
                     f"over PyTorch eager: {timed[0]:.2f}x over the {timed[1]} correct cases")
        flagged = [c.task for c in cases if c.ok and c.timing is not None and c.timing.flagged]
        if flagged:
            lines.append(f"{track}: speedups above 10x, flagged for review: {', '.join(flagged)}")
        lines.extend(tier_speedup_lines(track, cases))
    return lines


def tier_speedup_lines(track: str, cases: list) -> list[str]:
    """Per tier: the geometric-mean speedup over eager as written and as tuned, over
    torch.compile, and the time the tuning took; then the tasks torch.compile failed on."""
    from kernelgen.metrics import score

    lines = []
    for tier, group in by_tier(cases).items():
        scores = score(group)
        if scores.geomean is None:
            continue
        parts = [f"geomean vs eager as written {scores.geomean_as_written[0]:.2f}x, "
                 f"tuned {scores.geomean[0]:.2f}x over {scores.geomean[1]} cases"]
        if scores.geomean_compiled is not None:
            parts.append(f"vs torch.compile {scores.geomean_compiled[0]:.2f}x over {scores.geomean_compiled[1]}")
        if scores.tuning_s is not None:
            total, kernels = scores.tuning_s
            parts.append(f"tuning {total:.0f} s for {kernels} kernels ({total / kernels:.1f} s each)")
        lines.append(f"{track} {tier}: " + "; ".join(parts))
    failed = sorted({c.task for c in cases if "error" in c.extra.get("torch_compile", {})})
    if failed:
        lines.append(f"{track}: torch.compile failed on {', '.join(failed)} (see each result's extra.torch_compile)")
    return lines


def paired_outcomes(cases: list) -> Counter:
    """Pipeline vs baseline per (task, sample) that ran in both tracks: both ok, only one, neither."""
    ok: dict[tuple[str, str, int], dict[str, bool]] = defaultdict(dict)
    for c in cases:
        ok[(c.tier, c.task, c.sample)][c.track] = c.ok
    pairs = Counter()
    for tracks in ok.values():
        if len(tracks) == 2:
            pipeline, baseline = tracks["pipeline"], tracks["baseline"]
            pairs["both ok" if pipeline and baseline else "only pipeline" if pipeline
                  else "only baseline" if baseline else "neither"] += 1
    return pairs


def _paired(cases: list) -> str:
    pairs = paired_outcomes(cases)
    order = ("both ok", "only pipeline", "only baseline", "neither")
    return f"pipeline vs baseline over {sum(pairs.values())} paired cases: " + ", ".join(
        f"{name} {pairs[name]}" for name in order)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Said once at the start (also under -q): optimization rounds asked for where nothing can
    be timed."""
    config = session.config
    tuning_options(config)  # a bad value stops the run before any case
    rounds = _value(config, "kg_optimize_rounds", 0, int)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or hasattr(config, "workerinput"):
        return
    cpu = _value(config, "kg_mode", "auto") == "cpu" or gpu_unavailable_reason() is not None
    if rounds and cpu:
        from kernelgen.optimize import CPU_SKIP

        reporter.write_line(f"kernelgen: --optimize-rounds {rounds}: {CPU_SKIP}")
    given = getattr(config.option, "kg_tune", None) or config.inicfg.get("kg_tune")  # given, not the default
    if cpu and given not in (None, "off"):
        reporter.write_line(f"kernelgen: --kg-tune {given}: a no-op in CPU mode (tuning times kernels on a GPU)")


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    lines = summarize(_results)
    if _unjudged:
        lines.append(f"{len(_unjudged)} kernelgen cases failed before they were judged (no result; see the "
                     "errors above): the scores above leave them out")
    if lines:
        terminalreporter.write_sep("=", "kernelgen summary")
        for line in lines:
            terminalreporter.write_line(line)
