"""Fixes to Triton 3.6's interpreter (``TRITON_INTERPRET=1``), where it is wrong or crashes.

The baseline's child applies them before running an answer in CPU mode
(:mod:`kernelgen.baseline.child`), and the emitter's tests before running emitted modules in the
interpreter: loop bounds with NumPy >= 2.4, fp8 rounding, atomics of broadcast values,
sequential reductions and f32 dots' precision. Each function patches once and says what Triton
does wrong.
"""

from __future__ import annotations

def patch_triton_interpreter_index() -> None:
    """Make Triton 3.6's interpreter run loops whose bounds are kernel arguments with NumPy >= 2.4.

    The interpreter turns a scalar (a one-element array) into a Python int with ``int()``,
    which NumPy 2.4 refuses for arrays of rank 1 (triton-lang/triton#9171), so
    ``range(0, N, BLOCK)`` fails. The interpreter installs its tensor methods on each launch;
    this adds the fixed ``__index__`` after them (and is undone with them).
    """
    from triton.runtime import interpreter

    if getattr(interpreter._patch_lang_tensor, "kernelgen_index_fix", False):
        return
    install = interpreter._patch_lang_tensor

    def install_with_index(tensor, scope) -> None:
        install(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    install_with_index.kernelgen_index_fix = True
    interpreter._patch_lang_tensor = install_with_index


# fp8 limits and torch's dtypes of the conversions patch_triton_interpreter_fp8 takes over.
_FP8_MAX = {"fp8e4nv": 448.0, "fp8e5": 57344.0}


def patch_triton_interpreter_fp8() -> None:
    """Make Triton 3.6's interpreter round f16/bf16/f32 -> fp8 (e4m3, e5m2) casts as the GPU does.

    Its bit-level conversion adds the first cut-off bit to the mantissa without carrying into
    the exponent and without ties-to-even (f16 124.0 -> e4m3 64.0, 1.95 -> 1.0; the GPU and
    torch give 128.0 and 2.0), so a correct quantization kernel fails in the baseline's CPU
    mode. These casts go through torch instead: round to nearest even, saturating at the
    format's largest finite value (inf too, as cvt.rn.satfinite), NaN as the canonical 0x7f
    (as the H200 gives it). Other conversions
    keep the interpreter's code.
    """
    import numpy as np
    import torch
    from triton.runtime import interpreter

    if getattr(interpreter._convert_float, "kernelgen_fp8_fix", False):
        return
    convert = interpreter._convert_float
    sources = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    targets = {"fp8e4nv": torch.float8_e4m3fn, "fp8e5": torch.float8_e5m2}

    def convert_fp8(input, input_dtype, output_dtype, rounding_mode):
        source, target = sources.get(input_dtype.name), targets.get(output_dtype.name)
        if source is None or target is None:
            return convert(input, input_dtype, output_dtype, rounding_mode)
        array = np.ascontiguousarray(input)
        values = torch.frombuffer(bytearray(array.tobytes()), dtype=source).reshape(array.shape).float()
        limit = _FP8_MAX[output_dtype.name]
        bits = values.clamp(-limit, limit).to(target).view(torch.uint8)
        return torch.where(values.isnan(), torch.tensor(0x7F, dtype=torch.uint8), bits).numpy()

    convert_fp8.kernelgen_fp8_fix = True
    convert_fp8.original = convert
    interpreter._convert_float = convert_fp8


def patch_triton_interpreter_atomics() -> None:
    """Make Triton 3.6's interpreter apply an atomic with each lane's own value where the value
    (or the pointers, mask or compared values) is a broadcast view.

    Its C++ ``atomic_rmw`` and ``atomic_cas`` (python/src/interpreter.cc) reshape each operand to
    one dimension and then read ``reshaped.data()`` as a dense buffer, lane ``i`` at element
    ``i``. NumPy reshapes without a copy where it can, so a block that is a broadcast of fewer
    elements (``np.broadcast_to`` is how the interpreter broadcasts: a [1, 1] value made [2, 1],
    a [1] one made [4]) keeps stride 0, and the lanes after the first read the memory past its
    element: garbage, so a kernel correct on the GPU fails (a random tile kernel xor-ing one
    value per column into ``col_acc0`` from two rows of each block; ``tl.load`` and ``tl.store``
    index by strides and are right). These two builder methods pass dense copies instead.
    """
    import dataclasses

    import numpy as np
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    if getattr(builder.create_atomic_rmw, "kernelgen_atomics_fix", False):
        return
    rmw, cas = builder.create_atomic_rmw, builder.create_atomic_cas

    def dense(handle):
        return dataclasses.replace(handle, data=np.ascontiguousarray(handle.data))

    def create_atomic_rmw(self, rmw_op, ptr, val, mask, sem, scope):
        return rmw(self, rmw_op, dense(ptr), dense(val), dense(mask), sem, scope)

    def create_atomic_cas(self, ptr, cmp, val, sem, scope):
        return cas(self, dense(ptr), dense(cmp), dense(val), sem, scope)

    for patched, original in ((create_atomic_rmw, rmw), (create_atomic_cas, cas)):
        patched.kernelgen_atomics_fix = True
        patched.original = original
    builder.create_atomic_rmw = create_atomic_rmw
    builder.create_atomic_cas = create_atomic_cas


def patch_triton_interpreter_reduce() -> None:
    """Make Triton 3.6's interpreter reduce with a custom combine function in log2(n) block
    steps instead of one Python call per element.

    ``tl.reduce`` with a combine function other than Triton's own sum, min, max and argmin/argmax
    (kernelgen's NaN-propagating maximum, its argmax with torch's tie order) calls the combine
    function once per element, each call a dozen interpreted operations: a 1024-lane reduction
    costs about 0.3 s, and a row kernel seconds per program (the baseline's row_top2 spent 55 s
    there). Triton requires the combine function to be associative and the GPU combines in a
    tree; this combines neighbouring pairs as blocks (the earlier one on the left, an odd last
    element carried over), so an associative function gives the sequential result. A combine
    function that takes a block's truth (Python control flow on its arguments, which the GPU
    compiles as scalar code, and which the interpreter answers True for any block) or raises
    reduces the interpreter's own way.
    """
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    operations = interpreter.ReduceOps
    if getattr(operations.generic_reduce, "kernelgen_reduce_fix", False):
        return
    sequential = operations.generic_reduce

    def combine_pairs(self, data: list, dtypes: list) -> list:
        """Each operand's data, reduced along its first axis to one element there."""
        while data[0].shape[0] > 1:
            even = 2 * (data[0].shape[0] // 2)
            combined = self.combine_fn.fn(*[self.to_tensor(d[0:even:2], t) for d, t in zip(data, dtypes)],
                                          *[self.to_tensor(d[1:even:2], t) for d, t in zip(data, dtypes)])
            combined = combined if isinstance(combined, tuple) else (combined,)
            data = [np.concatenate([np.broadcast_to(c.handle.data if hasattr(c, "handle")
                                                    else np.asarray(getattr(c, "value", c)), d[0:even:2].shape)
                                    .astype(d.dtype), d[even:]]) for c, d in zip(combined, data)]
        return data

    def scalar_truth(self) -> bool:
        if self.handle.data.size != 1:
            raise TypeError("the truth of a block")
        return bool(self.handle.data)

    def tree_reduce(self, input):
        blocks, axis = self.unravel(input, self.axis)
        dtypes = [block.dtype for block in blocks]
        truth = tl.core.tensor.__bool__
        tl.core.tensor.__bool__ = scalar_truth
        try:
            data = combine_pairs(self, [np.moveaxis(block.handle.data, axis, 0) for block in blocks], dtypes)
        except Exception:  # noqa: BLE001 - the sequential reduction raises what is really wrong
            data = None
        finally:
            tl.core.tensor.__bool__ = truth
        if data is None:
            return sequential(self, input)
        results = []
        for d, t in zip(data, dtypes):
            d = d[0]
            if self.keep_dims:
                d = np.expand_dims(d, axis)
            elif self.axis is None:
                d = d.item()
            results.append(self.to_tensor(d, t))
        return results

    tree_reduce.kernelgen_reduce_fix = True
    tree_reduce.original = sequential
    operations.generic_reduce = tree_reduce


def patch_triton_interpreter_dot() -> None:
    """Make Triton 3.6's interpreter round a ``tl.dot``'s f32 operands to TF32 where the GPU does.

    ``tl.dot`` of f32 blocks multiplies in TF32 on NVIDIA GPUs unless asked otherwise
    (``input_precision`` defaults to "tf32": 10 of the 23 mantissa bits), and the interpreter
    takes the same default but multiplies exactly, so an answer that leaves the default passed
    CPU mode where a task asks for exact f32 products and the GPU's result is off by TF32's
    rounding (about 2**-11 of each product). This rounds each f32 operand to TF32 (to nearest,
    ties away from zero, as :func:`kernelgen.interp.values.round_tf32` does on torch tensors: the
    sandbox's child cannot import that module, which brings the checker and pydantic) when the
    dot's precision is TF32;
    "ieee" and "tf32x3" (three TF32 products, near f32) stay exact.
    """
    import numpy as np
    from triton._C.libtriton import ir
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    if getattr(builder.create_dot, "kernelgen_dot_fix", False):
        return
    dot = builder.create_dot

    def tf32(handle):
        data = handle.data
        if data.dtype != np.float32:
            return handle
        rounded = ((data.view(np.int32) + 0x1000) & ~0x1FFF).view(np.float32)
        return interpreter.TensorHandle(np.where(np.isfinite(data), rounded, data), handle.dtype)

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        if input_precision == ir.INPUT_PRECISION.TF32:
            a, b = tf32(a), tf32(b)
        return dot(self, a, b, d, input_precision, max_num_imprecise_acc)

    create_dot.kernelgen_dot_fix = True
    create_dot.original = dot
    builder.create_dot = create_dot
