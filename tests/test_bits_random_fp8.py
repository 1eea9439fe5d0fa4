"""Bit operations, Philox random numbers and fp8, stage by stage: the checker's codes and
paths, the interpreter's values worked out by hand (and Philox against a published test vector
and against Triton's own ``tl.randint4x``/``tl.rand``/``tl.randn`` run in Triton's interpreter),
the host's fp8 tensors, and the PTX for sm_89/sm_90 (fp8 MMA, satfinite conversions, mul.hi)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
import torch

from test_emit import TritonInterpreter, triton_interpreter  # noqa: F401  (the fixture)
from test_interpret import op, run_elementwise
from test_lower import CASES, checked_case

from kernelgen.lang import philox
from kernelgen.check.checker import check
from kernelgen.task.compare import compare_tensors
from kernelgen.gpu.compile import compile_kernel
from kernelgen.errors import SchemaError, SemanticError
from kernelgen.host.inputs import random_inputs
from kernelgen.interp.execute import interpret, poison
from kernelgen.lang.parse import kernel_from_obj
from kernelgen.task.verify import guard_fill, guarded, guards_intact

I32 = torch.int32


def semantic_error(kernel: dict[str, Any], **kwargs: Any) -> tuple[str, str]:
    with pytest.raises(SemanticError) as caught:
        check(kernel_from_obj(kernel), **kwargs)
    first = caught.value.diagnostics[0]
    return first.path, first.code


def one_store(value: Any, inputs: dict[str, str], out_dtype: str, scalars: dict[str, str] | None = None) -> dict[str, Any]:
    """out[0:16] = value, with inputs x, y ... loaded as blocks of 16 (names as the inputs)."""
    scalars = scalars or {}
    return {
        "name": "k",
        "inputs": [{"name": n, "dtype": d, "shape": [16]} for n, d in inputs.items()]
                  + [{"name": n, "dtype": d} for n, d in scalars.items()],
        "outputs": [{"name": "out", "dtype": out_dtype, "shape": [16]}],
        "params": [{"name": n} for n in [*inputs, "out", *scalars]], "grid": [1],
        "body": [{"op": "let", "name": "i", "value": op("arange", size=16)},
                 *({"op": "let", "name": f"{n}_v", "value": op("load", ptr=op("add", lhs=n, rhs="i"))} for n in inputs),
                 {"op": "store", "ptr": op("add", lhs="out", rhs="i"), "value": value}]}


# ---------------------------------------------------------------------------------------------
# The checker


@pytest.mark.parametrize("value, inputs, out, path, code", [
    (op("bitcast", x="x_v", dtype="i64"), {"x": "f32"}, "i64", "/body/2/value/dtype", "bad_bitcast"),
    (op("bitcast", x=op("lt", lhs="x_v", rhs=0), dtype="i32"), {"x": "f32"}, "i32", "/body/2/value/x", "bad_bitcast"),
    (op("shl", lhs="x_v", rhs=1), {"x": "f32"}, "f32", "/body/2/value", "needs_int"),
    (op("umulhi", lhs="x_v", rhs="y_v"), {"x": "i32", "y": "i64"}, "i32", "/body/3/value/rhs", "dtype_mismatch"),
    (op("add", lhs="x_v", rhs="x_v"), {"x": "f8e4m3"}, "f8e4m3", "/body/2/value/lhs", "fp8_storage"),
    (op("exp", x="x_v"), {"x": "f8e5m2"}, "f32", "/body/2/value/x", "fp8_storage"),
    (op("where", cond=True, x="x_v", y="x_v"), {"x": "f8e4m3"}, "f8e4m3", "/body/2/value/x", "fp8_storage"),
    (op("max", x="x_v", axis=0), {"x": "f8e4m3"}, "f8e4m3", "/body/2/value/x", "fp8_storage"),
    (op("full", shape=[16], value=1.0, dtype="f8e4m3"), {"x": "f32"}, "f8e4m3", "/body/2/value/dtype", "fp8_storage"),
    (0.5, {"x": "f32"}, "f8e4m3", "/body/2/value", "dtype_mismatch"),
    (op("rand", seed="x_v", offset="i"), {"x": "i32"}, "f32", "/body/2/value/seed", "needs_scalar"),
    (op("rand", seed=1, offset="x_v"), {"x": "f32"}, "f32", "/body/2/value/offset", "needs_int"),
    (op("randn", seed=1.5, offset="i"), {"x": "f32"}, "f32", "/body/2/value/seed", "needs_int"),
])
def test_the_checker_refuses_with_a_code_at_the_node(value: Any, inputs: dict[str, str], out: str, path: str,
                                                     code: str) -> None:
    assert semantic_error(one_store(value, inputs, out)) == (path, code)


def test_random_word_is_0_to_3_and_bitcast_widths_are_named() -> None:
    with pytest.raises(SchemaError):
        check(kernel_from_obj(one_store(op("randint", seed=1, offset="i", word=4), {}, "i32")))
    with pytest.raises(SemanticError) as caught:
        check(kernel_from_obj(one_store(op("bitcast", x="x_v", dtype="i64"), {"x": "f32"}, "i64")))
    assert "bitcast it to i32, not i64" in caught.value.diagnostics[0].message


def fp8_dot_kernel(k: int = 32) -> dict[str, Any]:
    return CASES["dot_f8e4m3_f8e4m3"].kernel if k == 64 else {
        **CASES["dot_f8e4m3_f8e4m3"].kernel,
        "inputs": [{"name": "a", "dtype": "f8e4m3", "shape": [64, k]}, {"name": "b", "dtype": "f8e5m2", "shape": [k, 64]}],
        "body": [{"op": "let", "name": "r", "value": op("arange", size=64)}, {"op": "let", "name": "q", "value": op("arange", size=k)},
                 {"op": "store", "ptr": op("add", lhs="c", rhs=op("add", lhs=op("mul", lhs=op("expand_dims", x="r", axis=1), rhs=64),
                                                                   rhs=op("expand_dims", x="r", axis=0))),
                  "value": op("dot", lhs=op("load", ptr=op("add", lhs="a", rhs=op("add", lhs=op("mul", lhs=op("expand_dims", x="r", axis=1), rhs=k),
                                                                                     rhs=op("expand_dims", x="q", axis=0)))),
                              rhs=op("load", ptr=op("add", lhs="b", rhs=op("add", lhs=op("mul", lhs=op("expand_dims", x="q", axis=1), rhs=64),
                                                                               rhs=op("expand_dims", x="r", axis=0)))))}]}


def test_fp8_nodes_mix_formats_need_k_32_and_f32_and_sm_89() -> None:
    checked = check(kernel_from_obj(fp8_dot_kernel(32)))
    assert checked.fp8_nodes == ["/body/2/value"]
    assert semantic_error(fp8_dot_kernel(16)) == ("/body/2/value", "dot_shape")
    f16_result = fp8_dot_kernel(32)
    f16_result["body"][2]["value"]["dtype"] = "f16"
    assert semantic_error(f16_result) == ("/body/2/value/dtype", "dot_dtype")
    assert semantic_error(fp8_dot_kernel(32), capability=86) == ("/body/2/value", "fp8_target")
    cast = one_store(op("cast", x="x_v", dtype="f8e4m3"), {"x": "f32"}, "f8e4m3")
    assert semantic_error(cast, capability=80) == ("/body/2/value", "fp8_target")
    moved = one_store(op("bitcast", x="x_v", dtype="f8e5m2"), {"x": "f8e4m3"}, "f8e5m2")
    check(kernel_from_obj(moved), capability=80)  # bytes moved, no conversion: any target
    check(kernel_from_obj(fp8_dot_kernel(32)), capability=89)
    with pytest.raises(SemanticError) as caught:
        compile_kernel(checked, "sm_80", in_process=True, cache=False)
    assert caught.value.diagnostics[0].code == "fp8_target" and "sm_89" in caught.value.diagnostics[0].message


def test_fp8_memory_compiles_for_sm_80_and_masked_lanes_read_zero_bytes() -> None:
    """A masked fp8 load's zero is a constant byte (bitcast), not a conversion: sm_80 has none."""
    kernel = one_store(op("load", ptr=op("add", lhs="x", rhs="i"), mask=op("lt", lhs="i", rhs=8)), {"x": "f8e4m3"}, "f8e4m3")
    ptx = compile_kernel(check(kernel_from_obj(kernel)), "sm_80", in_process=True, cache=False).ptx
    assert ".target sm_80" in ptx and not re.search(r"cvt[.\w]*e[45]m[23]", ptx)
    x = torch.randn(16).to(torch.float8_e4m3fn)
    out = interpret(check(kernel_from_obj(kernel)), {"x": x})["out"]
    assert out.view(torch.uint8)[8:].tolist() == [0] * 8 and torch.equal(out.view(torch.uint8)[:8], x.view(torch.uint8)[:8])


