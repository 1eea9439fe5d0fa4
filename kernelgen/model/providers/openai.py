"""Any OpenAI-compatible chat completions server: vLLM, SGLang, llama.cpp, LM Studio, OpenAI.

``POST {base_url}/chat/completions``. How the schema travels is chosen by ``structured``:

* ``response_format`` (default): the OpenAI field,
  ``{"type": "json_schema", "json_schema": {"name": "kernel", "schema": ..., "strict": false}}``
  (strict is off: OpenAI's strict mode demands every property be required, which the kernel
  schema's optional fields are not);
* ``structured_outputs``: vLLM's own field (``{"structured_outputs": {"json": schema}}``, vLLM
  0.10 and later);
* ``guided_json``: the older vLLM and SGLang field, removed in vLLM 0.12;
* ``nvext``: NVIDIA NIM's extension, ``{"nvext": {"guided_json": schema}}``;
* ``none``: no constraint; the answer is validated afterwards.

A request without a schema (the raw-LLM baseline) is sent without any of them.

Base URL, model and key come from the options or ``OPENAI_BASE_URL``, ``OPENAI_MODEL`` and
``OPENAI_API_KEY`` (a local server usually needs no key).
"""

from __future__ import annotations

import time
from typing import Any

from kernelgen.env import Secret, get_secret, getenv
from kernelgen.model.providers.base import (Completion, GenerationRequest, ProviderError, ProviderOptions,
                                      RetryPolicy, config_error, token_usage)
from kernelgen.model.providers.http import JsonHttpClient, dig

STRUCTURED_MODES = ("response_format", "structured_outputs", "guided_json", "nvext", "none")
OPENAI_BASE_URL = "https://api.openai.com/v1"


class OpenAICompatibleProvider:
    records = True

    def __init__(self, *, base_url: str, model: str, api_key: Secret | None = None,
                 structured: str = "response_format", name: str = "openai",
                 timeout_s: float = 300.0, retry: RetryPolicy = RetryPolicy(), concurrency: int = 4,
                 transport: Any = None) -> None:
        if structured not in STRUCTURED_MODES:
            raise config_error(f"{name}: unknown structured-output mode {structured!r}; "
                               f"one of {', '.join(STRUCTURED_MODES)}")
        self.name = name
        self.model = model
        self.structured = structured
        self.concurrency = concurrency
        headers = {"Authorization": f"Bearer {api_key.reveal()}"} if api_key else {}
        self.http = JsonHttpClient(base_url, headers=headers, secrets=[api_key] if api_key else [],
                                   timeout_s=timeout_s, retry=retry,
                                   concurrency=concurrency, transport=transport)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, model={self.model!r}, base_url={self.http.base_url!r})"

    def request_body(self, request: GenerationRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [m.model_dump() for m in request.messages],
            "temperature": request.sampling.temperature,
            "max_tokens": request.sampling.max_tokens,
            "seed": request.seed(),
        }
        schema = request.schema_dict()
        if schema is None:
            return body
        if self.structured == "response_format":
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "kernel", "schema": schema, "strict": False}}
        elif self.structured == "structured_outputs":
            body["structured_outputs"] = {"json": schema}
        elif self.structured == "guided_json":
            body["guided_json"] = schema
        elif self.structured == "nvext":
            body["nvext"] = {"guided_json": schema}
        return body

    def generate(self, request: GenerationRequest) -> Completion:
        start = time.perf_counter()
        reply = self.http.post("chat/completions", self.request_body(request))
        text = dig(reply.data, "choices", 0, "message", "content")
        if not isinstance(text, str):
            refusal = dig(reply.data, "choices", 0, "message", "refusal")
            reason = f"the model refused: {refusal}" if refusal else "no choices[0].message.content"
            raise ProviderError(f"{self.http.url('chat/completions')}: {reason}", code="bad_response")
        tokens_in, tokens_out, source = token_usage(
            request, text, dig(reply.data, "usage", "prompt_tokens"),
            dig(reply.data, "usage", "completion_tokens"))
        return Completion(text=text, provider=self.name, model=self.model,
                          latency_s=time.perf_counter() - start, tokens_in=tokens_in,
                          tokens_out=tokens_out, token_source=source, retries=reply.retries,
                          finish_reason=dig(reply.data, "choices", 0, "finish_reason"),
                          constrained=self.structured if request.json_schema is not None else "none")


def from_options(options: ProviderOptions) -> OpenAICompatibleProvider:
    model = options.model or getenv("OPENAI_MODEL")
    if not model:
        raise config_error("openai needs a model: --model NAME or OPENAI_MODEL")
    key_env = options.api_key_env or "OPENAI_API_KEY"
    return OpenAICompatibleProvider(
        base_url=options.base_url or getenv("OPENAI_BASE_URL") or OPENAI_BASE_URL, model=model,
        api_key=get_secret(key_env), structured=options.structured or "response_format",
        timeout_s=options.timeout_s, retry=options.retry,
        concurrency=options.concurrency, transport=options.transport)
