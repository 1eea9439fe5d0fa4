"""The stable diagnostic codes a kernel can earn, each with the condition that raises it.

This is the one registry of codes: the checker refuses to raise a code that is not here, the
prompt's language reference lists every entry, and a test scans the stages' sources for the
codes they raise and fails on one that is missing here.
"""

from __future__ import annotations

RULES: dict[str, str] = {
    "undefined_name": "a name is used where it is not bound (params, meta, let, loop var, carry)",
    "duplicate_name": "a name is bound twice where both are visible; names are never rebound",
    "dtype_mismatch": "two different dtypes meet (cast one), or a value of the wrong dtype",
    "shape_mismatch": "block shapes that do not broadcast, or a reshape that changes the size",
    "not_power_of_two": "a block dimension that is not a power of two",
    "block_too_large": "a block of more than 2**20 elements",
    "bad_axis": "an axis outside the value's rank, or a program axis outside the grid",
    "dot_shape": "dot needs 2-D [M,K] x [K,N] blocks with M, N, K >= 16 and acc of [M,N]",
    "dot_dtype": "dot needs both operands f16, bf16 or f32, and acc in the result dtype",
    "loop_carry_type": "a carried value's next has another dtype or shape than its init",
    "store_to_input": "a store into an input tensor (inputs are read-only)",
    "unproven_bounds": "an unmasked load or store whose offsets may leave the tensor",
    "not_a_pointer": "load or store through a value that is not a pointer",
    "bad_operand": "an operation on operands it does not take (bool arithmetic, ptr * int)",
    "needs_float": "an operation that takes floats got integers (div: use idiv)",
    "needs_int": "an operation that takes integers got floats (idiv, cdiv, arange bounds)",
    "needs_bool": "a mask, a where condition or 'not' got a non-bool (compare first)",
    "needs_f32": "exp, log, sqrt, tanh, ... and pow take f32; sum takes f32/i32/i64",
    "needs_scalar": "a loop bound, grid size or shape takes a scalar and got a block",
    "not_constexpr": "a block dimension that is neither an int nor a meta name",
    "host_only": "stride/numel are host expressions, not kernel values (pass them as params)",
    "device_only": "a kernel operation (load, program_id, ...) in a host expression",
    "output_not_written": "an output tensor that no store writes",
    "bad_binding": "a param bound to something other than a tensor, size, scalar or int",
    "bad_value": "a literal that does not fit where it is used",
    "other_without_mask": "a load with 'other' but no 'mask'",
    "bad_signature": "inputs, roles and views that do not fit together (a view's shapes, a choice's default)",
}
