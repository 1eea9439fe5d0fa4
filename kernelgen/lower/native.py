"""What native code prints while kernelgen lowers and compiles, and MLIR's diagnostics in it.

MLIR, LLVM and Triton's passes write straight to the process's file descriptors, not to
Python's streams; catching that text and reading MLIR's ``loc: error:`` lines back as
diagnostics at AST paths is a concern of its own, shared by the lowering
(:mod:`kernelgen.lower.lowering`, which re-exports these names) and the compile worker.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from typing import BinaryIO

from kernelgen.errors import Diagnostic


class NativeOutput:
    """What native code wrote to file descriptors 1 and 2 while a ``with`` block ran.

    MLIR, LLVM and Triton's passes print diagnostics straight to the C++ streams, past Python's
    ``sys.stderr``; this redirects the descriptors themselves into a file and reads it back.
    Descriptors are process-wide, so only one capture may be active at a time in a process
    (compilation runs in its own worker process).

    ``sink`` is where the text goes: by default a fresh temporary file; the compile worker
    passes its log file, so that what a crashing compile printed survives the crash.
    """

    def __init__(self, sink: BinaryIO | None = None) -> None:
        self._sink = sink
        self._own_sink = sink is None
        self._saved: list[tuple[int, int]] = []
        self._start = 0
        self.text = ""

    def __enter__(self) -> NativeOutput:
        sys.stdout.flush()
        sys.stderr.flush()
        if self._sink is None:
            self._sink = tempfile.TemporaryFile()
        self._sink.seek(0, os.SEEK_END)
        self._start = self._sink.tell()
        for fd in (1, 2):
            self._saved.append((fd, os.dup(fd)))
            os.dup2(self._sink.fileno(), fd)
        return self

    def __exit__(self, *exc_info: object) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, saved in self._saved:
            os.dup2(saved, fd)
            os.close(saved)
        self._saved.clear()
        assert self._sink is not None
        self._sink.seek(self._start)
        self.text = self._sink.read().decode("utf-8", errors="replace")
        if self._own_sink:
            self._sink.close()


_NATIVE_SINK: BinaryIO | None = None


def set_native_output_sink(sink: BinaryIO | None) -> None:
    """Send every later capture of this process into ``sink`` (see :class:`NativeOutput`)."""
    global _NATIVE_SINK
    _NATIVE_SINK = sink


def capture_native_output() -> NativeOutput:
    return NativeOutput(_NATIVE_SINK)


_DIAGNOSTIC_LINE = re.compile(r"^(?P<loc>\S*?):\d+:\d+: (?P<severity>error|warning|note|remark): (?P<message>.*)$")


def parse_mlir_diagnostics(text: str, code: str, fallback_path: str = "") -> list[Diagnostic]:
    """MLIR's ``loc: error: message`` lines as diagnostics at the AST paths the locations name.

    Lines after an error (the op MLIR prints with it, notes) are appended to its message; text
    with no error line at all (an LLVM fatal error, a pass's own complaint) becomes one
    diagnostic at ``fallback_path``.
    """
    diagnostics: list[Diagnostic] = []
    loose: list[str] = []
    for line in text.splitlines():
        match = _DIAGNOSTIC_LINE.match(line)
        if match and match["severity"] == "error":
            path = match["loc"] if match["loc"].startswith("/") else fallback_path
            diagnostics.append(Diagnostic("" if path == "/" else path, code, match["message"]))
        elif line.strip():
            loose.append(line.strip())
            if diagnostics:
                last = diagnostics[-1]
                diagnostics[-1] = Diagnostic(last.path, last.code, f"{last.message}\n{line.strip()}")
    if not diagnostics and loose:
        diagnostics.append(Diagnostic(fallback_path, code, "\n".join(loose)))
    return diagnostics
