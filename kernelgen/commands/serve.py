"""``kernelgen serve --model PATH``: an OpenAI-compatible server with JSON-schema constrained
decoding (and the ``/generate`` + ``/status`` protocol), see :mod:`kernelgen.model.serve`."""

from __future__ import annotations

import argparse
from pathlib import Path


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return int(text)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, type=Path,
                        help="a Hugging Face model folder (config, weights, tokenizer)")
    parser.add_argument("--served-model-name", metavar="NAME",
                        help="the model's name in the API (default: the folder's name)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--backend", choices=("auto", "vllm", "transformers"), default="auto",
                        help="auto: vLLM where it is installed and a GPU is present, "
                             "else transformers")
    parser.add_argument("--max-concurrency", type=positive_int, default=4, metavar="N",
                        help="requests generating at once; more wait in a queue (default 4)")


def run(args: argparse.Namespace) -> int:
    from kernelgen.errors import require
    from kernelgen.model.serve import create_app, load_backend

    uvicorn = require("uvicorn", "kernelgen serve", "serve")
    model_path = args.model.expanduser().resolve()
    backend = load_backend(args.backend, model_path)
    name = args.served_model_name or model_path.name
    app = create_app(backend, name, args.max_concurrency)
    print(f"kernelgen serve: {name!r} ({backend.name}) on http://{args.host}:{args.port}/v1",
          flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="info")
    return 0
