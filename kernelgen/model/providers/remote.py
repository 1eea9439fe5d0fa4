"""The original design's inference server (and ``kernelgen serve``'s ``/generate``): a job queue.

``POST {url}/generate`` with ``{prompt, max_tokens, temperature, schema_dict}`` (``schema_dict``
null for free text) answers ``{job_id}``; ``GET {url}/status/{job_id}`` answers
``{status, response, error}``, polled until ``status`` is ``done`` or ``error`` or the deadline
passes. Each HTTP call has the usual
timeout and retries; the deadline bounds the whole job.

The URL comes from the options or ``LLM_API_URL``. A server that names no model is identified
by its URL (without credentials) in the cache key.
"""

from __future__ import annotations

import time
from typing import Any, Callable
from urllib.parse import quote

from kernelgen.env import LLM_API_URL, get_secret, getenv, redact_url
from kernelgen.model.providers.base import (Completion, GenerationRequest, ProviderError, ProviderOptions,
                                      RetryPolicy, config_error, token_usage)
from kernelgen.model.providers.http import JsonHttpClient, dig

FIRST_POLL_S = 0.1
MAX_POLL_S = 2.0
FINISHED = ("done", "error")


class RemoteProvider:
    name = "remote"
    records = True

    def __init__(self, *, url: str, model: str | None = None, headers: dict[str, str] | None = None,
                 secrets: list[Any] | None = None, deadline_s: float = 1800.0,
                 timeout_s: float = 60.0, retry: RetryPolicy = RetryPolicy(), concurrency: int = 4,
                 transport: Any = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.model = model or redact_url(url.rstrip("/"))
        self.concurrency = concurrency
        self.deadline_s = deadline_s
        self._sleep = sleep
        self.http = JsonHttpClient(url, headers=headers, secrets=secrets or [], timeout_s=timeout_s,
                                   retry=retry,
                                   concurrency=concurrency, transport=transport, sleep=sleep)

    def __repr__(self) -> str:
        return f"RemoteProvider(model={self.model!r})"

    def request_body(self, request: GenerationRequest) -> dict[str, Any]:
        return {"prompt": request.prompt_text(), "max_tokens": request.sampling.max_tokens,
                "temperature": request.sampling.temperature, "schema_dict": request.schema_dict()}

    def generate(self, request: GenerationRequest) -> Completion:
        start = time.perf_counter()
        submitted = self.http.post("generate", self.request_body(request))
        job_id = dig(submitted.data, "job_id")
        if not isinstance(job_id, (str, int)) or isinstance(job_id, bool):
            raise ProviderError(f"{self.http.url('generate')}: the answer has no job_id",
                                code="bad_response")
        retries = submitted.retries
        path = f"status/{quote(str(job_id), safe='')}"
        deadline = start + self.deadline_s
        wait = FIRST_POLL_S
        while True:
            polled = self.http.get(path)
            retries += polled.retries
            status = dig(polled.data, "status")
            if status in FINISHED:
                break
            if time.perf_counter() + wait > deadline:
                raise ProviderError(f"{redact_url(self.http.url(path))}: job {job_id} not finished "
                                    f"after {self.deadline_s:g} s (last status {status!r})",
                                    code="timeout")
            self._sleep(wait)
            wait = min(MAX_POLL_S, wait * 1.5)
        if status == "error":
            raise ProviderError(f"{redact_url(self.http.url(path))}: job {job_id} failed: "
                                f"{dig(polled.data, 'error')}", code="remote_error")
        text = dig(polled.data, "response")
        if not isinstance(text, str):
            raise ProviderError(f"{redact_url(self.http.url(path))}: job {job_id} is done but has "
                                "no response text", code="bad_response")
        tokens_in, tokens_out, source = token_usage(
            request, text, dig(polled.data, "usage", "prompt_tokens"),
            dig(polled.data, "usage", "completion_tokens"))
        return Completion(text=text, provider=self.name, model=self.model,
                          latency_s=time.perf_counter() - start, tokens_in=tokens_in,
                          tokens_out=tokens_out, token_source=source, retries=retries,
                          finish_reason=dig(polled.data, "finish_reason"),
                          constrained="schema_dict" if request.json_schema is not None else "none")


def from_options(options: ProviderOptions) -> RemoteProvider:
    url = options.base_url or getenv(LLM_API_URL)
    if not url:
        raise config_error(f"remote needs the server's URL: --base-url URL or {LLM_API_URL}")
    key = get_secret(options.api_key_env) if options.api_key_env else None
    return RemoteProvider(url=url, model=options.model,
                          headers={"Authorization": f"Bearer {key.reveal()}"} if key else None,
                          secrets=[key] if key else [], deadline_s=options.deadline_s,
                          timeout_s=options.timeout_s, retry=options.retry,
                          concurrency=options.concurrency, transport=options.transport)