# ---------------------------------------------------------------------------------------------
# The interpreter


def test_shifts_and_umulhi_of_i32_by_hand() -> None:
    a = torch.tensor([1, -1, 5, -8, 2**30, -(2**31), 7, 0x12345678], dtype=I32)
    b = torch.tensor([1, 31, 32, -1, 2, 31, 40, 4], dtype=I32)
    got = {o: run_elementwise(op(o, lhs="x", rhs="y"), "i32", x=a, y=b).tolist() for o in ("shl", "shr", "lshr", "umulhi")}
    assert got["shl"] == [2, -(2**31), 0, 0, 0, 0, 0, 0x23456780]
    assert got["shr"] == [0, -1, 0, -1, 2**28, -1, 0, 0x1234567]
    assert got["lshr"] == [0, 1, 0, 0, 2**28, 1, 0, 0x1234567]
    unsigned = [((x % 2**32) * (y % 2**32)) >> 32 for x, y in zip(a.tolist(), b.tolist())]
    assert got["umulhi"] == [u - 2**32 if u >= 2**31 else u for u in unsigned]


def test_umulhi_and_lshr_of_i64_are_unsigned() -> None:
    a = torch.tensor([3, -1, 2**40 + 5, -(2**63), 2**62 + 12345], dtype=torch.int64)
    b = torch.tensor([5, -1, 2**50, 3, -(2**61) - 7], dtype=torch.int64)
    high = run_elementwise(op("umulhi", lhs="x", rhs="y"), "i64", x=a, y=b).tolist()
    unsigned = [((x % 2**64) * (y % 2**64)) >> 64 for x, y in zip(a.tolist(), b.tolist())]
    assert high == [u - 2**64 if u >= 2**63 else u for u in unsigned]
    shifted = run_elementwise(op("lshr", lhs="x", rhs=4), "i64", x=a).tolist()
    assert shifted == [(x % 2**64) >> 4 for x in a.tolist()]


