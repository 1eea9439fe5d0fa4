"""``kernelgen serve``'s application: an OpenAI-compatible inference server with JSON-schema
constrained decoding, plus the original ``/generate`` + ``/status`` job protocol.

Endpoints:

- ``POST /v1/chat/completions``: messages, ``temperature``, ``top_p``, ``max_tokens``, ``n``,
  ``seed`` and ``response_format`` (``json_schema`` or ``json_object``, honoured by a grammar;
  vLLM's ``structured_outputs`` and SGLang's ``guided_json`` are accepted for the same);
- ``GET /v1/models``, ``GET /health``;
- ``POST /generate`` ``{prompt, max_tokens, temperature, schema_dict, seed}`` -> ``{job_id}``,
  and ``GET /status/{job_id}`` -> ``{status: queued|running|done|error, response, error}``.

A backend turns a request into a ready-to-run closure (:meth:`Backend.prepare`): everything
that can fail for bad input (the chat template, the context length, the schema's grammar)
fails there, in the request, as a 400; the model work then runs on a pool of
``max_concurrency`` worker threads. Two backends: transformers with the xgrammar logits
processor (:mod:`kernelgen.model.decoding`), and vLLM's engine where it is installed.

Errors follow OpenAI's shape, ``{"error": {"message", "type", "code", "param"}}``, where
``param`` is the JSON pointer of the offending request field.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import threading
import time
import uuid
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kernelgen.model.decoding import (Completion, Generation, GrammarCache, JsonConstraint, Sampling,
                                generate, token_budget)
from kernelgen.errors import KernelgenError, require
from kernelgen.lang.parse import json_pointer

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger("kernelgen.model.serve")

MAX_CHOICES = 64
KEEP_FINISHED_JOBS = 10_000
BACKENDS = ("auto", "vllm", "transformers")


class RequestError(KernelgenError):
    """A request the server refuses; ``status_code`` is its HTTP status."""

    stage = "serve"
    status_code = 400


class NotFound(RequestError):
    status_code = 404


# --- The request and response bodies --------------------------------------------------------


class TextPart(BaseModel):
    type: Literal["text"]
    text: str


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "developer", "user", "assistant"]
    content: str | list[TextPart]

    def for_template(self) -> dict[str, str]:
        """The message as chat templates take it (``developer`` is OpenAI's new ``system``)."""
        text = self.content if isinstance(self.content, str) else "".join(
            part.text for part in self.content)
        return {"role": "system" if self.role == "developer" else self.role, "content": text}


class JsonSchemaFormat(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str | None = None
    schema_: dict[str, Any] = Field(alias="schema")
    strict: bool | None = None


class ResponseFormat(BaseModel):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None

    @model_validator(mode="after")
    def _schema_given(self) -> ResponseFormat:
        if self.type == "json_schema" and self.json_schema is None:
            raise ValueError("type 'json_schema' needs a 'json_schema' object with a 'schema'")
        return self

    def constraint(self) -> JsonConstraint | None:
        if self.type == "json_object":
            return JsonConstraint()
        if self.type == "json_schema" and self.json_schema is not None:
            return JsonConstraint(self.json_schema.schema_)
        return None


class StructuredOutputs(BaseModel):
    """vLLM's own constraint field (``{"json": schema}`` or ``{"json_object": true}``)."""

    model_config = ConfigDict(extra="ignore")

    json_: dict[str, Any] | None = Field(None, alias="json")
    json_object: bool | None = None

    @model_validator(mode="after")
    def _one_constraint(self) -> StructuredOutputs:
        if (self.json_ is None) == (not self.json_object):
            raise ValueError("give exactly one of 'json' (a schema) and 'json_object': true "
                             "(the server supports no other structured output)")
        return self


class ChatCompletionRequest(BaseModel):
    """The OpenAI fields the server honours, and vLLM's ``structured_outputs`` and the older
    ``guided_json`` (SGLang) for the constraint; other fields are ignored, as OpenAI-compatible
    servers do (clients send vendor extensions)."""

    model_config = ConfigDict(extra="ignore")

    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    n: int | None = Field(None, ge=1, le=MAX_CHOICES)
    seed: int | None = Field(None, ge=0, lt=2**63)
    response_format: ResponseFormat | None = None
    structured_outputs: StructuredOutputs | None = None
    guided_json: dict[str, Any] | None = None
    stream: bool | None = None
    stop: str | list[str] | None = None

    @field_validator("stream")
    @classmethod
    def _no_streaming(cls, stream: bool | None) -> bool | None:
        if stream:
            raise ValueError("streaming is not supported: send stream=false")
        return stream

    @field_validator("stop")
    @classmethod
    def _no_stop(cls, stop: str | list[str] | None) -> str | list[str] | None:
        if stop:
            raise ValueError("stop sequences are not supported: an answer ends at the model's "
                             "end-of-sequence token, or when a constrained document is complete")
        return stop

    @model_validator(mode="after")
    def _one_constraint(self) -> ChatCompletionRequest:
        constraints = [self.response_format and self.response_format.type != "text",
                       self.structured_outputs, self.guided_json is not None]
        if sum(map(bool, constraints)) > 1:
            raise ValueError("give the constraint once: response_format, structured_outputs "
                             "or guided_json")
        return self

    def constraint(self) -> JsonConstraint | None:
        if self.structured_outputs is not None:
            return JsonConstraint(self.structured_outputs.json_)
        if self.guided_json is not None:
            return JsonConstraint(self.guided_json)
        return self.response_format.constraint() if self.response_format else None

    def constraint_path(self) -> str:
        """The JSON pointer of the schema in the request, for errors about it."""
        if self.structured_outputs is not None:
            return "/structured_outputs/json"
        if self.guided_json is not None:
            return "/guided_json"
        return "/response_format/json_schema/schema"

    def sampling(self) -> Sampling:
        return Sampling(max_tokens=self.max_completion_tokens or self.max_tokens,
                        temperature=1.0 if self.temperature is None else self.temperature,
                        top_p=1.0 if self.top_p is None else self.top_p,
                        seed=self.seed, n=self.n or 1)


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int
    message: AssistantMessage
    finish_reason: Literal["stop", "length"]
    logprobs: None = None


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int

    @classmethod
    def of(cls, generation: Generation) -> Usage:
        completion = sum(c.completion_tokens for c in generation.completions)
        return cls(prompt_tokens=generation.prompt_tokens, completion_tokens=completion,
                   total_tokens=generation.prompt_tokens + completion)


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "kernelgen"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class GenerateRequest(BaseModel):
    """The original remote protocol's request: one prompt, sent as one user message."""

    model_config = ConfigDict(extra="ignore")

    prompt: str = Field(min_length=1)
    max_tokens: int | None = Field(None, ge=1)
    temperature: float = Field(1.0, ge=0, le=2)
    schema_dict: dict[str, Any] | None = None
    seed: int | None = Field(None, ge=0, lt=2**63)


class JobCreated(BaseModel):
    job_id: str


JobState = Literal["queued", "running", "done", "error"]


class JobStatus(BaseModel):
    job_id: str
    status: JobState
    response: str | None = None
    error: str | None = None
    finish_reason: Literal["stop", "length"] | None = None
    usage: Usage | None = None


# --- Backends ---------------------------------------------------------------------------------

Messages = list[dict[str, str]]


class Backend(Protocol):
    name: str

    def prepare(self, messages: Messages, sampling: Sampling,
                constraint: JsonConstraint | None) -> Callable[[], Generation]:
        """Check the request and return the work that answers it; bad input raises here."""
        ...


def plain_prompt(messages: Messages) -> str:
    """The prompt for a model without a chat template: the messages' text, one paragraph each."""
    return "\n\n".join(m["content"] for m in messages)


class TransformersBackend:
    """A Hugging Face causal LM in this process, sampled by :func:`kernelgen.model.decoding.generate`
    under an xgrammar grammar per schema hash."""

    name = "transformers"

    def __init__(self, model_path: Path, device: str | None = None) -> None:
        torch = require("torch", "kernelgen serve", "serve")
        transformers = require("transformers", "kernelgen serve", "serve")
        xgr = require("xgrammar", "kernelgen serve", "serve")
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(model_path)
        self.model = transformers.AutoModelForCausalLM.from_pretrained(model_path).to(device)
        self.model.eval()
        config = self.model.config
        self.context_length: int | None = getattr(config, "max_position_embeddings", None)
        self.stop_ids = self._stop_ids()
        vocab_size = self.model.get_output_embeddings().weight.shape[0]
        info = xgr.TokenizerInfo.from_huggingface(self.tokenizer, vocab_size=vocab_size,
                                                  stop_token_ids=sorted(self.stop_ids))
        self.grammars = GrammarCache(info)
        self._model_lock = threading.Lock()

    def _stop_ids(self) -> set[int]:
        ids: set[int] = set()
        for source in (self.tokenizer.eos_token_id,
                       getattr(self.model.generation_config, "eos_token_id", None)):
            if isinstance(source, int):
                ids.add(source)
            elif source is not None:
                ids.update(source)
        if not ids:
            raise KernelgenError("the model declares no end-of-sequence token (tokenizer "
                                 "eos_token or generation_config.eos_token_id): an answer "
                                 "could never end", code="no_eos_token")
        return ids

    def prompt_ids(self, messages: Messages) -> list[int]:
        if not self.tokenizer.chat_template:
            return self.tokenizer(plain_prompt(messages)).input_ids
        from jinja2 import TemplateError

        try:
            text = self.tokenizer.apply_chat_template(messages, tokenize=False,
                                                      add_generation_prompt=True)
        except TemplateError as exc:
            raise RequestError(f"the model's chat template refuses these messages: {exc}",
                               path="/messages", code="bad_messages") from None
        # The template writes the special tokens (BOS) itself.
        return self.tokenizer(text, add_special_tokens=False).input_ids

    def prepare(self, messages: Messages, sampling: Sampling,
                constraint: JsonConstraint | None) -> Callable[[], Generation]:
        prompt_ids = self.prompt_ids(messages)
        budget = token_budget(len(prompt_ids), sampling.max_tokens, self.context_length)
        grammar = self.grammars.get(constraint) if constraint is not None else None
        resolved = replace(sampling, max_tokens=budget)

        def run() -> Generation:
            completions = generate(self.model, prompt_ids, resolved, self.stop_ids,
                                   self._decode, grammar, self._model_lock)
            return Generation(prompt_tokens=len(prompt_ids), completions=completions)

        return run

    def _decode(self, token_ids: list[int]) -> str:
        return self.tokenizer.decode(token_ids, skip_special_tokens=True)


class VllmBackend:
    """vLLM's offline engine (``vllm.LLM``, vLLM >= 0.12 for ``structured_outputs``), with its
    own xgrammar integration. ``vllm.LLM`` is not thread-safe: requests take turns, each one
    batched by vLLM across its ``n`` choices."""

    name = "vllm"

    def __init__(self, model_path: Path) -> None:
        vllm = require("vllm", "kernelgen serve --backend vllm", "vllm")
        self._vllm = vllm
        self._llm = vllm.LLM(model=str(model_path))
        self._has_template = bool(self._llm.get_tokenizer().chat_template)
        self._lock = threading.Lock()

    def prepare(self, messages: Messages, sampling: Sampling,
                constraint: JsonConstraint | None) -> Callable[[], Generation]:
        from vllm.sampling_params import StructuredOutputsParams

        structured = None
        if constraint is not None:
            structured = StructuredOutputsParams(
                json=constraint.schema, json_object=True if constraint.schema is None else None,
                disable_any_whitespace=True)
        try:
            params = self._vllm.SamplingParams(
                n=sampling.n, temperature=sampling.temperature, top_p=sampling.top_p,
                max_tokens=sampling.max_tokens, seed=sampling.seed,
                structured_outputs=structured)
        except ValueError as exc:
            raise RequestError(str(exc), code="bad_sampling") from None

        def run() -> Generation:
            with self._lock:
                try:
                    if self._has_template:
                        [output] = self._llm.chat(messages, params, use_tqdm=False)
                    else:
                        [output] = self._llm.generate(plain_prompt(messages), params,
                                                      use_tqdm=False)
                except ValueError as exc:  # vLLM's refusal of a schema or a length
                    raise RequestError(str(exc), code="bad_request") from None
            return Generation(
                prompt_tokens=len(output.prompt_token_ids),
                completions=[Completion(text=c.text, completion_tokens=len(c.token_ids),
                                        finish_reason="length" if c.finish_reason == "length"
                                        else "stop")
                             for c in output.outputs])

        return run


def load_backend(choice: str, model_path: Path) -> Backend:
    """``auto`` is vLLM where it is installed and a GPU is present, else transformers."""
    if choice not in BACKENDS:
        raise KernelgenError(f"unknown backend {choice!r}; expected one of {BACKENDS}",
                             code="bad_argument")
    if not (model_path / "config.json").is_file():
        raise KernelgenError(f"{model_path} is not a Hugging Face model folder (no config.json)",
                             code="no_model")
    if choice == "auto":
        import torch

        gpu = torch.cuda.is_available()
        choice = "vllm" if gpu and importlib.util.find_spec("vllm") else "transformers"
    if choice == "vllm":
        return VllmBackend(model_path)
    return TransformersBackend(model_path)


# --- Jobs of the /generate protocol -----------------------------------------------------------


@dataclass
class Job:
    status: JobState = "queued"
    generation: Generation | None = None
    error: str | None = None


class JobTable:
    """Jobs by id; they run on the server's worker pool. The oldest finished jobs are forgotten
    beyond ``keep_finished``, so a long-running server does not grow without bound."""

    def __init__(self, executor: ThreadPoolExecutor, keep_finished: int = KEEP_FINISHED_JOBS):
        self._executor = executor
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._keep = keep_finished
        self._lock = threading.Lock()

    def submit(self, work: Callable[[], Generation]) -> str:
        job_id = uuid.uuid4().hex
        with self._lock:
            self._jobs[job_id] = Job()
        self._executor.submit(self._run, job_id, work)
        return job_id

    def status(self, job_id: str) -> JobStatus | None:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return None
            status = JobStatus(job_id=job_id, status=job.status, error=job.error)
            if job.generation is not None:
                [completion] = job.generation.completions
                status.response = completion.text
                status.finish_reason = completion.finish_reason
                status.usage = Usage.of(job.generation)
            return status

    def _run(self, job_id: str, work: Callable[[], Generation]) -> None:
        self._update(job_id, status="running")
        try:
            generation = work()
        except KernelgenError as exc:
            self._update(job_id, status="error", error=str(exc))
        except Exception as exc:  # a job must end with a status, whatever went wrong
            log.exception("job %s failed", job_id)
            self._update(job_id, status="error", error=f"internal error: {exc!r}")
        else:
            self._update(job_id, status="done", generation=generation)

    def _update(self, job_id: str, **changes: Any) -> None:
        with self._lock:
            job = self._jobs[job_id]
            for key, value in changes.items():
                setattr(job, key, value)
            if job.status in ("done", "error"):
                self._jobs.move_to_end(job_id)
                self._forget_oldest()

    def _forget_oldest(self) -> None:
        finished = [i for i, j in self._jobs.items() if j.status in ("done", "error")]
        for job_id in finished[:max(0, len(finished) - self._keep)]:
            del self._jobs[job_id]


# --- The application --------------------------------------------------------------------------


def _error(status: int, message: str, code: str, param: str | None = None) -> Any:
    from fastapi.responses import JSONResponse

    kind = {400: "invalid_request_error", 404: "not_found_error"}.get(status, "server_error")
    return JSONResponse(status_code=status, content={
        "error": {"message": message, "type": kind, "code": code, "param": param}})


def _located(exc: KernelgenError, params: dict[str, str]) -> RequestError:
    """A decoder's error as a request error pointing at the request field that caused it."""
    if isinstance(exc, RequestError):
        return exc
    message = exc.diagnostics[0].message if exc.diagnostics else str(exc)
    return RequestError(message, path=params.get(exc.code, exc.path), code=exc.code)


BUDGET_PARAMS = {"context_length_exceeded": "/max_tokens", "max_tokens_required": "/max_tokens"}
GENERATE_PARAMS = {"bad_schema": "/schema_dict", **BUDGET_PARAMS}


def create_app(backend: Backend, served_name: str, max_concurrency: int = 1) -> FastAPI:
    """The FastAPI application serving ``backend`` under the model name ``served_name``."""
    fastapi = require("fastapi", "kernelgen serve", "serve")
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException

    if max_concurrency < 1:
        raise KernelgenError(f"max_concurrency must be at least 1, got {max_concurrency}",
                             code="bad_argument")
    executor = ThreadPoolExecutor(max_concurrency, thread_name_prefix="kernelgen-generate")
    jobs = JobTable(executor)
    started = int(time.time())

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        executor.shutdown(wait=False, cancel_futures=True)

    app = fastapi.FastAPI(title="kernelgen serve", lifespan=lifespan)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Any, exc: RequestValidationError) -> Any:
        problems = []
        for error in exc.errors():
            if error["type"] == "json_invalid":
                reason = error.get("ctx", {}).get("error", "malformed")
                problems.append(("/", f"the body is not JSON ({reason}, at character "
                                      f"{error['loc'][-1]})"))
                continue
            where = json_pointer([p for p in error["loc"][1:] if isinstance(p, (str, int))])
            problems.append((where or "/", error["msg"].removeprefix("Value error, ")))
        message = "; ".join(f"{where}: {msg}" for where, msg in problems)
        return _error(400, message, "invalid_request", problems[0][0] if problems else None)

    @app.exception_handler(KernelgenError)
    async def refused(request: Any, exc: KernelgenError) -> Any:
        # A request's own faults were made RequestErrors; any other failure is the server's.
        status = exc.status_code if isinstance(exc, RequestError) else 500
        message = exc.diagnostics[0].message if exc.diagnostics else str(exc)
        return _error(status, message, exc.code, exc.path or None)

    @app.exception_handler(HTTPException)
    async def http_error(request: Any, exc: HTTPException) -> Any:
        return _error(exc.status_code, str(exc.detail), "http_error")

    @app.exception_handler(Exception)
    async def crashed(request: Any, exc: Exception) -> Any:
        log.exception("request failed")
        return _error(500, f"internal error: {exc!r}", "internal_error")

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok", "model": served_name, "backend": backend.name}

    @app.get("/v1/models", response_model=ModelList)
    def models() -> ModelList:
        return ModelList(data=[ModelCard(id=served_name, created=started)])

    @app.post("/v1/chat/completions", response_model=ChatCompletion)
    async def chat_completions(request: ChatCompletionRequest) -> ChatCompletion:
        if request.model != served_name:
            raise NotFound(f"model {request.model!r} is not served here; this server serves "
                           f"{served_name!r}", path="/model", code="model_not_found")
        constraint = request.constraint()
        messages = [m.for_template() for m in request.messages]
        try:
            # Tokenizing and compiling a grammar: short, but off the event loop all the same.
            work = await asyncio.to_thread(backend.prepare, messages, request.sampling(),
                                           constraint)
        except KernelgenError as exc:
            params = {"bad_schema": request.constraint_path(), **BUDGET_PARAMS}
            raise _located(exc, params) from None
        generation = await asyncio.wrap_future(executor.submit(work))
        return ChatCompletion(
            id=f"chatcmpl-{uuid.uuid4().hex}", created=int(time.time()), model=served_name,
            choices=[Choice(index=i, message=AssistantMessage(content=c.text),
                            finish_reason=c.finish_reason)
                     for i, c in enumerate(generation.completions)],
            usage=Usage.of(generation))

    @app.post("/generate", response_model=JobCreated)
    def submit_job(request: GenerateRequest) -> JobCreated:
        constraint = None if request.schema_dict is None else JsonConstraint(request.schema_dict)
        sampling = Sampling(max_tokens=request.max_tokens, temperature=request.temperature,
                            seed=request.seed)
        try:
            work = backend.prepare([{"role": "user", "content": request.prompt}], sampling,
                                   constraint)
        except KernelgenError as exc:
            raise _located(exc, GENERATE_PARAMS) from None
        return JobCreated(job_id=jobs.submit(work))

    @app.get("/status/{job_id}", response_model=JobStatus)
    def job_status(job_id: str) -> JobStatus:
        status = jobs.status(job_id)
        if status is None:
            raise NotFound(f"no job {job_id!r} (unknown, or finished long ago and forgotten)",
                           path="/job_id", code="unknown_job")
        return status

    return app
