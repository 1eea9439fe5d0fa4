"""The reference interpreter: the meaning of every construct, in torch on the CPU.

Takes a checked kernel and its launch plans; gives the outputs, or the fact that makes the kernel
wrong whatever the reference says (a race, an unwritten element, an out-of-bounds lane, a false
hint) or too large to interpret (``timeout``). It is CPU mode's executor and the oracle the
compiled kernel is tested against.
"""
