"""kernelgen's pytest plugin: loaded by the project's conftest.py and as a pytest11 entry point.

A thin layer over :mod:`kernelgen.harness.pipeline`: it parametrises a test per (task, sample), asks
the provider for answers (cached for the session), hands each answer to
:func:`~kernelgen.harness.pipeline.evaluate_answer`, reports the outcome, feeds GPU timings to
pytest-benchmark, and prints a summary per tier and outcome. In other projects it stays inert:
it adds options (checked at start, :mod:`kernelgen.harness.options`) and the ``gpu`` skip, nothing else.

The front end fails early and once: a wrong option is a usage error at configure time, a
provider that cannot be made one when the cases are collected, and a model server that cannot
be reached stops the run after the case that found out (:mod:`kernelgen.model.breaker`).
"""

from __future__ import annotations

import os
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from kernelgen.errors import KernelgenError, Outcome
from kernelgen.task.metrics import by_tier, fast_p, geomean_speedup, max_samples, mean_pass_at_k
from kernelgen.harness.options import OptionError, RunOptions

RESULT_KEY = "kernelgen_result"
NOT_JUDGED_REASON = "not judged on the CPU (the interpreter's budget ran out)"
STOPPED_KEY = "kernelgen_stopped"
CASE_FIXTURES = ("kg_case", "kg_baseline_case", "tritonbench_operator")

# Reports and scale (results store, W&B, Allure, --shard): kernelgen.report.plugin; the
# TritonBench-T track: kernelgen.tritonbench.pytest_plugin.
pytest_plugins = ["kernelgen.report.plugin", "kernelgen.tritonbench.pytest_plugin"]


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from kernelgen.harness import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    from kernelgen.harness.options import OPTIONS

    group = parser.getgroup("kernelgen", "kernelgen benchmark")
    for option in OPTIONS:
        default = "" if option.default is None else f"; default: {option.default}"
        given = {"action": "store_const", "const": "on"} if option.switch else {}
        group.addoption(option.flag, dest=option.ini, default=None, help=f"{option.help} (ini: {option.ini}{default})",
                        **given)
        parser.addini(option.ini, option.help, default=None)


class Session:
    """What one pytest session shares between cases: settings, the provider, generations, and
    the circuit breaker that stops the run when the model server cannot be reached."""

    def __init__(self, options: RunOptions) -> None:
        from kernelgen.model.breaker import CircuitBreaker
        from kernelgen.gpu.devices import gpu_unavailable_reason, share_cpu_threads
        from kernelgen.env import generation_cache_dir
        from kernelgen.model.generation import GenerationCache
        from kernelgen.harness.pipeline import Settings
        from kernelgen.model.providers import ProviderOptions, Sampling, make_provider

        share_cpu_threads()  # before the executor and compile workers start
        self.options = options
        self.llm = options.llm
        self.samples = options.samples
        self.repair_rounds = options.repair_rounds
        self.optimize_rounds = options.optimize_rounds
        self.sampling = Sampling(temperature=options.temperature, max_tokens=options.max_tokens, seed=options.seed)
        self.provider = make_provider(self.llm, ProviderOptions(base_url=options.base_url, model=options.model))
        self.cache = GenerationCache(options.cache or generation_cache_dir())
        self.gpu = options.mode == "gpu" or (options.mode == "auto" and gpu_unavailable_reason() is None)
        self.settings = Settings(target=options.target or self._default_target(), shapes=options.shapes,
                                 seed=options.seed, gpu=self.gpu, timeout_s=options.timeout_s,
                                 tune=options.tune if self.gpu else "off",
                                 torch_compile=options.compiled and self.gpu, unsafe_sandbox=options.unsafe_sandbox)
        self.breaker = CircuitBreaker()
        self._executor = None
        if self.gpu:
            from kernelgen.gpu.devices import executor_env, worker_gpu

            # The worker's GPU and its lock, in this process's environment too: the baseline's
            # sandboxes inherit them from here (this process never creates a CUDA context).
            os.environ.update(executor_env(worker_gpu()))

    def _default_target(self) -> str:
        from kernelgen.gpu.devices import gpu_unavailable_reason

        if gpu_unavailable_reason() is None:
            from kernelgen.gpu.devices import worker_gpu

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
            from kernelgen.gpu.devices import executor_env, worker_gpu
            from kernelgen.gpu.executor import Executor

            self._executor = Executor(env=executor_env(worker_gpu()))  # this xdist worker's GPU
        return self._executor

    def close(self) -> None:
        if self._executor is not None:
            self._executor.close()

    def answer(self, task, sample: int):
        """One sample's answer (after its repair rounds), from the provider or the cache."""
        from functools import partial

        from kernelgen.model.generation import task_request
        from kernelgen.harness.pipeline import static_diagnostics
        from kernelgen.model.repair import generate_with_repair

        request = task_request(task, self.sampling, sample)
        if self.repair_rounds:
            evaluate = partial(static_diagnostics, task, settings=self.settings)
        else:
            evaluate = lambda text: None  # noqa: E731 - nothing to repair: judged once, by the pipeline
        return request, generate_with_repair(self.provider, request, evaluate, self.repair_rounds, self.cache)

    def run_baseline(self, task, sample: int):
        """One sample of the raw-LLM baseline: the model answers with Triton Python (free text,
        no schema); the repair rounds send back the static rules' findings."""
        from kernelgen.baseline.ablation import evaluate_baseline, reference_answer, rule_diagnostics
        from kernelgen.baseline.prompt import baseline_messages
        from kernelgen.model.providers import GenerationRequest
        from kernelgen.model.repair import generate_with_repair

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
        from kernelgen.task.results import GenerationInfo

        return GenerationInfo(latency_s=generated.latency_s, tokens_in=generated.tokens_in,
                              tokens_out=generated.tokens_out, retries=generated.retries,
                              repair_rounds=generated.repair_rounds, cached=generated.final.record.cached)

    def run(self, task, sample: int):
        import json

        from kernelgen.harness.pipeline import evaluate_answer

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
        from kernelgen.harness.pipeline import evaluate_answer

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

        from kernelgen.model.optimize import answer_facts, optimize
        from kernelgen.harness.pipeline import evaluate_answer

        evaluate = partial(evaluate_answer, task, settings=self._untuned, provider=first.provider,
                           model=first.model, sample=first.sample, generation=first.generation)
        return optimize(self.provider, request, first, self.optimize_rounds, evaluate,
                        partial(answer_facts, task, settings=self.settings), self.cache)


