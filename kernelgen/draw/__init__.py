"""Random kernels for kernelgen's own tests: hypothesis strategies for well-typed, runnable ASTs.

Takes a hypothesis draw; gives a :class:`~kernelgen.draw.kernel.GeneratedKernel` (a kernel, its
sizes and a tolerance per output) or a two-launch program, for differential tests of the
interpreter, the lowering and the emitter.
"""