def test_bitcasts_keep_the_bits() -> None:
    x = torch.tensor([1.0, -2.5, float("inf"), 0.1] * 4)
    assert run_elementwise(op("bitcast", x="x", dtype="i32"), "i32", x=x).tolist() == x.view(I32).tolist()
    half = torch.tensor([1.0, -2.0, 65504.0, 2.0**-24] * 4, dtype=torch.float16)
    assert torch.equal(run_elementwise(op("bitcast", x="x", dtype="bf16"), "bf16", x=half).view(torch.int16), half.view(torch.int16))
    e4m3 = torch.arange(16, dtype=torch.uint8).view(torch.float8_e4m3fn)
    bits = run_elementwise(op("bitcast", x="x", dtype="f8e5m2"), "f8e5m2", x=e4m3)
    assert bits.view(torch.uint8).tolist() == list(range(16))


def test_casts_to_fp8_round_once_to_even_and_saturate() -> None:
    x = torch.tensor([1.0625 + 2.0**-20,  # once: 1.125; through f16 the tie would go to even 1.0
                      1.1875, 500.0, -1e30, float("inf"), float("nan"), 2.0**-10, -3.3,
                      0.0703125, 240.0, 57344.0, 61440.0, -0.0, 1e-9, 448.0, 464.0])
    e4m3 = run_elementwise(op("cast", x="x", dtype="f8e4m3"), "f8e4m3", x=x).float().tolist()
    e5m2 = run_elementwise(op("cast", x="x", dtype="f8e5m2"), "f8e5m2", x=x).float().tolist()
    assert e4m3[:5] == [1.125, 1.25, 448.0, -448.0, 448.0] and math.isnan(e4m3[5])
    # 2**-10 is half e4m3's least subnormal 2**-9: a tie, to even zero.
    assert e4m3[6:] == [0.0, -3.25, 0.0703125, 240.0, 448.0, 448.0, -0.0, 0.0, 448.0, 448.0]
    assert e5m2[:5] == [1.0, 1.25, 512.0, -57344.0, 57344.0] and math.isnan(e5m2[5])
    assert e5m2[6:] == [2.0**-10, -3.5, 0.0625, 256.0, 57344.0, 57344.0, -0.0, 0.0, 448.0, 448.0]


