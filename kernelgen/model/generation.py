"""Generations: the record of one, the on-disk cache of all of them, and the sampling loop.

Every generation is a :class:`GenerationRecord`, one JSON file per record named by its key:
the sha256 of (provider, model, content key), where the content key is the sha256 of (messages,
schema hash, sampling parameters, sample index); a request whose messages hold measurements (an
optimization round's times) gives ``key_messages`` without them to key on instead. A benchmark
re-run with the same prompt hits the cache; ``--llm replay:DIR`` answers from the records alone,
bit for bit (it looks records up by content key, so it needs no provider configuration).

Concurrency: records are written to a temporary file and renamed into place, so a reader never
sees half a record; a per-key file lock (``filelock``) is held from the cache lookup to the
write, so two processes (pytest-xdist workers) that need the same generation make one call and
share its answer. A failed call writes nothing. Records hold no secrets: the request's fields
and the completion, never headers or keys.

A record is bound to what asked for it: it holds the request's fields (and the messages it was
keyed on), and reading one recomputes its content key and key from them and checks the file's
name, so a record copied or planted under another request's key (another task's answer
replayed as this one's) is refused (``bad_record``). The baseline's sandboxed children cannot
reach the cache at all (:mod:`kernelgen.baseline.wall`).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from filelock import FileLock
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kernelgen.errors import KernelgenError
from kernelgen.lang.parse import kernel_to_json, kernel_to_obj
from kernelgen.model.prompt import Message, task_messages
from kernelgen.model.providers.base import Completion, GenerationRequest, Provider, Sampling

if TYPE_CHECKING:
    from kernelgen.task.spec import Task

LOCK_DIR = ".locks"


class CacheError(KernelgenError):
    """A cache file that cannot be read back as a record."""

    stage = "generate"


class GenerationRecord(BaseModel):
    """One generation as it is stored: what was asked and what came back."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    content_key: str
    provider: str
    model: str
    schema_hash: str
    messages: tuple[Message, ...]
    key_messages: tuple[Message, ...] | None = None
    sampling: Sampling
    sample_index: int
    completion: Completion
    created: str
    cached: bool = Field(False, exclude=True, description="read back from the cache by this process")

    @property
    def text(self) -> str:
        return self.completion.text


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def content_key(request: GenerationRequest | GenerationRecord) -> str:
    """The hash of what decides an answer besides the provider and model (the request's
    ``key_messages`` stand for its messages where it has them); of a record, of the request it
    holds."""
    messages = request.key_messages if request.key_messages is not None else request.messages
    return _digest({"messages": [m.model_dump() for m in messages],
                    "schema": request.schema_hash,
                    "sampling": request.sampling.model_dump(),
                    "sample_index": request.sample_index})


def generation_key(provider: str, model: str, request: GenerationRequest) -> str:
    return _digest({"provider": provider, "model": model, "content": content_key(request)})


def make_record(request: GenerationRequest, completion: Completion) -> GenerationRecord:
    return GenerationRecord(
        key=generation_key(completion.provider, completion.model, request),
        content_key=content_key(request), provider=completion.provider, model=completion.model,
        schema_hash=request.schema_hash, messages=request.messages, key_messages=request.key_messages,
        sampling=request.sampling,
        sample_index=request.sample_index, completion=completion,
        created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))


class GenerationCache:
    """A directory of records, ``<key>.json`` each, shared safely between processes."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def lock(self, key: str) -> FileLock:
        locks = self.directory / LOCK_DIR
        locks.mkdir(parents=True, exist_ok=True)
        return FileLock(str(locks / f"{key}.lock"))

    def load(self, key: str) -> GenerationRecord | None:
        path = self.path(key)
        if not path.is_file():
            return None
        record = read_record(path)
        if record.key != key:
            raise CacheError(f"{path} holds the record of another request ({record.key}): refused",
                             code="bad_record")
        return record

    def store(self, record: GenerationRecord) -> Path:
        """Write a record atomically: a temporary file in the same directory, renamed."""
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.path(record.key)
        text = json.dumps(record.model_dump(mode="json"), indent=1) + "\n"
        fd, temporary = tempfile.mkstemp(dir=self.directory, prefix=f".{record.key}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return path

    def records(self) -> Iterator[GenerationRecord]:
        for path in sorted(self.directory.glob("*.json")):
            yield read_record(path)


def read_record(path: Path) -> GenerationRecord:
    """A record, checked against itself: its content key and key must be those of the request
    it holds (a record edited or forged to answer another request is refused)."""
    try:
        record = GenerationRecord.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, UnicodeDecodeError, ValidationError) as exc:
        first = str(exc).splitlines()[0]
        raise CacheError(f"{path} is not a generation record: {first}", code="bad_record") from None
    if record.content_key != content_key(record) or record.key != _digest(
            {"provider": record.provider, "model": record.model, "content": record.content_key}):
        raise CacheError(f"{path} is not the record of the request it holds (its keys do not match its "
                         "messages, sampling and model): refused", code="bad_record")
    return record


def generate(provider: Provider, request: GenerationRequest,
             cache: GenerationCache | None = None) -> GenerationRecord:
    """One generation: from the cache when recorded, else from the provider (and recorded)."""
    if cache is None or not provider.records:
        return make_record(request, provider.generate(request))
    key = generation_key(provider.name, provider.model, request)
    with cache.lock(key):
        recorded = cache.load(key)
        if recorded is not None:
            return recorded.model_copy(update={"cached": True})
        record = make_record(request, provider.generate(request))
        cache.store(record)
        return record


@dataclass(frozen=True)
class Sample:
    """One of n samples: its record, or the error that stopped it."""

    index: int
    record: GenerationRecord | None = None
    error: KernelgenError | None = None


def generate_samples(provider: Provider, request: GenerationRequest, n: int,
                     cache: GenerationCache | None = None) -> list[Sample]:
    """Samples 0..n-1 of a request, up to the provider's concurrency at once, in order.

    A failed sample (after the provider's retries) is reported in its :class:`Sample`; the
    others still run.
    """
    def one(index: int) -> Sample:
        try:
            return Sample(index, generate(provider, request.model_copy(update={"sample_index": index}), cache))
        except KernelgenError as exc:
            return Sample(index, error=exc)

    with ThreadPoolExecutor(max_workers=max(1, min(n, provider.concurrency))) as pool:
        return list(pool.map(one, range(n)))


def task_request(task: Task, sampling: Sampling = Sampling(), sample_index: int = 0) -> GenerationRequest:
    """The request for a benchmark task: its prompt with the language reference, and its
    golden AST for the reference provider."""
    golden = kernel_to_obj(task.golden)
    return GenerationRequest(
        messages=task_messages(task.render_prompt(), task_id=task.id, golden=golden),
        sampling=sampling, sample_index=sample_index, reference=kernel_to_json(task.golden))


def prompt_request(prompt: str, sampling: Sampling = Sampling()) -> GenerationRequest:
    """The request for a free-form prompt (no golden answer)."""
    return GenerationRequest(messages=task_messages(prompt), sampling=sampling)

