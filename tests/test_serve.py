"""``kernelgen serve`` on loopback, with a tiny random-weight model built here (tiny_model.py).

The server runs as a real subprocess (``python -m kernelgen.cli serve``). Constrained decoding
must give 100% schema-valid kernels from random weights; the same model unconstrained gives
(next to) none, and both rates are printed (``pytest -s`` shows them). Truncation is counted
and reported: a truncated answer is an invalid one.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import pytest

for _module in ("fastapi", "uvicorn", "transformers", "tokenizers", "xgrammar", "httpx",
                "jsonschema"):
    pytest.importorskip(_module)

import httpx  # noqa: E402
import jsonschema  # noqa: E402

from kernelgen.cli import main as cli_main  # noqa: E402
from kernelgen.errors import KernelgenError  # noqa: E402
from kernelgen.lang.parse import parse_kernel  # noqa: E402
from kernelgen.lang.schema import kernel_schema, schema_text  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tiny_model import build_tiny_model  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SERVED_NAME = "tiny-kernel-model"
PROMPT = "Write a kernel that adds two float32 vectors."
# Constrained kernels of the tiny model take 56-368 tokens (tiny_model.py): a budget with room.
MAX_TOKENS = 1024
KERNEL_FORMAT = {"type": "json_schema",
                 "json_schema": {"name": "kernel", "schema": kernel_schema()}}
STARTUP_S = 180


def training_corpus() -> list[str]:
    """JSON the tokenizer learns its merges from: the schema and the example kernels."""
    examples = sorted((ROOT / "examples").glob("*.json"))
    return [schema_text()] + [json.dumps(json.loads(p.read_text()), separators=(",", ":"))
                              for p in examples]


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("model") / SERVED_NAME, training_corpus())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_server(model: Path, backend: str, log_dir: Path,
                   startup_s: float = STARTUP_S) -> Iterator[str]:
    """A ``kernelgen serve`` subprocess serving ``model``; yields its base URL."""
    port = free_port()
    log_path = log_dir / "server.log"
    # One thread: a model this small gains nothing from more, and the machine is shared.
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "kernelgen.cli", "serve", "--model", str(model),
             "--port", str(port), "--backend", backend, "--max-concurrency", "4"],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_s
        while True:
            if process.poll() is not None:
                pytest.fail(f"kernelgen serve exited with {process.returncode}:\n"
                            f"{log_path.read_text()}")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"kernelgen serve did not start in {startup_s} s:\n"
                            f"{log_path.read_text()}")
            time.sleep(0.25)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tiny_model, "transformers", tmp_path_factory.mktemp("server")) as url:
        yield url


def chat(url: str, **fields: Any) -> httpx.Response:
    body = {"model": SERVED_NAME, "messages": [{"role": "user", "content": PROMPT}], **fields}
    return httpx.post(f"{url}/v1/chat/completions", json=body, timeout=300)


def kernel_problem(text: str) -> str | None:
    """Why ``text`` is not a schema-valid kernel (JSON, the JSON schema, the Pydantic AST), or
    None when it is one."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"not JSON: {exc}"
    try:
        jsonschema.validate(document, kernel_schema())
    except jsonschema.ValidationError as exc:
        return f"JSON schema: {exc.message} at {exc.json_path}"
    try:
        parse_kernel(text)
    except KernelgenError as exc:
        return f"parse_kernel: {exc}"
    return None


def test_health_and_models(server: str) -> None:
    health = httpx.get(f"{server}/health").json()
    assert health == {"status": "ok", "model": SERVED_NAME, "backend": "transformers"}
    models = httpx.get(f"{server}/v1/models").json()
    assert models["object"] == "list"
    assert [m["id"] for m in models["data"]] == [SERVED_NAME]


