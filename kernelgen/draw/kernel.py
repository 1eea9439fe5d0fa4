"""A generated kernel and how it is judged: :class:`GeneratedKernel` (the kernel, its sizes, a
tolerance per output, what constructs it uses, its call arguments within the ranges the bounds
assume, and the check of outputs against the interpreter's), and :class:`Tolerance`.

The artifact of :mod:`kernelgen.draw.strategies`, kept apart from the drawing
(:mod:`kernelgen.draw.expressions`, :mod:`kernelgen.draw.templates`) so that the differential
test reads it without the generator's internals, and so that the templates that build one do
not import :mod:`kernelgen.draw.strategies` back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from kernelgen.draw.bits import FP8_DTYPES, constructs_of
from kernelgen.host.plan import is_fp8
from kernelgen.draw.values import EPS, FLOAT_DTYPES
from kernelgen.lang.nodes import Kernel


# The ranges GeneratedKernel.arguments draws inputs from; every bound below starts here.
INPUT_FLOAT_BOUND = 8.0
INPUT_INT_LOW, INPUT_INT_HIGH = -64, 64
SCALAR_FLOAT_BOUND = 1.5  # kernelgen.host.inputs draws float scalars from [0.5, 1.5] and integers as 3
SCALAR_INT_BOUND = 3

SAFETY = 4.0

# Operations across a block, counted per kernel by GeneratedKernel.constructs.
BLOCK_OPS = ("cumsum", "cumprod", "cummax", "cummin", "sort", "argsort", "topk", "argtopk", "gather", "histogram")


@dataclass(frozen=True)
class Tolerance:
    """``|actual - expected| <= atol + rtol * |expected|``; both 0: bit for bit."""

    rtol: float
    atol: float

    @property
    def exact(self) -> bool:
        return self.rtol == 0.0 and self.atol == 0.0


def comparison_tolerance(dtype: str) -> Tolerance:
    """The least tolerance for an approximate output of ``dtype`` (a few ulps relative, and
    an absolute floor for values near zero); exact dtypes compare bit for bit."""
    if dtype not in FLOAT_DTYPES:
        return Tolerance(0.0, 0.0)
    return Tolerance(4 * EPS[dtype], 4 * EPS[dtype] * 1e-3)


@dataclass(frozen=True)
class GeneratedKernel:
    """A random kernel with the sizes to run it and a tolerance per output."""

    kernel: Kernel
    sizes: dict[str, int]
    tolerances: dict[str, Tolerance]
    template: str

    @property
    def meta(self) -> dict[str, int]:
        return {m.name: m.value for m in self.kernel.meta}

    def constructs(self) -> set[str]:
        """The optional constructs the kernel uses (hint, cache, num_sms, the kernel's and a
        loop's num_stages, an if with results or without: a store split at the tail, several
        launches, a zero-filled scratch, an aliasing output, each atomic op, each operation
        across a block), so that a differential run can say how often each was exercised."""
        found = {"kernel num_stages"} if self.kernel.num_stages != 3 else set()
        found |= {f"{t.dtype} tensor" for t in (*self.kernel.inputs, *self.kernel.outputs) if t.dtype in FP8_DTYPES}
        if self.template == "dot" and self.kernel.inputs[0].dtype in FP8_DTYPES:
            found.add("fp8 dot")
        if self.template == "dot" and self.kernel.inputs[0].dtype == "i32":
            found.add("int8 dot")

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                if "cache" in node:
                    found.add("cache")
                if node.get("op") in ("hint", "num_sms"):
                    found.add(node["op"])
                if node.get("op") in BLOCK_OPS:
                    found.add(node["op"])
                if node.get("op") == "for" and "num_stages" in node:
                    found.add("loop num_stages")
                if node.get("op") == "for" and node.get("flatten"):
                    found.add("loop flatten")
                if node.get("op") == "for" and node.get("unroll"):
                    found.add("loop unroll")
                if node.get("op") == "if":
                    found.add("if results" if node.get("results") else "if")
                elif str(node.get("op", "")).startswith("atomic_"):
                    found.add(node["op"])
                found.update(constructs_of(node))
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        document = self.kernel.model_dump(exclude_none=True)
        walk([document.get("body", []), document.get("launches", []), document.get("grid", [])])
        if any(out.alias for out in self.kernel.outputs):
            found.add("aliasing output")
        if self.kernel.is_program:
            found.add("several launches")
            if any(s.zero for s in self.kernel.scratch):
                found.add("zero scratch")
        return found

    def arguments(self, seed: int = 0) -> dict[str, Any]:
        """Call arguments (:func:`kernelgen.host.inputs.random_inputs`) kept in the ranges the
        bounds assume: floats within [-8, 8], integers within [-64, 64), scalars within
        +-1.5 (floats) and +-3 (integers)."""
        import torch

        from kernelgen.host.inputs import random_inputs

        args = random_inputs(self.kernel, self.sizes, seed=seed)
        for name, value in args.items():
            if isinstance(value, torch.Tensor):
                if is_fp8(value.dtype):  # no clamp in torch
                    args[name] = value.float().clamp(-INPUT_FLOAT_BOUND, INPUT_FLOAT_BOUND).to(value.dtype)
                elif value.is_floating_point():
                    args[name] = value.clamp(-INPUT_FLOAT_BOUND, INPUT_FLOAT_BOUND)
                elif value.dtype != torch.bool:
                    args[name] = value.clamp(INPUT_INT_LOW, INPUT_INT_HIGH - 1)
            elif isinstance(value, float):
                args[name] = min(max(value, -SCALAR_FLOAT_BOUND), SCALAR_FLOAT_BOUND)
            elif isinstance(value, int) and not isinstance(value, bool):
                args[name] = min(max(value, -SCALAR_INT_BOUND), SCALAR_INT_BOUND)
        return args

    def mismatches(self, expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
        """One line per output that differs beyond its tolerance (empty when all match)."""
        problems = []
        for name, tolerance in self.tolerances.items():
            want, got = expected[name].detach().cpu(), actual[name].detach().cpu()
            if want.shape != got.shape or want.dtype != got.dtype:
                problems.append(f"{name}: {got.dtype}{list(got.shape)} instead of {want.dtype}{list(want.shape)}")
                continue
            if tolerance.exact:
                bad = want != got
            else:
                w, g = want.double(), got.double()
                bad = ~((w - g).abs() <= tolerance.atol + tolerance.rtol * w.abs())
            if bad.any():
                index = tuple(bad.nonzero()[0].tolist())
                problems.append(f"{name}: {int(bad.sum())} of {want.numel()} elements differ, e.g. at {list(index)} "
                                f"expected {want[index].item()!r} got {got[index].item()!r} (tolerance {tolerance})")
        return problems
