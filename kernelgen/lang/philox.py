"""Bit-level operations (shifts, umulhi, the fp8 rounding) and Triton's Philox random
numbers, in torch on the CPU.

This is the interpreter's side of ``shl``/``shr``/``lshr``/``umulhi`` and of the ``rand``,
``randn`` and ``randint`` nodes; :mod:`kernelgen.lower.bits` builds the same computation in
TTIR. torch has no usable uint32 arithmetic, so unsigned 32-bit words live in int64 tensors
holding 0..2**32-1, and 64-bit patterns in int64 tensors (torch's int64 arithmetic wraps, so a
product keeps its low 64 bits). Philox is ``triton/language/random.py`` (Triton 3.6) word for
word: 10 rounds, the same constants, the seed split into (lo, hi) after a sign-extension to 64
bits, an i64 offset split into (lo, hi) by an arithmetic shift, an i32 offset with hi 0.
"""

from __future__ import annotations

import torch

from kernelgen.lang.limits import FLOAT_MAX

MASK32 = 0xFFFFFFFF
PHILOX_KEY_A = 0x9E3779B9
PHILOX_KEY_B = 0xBB67AE85
PHILOX_ROUND_A = 0xD2511F53
PHILOX_ROUND_B = 0xCD9E8D57
N_ROUNDS = 10
# uint_to_uniform_float's scale for 32-bit words: the largest float with MAX_INT * scale < 1.
UNIFORM_SCALE = 4.6566127342e-10
TWO_PI = 6.283185307179586
NORMAL_FLOOR = 1.0e-7
BITS = {torch.int32: 32, torch.int64: 64, torch.int16: 16, torch.int8: 8, torch.uint8: 8}
FP8_TORCH = {"f8e4m3": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2}


def _wrap32(x: torch.Tensor) -> torch.Tensor:
    """The low 32 bits of int64 ``x`` as an int32 (two's complement)."""
    x = x & MASK32
    return torch.where(x >= 1 << 31, x - (1 << 32), x).to(torch.int32)


