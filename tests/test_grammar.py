"""The kernel grammar: post-validation of answers, and the decoding grammar's agreement with the
Pydantic model (every document it lets a model write is a valid kernel AST)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelgen.errors import SchemaError
from kernelgen.model.grammar import compile_grammar, match_prefix, pointer_at, validate_answer
from kernelgen.lang.parse import kernel_to_json, parse_kernel

xgr = pytest.importorskip("xgrammar")

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.json"))
VECTOR_ADD = json.dumps(json.loads((Path(__file__).resolve().parent.parent / "examples" / "vector_add.json")
                                   .read_text()), separators=(",", ":"))


def byte_tokenizer_info() -> Any:
    """A vocabulary of the 256 bytes and a stop token: the grammar alone decides every step."""
    return xgr.TokenizerInfo([bytes([b]) for b in range(256)] + [b"</s>"], stop_token_ids=[256])


BYTE_INFO = byte_tokenizer_info()


def rejection(text: str) -> SchemaError:
    with pytest.raises(SchemaError) as info:
        validate_answer(text)
    assert info.value.diagnostics[0].code == "grammar"
    return info.value


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_are_valid_answers(path: Path) -> None:
    text = path.read_text()
    assert validate_answer(text) == parse_kernel(text)
    assert validate_answer("\n  " + text + "\n\n") == parse_kernel(text)


def shuffled(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [shuffled(v, rng) for v in value]
    return value


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), indent=st.sampled_from([None, 0, 1, 4]))
def test_key_order_and_layout_do_not_matter(seed: int, indent: int | None) -> None:
    document = shuffled(json.loads(VECTOR_ADD), random.Random(seed))
    text = json.dumps(document, indent=indent)
    assert validate_answer(text) == parse_kernel(VECTOR_ADD)


@settings(max_examples=40, deadline=None)
@given(cut=st.integers(0, len(VECTOR_ADD.rstrip()) - 1))
def test_every_truncation_is_rejected_where_it_ends(cut: int) -> None:
    text = VECTOR_ADD[:cut]
    match = match_prefix(text)
    assert match.length == len(text.rstrip()) and not match.complete
    error = rejection(text)
    first = error.diagnostics[0]
    assert (f"ends at character {len(text.rstrip())}" in first.message if text.strip()
            else "empty" in first.message)
    assert first.path == pointer_at(text)


def test_truncation_names_the_json_path() -> None:
    text = VECTOR_ADD[:VECTOR_ADD.index('"program_id"') + 4]
    assert rejection(text).diagnostics[0].path == "/body/0/value/lhs/op"


def test_unknown_op_is_rejected_at_its_character_with_its_path() -> None:
    text = VECTOR_ADD.replace('"op":"cdiv"', '"op":"zeta"')
    error = rejection(text)
    position = text.index('"op":"zeta"') + len('"op":"')
    grammar, *rest = error.diagnostics
    assert f"character {position} " in grammar.message and grammar.path == "/grid/0/op"
    assert any(d.code == "unknown_op" and d.path == "/grid/0/op" for d in rest)


def test_a_fractional_meta_value_is_rejected_by_the_grammar_and_the_model() -> None:
    text = VECTOR_ADD.replace('"value":1024', '"value":1024.5')
    grammar, *rest = rejection(text).diagnostics
    assert grammar.path == "/meta/0/value"
    assert f"character {text.index('.5')} " in grammar.message
    assert [d.path for d in rest] == ["/meta/0/value"]


@pytest.mark.parametrize("text, words", [
    ("```json\n" + VECTOR_ADD + "\n```", "character 0 "),
    ("Here is the kernel: " + VECTOR_ADD, "character 0 "),
    (VECTOR_ADD + "\nI hope this helps.", "the answer goes on"),
    (VECTOR_ADD + VECTOR_ADD, "the answer goes on"),
    ("", "empty"),
    ("[]", "character 0 "),
])
def test_prose_fences_and_extra_documents_are_rejected(text: str, words: str) -> None:
    assert words in rejection(text).diagnostics[0].message


def test_text_that_is_not_utf8_is_a_schema_error() -> None:
    with pytest.raises(SchemaError) as info:
        validate_answer('{"name":"\ud800"}')
    assert info.value.diagnostics[0].code == "json_syntax"


@pytest.mark.parametrize("prefix, pointer", [
    ("", ""),
    ('{"a":', "/a"),
    ('{"a":[1,2,{"b":"x', "/a/2/b"),
    ('{"a":[1,2],"c', ""),
    ('{"a/b":{"~":[', "/a~1b/~0/0"),
    ('{"s":"}]\\"{","t":[[0,[', "/t/0/1/0"),
])
def test_pointer_at_follows_the_document(prefix: str, pointer: str) -> None:
    assert pointer_at(prefix) == pointer


# ---------------------------------------------------------------------------------------------
# The decoding grammar


def test_decoding_grammar_is_compiled_once_per_tokenizer() -> None:
    assert compile_grammar(BYTE_INFO) is compile_grammar(BYTE_INFO)
    other = byte_tokenizer_info()
    assert compile_grammar(other) is not compile_grammar(BYTE_INFO)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_decoding_grammar_accepts_the_canonical_serialization(path: Path) -> None:
    matcher = xgr.GrammarMatcher(compile_grammar(BYTE_INFO))
    text = kernel_to_json(parse_kernel(path.read_text()))
    assert matcher.accept_string(text)
    assert matcher.accept_token(256) and matcher.is_terminated()


def random_walk(rng: random.Random, max_steps: int = 4000) -> str | None:
    """A document written one byte at a time by a 'model' that picks among the bytes the
    decoding grammar allows (leaning towards closing what is open, so that walks end)."""
    matcher = xgr.GrammarMatcher(compile_grammar(BYTE_INFO))
    bitmask = xgr.allocate_token_bitmask(1, 257)
    out = bytearray()
    for _ in range(max_steps):
        matcher.fill_next_token_bitmask(bitmask)
        words = bitmask[0].tolist()
        allowed = [t for t in range(257) if (words[t // 32] >> (t % 32)) & 1]
        if 256 in allowed:
            return out.decode("utf-8")
        closing = [t for t in allowed if t in b"]}\"0123456789"]
        token = rng.choice(closing if closing and rng.random() < 0.7 else allowed)
        assert matcher.accept_token(token)
        out.append(token)
    return None


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_whatever_the_decoding_grammar_allows_is_a_kernel_ast(seed: int) -> None:
    text = random_walk(random.Random(seed))
    if text is not None:
        assert validate_answer(text) == parse_kernel(text)
