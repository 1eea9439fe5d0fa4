"""The repair loop against a 'model' on loopback that fixes its answer once it is shown the
diagnostics, and the unbiased pass@k estimator."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernelgen.model.generation import GenerationCache
from kernelgen.task.metrics import pass_at_k
from kernelgen.model.repair import check_answer, generate_with_repair
from test_providers import Answer, ScriptedServer, Seen, chat_completion, example_text, make_request, openai_at

GOOD = example_text("vector_add")
# Stores into the input x: valid JSON, a schema-valid AST, rejected by the checker.
STORES_INTO_INPUT = GOOD.replace('"ptr":{"op":"add","lhs":"out"', '"ptr":{"op":"add","lhs":"x"')
TRUNCATED = GOOD[:150]


def model_that_learns(*wrong: str):
    """Answers the wrong answers in turn, then the good one; but only moves on when the prompt
    shows the previous answer's diagnostics, as a model reading its repair prompt would."""
    def script(seen: Seen, index: int) -> Answer:
        repairing = "# What is wrong with it" in seen.body["messages"][-1]["content"]
        step = index if repairing else 0
        return Answer(200, chat_completion(wrong[step] if step < len(wrong) else GOOD))

    return script


def test_check_answer_finds_schema_and_semantic_errors() -> None:
    assert check_answer(GOOD) is None
    assert [d.code for d in check_answer(TRUNCATED)][0] == "grammar"
    assert "store_to_input" in [d.code for d in check_answer(STORES_INTO_INPUT)]


def test_diagnostics_go_back_and_the_repaired_answer_passes() -> None:
    with ScriptedServer(model_that_learns(TRUNCATED, STORES_INTO_INPUT)) as server:
        result = generate_with_repair(openai_at(server), make_request(), check_answer, rounds=3)
    assert [r.passed for r in result.rounds] == [False, False, True]
    assert result.passed and result.text == GOOD and result.repair_rounds == 2
    assert result.rounds[0].diagnostics[0].code == "grammar"
    assert "store_to_input" in [d.code for d in result.rounds[1].diagnostics]
    second_prompt = server.seen[1].body["messages"][-1]["content"]
    assert second_prompt.startswith("Write vector add.") and TRUNCATED in second_prompt
    first = result.rounds[0].diagnostics[0]
    assert f"- {first.path or '/'}: grammar: {first.message}" in second_prompt
    third_prompt = server.seen[2].body["messages"][-1]["content"]
    assert STORES_INTO_INPUT in third_prompt and ": grammar:" not in third_prompt
    assert server.seen[2].body["messages"][0] == server.seen[0].body["messages"][0]
    assert result.tokens_in == 3 * 321 and result.tokens_out == 3 * 123
    assert result.latency_s == pytest.approx(sum(r.record.completion.latency_s for r in result.rounds))
    summary = json.loads(json.dumps(result.to_dict()))
    assert summary["repair_rounds"] == 2 and summary["rounds"][1]["diagnostics"][0]["code"]


def test_repairs_stop_after_the_bounded_rounds() -> None:
    with ScriptedServer(lambda seen, i: Answer(200, chat_completion(STORES_INTO_INPUT))) as server:
        result = generate_with_repair(openai_at(server), make_request(), check_answer, rounds=2)
    assert len(server.seen) == 3 and len(result.rounds) == 3 and not result.passed
    assert result.text == STORES_INTO_INPUT


def test_a_passing_first_answer_needs_no_repair() -> None:
    with ScriptedServer(model_that_learns()) as server:
        result = generate_with_repair(openai_at(server), make_request(), check_answer, rounds=5)
    assert len(server.seen) == 1 and result.passed and result.repair_rounds == 0


def test_repair_rounds_are_cached_like_any_generation(tmp_path: Path) -> None:
    cache = GenerationCache(tmp_path)
    with ScriptedServer(model_that_learns(TRUNCATED)) as server:
        first = generate_with_repair(openai_at(server), make_request(), check_answer, 2, cache)
        again = generate_with_repair(openai_at(server), make_request(), check_answer, 2, cache)
    assert len(server.seen) == 2
    assert [r.record.cached for r in again.rounds] == [True, True]
    assert [r.record.text for r in again.rounds] == [r.record.text for r in first.rounds]


# ---------------------------------------------------------------------------------------------
# pass@k


def test_pass_at_k_known_values() -> None:
    assert pass_at_k(5, 1, 1) == pytest.approx(0.2)
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - math.comb(7, 5) / math.comb(10, 5))
    assert pass_at_k(4, 0, 2) == 0.0
    assert pass_at_k(4, 4, 2) == 1.0
    assert pass_at_k(4, 3, 2) == 1.0  # every pair of the four holds a pass


@given(n=st.integers(1, 200), data=st.data())
def test_pass_at_k_is_the_exact_combinatorial_estimate(n: int, data: st.DataObject) -> None:
    c = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    exact = 1 - math.comb(n - c, k) / math.comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-9)
    if k < n:
        assert pass_at_k(n, c, k + 1) >= pass_at_k(n, c, k) - 1e-12


@pytest.mark.parametrize("n, c, k", [(3, 4, 1), (3, -1, 1), (3, 1, 0), (3, 1, 4)])
def test_pass_at_k_rejects_impossible_counts(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
