"""``kernelgen prompt``: the system prompt a model is given, or its size in tokens."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tokens", action="store_true",
                        help="print the size of the system prompt and of its language reference instead")


def run(args: argparse.Namespace) -> int:
    from kernelgen.model.prompt import (SYSTEM_PROMPT_TOKEN_BUDGET, bytes_estimate, count_tokens, language_reference,
                                  task_messages)

    system = task_messages("")[0].content
    if not args.tokens:
        print(system)
        return 0
    for what, text in (("system prompt", system), ("language reference", language_reference())):
        counted = count_tokens(text)
        line = f"{what}: {bytes_estimate(text)} tokens (bytes/4)"
        if counted.method != "bytes/4":
            line += f", {counted.count} tokens ({counted.method})"
        print(line)
    print(f"budget of the system prompt: {SYSTEM_PROMPT_TOKEN_BUDGET} tokens (bytes/4)")
    return 0
