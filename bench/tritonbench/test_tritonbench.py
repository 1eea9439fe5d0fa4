"""The TritonBench-T track: one case per operator of a TritonBench checkout (the 30-operator
sample by default), scored by call accuracy, execution accuracy and, on a GPU, speedup over
the perf_T sizes. The golden ASTs (``--llm reference``) are in ``golden/``, one per operator."""

from kernelgen.tritonbench.pytest_plugin import run_tritonbench_case as test_tritonbench  # noqa: F401
