"""Loads kernelgen's pytest plugin when pytest runs from a checkout (it is also a pytest11
entry point once installed; pytest registers it once either way), schedules this checkout's
xdist runs by work stealing, and runs the cases marked ``heavy`` only when asked for."""
from __future__ import annotations

import os
import re

import pytest

pytest_plugins = ["kernelgen.harness.plugin"]


def pytest_configure(config: pytest.Config) -> None:
    """Under ``-n``, xdist's default schedule (``load``) hands each worker its share of the cases up
    front, so one worker may end minutes after the other: this suite's cases take from a tenth of a
    second to two minutes (the red-team catalogue on 2 cores: 668 s against 539 s stolen, for 1071
    and 1003 s of work, 2026-12-06). A ``--dist`` given on the command line or in PYTEST_ADDOPTS
    stays as given."""
    given = config.invocation_params.args + tuple(os.environ.get("PYTEST_ADDOPTS", "").split())
    if getattr(config.option, "dist", "no") == "load" and not any(
            arg in ("-d", "--dist") or arg.startswith("--dist=") for arg in given):
        config.option.dist = "worksteal"


_HEAVY = re.compile(r"\bheavy\b")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The cases marked ``heavy`` (the red-team catalogue's costliest CPU-mode cases:
    ``tests/redteam/heavy.txt``) run when a ``-m`` expression names ``heavy`` (``-m heavy``, ``-m
    "heavy or not heavy"`` for everything); otherwise they skip, saying how to run them, so that
    the README's ``pytest -n 2`` keeps within CI's 25 minutes on 2 cores."""
    if _HEAVY.search(config.getoption("markexpr", "") or ""):
        return
    skip = pytest.mark.skip(reason="heavy: one of the red-team catalogue's costliest CPU-mode cases "
                                   "(tests/redteam/heavy.txt); runs with -m heavy")
    for item in items:
        if item.get_closest_marker("heavy") is not None:
            item.add_marker(skip)
