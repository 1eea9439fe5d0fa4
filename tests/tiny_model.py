"""A tiny random-weight causal LM and its tokenizer, built offline for the server's tests.

Nothing is downloaded. The tokenizer is a byte-level BPE trained here with ``tokenizers`` on a
small corpus (kernelgen's schema and example kernels): its alphabet is all 256 bytes, so every
text, every JSON document included, can be written; its merges (no pre-tokenizer regex) cross
punctuation, as JSON tokens do in real vocabularies (``","``, ``"},{"``). It is wrapped as a
``PreTrainedTokenizerFast`` with an end-of-sequence token and a chat template. The model is a
Phi architecture (2 layers, hidden size 64) with random weights.

Random weights and termination. A random transformer's logits are nearly uniform over the
vocabulary, so under the grammar a string ends only when one of the few tokens starting with
``"`` is drawn among all the allowed ones, and an array or an object goes on as often as it
closes. Measured with the tests' prompt over 30 seeds, such a model's constrained kernels took a
median of ~990 tokens and 4 of 30 were unfinished after 2,048 (the finished ones all valid):
slow, and a budget no test can afford. Any trained model has learned that what it opens, it
closes; the random one gets that, and only that, as a prior: ``CLOSE_BIAS`` nats on every token
that starts with ``"``, ``]`` or ``}`` (Phi's output layer has a bias, so the prior lives in the
checkpoint and the server has no test-only path). It knows nothing of the schema or of JSON
validity. With it, 40 of 40 constrained kernels completed in 56-368 tokens (median 131), and
unconstrained the same model wrote 0 valid kernels in 16 (10 ran to the 1,024-token limit).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerFast

CLOSE_BIAS = 3.0
CLOSERS = ('"', "]", "}")
EOS = "<|endoftext|>"
ROLE_TOKENS = ["<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]
CHAT_TEMPLATE = ("{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}"
                 "<|end|>\n{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}")


def train_tokenizer(corpus: Iterable[str], vocab_size: int) -> PreTrainedTokenizerFast:
    """A byte-level BPE of ``vocab_size`` tokens trained on ``corpus``, as a transformers
    tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOS, *ROLE_TOKENS],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    bpe.train_from_iterator(corpus, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token=EOS, pad_token=EOS,
                                   chat_template=CHAT_TEMPLATE)


def close_bias(tokenizer: PreTrainedTokenizerFast, strength: float = CLOSE_BIAS) -> torch.Tensor:
    """``strength`` for every ordinary token that starts with a closing character, else 0."""
    import torch

    bias = torch.zeros(len(tokenizer))
    special = set(tokenizer.all_special_ids)
    # Byte-level BPE writes printable ASCII as itself, so a token's text starts as its string.
    for token, index in tokenizer.get_vocab().items():
        if index not in special and token.startswith(CLOSERS):
            bias[index] = strength
    return bias


def build_tiny_model(folder: Path, corpus: Iterable[str], *, vocab_size: int = 512,
                     hidden_size: int = 64, heads: int = 4, seed: int = 0) -> Path:
    """Build and save the model and its tokenizer in ``folder`` (a Hugging Face model folder)."""
    import torch
    from transformers import PhiConfig, PhiForCausalLM

    tokenizer = train_tokenizer(corpus, vocab_size)
    eos = tokenizer.eos_token_id
    config = PhiConfig(vocab_size=len(tokenizer), hidden_size=hidden_size,
                       intermediate_size=2 * hidden_size, num_hidden_layers=2,
                       num_attention_heads=heads,
                       max_position_embeddings=32768, bos_token_id=eos, eos_token_id=eos,
                       pad_token_id=eos)
    torch.manual_seed(seed)
    model = PhiForCausalLM(config).eval()
    with torch.no_grad():
        model.lm_head.bias.copy_(close_bias(tokenizer))
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
