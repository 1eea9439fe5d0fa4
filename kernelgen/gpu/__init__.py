"""The GPU side: compile to PTX and cubin, launch with CuPy, verify and time on the device.

Takes a checked kernel and a task; gives a compiled variant per specialization (cached), launches
on torch's stream, the case's GPU verification and timing, autotuning, the compiler's facts and
which GPU this process owns. Jobs that may crash or hang run in an executor process.
"""
