"""Sampling from a transformers causal LM, constrained by an xgrammar JSON grammar.

A grammar is compiled once per (tokenizer, schema hash) and shared by every request; each
request gets fresh :class:`xgrammar.GrammarMatcher` objects (one per sampled sequence), its own
KV cache and its own ``torch.Generator``. Nothing mutable is shared between requests except the
model's weights, so concurrent requests with the same seed give the same answers as sequential
ones. The model itself is guarded by a lock held for one forward step at a time: requests
interleave token by token, and a short request is not stuck behind a long one.

JSON is generated compact (no free whitespace, separators ``,`` and ``:``): it is the shortest
text for a schema, and a weak model cannot spend its token budget on indentation.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import re
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Literal

from kernelgen.errors import KernelgenError, require

if TYPE_CHECKING:
    import torch
    import xgrammar
    from transformers import PreTrainedModel

FinishReason = Literal["stop", "length"]

COMPACT_SEPARATORS = (",", ":")
_CPP_LOG_PREFIX = re.compile(r"^\[[\d:.]+\] \S+:\d+: ")


class DecodingError(KernelgenError):
    """A request the decoder cannot serve: a schema xgrammar cannot compile, a bad parameter."""

    stage = "decode"


@dataclass(frozen=True)
class Sampling:
    """How to sample: ``temperature == 0`` is greedy; ``seed`` makes sampling reproducible;
    ``max_tokens=None`` runs up to the model's context length (see :func:`token_budget`)."""

    max_tokens: int | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int | None = None
    n: int = 1


@dataclass(frozen=True)
class JsonConstraint:
    """The answer must be JSON valid against ``schema``; ``schema=None`` means any JSON object
    (OpenAI's ``json_object`` response format)."""

    schema: dict[str, Any] | None = None

    @property
    def schema_text(self) -> str:
        """The schema as compact text, property order kept (a grammar generates properties in
        schema order): for kernelgen's schema, exactly :func:`kernelgen.lang.schema.schema_text`,
        so it shares that schema's compiled grammar."""
        return json.dumps({"type": "object"} if self.schema is None else self.schema,
                          separators=COMPACT_SEPARATORS)


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: FinishReason
    completion_tokens: int


@dataclass(frozen=True)
class Generation:
    """One request's result: ``n`` completions of one prompt."""

    prompt_tokens: int
    completions: list[Completion]


class GrammarCache:
    """The grammars of one tokenizer, each compiled once per schema text (hence per schema
    hash) by :func:`kernelgen.model.grammar.compile_grammar`: compact JSON, properties in schema
    order, no properties the schema does not name."""

    def __init__(self, tokenizer_info: xgrammar.TokenizerInfo) -> None:
        self.tokenizer_info = tokenizer_info

    def get(self, constraint: JsonConstraint) -> xgrammar.CompiledGrammar:
        from kernelgen.model.grammar import compile_grammar

        try:
            return compile_grammar(self.tokenizer_info, constraint.schema_text)
        except (RuntimeError, ValueError) as exc:
            # xgrammar's C++ errors start with a time and a source location: keep the reason.
            reason = _CPP_LOG_PREFIX.sub("", str(exc).strip())
            raise DecodingError(f"the JSON schema cannot be compiled to a grammar: {reason}",
                                code="bad_schema") from None


class GrammarLogitsProcessor:
    """A logits processor, in transformers' calling convention, that masks every token the
    grammar forbids, one matcher per batch row.

    Called once per step with all ids so far; from the second call on, it first feeds each
    row's last sampled token to that row's matcher. A row whose matcher has terminated (it
    accepted a stop token) is left alone: its later tokens are padding.
    """

    def __init__(self, grammar: xgrammar.CompiledGrammar, batch_size: int) -> None:
        xgr = require("xgrammar", "grammar-constrained decoding", "llm")
        self._xgr = xgr
        self.matchers = [xgr.GrammarMatcher(grammar) for _ in range(batch_size)]
        self._bitmask = xgr.allocate_token_bitmask(batch_size, grammar.tokenizer_info.vocab_size)
        self._started = False

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if self._started:
            for row, token in enumerate(input_ids[:, -1].tolist()):
                matcher = self.matchers[row]
                if not matcher.is_terminated() and not matcher.accept_token(token):
                    raise DecodingError(f"row {row}: the grammar rejected token {token}, which "
                                        "its own mask allowed", code="grammar_desync")
        self._started = True
        live = [row for row, m in enumerate(self.matchers) if not m.is_terminated()]
        for row in live:
            self.matchers[row].fill_next_token_bitmask(self._bitmask, row)
        if live:
            self._xgr.apply_token_bitmask_inplace(scores, self._bitmask.to(scores.device),
                                                  indices=live)
        return scores