_SESSION_KEY = pytest.StashKey[Session]()
_OPTIONS_KEY = pytest.StashKey[RunOptions]()


def usage_error(error: KernelgenError) -> pytest.UsageError:
    """pytest's usage error (one ``ERROR:`` line, exit status 4) for a setting no case can run with."""
    return pytest.UsageError(error.message)


def pytest_configure(config: pytest.Config) -> None:
    from kernelgen.gpu.devices import share_cpu_threads

    # Every xdist worker, a plain `pytest tests -n 2` too: two workers of torch's two threads each on two cores ran
    # the red-team catalogue's CPU cases about four times slower than one process did.
    share_cpu_threads()
    options = run_options(config)  # every option, checked once: one line here, not a traceback per case
    if config.getoption("dist", "no") != "no" and not hasattr(config, "workerinput"):
        _check_provider(options)
    config.stash[_SESSION_KEY] = None  # made once cases are collected: a plain `pytest tests` pays nothing
    _results.clear()
    _unjudged.clear()
    _stopped.clear()


def _check_provider(options: RunOptions) -> None:
    """On an xdist controller, which collects no cases, make the provider once: one that cannot
    be made (no model named, no key) would otherwise fail every worker's collection. Not for
    ``reference`` (nothing to check) nor ``hf`` (it would load the checkpoint here too)."""
    from kernelgen.model.providers import ProviderOptions, make_provider

    if options.llm.partition(":")[0] not in ("reference", "hf"):
        try:
            make_provider(options.llm, ProviderOptions(base_url=options.base_url, model=options.model))
        except KernelgenError as error:
            raise usage_error(error) from None


def run_options(config: pytest.Config) -> RunOptions:
    """The run's checked options (read on the first call, by whichever plugin configures first)."""
    from kernelgen.harness.options import read_options

    if _OPTIONS_KEY not in config.stash:
        try:
            config.stash[_OPTIONS_KEY] = read_options(lambda dest: getattr(config.option, dest, None), config.getini)
        except OptionError as error:
            raise usage_error(error) from None
    return config.stash[_OPTIONS_KEY]


def kg_session(config: pytest.Config) -> Session:
    session = config.stash.get(_SESSION_KEY, None)
    if session is None:
        session = Session(run_options(config))
        config.stash[_SESSION_KEY] = session
    return session


