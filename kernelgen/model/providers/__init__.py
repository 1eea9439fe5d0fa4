"""Model providers behind one protocol (:class:`~kernelgen.model.providers.base.Provider`).

A provider is named by a spec, ``NAME`` or ``NAME:ARG``: for ``replay`` the argument is the
directory of records, for the others it is the model (``ollama:qwen2.5-coder:7b``). Each
provider is a module of its own, imported only when it is used.
"""

from __future__ import annotations

import dataclasses
import importlib

from kernelgen.env import default_provider_spec
from kernelgen.model.providers.base import (Completion, GenerationRequest, Provider, ProviderError,
                                      ProviderOptions, Sampling, config_error)

PROVIDERS: dict[str, str] = {
    "openai": "kernelgen.model.providers.openai",
    "nim": "kernelgen.model.providers.nim",
    "ollama": "kernelgen.model.providers.ollama",
    "gemini": "kernelgen.model.providers.gemini",
    "remote": "kernelgen.model.providers.remote",
    "hf": "kernelgen.model.providers.hf",
    "reference": "kernelgen.model.providers.reference",
    "replay": "kernelgen.model.providers.replay",
}


def make_provider(spec: str | None, options: ProviderOptions = ProviderOptions()) -> Provider:
    """The provider a spec names; without one, the one the environment selects
    (``USE_REMOTE_MODEL``, then a NIM or Gemini key)."""
    spec = spec or default_provider_spec()
    if not spec:
        raise config_error("no model provider: pass --llm (" + ", ".join(PROVIDERS) + ") or set "
                           "USE_REMOTE_MODEL=1 with LLM_API_URL")
    name, _, argument = spec.partition(":")
    if name not in PROVIDERS:
        raise config_error(f"unknown provider {name!r}; one of {', '.join(PROVIDERS)}")
    if name == "replay":
        if not argument:
            raise config_error("replay needs the directory of recorded generations: --llm replay:DIR")
        from kernelgen.model.providers.replay import ReplayProvider

        return ReplayProvider(argument, options.model)
    if argument:
        options = dataclasses.replace(options, model=argument)
    return importlib.import_module(PROVIDERS[name]).from_options(options)


__all__ = ["PROVIDERS", "Completion", "GenerationRequest", "Provider", "ProviderError",
           "ProviderOptions", "Sampling", "make_provider"]
