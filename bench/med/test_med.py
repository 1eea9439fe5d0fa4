"""The med tier (reductions, normalizations and activations over 2-D inputs) through the
constrained AST pipeline: one case per task file in this folder and sample."""

from kernelgen.harness.plugin import run_pipeline_case as test_pipeline  # noqa: F401
