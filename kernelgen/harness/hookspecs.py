"""Hooks that kernelgen's pytest plugin calls, for reporting plugins to implement.

Registered by :mod:`kernelgen.harness.plugin` through ``pytest_addhooks``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from kernelgen.task.results import CaseResult


@pytest.hookspec
def pytest_kernelgen_case_result(config: pytest.Config, item: pytest.Item, result: CaseResult) -> None:
    """A case has finished: ``result`` is its full record, artifacts included.

    Called in the process that ran the case (an xdist worker under ``-n``), before the result is
    added to the test's report and before the test passes or fails, so implementations may
    attach files to the test (Allure) or add entries to ``result.extra``, which then travel with
    the result to the controller. The controller receives the result without its artifacts.
    """
