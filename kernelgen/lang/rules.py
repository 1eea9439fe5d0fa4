"""The stable diagnostic codes a kernel can earn, each with the condition that raises it.

This is the one registry of codes for the stages that judge a kernel: parsing
(:mod:`kernelgen.lang.parse`), checking (:mod:`kernelgen.check.checker`, :mod:`kernelgen.check.tiles`, :mod:`kernelgen.lang.generic`, :mod:`kernelgen.lang.limits`,
:mod:`kernelgen.check.sequence`, :mod:`kernelgen.check.bounds`) and
running it on the host and in the interpreter (:mod:`kernelgen.host.plan`, :mod:`kernelgen.host.wrapper`, :mod:`kernelgen.check.polymorphism`,
:mod:`kernelgen.interp.execute`, :mod:`kernelgen.interp.accesses`, :mod:`kernelgen.interp.budget`) and verifying its results
(:mod:`kernelgen.task.verify`). The checker refuses to raise a code that is not here, the prompt's
language reference lists every entry, and ``tests/test_rules.py`` scans those modules' sources
for the codes they raise and fails on one that is missing here. A code is ``snake_case`` of two
words or more (the scan tells codes from one-word messages so). A new code is one line below;
the node it concerns says the rule in its docstring (:mod:`kernelgen.lang.nodes`), with the code.
"""

from __future__ import annotations

