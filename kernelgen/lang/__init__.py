"""The kernel language: the JSON AST a model writes, and what holds before any checking.

Takes an answer's text; gives a :class:`~kernelgen.lang.nodes.Kernel` (:func:`parse.parse_kernel`)
or a ``schema_error`` that says where. Also here: the AST's compact JSON schema (the grammar's
source), the registry of diagnostic codes every later stage raises (:mod:`.rules`), the literal
limits of each dtype, generic-dtype instantiation, and the bit-level numerics (Philox, fp8
rounding) that the interpreter and the lowering both implement.
"""