def test_constrained_kernels_are_all_valid_unconstrained_are_not(server: str) -> None:
    constrained = [chat(server, response_format=KERNEL_FORMAT, seed=seed, n=2,
                        max_tokens=MAX_TOKENS, temperature=1.0).json() for seed in range(4)]
    free = chat(server, seed=0, n=8, max_tokens=MAX_TOKENS, temperature=1.0).json()

    def tally(replies: list[dict[str, Any]]) -> tuple[list[str | None], list[str]]:
        choices = [c for reply in replies for c in reply["choices"]]
        return ([kernel_problem(c["message"]["content"]) for c in choices],
                [c["finish_reason"] for c in choices])

    problems, finishes = tally(constrained)
    free_problems, free_finishes = tally([free])
    for name, found, ends in (("constrained", problems, finishes),
                              ("unconstrained", free_problems, free_finishes)):
        valid = sum(p is None for p in found)
        print(f"\n{name}: {valid}/{len(found)} schema-valid kernels "
              f"({100 * valid / len(found):.0f}%), {ends.count('length')}/{len(ends)} "
              f"truncated at max_tokens={MAX_TOKENS}")
    assert finishes == ["stop"] * len(finishes), "a constrained answer ran out of tokens"
    assert problems == [None] * len(problems)
    assert sum(p is None for p in free_problems) < len(free_problems)
    for reply in constrained:
        usage = reply["usage"]
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        assert usage["completion_tokens"] > 0


def test_seeded_requests_answer_the_same_concurrently_as_sequentially(server: str) -> None:
    requests = ([{"response_format": KERNEL_FORMAT, "seed": seed, "max_tokens": MAX_TOKENS}
                 for seed in (10, 11, 12, 13)]
                + [{"seed": seed, "max_tokens": 48} for seed in (20, 21)])

    def answer(fields: dict[str, Any]) -> list[str]:
        reply = chat(server, temperature=1.0, **fields)
        assert reply.status_code == 200, reply.text
        return [c["message"]["content"] for c in reply.json()["choices"]]

    sequential = [answer(fields) for fields in requests]
    with ThreadPoolExecutor(len(requests)) as pool:
        concurrent = list(pool.map(answer, requests))
    assert concurrent == sequential
    assert len({tuple(a) for a in sequential}) == len(requests), "seeds gave equal answers"


def poll(server: str, job_id: str, timeout_s: float = 120) -> tuple[dict[str, Any], set[str]]:
    seen: set[str] = set()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = httpx.get(f"{server}/status/{job_id}").json()
        seen.add(status["status"])
        if status["status"] in ("done", "error"):
            return status, seen
        time.sleep(0.05)
    pytest.fail(f"job {job_id} not finished after {timeout_s} s")


def test_generate_and_status_protocol(server: str) -> None:
    jobs = [httpx.post(f"{server}/generate", json={
        "prompt": PROMPT, "max_tokens": MAX_TOKENS, "temperature": 1.0,
        "schema_dict": kernel_schema(), "seed": seed}).json()["job_id"] for seed in range(3)]
    free_job = httpx.post(f"{server}/generate", json={"prompt": PROMPT, "max_tokens": 16}).json()
    for job_id in jobs:
        status, seen = poll(server, job_id)
        assert seen <= {"queued", "running", "done"}
        assert status["status"] == "done" and status["error"] is None
        assert status["finish_reason"] == "stop"
        assert kernel_problem(status["response"]) is None
        assert status["usage"]["completion_tokens"] > 0
    status, _ = poll(server, free_job["job_id"])
    assert status["status"] == "done" and isinstance(status["response"], str)
    assert status["usage"]["completion_tokens"] <= 16

    missing = httpx.get(f"{server}/status/no-such-job")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "unknown_job"


@pytest.mark.parametrize("path, body, status, code, param", [
    ("/v1/chat/completions", {"temperature": -1}, 400, "invalid_request", "/temperature"),
    ("/v1/chat/completions", {"messages": []}, 400, "invalid_request", "/messages"),
    ("/v1/chat/completions", {"messages": [{"role": "robot", "content": "x"}]}, 400,
     "invalid_request", "/messages/0/role"),
    ("/v1/chat/completions", {"model": "gpt-9"}, 404, "model_not_found", "/model"),
    ("/v1/chat/completions", {"stream": True}, 400, "invalid_request", "/stream"),
    ("/v1/chat/completions", {"response_format": {"type": "json_schema"}}, 400,
     "invalid_request", "/response_format"),
    ("/v1/chat/completions", {"response_format": {"type": "json_schema", "json_schema": {
        "schema": {"type": "string", "pattern": "("}}}}, 400, "bad_schema",
     "/response_format/json_schema/schema"),
    ("/v1/chat/completions", {"guided_json": {"type": "frobnicate"}}, 400, "bad_schema",
     "/guided_json"),
    ("/v1/chat/completions", {"max_tokens": 10**6}, 400, "context_length_exceeded",
     "/max_tokens"),
    ("/generate", {"prompt": ""}, 400, "invalid_request", "/prompt"),
    ("/generate", {"prompt": "x", "schema_dict": {"$ref": "#/$defs/Missing"}}, 400,
     "bad_schema", "/schema_dict"),
])
def test_bad_requests_get_clear_errors(server: str, path: str, body: dict[str, Any],
                                       status: int, code: str, param: str) -> None:
    if path == "/v1/chat/completions":
        body = {"model": SERVED_NAME, "messages": [{"role": "user", "content": PROMPT}], **body}
    reply = httpx.post(f"{server}{path}", json=body)
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert (error["code"], error["param"]) == (code, param)
    assert error["message"]


