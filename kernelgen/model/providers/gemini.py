"""Google's Gemini API: ``POST {base_url}/models/{model}:generateContent``.

The schema goes in ``generationConfig.responseJsonSchema`` (with ``responseMimeType``
``application/json``): the field that takes a JSON Schema with ``$defs``, ``$ref`` and
``anyOf``, which the kernel schema is made of. The older ``responseSchema`` takes an OpenAPI
subset without references, so it cannot hold a recursive schema and is not used.

If the API answers 400 to the schema (a model or an API version that does not take it), the
provider falls back, for this and every later call, to ``responseMimeType`` alone: the answer
is then JSON but unconstrained, the completion says ``constrained="responseMimeType"``, and
post-validation (:func:`kernelgen.model.grammar.validate_answer`) judges it. The key is sent in the
``x-goog-api-key`` header, never in the URL.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from kernelgen.env import Secret, get_secret
from kernelgen.model.providers.base import (Completion, GenerationRequest, ProviderError, ProviderOptions,
                                      RetryPolicy, config_error, token_usage)
from kernelgen.model.providers.http import JsonHttpClient, dig

log = logging.getLogger(__name__)

GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
ROLES = {"user": "user", "assistant": "model"}


class GeminiProvider:
    name = "gemini"
    records = True

    def __init__(self, *, model: str, api_key: Secret, base_url: str = GEMINI_BASE_URL,
                 use_schema: bool = True, timeout_s: float = 300.0, retry: RetryPolicy = RetryPolicy(),
                 concurrency: int = 4, transport: Any = None) -> None:
        self.model = model
        self.concurrency = concurrency
        self.use_schema = use_schema
        self._fallback_lock = threading.Lock()
        self.http = JsonHttpClient(base_url, headers={"x-goog-api-key": api_key.reveal()},
                                   secrets=[api_key], timeout_s=timeout_s,
                                   retry=retry,
                                   concurrency=concurrency, transport=transport)

    def __repr__(self) -> str:
        return f"GeminiProvider(model={self.model!r}, use_schema={self.use_schema})"

    @property
    def path(self) -> str:
        return f"models/{self.model}:generateContent"

    def request_body(self, request: GenerationRequest, use_schema: bool) -> dict[str, Any]:
        config: dict[str, Any] = {
            "temperature": request.sampling.temperature,
            "maxOutputTokens": request.sampling.max_tokens,
            "seed": request.seed(),
        }
        if request.json_schema is not None:
            config["responseMimeType"] = "application/json"
            if use_schema:
                config["responseJsonSchema"] = request.schema_dict()
        body: dict[str, Any] = {
            "contents": [{"role": ROLES[m.role], "parts": [{"text": m.content}]}
                         for m in request.messages if m.role != "system"],
            "generationConfig": config,
        }
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        return body

    def generate(self, request: GenerationRequest) -> Completion:
        start = time.perf_counter()
        use_schema, fallbacks = self.use_schema and request.json_schema is not None, 0
        try:
            reply = self.http.post(self.path, self.request_body(request, use_schema))
        except ProviderError as exc:
            if not (use_schema and exc.code == "http_400"):
                raise
            with self._fallback_lock:
                if self.use_schema:
                    log.warning("gemini %s rejected responseJsonSchema (%s); from now on only "
                                "responseMimeType is sent and answers are validated afterwards",
                                self.model, exc)
                self.use_schema = use_schema = False
            fallbacks = 1
            reply = self.http.post(self.path, self.request_body(request, use_schema))
        candidate = dig(reply.data, "candidates", 0)
        parts = dig(candidate, "content", "parts")
        if not isinstance(parts, list):
            blocked = dig(reply.data, "promptFeedback", "blockReason")
            reason = (f"the prompt was blocked ({blocked})" if blocked else
                      f"no candidate content (finishReason {dig(candidate, 'finishReason')})")
            raise ProviderError(f"gemini {self.model}: {reason}", code="bad_response")
        text = "".join(p.get("text", "") for p in parts if isinstance(p, dict) and not p.get("thought"))
        tokens_in, tokens_out, source = token_usage(
            request, text, dig(reply.data, "usageMetadata", "promptTokenCount"),
            dig(reply.data, "usageMetadata", "candidatesTokenCount"))
        return Completion(text=text, provider=self.name, model=self.model,
                          latency_s=time.perf_counter() - start, tokens_in=tokens_in,
                          tokens_out=tokens_out, token_source=source, retries=reply.retries + fallbacks,
                          finish_reason=dig(candidate, "finishReason"),
                          constrained=("none" if request.json_schema is None else
                                       "responseJsonSchema" if use_schema else "responseMimeType"))


def from_options(options: ProviderOptions) -> GeminiProvider:
    if not options.model:
        raise config_error("gemini needs a model: --model NAME (e.g. gemini-2.5-flash)")
    key_env = options.api_key_env or "GEMINI_API_KEY"
    key = get_secret(key_env)
    if key is None:
        raise config_error(f"gemini needs an API key in {key_env}")
    if options.structured not in (None, "responseJsonSchema", "responseMimeType"):
        raise config_error("gemini's structured output is 'responseJsonSchema' (default) or "
                           f"'responseMimeType' (JSON without a schema), not {options.structured!r}")
    return GeminiProvider(model=options.model, api_key=key,
                          base_url=options.base_url or GEMINI_BASE_URL,
                          use_schema=options.structured != "responseMimeType",
                          timeout_s=options.timeout_s, retry=options.retry,
                          concurrency=options.concurrency, transport=options.transport)
