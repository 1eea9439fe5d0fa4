"""Merging the shards of a run (``--shard i/n`` on several runners) into one run.

Results files: the cases of every input, each case once (the same case in two inputs is an
error: the shards overlapped, or a run was given twice), sorted by tier, task and sample so
that a merge does not depend on the order the shards finished in; their artifact files are
copied beside the output (content-named, so copies never conflict).

Allure results folders: Allure reads a folder of independent files, so merging is copying
them; test results and attachments have unique (UUID) names. The session files differ per
shard only in what they describe: ``environment.properties`` keeps every distinct value of a
key (two runners with different GPUs list both), ``categories.json`` the union of categories.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Sequence

from kernelgen.errors import KernelgenError
from kernelgen.task.metrics import tier_key
from kernelgen.harness.progress import progress
from kernelgen.report.allure import format_properties, parse_properties
from kernelgen.report.store import StoredCase, artifacts_dir, case_key, read_run, write_atomically


class MergeError(KernelgenError):
    stage = "report"


def _order(case: StoredCase) -> tuple:
    return (tier_key(case.tier), case.task, case.track, case.provider, case.model, case.sample)


def _check_output(inputs: Sequence[Path], output: Path) -> None:
    if not inputs:
        raise MergeError("nothing to merge: name the runs", code="no_inputs")
    if any(path.resolve() == output.resolve() for path in inputs):
        raise MergeError(f"{output} is one of the inputs: write the merge to a new path", code="output_is_input")


def merge_results(inputs: Sequence[Path | str], output: Path | str) -> list[StoredCase]:
    """Merge results files into ``output`` (and its artifacts folder); the merged cases."""
    inputs, output = [Path(p) for p in inputs], Path(output)
    _check_output(inputs, output)
    seen: dict[tuple, Path] = {}
    merged: list[StoredCase] = []
    target = artifacts_dir(output)
    for path in progress(inputs, description="merging", unit="run"):
        for case in read_run(path):
            key = case_key(case)
            if key in seen:
                raise MergeError(f"{case.tier}/{case.task} sample {case.sample} ({case.provider}/{case.model}) "
                                 f"is in both {seen[key]} and {path}: shards must not overlap",
                                 code="duplicate_case")
            seen[key] = path
            merged.append(case)
            for file_name in case.artifact_files.values():
                source, copy = artifacts_dir(path) / file_name, target / file_name
                if not copy.exists():
                    if not source.is_file():
                        raise MergeError(f"{source}: an artifact of {case.tier}/{case.task} is missing",
                                         code="missing_artifact")
                    target.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(source, copy)
    merged.sort(key=_order)
    output.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(output, "".join(case.model_dump_json(exclude={"artifacts"}) + "\n" for case in merged).encode("utf-8"))
    return merged


def _merge_environment(texts: Sequence[str]) -> str:
    values: dict[str, list[str]] = {}
    for text in texts:
        for key, value in parse_properties(text).items():
            for part in value.split(", "):
                if part not in values.setdefault(key, []):
                    values[key].append(part)
    return format_properties({key: ", ".join(parts) for key, parts in values.items()})


def _merge_categories(texts: Sequence[str]) -> str:
    merged: list[dict] = []
    for text in texts:
        for category in json.loads(text):
            if category not in merged:
                merged.append(category)
    return json.dumps(merged, indent=2) + "\n"


SESSION_FILES = {"environment.properties": _merge_environment, "categories.json": _merge_categories}


def merge_allure(inputs: Sequence[Path | str], output: Path | str) -> int:
    """Merge Allure results folders into ``output``; the number of files written."""
    inputs, output = [Path(p) for p in inputs], Path(output)
    _check_output(inputs, output)
    output.mkdir(parents=True, exist_ok=True)
    session_texts: dict[str, list[str]] = {name: [] for name in SESSION_FILES}
    written = 0
    for folder in progress(inputs, description="merging", unit="folder"):
        if not folder.is_dir():
            raise MergeError(f"{folder}: no such Allure results folder", code="not_found")
        for source in sorted(folder.iterdir()):
            if not source.is_file():
                continue
            if source.name in SESSION_FILES:
                session_texts[source.name].append(source.read_text(encoding="utf-8"))
                continue
            copy = output / source.name
            if copy.exists():
                if copy.read_bytes() != source.read_bytes():
                    raise MergeError(f"{source.name} differs between the inputs; Allure results files have "
                                     f"unique names, so these folders are not shards of one run", code="conflict")
                continue
            shutil.copyfile(source, copy)
            written += 1
    for name, texts in session_texts.items():
        if texts:
            (output / name).write_text(SESSION_FILES[name](texts), encoding="utf-8")
            written += 1
    return written
