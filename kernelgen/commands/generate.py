"""``kernelgen generate --llm P (--task ID | "PROMPT") [-n K]``: ask a model for kernels.

Prints one line per valid answer: the model's JSON document, compact, in sample order. An
answer the grammar or the schema rejects, or a call that fails, is reported on standard error,
and the exit status is then 1 (after the valid answers are printed). Generations are recorded
in the cache directory, so the same command runs again offline with ``--llm replay:DIR``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from kernelgen.errors import KernelgenError

if TYPE_CHECKING:
    from kernelgen.model.providers.base import GenerationRequest


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", nargs="?", help="a free-form task (or use --task)")
    parser.add_argument("--task", metavar="ID", help="a benchmark task by id (relu) or tier/id")
    parser.add_argument("--llm", metavar="PROVIDER",
                        help="openai, nim, ollama, gemini, remote, hf, reference or replay:DIR "
                             "(NAME:MODEL also names the model); default: from the environment "
                             "(USE_REMOTE_MODEL, NVIDIA_API_KEY, GEMINI_API_KEY)")
    parser.add_argument("--base-url", metavar="URL", help="the server's base URL")
    parser.add_argument("--model", metavar="NAME", help="the model (a path for hf)")
    parser.add_argument("--api-key-env", metavar="VAR",
                        help="the environment variable holding the API key")
    parser.add_argument("--structured", metavar="MODE",
                        help="how the schema is sent: response_format, structured_outputs, "
                             "guided_json, nvext or none (OpenAI-compatible servers); "
                             "responseJsonSchema or responseMimeType (gemini)")
    parser.add_argument("-n", "--samples", type=int, default=1, metavar="K", help="answers to ask for")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--max-tokens", type=int, default=4096)
    parser.add_argument("--seed", type=int, help="sample i is drawn with seed SEED + i")
    parser.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                        help="the limit of one HTTP call")
    parser.add_argument("--max-attempts", type=int, default=4,
                        help="attempts of a call before it fails (429, 5xx, timeouts and dropped "
                             "connections are retried with backoff)")
    parser.add_argument("--concurrency", type=int, default=4, help="calls in flight at once")
    parser.add_argument("--cache-dir", metavar="DIR",
                        help="where generations are recorded (default: generations/ in $KERNELGEN_CACHE_DIR, "
                             "else in ~/.cache/kernelgen)")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor record generations")


def _request(args: argparse.Namespace) -> GenerationRequest:
    from kernelgen.model.generation import prompt_request, task_request
    from kernelgen.model.providers.base import Sampling
    from kernelgen.task.spec import get_task

    if (args.task is None) == (args.prompt is None):
        raise KernelgenError("give either --task ID or a prompt, not both or neither", code="bad_argument")
    if args.samples < 1 or args.max_tokens < 1 or args.temperature < 0:
        raise KernelgenError("-n and --max-tokens must be >= 1 and --temperature >= 0", code="bad_argument")
    sampling = Sampling(temperature=args.temperature, max_tokens=args.max_tokens, seed=args.seed)
    if args.prompt is not None:
        return prompt_request(args.prompt, sampling)
    return task_request(get_task(args.task), sampling)


def run(args: argparse.Namespace) -> int:
    from kernelgen.env import generation_cache_dir
    from kernelgen.model.generation import GenerationCache, generate_samples
    from kernelgen.model.grammar import validate_answer
    from kernelgen.model.providers import ProviderOptions, make_provider
    from kernelgen.model.providers.base import RetryPolicy

    request = _request(args)
    options = ProviderOptions(base_url=args.base_url, model=args.model, api_key_env=args.api_key_env,
                              structured=args.structured, timeout_s=args.timeout,
                              retry=RetryPolicy(max_attempts=max(1, args.max_attempts)),
                              concurrency=max(1, args.concurrency))
    provider = make_provider(args.llm, options)
    cache = None if args.no_cache else GenerationCache(args.cache_dir or generation_cache_dir())
    failed = 0
    for sample in generate_samples(provider, request, args.samples, cache):
        if sample.error is not None:
            failed += 1
            _report(sample.index, sample.error)
            continue
        try:
            validate_answer(sample.record.text)
        except KernelgenError as exc:
            failed += 1
            _report(sample.index, exc)
            continue
        print(json.dumps(json.loads(sample.record.text), separators=(",", ":")), flush=True)
    if failed:
        print(f"{failed} of {args.samples} answers failed", file=sys.stderr)
    return 1 if failed else 0


def _report(index: int, error: KernelgenError) -> None:
    for diagnostic in error.diagnostics:
        print(f"sample {index}: {error.stage}: {diagnostic}", file=sys.stderr)
