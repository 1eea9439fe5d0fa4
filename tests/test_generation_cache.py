"""The generation cache and replay: keys, atomic records shared by processes, bit-for-bit replay,
and ``kernelgen generate`` end to end."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelgen.cli import main
from kernelgen.model.generation import (CacheError, GenerationCache, content_key, generate, generate_samples,
                                  generation_key, make_record, read_record)
from kernelgen.model.prompt import Message
from kernelgen.model.providers import make_provider
from kernelgen.model.providers.base import Completion, ProviderError, Sampling
from kernelgen.model.providers.replay import ReplayProvider
from test_providers import Answer, ScriptedServer, Seen, chat_completion, example_text, make_request, openai_at


def completion(text: str, provider: str = "openai", model: str = "test-model") -> Completion:
    return Completion(text=text, provider=provider, model=model, latency_s=0.5, tokens_in=10,
                      tokens_out=20, token_source="server", constrained="response_format")


def numbered_answers(seen: Seen, index: int) -> Answer:
    """A 'model' whose every answer differs: a second call for one key would show."""
    return Answer(200, chat_completion(json.dumps({"answer": index})), delay_s=0.3)


# ---------------------------------------------------------------------------------------------
# Keys


changes = {
    "messages": (Message(role="user", content="something else"),),
    "json_schema": '{"type":"object"}',
    "sampling": Sampling(temperature=0.5, max_tokens=512, seed=8),
    "sample_index": 1,
}


@pytest.mark.parametrize("field", sorted(changes))
def test_every_part_of_the_request_changes_the_key(field: str) -> None:
    request = make_request()
    changed = request.model_copy(update={field: changes[field]})
    assert content_key(changed) != content_key(request)
    assert generation_key("openai", "m", changed) != generation_key("openai", "m", request)


def test_provider_and_model_change_the_key_but_not_the_content_key() -> None:
    request = make_request()
    keys = {generation_key(p, m, request) for p in ("openai", "nim") for m in ("a", "b")}
    assert len(keys) == 4
    assert content_key(request) == content_key(make_request())


def test_the_golden_answer_is_not_part_of_the_key() -> None:
    assert content_key(make_request(reference="{}")) == content_key(make_request())


@settings(max_examples=50, deadline=None)
@given(text=st.text(st.characters(blacklist_categories=())), seed=st.none() | st.integers(-2**40, 2**40))
def test_records_round_trip_bit_for_bit(tmp_path_factory: pytest.TempPathFactory, text: str,
                                        seed: int | None) -> None:
    cache = GenerationCache(tmp_path_factory.mktemp("cache"))
    request = make_request().model_copy(update={"sampling": Sampling(seed=seed)})
    record = make_record(request, completion(text))
    path = cache.store(record)
    loaded = cache.load(record.key)
    assert loaded == record and loaded.text == text
    assert [p.name for p in cache.directory.iterdir() if p.name != ".locks"] == [path.name]


def test_a_record_answers_only_the_request_it_holds(tmp_path: Path) -> None:
    """A record planted under another request's key (another task's answer replayed as this
    one's), or edited to hold other messages than it was keyed on, is refused when read (#36)."""
    cache = GenerationCache(tmp_path)
    mine, other = make_request(), make_request().model_copy(update={"sample_index": 3})
    planted = make_record(mine, completion("the answer to another request"))
    cache.directory.mkdir(exist_ok=True)
    wanted = generation_key("openai", "test-model", other)
    cache.path(wanted).write_text(json.dumps(planted.model_dump(mode="json")))  # copied under other's key
    with pytest.raises(CacheError, match="another request"):
        cache.load(wanted)
    forged = dict(planted.model_dump(mode="json"), key=wanted, content_key=content_key(other))
    cache.path(wanted).write_text(json.dumps(forged))  # its keys claim other, its messages do not
    with pytest.raises(CacheError, match="not the record of the request it holds"):
        cache.load(wanted)
    stored = cache.store(make_record(other, completion("the real answer")))
    assert cache.load(wanted).text == "the real answer" and stored == cache.path(wanted)


def test_a_damaged_record_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "abc.json").write_text('{"key": "abc"')
    with pytest.raises(CacheError) as info:
        read_record(tmp_path / "abc.json")
    assert info.value.code == "bad_record" and "abc.json" in str(info.value)


# ---------------------------------------------------------------------------------------------
# Cache hits, processes, samples


def test_second_generation_comes_from_the_cache(tmp_path: Path) -> None:
    cache = GenerationCache(tmp_path)
    with ScriptedServer(numbered_answers) as server:
        first = generate(openai_at(server), make_request(), cache)
        second = generate(openai_at(server), make_request(), cache)
    assert len(server.seen) == 1
    assert (first.cached, second.cached) == (False, True)
    assert second.completion == first.completion


