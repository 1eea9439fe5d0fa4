"""The baseline's CPU mode (and the tests that run emitted Triton) use Triton's interpreter,
whose C++ atomics read an operand that is a broadcast view as a dense buffer: every lane after
the first reads the memory past the broadcast element.
:func:`kernelgen.baseline.interpreter_fixes.patch_triton_interpreter_atomics` hands them dense copies. The views
here broadcast the first element of a two-element buffer, so the unpatched interpreter reads
the second one (100) deterministically, not garbage."""

from __future__ import annotations

import numpy as np
import triton.language as tl
from triton._C.libtriton import ir
from triton.runtime import interpreter

from kernelgen.baseline.interpreter_fixes import patch_triton_interpreter_atomics


def _handle(data: np.ndarray, dtype) -> interpreter.TensorHandle:
    return interpreter.TensorHandle(data, dtype)


def _broadcast_first(values: list[int], shape: tuple[int, ...]) -> np.ndarray:
    """A stride-0 view of ``values[0]`` (the rest of the buffer lies right after it)."""
    return np.broadcast_to(np.array(values, dtype=np.int32)[:1].reshape((1,) * len(shape)), shape)


def _add_twice(create_atomic_rmw) -> int:
    """Two lanes add a broadcast 7 into one int32 element that starts at 0."""
    out = np.zeros(1, dtype=np.int32)
    ptr = _handle(np.full((2, 1), out.ctypes.data, dtype=np.uint64), tl.pointer_type(tl.int32))
    val = _handle(_broadcast_first([7, 100], (2, 1)), tl.int32)
    mask = _handle(np.ones((2, 1), dtype=bool), tl.int1)
    create_atomic_rmw(interpreter.interpreter_builder, ir.ATOMIC_OP.ADD, ptr, val, mask,
                      ir.MEM_SEMANTIC.ACQUIRE_RELEASE, ir.MEM_SYNC_SCOPE.GPU)
    return int(out[0])


def _swap_both(create_atomic_cas) -> list[int]:
    """Lanes 0 and 1 swap elements 0 and 1 (both 0) for 1 and 2, comparing with a broadcast 0."""
    out = np.zeros(2, dtype=np.int32)
    ptr = _handle(out.ctypes.data + 4 * np.arange(2, dtype=np.uint64), tl.pointer_type(tl.int32))
    cmp = _handle(_broadcast_first([0, 100], (2,)), tl.int32)
    val = _handle(np.array([1, 2], dtype=np.int32), tl.int32)
    create_atomic_cas(interpreter.interpreter_builder, ptr, cmp, val, ir.MEM_SEMANTIC.ACQUIRE_RELEASE,
                      ir.MEM_SYNC_SCOPE.GPU)
    return out.tolist()


def test_the_unpatched_interpreter_misreads_a_broadcast_atomic_operand() -> None:
    """Why the patch exists (if Triton fixes it, this fails and the patch can go)."""
    builder = interpreter.InterpreterBuilder
    rmw = getattr(builder.create_atomic_rmw, "original", builder.create_atomic_rmw)
    cas = getattr(builder.create_atomic_cas, "original", builder.create_atomic_cas)
    assert _add_twice(rmw) == 7 + 100
    assert _swap_both(cas) == [1, 0]


def test_patched_atomics_give_every_lane_its_value() -> None:
    patch_triton_interpreter_atomics()
    patch_triton_interpreter_atomics()  # idempotent
    builder = interpreter.InterpreterBuilder
    assert _add_twice(builder.create_atomic_rmw) == 14
    assert _swap_both(builder.create_atomic_cas) == [1, 2]
