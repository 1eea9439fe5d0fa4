"""Ollama's native chat API: ``POST {base_url}/api/chat`` with ``"format"`` set to the JSON
schema (Ollama turns it into a grammar) and ``"stream": false``.

The base URL comes from the options, ``OLLAMA_HOST`` or ``http://127.0.0.1:11434``.
"""

from __future__ import annotations

import time
from typing import Any

from kernelgen.env import getenv
from kernelgen.model.providers.base import (Completion, GenerationRequest, ProviderError, ProviderOptions,
                                      RetryPolicy, config_error, token_usage)
from kernelgen.model.providers.http import JsonHttpClient, dig

OLLAMA_BASE_URL = "http://127.0.0.1:11434"


class OllamaProvider:
    name = "ollama"
    records = True

    def __init__(self, *, base_url: str, model: str, timeout_s: float = 300.0,
                 retry: RetryPolicy = RetryPolicy(), concurrency: int = 4, transport: Any = None) -> None:
        self.model = model
        self.concurrency = concurrency
        self.http = JsonHttpClient(base_url, timeout_s=timeout_s,
                                   retry=retry,
                                   concurrency=concurrency, transport=transport)

    def __repr__(self) -> str:
        return f"OllamaProvider(model={self.model!r}, base_url={self.http.base_url!r})"

    def request_body(self, request: GenerationRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [m.model_dump() for m in request.messages],
            "stream": False,
            "options": {"temperature": request.sampling.temperature,
                        "num_predict": request.sampling.max_tokens,
                        "seed": request.seed()},
        }
        if request.json_schema is not None:
            body["format"] = request.schema_dict()
        return body

    def generate(self, request: GenerationRequest) -> Completion:
        start = time.perf_counter()
        reply = self.http.post("api/chat", self.request_body(request))
        text = dig(reply.data, "message", "content")
        if not isinstance(text, str):
            raise ProviderError(f"{self.http.url('api/chat')}: the answer has no message.content",
                                code="bad_response")
        tokens_in, tokens_out, source = token_usage(
            request, text, dig(reply.data, "prompt_eval_count"), dig(reply.data, "eval_count"))
        return Completion(text=text, provider=self.name, model=self.model,
                          latency_s=time.perf_counter() - start, tokens_in=tokens_in,
                          tokens_out=tokens_out, token_source=source, retries=reply.retries,
                          finish_reason=dig(reply.data, "done_reason"),
                          constrained="format" if request.json_schema is not None else "none")


def from_options(options: ProviderOptions) -> OllamaProvider:
    if not options.model:
        raise config_error("ollama needs a model: --model NAME (e.g. qwen2.5-coder:7b)")
    base_url = options.base_url or getenv("OLLAMA_HOST") or OLLAMA_BASE_URL
    if "://" not in base_url:
        base_url = f"http://{base_url}"  # OLLAMA_HOST is often written as host:port
    return OllamaProvider(base_url=base_url, model=options.model, timeout_s=options.timeout_s,
                          retry=options.retry, concurrency=options.concurrency,
                          transport=options.transport)
