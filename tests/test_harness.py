"""The harness end to end, as users run it: `pytest bench ...` in a subprocess against a model
server on loopback. A model that first answers with an undefined name and fixes it once it is
shown the diagnostics passes through the repair loop; the generations land in the cache and
`--llm replay:DIR` re-runs the benchmark offline with the same outcome."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kernelgen.lang.parse import kernel_to_json
from kernelgen.task.spec import get_task

ROOT = Path(__file__).resolve().parent.parent


class RepairingModel(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint: a broken kernel first, the golden one when the last
    message carries the checker's diagnostics."""

    golden = kernel_to_json(get_task("relu").golden)
    requests: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - the http.server interface
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        RepairingModel.requests.append(body)
        repaired = "undefined_name" in body["messages"][-1]["content"]
        text = self.golden if repaired else self.golden.replace('"rhs":"N"', '"rhs":"n_elements"', 1)
        answer = {"id": "c", "object": "chat.completion", "model": body["model"],
                  "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                  "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}}
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def model_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), RepairingModel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    RepairingModel.requests.clear()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()


def run_bench(*args: str, cache: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["OPENAI_API_KEY"] = "sk-loopback"
    return subprocess.run([sys.executable, "-m", "pytest", "bench/easy/test_easy.py::test_pipeline[relu]", "-q",
                           "-p", "no:cacheprovider", "--kg-mode", "cpu", "--kg-shapes", "2", "--wandb", "off",
                           "--kg-cache", str(cache), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_model_repairs_its_kernel_and_the_run_replays_offline(model_server, tmp_path) -> None:
    cache = tmp_path / "generations"
    first = run_bench("--llm", "openai", "--model", "tiny", "--base-url", model_server,
                      "--repair-rounds", "1", cache=cache)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "kernels from: openai/tiny" in first.stdout
    assert len(RepairingModel.requests) == 2
    assert "undefined_name" in RepairingModel.requests[1]["messages"][-1]["content"]
    assert "sk-loopback" not in "".join(p.read_text() for p in cache.rglob("*.json"))

    replayed = run_bench("--llm", f"replay:{cache}", "--repair-rounds", "1", cache=tmp_path / "unused")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert len(RepairingModel.requests) == 2  # offline: the server saw nothing more
    assert "1 passed" in replayed.stdout


@pytest.mark.slow
def test_without_repair_the_broken_answer_fails_with_its_diagnostic(model_server, tmp_path) -> None:
    result = run_bench("--llm", "openai", "--model", "tiny", "--base-url", model_server, cache=tmp_path / "g")
    assert result.returncode == 1
    assert "semantic_error at check: /body/1/value/rhs: undefined_name" in result.stdout
    assert "semantic_error" in result.stdout.split("kernelgen summary")[1]


@pytest.mark.slow
def test_a_case_that_fails_before_it_is_judged_is_named_in_the_summary(tmp_path) -> None:
    """No answer to replay: the case errors in generation, with no result; the summary must not
    read as if the run were complete."""
    (tmp_path / "empty").mkdir()
    result = run_bench("--llm", f"replay:{tmp_path / 'empty'}", cache=tmp_path / "unused")
    assert result.returncode == 1
    summary = result.stdout.split("kernelgen summary")[1]
    assert "1 kernelgen cases failed before they were judged" in summary
