"""kernelgen: measure how well language models write GPU kernels.

The pipeline is a chain of plain functions over typed artifacts::

    parse_kernel(text) -> Kernel -> check() -> CheckedKernel -> lower() -> TTIR
        -> compile() -> cubin -> launch on the GPU -> verify against PyTorch -> time

One package per stage, lowest first; a package imports only from its own and lower ones
(``tests/test_imports.py`` holds the order):

    errors, env   what every stage uses: typed failures with a stage, path and code; settings
    lang/         the JSON AST, its parser and schema, the diagnostic codes, dtype limits
    check/        the static checker: a Kernel -> a CheckedKernel, or diagnostics
    host/         a call's arguments -> launch plans; the wrapper; random inputs
    interp/       the reference interpreter: the meaning of every construct, on the CPU
    lower/        a CheckedKernel -> TTIR, with Triton's MLIR builder
    emit/         a CheckedKernel -> readable Triton Python and its launcher
    draw/         random well-typed kernels for kernelgen's own tests
    task/         tasks, cases, size draws, verification and results: what later stages share
    gpu/          compile to cubin, launch, verify and time on the GPU, tune, facts
    model/        prompt, providers, constrained decoding, generations, repair, serve
    baseline/     the raw-Triton baseline: rules, the sandbox, its judging
    harness/      the pytest plugin, the pipeline's stages as a table, options
    tritonbench/  the TritonBench-T track;  report/  Allure, W&B, compare, gate
    commands/     the ``kernelgen`` subcommands;  cli  the entry point

Importing this package imports none of the heavy parts.
"""

__version__ = "0.1.0"
