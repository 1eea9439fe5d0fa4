"""The hard tier (matmul and fused epilogues, attention, norms with their statistics) through
the constrained AST pipeline: one case per task file in this folder and sample."""

from kernelgen.harness.plugin import run_pipeline_case as test_pipeline  # noqa: F401
