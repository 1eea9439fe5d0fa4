"""``replay:DIR``: answers from recorded generations, bit for bit, with no model and no network.

Records are looked up by content key (messages, schema hash, sampling, sample index), so a
replay needs no provider configuration; ``--model`` picks one model where a directory holds
records of several for the same request. A request with no record is an error that names its
content key: the prompt, the schema or the sampling differ from the recorded run.
"""

from __future__ import annotations

import threading
from pathlib import Path

from kernelgen.model.generation import GenerationCache, GenerationRecord, content_key
from kernelgen.model.providers.base import Completion, GenerationRequest, ProviderError, config_error


class ReplayProvider:
    name = "replay"
    concurrency = 64
    records = False

    def __init__(self, directory: Path | str, model: str | None = None) -> None:
        self.cache = GenerationCache(directory)
        if not self.cache.directory.is_dir():
            raise config_error(f"replay: no directory {self.cache.directory}")
        self.model = model or "*"
        self._model_filter = model
        self._index: dict[str, list[GenerationRecord]] | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ReplayProvider({str(self.cache.directory)!r}, model={self.model!r})"

    def _records(self, key: str) -> list[GenerationRecord]:
        with self._lock:
            if self._index is None:
                self._index = {}
                for record in self.cache.records():
                    self._index.setdefault(record.content_key, []).append(record)
        return [r for r in self._index.get(key, [])
                if self._model_filter in (None, r.model, f"{r.provider}/{r.model}")]

    def generate(self, request: GenerationRequest) -> Completion:
        key = content_key(request)
        found = self._records(key)
        if not found:
            wanted = f" of model {self._model_filter!r}" if self._model_filter else ""
            raise ProviderError(
                f"no recorded generation{wanted} in {self.cache.directory} for content key {key} "
                f"(sample {request.sample_index}, temperature {request.sampling.temperature:g}, "
                f"schema {request.schema_hash}): the prompt, schema or sampling differ from the "
                "recorded run", code="no_record")
        sources = sorted({f"{r.provider}/{r.model}" for r in found})
        if len(sources) > 1:
            raise ProviderError(f"{self.cache.directory} holds generations of {', '.join(sources)} "
                                f"for content key {key}: pick one with --model", code="ambiguous_record")
        return found[0].completion