def generate_in_a_process(url: str, directory: str) -> str:
    from kernelgen.model.providers.base import RetryPolicy
    from kernelgen.model.providers.openai import OpenAICompatibleProvider

    provider = OpenAICompatibleProvider(base_url=url + "/v1", model="test-model", retry=RetryPolicy(max_attempts=1))
    return generate(provider, make_request(), GenerationCache(directory)).text


def test_processes_sharing_a_cache_make_one_call(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    with ScriptedServer(numbered_answers) as server:
        with context.Pool(3) as pool:
            texts = pool.starmap(generate_in_a_process, [(server.url, str(tmp_path))] * 3)
    assert len(server.seen) == 1
    assert texts == [json.dumps({"answer": 0})] * 3
    assert len(list(tmp_path.glob("*.json"))) == 1


def test_samples_are_distinct_records_and_replay_bit_for_bit(tmp_path: Path) -> None:
    cache = GenerationCache(tmp_path)
    with ScriptedServer(numbered_answers) as server:
        samples = generate_samples(openai_at(server), make_request(), 4, cache)
    texts = [s.record.text for s in samples]
    assert len(set(texts)) == 4 and len({s.record.key for s in samples}) == 4
    assert [s.record.sample_index for s in samples] == [0, 1, 2, 3]
    replayed = generate_samples(make_provider(f"replay:{tmp_path}"), make_request(), 4, cache)
    assert [s.record.text for s in replayed] == texts
    assert [s.record.completion for s in replayed] == [s.record.completion for s in samples]
    assert len(list(tmp_path.glob("*.json"))) == 4  # replay records nothing new


def test_replay_without_a_record_names_the_key(tmp_path: Path) -> None:
    cache = GenerationCache(tmp_path)
    cache.store(make_record(make_request(), completion("{}")))
    request = make_request("a prompt that was never recorded")
    with pytest.raises(ProviderError) as info:
        ReplayProvider(tmp_path).generate(request)
    assert info.value.code == "no_record" and content_key(request) in str(info.value)


def test_replay_of_two_models_needs_one_named(tmp_path: Path) -> None:
    cache = GenerationCache(tmp_path)
    for model in ("a", "b"):
        cache.store(make_record(make_request(), completion(f"answer of {model}", model=model)))
    with pytest.raises(ProviderError) as info:
        ReplayProvider(tmp_path).generate(make_request())
    assert info.value.code == "ambiguous_record"
    assert ReplayProvider(tmp_path, model="b").generate(make_request()).text == "answer of b"


def test_replay_of_a_missing_directory_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ProviderError) as info:
        make_provider(f"replay:{tmp_path / 'nothing'}")
    assert info.value.code == "config"


# ---------------------------------------------------------------------------------------------
# kernelgen generate


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], str]:
    status = main(["generate", *argv])
    out, err = capsys.readouterr()
    return status, out.splitlines(), err


def test_generate_reference_prints_the_golden_ast(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from kernelgen.lang.parse import kernel_to_obj
    from kernelgen.task.spec import get_task

    status, lines, err = run_cli(capsys, "--llm", "reference", "--task", "relu", "-n", "2",
                                 "--cache-dir", str(tmp_path))
    assert status == 0 and err == ""
    golden = kernel_to_obj(get_task("relu").golden)
    assert [json.loads(line) for line in lines] == [golden, golden]
    assert list(tmp_path.glob("*.json")) == []  # golden answers are not worth a record


def test_generate_prints_valid_answers_reports_invalid_ones_and_replays(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    def answers(seen: Seen, index: int) -> Answer:
        text = example_text("vector_add") if index != 1 else example_text("vector_add")[:200]
        return Answer(200, chat_completion(text))

    with ScriptedServer(answers) as server:
        status, lines, err = run_cli(capsys, "--llm", "openai", "--base-url", server.url + "/v1",
                                     "--model", "test-model", "--concurrency", "1", "-n", "3",
                                     "--temperature", "0.7", "--cache-dir", str(tmp_path),
                                     "Add two vectors.")
    assert status == 1
    assert lines == [example_text("vector_add")] * 2
    assert "sample 1: parse: /" in err and ": grammar: the answer ends at character 200" in err
    assert "1 of 3 answers failed" in err

    replay_status, replayed, replay_err = run_cli(capsys, "--llm", f"replay:{tmp_path}", "-n", "3",
                                                  "--temperature", "0.7", "Add two vectors.")
    assert (replay_status, replayed) == (1, lines) and "sample 1" in replay_err


def test_generate_needs_exactly_one_of_task_and_prompt(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", "--llm", "reference"]) == 1
    assert main(["generate", "--llm", "reference", "--task", "relu", "a prompt"]) == 1
    assert "either --task ID or a prompt" in capsys.readouterr().err


def test_generate_with_an_unknown_task_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", "--llm", "reference", "--task", "no_such_task"]) == 1
    assert "no_such_task" in capsys.readouterr().err

