"""kernelgen: measure how well language models write GPU kernels.

The pipeline is a chain of plain functions over typed artifacts::

    parse_kernel(text) -> Kernel -> check() -> CheckedKernel -> lower() -> TTIR
        -> compile() -> cubin -> launch on the GPU -> verify against PyTorch -> time

Stages live in modules of their own (``parse``, ``check``, ``interpret``, ``lower``, ...);
importing this package imports none of the heavy parts.
"""

__version__ = "0.1.0"
