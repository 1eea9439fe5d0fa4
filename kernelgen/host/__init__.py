"""The host side of a call: from a call's arguments to a launch plan.

Takes a checked kernel and a call (tensors, numbers, choices, as PyTorch users pass them); gives
a :class:`~kernelgen.host.plan.LaunchPlan` per launch (param values, grid, output shapes), the
wrapper that binds calls like the operator's signature, and random inputs for given sizes.
"""
