"""The baseline's CPU mode runs answers in Triton's interpreter, whose own f16/bf16/f32 -> fp8
rounding is wrong where the rounding carries into the exponent (f16 124.0 -> e4m3 64.0) and
at ties; :func:`kernelgen.baseline.interpreter_fixes.patch_triton_interpreter_fp8` rounds those casts as the
GPU does. Every f16 value is checked against torch's conversion, saturated as cvt.satfinite."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton.language as tl
from triton._C.libtriton import ir
from triton.runtime import interpreter

from kernelgen.baseline.interpreter_fixes import patch_triton_interpreter_fp8

CASES = [(tl.float8e4nv, torch.float8_e4m3fn, 448.0), (tl.float8e5, torch.float8_e5m2, 57344.0)]


def _every_f16() -> torch.Tensor:
    return torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(torch.float16)


def _expected(values: torch.Tensor, target: torch.dtype, limit: float) -> torch.Tensor:
    """Round to nearest even, saturate (inf too), NaN of either sign as the canonical 0x7f
    (what the H200's cvt.rn.satfinite gives)."""
    wide = values.float()
    bits = wide.clamp(-limit, limit).to(target).view(torch.uint8)
    return torch.where(wide.isnan(), torch.tensor(0x7F, dtype=torch.uint8), bits).view(target)


def test_the_unpatched_interpreter_rounds_fp8_wrongly() -> None:
    """Why the patch exists (if Triton fixes it, this fails and the patch can go)."""
    convert = getattr(interpreter._convert_float, "original", interpreter._convert_float)
    bits = convert(np.array([124.0], dtype=np.float16), tl.float16, tl.float8e4nv, ir.ROUNDING_MODE.RTNE)
    assert torch.from_numpy(np.asarray(bits, dtype=np.uint8)).view(torch.float8_e4m3fn).item() == 64.0


@pytest.mark.parametrize("triton_dtype, torch_dtype, limit", CASES, ids=["e4m3", "e5m2"])
@pytest.mark.parametrize("source", [tl.float16, tl.float32], ids=["f16", "f32"])
def test_patched_fp8_casts_round_as_the_gpu(triton_dtype, torch_dtype, limit, source) -> None:
    patch_triton_interpreter_fp8()
    patch_triton_interpreter_fp8()  # idempotent
    values = _every_f16()
    array = values.numpy() if source == tl.float16 else values.float().numpy()
    bits = interpreter._convert_float(array, source, triton_dtype, ir.ROUNDING_MODE.RTNE)
    got = torch.from_numpy(np.asarray(bits, dtype=np.uint8)).view(torch_dtype)
    expected = _expected(values, torch_dtype, limit)
    assert torch.equal(got.view(torch.uint8), expected.view(torch.uint8))
    assert got.float()[values == 124.0].tolist() == [128.0]
