"""The pytest side of reports and scale, loaded by :mod:`kernelgen.harness.plugin`.

Options: ``--kg-results PATH`` (the results store), ``--wandb off|offline|online``, ``--shard
i/n``; Allure comes with allure-pytest's ``--alluredir``.

Where things happen, so that every file has one writer:

* In the process that runs a case (an xdist worker under ``-n``), through the
  ``pytest_kernelgen_case_result`` hook: the case records which worker and GPU ran it
  (``extra["gpu"]``); Allure gets its labels and attachments (allure-pytest writes its
  files there); and when the controller needs them, the case's artifacts ride on the test's
  report as the attribute ``kernelgen_artifacts``. (Reports carry their extra attributes
  across xdist; ``user_properties`` would do too, but end up in JUnit XML, PTX and all.)
* In the controller (the only process without xdist, the ``-n`` parent with it): the results
  store and W&B take each case as its report arrives; at the end, Allure's
  ``categories.json`` and ``environment.properties``.
* In every process that collects: the shard filter, after ``-k`` and ``-m`` have deselected.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kernelgen.errors import KernelgenError
from kernelgen.task.results import CaseResult

if TYPE_CHECKING:
    from kernelgen.harness.sharding import Shard

ARTIFACTS_ATTRIBUTE = "kernelgen_artifacts"
_ARTIFACTS = pytest.StashKey[dict]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kernelgen", "kernelgen benchmark")
    group.addoption("--kg-results", dest="kg_results", default=None, metavar="PATH",
                    help="write every case to this results file (JSON lines, artifacts beside it) "
                         "(ini: kg_results)")
    parser.addini("kg_results", "results file of the run (JSON lines)", default=None)
    group.addoption("--wandb", dest="kg_wandb", default=None, choices=("off", "offline", "online"),
                    help="W&B tracking (ini: kg_wandb; default: WANDB_MODE's (disabled, offline, online), else online "
                         "when WANDB_API_KEY is set, else off)")
    parser.addini("kg_wandb", "W&B tracking: off, offline or online", default=None)
    group.addoption("--shard", dest="kg_shard", default=None, metavar="I/N",
                    help="run only shard I of N (1-based); every case of a task lands in the same shard")


def _setting(config: pytest.Config, name: str) -> str | None:
    value = config.getoption(name)
    return value if value is not None else (config.getini(name) or None)


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _results_path(config: pytest.Config) -> Path | None:
    value = _setting(config, "kg_results")
    return Path(value) if value else None


def _alluredir(config: pytest.Config) -> Path | None:
    value = getattr(config.option, "allure_report_dir", None)
    return Path(value) if value else None


def pytest_configure(config: pytest.Config) -> None:
    from kernelgen.report.wandb_run import resolve_mode
    from kernelgen.harness.sharding import parse_shard

    try:
        shard = parse_shard(config.getoption("kg_shard")) if config.getoption("kg_shard") else None
        wandb_mode, wandb_note = resolve_mode(_setting(config, "kg_wandb"))
    except KernelgenError as error:
        raise pytest.UsageError(error.message) from None
    results = _results_path(config)
    if results is not None and results.is_dir():
        raise pytest.UsageError(f"--kg-results {results}: is a folder; give the results file, e.g. "
                                f"{results / 'run.jsonl'}")
    needs_artifacts = results is not None or wandb_mode != "off"
    config.pluginmanager.register(CaseReporting(needs_artifacts, _alluredir(config) is not None),
                                  "kernelgen-case-reporting")
    if shard is not None:
        config.pluginmanager.register(ShardFilter(shard), "kernelgen-shard")
    if not _is_worker(config):
        config.pluginmanager.register(RunReports(config, wandb_mode, wandb_note), "kernelgen-run-reports")


class CaseReporting:
    """In the process that ran the case: where it ran, Allure, and the artifacts' ride."""

    def __init__(self, needs_artifacts: bool, allure: bool) -> None:
        self.needs_artifacts = needs_artifacts
        self.allure = allure

    @pytest.hookimpl
    def pytest_kernelgen_case_result(self, config: pytest.Config, item: pytest.Item, result: CaseResult) -> None:
        from kernelgen.gpu.devices import gpu_record, worker_gpu

        if result.mode == "gpu":
            result.extra["gpu"] = gpu_record(worker_gpu())
        if self.allure:
            from kernelgen.report.allure import attach_case

            callspec = getattr(item, "callspec", None)
            attach_case(result, callspec.id if callspec is not None else item.name)
        if self.needs_artifacts:
            item.stash[_ARTIFACTS] = dict(result.artifacts)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Any:
        report = yield
        if call.when == "call" and _ARTIFACTS in item.stash:
            setattr(report, ARTIFACTS_ATTRIBUTE, item.stash[_ARTIFACTS])
        return report