def shift(op: str, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``shl``, ``shr`` (arithmetic; logical for uint8, as torch's ``>>``) or ``lshr`` (logical)
    of integers ``a`` by ``b`` bits; an amount outside 0..width-1 gives 0 (``shr``: the sign's
    fill, as a shift by width-1). 8/16-bit ones shift in int64 and keep their low bits."""
    width = BITS[a.dtype]
    inside = (b >= 0) & (b < width)
    if width < 32:
        amount = torch.where(inside, b, torch.zeros_like(b)).to(torch.int64)
        wide = a.to(torch.int64)
        if op == "shr" and a.dtype != torch.uint8:
            return (wide >> torch.where(inside, amount, torch.full_like(amount, width - 1))).to(a.dtype)
        out = wide << amount if op == "shl" else (wide & ((1 << width) - 1)) >> amount
        return torch.where(inside, out, torch.zeros_like(out)).to(a.dtype)
    if op == "shr":
        return a >> torch.where(inside, b, torch.full_like(b, width - 1))
    amount = torch.where(inside, b, torch.zeros_like(b)).to(torch.int64)
    wide = a.to(torch.int64)
    if op == "shl":
        out = wide << amount
    elif width == 32:
        out = (wide & MASK32) >> amount
    else:
        # Arithmetic shift, then clear the copies of the sign bit: ~(-1 << (64 - n)) for n >= 1.
        high = torch.where(amount > 0, (-1 << (64 - amount.clamp(min=1))), torch.zeros_like(amount))
        out = (wide >> amount) & ~high
    out = torch.where(inside, out, torch.zeros_like(out))
    return _wrap32(out) if width == 32 else out


def umulhi(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The high half of the unsigned double-width product of two integers of one dtype."""
    if a.dtype == torch.int32:
        product = (a.to(torch.int64) & MASK32) * (b.to(torch.int64) & MASK32)  # mod 2**64
        return _wrap32(product >> 32)
    al, ah = a & MASK32, (a >> 32) & MASK32
    bl, bh = b & MASK32, (b >> 32) & MASK32
    low_high = ((al * bl) >> 32) & MASK32
    cross1, cross2 = al * bh, ah * bl
    middle = low_high + (cross1 & MASK32) + (cross2 & MASK32)  # < 3 * 2**32: no wrap
    return ah * bh + ((cross1 >> 32) & MASK32) + ((cross2 >> 32) & MASK32) + (middle >> 32)


def _umulhi32(constant: int, x: torch.Tensor) -> torch.Tensor:
    return ((constant * x) >> 32) & MASK32


def randint4x(seed: torch.Tensor, offset: torch.Tensor, n_rounds: int = N_ROUNDS) -> list[torch.Tensor]:
    """Triton's ``randint4x``: four blocks of uint32 words (in int64) for an integer ``seed``
    (broadcastable to ``offset``) and integer ``offset``."""
    seed = seed.to(torch.int64)
    k0, k1 = seed & MASK32, (seed >> 32) & MASK32
    wide = offset.to(torch.int64)
    c0 = wide & MASK32
    c1 = (wide >> 32) & MASK32 if offset.dtype == torch.int64 else torch.zeros_like(c0)
    c2 = torch.zeros_like(c0)
    c3 = torch.zeros_like(c0)
    k0, k1 = k0.expand_as(c0), k1.expand_as(c0)
    for _ in range(n_rounds):
        old0, old2 = c0, c2
        c0 = _umulhi32(PHILOX_ROUND_B, old2) ^ c1 ^ k0
        c2 = _umulhi32(PHILOX_ROUND_A, old0) ^ c3 ^ k1
        c1 = (PHILOX_ROUND_B * old2) & MASK32
        c3 = (PHILOX_ROUND_A * old0) & MASK32
        k0 = (k0 + PHILOX_KEY_A) & MASK32
        k1 = (k1 + PHILOX_KEY_B) & MASK32
    return [_wrap32(c) for c in (c0, c1, c2, c3)]


def uniform(bits: torch.Tensor) -> torch.Tensor:
    """``uint_to_uniform_float`` of int32 words: ``where(x < 0, -x - 1, x)`` (that is ``~x``)
    converted to f32 and multiplied by the f32 scale, each rounded to nearest even."""
    folded = torch.where(bits < 0, ~bits, bits)
    return folded.to(torch.float32) * torch.tensor(UNIFORM_SCALE, dtype=torch.float32)


def normal_pair(u1: torch.Tensor, u2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``pair_uniform_to_normal`` (Box-Muller) in f32."""
    u1 = torch.maximum(u1, torch.tensor(NORMAL_FLOOR, dtype=torch.float32))
    theta = torch.tensor(TWO_PI, dtype=torch.float32) * u2
    radius = torch.sqrt(torch.tensor(-2.0, dtype=torch.float32) * torch.log(u1))
    return radius * torch.cos(theta), radius * torch.sin(theta)


def random(op: str, seed: torch.Tensor, offset: torch.Tensor, word: int = 0) -> torch.Tensor:
    """``randint`` (i32), ``rand`` or ``randn`` (f32): the ``word``-th of Triton's 4x variants."""
    words = randint4x(seed, offset)
    if op == "randint":
        return words[word]
    if op == "rand":
        return uniform(words[word])
    pair = 2 * (word // 2)
    normals = normal_pair(uniform(words[pair]), uniform(words[pair + 1]))
    return normals[word % 2]


def to_fp8(x: torch.Tensor, dtype: str) -> torch.Tensor:
    """The language's cast to fp8, as torch's ``x.to(torch.float8_e4m3fn)`` rounds: f64 and
    integers become f32 first (torch converts them so), which is rounded once to nearest even in
    fp8 (not through f16, which would round twice: f32 1.0625 + 2**-20 is e4m3 1.125, 1.0 through
    f16), saturating at the largest finite value (cvt.rn.satfinite: infinities too); NaN becomes
    the canonical NaN 0x7f of either format, whatever its sign (the H200 gives 0x7f where torch's
    own conversion keeps a sign)."""
    wide = x.to(torch.float32)
    limit = FLOAT_MAX[dtype]
    bits = wide.clamp(-limit, limit).to(FP8_TORCH[dtype]).view(torch.uint8)
    return torch.where(torch.isnan(wide), torch.tensor(0x7F, dtype=torch.uint8), bits).view(FP8_TORCH[dtype])
