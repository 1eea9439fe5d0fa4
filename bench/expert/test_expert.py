"""The expert tier (split reductions, scans, gathers through index tables, quantized formats,
backward passes, decode-time attention: tasks where speed needs the whole language) through
the constrained AST pipeline: one case per task file in this folder and sample."""

from kernelgen.harness.plugin import run_pipeline_case as test_pipeline  # noqa: F401
