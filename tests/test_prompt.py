"""The prompt: generated from the language's own definitions, with examples that never give a
task's answer away, honest token counts and repair prompts that carry the diagnostics."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernelgen.lang import nodes as L
from kernelgen.errors import Diagnostic
from kernelgen.model.prompt import (ANSWER_FORMAT, EXAMPLES_DIR, SYSTEM_PROMPT_TOKEN_BUDGET, Example, Message,
                              bytes_estimate, count_tokens, language_reference, load_examples, repair_messages,
                              select_examples, system_prompt, task_messages)
from kernelgen.lang.rules import RULES
from kernelgen.lang.schema import kernel_schema


def test_reference_names_every_node_field_and_op() -> None:
    reference = language_reference()
    defs = kernel_schema()["$defs"]
    shared = {"Expr", "Stmt", "Name", "Dim"}
    for name, node in defs.items():
        if name in shared:
            continue
        assert f"\n{name} {{" in reference, name
        for field in node["properties"]:
            assert f'"{field}"' in reference, (name, field)
    for op in (*L.UNARY_OPS, *L.BINARY_OPS, *L.REDUCE_OPS, "load", "dot", "for", "let", "store"):
        assert f'"{op}"' in reference, op
    for field in kernel_schema()["properties"]:
        assert f'"{field}"' in reference.split("## Statements")[0], field


def test_reference_carries_docstrings_rules_and_semantics() -> None:
    reference = language_reference()
    for code, meaning in RULES.items():
        assert f"{code}: {meaning}" in reference
    assert " ".join(L.Carry.__doc__.split()).replace("``", "`") in reference
    assert "truncates toward zero" in reference  # a node's semantics
    assert "leading 1s are added" in reference  # the checker's typing rules
    assert "(a + b - 1) idiv b" in reference  # the host expressions
    assert "intervals forget correlations" in reference  # what the bounds check proves
    assert "``" not in reference


def test_reference_marks_optional_fields_and_defaults() -> None:
    reference = language_reference()
    assert '"mask"?:E' in reference and '"ptr":E' in reference
    assert '"num_warps"?:1|2|4|8|16=4' in reference
    assert '"grid":[E]{1..3}' in reference


def example(name: str, document: Any) -> Example:
    return Example(name, json.dumps(document, separators=(",", ":")), document)


def test_examples_leave_out_the_task_and_its_golden_answer() -> None:
    vector_add = json.loads((EXAMPLES_DIR / "vector_add.json").read_text())
    softmax = example("softmax", {"name": "softmax", "body": []})
    twin = example("adder", {**vector_add, "num_warps": 4})  # the golden AST with a default spelled out
    other = example("vadd", {"name": "vadd", "body": [2]})
    chosen = select_examples([softmax, twin, other], exclude_names=["softmax"], exclude_document=vector_add)
    assert chosen == [other]


def test_examples_stop_at_the_token_budget() -> None:
    examples = [example(f"e{i}", {"name": f"e{i}", "pad": "x" * 400}) for i in range(5)]
    cost = bytes_estimate(f"## e0\n{examples[0].text}\n")
    assert len(select_examples(examples, budget=2 * cost)) == 2
    assert select_examples(examples, budget=cost - 1) == []


def test_examples_fill_what_the_reference_leaves_of_the_budget() -> None:
    """The manual comes first and the examples take the rest: the default prompt still shows
    at least three (a manual that crowds them out should be shortened, not the examples)."""
    chosen = select_examples(load_examples())
    assert len(chosen) >= 3
    shown = system_prompt(chosen)
    assert bytes_estimate(shown) <= SYSTEM_PROMPT_TOKEN_BUDGET
    left_out = [e for e in load_examples() if e not in chosen]
    if left_out:
        assert bytes_estimate(system_prompt([*chosen, left_out[0]])) > SYSTEM_PROMPT_TOKEN_BUDGET


@pytest.mark.skipif(not EXAMPLES_DIR.is_dir(), reason="no examples/ folder in this checkout")
def test_repository_examples_are_loaded_compact_smallest_first() -> None:
    examples = load_examples()
    assert examples and [len(e.text) for e in examples] == sorted(len(e.text) for e in examples)
    for e in examples:
        assert e.text == json.dumps(json.loads((EXAMPLES_DIR / f"{e.name}.json").read_text()),
                                    separators=(",", ":"))
    system = task_messages("Add two vectors.", task_id=examples[0].name)[0].content
    assert f"## {examples[0].name}\n" not in system
    assert f"## {examples[1].name}\n{examples[1].text}" in system


def test_task_messages_are_system_then_user() -> None:
    messages = task_messages("  Task relu: y = max(x, 0).\n", examples=[])
    assert [m.role for m in messages] == ["system", "user"]
    assert messages[1].content == "Task relu: y = max(x, 0)."
    assert messages[0].content == system_prompt([]) and messages[0].content.endswith(ANSWER_FORMAT)


def test_token_count_with_a_real_tokenizer_is_exact() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    words = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0, "add": 1, "mul": 2}, unk_token="[UNK]"))
    words.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=words, unk_token="[UNK]")
    counted = count_tokens("add mul add other", tokenizer)
    assert counted.count == 4 and counted.method.startswith("tokenizer:")


@given(st.text(max_size=200))
def test_token_estimate_says_how_it_was_made(text: str) -> None:
    counted = count_tokens(text)
    assert counted.method.startswith("tiktoken:") or counted.method == "bytes/4"
    if counted.method == "bytes/4":
        assert counted.count == -(-len(text.encode("utf-8")) // 4)


def test_repair_prompt_shows_the_answer_and_every_diagnostic() -> None:
    task = task_messages("Task relu: y = max(x, 0).", examples=[])
    diagnostics = [Diagnostic("/body/2/value", "dtype_mismatch", "f32 meets i32: cast one"),
                   Diagnostic("", "output_not_written", "output 'y' is never stored")]
    answer = '{"name":"relu"}'
    repaired = repair_messages(task, answer, diagnostics)
    assert repaired[0] == task[0] and len(repaired) == 2
    text = repaired[1].content
    assert text.startswith(task[1].content) and answer in text
    assert "- /body/2/value: dtype_mismatch: f32 meets i32: cast one" in text
    assert "- /: output_not_written: output 'y' is never stored" in text
    assert "whole document" in text


def test_messages_are_plain_data() -> None:
    message = Message(role="user", content="hi")
    assert Message.model_validate(message.model_dump()) == message
    with pytest.raises(ValueError):
        Message(role="tool", content="x")


def test_the_system_prompt_stays_within_its_token_budget(capsys: pytest.CaptureFixture[str]) -> None:
    system = task_messages("")[0].content
    size = bytes_estimate(system)
    with capsys.disabled():
        print(f"\nsystem prompt: {size} tokens (bytes/4) of a budget of {SYSTEM_PROMPT_TOKEN_BUDGET}")
    assert size <= SYSTEM_PROMPT_TOKEN_BUDGET
    assert bytes_estimate("abcde") == 2 and count_tokens("abcde").count >= 1


def test_the_prompt_command_prints_the_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    from kernelgen.cli import main

    assert main(["prompt", "--tokens"]) == 0
    out = capsys.readouterr().out
    assert f"system prompt: {bytes_estimate(task_messages('')[0].content)} tokens (bytes/4)" in out
    assert f"budget of the system prompt: {SYSTEM_PROMPT_TOKEN_BUDGET}" in out
    assert main(["prompt"]) == 0
    assert capsys.readouterr().out.rstrip("\n") == task_messages("")[0].content
