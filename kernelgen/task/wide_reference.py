"""The reference's own rounding error: its result in the task's dtype against its result on
f64 copies of the same inputs.

A fixed rtol and atol assume the reference is right to its dtype's precision. Where the task is
ill-conditioned at the drawn inputs it is not: standardize_rows on a row [9.645966, 9.645984]
(19 f32 ulps apart) is exactly +-0.7071, but the f32 mean's rounding moves torch's f32 result
to 0.7443 and the golden's to 0.7433, 5% off, as any f32 kernel is; one computing in f64 would
fail too. :func:`kernelgen.task.compare.compare_tensors` lets such an element pass within a
multiple of this error from both results (:data:`kernelgen.task.compare.REFERENCE_ERROR_FACTOR`);
a wrong element is far from both, so it still fails.
"""

from __future__ import annotations

import functools
from typing import Any, Mapping

import torch

from kernelgen.task.spec import Task

# Float inputs widened to f64; fp8 inputs keep their dtype (a reference of fp8 inputs decodes
# them itself), scalars and integer inputs are unchanged.
WIDENED = (torch.float16, torch.bfloat16, torch.float32)


class WideReference:
    """The reference's results on f64 copies of one call's float tensor inputs, computed when
    :meth:`result` first asks (only a comparison with mismatches does, so a passing one pays
    nothing), then kept."""

    def __init__(self, task: Task, inputs: Mapping[str, Any]) -> None:
        self._task = task
        self._inputs = inputs

    def result(self, name: str, expected: torch.Tensor) -> torch.Tensor:
        """The wide result for output ``name``, in f64 on ``expected``'s device, NaN where it is
        not finite and everywhere when the reference refused the wide inputs, had none to widen
        or returned another shape (NaN: no floor there)."""
        wide = self._wide.get(name)
        if wide is None or tuple(wide.shape) != tuple(expected.shape):
            return torch.full(expected.shape, float("nan"), dtype=torch.float64, device=expected.device)
        wide = wide.to(expected.device, torch.float64)
        return torch.where(wide.isfinite(), wide, torch.full_like(wide, float("nan")))

    def same_infinity(self, name: str, expected: torch.Tensor) -> torch.Tensor:
        """Where the wide result for output ``name`` is the infinity ``expected`` holds (a
        reference that rounds its f64 result to the output's dtype overflows there too)."""
        wide = self._wide.get(name)
        if wide is None or tuple(wide.shape) != tuple(expected.shape):
            return torch.zeros(expected.shape, dtype=torch.bool, device=expected.device)
        return expected.isinf() & (wide.to(expected.device, torch.float64) == expected.double())

    @functools.cached_property
    def _wide(self) -> dict[str, torch.Tensor]:
        return _wide_results(self._task, self._inputs) or {}


def _wide_results(task: Task, inputs: Mapping[str, Any]) -> dict[str, torch.Tensor] | None:
    """The reference's outputs, as it returns them (not cast to the outputs' dtypes), on private
    copies of ``inputs`` whose float tensors are f64; None where none is widened, where the
    reference reads its dtype's limits, or where it raises (one that asserts its dtype, or an op
    without an f64 kernel: then there is no floor).

    A reference that reads ``torch.finfo`` of its inputs computes another function on f64 copies,
    not a more precise one: log_clamped_eps clamps at f64's eps there, 2e-16 against f32's 1.2e-7,
    so its "error" at x = 0 was 20 and an f32 kernel clamping at 1e-10 or at 1e-6 passed."""
    if "finfo" in task.reference or \
            not any(isinstance(v, torch.Tensor) and v.dtype in WIDENED for v in inputs.values()):
        return None
    return reference_results(task, {name: v.double() if isinstance(v, torch.Tensor) and v.dtype in WIDENED else v
                                    for name, v in inputs.items()})


def reference_results(task: Task, inputs: Mapping[str, Any]) -> dict[str, torch.Tensor] | None:
    """The reference's outputs on private copies of ``inputs``, as it returns them (not cast to
    the outputs' dtypes), by output name; None where it raises (an op without an f64 kernel, a
    reference that asserts its dtype: then there is no floor) or returns another count."""
    copies = {name: v.clone() if isinstance(v, torch.Tensor) else v for name, v in inputs.items()}
    try:
        with torch.no_grad():
            result = task.reference_function()(*copies.values())
        results = result if isinstance(result, (tuple, list)) else (result,)
        values = [torch.as_tensor(value).detach() for value in results]
    except Exception:  # noqa: BLE001 - whatever the reference refuses, the tolerance alone stands
        return None
    outputs = task.signature.outputs
    return {spec.name: value for spec, value in zip(outputs, values)} if len(values) == len(outputs) else None
