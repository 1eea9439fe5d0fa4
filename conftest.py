"""Loads kernelgen's pytest plugin when pytest runs from a checkout (it is also a pytest11
entry point once installed; pytest registers it once either way), and schedules this checkout's
xdist runs by work stealing."""
from __future__ import annotations

import os

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
