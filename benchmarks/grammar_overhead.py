"""What grammar-constrained decoding costs per token, against the model's own forward pass.

    python benchmarks/grammar_overhead.py [--tokenizer PATH] [--vocab 128000] [--tokens 256]

The grammar is the one ``kernelgen serve`` decodes with (:func:`kernelgen.model.grammar.compile_grammar`
over kernelgen's schema). The vocabulary is a real Hugging Face tokenizer: ``--tokenizer PATH``
(a model folder, e.g. Llama 3's 128k vocabulary), or by default a byte-level BPE trained here with
``tokenizers`` on this Python's standard library sources (nothing is downloaded; cached in the
temporary directory, nothing is written to the repository), with the GPT-2 pre-tokenizer that
real vocabularies use.

The trace is teacher-forced: the example kernels (``examples/*.json``, re-serialized the way the
grammar generates them) are tokenized, and each token is fed to a fresh ``GrammarMatcher``, timing

- the mask (``fill_next_token_bitmask``: what xgrammar computes per token),
- the whole grammar step as ``kernelgen.model.decoding`` runs it (mask + ``apply_token_bitmask_inplace``
  on the logits + ``accept_token``),

and the same tokens are run through random-weight models of that vocabulary, one decode step
(KV cache) per token. Forward times are this machine's CPU: a tiny model's forward is shorter
than any real model's, so the overhead is also given against a model sized so that its per-token
time is that of real serving (tens of milliseconds). On a CPU, ``apply_token_bitmask_inplace``
walks the whole vocabulary (~0.6 ms at 122k tokens here), more than the mask itself; on a GPU it
is a CUDA kernel, and the mask is computed on the CPU while the GPU runs the forward, so the
ratios here are an upper bound of the slowdown.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kernelgen.model.decoding import cache_keyword  # noqa: E402
from kernelgen.model.grammar import compile_grammar  # noqa: E402
from kernelgen.lang.parse import kernel_to_json, parse_kernel  # noqa: E402
from kernelgen.lang.schema import schema_hash, schema_text  # noqa: E402

EOS = "<|endoftext|>"
TARGET_OVERHEAD = 0.05


@dataclass(frozen=True)
class ModelSize:
    name: str
    hidden: int
    layers: int
    heads: int


# With a 100k+ vocabulary the output layer dominates a small model; on this CPU these two take
# about 10 and 45 ms per token, the range of real serving (an 8B model on one GPU at batch 1
# to larger models and batches), so neither flatters the ratio.
MODEL_SIZES = (ModelSize("tiny (the tests' shape)", 64, 2, 1),
               ModelSize("small", 256, 4, 4))


@dataclass(frozen=True)
class Timing:
    """Seconds per token over a trace."""

    samples: list[float]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def p95(self) -> float:
        return sorted(self.samples)[int(0.95 * (len(self.samples) - 1))]


def stdlib_sources() -> list[Path]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts)


def trained_tokenizer(vocab: int) -> tuple[Any, str]:
    """A byte-level BPE of up to ``vocab`` tokens trained on the standard library's sources,
    cached in the temporary directory; and a line saying what it is."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    sources = stdlib_sources()
    key = hashlib.sha256(f"{vocab}:{sys.version}:{len(sources)}".encode()).hexdigest()[:12]
    cached = Path(tempfile.gettempdir()) / f"kernelgen-bench-bpe-{key}.json"
    if cached.is_file():
        bpe, how = Tokenizer.from_file(str(cached)), "cached"
    else:
        def texts() -> Any:
            for path in sources:
                try:
                    yield path.read_text(encoding="utf-8")
                except (UnicodeDecodeError, OSError):
                    continue

        bpe = Tokenizer(models.BPE())
        bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        bpe.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=[EOS],
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                      show_progress=False)
        start = time.perf_counter()
        bpe.train_from_iterator(texts(), trainer)
        how = f"trained in {time.perf_counter() - start:.0f} s"
        bpe.save(str(cached))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token=EOS)
    return tokenizer, (f"byte-level BPE on {len(sources)} standard-library files ({how}, "
                       f"{cached})")


def kernel_traces() -> list[str]:
    """The example kernels as the grammar writes them: compact, properties in schema order."""
    examples = sorted((ROOT / "examples").glob("*.json"))
    return [kernel_to_json(parse_kernel(path.read_text())) for path in examples]


@dataclass(frozen=True)
class GrammarTimings:
    mask: Timing
    apply: Timing
    accept: Timing
    step: Timing


