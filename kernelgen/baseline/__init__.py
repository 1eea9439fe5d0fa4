"""The raw-LLM baseline: a model's Triton Python, run in a sandbox and judged like the pipeline.

Takes a model's answer text for a task; gives the extracted code or a refusal by the static
rules, the answer's outputs and times from a sandboxed child, and a
:class:`~kernelgen.task.results.CaseResult` like the pipeline's.
"""
