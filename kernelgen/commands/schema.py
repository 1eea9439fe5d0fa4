"""``kernelgen schema``: the JSON schema a model's answer is constrained by."""

from __future__ import annotations

import argparse
import json


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pretty", action="store_true", help="indent the schema for reading")


def run(args: argparse.Namespace) -> int:
    from kernelgen.lang.schema import kernel_schema, schema_text

    print(json.dumps(kernel_schema(), indent=2) if args.pretty else schema_text())
    return 0
