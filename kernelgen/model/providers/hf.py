"""An in-process Hugging Face transformers model, constrained by the kernel grammar.

Every decoding step is masked by xgrammar's logits processor with the grammar of
:func:`kernelgen.model.grammar.compile_grammar`, so the answer follows the schema token by token (it
can still be cut short by ``max_tokens``; ``finish_reason`` then says ``length``). The prompt
goes through the tokenizer's chat template when it has one. Token counts are exact: they come
from the model's own tokenizer.

transformers, torch and xgrammar are imported when a provider is made.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from kernelgen.errors import require
from kernelgen.model.grammar import compile_grammar
from kernelgen.model.providers.base import Completion, GenerationRequest, ProviderOptions, config_error


class HFProvider:
    name = "hf"
    concurrency = 1
    records = True

    def __init__(self, model: Any, tokenizer: Any, *, model_name: str | None = None,
                 constrained: bool = True) -> None:
        self._xgr = require("xgrammar", "the hf provider", "serve")
        self._torch = require("torch", "the hf provider", "serve")
        self.hf_model = model
        self.tokenizer = tokenizer
        self.model = model_name or getattr(model, "name_or_path", "") or type(model).__name__
        self.constrained = constrained
        # The model's logits can be wider than the tokenizer's vocabulary (padding rows).
        vocab_size = model.get_output_embeddings().weight.shape[0]
        self.tokenizer_info = self._xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)
        self._lock = threading.Lock()

    @classmethod
    def from_pretrained(cls, path: str, *, constrained: bool = True) -> HFProvider:
        transformers = require("transformers", "the hf provider", "serve")
        torch = require("torch", "the hf provider", "serve")
        tokenizer = transformers.AutoTokenizer.from_pretrained(path)
        model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype="auto")
        if torch.cuda.is_available():
            model = model.to("cuda")
        return cls(model.eval(), tokenizer, model_name=path, constrained=constrained)

    def __repr__(self) -> str:
        return f"HFProvider(model={self.model!r}, constrained={self.constrained})"

    def prompt(self, request: GenerationRequest) -> str:
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template([m.model_dump() for m in request.messages],
                                                      tokenize=False, add_generation_prompt=True)
        return request.prompt_text()

    def generate(self, request: GenerationRequest) -> Completion:
        torch = self._torch
        start = time.perf_counter()
        inputs = self.tokenizer(self.prompt(request), return_tensors="pt").to(self.hf_model.device)
        constrained = self.constrained and request.json_schema is not None
        processors = []
        if constrained:
            grammar = compile_grammar(self.tokenizer_info, request.json_schema)
            processors.append(self._xgr.contrib.hf.LogitsProcessor(grammar))
        sampling = request.sampling
        options: dict[str, Any] = {"max_new_tokens": sampling.max_tokens,
                                   "do_sample": sampling.temperature > 0,
                                   "logits_processor": processors,
                                   "pad_token_id": self.tokenizer.pad_token_id or self.tokenizer.eos_token_id}
        if sampling.temperature > 0:
            options.update(temperature=sampling.temperature, top_k=0, top_p=1.0)
        device = self.hf_model.device
        with self._lock, torch.random.fork_rng(devices=[device.index or 0] if device.type == "cuda" else []):
            torch.manual_seed(request.seed())
            with torch.no_grad():
                output = self.hf_model.generate(**inputs, **options)
        prompt_length = inputs["input_ids"].shape[1]
        generated = output[0, prompt_length:].tolist()
        stops = set(self.tokenizer_info.stop_token_ids)
        stopped = bool(generated) and generated[-1] in stops
        text = self.tokenizer.decode(generated[:-1] if stopped else generated, skip_special_tokens=True)
        return Completion(text=text, provider=self.name, model=self.model,
                          latency_s=time.perf_counter() - start, tokens_in=prompt_length,
                          tokens_out=len(generated), token_source=f"tokenizer:{self.model}",
                          finish_reason="stop" if stopped else "length",
                          constrained="xgrammar" if constrained else "none")


def from_options(options: ProviderOptions) -> HFProvider:
    if not options.model:
        raise config_error("hf needs a model: --model PATH (a local transformers checkpoint)")
    return HFProvider.from_pretrained(options.model, constrained=options.structured != "none")
