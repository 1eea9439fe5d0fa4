"""The lowering: a checked kernel -> Triton IR (TTIR), built with Triton's own MLIR builder.

Takes a :class:`~kernelgen.check.checked.CheckedKernel`; gives a verified TTIR module and its
parameter list (:class:`~kernelgen.lower.lowering.LoweredKernel`), or a ``lowering_error`` that
names the AST path.
"""
