"""Atomics: checked, interpreted (exact for integers, f64 sums for float adds), raced, lowered
to TTIR, emitted as Triton Python and, on a GPU, compiled and compared with the interpreter.

The kernels: a column sum of an [M, N] matrix split over row blocks, each block adding its
partial sums into a zero-initialised output; a column max with atomic_max into one that
starts at -inf; a distinct-value count by compare-and-swap (and by exchange), whose old values
decide what is counted; and cheating kernels (a plain read-modify-write across programs, a
plain store into an element others update atomically) that the race detector must stop.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from typing import Any

import pytest
import torch

from kernelgen.interp.atomics import apply_atomic
from kernelgen.check.bounds import unproven_accesses
from kernelgen.gpu.case import same_bits
from kernelgen.check.checker import check
from kernelgen.errors import InterpreterError, SemanticError
from kernelgen.host.plan import plan_launch
from kernelgen.interp.execute import execute, interpret
from kernelgen.lang.parse import kernel_from_obj


def op(kind: str, /, **fields: Any) -> dict[str, Any]:
    return {"op": kind, **fields}


def let(name: str, value: Any) -> dict[str, Any]:
    return op("let", name=name, value=value)


def _tile_body(other: Any = None) -> list[dict[str, Any]]:
    """Rows and columns of this program's [BM, BN] tile and its masked load."""
    rows = op("add", lhs=op("mul", lhs=op("program_id", axis=0), rhs="BM"), rhs=op("arange", size="BM"))
    cols = op("add", lhs=op("mul", lhs=op("program_id", axis=1), rhs="BN"), rhs=op("arange", size="BN"))
    load = {"ptr": op("add", lhs="x", rhs=op("add", lhs=op("mul", lhs=op("expand_dims", x="rows", axis=1), rhs="N"),
                                             rhs=op("expand_dims", x="cols", axis=0))),
            "mask": op("and", lhs=op("expand_dims", x=op("lt", lhs="rows", rhs="M"), axis=1),
                       rhs=op("expand_dims", x="col_ok", axis=0))}
    if other is not None:
        load["other"] = other
    return [let("rows", rows), let("cols", cols), let("col_ok", op("lt", lhs="cols", rhs="N")),
            let("tile", op("load", **load))]


def column_kernel(kind: str = "sum", dtype: str = "f32") -> dict[str, Any]:
    """out[n] = sum (or max) over m of x[m, n]: programs over row blocks x column blocks, each
    combining its tile's column partials into ``out`` atomically."""
    reduce, atomic, init, other = {"sum": ("sum", "atomic_add", 0, None),
                                   "max": ("max", "atomic_max", "-inf", "-inf")}[kind]
    partial = op(reduce, x="tile", axis=0)
    if kind == "sum" and dtype in ("f16", "bf16"):  # sums take f32: add the f32 partials as the dtype
        partial = op("cast", x=op("sum", x=op("cast", x="tile", dtype="f32"), axis=0), dtype=dtype)
    return {
        "name": f"col_{kind}_atomic",
        "inputs": [{"name": "x", "dtype": dtype, "shape": ["M", "N"]}],
        "outputs": [{"name": "out", "dtype": dtype, "shape": ["N"], "init": init}],
        "params": [{"name": "x"}, {"name": "out"}, {"name": "M"}, {"name": "N"}],
        "meta": [{"name": "BM", "value": 16}, {"name": "BN", "value": 32}],
        "grid": [op("cdiv", lhs="M", rhs="BM"), op("cdiv", lhs="N", rhs="BN")],
        "body": _tile_body(other) + [
            op(atomic, ptr=op("add", lhs="out", rhs="cols"), val=partial, mask="col_ok")],
    }