def double_rounding_values() -> torch.Tensor:
    """f32 values just past an fp8 tie of either format, toward and away from zero, both signs,
    normal and subnormal, where rounding through f16 first lands on the tie and goes to even:
    f32 -> f16 -> fp8 differs from f32 -> fp8 for about half of them."""
    ties = sorted({(a + b) / 2 for d in (torch.float8_e4m3fn, torch.float8_e5m2)
                   for a, b in zip(*[torch.arange(0, 127, dtype=torch.uint8).view(d).float().tolist()[i:] for i in (0, 1)])
                   if math.isfinite(a) and math.isfinite(b)})
    tie = torch.tensor(ties, dtype=torch.float32)
    nudged = [torch.nextafter(tie, tie * 2), torch.nextafter(tie, tie * 0)]
    steps = [tie * (1 + 2.0**-k) for k in (12, 13, 17)] + [tie * (1 - 2.0**-k) for k in (12, 13, 17)]
    values = torch.cat([tie, *nudged, *steps])
    return torch.cat([values, -values])


@pytest.mark.parametrize("dtype, torch_dtype", [("f8e4m3", torch.float8_e4m3fn), ("f8e5m2", torch.float8_e5m2)])
def test_casts_to_fp8_round_as_torch_where_f16_would_round_twice(dtype: str, torch_dtype: torch.dtype) -> None:
    """The interpreter against torch's own conversion, on values where a careless route through
    f16 (what Triton 3.6 compiles on sm_89, and what kernelgen did) gives another fp8 value."""
    x = double_rounding_values()
    x = x[x.abs() <= philox.FLOAT_MAX[dtype]]
    want = x.to(torch_dtype)
    assert not torch.equal(x.half().to(torch_dtype).view(torch.uint8), want.view(torch.uint8))
    got = run_elementwise(op("cast", x="x", dtype=dtype), dtype, x=x)
    assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))
    # f64 and integers become f32 first, as torch converts them.
    wide = x.double() * (1 + 2.0**-40)
    got = run_elementwise(op("cast", x="x", dtype=dtype), dtype, x=wide)
    assert torch.equal(got.view(torch.uint8), wide.to(torch_dtype).view(torch.uint8))


def round_to_odd_in_torch(x: torch.Tensor) -> torch.Tensor:
    """The lowering's and the emitter's f16 round-to-odd (kernelgen.lower.bits.round_to_odd_f16),
    op for op in torch: f16 to nearest, one step toward zero where that rounded away, the low
    bit set where inexact."""
    half = x.half()
    back = half.float()
    bits = half.view(torch.int16) - (back.abs() > x.abs()).to(torch.int16)
    return (bits | (back != x).to(torch.int16)).view(torch.float16)


@pytest.mark.parametrize("torch_dtype", [torch.float8_e4m3fn, torch.float8_e5m2], ids=["e4m3", "e5m2"])
def test_round_to_odd_through_f16_rounds_f32_once(torch_dtype: torch.dtype) -> None:
    """Why the lowering may go through f16: rounded to odd there, fp8's rounding to nearest even
    gives the f32 value's, on the tie neighbourhoods and on 2**20 f32 bit patterns of every
    exponent fp8 reaches (subnormal, overflowing, inf and NaN included)."""
    limit = 448.0 if torch_dtype == torch.float8_e4m3fn else 57344.0
    generator = torch.Generator().manual_seed(5)
    patterns = torch.randint(-(2**31), 2**31, (2**20,), generator=generator, dtype=torch.int64).to(torch.int32)
    exponents = torch.randint(100, 145, (2**20,), generator=generator, dtype=torch.int32)
    patterns = (patterns & ~(0xFF << 23)) | (exponents << 23)
    x = torch.cat([double_rounding_values(), patterns.view(torch.float32),
                   torch.tensor([float("inf"), -float("inf"), float("nan"), 65504.0, 65520.0, 7e4, 1e-30, -1e-30])])
    x = x[~x.isnan()]

    def fp8(v: torch.Tensor) -> torch.Tensor:
        return v.float().clamp(-limit, limit).to(torch_dtype).view(torch.uint8)

    assert torch.equal(fp8(round_to_odd_in_torch(x)), fp8(x))
    assert not torch.equal(fp8(x.half()), fp8(x))