class ShardFilter:
    def __init__(self, shard: Shard) -> None:
        self.shard = shard

    @staticmethod
    def key(item: pytest.Item) -> str:
        """A kernelgen case is sharded by its task (all samples together), any other test by itself."""
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "kg_case" in callspec.params:
            return "task:" + callspec.params["kg_case"][0]
        return item.nodeid

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        from kernelgen.harness.sharding import select

        kept, dropped = select(items, self.key, self.shard)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept


class RunReports:
    """In the controller: the results store and W&B per case; Allure's session files at the end."""

    def __init__(self, config: pytest.Config, wandb_mode: str, wandb_note: str | None) -> None:
        from kernelgen.harness.plugin import run_options

        self.config = config
        self.results: list[CaseResult] = []
        self.store = None
        self.wandb = None
        self.notes: list[str] = [wandb_note] if wandb_note else []
        path = _results_path(config)
        if path is not None:
            from kernelgen.report.store import RunWriter

            self.store = RunWriter(path)
        if wandb_mode != "off":
            from kernelgen.report.wandb_run import WandbRun

            options = run_options(config)
            self.wandb = WandbRun(wandb_mode, {
                "sampling": {"samples": options.samples, "temperature": options.temperature,
                             "max_tokens": options.max_tokens, "repair_rounds": options.repair_rounds},
                "shapes": options.shapes, "seed": options.seed, "timeout_s": options.timeout_s,
                "base_url": options.base_url, "shard": config.getoption("kg_shard")})

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        from kernelgen.harness.plugin import RESULT_KEY

        if report.when != "call":
            return
        for key, value in report.user_properties:
            if key == RESULT_KEY:
                fields = json.loads(value) | {"artifacts": getattr(report, ARTIFACTS_ATTRIBUTE, {})}
                result = CaseResult.model_validate(fields)
                self.results.append(result)
                if self.store is not None:
                    self.store.add(result)
                if self.wandb is not None:
                    self._tracking(self.wandb.add, result)

    def _tracking(self, step: Any, *args: Any) -> Any:
        """A W&B step; a failure of W&B (a network, a key) ends tracking, never the benchmark."""
        try:
            return step(*args)
        except Exception as error:  # noqa: BLE001 - any failure inside wandb
            from kernelgen.env import known_secrets, redact

            reason = redact(f"{type(error).__name__}: {error}", known_secrets())
            self.notes.append(f"W&B stopped, the run went on without it: {reason}")
            self.wandb = None
            return None

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.store is not None:
            self.store.close()
            if self.store.cases:
                self.notes.append(f"results: {self.store.path} ({self.store.cases} cases)")
        if self.wandb is not None:
            mode = self.wandb.mode
            folder = self._tracking(self.wandb.finish)
            if folder is not None:
                sync = f"; upload it with: wandb sync {folder}" if mode == "offline" else ""
                self.notes.append(f"W&B: {mode} run in {folder}{sync}")
        alluredir = _alluredir(self.config)
        if alluredir is not None and self.results:
            from kernelgen.gpu.devices import list_gpus
            from kernelgen.report.allure import write_session_files

            write_session_files(alluredir, self.results, list_gpus())
            self.notes.append(f"Allure results: {alluredir} (HTML: kernelgen report html {alluredir} -o REPORT_DIR)")

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.results:
            for note in [*gpu_assignment(self.results), *self.notes]:
                terminalreporter.write_line(note)


def gpu_assignment(results: list[CaseResult]) -> list[str]:
    """Which GPU each worker ran its cases on (GPU runs only): one line per worker."""
    from kernelgen.gpu.devices import worker_index

    counts: dict[tuple[str, Any, Any], int] = {}
    for result in results:
        gpu = result.extra.get("gpu")
        if gpu:
            key = (gpu["worker"], gpu.get("index"), gpu.get("name"))
            counts[key] = counts.get(key, 0) + 1
    return [f"worker {worker}: GPU {index} ({name}), {count} cases" if index is not None
            else f"worker {worker}: no GPU listed by nvidia-smi (not pinned), {count} cases"
            for (worker, index, name), count in sorted(counts.items(), key=lambda item: worker_index(item[0][0]))]
