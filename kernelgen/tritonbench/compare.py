"""Comparing a TritonBench-T test's results with the reference's: tensors, tuples, dicts and
Python numbers, recursively, with a diagnostic per difference.

Both the accuracy run (:mod:`kernelgen.tritonbench.evaluate`) and the speedup run
(:mod:`kernelgen.tritonbench.speedup`) compare this way; it is its own module so that neither
of the two imports the other for it.
"""

from __future__ import annotations

import math
from typing import Any

from kernelgen.errors import Diagnostic

# float64 results (a reference called with dtype=torch.float64); the project's table of
# tolerances (kernelgen.task.spec.DEFAULT_TOLERANCE) covers the language's dtypes only.
F64_TOLERANCE = (1e-7, 1e-7)



def _tolerance(dtype: Any) -> tuple[float, float] | None:
    """(rtol, atol) for a floating or complex torch dtype; None for exact comparison."""
    import torch

    from kernelgen.host.plan import dtype_name
    from kernelgen.task.spec import DEFAULT_TOLERANCE

    if dtype.is_complex:
        dtype = dtype.to_real()
    if not dtype.is_floating_point:
        return None
    if dtype == torch.float64:
        return F64_TOLERANCE
    return DEFAULT_TOLERANCE.get(dtype_name(dtype) or "f32")


def _compare_tensors(expected: Any, actual: Any, path: str, truth: Any = None) -> list[Diagnostic]:
    import torch

    if tuple(actual.shape) != tuple(expected.shape):
        return [Diagnostic(path, "wrong_shape", f"shape {list(actual.shape)}, the reference's {list(expected.shape)}")]
    if actual.dtype != expected.dtype:
        return [Diagnostic(path, "wrong_dtype", f"dtype {actual.dtype}, the reference's {expected.dtype}")]
    # On the reference's device: perf-size results are large; only the first difference moves.
    want, got = expected.detach(), actual.detach().to(expected.device)
    tolerance = _tolerance(want.dtype)
    if tolerance is None:
        close = want == got
    else:
        rtol, atol = tolerance
        close = torch.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if bool(close.all()):
        return []
    if tolerance is not None and truth is not None and tuple(truth.shape) == tuple(want.shape):
        close |= _as_accurate(want, got, truth.detach().to(want.device), *tolerance)
        if bool(close.all()):
            return []
    bad = ~close
    first = tuple(bad.nonzero()[0].tolist())
    bound = "exactly" if tolerance is None else f"beyond rtol={tolerance[0]} atol={tolerance[1]}"
    return [Diagnostic(path, "mismatch", f"{int(bad.sum())} of {want.numel()} elements differ {bound}; first at "
                                         f"{list(first)}: got {got[first].item()!r}, expected {want[first].item()!r}")]


# How much farther from the float64 truth than the reference's worst element ours may be.
ACCURACY_FACTOR = 2.0


def _as_accurate(want: Any, got: Any, truth: Any, rtol: float, atol: float) -> Any:
    """Where ours is as accurate as the reference: within the tolerance of the float64 truth
    widened by ``ACCURACY_FACTOR`` times the reference's own worst error on this tensor.

    A fixed tolerance is blind to cancellation: log_softmax of a float32 [32, 8192] x [8192,
    8192] linear subtracts two values near 90 and keeps about 0.5, so the reference's own
    rounding (and any other summation order's) reaches 1e-4 there; a correct kernel then
    failed its perf call on 3 of 262144 elements (H200). A wrong element is as far from the
    truth as it is from the reference, so it still fails."""
    import torch

    true = truth.double()
    finite = torch.isfinite(true)
    reference_error = torch.where(finite, (want.double() - true).abs(), torch.zeros_like(true))
    noise = float(reference_error.max()) if reference_error.numel() else 0.0
    ours = (got.double() - true).abs()
    return finite & (ours <= atol + rtol * true.abs() + ACCURACY_FACTOR * noise)


def _compare_numbers(expected: Any, actual: Any, path: str) -> list[Diagnostic]:
    from kernelgen.task.spec import DEFAULT_TOLERANCE

    if isinstance(expected, float):
        # A Python float among a test's results is almost always .item() of a float32 tensor.
        rtol, atol = DEFAULT_TOLERANCE["f32"]
        same = (math.isnan(expected) and math.isnan(actual)) or math.isclose(actual, expected, rel_tol=rtol,
                                                                             abs_tol=atol)
    else:
        same = actual == expected
    return [] if same else [Diagnostic(path, "mismatch", f"got {actual!r}, expected {expected!r}")]


def compare_results(expected: Any, actual: Any, path: str = "", truth: Any = None) -> list[Diagnostic]:
    """Every way ``actual`` (our run's test results) differs from ``expected`` (the reference's),
    recursively through dicts, tuples and lists; a diagnostic's path names the test case and the
    position (``/test_case_2/1``).

    ``truth``, where given, is the reference's results computed in float64 (same structure): a
    floating tensor then also passes where ours is as close to it as the reference is (see
    :func:`_as_accurate`)."""
    import torch

    if isinstance(expected, torch.Tensor) or isinstance(actual, torch.Tensor):
        if not (isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor)):
            return [Diagnostic(path, "wrong_type", f"got {_kind(actual)}, expected {_kind(expected)}")]
        return _compare_tensors(expected, actual, path, truth if isinstance(truth, torch.Tensor) else None)
    if type(actual) is not type(expected):
        return [Diagnostic(path, "wrong_type", f"got {_kind(actual)}, expected {_kind(expected)}")]
    if isinstance(expected, dict):
        found = [Diagnostic(f"{path}/{key}", "missing_case", "in the reference's results, not in ours")
                 for key in expected if key not in actual]
        found += [Diagnostic(f"{path}/{key}", "extra_case", "in our results, not in the reference's")
                  for key in actual if key not in expected]
        for key in expected:
            if key in actual:
                found += compare_results(expected[key], actual[key], f"{path}/{key}",
                                         truth.get(key) if isinstance(truth, dict) else None)
        return found
    if isinstance(expected, (tuple, list)):
        if len(actual) != len(expected):
            return [Diagnostic(path, "wrong_length", f"{len(actual)} items, the reference's {len(expected)}")]
        truths = truth if isinstance(truth, (tuple, list)) and len(truth) == len(expected) else [None] * len(expected)
        return [d for i, (want, got, true) in enumerate(zip(expected, actual, truths))
                for d in compare_results(want, got, f"{path}/{i}", true)]
    if isinstance(expected, (bool, int, float)):
        return _compare_numbers(expected, actual, path)
    return [] if actual == expected else [Diagnostic(path, "mismatch", f"got {actual!r}, expected {expected!r}")]


def _kind(value: Any) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        return f"a {str(value.dtype).removeprefix('torch.')} tensor of shape {list(value.shape)}"
    return f"a {type(value).__name__} ({value!r})" if isinstance(value, (bool, int, float, str)) else \
        f"a {type(value).__name__}"
