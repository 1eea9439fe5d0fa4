"""The stable diagnostic codes a kernel can earn, each with the condition that raises it.

This is the one registry of codes for the stages that judge a kernel: parsing
(:mod:`kernelgen.parse`), checking (:mod:`kernelgen.check`, :mod:`kernelgen.bounds`) and
running it on the host and in the interpreter (:mod:`kernelgen.host`, :mod:`kernelgen.wrapper`,
:mod:`kernelgen.interpret`). The checker refuses to raise a code that is not here, the prompt's
language reference lists every entry, and ``tests/test_rules.py`` scans those modules' sources
for the codes they raise and fails on one that is missing here. A code is ``snake_case`` of two
words or more (the scan tells codes from one-word messages so). A new code is one line below;
the node it concerns says the rule in its docstring (:mod:`kernelgen.language`), with the code.
"""

from __future__ import annotations

RULES: dict[str, str] = {
    # Parsing: the answer as JSON, then as the schema of the AST.
    "json_syntax": "the answer is not one JSON document (empty, truncated, a syntax error at a line and column)",
    "unknown_op": "an 'op' the language does not have",
    "missing_field": "a required field is missing, or an object where an expression goes has no 'op'",
    "unknown_field": "a field the node does not have",
    "bad_type": "a field's value has the wrong JSON type",
    "bad_name": "a name that is not an identifier",
    "too_deep": "expressions nest too deeply (bind inner parts with let)",
    "bad_value": "a value outside the field's choices, or a literal that does not fit where it is used "
                 "(a full's value for its dtype, a fixed size or meta value < 1, a literal loop step <= 0, "
                 "a choice index)",
    # Checking: names, types, shapes, host expressions, the signature.
    "undefined_name": "a name not bound where it is used (see Param), or a meta override that is no meta name",
    "duplicate_name": "a name bound twice where both are visible, or declared twice in the document",
    "dtype_mismatch": "two different concrete dtypes meet (cast one), or a stored value or 'other' is not the "
                      "pointee's dtype",
    "shape_mismatch": "shapes that do not broadcast, or a reshape that changes the element count",
    "not_power_of_two": "a block dimension that is not a power of two",
    "block_too_large": "a block of more than 2**20 elements",
    "bad_axis": "an axis outside the value's rank, a program axis outside the grid, or trans dims that are "
                "no permutation",
    "dot_shape": "dot of blocks that are not [M,K] x [K,N] with M, N, K >= 16, or an acc that is not [M,N]",
    "dot_dtype": "dot operands not of one float dtype, an f16 dot of non-f16, tf32 of non-f32, or an acc not "
                 "of the dot's dtype",
    "loop_carry_type": "a carry's next has another dtype, shape or pointerness than its init",
    "store_to_input": "a store through a pointer that may point into an input (inputs are read-only)",
    "not_a_pointer": "load or store through a value that is not a pointer",
    "bad_operand": "an operation on operands it does not take (bool arithmetic, ordering bools, float "
                   "and/or/xor, ptr * int, int - ptr, a pointer in a unary, cast or reduce)",
    "needs_float": "div, fma, floor or ceil of integers (div: use idiv)",
    "needs_int": "a float where an integer goes (idiv, cdiv, pointer offsets, loop bounds, host arithmetic, "
                 "grid and output shapes)",
    "needs_bool": "a mask, a where condition or 'not' got a non-bool (compare first)",
    "needs_f32": "a transcendental or pow of a non-f32 value, or sum of f16/bf16 (cast to f32 first)",
    "needs_scalar": "a loop start, stop or step that is a block",
    "not_constexpr": "a block dimension that is neither an int nor a meta name",
    "host_only": "stride/numel in the kernel body (bind them to params)",
    "device_only": "an operation other than + - * idiv cdiv rem maximum minimum stride numel in a host "
                   "expression",
    "output_not_written": "an output that no store writes",
    "bad_binding": "a pointer param given a dtype, or a float value bound as i32/i64",
    "other_without_mask": "a load with 'other' but no 'mask'",
    "bad_signature": "inputs, roles and views that do not fit together (see Input and Kernel)",
    "unproven_bounds": "an unmasked load or store the checker cannot prove inside its tensor (see Bounds)",
    # Running: the host's evaluation of a call, and the interpreter.
    "bad_arguments": "a call's arguments do not fit the inputs, an output shape < 0, or an i32 param's value "
                     "out of range (declare it i64)",
    "unsupported_argument": "a call passes a choice not among the choices, or a fixed argument not at its default",
    "bad_grid": "a grid size < 0, or above 2**31-1 on axis 0 or 65535 on axes 1 and 2",
    "division_by_zero": "idiv, cdiv or rem by zero in a host expression",
    "out_of_bounds": "an active lane of a load or store outside its tensor, when run",
    "bad_loop": "a loop step <= 0 or more than 2**20 iterations, when run by the interpreter",
}