def test_fp8_values_widen_exactly_and_to_integers_truncate() -> None:
    every = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    for dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        x = every.view(dtype)
        x = x[~x.float().isnan()]  # every other bit pattern, subnormals and (e5m2) infinities included
        for out, wide in (("f32", torch.float32), ("f16", torch.float16), ("bf16", torch.bfloat16), ("f64", torch.float64)):
            got = run_elementwise(op("cast", x="x", dtype=out), out, x=x)
            assert torch.equal(got, x.float().to(wide)), (dtype, out)
    values = torch.tensor([-2.75, 3.5, 448.0, -0.5] * 4).to(torch.float8_e4m3fn)
    assert run_elementwise(op("cast", x="x", dtype="i32"), "i32", x=values).tolist() == [-2, 3, 448, 0] * 4


def test_fp8_outputs_start_as_nan_and_load_and_store_bytes() -> None:
    assert math.isnan(poison("f8e4m3")) and math.isnan(poison("f8e5m2"))
    x = torch.randn(16).to(torch.float8_e5m2)
    copied = interpret(check(kernel_from_obj(one_store("x_v", {"x": "f8e5m2"}, "f8e5m2"))), {"x": x})["out"]
    assert torch.equal(copied.view(torch.uint8), x.view(torch.uint8))


RANDOM123_ZERO = [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]  # Philox4x32-10, counter 0, key 0


def test_philox_matches_the_published_vector_and_the_uniform_formula() -> None:
    words = philox.randint4x(torch.tensor(0), torch.zeros(1, dtype=I32))
    assert [w.item() % 2**32 for w in words] == RANDOM123_ZERO
    kernel = one_store(op("randint", seed="s", offset=op("mul", lhs="i", rhs=0), word=2), {}, "i32", {"s": "i32"})
    assert interpret(check(kernel_from_obj(kernel)), {"s": 0})["out"].tolist() == [RANDOM123_ZERO[2] - 2**32] * 16
    bits = torch.tensor([0, 1, -1, 2**31 - 1, -(2**31)], dtype=I32)
    uniform = philox.uniform(bits)
    assert uniform.tolist() == [0.0, torch.tensor(4.6566127342e-10).item(), 0.0,
                                (torch.tensor(2.0**31 - 1, dtype=torch.float32) * torch.tensor(4.6566127342e-10)).item(),
                                uniform[3].item()]
    assert float(uniform.max()) < 1.0


def test_random_numbers_depend_on_seed_offset_and_word_only() -> None:
    i = torch.arange(4096, dtype=I32)
    a = philox.random("rand", torch.tensor(7), i)
    assert torch.equal(a, philox.random("rand", torch.tensor(7), i))
    assert not torch.equal(a, philox.random("rand", torch.tensor(8), i))
    assert not torch.equal(a, philox.random("rand", torch.tensor(7), i, word=1))
    assert 0.45 < float(a.mean()) < 0.55 and float(a.min()) >= 0.0 and float(a.max()) < 1.0
    n = philox.random("randn", torch.tensor(7), i)
    assert abs(float(n.mean())) < 0.1 and 0.9 < float(n.std()) < 1.1
    wide = philox.random("randint", torch.tensor(7), i.to(torch.int64) + 2**32)
    assert not torch.equal(wide, philox.random("randint", torch.tensor(7), i))