def pytest_collection_finish(session: pytest.Session) -> None:
    """Make the provider, cache and settings before the first case where cases will run, so
    that a provider that cannot be made (no model named, no key) is one usage error."""
    if any(name in getattr(item, "fixturenames", ()) for item in session.items for name in CASE_FIXTURES):
        try:
            kg_session(session.config)
        except KernelgenError as error:
            raise usage_error(error) from None
    if _baseline_cases(session.items):
        _check_baseline_sandbox(run_options(session.config))


def _baseline_cases(items: list[pytest.Item]) -> bool:
    return any("kg_baseline_case" in getattr(item, "fixturenames", ()) for item in items)


def _check_baseline_sandbox(options: RunOptions) -> None:
    """The baseline runs model code: without its operating-system sandbox (bubblewrap), the run
    stops here with one line, unless it said --unsafe-sandbox."""
    from kernelgen.baseline.wall import SandboxUnavailable, require_wall

    try:
        require_wall(options.unsafe_sandbox)
    except SandboxUnavailable as error:
        raise usage_error(error) from None


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(_SESSION_KEY, None)
    if session is not None:
        session.close()


def _tier_of(path: Path) -> str | None:
    from kernelgen.task.spec import TIERS

    return path.parent.name if path.parent.name in TIERS else None


def _case_params(config: pytest.Config, tier: str | None, track_mark: Any, extra_marks: tuple = ()) -> list:
    from kernelgen.task.spec import load_tasks

    samples = run_options(config).samples
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
    result = result.scrubbed()  # no secret reaches a report, a file or the terminal
    request.config.hook.pytest_kernelgen_case_result(config=request.config, item=request.node, result=result)
    request.node.user_properties.append((RESULT_KEY, result.model_dump_json(exclude={"artifacts"})))
    if result.timing is not None and request.config.pluginmanager.has_plugin("benchmark"):
        _record_benchmark(request, result)  # not under -p no:benchmark (a timed case failed there)
    if result.outcome == Outcome.NOT_JUDGED:
        # The interpreter's budget ran out: no verdict on the kernel either way (a GPU judges it).
        pytest.skip(f"{result.outcome.value} at {result.stage}: {NOT_JUDGED_REASON}: {result.first_diagnostic()}")
    if not result.ok:
        first = result.first_diagnostic()
        pytest.fail(f"{result.outcome.value} at {result.stage}: {first}", pytrace=False)


def asking_the_model(request: pytest.FixtureRequest, case: Callable[[Session], Any]) -> Any:
    """``case(session)``'s result, unless the model server was found unreachable: then the case
    skips with one line. A provider's error fails the case with one line, no traceback; one that
    says the server is unreachable (raised, or recorded as the result's failure, as the
    TritonBench-T track does) trips the breaker and stops the run after this case."""
    from kernelgen.model.breaker import is_unreachable
    from kernelgen.model.providers import ProviderError

    session = kg_session(request.config)
    if session.breaker.tripped:
        pytest.skip(session.breaker.skip_message())
    try:
        result = case(session)
    except ProviderError as caught:
        error = caught  # failed below, outside the handler: no "during handling" chain in the report
    else:
        first = result.first_diagnostic()
        if first is not None and is_unreachable(result.stage, first.code):
            _stop(request, session, first.message)
        return result
    unreachable = is_unreachable(error.stage, error.code)
    if unreachable:
        _stop(request, session, error.message)
    pytest.fail(f"{error.stage}: {error.message}" + ("; the run stops here" if unreachable else ""), pytrace=False)


def _stop(request: pytest.FixtureRequest, session: Session, reason: str) -> None:
    """Trip the breaker: pytest stops after this case, and the summary says why."""
    session.breaker.trip(request.node.name, reason)
    request.node.user_properties.append((STOPPED_KEY, f"{session.breaker.stop_message()}: {reason}"))
    request.session.shouldfail = session.breaker.stop_message()


def run_pipeline_case(kg_case: tuple[str, int], request: pytest.FixtureRequest) -> None:
    """One task's sample through the constrained pipeline (re-exported by bench/<tier>/)."""
    from kernelgen.task.spec import get_task

    task_id, sample = kg_case
    report_case(request, asking_the_model(request, lambda session: session.run(get_task(task_id), sample)))


def run_baseline_case(kg_baseline_case: tuple[str, int], request: pytest.FixtureRequest) -> None:
    """One task's sample through the raw-LLM baseline (re-exported by bench/ablation/)."""
    from kernelgen.task.spec import get_task

    from kernelgen.baseline.ablation import interpreter_limitation

    task_id, sample = kg_baseline_case
    task = get_task(task_id)
    limitation = None if kg_session(request.config).gpu else interpreter_limitation(task)
    if limitation:
        pytest.skip(limitation)
    report_case(request, asking_the_model(request, lambda session: session.run_baseline(task, sample)))


