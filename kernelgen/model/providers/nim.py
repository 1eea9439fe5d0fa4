"""NVIDIA NIM (build.nvidia.com's hosted API or a self-hosted NIM): OpenAI-compatible.

The schema travels in NIM's documented extension, ``{"nvext": {"guided_json": schema}}``
(``--structured`` picks another field, e.g. ``guided_json`` for a recent self-hosted NIM).
The key is ``NVIDIA_API_KEY`` (or the variable ``--api-key-env`` names); the base URL
``https://integrate.api.nvidia.com/v1`` unless given.
"""

from __future__ import annotations

from kernelgen.env import get_secret
from kernelgen.model.providers.base import ProviderOptions, config_error
from kernelgen.model.providers.openai import OpenAICompatibleProvider

NIM_BASE_URL = "https://integrate.api.nvidia.com/v1"


def from_options(options: ProviderOptions) -> OpenAICompatibleProvider:
    if not options.model:
        raise config_error("nim needs a model: --model NAME (e.g. meta/llama-3.3-70b-instruct)")
    key_env = options.api_key_env or "NVIDIA_API_KEY"
    key = get_secret(key_env)
    base_url = options.base_url or NIM_BASE_URL
    if key is None and base_url == NIM_BASE_URL:
        raise config_error(f"nim needs an API key in {key_env}")
    return OpenAICompatibleProvider(
        name="nim", base_url=base_url, model=options.model, api_key=key,
        structured=options.structured or "nvext", timeout_s=options.timeout_s,
        retry=options.retry, concurrency=options.concurrency,
        transport=options.transport)
