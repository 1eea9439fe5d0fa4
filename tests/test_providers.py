"""The providers: request and response shapes of each API, reliability against a real server on
loopback (timeouts, 429 with Retry-After, 5xx, dropped connections), the remote provider's
polling, the concurrency limit, key redaction, the in-process transformers model.

The cloud APIs cannot be reached from here: their shapes are checked through
``httpx.MockTransport`` against the documented formats (OpenAI chat completions, NVIDIA NIM's
``nvext``, Ollama's ``/api/chat``, Gemini's ``generateContent``). Everything that is about the
network itself runs against :class:`ScriptedServer`, a real HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx
import pytest

from kernelgen.env import Secret, load_dotenv
from kernelgen.model.generation import GenerationCache, generate, generate_samples
from kernelgen.model.grammar import match_prefix, validate_answer
from kernelgen.model.prompt import Message
from kernelgen.model.providers import ProviderOptions, make_provider
from kernelgen.model.providers.base import GenerationRequest, ProviderError, RetryPolicy, Sampling
from kernelgen.model.providers.gemini import GeminiProvider
from kernelgen.model.providers.http import JsonHttpClient, parse_retry_after
from kernelgen.model.providers.openai import OpenAICompatibleProvider
from kernelgen.model.providers.reference import ReferenceProvider
from kernelgen.model.providers.remote import RemoteProvider
from kernelgen.lang.schema import kernel_schema, schema_text

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
KEY = "sk-test-9f8e7d6c5b4a"
FAST_RETRY = RetryPolicy(max_attempts=3, backoff_s=0.01, max_backoff_s=0.05)


def example_text(name: str = "vector_add") -> str:
    return json.dumps(json.loads((EXAMPLES / f"{name}.json").read_text()), separators=(",", ":"))


def make_request(prompt: str = "Write vector add.", **changes: Any) -> GenerationRequest:
    messages = (Message(role="system", content="You write kernels."), Message(role="user", content=prompt))
    return GenerationRequest(messages=messages, sampling=Sampling(temperature=0.5, max_tokens=512, seed=7),
                             **changes)


def chat_completion(text: str, usage: bool = True) -> dict[str, Any]:
    """An OpenAI chat completion object as the API reference documents it."""
    answer: dict[str, Any] = {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": "stop"}]}
    if usage:
        answer["usage"] = {"prompt_tokens": 321, "completion_tokens": 123, "total_tokens": 444}
    return answer


# ---------------------------------------------------------------------------------------------
# A real HTTP server on loopback, answering from a script


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float


@dataclass
class Answer:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    drop: bool = False


class ScriptedServer:
    """An HTTP server on 127.0.0.1 whose answers come from ``script(seen, index)``; it keeps
    every request it saw and the most requests it had in flight at once."""

    def __init__(self, script: Callable[[Seen, int], Answer]) -> None:
        self.script = script
        self.seen: list[Seen] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                            json.loads(raw) if raw else None, time.monotonic())
                with server._lock:
                    index = len(server.seen)
                    server.seen.append(seen)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                released = False
                try:
                    answer = server.script(seen, index)
                    time.sleep(answer.delay_s)
                    # No longer in flight once the answer starts back: the client may send its next
                    # call as soon as it reads it, before this thread's finally runs (a count of 3
                    # under a limit of 2 on a loaded machine).
                    with server._lock:
                        server.in_flight -= 1
                    released = True
                    if answer.drop:
                        self.close_connection = True
                        return
                    payload = json.dumps(answer.body).encode()
                    self.send_response(answer.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in answer.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)
                finally:
                    if not released:
                        with server._lock:
                            server.in_flight -= 1

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def always(answer: Answer) -> Callable[[Seen, int], Answer]:
    return lambda seen, index: answer


def openai_at(server: ScriptedServer, **options: Any) -> OpenAICompatibleProvider:
    options.setdefault("retry", FAST_RETRY)
    return OpenAICompatibleProvider(base_url=server.url + "/v1", model="test-model", **options)


# ---------------------------------------------------------------------------------------------
# Request and response shapes (documented formats, through httpx.MockTransport)


class Recorder:
    """An httpx.MockTransport handler that keeps the requests and answers from a function."""

    def __init__(self, answer: Callable[[httpx.Request], httpx.Response]) -> None:
        self.requests: list[httpx.Request] = []
        self.answer = answer

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.answer(request)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)

    def body(self, index: int = -1) -> Any:
        return json.loads(self.requests[index].content)


@pytest.mark.parametrize("mode", ["response_format", "structured_outputs", "guided_json", "nvext", "none"])
def test_openai_request_carries_the_schema_where_each_server_reads_it(mode: str) -> None:
    recorder = Recorder(lambda r: httpx.Response(200, json=chat_completion(example_text())))
    provider = OpenAICompatibleProvider(base_url="http://vllm.test/v1", model="qwen", api_key=Secret(KEY),
                                        structured=mode, transport=recorder.transport())
    completion = provider.generate(make_request())
    sent = recorder.requests[0]
    assert sent.method == "POST" and str(sent.url) == "http://vllm.test/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    body = recorder.body()
    assert body["model"] == "qwen"
    assert body["messages"] == [{"role": "system", "content": "You write kernels."},
                                {"role": "user", "content": "Write vector add."}]
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.5, 512, 7)
    schema = kernel_schema()
    placed = {"response_format": body.get("response_format"),
              "structured_outputs": body.get("structured_outputs"),
              "guided_json": body.get("guided_json"), "nvext": body.get("nvext")}
    expected = {
        "response_format": {"type": "json_schema",
                            "json_schema": {"name": "kernel", "schema": schema, "strict": False}},
        "structured_outputs": {"json": schema}, "guided_json": schema, "nvext": {"guided_json": schema}}
    assert placed == {k: (expected[k] if k == mode else None) for k in placed}
    assert completion.text == example_text()
    assert (completion.tokens_in, completion.tokens_out, completion.token_source) == (321, 123, "server")
    assert completion.finish_reason == "stop" and completion.constrained == mode


def test_openai_counts_tokens_when_the_server_gives_no_usage() -> None:
    recorder = Recorder(lambda r: httpx.Response(200, json=chat_completion(example_text(), usage=False)))
    provider = OpenAICompatibleProvider(base_url="http://x.test/v1", model="m", transport=recorder.transport())
    completion = provider.generate(make_request())
    assert "authorization" not in recorder.requests[0].headers
    assert completion.token_source != "server" and completion.tokens_out > 0 and completion.tokens_in > 0


def test_openai_refusal_is_a_bad_response() -> None:
    refusal = {"choices": [{"index": 0, "message": {"role": "assistant", "content": None,
                                                    "refusal": "I cannot help"}, "finish_reason": "stop"}]}
    provider = OpenAICompatibleProvider(base_url="http://x.test/v1", model="m",
                                        transport=Recorder(lambda r: httpx.Response(200, json=refusal)).transport())
    with pytest.raises(ProviderError) as info:
        provider.generate(make_request())
    assert info.value.code == "bad_response" and "I cannot help" in str(info.value)


def test_nim_uses_nvidia_base_url_key_and_nvext(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NVIDIA_API_KEY", KEY)
    recorder = Recorder(lambda r: httpx.Response(200, json=chat_completion(example_text())))
    provider = make_provider("nim:meta/llama-3.3-70b-instruct", ProviderOptions(transport=recorder.transport()))
    provider.generate(make_request())
    sent = recorder.requests[0]
    assert str(sent.url) == "https://integrate.api.nvidia.com/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    body = recorder.body()
    assert body["model"] == "meta/llama-3.3-70b-instruct"
    assert body["nvext"] == {"guided_json": kernel_schema()} and "response_format" not in body


def test_nim_without_a_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NVIDIA_API_KEY", raising=False)
    with pytest.raises(ProviderError) as info:
        make_provider("nim", ProviderOptions(model="m"))
    assert info.value.code == "config" and "NVIDIA_API_KEY" in str(info.value)


def test_ollama_native_chat_shape() -> None:
    answer = {"model": "qwen2.5-coder:7b", "created_at": "2024-01-01T00:00:00Z",
              "message": {"role": "assistant", "content": example_text()}, "done": True,
              "done_reason": "stop", "prompt_eval_count": 40, "eval_count": 99}
    recorder = Recorder(lambda r: httpx.Response(200, json=answer))
    provider = make_provider("ollama:qwen2.5-coder:7b",
                             ProviderOptions(base_url="http://127.0.0.1:11434", transport=recorder.transport()))
    completion = provider.generate(make_request())
    assert str(recorder.requests[0].url) == "http://127.0.0.1:11434/api/chat"
    body = recorder.body()
    assert body["model"] == "qwen2.5-coder:7b" and body["stream"] is False
    assert body["format"] == kernel_schema()
    assert body["options"] == {"temperature": 0.5, "num_predict": 512, "seed": 7}
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert (completion.text, completion.tokens_in, completion.tokens_out) == (example_text(), 40, 99)
    assert completion.finish_reason == "stop" and completion.constrained == "format"


def gemini_answer(text: str) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 60, "totalTokenCount": 110}}


def test_gemini_generate_content_shape() -> None:
    recorder = Recorder(lambda r: httpx.Response(200, json=gemini_answer(example_text())))
    provider = GeminiProvider(model="gemini-2.5-flash", api_key=Secret(KEY), transport=recorder.transport())
    request = make_request().model_copy(update={"messages": make_request().messages + (
        Message(role="assistant", content="{}"), Message(role="user", content="Fix it."))})
    completion = provider.generate(request)
    sent = recorder.requests[0]
    assert str(sent.url) == ("https://generativelanguage.googleapis.com/v1beta/models/"
                             "gemini-2.5-flash:generateContent")
    assert sent.headers["x-goog-api-key"] == KEY and KEY not in str(sent.url)
    body = recorder.body()
    assert body["systemInstruction"] == {"parts": [{"text": "You write kernels."}]}
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert body["contents"][0]["parts"] == [{"text": "Write vector add."}]
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == kernel_schema()
    assert (config["temperature"], config["maxOutputTokens"], config["seed"]) == (0.5, 512, 7)
    assert (completion.text, completion.tokens_in, completion.tokens_out) == (example_text(), 50, 60)
    assert completion.constrained == "responseJsonSchema" and completion.finish_reason == "STOP"


def test_gemini_falls_back_to_json_mime_type_when_the_schema_is_refused() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if "responseJsonSchema" in json.loads(request.content)["generationConfig"]:
            return httpx.Response(400, json={"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                                       "message": "Unsupported schema"}})
        return httpx.Response(200, json=gemini_answer(example_text()))

    recorder = Recorder(answer)
    provider = GeminiProvider(model="gemini-x", api_key=Secret(KEY), transport=recorder.transport())
    first = provider.generate(make_request())
    second = provider.generate(make_request())
    assert len(recorder.requests) == 3  # refused once, then JSON mode for both calls
    assert first.constrained == second.constrained == "responseMimeType"
    assert first.retries == 1 and second.retries == 0
    assert "responseJsonSchema" not in recorder.body()["generationConfig"]


def test_gemini_blocked_prompt_is_a_bad_response() -> None:
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}}
    provider = GeminiProvider(model="g", api_key=Secret(KEY),
                              transport=Recorder(lambda r: httpx.Response(200, json=blocked)).transport())
    with pytest.raises(ProviderError) as info:
        provider.generate(make_request())
    assert info.value.code == "bad_response" and "SAFETY" in str(info.value)


def test_a_request_without_a_schema_is_sent_unconstrained() -> None:
    """The raw-LLM baseline asks for free text (Python): no provider may send a schema."""
    free = make_request().model_copy(update={"json_schema": None})

    def answer(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path.endswith("chat/completions"):
            return httpx.Response(200, json=chat_completion("def kernel(): pass"))
        if path == "/api/chat":
            return httpx.Response(200, json={"message": {"role": "assistant", "content": "x"}, "done": True})
        if path.endswith(":generateContent"):
            return httpx.Response(200, json=gemini_answer("x"))
        if path == "/generate":
            return httpx.Response(200, json={"job_id": "7"})
        return httpx.Response(200, json={"status": "done", "response": "x", "error": None})

    recorder = Recorder(answer)
    providers = [
        OpenAICompatibleProvider(base_url="http://x.test/v1", model="m", transport=recorder.transport()),
        make_provider("ollama:m", ProviderOptions(transport=recorder.transport())),
        GeminiProvider(model="g", api_key=Secret(KEY), transport=recorder.transport()),
        RemoteProvider(url="http://remote.test", transport=recorder.transport()),
    ]
    for provider in providers:
        assert provider.generate(free).constrained == "none"
    openai_body, ollama_body, gemini_body, remote_body = (
        recorder.body(i) for i in (0, 1, 2, 3))
    assert not {"response_format", "structured_outputs", "guided_json", "nvext"} & set(openai_body)
    assert "format" not in ollama_body
    assert not {"responseMimeType", "responseJsonSchema"} & set(gemini_body["generationConfig"])
    assert remote_body["schema_dict"] is None
    assert free.schema_hash == "none" and free.schema_dict() is None


# ---------------------------------------------------------------------------------------------
# Reliability, against a real server


def test_429_with_retry_after_is_honoured_then_succeeds() -> None:
    script = lambda seen, i: (Answer(429, {"error": "slow down"}, {"Retry-After": "1"}) if i == 0
                              else Answer(200, chat_completion("{}")))
    with ScriptedServer(script) as server:
        completion = openai_at(server).generate(make_request())
    assert completion.retries == 1
    assert server.seen[1].at - server.seen[0].at >= 1.0


def test_500s_are_retried_until_an_answer() -> None:
    script = lambda seen, i: Answer(500, {"error": "boom"}) if i < 2 else Answer(200, chat_completion("{}"))
    with ScriptedServer(script) as server:
        completion = openai_at(server).generate(make_request())
    assert completion.retries == 2 and len(server.seen) == 3


def test_persistent_503_gives_up_after_the_bounded_attempts() -> None:
    with ScriptedServer(always(Answer(503, {"error": "overloaded"}))) as server:
        with pytest.raises(ProviderError) as info:
            openai_at(server).generate(make_request())
    assert info.value.code == "http_503" and info.value.stage == "generate"
    assert len(server.seen) == FAST_RETRY.max_attempts
    assert f"{server.url}/v1/chat/completions" in str(info.value) and "3 attempts" in str(info.value)


def test_400_is_not_retried() -> None:
    with ScriptedServer(always(Answer(400, {"error": "bad schema"}))) as server:
        with pytest.raises(ProviderError) as info:
            openai_at(server).generate(make_request())
    assert info.value.code == "http_400" and len(server.seen) == 1 and "bad schema" in str(info.value)


def test_timeout_is_retried_then_a_timeout_error() -> None:
    with ScriptedServer(always(Answer(200, chat_completion("{}"), delay_s=1.0))) as server:
        provider = openai_at(server, timeout_s=0.2, retry=RetryPolicy(max_attempts=2, backoff_s=0.01))
        with pytest.raises(ProviderError) as info:
            provider.generate(make_request())
    assert info.value.code == "timeout" and len(server.seen) == 2


def test_dropped_connection_is_retried_then_fails_and_the_cache_stays_empty(tmp_path: Path) -> None:
    cache = GenerationCache(tmp_path / "cache")
    with ScriptedServer(always(Answer(drop=True))) as server:
        with pytest.raises(ProviderError) as info:
            generate(openai_at(server), make_request(), cache)
    assert info.value.code == "connection" and len(server.seen) == FAST_RETRY.max_attempts
    assert list((tmp_path / "cache").glob("*.json")) == []
    assert [p for p in (tmp_path / "cache").iterdir() if p.name != ".locks"] == []


def test_a_dropped_connection_then_an_answer_is_recorded_once(tmp_path: Path) -> None:
    script = lambda seen, i: Answer(drop=True) if i == 0 else Answer(200, chat_completion(example_text()))
    cache = GenerationCache(tmp_path)
    with ScriptedServer(script) as server:
        record = generate(openai_at(server), make_request(), cache)
    assert record.completion.retries == 1 and record.text == example_text()
    assert [p.name for p in tmp_path.glob("*.json")] == [f"{record.key}.json"]


def test_unreachable_server_is_a_connection_error() -> None:
    with ScriptedServer(always(Answer())) as server:
        url = server.url
    client = JsonHttpClient(url, retry=RetryPolicy(max_attempts=2, backoff_s=0.01))
    with pytest.raises(ProviderError) as info:
        client.post("x", {})
    assert info.value.code == "connection"


def test_the_concurrency_limit_bounds_calls_in_flight() -> None:
    with ScriptedServer(always(Answer(200, chat_completion("{}"), delay_s=0.2))) as server:
        provider = openai_at(server, concurrency=2)
        samples = generate_samples(provider, make_request(), 6)
    assert all(s.record is not None for s in samples)
    assert [s.index for s in samples] == list(range(6))
    assert server.max_in_flight == 2


@pytest.mark.parametrize("value, seconds", [("3", 3.0), ("0", 0.0), ("soon", None), (None, None)])
def test_retry_after_seconds(value: str | None, seconds: float | None) -> None:
    assert parse_retry_after(value) == seconds


def test_retry_after_http_date() -> None:
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == 10.0


# ---------------------------------------------------------------------------------------------
# Keys never leak


def test_api_key_never_reaches_errors_reprs_or_the_cache(tmp_path: Path) -> None:
    def echo_authorization(seen: Seen, index: int) -> Answer:
        if index == 0:
            return Answer(200, chat_completion(example_text()))
        return Answer(401, {"error": f"bad key {seen.headers.get('authorization')}"})

    cache = GenerationCache(tmp_path)
    with ScriptedServer(echo_authorization) as server:
        provider = openai_at(server, api_key=Secret(KEY))
        record = generate(provider, make_request(), cache)
        with pytest.raises(ProviderError) as info:
            provider.generate(make_request("another task"))
    assert server.seen[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in str(info.value) and KEY not in json.dumps(info.value.to_dict())
    assert "***" in str(info.value)
    assert KEY not in repr(provider) and KEY not in repr(Secret(KEY)) and KEY not in f"{Secret(KEY)}"
    assert KEY not in (tmp_path / f"{record.key}.json").read_text()
    assert KEY not in record.model_dump_json()


def test_key_in_a_url_is_not_repeated_in_errors() -> None:
    client = JsonHttpClient(f"http://user:{KEY}@127.0.0.1:9/v1?key={KEY}",
                            retry=RetryPolicy(max_attempts=1))
    with pytest.raises(ProviderError) as info:
        client.get("")
    assert KEY not in str(info.value)


# ---------------------------------------------------------------------------------------------
# The remote server protocol


def remote_script(statuses: list[dict[str, Any]]) -> Callable[[Seen, int], Answer]:
    """The job server: one job; each poll answers the next status, the last one from then on."""
    polls: list[Seen] = []

    def script(seen: Seen, index: int) -> Answer:
        if seen.method == "POST" and seen.path == "/generate":
            return Answer(200, {"job_id": "job-1"})
        if seen.method == "GET" and seen.path == "/status/job-1":
            polls.append(seen)
            return Answer(200, statuses[min(len(polls), len(statuses)) - 1])
        return Answer(404, {"error": "no such path"})

    return script


def test_remote_provider_submits_then_polls_until_done() -> None:
    statuses = [{"status": "queued"}, {"status": "running"},
                {"status": "done", "response": example_text(), "error": None}]
    with ScriptedServer(remote_script(statuses)) as server:
        provider = RemoteProvider(url=server.url, retry=FAST_RETRY)
        completion = provider.generate(make_request())
    submit = server.seen[0]
    assert submit.method == "POST" and submit.path == "/generate"
    assert submit.body == {"prompt": "You write kernels.\n\nWrite vector add.", "max_tokens": 512,
                           "temperature": 0.5, "schema_dict": kernel_schema()}
    assert [s.path for s in server.seen[1:]] == ["/status/job-1"] * 3
    assert completion.text == example_text() and completion.model == server.url
    assert completion.constrained == "schema_dict"


def test_remote_job_error_is_reported() -> None:
    with ScriptedServer(remote_script([{"status": "error", "response": None, "error": "CUDA OOM"}])) as server:
        with pytest.raises(ProviderError) as info:
            RemoteProvider(url=server.url, retry=FAST_RETRY).generate(make_request())
    assert info.value.code == "remote_error" and "CUDA OOM" in str(info.value)


def test_remote_job_past_its_deadline_is_a_timeout() -> None:
    with ScriptedServer(remote_script([{"status": "running"}])) as server:
        provider = RemoteProvider(url=server.url, deadline_s=0.5, retry=FAST_RETRY)
        started = time.monotonic()
        with pytest.raises(ProviderError) as info:
            provider.generate(make_request())
    assert info.value.code == "timeout" and "running" in str(info.value)
    assert time.monotonic() - started < 5


def test_use_remote_model_selects_the_remote_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("USE_REMOTE_MODEL", "true")
    monkeypatch.setenv("LLM_API_URL", "http://127.0.0.1:8000")
    provider = make_provider(None)
    assert isinstance(provider, RemoteProvider) and provider.model == "http://127.0.0.1:8000"


def test_dotenv_fills_unset_variables_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("KERNELGEN_TEST_SET=from-dotenv\nKERNELGEN_TEST_UNSET=from-dotenv\n")
    monkeypatch.setenv("KERNELGEN_TEST_SET", "already-set")
    # Recorded as unset, so that the teardown removes what the .env file adds.
    monkeypatch.setenv("KERNELGEN_TEST_UNSET", "")
    monkeypatch.delenv("KERNELGEN_TEST_UNSET")
    assert load_dotenv(dotenv) == dotenv
    assert os.environ["KERNELGEN_TEST_SET"] == "already-set"
    assert os.environ["KERNELGEN_TEST_UNSET"] == "from-dotenv"


def test_unknown_provider_and_missing_settings_are_clear_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("USE_REMOTE_MODEL", "NVIDIA_API_KEY", "GEMINI_API_KEY", "LLM_API_URL"):
        monkeypatch.delenv(variable, raising=False)
    cases = {"nope": "unknown provider", None: "no model provider", "replay": "directory",
             "openai": "needs a model", "remote": "LLM_API_URL", "gemini:g": "GEMINI_API_KEY"}
    for spec, words in cases.items():
        with pytest.raises(ProviderError) as info:
            make_provider(spec)
        assert info.value.code == "config" and words in str(info.value), spec


# ---------------------------------------------------------------------------------------------
# reference and hf


def test_reference_answers_with_the_golden_text() -> None:
    golden = example_text("softmax")
    completion = ReferenceProvider().generate(make_request(reference=golden))
    assert completion.text == golden and completion.provider == "reference"
    with pytest.raises(ProviderError) as info:
        ReferenceProvider().generate(make_request())
    assert info.value.code == "config"


@pytest.fixture(scope="module")
def tiny_model() -> Iterator[tuple[Any, Any]]:
    """A byte-level tokenizer and a one-layer Llama with random weights, built here: no download.

    Torch runs on one thread meanwhile: a model this small is slower on more threads than
    cores that other processes share.
    """
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    byte_level = tokenizers.pre_tokenizers.ByteLevel
    vocab = {symbol: i for i, symbol in enumerate(sorted(byte_level.alphabet()))}
    vocab["<eos>"] = len(vocab)
    tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = byte_level(add_prefix_space=False)
    tokenizer.decoder = tokenizers.decoders.ByteLevel()
    hf_tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<eos>")
    config = transformers.LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                                      max_position_embeddings=8192, eos_token_id=vocab["<eos>"],
                                      pad_token_id=vocab["<eos>"], bos_token_id=None)
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield transformers.LlamaForCausalLM(config).eval(), hf_tokenizer
    torch.set_num_threads(threads)


def test_hf_constrained_output_follows_the_grammar(tiny_model: tuple[Any, Any]) -> None:
    from kernelgen.model.providers.hf import HFProvider

    model, tokenizer = tiny_model
    provider = HFProvider(model, tokenizer, model_name="tiny-random")
    request = make_request().model_copy(update={"sampling": Sampling(temperature=1.0, max_tokens=1200, seed=3)})
    completion = provider.generate(request)
    again = provider.generate(request)
    assert completion.text == again.text  # seeded from the request: reproducible
    assert completion.constrained == "xgrammar" and completion.token_source == "tokenizer:tiny-random"
    assert completion.tokens_in == len(tokenizer.encode(provider.prompt(request)))
    prefix = match_prefix(completion.text)
    assert prefix.length == len(completion.text)  # every token was allowed by the grammar
    if completion.finish_reason == "stop":
        validate_answer(completion.text)
    else:
        assert completion.tokens_out == 1200 and not prefix.complete
    free = request.model_copy(update={"json_schema": None, "sampling": Sampling(temperature=1.0, max_tokens=16)})
    unconstrained = provider.generate(free)
    assert unconstrained.constrained == "none" and 1 <= unconstrained.tokens_out <= 16


def test_schema_text_is_what_providers_send() -> None:
    assert make_request().json_schema == schema_text()
    assert make_request().schema_dict() == kernel_schema()