def _record_benchmark(request: pytest.FixtureRequest, result) -> None:
    """Hand the GPU times to pytest-benchmark (see :mod:`kernelgen.gpu.case` for how)."""
    from kernelgen.gpu.case import report_to_benchmark

    report_to_benchmark(request.getfixturevalue("benchmark"), result)


@pytest.hookimpl(wrapper=True)  # after every other plugin's: -m, -k, --deselect and --shard have left what runs
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> Iterator[None]:
    result = yield
    from kernelgen.gpu.devices import gpu_unavailable_reason

    reason = None
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            reason = reason or gpu_unavailable_reason()
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
    _leave_out_the_baseline(config, items)
    if hasattr(config, "workerinput") and _baseline_cases(items):
        _stop_worker_without_sandbox(config, items)
    return result


def _stop_worker_without_sandbox(config: pytest.Config, items: list[pytest.Item]) -> None:
    """:func:`_check_baseline_sandbox` on an xdist worker, where a usage error raised at the end
    of collection reaches the controller as an INTERNALERROR that hides its line (the controller
    has been sent the worker's cases, and the worker ends with them unrun). Here, before they are
    sent, the worker leaves out every case and stops its session with the line as its reason,
    which the controller prints as the run's ("Interrupted: ERROR: ..."); nothing runs."""
    try:
        _check_baseline_sandbox(run_options(config))
    except pytest.UsageError as error:
        config.hook.pytest_deselected(items=list(items))
        items[0].session.shouldstop = f"ERROR: {error}"
        items[:] = []


_TRACK_NAMES = re.compile(r"\b(ablation|baseline)\b")


