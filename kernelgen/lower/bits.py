"""The TTIR of the bit-level integer operations and of Philox random numbers.

:mod:`kernelgen.lang.philox` is the meaning (torch on the CPU); this builds the same computation
with Triton's MLIR builder, op for op as ``triton/language/random.py`` (Triton 3.6) traces:
``tt.mulhiui`` for ``umulhi``, wrapping ``arith.muli``/``addi``/``xori`` on i32 words (MLIR
integers are signless, so the uint32 words are i32 values), the ``x < 0 ? -x - 1 : x`` fold
(here ``x ^ -1``, the same bits), ``arith.sitofp`` and an f32 multiply for ``rand``, and
``arith.maxnumf``, ``math.log``/``sqrt``/``cos``/``sin`` for ``randn`` (Box-Muller), which are
the ops ``tl.maximum``, ``tl.log``, ``tl.sqrt``, ``tl.cos`` and ``tl.sin`` emit, so the GPU's
numbers are the ones ``tl.randn`` gives. Shifts clamp an out-of-range amount (LLVM's shifts
past the width are poison): ``shl``/``lshr`` select 0, ``shr`` shifts by width - 1.
"""

from __future__ import annotations

from typing import Any, Callable

from kernelgen.check.checked import DTYPE_BITS, UNSIGNED_DTYPES
from kernelgen.lang import philox

# (builder, dtype, shape) -> a constant of that integer dtype and shape.
Constant = Callable[[int, str, tuple[int, ...]], Any]


def _signed32(value: int) -> int:
    """A uint32 constant as the i32 with its bits."""
    return value - (1 << 32) if value >= 1 << 31 else value


def lower_bit_op(b: Any, op: str, a: Any, c: Any, dtype: str, shape: tuple[int, ...], constant: Constant) -> Any:
    """``shl``, ``shr``, ``lshr`` or ``umulhi`` of two integer values of ``dtype`` and ``shape``."""
    if op == "umulhi":
        return b.create_umulhi(a, c)
    width = DTYPE_BITS[dtype]
    inside = b.create_icmpULT(c, constant(width, dtype, shape))  # 0 <= c < width, of any signedness
    if op == "shr" and dtype not in UNSIGNED_DTYPES:  # u8's shr is logical, as torch's >>
        return b.create_ashr(a, b.create_select(inside, c, constant(width - 1, dtype, shape)))
    amount = b.create_select(inside, c, constant(0, dtype, shape))
    shifted = b.create_shl(a, amount) if op == "shl" else b.create_lshr(a, amount)
    return b.create_select(inside, shifted, constant(0, dtype, shape))


class RandomLowering:
    """Philox words and their uniform and normal transforms for one ``rand``/``randn``/
    ``randint`` node; ``i32``/``f32`` give the block types of its shape."""

    def __init__(self, b: Any, shape: tuple[int, ...], i32: Any, i64: Any, f32: Any, constant: Constant,
                 splat: Callable[[Any, str], Any]) -> None:
        self.b, self.shape, self.i32, self.i64, self.f32 = b, shape, i32, i64, f32
        self.constant, self.splat = constant, splat

    def int32(self, value: int) -> Any:
        return self.constant(_signed32(value), "i32", self.shape)

    def words(self, seed: Any, seed_dtype: str, offset: Any, offset_dtype: str) -> list[Any]:
        """randint4x: ``seed`` a scalar, ``offset`` a value of this shape."""
        b = self.b
        if seed_dtype == "i32":
            seed = b.create_int_cast(seed, b.get_int64_ty(), True)  # sign-extended, as seed.to(tl.uint64)
        k0 = self.splat(b.create_int_cast(seed, b.get_int32_ty(), False), "i32")
        k1 = self.splat(b.create_int_cast(b.create_ashr(seed, b.get_int64(32)), b.get_int32_ty(), False), "i32")
        if offset_dtype == "i64":
            c0 = b.create_int_cast(offset, self.i32, False)
            c1 = b.create_int_cast(b.create_ashr(offset, self.constant(32, "i64", self.shape)), self.i32, False)
        else:
            c0, c1 = offset, self.int32(0)
        c2 = c3 = self.int32(0)
        round_a, round_b = self.int32(philox.PHILOX_ROUND_A), self.int32(philox.PHILOX_ROUND_B)
        key_a, key_b = self.int32(philox.PHILOX_KEY_A), self.int32(philox.PHILOX_KEY_B)
        for _ in range(philox.N_ROUNDS):
            old0, old2 = c0, c2
            c0 = b.create_xor(b.create_xor(b.create_umulhi(round_b, old2), c1), k0)
            c2 = b.create_xor(b.create_xor(b.create_umulhi(round_a, old0), c3), k1)
            c1 = b.create_mul(round_b, old2)
            c3 = b.create_mul(round_a, old0)
            k0 = b.create_add(k0, key_a)
            k1 = b.create_add(k1, key_b)
        return [c0, c1, c2, c3]

    def uniform(self, word: Any) -> Any:
        b = self.b
        negative = b.create_icmpSLT(word, self.int32(0))
        folded = b.create_select(negative, b.create_xor(word, self.int32(0xFFFFFFFF)), word)
        scale = self.constant(philox.UNIFORM_SCALE, "f32", self.shape)
        return b.create_fmul(b.create_si_to_fp(folded, self.f32), scale)

    def normal(self, u1: Any, u2: Any, which: int) -> Any:
        b = self.b
        u1 = b.create_maxnumf(self.constant(philox.NORMAL_FLOOR, "f32", self.shape), u1)
        theta = b.create_fmul(self.constant(philox.TWO_PI, "f32", self.shape), u2)
        radius = b.create_sqrt(b.create_fmul(self.constant(-2.0, "f32", self.shape), b.create_log(u1)))
        return b.create_fmul(radius, b.create_cos(theta) if which == 0 else b.create_sin(theta))

    def lower(self, op: str, word: int, seed: Any, seed_dtype: str, offset: Any, offset_dtype: str) -> Any:
        words = self.words(seed, seed_dtype, offset, offset_dtype)
        if op == "randint":
            return words[word]
        if op == "rand":
            return self.uniform(words[word])
        pair = 2 * (word // 2)
        return self.normal(self.uniform(words[pair]), self.uniform(words[pair + 1]), word % 2)


def round_to_odd_f16(b: Any, value: Any, f16: Any, f32: Any, i16: Any) -> Any:
    """An f32 value rounded to f16 *to odd*: truncated toward zero, and the lowest mantissa bit
    set where that lost anything (NaN stays NaN, infinities exact, overflow gives 65504).

    f16 keeps 11 significant bits, at least two more than fp8's (4 or 3), over all of fp8's
    range, so rounding this to fp8 to nearest even rounds the f32 value once: what torch's
    f32 -> fp8 conversion gives, on every target (Triton 3.6 itself goes through a plain
    truncation on sm_89, ``cvt.rz.f16.f32``, which rounds twice). Written with the f16 rounding
    to nearest (``arith.truncf``), one step back toward zero where that rounded away, so the
    emitted Python (:mod:`kernelgen.emit.helpers`) is the same computation in ``tl``."""
    half = b.create_fp_trunc(value, f16)
    back = b.create_fp_ext(half, f32)
    away = b.create_fcmpOGT(b.create_fabs(back), b.create_fabs(value))
    inexact = b.create_fcmpUNE(back, value)
    bits = b.create_bitcast(half, i16)
    bits = b.create_sub(bits, b.create_int_cast(away, i16, False))
    bits = b.create_or(bits, b.create_int_cast(inexact, i16, False))
    return b.create_bitcast(bits, f16)
