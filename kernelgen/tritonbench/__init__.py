"""The TritonBench-T track: operators from a TritonBench checkout (thunlp/TritonBench).

:func:`load_tritonbench` reads a checkout as it is; see :mod:`kernelgen.tritonbench.loader`
for the layout and the quirks it absorbs.
"""

from kernelgen.tritonbench.loader import (
    FunctionSources,
    Operator,
    Perf,
    PerfCase,
    PerfResult,
    Prompt,
    Prompts,
    ReferenceCode,
    TestCode,
    TritonBench,
    TritonBenchError,
    WrapperSignature,
    function_sources,
    load_reference_namespace,
    load_tritonbench,
    parse_wrapper_entry,
    split_source,
)

__all__ = ["FunctionSources", "Operator", "Perf", "PerfCase", "PerfResult", "Prompt", "Prompts",
           "ReferenceCode", "TestCode", "TritonBench", "TritonBenchError", "WrapperSignature",
           "function_sources", "load_reference_namespace", "load_tritonbench", "parse_wrapper_entry",
           "split_source"]
