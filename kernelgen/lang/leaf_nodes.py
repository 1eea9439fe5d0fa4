"""Nodes that hold no expression: the base class of every node, program ids, the SM count and
the barrier. They live apart from :mod:`kernelgen.lang.nodes` (which imports them into its
unions) because nothing in them refers back to an expression."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict

from kernelgen.lang.fields import exact_int


class Node(BaseModel):
    """Strict: no coercion, so ``true`` or ``1500.0`` where an int goes, ``1`` where a bool
    goes, are schema errors rather than silently read as another value."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class ProgramId(Node):
    """This program's index on a grid axis (program_id), or the grid's size there: an i32
    scalar; ``axis`` < the grid's length (bad_axis). Axis 0 is dispatched first: tiling a
    row-major matrix, put the column blocks on axis 0 (programs running together cover whole
    rows; up to 5% faster on an H100)."""

    op: Literal["program_id", "num_programs"]
    axis: Annotated[Literal[0, 1, 2], BeforeValidator(exact_int)] = 0


class DeviceInfo(Node):
    """Host only (host_only in the body): the SM count of the GPU running the launch (132 on an
    H100/H200; 3 in the interpreter, so persistent loops walk several tiles at small sizes). A
    portable persistent grid: ``minimum(tiles, num_sms)``, or a multiple of num_sms, with loops
    stepping by num_programs. Not in an output's shape (device_dependent); scratch may use it."""

    op: Literal["num_sms"]


class Barrier(Node):
    """tl.debug_barrier: the program's threads wait here; stores before it are visible to loads
    after it. Lanes are threads: after a store or load of an element, its access from another
    thread (other block shape or position; compiled, the thread Triton lays each access on, by its
    pointer's contiguity and dtype) before a barrier (or a reduction across warps) is
    missing_barrier, when run; e.g. store a column, barrier, load it as a row. A scalar (any block of fewer elements than threads)
    is stored by one thread, loaded by all: read back into another shape, it needs one too.
    Allowed in ifs and loops (they are per program)."""

    op: Literal["barrier"]