def token_budget(prompt_tokens: int, max_tokens: int | None, context_length: int | None) -> int:
    """The number of tokens a request may generate: what it asks for, within the context."""
    room = None if context_length is None else context_length - prompt_tokens
    if room is not None and room < 1:
        raise DecodingError(f"the prompt has {prompt_tokens} tokens; the model's context is "
                            f"{context_length}", code="context_length_exceeded")
    if max_tokens is None:
        if room is None:
            raise DecodingError("the model does not declare its context length: set max_tokens",
                                code="max_tokens_required")
        return room
    if room is not None and max_tokens > room:
        raise DecodingError(f"max_tokens={max_tokens} with a prompt of {prompt_tokens} tokens "
                            f"exceeds the model's context of {context_length} tokens",
                            code="context_length_exceeded")
    return max_tokens


def cache_keyword(model: PreTrainedModel) -> str:
    """The forward's KV-cache argument: transformers 5 renamed ``past_key_values`` to ``cache``
    (the old name still works there, with a deprecation warning per call)."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _sample_next(scores: torch.Tensor, sampling: Sampling,
                 generator: torch.Generator) -> torch.Tensor:
    import torch
    from transformers import TemperatureLogitsWarper, TopPLogitsWarper

    if sampling.temperature == 0:
        return scores.argmax(dim=-1)
    if sampling.temperature != 1.0:
        scores = TemperatureLogitsWarper(sampling.temperature)(None, scores)
    if sampling.top_p < 1.0:
        scores = TopPLogitsWarper(sampling.top_p)(None, scores)
    probs = torch.softmax(scores, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(1)


def generate(model: PreTrainedModel, prompt_ids: list[int], sampling: Sampling,
             stop_ids: set[int], decode: Callable[[list[int]], str],
             grammar: xgrammar.CompiledGrammar | None = None,
             model_lock: ContextManager[Any] | None = None) -> list[Completion]:
    """Sample ``sampling.n`` continuations of ``prompt_ids``, as one batch.

    ``sampling.max_tokens`` must be resolved (:func:`token_budget`). The rows share the prompt,
    so the batch needs no padding. A row ends at a stop token (not part of its text:
    ``finish_reason="stop"``) or after ``max_tokens`` (``"length"``: under a
    grammar, an unfinished document). ``decode`` turns token ids into text; ``model_lock`` is
    held around each forward step.
    """
    import torch

    if sampling.max_tokens is None:
        raise DecodingError("max_tokens is unresolved: call token_budget() first",
                            code="max_tokens_required")
    lock = model_lock if model_lock is not None else contextlib.nullcontext()
    n = sampling.n
    device = model.device
    ids = torch.tensor([prompt_ids] * n, dtype=torch.long, device=device)
    grammar_mask = GrammarLogitsProcessor(grammar, n) if grammar is not None else None
    generator = torch.Generator(device=device)
    generator.manual_seed(sampling.seed if sampling.seed is not None else secrets.randbits(63))
    keyword = cache_keyword(model)
    cache = None
    step_input = ids
    tokens: list[list[int]] = [[] for _ in range(n)]
    finished: list[FinishReason | None] = [None] * n
    for _ in range(sampling.max_tokens):
        with torch.inference_mode():
            with lock:
                outputs = model(input_ids=step_input, use_cache=True, **{keyword: cache})
            cache = outputs[keyword]
            scores = outputs.logits[:, -1, :].float()
            if grammar_mask is not None:
                scores = grammar_mask(ids, scores)
            next_tokens = _sample_next(scores, sampling, generator)
        for row, token in enumerate(next_tokens.tolist()):
            if finished[row] is None:
                if token in stop_ids:
                    finished[row] = "stop"
                else:
                    tokens[row].append(token)
        if all(finished):
            break
        step_input = next_tokens[:, None]
        ids = torch.cat([ids, step_input], dim=1)
    return [Completion(text=decode(row_tokens), finish_reason=reason or "length",
                       completion_tokens=len(row_tokens))
            for row_tokens, reason in zip(tokens, finished)]
