"""Loads kernelgen's pytest plugin when pytest runs from a checkout (it is also a pytest11
entry point once installed; pytest registers it once either way)."""

pytest_plugins = ["kernelgen.harness.plugin"]
