"""The raw-LLM baseline (the model writes Triton Python) over every task of every tier, judged
like the pipeline: one case per task and sample, marked ablation, baseline and its tier."""

from kernelgen.harness.plugin import run_baseline_case as test_baseline  # noqa: F401
