"""The static checker: types, shapes, names, host expressions, tiles, hints and bounds.

Takes a parsed :class:`~kernelgen.lang.nodes.Kernel` (and meta values, a dtype binding); gives a
:class:`~kernelgen.check.checked.CheckedKernel` (or a multi-launch
:class:`~kernelgen.check.checked.Checked` program), the types every later stage reads, or a
``semantic_error`` with a stable code and the JSON path of the node at fault.
"""
