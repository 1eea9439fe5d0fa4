"""``predictions.jsonl`` in the form TritonBench's own evaluator reads.

TritonBench's ``EVAL/eval_T/0_call_acc.py`` (thunlp/TritonBench) reads a JSON Lines file:

* it takes the instruction from the FIRST key of the first line's object (``list(data[0].keys())[0]``)
  and finds the operator by the instruction's ``Functional Description`` (the text between
  ``"Functional Description: "`` and ``"Wrapper Entry Information:"``, newlines removed), which
  must lie in exactly one record's ``description``: so ``instruction`` comes first and is the
  dataset's prompt, byte for byte;
* it reads the code from ``predict``; where that holds "```python" it keeps what follows the
  last such fence (a module written here holds none);
* it writes ``predict + "\\n" + "#" * 146 + "\\n" + <the operator's test part>`` to a file and runs
  it with Python: the call is accurate when the process exits with status 0. Its
  ``1_exe_acc.py`` then compares that file's stdout with the dataset file's.

So each line is ``{"instruction": ..., "predict": ...}``, nothing else: one line per operator of
the manifest, in the manifest's order, failed operators included (their module raises at
import, so the evaluator counts them as failed rather than not seeing them).
"""

from __future__ import annotations

import json
from pathlib import Path

from kernelgen.errors import KernelgenError
from kernelgen.tritonbench.generate import Manifest

PREDICTIONS_FILE = "predictions.jsonl"


def prediction_line(instruction: str, predict: str) -> str:
    """One line: ASCII JSON (``\\u`` escapes), so no character of the text can break the line."""
    return json.dumps({"instruction": instruction, "predict": predict}, ensure_ascii=True)


def write_predictions(out_dir: Path) -> tuple[Path, Manifest]:
    """Write ``out_dir/predictions.jsonl`` from the directory ``kernelgen tritonbench generate``
    wrote; returns its path and the manifest it followed."""
    manifest = Manifest.read(out_dir)
    lines = []
    for entry in manifest.operators:
        module = out_dir / entry.files.get("module", "")
        if "module" not in entry.files or not module.is_file():
            raise KernelgenError(f"{entry.name}'s module is missing from {out_dir}: generate again",
                                 path=str(module), code="missing_module")
        lines.append(prediction_line(entry.instruction, module.read_text(encoding="utf-8")))
    path = out_dir / PREDICTIONS_FILE
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path, manifest