TRITON_RANDOM = '''
import torch
import triton
import triton.language as tl


@triton.jit
def random_kernel(words, uniforms, normals, seed, offsets, N: tl.constexpr):
    i = tl.arange(0, N)
    o = tl.load(offsets + i)
    a, b, c, d = tl.randint4x(seed, o)
    tl.store(words + i, a.to(tl.int32, bitcast=True))
    tl.store(words + N + i, b.to(tl.int32, bitcast=True))
    tl.store(words + 2 * N + i, c.to(tl.int32, bitcast=True))
    tl.store(words + 3 * N + i, d.to(tl.int32, bitcast=True))
    tl.store(uniforms + i, tl.rand(seed, o))
    u1, u2, u3, u4 = tl.rand4x(seed, o)
    tl.store(uniforms + N + i, u4)
    tl.store(normals + i, tl.randn(seed, o))
    n1, n2, n3, n4 = tl.randn4x(seed, o)
    tl.store(normals + N + i, n2)
    tl.store(normals + 2 * N + i, n3)


def run(seed, offsets):
    n = offsets.numel()
    words = torch.empty(4 * n, dtype=torch.int32)
    uniforms = torch.empty(2 * n)
    normals = torch.empty(3 * n)
    random_kernel[(1,)](words, uniforms, normals, seed, offsets, n)
    return words, uniforms, normals
'''


def random_ast(offset_dtype: str, seed_dtype: str) -> dict[str, Any]:
    """The same values from kernelgen's random nodes, into one output per Triton store."""
    stores = [("words", "i32", "randint", w) for w in range(4)] + [("uniforms", "f32", "rand", 0),
                                                                     ("uniforms", "f32", "rand", 3)]
    stores += [("normals", "f32", "randn", w) for w in (0, 1, 2)]
    body = [{"op": "let", "name": "i", "value": op("arange", size=256)},
            {"op": "let", "name": "o", "value": op("load", ptr=op("add", lhs="offsets", rhs="i"))}]
    seen: dict[str, int] = {}
    for out, _, kind, word in stores:
        slot = seen.get(out, 0)
        seen[out] = slot + 1
        body.append({"op": "store", "ptr": op("add", lhs=out, rhs=op("add", lhs="i", rhs=256 * slot)),
                     "value": op(kind, seed="seed", offset="o", word=word)})
    return {"name": "random_ast", "inputs": [{"name": "seed", "dtype": seed_dtype},
                                             {"name": "offsets", "dtype": offset_dtype, "shape": [256]}],
            "outputs": [{"name": n, "dtype": "i32" if n == "words" else "f32", "shape": [256 * seen[n]]}
                        for n in ("words", "uniforms", "normals")],
            "params": [{"name": "words"}, {"name": "uniforms"}, {"name": "normals"}, {"name": "seed"}, {"name": "offsets"}],
            "grid": [1], "body": body}


@pytest.mark.parametrize("seed, offset_dtype", [(0, torch.int32), (12345, torch.int32), (-7, torch.int64),
                                                (2**40 + 3, torch.int64), (-(2**33), torch.int32)])
def test_philox_agrees_bit_for_bit_with_tritons_own_functions(seed: int, offset_dtype: torch.dtype,
                                                              triton_interpreter: TritonInterpreter) -> None:
    """Triton's tl.randint4x, tl.rand, tl.rand4x in Triton's interpreter give kernelgen's bits;
    tl.randn and tl.randn4x (NumPy's float32 log/cos/sin there, torch's here) agree within 2 ulps."""
    generator = torch.Generator().manual_seed(seed % 1000)
    offsets = torch.randint(-(2**31), 2**31 - 1, (256,), generator=generator, dtype=torch.int64)
    if offset_dtype == torch.int64:
        offsets = offsets * 7919 + 2**35
    offsets = offsets.to(offset_dtype)
    seed_dtype = "i32" if -(2**31) <= seed < 2**31 else "i64"
    words, uniforms, normals = triton_interpreter.run(TRITON_RANDOM, "run", [seed, offsets])
    ours = interpret(check(kernel_from_obj(random_ast("i32" if offset_dtype == torch.int32 else "i64", seed_dtype))),
                     {"seed": seed, "offsets": offsets})
    assert torch.equal(ours["words"], words)
    assert torch.equal(ours["uniforms"], uniforms)
    torch.testing.assert_close(ours["normals"], normals, rtol=2.5e-7, atol=5e-7)


