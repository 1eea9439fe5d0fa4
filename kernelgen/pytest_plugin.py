"""kernelgen's pytest plugin: loaded by the project's conftest.py and as a pytest11 entry point.

It stays inert in other projects: it only adds options and the ``gpu`` skip.
"""

from __future__ import annotations

import functools

import pytest


@functools.lru_cache(maxsize=1)
def gpu_unavailable_reason() -> str | None:
    """Why GPU tests cannot run here, or None when a CUDA GPU is present."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU on this machine (launch and timing need one)"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = None
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            reason = reason or gpu_unavailable_reason()
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
