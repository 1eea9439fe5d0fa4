"""Random call arguments for a kernel, from its declared inputs and given sizes.

Floats are drawn from a normal distribution (both signs, never all in [0, 1)), integers from
a small signed range, booleans fairly; a seed makes every draw reproducible.
"""

from __future__ import annotations

from typing import Any, Mapping

import torch

from kernelgen.lang import nodes as L
from kernelgen.errors import Diagnostic, HostError
from kernelgen.check.checked import FLOAT_DTYPES, FP8_DTYPES
from kernelgen.host.plan import torch_dtype


def random_tensor(shape: tuple[int, ...], dtype: str, generator: torch.Generator) -> torch.Tensor:
    if dtype == "f64":
        # Drawn at full precision: f32-precision values would hide a kernel computing in f32.
        return torch.randn(shape, generator=generator, dtype=torch.float64)
    if dtype in FLOAT_DTYPES or dtype in FP8_DTYPES:
        return torch.randn(shape, generator=generator).to(torch_dtype(dtype))
    if dtype == "bool":
        return torch.randint(0, 2, shape, generator=generator).bool()
    return torch.randint(-64, 64, shape, generator=generator).to(torch_dtype(dtype))


def random_inputs(kernel: L.Kernel, sizes: Mapping[str, int], scalars: Mapping[str, Any] | None = None,
                  seed: int = 0) -> dict[str, Any]:
    """Arguments for ``kernel`` with the given size values (every size name must be given)."""
    generator = torch.Generator().manual_seed(seed)
    scalars = dict(scalars or {})
    args: dict[str, Any] = {}
    for i, inp in enumerate(kernel.inputs):
        if not inp.is_plain:
            continue
        if inp.shape is None:
            if inp.name in scalars:
                args[inp.name] = scalars[inp.name]
            elif inp.dtype in FLOAT_DTYPES:
                args[inp.name] = round(float(torch.rand((), generator=generator)) + 0.5, 3)
            elif inp.dtype == "bool":
                args[inp.name] = True
            else:
                args[inp.name] = 3
            continue
        missing = [d for d in inp.shape if isinstance(d, str) and d not in sizes]
        if missing:
            raise HostError(Diagnostic(f"/inputs/{i}/shape", "missing_size",
                                       f"give a value for size {missing[0]} (--size {missing[0]}=...)"))
        shape = tuple(d if isinstance(d, int) else int(sizes[d]) for d in inp.shape)
        args[inp.name] = random_tensor(shape, inp.dtype, generator)
    return args
