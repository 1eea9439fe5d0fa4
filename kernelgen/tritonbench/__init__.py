"""The TritonBench-T track: operators from a TritonBench checkout (thunlp/TritonBench).

:func:`load_tritonbench` reads a checkout as it is; see :mod:`kernelgen.tritonbench.loader`
for the layout and the quirks it absorbs, :mod:`kernelgen.tritonbench.perf_script` for the
static reading of the perf scripts.
"""

from kernelgen.tritonbench.loader import (
    FunctionSources,
    Operator,
    Perf,
    PerfResult,
    Prompt,
    Prompts,
    ReferenceCode,
    TestCode,
    TritonBench,
    TritonBenchError,
    function_sources,
    load_reference_namespace,
    load_tritonbench,
    split_source,
)
from kernelgen.tritonbench.perf_script import PerfCase
from kernelgen.tritonbench.signatures import WrapperSignature, parse_wrapper_entry

__all__ = ["FunctionSources", "Operator", "Perf", "PerfCase", "PerfResult", "Prompt", "Prompts",
           "ReferenceCode", "TestCode", "TritonBench", "TritonBenchError", "WrapperSignature",
           "function_sources", "load_reference_namespace", "load_tritonbench", "parse_wrapper_entry",
           "split_source"]
