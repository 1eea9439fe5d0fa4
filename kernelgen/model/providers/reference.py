"""The task's golden AST as the answer: runs the whole harness without a model (and shows what
a perfect model would score)."""

from __future__ import annotations

import time

from kernelgen.model.providers.base import Completion, GenerationRequest, ProviderError, ProviderOptions, token_usage


class ReferenceProvider:
    name = "reference"
    model = "golden"
    concurrency = 64
    records = False

    def generate(self, request: GenerationRequest) -> Completion:
        start = time.perf_counter()
        if request.reference is None:
            raise ProviderError("the reference provider answers with a task's golden AST, and "
                                "this request has none (use --task ID)", code="config")
        tokens_in, tokens_out, source = token_usage(request, request.reference)
        return Completion(text=request.reference, provider=self.name, model=self.model,
                          latency_s=time.perf_counter() - start, tokens_in=tokens_in,
                          tokens_out=tokens_out, token_source=source, finish_reason="stop",
                          constrained="none")


def from_options(options: ProviderOptions) -> ReferenceProvider:
    return ReferenceProvider()
