"""The rounding an f32 accumulation of products makes, for outputs that are sums of products of
the inputs (a matmul's, addmm's): a task's tolerance names the sums' length (``products: K``).

The H200's tensor cores do not add as round-to-nearest f32 does: a bf16 or f16 dot accumulated
in f32 is off by far more than a blocked f32 sum on the CPU. matmul_bf16_f32out's golden, on
unit-normal inputs at M = 302, N = 420, K = 8192 (seed 3), was 4.6e-3 off where the task's atol,
measured with round-to-nearest blocked sums, was 1e-3 (addmm_f16's, 7.2e-3). Those elements
cancel: c = -0.41 out of a sum of |terms| of 5269. A tolerance relative to the result cannot take
that; one relative to the terms can. So an element of such an output also passes within
:data:`PRODUCTS_FACTOR` * sqrt(K) * u * (the sum of its terms' magnitudes) of the reference, u
being f32's unit. sqrt(K): rounding errors of varying sign add as a random walk (Higham and Mary's
probabilistic bound). The sum of magnitudes is the reference on the inputs' absolute values
(float tensors and scalars) in f64. That is exact for an output multilinear in its inputs (a GEMM,
addmm's beta * c + alpha * a @ b, a bias added), which is what ``products`` promises.

The errors seen on the H200 were at most 0.17 sqrt(K) u of the terms (15 u at K = 8192). A model of
truncating tensor cores (21 bits kept per step of 16 products, tests/test_products.py) reaches 0.66
on the range-maximum draws (tools/redteam_round14/products/). The factor is 1: room for both, and
for unit-normal inputs at K = 8192 about 0.03. Kernels stay far outside it if they accumulate in
f16 (about 1 off), round their result through bf16 (0.2 on results of 50) or drop a term (|a b| is
about 0.6). Round 14 found kernels, wrong only at long K, that fit inside even at factor 1
(split-K partials rounded to 11 bits: 0.72; f16 products: 0.73; addmm's c read as bf16: 0.62,
in units of sqrt(K) u of the terms); it measured that a bound on the running partial sums,
8 u (sum over steps of |P_16j| + |P_K|), separates them from every model of correct arithmetic,
which this form cannot at any factor. A kernel computing in tf32 would fit too: an f32 GEMM that
promises IEEE products (matmul_f32_ieee) does not name ``products``.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Mapping

import torch

from kernelgen.task.offset import F32_UNIT
from kernelgen.task.spec import Task
from kernelgen.task.wide_reference import reference_results

# The radius, in sqrt(K) f32 units of the terms' magnitudes (the module's docstring).
PRODUCTS_FACTOR = 1.0


class ProductRounding:
    """The rounding room of one call's outputs: computed when :meth:`around` first asks (only a
    comparison that fails otherwise does), then kept."""

    def __init__(self, task: Task, inputs: Mapping[str, Any], sizes: Mapping[str, int]) -> None:
        self._task = task
        self._inputs = inputs
        self._length = int(sizes[task.tolerance.products])

    def around(self, name: str, expected: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, str] | None:
        """What :func:`kernelgen.task.compare.compare_tensors` takes in ``around`` for output
        ``name``: the reference's result and the radius (NaN where the magnitudes are not
        finite: no room there); None where the reference refused the absolute values."""
        magnitudes = self._magnitudes
        if magnitudes is None or name not in magnitudes or tuple(magnitudes[name].shape) != tuple(expected.shape):
            return None
        sums = magnitudes[name].to(expected.device, torch.float64)
        radius = PRODUCTS_FACTOR * math.sqrt(self._length) * F32_UNIT * sums
        radius = torch.where(sums.isfinite(), radius, torch.full_like(radius, math.nan))
        return expected.detach().double(), radius, \
            f"within {PRODUCTS_FACTOR:g} sqrt({self._length}) f32 units of its {self._length} products' magnitudes"

    @functools.cached_property
    def _magnitudes(self) -> dict[str, torch.Tensor] | None:
        absolute = {}
        for name, value in self._inputs.items():
            if isinstance(value, torch.Tensor) and value.dtype.is_floating_point:
                value = value.double().abs()
            elif isinstance(value, float):
                value = abs(value)
            absolute[name] = value
        return reference_results(self._task, absolute)