# ---------------------------------------------------------------------------------------------
# The host: fp8 tensors in and out


def test_fp8_tensors_are_drawn_compared_and_guarded() -> None:
    kernel = check(kernel_from_obj(one_store(op("cast", x=op("cast", x="x_v", dtype="f32"), dtype="f8e5m2"),
                                             {"x": "f8e4m3"}, "f8e5m2")))
    args = random_inputs(kernel.kernel, {}, seed=1)
    assert args["x"].dtype == torch.float8_e4m3fn and float(args["x"].float().abs().max()) > 0
    got = interpret(kernel, args)["out"]
    assert compare_tensors(got, args["x"].float().to(torch.float8_e5m2), "f8e5m2").ok
    off_by_two_steps = (got.float() * 1.5).to(torch.float8_e5m2)
    assert not compare_tensors(off_by_two_steps, got, "f8e5m2").ok
    buffer, view = guarded(got, guard_fill(got.dtype))
    assert guard_fill(got.dtype) == -96.0 and guards_intact("out", buffer) == []
    buffer[0] = 1.0
    assert guards_intact("out", buffer)[0].code == "out_of_bounds_write"


# ---------------------------------------------------------------------------------------------
# PTX for sm_89 and sm_90


@pytest.mark.parametrize("target, instruction", [
    ("sm_90", "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3"),
    ("sm_89", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32")])
def test_fp8_nodes_run_on_fp8_tensor_cores(target: str, instruction: str) -> None:
    assert instruction in compile_kernel(checked_case("dot_f8e4m3_f8e4m3"), target, in_process=True, cache=False).ptx


def test_an_fp8_dot_adds_its_own_k_to_the_f32_accumulator_once() -> None:
    """max_num_imprecise_acc = the dot's K (64 here), in the lowering and the emitted Triton:
    a K loop of 128-deep dots promotes once per dot, not per 32-wide wgmma (which waited on
    each) nor never (Triton's default, out of tolerance at K ~ 3000)."""
    from kernelgen.emit.module import emit_triton
    from kernelgen.lower.lowering import lower

    checked = checked_case("dot_f8e4m3_f8e4m3")
    assert "maxNumImpreciseAcc = 64" in str(lower(checked).module)
    assert "max_num_imprecise_acc=64" in emit_triton(checked)


def test_mixed_fp8_dot_and_fp8_conversions_in_ptx() -> None:
    mixed = compile_kernel(checked_case("dot_f8e5m2_f8e4m3"), "sm_90", in_process=True, cache=False).ptx
    assert "wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e4m3" in mixed
    to_fp8 = {d: compile_kernel(checked_case(f"cast_to_{d}"), "sm_90", in_process=True, cache=False).ptx
              for d in ("f8e4m3", "f8e5m2")}
    assert "cvt.rn.satfinite.e4m3x2.f16x2" in to_fp8["f8e4m3"] and "cvt.rn.satfinite.e5m2x2.f16x2" in to_fp8["f8e5m2"]
    assert not any(re.search(r"cvt\.rn\.satfinite\.e\dm\dx2\.f32", ptx) for ptx in to_fp8.values())
    # f32 reaches f16 rounded to odd (to nearest, then the bits), never truncated as Triton's own
    # sm_89 route does: the one rounding is fp8's.
    assert all("cvt.rn.f16.f32" in ptx and "cvt.rz.f16.f32" not in ptx for ptx in to_fp8.values())


@pytest.mark.parametrize("target", ["sm_89", "sm_90"])
def test_fp8_casts_take_one_route_on_every_fp8_target(target: str) -> None:
    """The same conversions on sm_89 and sm_90 (Triton 3.6's own f32 -> fp8 differs between them:
    direct on sm_90, truncated to f16 first on sm_89), so both GPUs give the interpreter's bytes."""
    ptx = compile_kernel(checked_case("cast_to_f8e4m3"), target, in_process=True, cache=False).ptx
    assert "cvt.rn.f16.f32" in ptx and "cvt.rn.satfinite.e4m3x2.f16x2" in ptx and "cvt.rz.f16.f32" not in ptx


@pytest.mark.parametrize("name", ["cast_to_f8e4m3", "cast_to_f8e5m2"])
def test_emitted_fp8_casts_round_once_in_tritons_interpreter(name: str, triton_interpreter: TritonInterpreter) -> None:  # noqa: F811
    """The emitted Triton against the interpreter, bit for bit, on values where f16 first would
    round twice (and ties, subnormals, saturation): f32, f16, bf16 and i32 sources."""
    from test_emit import check_in_triton_interpreter

    values = double_rounding_values()
    special = torch.tensor([0.0, -0.0, 448.0, 464.0, 480.0, 57344.0, 61440.0, 65504.0,  # no inf: numpy casts it to i32 as it likes
                            1e9, 2.0**-9, 2.0**-10, 3 * 2.0**-11, 2.0**-16, 2.0**-17, 2.0**-30])
    x = torch.cat([values, special])
    checked = checked_case(name)
    args = {"a": x, "b": x.half(), "c": x.bfloat16()}
    check_in_triton_interpreter(triton_interpreter, checked, args)
    torch_dtype = philox.FP8_TORCH[name.removeprefix("cast_to_")]
    once = interpret(checked, args)["o_f32"]
    finite = x.abs() <= philox.FLOAT_MAX[name.removeprefix("cast_to_")]
    assert torch.equal(once[finite].view(torch.uint8), x[finite].to(torch_dtype).view(torch.uint8))
    widen = compile_kernel(checked_case("cast_from_fp8"), "sm_90", in_process=True, cache=False).ptx
    assert "cvt.rn.f16x2.e4m3x2" in widen and "cvt.rn.f16x2.e5m2x2" in widen


def test_philox_and_shifts_compile_to_integer_instructions() -> None:
    ptx = compile_kernel(checked_case("philox"), "sm_90", in_process=True, cache=False).ptx
    assert ptx.count("mul.hi.u32") >= 20  # ten rounds of two umulhi, for each distinct Philox call
    bits = compile_kernel(checked_case("bits_i64"), "sm_90", in_process=True, cache=False).ptx
    assert {"mul.hi.u64", "shl.b64", "shr.s64", "shr.u64"} <= set(re.findall(r"(mul\.hi\.u64|shl\.b64|shr\.[su]64)", bits))


# ---------------------------------------------------------------------------------------------
# On a GPU (sm_89 or later): the conversions' edge cases bit for bit


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["cast_to_f8e4m3", "cast_to_f8e5m2"])
def test_gpu_fp8_rounding_and_saturation_agree_with_the_interpreter(name: str) -> None:
    """Ties, subnormals, the largest finite values and past them, infinities and NaN: the GPU's
    cvt.rn.satfinite after f16 rounded to odd gives the interpreter's bytes, which round once as torch's
    (inf saturates, as PTX documents)."""
    from kernelgen.gpu.launch import run_on_gpu

    checked = checked_case(name)
    generator = torch.Generator().manual_seed(3)
    special = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), -float("nan"), 448.0, 464.0, 480.0, 57344.0,
                            61439.0, 61440.0, 65504.0, 1e9, 2.0**-9, 2.0**-10, 3 * 2.0**-11, 2.0**-16, 2.0**-17,
                            1.0625, 1.0625 + 2.0**-20, 1.1875, -1.1875, 0.0703125])
    special = torch.cat([special, double_rounding_values()])  # where f16 first would round twice
    spread = torch.randn(2000, generator=generator) * torch.exp2(torch.randint(-20, 20, (2000,), generator=generator).float())
    x = torch.cat([special, spread])
    args = {"a": x, "b": x.to(torch.float16), "c": x.to(torch.bfloat16)}
    compiled = compile_kernel(checked, cache=False)
    expected = interpret(checked, args)
    actual = run_on_gpu(compiled, checked, args, to_cpu=True)
    for out in expected:
        got, want = actual[out].view(torch.uint8), expected[out].view(torch.uint8)
        wrong = (got != want).nonzero().flatten().tolist()
        assert not wrong, f"{out}: {len(wrong)} bytes differ; " + "; ".join(
            f"x={x[i].item()!r} (f16 {args['b'][i].item()!r}, bf16 {args['c'][i].item()!r}): gpu {got[i].item():#04x}, "
            f"interpreter {want[i].item():#04x}" for i in wrong[:8])
