"""The emitter: a checked kernel as readable Triton Python, a ``@triton.jit`` kernel and its launcher.

Takes a checked kernel; gives a Python module's source that Triton's own front end compiles, the
second path to the same kernel that the differential tests compare with the lowering, and what a
person reads.
"""