def distinct_kernel(how: str = "cas") -> dict[str, Any]:
    """seen[v] = 1 for each value v of idx (its low 6 bits), count = how many distinct: a lane
    counts when its claim of seen[v] finds 0 there, which exactly one lane per value does."""
    offs = op("add", lhs=op("mul", lhs=op("program_id"), rhs="B"), rhs=op("arange", size="B"))
    body = [let("offs", offs), let("ok", op("lt", lhs="offs", rhs="N")),
            let("v", op("and", lhs=op("load", ptr=op("add", lhs="idx", rhs="offs"), mask="ok"), rhs=63))]
    if how == "cas":
        # cas has no mask: a masked-off lane compares with -1, which seen never holds, and the
        # clamp proves the unmasked access inside seen (the values are in range anyway).
        body.append(op("atomic_cas", ptr=op("add", lhs="seen", rhs=op("clamp", x="v", lo=0, hi=63)),
                       cmp=op("where", cond="ok", x=0, y=-1), val=1, name="old", sem="relaxed"))
    else:
        body.append(op("atomic_xchg", ptr=op("add", lhs="seen", rhs="v"), val=1, mask="ok", name="old",
                       scope="gpu", sem="acq_rel"))
    body += [let("new", op("and", lhs="ok", rhs=op("eq", lhs="old", rhs=0))),
             op("atomic_add", ptr="count", val=op("sum", x=op("cast", x="new", dtype="i32"), axis=0))]
    return {
        "name": f"distinct_{how}",
        "inputs": [{"name": "idx", "dtype": "i32", "shape": ["N"]}],
        "outputs": [{"name": "seen", "dtype": "i32", "shape": [64], "init": 0},
                    {"name": "count", "dtype": "i32", "shape": [1], "init": 0}],
        "params": [{"name": "idx"}, {"name": "seen"}, {"name": "count"}, {"name": "N"}],
        "meta": [{"name": "B", "value": 32}],
        "grid": [op("cdiv", lhs="N", rhs="B")],
        "body": body,
    }


def rmw_kernel(kind: str, dtype: str, keep_old: bool = True, sem: str = "acq_rel", scope: str = "gpu") -> dict[str, Any]:
    """acc[min(s[i] & 3, 2)] op= v[i] (acc: 3 elements starting at 7), and with ``keep_old`` each lane's
    old value stored (an order-dependent output: the interpreter's order only)."""
    body = [let("o", op("add", lhs=op("mul", lhs=op("program_id"), rhs="B"), rhs=op("arange", size="B"))),
            let("ok", op("lt", lhs="o", rhs="N")),
            let("slot", op("minimum", lhs=op("and", lhs=op("load", ptr=op("add", lhs="s", rhs="o"), mask="ok"), rhs=3),
                           rhs=2)),
            op(f"atomic_{kind}", ptr=op("add", lhs="acc", rhs="slot"),
               val=op("load", ptr=op("add", lhs="v", rhs="o"), mask="ok"), mask="ok", sem=sem, scope=scope,
               **({"name": "prev"} if keep_old else {}))]
    outputs = [{"name": "acc", "dtype": dtype, "shape": [3], "init": 7}]
    if keep_old:
        outputs.append({"name": "old", "dtype": dtype, "shape": ["N"]})
        body.append(op("store", ptr=op("add", lhs="old", rhs="o"), value="prev", mask="ok"))
    return {"name": f"rmw_{kind}_{dtype}", "inputs": [{"name": "v", "dtype": dtype, "shape": ["N"]},
                                                     {"name": "s", "dtype": "i32", "shape": ["N"]}],
            "outputs": outputs, "params": [{"name": "v"}, {"name": "s"}] + [{"name": o["name"]} for o in outputs]
            + [{"name": "N"}], "meta": [{"name": "B", "value": 16}], "grid": [op("cdiv", lhs="N", rhs="B")],
            "body": body}


def cas2d_kernel() -> dict[str, Any]:
    """One program swaps 9 into each element of a [2, 4] output still at 0, with a [4] cmp
    (x - x: 0, whatever x) and a scalar val."""
    x_c = op("load", ptr=op("add", lhs="x", rhs="c"))
    return {"name": "cas2d", "inputs": [{"name": "x", "dtype": "i32", "shape": [4]}],
            "outputs": [{"name": "out", "dtype": "i32", "shape": [2, 4], "init": 0}],
            "params": [{"name": "x"}, {"name": "out"}], "grid": [1],
            "body": [let("r", op("arange", size=2)), let("c", op("arange", size=4)),
                     let("idx", op("add", lhs=op("mul", lhs=op("expand_dims", x="r", axis=1), rhs=4),
                                   rhs=op("expand_dims", x="c", axis=0))),
                     op("atomic_cas", ptr=op("add", lhs="out", rhs="idx"), cmp=op("sub", lhs=x_c, rhs=x_c),
                        val=op("full", shape=[], value=9, dtype="i32"))]}