def time_grammar(grammar: Any, traces: list[list[int]], vocab_size: int) -> GrammarTimings:
    """Per token, each part of the grammar step that kernelgen.model.decoding runs: the mask, its
    application to the logits, the sampled token's acceptance; and their sum."""
    import torch
    import xgrammar as xgr

    bitmask = xgr.allocate_token_bitmask(1, vocab_size)
    logits = torch.zeros(1, vocab_size)
    parts: list[tuple[float, float, float]] = []
    for tokens in traces:
        matcher = xgr.GrammarMatcher(grammar)
        for token in tokens:
            start = time.perf_counter()
            matcher.fill_next_token_bitmask(bitmask)
            filled = time.perf_counter()
            xgr.apply_token_bitmask_inplace(logits, bitmask)
            applied = time.perf_counter()
            accepted = matcher.accept_token(token)
            parts.append((filled - start, applied - filled, time.perf_counter() - applied))
            if not accepted:
                raise SystemExit(f"the grammar rejects token {token}: the trace is not a valid "
                                 "kernel in the grammar's form")
    mask, apply, accept = (Timing([p[i] for p in parts]) for i in range(3))
    return GrammarTimings(mask, apply, accept, Timing([sum(p) for p in parts]))


def time_forward(size: ModelSize, vocab_size: int, tokens: list[int]) -> tuple[Timing, int]:
    """Per token: one decode step (KV cache) of a random model; and its parameter count."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=vocab_size, hidden_size=size.hidden,
                         intermediate_size=4 * size.hidden, num_hidden_layers=size.layers,
                         num_attention_heads=size.heads, num_key_value_heads=size.heads,
                         max_position_embeddings=8192)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    keyword = cache_keyword(model)
    samples: list[float] = []
    with torch.inference_mode():
        outputs = model(input_ids=torch.tensor([tokens[:8]]), use_cache=True)
        cache = outputs[keyword]
        for token in tokens[8:]:
            start = time.perf_counter()
            outputs = model(input_ids=torch.tensor([[token]]), use_cache=True,
                            **{keyword: cache})
            outputs.logits[:, -1].float()
            samples.append(time.perf_counter() - start)
            cache = outputs[keyword]
    return Timing(samples), sum(p.numel() for p in model.parameters())


def fmt(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f} µs" if seconds < 1e-3 else f"{seconds * 1e3:,.2f} ms"


def row(name: str, timing: Timing) -> str:
    return f"  {name:<44}{fmt(timing.mean):>12}{fmt(timing.median):>12}{fmt(timing.p95):>12}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", type=Path, help="a Hugging Face tokenizer or model folder")
    parser.add_argument("--vocab", type=int, default=128_000,
                        help="the trained BPE's vocabulary size (default 128000)")
    parser.add_argument("--tokens", type=int, default=128,
                        help="decode steps timed per model (default 128)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1: on a shared machine more threads wait "
                             "on each other, and the mask is computed on one core too)")
    args = parser.parse_args(argv)

    import torch
    import xgrammar as xgr
    from transformers import AutoTokenizer

    torch.set_num_threads(args.threads)
    if args.tokenizer:
        tokenizer, origin = AutoTokenizer.from_pretrained(args.tokenizer), str(args.tokenizer)
    else:
        tokenizer, origin = trained_tokenizer(args.vocab)
    vocab_size = len(tokenizer)
    start = time.perf_counter()
    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)
    info_s = time.perf_counter() - start
    start = time.perf_counter()
    grammar = compile_grammar(info, schema_text())
    compile_s = time.perf_counter() - start
    traces = [tokenizer(text, add_special_tokens=False).input_ids + [tokenizer.eos_token_id]
              for text in kernel_traces()]
    trace_tokens = sum(len(t) for t in traces)

    grammar_times = time_grammar(grammar, traces, vocab_size)
    flat = [token for trace in traces for token in trace][:args.tokens + 8]
    forwards = [(size, *time_forward(size, vocab_size, flat)) for size in MODEL_SIZES]

    print(f"vocabulary     {vocab_size:,} tokens: {origin}")
    print(f"               TokenizerInfo built in {info_s:.2f} s")
    print(f"grammar        kernelgen schema {schema_hash()} ({len(schema_text()):,} bytes), "
          f"compiled in {compile_s:.2f} s, once per tokenizer and schema hash")
    print(f"trace          {len(traces)} example kernels, {trace_tokens:,} tokens, teacher-forced")
    print(f"machine        CPU, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}: "
          "forward times are this CPU's, not a GPU's")
    print()
    print(f"  {'per token':<44}{'mean':>12}{'median':>12}{'p95':>12}")
    print(row("mask (fill_next_token_bitmask)", grammar_times.mask))
    print(row("apply_token_bitmask_inplace", grammar_times.apply))
    print(row("accept_token", grammar_times.accept))
    print(row("grammar step (the three)", grammar_times.step))
    for size, timing, params in forwards:
        print(row(f"forward, {size.name}, {params / 1e6:,.0f}M params", timing))
    print()
    for size, timing, _ in forwards:
        # Means: the ratio of the total time spent per token.
        mask_ratio = grammar_times.mask.mean / timing.mean
        step_ratio = grammar_times.step.mean / timing.mean
        verdict = "within" if step_ratio <= TARGET_OVERHEAD else "over"
        print(f"  overhead vs {size.name}: mask {100 * mask_ratio:.2f}%, grammar step "
              f"{100 * step_ratio:.2f}% of the forward ({verdict} the "
              f"{100 * TARGET_OVERHEAD:.0f}% target)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