def test_malformed_body_is_a_400_that_says_so(server: str) -> None:
    reply = httpx.post(f"{server}/v1/chat/completions", content=b'{"model": ',
                       headers={"content-type": "application/json"})
    assert reply.status_code == 400
    assert "not JSON" in reply.json()["error"]["message"]


def test_json_object_and_vllm_style_constraints(server: str) -> None:
    objects = chat(server, response_format={"type": "json_object"}, seed=1, n=4,
                   max_tokens=512).json()["choices"]
    finished = [c["message"]["content"] for c in objects if c["finish_reason"] == "stop"]
    print(f"\njson_object: {len(finished)}/{len(objects)} finished within 512 tokens")
    assert finished, "no json_object answer finished"
    assert all(isinstance(json.loads(text), dict) for text in finished)

    pair = {"type": "object", "properties": {"name": {"type": "string"},
                                             "size": {"type": "integer"}},
            "required": ["name", "size"]}
    for fields in ({"structured_outputs": {"json": pair}}, {"guided_json": pair}):
        for choice in chat(server, seed=2, n=3, max_tokens=256, **fields).json()["choices"]:
            assert choice["finish_reason"] == "stop"
            jsonschema.validate(json.loads(choice["message"]["content"]), pair)


def test_prompts_use_the_chat_template_or_plain_paragraphs(tiny_model: Path) -> None:
    from kernelgen.model.decoding import JsonConstraint
    from kernelgen.model.serve import TransformersBackend

    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": PROMPT}]
    backend = TransformersBackend(tiny_model, device="cpu")
    text = backend.tokenizer.decode(backend.prompt_ids(messages))
    assert text == f"<|system|>\nBe brief.<|end|>\n<|user|>\n{PROMPT}<|end|>\n<|assistant|>\n"
    # One compiled grammar per schema, however the request spells the same schema.
    assert (backend.grammars.get(JsonConstraint(kernel_schema()))
            is backend.grammars.get(JsonConstraint(json.loads(schema_text()))))

    backend.tokenizer.chat_template = None  # a base model's tokenizer
    assert backend.tokenizer.decode(backend.prompt_ids(messages)) == f"Be brief.\n\n{PROMPT}"


@pytest.mark.parametrize("provider", ["openai", "remote"])
def test_kernelgen_generate_through_the_server(server: str, provider: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    base_url = f"{server}/v1" if provider == "openai" else server
    status = cli_main(["generate", "--llm", provider, "--base-url", base_url,
                       "--model", SERVED_NAME, "vector add", "-n", "3", "--temperature", "1.0",
                       "--seed", "0", "--max-tokens", str(MAX_TOKENS), "--no-cache"])
    out, err = capsys.readouterr()
    assert status == 0, err
    answers = out.splitlines()
    assert len(answers) == 3
    assert [kernel_problem(a) for a in answers] == [None] * 3


@pytest.mark.gpu
def test_vllm_backend_constrains_too(tmp_path_factory: pytest.TempPathFactory) -> None:
    pytest.importorskip("vllm")
    # Head size 64 (256 / 4), which vLLM's attention kernels support.
    model = build_tiny_model(tmp_path_factory.mktemp("vllm") / SERVED_NAME, training_corpus(),
                             hidden_size=256, heads=4)
    with running_server(model, "vllm", tmp_path_factory.mktemp("vllm-server"),
                        startup_s=600) as url:
        assert httpx.get(f"{url}/health").json()["backend"] == "vllm"
        choices = chat(url, response_format=KERNEL_FORMAT, seed=0, n=8, max_tokens=MAX_TOKENS,
                       temperature=1.0).json()["choices"]
    assert [c["finish_reason"] for c in choices] == ["stop"] * 8
    assert [kernel_problem(c["message"]["content"]) for c in choices] == [None] * 8