def _leave_out_the_baseline(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The raw-LLM baseline runs when asked for: a ``-m`` expression that names neither
    ``ablation`` nor ``baseline`` (``-m easy``, ``-m "hard or med"``) selects the benchmark's
    tiers through the pipeline only, although the baseline's cases carry their tier's mark too
    (so that ``-m "ablation and easy"`` works). Without ``-m``, or with the baseline's folder
    named on the command line (``pytest bench/ablation -m easy``), everything collected runs."""
    expression = config.getoption("markexpr", "") or ""
    if not expression or _TRACK_NAMES.search(expression):
        return
    if any("ablation" in Path(arg.split("::")[0]).parts for arg in config.args):
        return
    dropped = [item for item in items if item.get_closest_marker("baseline") is not None]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item.get_closest_marker("baseline") is None]


# -- the summary ---------------------------------------------------------------------------

# Results reach the controller through the reports (xdist forwards user_properties), and so
# does the circuit breaker's message of a case that found the model server unreachable.
_results: list[str] = []
# The kernelgen cases that failed with no result (an error before or outside the judging: the
# provider, a fixture), by node id: the summary says how many its scores leave out.
_unjudged: set[str] = set()
CASE_KEY = "kernelgen_case"
_stopped: list[str] = []


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if {"kg_case", "kg_baseline_case"} & set(getattr(item, "fixturenames", ())):
        item.user_properties.append((CASE_KEY, "1"))  # so that its reports say what it is


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    keys = {key for key, _ in report.user_properties}
    if report.when == "call":
        for key, value in report.user_properties:
            if key == RESULT_KEY:
                _results.append(value)
            elif key == STOPPED_KEY and not _stopped:
                _stopped.append(value)
    if report.failed and CASE_KEY in keys and RESULT_KEY not in keys:
        _unjudged.add(report.nodeid)


def summarize(results: list) -> list[str]:
    """The lines of the terminal summary for a list of CaseResults: per track (the constrained
    pipeline, the raw-LLM baseline) and tier, the outcome counts and scores, and the paired
    comparison of the two tracks where both ran. (TritonBench-T prints its own summary.)"""
    from kernelgen.model.optimize import optimization_summary
    from kernelgen.task.results import CaseResult

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
    lines.extend(_largest_checked(cases))
    skipped = [c for c in cases if c.ok and c.extra.get("unjudged_draws")]
    if skipped:
        left = [d for c in skipped for d in c.extra["unjudged_draws"]]
        lines.append(f"{len(skipped)} cases left out {len(left)} draws past the interpreter's budget (judged on the "
                     f"others, {sum('stand_in' in d for d in left)} of them at halved sizes; a GPU runs them): "
                     f"{', '.join(sorted({c.task for c in skipped})[:10])}")
    sampled = [c for c in cases if c.extra.get("sampled_draws")]
    if sampled:
        lines.append(f"{len(sampled)} cases were judged on a sample of programs in "
                     f"{sum(len(c.extra['sampled_draws']) for c in sampled)} draws past the interpreter's budget: "
                     f"{', '.join(sorted({c.task for c in sampled})[:10])}")
    unjudged = [c for c in cases if c.outcome == Outcome.NOT_JUDGED]
    if unjudged:
        lines.append(f"{len(unjudged)} cases {NOT_JUDGED_REASON}, counted apart (skipped, not failed; not "
                     f"passed in the scores): {', '.join(sorted({c.task for c in unjudged})[:10])}")
    for track in tracks:
        lines.extend(_track_scores(track, [c for c in cases if c.track == track]))
        lines.extend(optimization_summary(track, [c for c in cases if c.track == track]))
    if len(tracks) == 2:
        lines.append(_paired(cases))
    if all(c.mode == "cpu" for c in cases):
        lines.append("launch and timing skipped: no GPU (kernels were checked, compiled and interpreted)")
    return lines


def _largest_checked(cases: list) -> list[str]:
    """Per tier, the largest value each size name took in any case's checks (a name means
    different axes in different tasks; this says how far the checks reached, not per task)."""
    from kernelgen.task.results import largest_sizes

    lines = []
    for tier, group in by_tier(cases).items():
        largest = largest_sizes([c.largest_sizes for c in group])
        if largest:
            lines.append(f"{tier}: largest sizes checked: "
                         + ", ".join(f"{name} {value}" for name, value in sorted(largest.items())))
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
    from kernelgen.task.metrics import score

    lines = []
    for tier, group in by_tier(cases).items():
        scores = score(group)
        if scores.geomean is None:
            continue
        parts = []
        if scores.tuning_s is not None:  # as written and tuned differ only where something was tuned
            parts.append(f"geomean vs eager as written {scores.geomean_as_written[0]:.2f}x, "
                         f"tuned {scores.geomean[0]:.2f}x over {scores.geomean[1]} cases")
        if scores.geomean_compiled is not None:
            parts.append(f"vs torch.compile {scores.geomean_compiled[0]:.2f}x over {scores.geomean_compiled[1]} "
                         f"(fast_1 {scores.fast_compiled:.0%}); vs the faster of the two "
                         f"{scores.geomean_best[0]:.2f}x (fast_1 {scores.fast_best:.0%})")
        if scores.tuning_s is not None:
            total, kernels = scores.tuning_s
            parts.append(f"tuning {total:.0f} s for {kernels} kernels ({total / kernels:.1f} s each)")
        if parts:
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
    from kernelgen.gpu.devices import gpu_unavailable_reason

    config = session.config
    options = run_options(config)
    rounds = options.optimize_rounds
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or hasattr(config, "workerinput"):
        return
    if options.unsafe_sandbox:
        from kernelgen.baseline.wall import find_wall

        wall = find_wall()
        reporter.write_line("kernelgen: --unsafe-sandbox: " + (
            f"WARNING: the raw-LLM baseline runs model code WITHOUT its operating-system sandbox ({wall}): "
            "only the audit hook stands between it and this machine's files, keys and network"
            if isinstance(wall, str) else "bubblewrap runs here, so the baseline's sandbox is used all the same"),
            red=isinstance(wall, str), bold=isinstance(wall, str))
    cpu = options.mode == "cpu" or gpu_unavailable_reason() is not None
    if rounds and cpu:
        from kernelgen.model.optimize import CPU_SKIP

        reporter.write_line(f"kernelgen: --optimize-rounds {rounds}: {CPU_SKIP}")
    given = getattr(config.option, "kg_tune", None) or config.getini("kg_tune")  # given, not the default
    if cpu and given not in (None, "off"):
        reporter.write_line(f"kernelgen: --kg-tune {given}: a no-op in CPU mode (tuning times kernels on a GPU)")


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    lines = summarize(_results)
    if _unjudged:
        lines.append(f"{len(_unjudged)} kernelgen cases failed before they were judged (no result; see the "
                     "errors above): the scores above leave them out")
    if _stopped:
        lines.append(_stopped[0].replace("stopping after", "the run stopped after", 1))
    if lines:
        terminalreporter.write_sep("=", "kernelgen summary")
        for line in lines:
            terminalreporter.write_line(line)
