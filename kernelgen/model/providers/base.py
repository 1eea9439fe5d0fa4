"""What every provider takes and gives: a :class:`GenerationRequest` in, a :class:`Completion` out.

Both are Pydantic models because both cross a boundary: they are written into the generation
cache and read back by ``replay`` and by other processes. A request holds everything that
decides the answer (messages, schema, sampling, sample index) and nothing secret; the API key
lives in the provider.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from kernelgen.errors import KernelgenError
from kernelgen.model.prompt import Message, count_tokens
from kernelgen.lang.schema import schema_text


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Sampling(_Frozen):
    """The sampling parameters; part of the cache key."""

    temperature: float = Field(0.0, ge=0.0)
    max_tokens: int = Field(4096, ge=1)
    seed: int | None = None


class GenerationRequest(_Frozen):
    messages: tuple[Message, ...] = Field(min_length=1)
    sampling: Sampling = Sampling()
    sample_index: int = Field(0, ge=0)
    json_schema: str | None = Field(default_factory=schema_text,
                                    description="the answer's JSON schema, as compact text (hashed "
                                                "into the key); None asks for free text (the "
                                                "raw-LLM baseline)")
    reference: str | None = Field(None, description="the task's golden answer, for the reference "
                                                    "provider only: never sent to a model, not in the key")
    key_messages: tuple[Message, ...] | None = Field(
        None, description="what the cache and replay key on in place of messages, when these carry "
                          "measurements that differ from run to run (an optimization round's times): "
                          "never sent; a re-run or a replay then finds the round's answer")

    @property
    def schema_hash(self) -> str:
        if self.json_schema is None:
            return "none"
        return hashlib.sha256(self.json_schema.encode()).hexdigest()[:16]

    def schema_dict(self) -> dict[str, Any] | None:
        return None if self.json_schema is None else json.loads(self.json_schema)

    def prompt_text(self) -> str:
        """The messages as one text, for servers that take a bare prompt."""
        return "\n\n".join(m.content for m in self.messages)

    def seed(self) -> int:
        """The seed for this sample: the given seed plus the sample index, so that samples
        differ from each other and each is reproducible."""
        return (self.sampling.seed or 0) + self.sample_index


class Completion(_Frozen):
    """One answer of a model, with what it cost."""

    text: str
    provider: str
    model: str
    latency_s: float = Field(ge=0.0)
    tokens_in: int = Field(ge=0)
    tokens_out: int = Field(ge=0)
    token_source: str = Field(description="'server' (the server's usage) or how they were counted")
    retries: int = Field(0, ge=0)
    finish_reason: str | None = None
    constrained: str = Field(description="how decoding was constrained: the request field used "
                                         "('response_format', 'format', ...), 'xgrammar' or 'none'")


class ProviderError(KernelgenError):
    """A call to a model failed: an HTTP status (``http_429``), ``connection``, ``timeout``,
    ``bad_response``, ``remote_error``, ``no_record`` or ``ambiguous_record`` (replay), or
    ``config`` (a provider that cannot be made as asked).

    Messages name the URL without credentials or query string, and never hold a key.
    """

    stage = "generate"


class Provider(Protocol):
    """A source of answers. ``name`` and ``model`` are part of the cache key; ``concurrency``
    bounds the calls in flight at once; ``records`` says whether its answers are worth a cache
    record (not for ``replay`` and ``reference``, whose answers are on disk already)."""

    name: str
    model: str
    concurrency: int
    records: bool

    def generate(self, request: GenerationRequest) -> Completion: ...


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff and full jitter; a server's ``Retry-After``
    is honoured up to ``max_retry_after_s``."""

    max_attempts: int = 4
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    max_retry_after_s: float = 120.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """How long to wait after failed attempt number ``attempt`` (from 1)."""
        if retry_after is not None:
            return min(retry_after, self.max_retry_after_s) + random.uniform(0, self.backoff_s)
        return random.uniform(0, min(self.max_backoff_s, self.backoff_s * 2 ** attempt))


@dataclass(frozen=True)
class ProviderOptions:
    """What a command line or a harness can say about a provider; each provider reads the
    fields that concern it and its own environment variables for the rest."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    structured: str | None = None
    timeout_s: float = 300.0
    deadline_s: float = 1800.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    concurrency: int = 4
    transport: Any = None  # an httpx transport in place of the network (httpx.MockTransport)


def token_usage(request: GenerationRequest, text: str, tokens_in: Any = None,
                tokens_out: Any = None) -> tuple[int, int, str]:
    """Tokens in and out with their source: the server's counts when it gave both, else
    counted (see :func:`kernelgen.model.prompt.count_tokens` for how)."""
    if isinstance(tokens_in, int) and isinstance(tokens_out, int):
        return tokens_in, tokens_out, "server"
    counted = count_tokens(text)
    return count_tokens(request.prompt_text()).count, counted.count, counted.method


def config_error(message: str) -> ProviderError:
    return ProviderError(message, code="config")
