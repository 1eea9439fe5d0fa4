"""The results store: one JSON Lines file per run, its artifacts beside it, named by content.

Layout for ``--kg-results runs/a.jsonl``::

    runs/a.jsonl                      one StoredCase per line, in the order cases finished
    runs/a.artifacts/<sha256>.<ext>   each artifact (prompt, answer, AST, TTIR, PTX, ...) once

Why JSON Lines and not SQLite: a run is written once, case by case, and then only read. JSON
Lines is append-only (a run that dies midway keeps every finished case, each line flushed as it
is written), streamable, diffable and greppable; the shards of a run merge by concatenation;
its schema is the :class:`~kernelgen.task.results.CaseResult` model, so there is no migration step
(older lines read with the model's defaults). What SQLite adds, queries, ``kernelgen report
compare`` does in Python over a few thousand cases in milliseconds.

Why artifacts beside it and not in it: PTX and prompts are most of a run's bytes and are
rarely read; kept out of the lines, a file of 10,000 cases still loads in a blink. Named by
their sha256 they are stored once however many cases share them (every sample of the
reference provider has the same AST), and merging stores is copying files with no conflicts.

Writers: only the pytest controller writes (xdist workers send results in their reports), so
a file has one writer and needs no lock. Artifact files are written to a temporary name and
renamed, and never rewritten: a name is its content.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import IO, Iterator

from pydantic import Field, ValidationError

from kernelgen.errors import Diagnostic, KernelgenError
from kernelgen.task.results import CaseResult

ARTIFACT_SUFFIXES = {"prompt": ".txt", "answer": ".txt", "ast": ".json", "ttir": ".ttir", "ptx": ".ptx",
                     "times": ".txt"}


class StoreError(KernelgenError):
    """A results file that is missing or does not hold case results."""

    stage = "report"


class StoredCase(CaseResult):
    """A case result as one line of a results file: its artifacts are files, not text."""

    artifact_files: dict[str, str] = Field(
        default_factory=dict, description="artifact name -> file name in the run's artifacts folder")


def artifacts_dir(results: Path) -> Path:
    """Where the artifacts of the results file ``results`` live: ``a.jsonl`` -> ``a.artifacts``."""
    return results.with_suffix(".artifacts")


def case_key(case: CaseResult) -> tuple[str, str, str, str, str, int]:
    """What identifies a case within a run: one answer of one model to one task."""
    return (case.track, case.tier, case.task, case.provider, case.model, case.sample)


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename, so a
    reader never sees part of it."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def store_artifact(directory: Path, name: str, text: str) -> str:
    """Store one artifact by content; its file name within ``directory``."""
    data = text.encode("utf-8")
    file_name = hashlib.sha256(data).hexdigest() + ARTIFACT_SUFFIXES.get(name, ".txt")
    path = directory / file_name
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        write_atomically(path, data)
    return file_name


class RunWriter:
    """Appends finished cases to a results file (created, or emptied, on the first case)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.cases = 0
        self._handle: IO[str] | None = None

    def add(self, result: CaseResult) -> StoredCase:
        if self._handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = self.path.open("w", encoding="utf-8")
        result = result.scrubbed()  # as the harness hands it over; again for any other caller
        directory = artifacts_dir(self.path)
        files = {name: store_artifact(directory, name, text) for name, text in result.artifacts.items()}
        stored = StoredCase.model_validate({**result.model_dump(exclude={"artifacts"}), "artifact_files": files})
        self._handle.write(stored.model_dump_json(exclude={"artifacts"}) + "\n")
        self._handle.flush()
        self.cases += 1
        return stored

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if line.strip():
                    yield number, line
    except FileNotFoundError:
        raise StoreError(f"{path}: no such results file", code="not_found") from None
    except IsADirectoryError:
        raise StoreError(f"{path} is a folder, not a results file (.jsonl)", code="not_a_file") from None
    except UnicodeDecodeError as exc:
        raise StoreError(f"{path} is not a text file: {exc.reason} at byte {exc.start}",
                         code="not_text") from None


def read_run(path: Path | str) -> list[StoredCase]:
    """Every case of a results file; a clear error naming the line and field of a bad one."""
    path = Path(path)
    cases = []
    for number, line in _lines(path):
        try:
            cases.append(StoredCase.model_validate_json(line))
        except ValidationError as exc:
            error = exc.errors()[0]
            pointer = "/" + "/".join(str(part) for part in error["loc"]) if error["loc"] else ""
            raise StoreError(Diagnostic(pointer, "bad_result_line",
                                        f"{path} line {number}: {error['msg']}")) from None
    return cases


def load_artifacts(results: Path | str, case: StoredCase) -> dict[str, str]:
    """The artifacts of a stored case, read back from the run's artifacts folder."""
    directory = artifacts_dir(Path(results))
    artifacts = {}
    for name, file_name in case.artifact_files.items():
        try:
            artifacts[name] = (directory / file_name).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise StoreError(f"{directory / file_name}: artifact {name!r} of {case.tier}/{case.task} is missing",
                             code="missing_artifact") from None
    return artifacts