RULES: dict[str, str] = {
    # Parsing: the answer as JSON, then as the schema of the AST.
    "json_syntax": "the answer is not one JSON document",
    "unknown_op": "an 'op' the language does not have",
    "missing_field": "a required field (or an expression object's 'op') is missing",
    "unknown_field": "a field the node does not have",
    "bad_type": "a field's value has the wrong JSON type",
    "bad_name": "a name that is not an identifier (a kernel named '_' alone)",
    "name_too_long": "a name of more than 64 characters",
    "reserved_name": "a name spelled like a literal ('inf', 'nan')",
    "duplicate_key": "a JSON object with the same key twice",
    "too_deep": "expressions nest too deeply (bind inner parts with let)",
    "bad_value": "a value outside the field's choices, or a number that does not fit",
    "literal_out_of_range": "a literal outside the dtype it takes (i8..i64, u8, f16/bf16/f32's largest finite)",
    # Checking: names, types, shapes, host expressions, the signature.
    "undefined_name": "a name not bound where it is used (see Param)",
    "duplicate_name": "a name bound twice where both are visible, or declared twice",
    "dtype_mismatch": "two different concrete dtypes meet (cast one)",
    "shape_mismatch": "shapes that do not broadcast or reshape",
    "not_power_of_two": "a block dimension that is not a power of two",
    "block_too_large": "a block of more than 2**20 elements",
    "bad_axis": "an axis outside the value's rank or the grid",
    "dot_shape": "dot shapes that do not fit (see Dot)",
    "dot_dtype": "dot operand or acc dtypes that do not fit (see Dot)",
    "loop_carry_type": "a carry's next has another type than its init",
    "flatten_nest": "a flattened for that is not the outer loop of a two-loop nest, or an unrolled loop of one (see For)",
    "if_result_type": "an if result whose then and else values differ in shape or dtype",
    "store_to_input": "a store through a pointer that may point into an input",
    "aliased_input": "a param bound to an aliased input (see Output)",
    "tile_view": "a tile's base, rank, shape, strides or offsets break its rules (see TileLoad)",
    "tile_block": "a tile's block dims or dtype that TMA cannot copy (see TileLoad)",
    "not_a_pointer": "load or store through a non-pointer",
    "bad_operand": "an operation on operands it does not take (bool arithmetic, float and/or/xor, ptr * int)",
    "needs_float": "div, fma, floor, ceil, round or finfo of integers (div: use idiv)",
    "needs_int": "a float where an integer goes (iinfo too)",
    "narrow_int": "an i8/u8/i16 value where only i32/i64 go (see Typing rules)",
    "needs_bool": "a mask, a where condition or 'not' got a non-bool (compare first)",
    "bad_dtype_variable": "a dtype names no declared dtype variable, or the declarations clash",
    "needs_f32": "an op that takes f32 or f64 got another dtype (cast first)",
    "needs_scalar": "a loop bound or an if condition that is a block",
    "not_constexpr": "a block dimension that is neither an int nor a meta name",
    "host_only": "stride/numel/num_sms in the kernel body (bind them to params)",
    "device_dependent": "num_sms in an output's shape (what a call returns may not depend on the GPU)",
    "device_only": "a kernel operation in a host expression",
    "output_not_written": "an output that no store writes",
    "bad_binding": "a param's dtype does not fit its value (see Param)",
    "other_without_mask": "a load with 'other' but no 'mask'",
    "atomic_dtype": "an atomic on a dtype Triton refuses for it (see Atomic)",
    "bad_atomic": "atomic_cas without 'cmp' or with 'mask', 'cmp' on another atomic",
    "bad_signature": "inputs, roles and views that do not fit (see Input, Kernel)",
    "bad_hint": "a hint that does not fit its value, or false on a constant (see Hint)",
    "bad_program": "a document with both launches and its own params/grid/body, or neither (see Kernel)",
    "read_before_write": "a load or atomic of an output or scratch element nothing wrote before (no init, not zero)",
    "scratch_unread": "a scratch tensor no launch loads (see Scratch)",
    "bad_bitcast": "a bitcast between dtypes of different widths, or of bool or a pointer",
    "fp8_storage": "fp8 values in arithmetic, comparisons, reductions, scans, sort, top-k, gather, where or full (cast to f16/f32 first)",
    "fp8_target": "an fp8 dot compiled for a target below sm_89",
    "unproven_bounds": "an unmasked load or store not proven inside its tensor (see Bounds)",
    # Running: the host's evaluation of a call, and the interpreter.
    "bad_arguments": "a call's arguments do not fit the inputs, or a host value does not fit",
    "unsupported_argument": "a call's choice or fixed argument the kernel does not take",
    "bad_grid": "a grid size a GPU cannot launch (see Kernel)",
    "too_large": "a call's outputs and scratch together past 2 GiB in the interpreter, 32 GiB on a GPU (refused before allocating)",
    "division_by_zero": "idiv, cdiv or rem by zero in a host expression",
    "out_of_bounds": "an active lane of a load or store outside its tensor, when run",
    "bad_loop": "a loop step <= 0 or more than 2**20 iterations, when the interpreter runs it",
    "index_out_of_range": "a gather index or counted histogram value outside its range, when run",
    "hint_violated": "a hint false on the values, when run (see Hint)",
    "over_budget": "a launch whose work (grid x block elements x loop trips) is past the interpreter's budget (not judged on the CPU)",
    "duplicate_store": "lanes of one store writing different values to one element, when run",
    "missing_barrier": "an element accessed from another lane of its program after a store or load, before a barrier",
    "stale_pipelined_load": "a pipelined loop's load of what its program stored in the loop's last num_stages trips (see For)",
    "tile_proxy_order": "an element a tile_store wrote accessed again in the launch, or a tile access of one a store wrote (see TileStore)",
    "unordered_read": "a named atomic relying on another program's update with no release/acquire between (see Atomic)",
    # Verifying: the results against the reference's, and the launch under other orders.
    "order_dependent": "another program order gives another result (see Atomic)",
    "wrong_shape": "an output's shape is not the reference's",
    "wrong_dtype": "an output's dtype is not the reference's",
    "trivial_zeros": "an output all zeros where the reference is not",
    "copies_input": "an output that copies an input where the reference does not",
    "input_modified": "an input after the call is not as the reference leaves it (changed; an in-place target unwritten)",
    "out_of_bounds_write": "a write past an output's end (a GPU's guard band)",
}