def checked(obj: dict[str, Any]):
    return check(kernel_from_obj(obj))


def codes(obj: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(SemanticError) as info:
        checked(obj)
    return [(d.path, d.code) for d in info.value.diagnostics]


# -- interpreter -----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(1, 1), (37, 45), (200, 70)])
def test_column_sum_by_atomic_add_rounds_after_each_add_in_program_order(shape: tuple[int, int]) -> None:
    """One row per program (BM = 1): the atomic adds are the only sums, each rounded to f32 as
    the GPU's atom.add.f32 rounds, in the order run (rows in increasing program order), not the
    f64 sum rounded once."""
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    out = interpret(check(kernel_from_obj(column_kernel("sum")), {"BM": 1}), [x])["out"]
    running = torch.zeros(shape[1])
    for row in x:
        running = running + row
    assert torch.equal(out, running)
    assert not torch.equal(out, x.double().sum(0).float()) or shape[0] < 100


def test_column_sum_in_f16_and_bf16_rounds_to_the_dtype_after_each_add() -> None:
    """Each row block's f32 partial sum, rounded to the dtype, is added into the f16/bf16 output
    and the sum rounded again, block after block (atom.add.f16/.bf16), not summed in f64."""
    for dtype, tdtype in (("f16", torch.float16), ("bf16", torch.bfloat16)):
        x = torch.randn(300, 40, generator=torch.Generator().manual_seed(2)).to(tdtype)
        out = interpret(checked(column_kernel("sum", dtype)), [x])["out"]
        assert out.dtype == tdtype
        running = torch.zeros(40, dtype=tdtype)
        for block in x.split(16):
            running = (running.double() + block.float().sum(0).to(tdtype).double()).to(tdtype)
        assert torch.allclose(out.double(), running.double(), rtol=0, atol=0)
        assert not torch.equal(out, x.double().sum(0).to(tdtype))  # what the f64 sum gave


def test_an_f32_atomic_add_flushes_subnormal_operands_and_results_as_atom_add_f32_does() -> None:
    """The PTX ISA: atom.add.f32 "flushes subnormal inputs and results to sign-preserving zero";
    f64 keeps them, and f16/bf16 (Triton's .noftz) too."""
    tiny = 1e-40  # an f32 subnormal
    buffer = torch.tensor([0.0, tiny, -0.0, 1e-38, 0.0], dtype=torch.float32)
    values = torch.tensor([tiny, 0.0, -tiny, -9.99e-39, 1.0], dtype=torch.float32)
    old = apply_atomic("atomic_add", buffer, torch.arange(5), values, None, "f32")
    assert torch.equal(old, torch.tensor([0.0, tiny, -0.0, 1e-38, 0.0], dtype=torch.float32))
    assert buffer.tolist() == [0.0, 0.0, 0.0, 0.0, 1.0]
    assert torch.signbit(buffer[2])  # -0 + -tiny: a zero of the operands' sign
    wide = torch.zeros(1, dtype=torch.float64)
    apply_atomic("atomic_add", wide, torch.arange(1), torch.tensor([1e-310], dtype=torch.float64), None, "f64")
    assert wide.item() == 1e-310
    half = torch.zeros(1, dtype=torch.float16)
    apply_atomic("atomic_add", half, torch.arange(1), torch.tensor([2.0 ** -20], dtype=torch.float16), None, "f16")
    assert half.item() == 2.0 ** -20


def test_column_max_by_atomic_max_from_minus_infinity() -> None:
    x = torch.randn(100, 50, generator=torch.Generator().manual_seed(3))
    x[5, 7] = float("inf")
    out = interpret(checked(column_kernel("max")), [x])["out"]
    assert torch.equal(out, x.max(0).values)


def test_float_atomic_max_and_min_order_bits_as_triton_does() -> None:
    """Triton's float max is a signed max of non-negative values' bits and an unsigned min of
    negative ones': -0.0 < 0.0, +NaN above +inf, -NaN below -inf. A NaN value is the GPU's
    canonical +NaN (the CPU's arithmetic may set its sign bit); one in memory keeps its sign."""
    nan = torch.tensor([float("nan")])
    values = torch.cat([torch.tensor([0.0, -1.0]), nan, -nan, torch.tensor([5.0])])
    start = torch.cat([torch.tensor([-0.0, -2.0, 1.0, -1.0]), -nan])
    for op_name, want in (("atomic_max", [0.0, -1.0, "+nan", "+nan", 5.0]),
                          ("atomic_min", [-0.0, -2.0, 1.0, -1.0, "-nan"])):
        buffer = start.clone()
        old = apply_atomic(op_name, buffer, torch.arange(5), values.clone(), None, "f32")
        assert same_bits(old, start).all()
        for got, expected in zip(buffer, want):
            if isinstance(expected, str):
                assert torch.isnan(got) and bool(torch.signbit(got)) == (expected == "-nan")
            else:
                assert got.item() == expected and bool(torch.signbit(got)) == bool(torch.signbit(torch.tensor(expected)))


@pytest.mark.parametrize("how", ["cas", "xchg"])
def test_distinct_count_uses_the_old_values(how: str) -> None:
    idx = torch.randint(0, 64, (1000,), generator=torch.Generator().manual_seed(4), dtype=torch.int32)
    idx[idx == 13] = 12  # at least one value is absent
    run = interpret(checked(distinct_kernel(how)), [idx])
    present = torch.zeros(64, dtype=torch.int32)
    present[idx.long()] = 1
    assert torch.equal(run["seen"], present)
    assert run["count"].item() == int(present.sum())


def test_integer_atomics_are_exact_and_old_values_follow_lane_order() -> None:
    """Every op of one launch on a few elements, many lanes each: the final values are the
    sequential ones, and the old values are the prefixes in program, then lane, order. (Programs
    exchanging different values into one element race: the exchange is applied directly.)"""
    n = 200
    vals = torch.randint(-2**31, 2**31 - 1, (n,), generator=torch.Generator().manual_seed(5), dtype=torch.int64)
    slots = torch.randint(0, 3, (n,), generator=torch.Generator().manual_seed(6), dtype=torch.int32)
    for kind in ("add", "max", "min", "and", "or", "xor", "xchg"):
        for dtype, tdtype in (("i32", torch.int32), ("i64", torch.int64)):
            v = vals.to(tdtype)
            kernel = rmw_kernel(kind, dtype)
            if kind == "xchg":
                with pytest.raises(InterpreterError) as error:
                    interpret(checked(kernel), [v, slots])
                assert error.value.code == "race"
                acc_buffer = torch.full((3,), 7, dtype=tdtype)
                prev = apply_atomic("atomic_xchg", acc_buffer, slots.long().clamp(max=2), v, None, dtype)
                run = {"acc": acc_buffer, "old": prev}
            else:
                run = interpret(checked(kernel), [v, slots])
            acc = [7, 7, 7]
            old = []
            for value, slot in zip(v.tolist(), slots.tolist()):
                old.append(acc[slot])
                acc[slot] = {"add": acc[slot] + value, "max": max(acc[slot], value), "min": min(acc[slot], value),
                             "and": acc[slot] & value, "or": acc[slot] | value, "xor": acc[slot] ^ value,
                             "xchg": value}[kind]
                bits = 32 if dtype == "i32" else 64
                acc[slot] = (acc[slot] + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
            assert run["acc"].tolist() == acc, (kind, dtype)
            assert run["old"].tolist() == old, (kind, dtype)


def test_masked_off_lanes_neither_update_nor_count_as_written() -> None:
    k = column_kernel("sum")
    x = torch.ones(20, 50)
    plan = plan_launch(checked(k), [x])
    run = execute(plan)
    assert run.outputs["out"].tolist() == [20.0] * 50
    assert bool(run.written["out"].all())  # an init fill is defined everywhere


def test_an_output_without_init_written_only_by_atomics_counts_the_touched_elements() -> None:
    """seen starts as poison: an exchange whose old values are unbound is a store, and the
    elements it did not reach are unwritten; one whose old values are bound reads the poison."""
    k = distinct_kernel("xchg")
    del k["outputs"][0]["init"]
    idx = torch.tensor([1, 2, 2, 5], dtype=torch.int32)
    with pytest.raises(InterpreterError) as error:
        execute(plan_launch(checked(k), [idx]))
    assert error.value.code == "read_before_write" and "seen[1]" in error.value.diagnostics[0].message
    del k["body"][3]["name"]
    k["body"][4:] = [op("atomic_add", ptr="count", val=1)]
    run = execute(plan_launch(checked(k), [idx]))
    assert run.written["seen"].nonzero().flatten().tolist() == [1, 2, 5]
    assert bool(run.written["count"].all())


# -- the race detector ---------------------------------------------------------------------------


def test_a_plain_read_modify_write_across_programs_is_a_race() -> None:
    """The cheating column sum: load out, add, store, as if the programs ran one at a time."""
    k = cheating(column_kernel("sum"), "add")
    x = torch.randn(40, 8, generator=torch.Generator().manual_seed(0))
    with pytest.raises(InterpreterError) as info:
        interpret(checked(k), [x])
    assert info.value.diagnostics[0].code == "race"
    # With one row block there is one program per column: no race, and the sum is right (up to
    # the order of its 16 f32 adds, which differs from torch's: a CI run once met 2e-5 relative).
    torch.testing.assert_close(interpret(checked(k), [x[:16]])["out"], x[:16].sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("plain", ["store", "load"])
def test_a_plain_access_racing_with_another_programs_atomic_is_a_race(plain: str) -> None:
    k = column_kernel("sum")
    first_row_block = op("eq", lhs=op("program_id", axis=0), rhs=0)
    mask = op("and", lhs="col_ok", rhs=first_row_block)
    ptr = op("add", lhs="out", rhs="cols")
    if plain == "store":
        k["body"].append(op("store", ptr=ptr, value=0.0, mask=mask))
    else:
        k["outputs"].append({"name": "peek", "dtype": "f32", "shape": ["N"]})
        k["params"].append({"name": "peek"})
        k["body"].append(op("store", ptr=op("add", lhs="peek", rhs="cols"),
                            value=op("load", ptr=ptr, mask=mask), mask=mask))
    with pytest.raises(InterpreterError) as info:
        interpret(checked(k), [torch.randn(40, 8)])
    assert info.value.diagnostics[0].code == "race"
    assert "atomically" in str(info.value)
    # One program alone may mix its own atomics and plain accesses.
    assert interpret(checked(k), [torch.randn(10, 8)])["out"].shape == (8,)


def test_atomics_of_many_programs_on_one_element_do_not_race() -> None:
    x = torch.randn(500, 3)
    out = interpret(checked(column_kernel("sum")), [x])["out"]
    assert torch.allclose(out, x.sum(0), atol=1e-5)


# -- the checker ---------------------------------------------------------------------------------


def test_atomic_dtypes_follow_triton() -> None:
    for dtype, kind, ok in (("f16", "sum", True), ("bf16", "max", False), ("f64", "max", True)):
        k = column_kernel(kind, dtype)
        if dtype == "bf16":
            assert ("/body/4/ptr", "atomic_dtype") in codes(k)
        else:
            assert checked(k) is not None
    k = distinct_kernel("cas")
    k["inputs"][0]["dtype"] = "i32"
    k["outputs"][0]["dtype"] = "f32"
    k["outputs"][0]["init"] = 0.0
    assert ("/body/3/ptr", "atomic_dtype") in codes(k)
    k = column_kernel("sum")
    k["body"][-1]["op"] = "atomic_xor"
    assert ("/body/4/ptr", "atomic_dtype") in codes(k)
    k = distinct_kernel("xchg")
    k["outputs"][0]["dtype"] = "bool"
    k["outputs"][0]["init"] = False
    k["body"][3]["val"] = True
    assert ("/body/3/ptr", "atomic_dtype") in codes(k)


def test_atomic_field_rules() -> None:
    k = distinct_kernel("cas")
    del k["body"][3]["cmp"]
    assert ("/body/3", "bad_atomic") in codes(k)
    k = distinct_kernel("cas")
    k["body"][3]["mask"] = "ok"
    assert ("/body/3/mask", "bad_atomic") in codes(k)
    k = distinct_kernel("xchg")
    k["body"][3]["cmp"] = 0
    assert ("/body/3/cmp", "bad_atomic") in codes(k)
    k = column_kernel("sum")
    k["body"][-1]["val"] = op("cast", x=op("sum", x="tile", axis=0), dtype="f16")
    assert ("/body/4/val", "dtype_mismatch") in codes(k)
    k = column_kernel("sum")
    k["body"][-1]["mask"] = "cols"
    assert ("/body/4/mask", "needs_bool") in codes(k)
    k = column_kernel("sum")
    k["body"][-1]["ptr"] = op("add", lhs="x", rhs="cols")
    assert ("/body/4/ptr", "store_to_input") in codes(k)
    k = column_kernel("sum")
    k["body"][-1]["name"] = "tile"
    assert ("/body/4/name", "duplicate_name") in codes(k)
    k = column_kernel("sum")
    k["outputs"][0]["init"] = 1.5
    k["outputs"][0]["dtype"] = "f32"
    assert checked(k) is not None
    k = distinct_kernel("cas")
    k["outputs"][0]["init"] = 0.5
    assert ("/outputs/0/init", "bad_value") in codes(k)
    k = distinct_kernel("cas")
    k["outputs"][0]["init"] = 2**40
    assert ("/outputs/0/init", "literal_out_of_range") in codes(k)
    with pytest.raises(Exception):
        kernel_from_obj({**column_kernel("sum"), "body": [op("atomic_add", ptr="out", val=1.0, sem="seq_cst")]})


def test_an_old_value_is_typed_as_the_pointee_and_scoped_like_a_let() -> None:
    k = distinct_kernel("xchg")
    k["body"].append(op("store", ptr=op("add", lhs="seen", rhs="v"), value=op("add", lhs="old", rhs=1.0),
                        mask="ok"))
    assert ("/body/6/value", "dtype_mismatch") in codes(k) or any(c == "dtype_mismatch" for _, c in codes(k))


def test_bounds_cover_unmasked_atomic_addresses() -> None:
    k = column_kernel("sum")
    del k["body"][-1]["mask"]
    with pytest.raises(SemanticError) as info:
        checked(k)
    [problem] = info.value.diagnostics
    assert (problem.path, problem.code) == ("/body/4", "unproven_bounds")
    assert "atomic_add" in problem.message
    k = distinct_kernel("cas")
    assert unproven_accesses(checked(k)) == []  # clamped into seen; count is one element


# -- random kernels ------------------------------------------------------------------------------


def test_random_kernels_draw_atomics_that_check_and_run() -> None:
    """The generator's atomics (order-free ones across programs, exchanges of own elements)
    check, run in the interpreter without a race, and are counted per op."""
    from hypothesis import HealthCheck, given, settings

    from kernelgen.draw.strategies import elementwise_kernels, tile_kernels

    counts: dict[str, int] = {}

    @settings(max_examples=120, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st_one_of(tile_kernels(), elementwise_kernels()))
    def run(generated) -> None:
        atomics = {c for c in generated.constructs() if c.startswith("atomic_")}
        for c in atomics:
            counts[c] = counts.get(c, 0) + 1
        if atomics:
            outputs = interpret(check(generated.kernel, generated.meta), generated.arguments())
            for out in generated.kernel.outputs:
                if out.init is not None:
                    assert not torch.isnan(outputs[out.name]).any() or out.dtype not in ("f32", "f64")

    run()
    assert {"atomic_add", "atomic_xchg"} <= set(counts), counts  # every op: tests/test_language.py (800 kernels)


def st_one_of(*strategies):
    from hypothesis import strategies as st

    return st.one_of(*strategies)


# -- on a GPU: the compiled atomics agree with the interpreter ----------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("name, kernel, args, tolerance", [
    ("col_sum", column_kernel("sum"), lambda: [torch.randn(1000, 300)], (1e-4, 1e-4)),
    ("col_max", column_kernel("max"), lambda: [torch.randn(1000, 300)], (0.0, 0.0)),
    ("distinct_cas", distinct_kernel("cas"), lambda: [torch.randint(-500, 500, (5000,), dtype=torch.int32)], None),
    ("distinct_xchg", distinct_kernel("xchg"), lambda: [torch.randint(0, 64, (5000,), dtype=torch.int32)], None),
])
def test_compiled_atomics_agree_with_the_interpreter(name: str, kernel: dict[str, Any], args, tolerance) -> None:
    from kernelgen.gpu.compile import compile_kernel
    from kernelgen.gpu.launch import run_on_gpu

    c = checked(kernel)
    values = args()
    expected = interpret(c, values)
    actual = run_on_gpu(compile_kernel(c, cache=False), c, values, to_cpu=True)
    for out in c.kernel.outputs:
        if tolerance is None:
            assert torch.equal(actual[out.name], expected[out.name]), (name, out.name)
        else:
            torch.testing.assert_close(actual[out.name], expected[out.name], rtol=tolerance[0], atol=tolerance[1])


def test_cta_scoped_atomics_of_different_programs_race() -> None:
    """PTX: two atomics are atomic to each other only if each one's scope includes the other."""
    k = column_kernel("sum")
    k["body"][-1]["scope"] = "cta"
    with pytest.raises(InterpreterError) as info:
        interpret(checked(k), [torch.randn(40, 8)])
    assert info.value.diagnostics[0].code == "race" and "cta" in str(info.value)
    # One row block: one program per element, whose own lanes may share a cta-scoped atomic.
    assert torch.allclose(interpret(checked(k), [torch.ones(16, 8)])["out"], torch.full((8,), 16.0))
    # A gpu-scoped atomic of one program and a cta-scoped one of another race too.
    mixed = column_kernel("sum")
    mixed["body"].append({**mixed["body"][-1], "scope": "cta", "mask": op("and", lhs="col_ok", rhs=op(
        "eq", lhs=op("program_id", axis=0), rhs=1))})
    with pytest.raises(InterpreterError) as info:
        interpret(checked(mixed), [torch.randn(40, 8)])
    assert "cta" in str(info.value)


# -- through the pipeline, on the benchmark's own tasks ---------------------------------------


def col_sum_bf16_answer() -> dict[str, Any]:
    """An answer to the col_sum_bf16 task: f32 partial sums of bf16 tiles added atomically."""
    k = column_kernel("sum")
    k["name"] = "col_sum_bf16_atomic"
    k["inputs"][0]["dtype"] = "bf16"
    k["body"][-1]["val"] = op("sum", x=op("cast", x="tile", dtype="f32"), axis=0)
    return k


def cheating(answer: dict[str, Any], combine: str) -> dict[str, Any]:
    """The same kernel with its final atomic replaced by a plain load, ``combine`` and store:
    right when programs run one at a time, as the interpreter's chunks almost do."""
    k = copy.deepcopy(answer)
    atomic = k["body"][-1]
    k["body"][-1] = op("store", ptr=atomic["ptr"], mask=atomic["mask"],
                       value=op(combine, lhs=op("load", ptr=atomic["ptr"], mask=atomic["mask"]), rhs=atomic["val"]))
    return k


@pytest.mark.parametrize("task, answer", [("col_sum_bf16", col_sum_bf16_answer), ("col_max", lambda: column_kernel("max"))])
def test_atomic_answers_pass_the_tasks_and_a_plain_read_modify_write_fails(task: str, answer) -> None:
    import json

    from kernelgen.errors import Outcome
    from kernelgen.harness.pipeline import Settings, evaluate_answer
    from kernelgen.task.spec import get_task

    settings = Settings(compile=False, shapes=4)
    result = evaluate_answer(get_task(task), json.dumps(answer()), settings)
    assert result.ok, result.diagnostics
    bad = cheating(answer(), "maximum" if task == "col_max" else "add")
    result = evaluate_answer(get_task(task), json.dumps(bad), settings)
    assert result.outcome == Outcome.WRONG_RESULT and result.diagnostics[0]["code"] == "race", result.diagnostics


def test_an_output_with_init_that_nothing_writes_is_still_refused() -> None:
    k = column_kernel("sum")
    k["body"] = k["body"][:-1]
    assert ("/outputs/0", "output_not_written") in codes(k)


@pytest.mark.gpu
def test_atomic_answers_pass_on_the_gpu_with_init_outputs_refilled() -> None:
    """The GPU check launches twice; an init output starts as its fill both times (two poisons
    would accumulate into NaN), and the plain read-modify-write's lost updates are mismatches."""
    import json

    from kernelgen.gpu.executor import Executor
    from kernelgen.gpu.launch import prepare_gpu
    from kernelgen.harness.pipeline import Settings, evaluate_answer
    from kernelgen.task.spec import get_task

    with Executor(initializer=prepare_gpu, default_timeout=60.0, grace=2.0) as executor:
        settings = Settings(gpu=True, executor=executor, time_kernels=False)
        for task, answer in (("col_sum_bf16", col_sum_bf16_answer()), ("col_max", column_kernel("max"))):
            result = evaluate_answer(get_task(task), json.dumps(answer), settings)
            assert result.ok, (task, result.diagnostics)


def test_a_float_exchange_of_a_literal_emits_and_runs_in_tritons_interpreter() -> None:
    """Triton's interpreter exchanges integers only: the emitter exchanges a float's bits."""
    from kernelgen.emit.module import emit_triton

    k = distinct_kernel("xchg")
    k["outputs"][0].update(dtype="f32", init=0.0)
    k["body"][3]["val"] = 1.5
    k["body"][4] = let("new", op("and", lhs="ok", rhs=op("eq", lhs="old", rhs=0.0)))
    source = emit_triton(checked(k))
    assert "bitcast=True" in source and "tl.atomic_xchg(" in source
    script = source + (
        "\nidx = torch.tensor([3, 3, 5, 70], dtype=torch.int32)\n"
        "seen, count = distinct_xchg(idx)\n"
        "assert seen[3].item() == 1.5 and seen[5].item() == 1.5 and seen[6].item() == 1.5, seen\n"
        "assert count.item() == 3, count\n")
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    run = interpret(checked(k), [torch.tensor([3, 3, 5, 70], dtype=torch.int32)])
    assert run["count"].item() == 3 and run["seen"][6].item() == 1.5


def test_the_emitted_atomic_kernel_passes_the_baseline_rules() -> None:
    """What TritonBench predictions and the raw-LLM baseline accept: atomics, a -inf fill."""
    from kernelgen.lang import nodes as L
    from kernelgen.baseline.answer import EntryPoint, check_answer
    from kernelgen.emit.module import emit_triton

    c = checked(column_kernel("max"))
    source = emit_triton(c)
    assert "tl.atomic_max(" in source and "torch.full(" in source and "-float('inf')" in source
    entry = EntryPoint("col_max_atomic", tuple(c.kernel.inputs),
                       tuple(L.Input(name=out.name, dtype=out.dtype, shape=["N"]) for out in c.kernel.outputs))
    verdict = check_answer(f"```python\n{source}```", entry)
    assert verdict.ok, verdict.diagnostics


def test_cas_operands_of_lower_rank_are_broadcast_to_the_pointer() -> None:
    """tl.atomic_cas broadcasts nothing: a [BN] cmp and a scalar val against [BM, BN] pointers."""
    from kernelgen.emit.module import emit_triton
    from kernelgen.lower.lowering import lower

    c = checked(cas2d_kernel())
    assert "tt.atomic_cas" in lower(c).ttir
    source = emit_triton(c)
    assert "tl.broadcast_to(" in source and "[None, :]" in source
    out = interpret(c, [torch.arange(4, dtype=torch.int32)])["out"]
    assert out.tolist() == [[9] * 4] * 2
