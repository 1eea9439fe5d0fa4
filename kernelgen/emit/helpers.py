"""The source text of the helper functions an emitted module may need: ``@triton.jit`` helpers
(shifts, umulhi, NaN-propagating extrema, arg-extremum combines, tanh, log1p, f16 rounded to odd
for fp8 casts, pow, and the
block ops' from :mod:`kernelgen.emit.blocks`) and host helpers of the launcher (integer
division toward zero, the device's SM count).

:func:`kernelgen.emit.module.emit_triton` writes in only those a kernel uses, in this order. The text
is Python that runs inside the emitted module, not in kernelgen, so it lives apart from the
code that emits calls to it; :mod:`kernelgen.emit.module` re-exports both tables.
"""

from __future__ import annotations

from kernelgen.emit import blocks as emit_blocks
from kernelgen.host.plan import INTERPRETER_NUM_SMS

# Jitted helpers, written into the module when a kernel uses them (in this order).
HELPERS: dict[str, str] = {
    "_shl": '''
@triton.jit
def _shl(a, b):
    bits: tl.constexpr = a.dtype.primitive_bitwidth
    inside = (b >= 0) & (b < bits)
    return tl.where(inside, a << tl.where(inside, b, 0), 0)
''',
    "_shr": '''
@triton.jit
def _shr(a, b):
    bits: tl.constexpr = a.dtype.primitive_bitwidth
    return a >> tl.where((b >= 0) & (b < bits), b, bits - 1)
''',
    "_lshr": '''
@triton.jit
def _lshr(a, b):
    bits: tl.constexpr = a.dtype.primitive_bitwidth
    inside = (b >= 0) & (b < bits)
    if bits == 8:
        shifted = (a.to(tl.uint8, bitcast=True) >> tl.where(inside, b, 0).to(tl.uint8)).to(a.dtype, bitcast=True)
    elif bits == 16:
        shifted = (a.to(tl.uint16, bitcast=True) >> tl.where(inside, b, 0).to(tl.uint16)).to(a.dtype, bitcast=True)
    elif bits == 32:
        shifted = (a.to(tl.uint32, bitcast=True) >> tl.where(inside, b, 0).to(tl.uint32)).to(tl.int32, bitcast=True)
    else:
        shifted = (a.to(tl.uint64, bitcast=True) >> tl.where(inside, b, 0).to(tl.uint64)).to(tl.int64, bitcast=True)
    return tl.where(inside, shifted, 0)
''',
    "_umulhi": '''
@triton.jit
def _umulhi(a, b):
    bits: tl.constexpr = a.dtype.primitive_bitwidth
    if bits == 32:
        high = tl.umulhi(a.to(tl.uint32, bitcast=True), b.to(tl.uint32, bitcast=True)).to(tl.int32, bitcast=True)
    else:
        high = tl.umulhi(a.to(tl.uint64, bitcast=True), b.to(tl.uint64, bitcast=True)).to(tl.int64, bitcast=True)
    return high
''',
    "_maximum_propagating_nan": '''
@triton.jit
def _maximum_propagating_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL).to(a.dtype)
''',
    "_minimum_propagating_nan": '''
@triton.jit
def _minimum_propagating_nan(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL).to(a.dtype)
''',
    "_argmax_combine": '''
@triton.jit
def _argmax_combine(value1, index1, value2, index2):
    """torch.argmax's order: NaN above every number; ties go to the lower index."""
    nan1 = value1 != value1
    nan2 = value2 != value2
    lower = index1 < index2
    greater = (value1 > value2) | ((value1 == value2) & lower)
    pick1 = (nan1 & (~nan2 | lower)) | (~nan1 & ~nan2 & greater)
    return tl.where(pick1, value1, value2), tl.where(pick1, index1, index2)
''',
    "_argmin_combine": '''
@triton.jit
def _argmin_combine(value1, index1, value2, index2):
    """torch.argmin's order: NaN below every number; ties go to the lower index."""
    nan1 = value1 != value1
    nan2 = value2 != value2
    lower = index1 < index2
    less = (value1 < value2) | ((value1 == value2) & lower)
    pick1 = (nan1 & (~nan2 | lower)) | (~nan1 & ~nan2 & less)
    return tl.where(pick1, value1, value2), tl.where(pick1, index1, index2)
''',
    "_round_even": '''
@triton.jit
def _round_even(x):
    # Half to even: adding 2**23 (f64: 2**52) leaves no fraction bits, and that add rounds to
    # nearest even; values that large are integers already. The sign kept (-0.4 gives -0.0).
    if x.dtype == tl.float64:
        shifter = 4503599627370496.0
        negative = x.to(tl.int64, bitcast=True) < 0
    else:
        shifter = 8388608.0
        negative = x.to(tl.int32, bitcast=True) < 0
    size = tl.abs(x)
    rounded = tl.where(size < shifter, (size + shifter) - shifter, size)
    return tl.where(negative, rounded * -1.0, rounded)  # -rounded would be 0 - rounded: +0.0 for a zero
''',
    "_tanh": '''
@triton.jit
def _tanh(x):
    """tanh of f32 or f64 in f64: -m / (2 + m) with m = expm1(-2|x|), signed like x; expm1(y)
    is (u - 1) * y / log(u) with u = exp(y) (Kahan's form, accurate near 0 where 1 - exp is not)."""
    y = -2.0 * tl.abs(x.to(tl.float64))
    u = tl.exp(y)
    m = tl.where(u == 1.0, y, tl.where(u == 0.0, -1.0, (u - 1.0) * (y / tl.log(u))))
    magnitude = (-m / (2.0 + m)).to(x.dtype)
    return tl.where(x < 0, -magnitude, magnitude)
''',
    "_log1p": '''
@triton.jit
def _log1p(x):
    """log(1 + x) of f32 or f64, accurate near 0: log(u) * x / (u - 1) with u = 1 + x in f64."""
    wide = x.to(tl.float64)
    u = 1.0 + wide
    result = tl.where(u == 1.0, wide, tl.log(u) * (wide / (u - 1.0)))
    return tl.where(x == float("inf"), x, result.to(x.dtype))
''',
    "_round_to_odd_f16": '''
@triton.jit
def _round_to_odd_f16(x):
    """f32 x rounded to f16 to odd (toward zero, lowest bit set where inexact), so a cast of it to
    fp8 rounds x once, as kernelgen's lowering does (kernelgen.lower.bits.round_to_odd_f16)."""
    half = x.to(tl.float16)
    back = half.to(tl.float32)
    bits = half.to(tl.int16, bitcast=True) - (tl.abs(back) > tl.abs(x)).to(tl.int16)
    return (bits | (back != x).to(tl.int16)).to(tl.float16, bitcast=True)
''',
    "_pow": '''
@triton.jit
def _pow(x, y):
    """torch.pow of f32 or f64: |x| ** y in f64, the sign of x for odd integer y, NaN for a negative
    finite x and a non-integer y, 1 where y == 0 or x == 1 (even with NaN), and
    (-1) ** +-inf == 1. Both operands are broadcast first: Triton's interpreter cannot combine a
    0-d comparison with a block one (``&`` raises a TypeError there)."""
    x, y = tl.broadcast(x, y)
    magnitude = tl.exp2(y.to(tl.float64) * tl.log2(tl.abs(x).to(tl.float64))).to(x.dtype)
    y_is_integer = tl.floor(y) == y
    y_is_odd = y_is_integer & (tl.floor(y * 0.5) * 2.0 != y)
    if x.dtype == tl.float64:
        sign_bit = x.to(tl.int64, bitcast=True) < 0
    else:
        sign_bit = x.to(tl.int32, bitcast=True) < 0
    result = tl.where(sign_bit & y_is_odd, -magnitude, magnitude)
    result = tl.where((x < 0) & (x != float("-inf")) & ~y_is_integer, float("nan"), result)
    one = (y == 0) | (x == 1) | ((x == -1) & (tl.abs(y) == float("inf")))
    return tl.where(one, 1.0, result)
''',
}
HELPERS.update(emit_blocks.HELPERS)
HOST_HELPERS: dict[str, str] = {
    "_alias_buffer": '''
def _alias_buffer(tensor, others):
    """The memory an aliasing output is: the input itself (the kernel changes it in place), or
    a copy where another tensor argument overlaps it (the kernel reads those as passed). All are
    contiguous: each spans numel elements from its data_ptr."""
    start = tensor.data_ptr()
    end = start + tensor.numel() * tensor.element_size()
    for other in others:
        low = other.data_ptr()
        if other.numel() and tensor.numel() and low < end and start < low + other.numel() * other.element_size():
            return tensor.new_empty(tensor.shape).copy_(tensor)
    return tensor
''',
    "_div_toward_zero": '''
def _div_toward_zero(a, b):
    """Integer division rounding toward zero (C), as the kernel language's host expressions do."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q
''',
    "_num_sms": f'''
def _num_sms(device):
    """num_sms: the launch's GPU's multiprocessors; {INTERPRETER_NUM_SMS} off the GPU, as kernelgen's interpreter takes."""
    device = torch.device(device)
    if device.type != "cuda":
        return {INTERPRETER_NUM_SMS}
    return torch.cuda.get_device_properties(device).multi_processor_count
''',
}
