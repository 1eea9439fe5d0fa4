"""Hypothesis strategies for random, well-typed kernel ASTs that can be run.

:func:`kernels` draws a :class:`GeneratedKernel`: a kernel, the concrete sizes to run it with
and, per output, the tolerance a compiled kernel must meet against the interpreter. The
property tests check and interpret them; the GPU differential test compiles the same kernels
and compares the GPU's outputs with the interpreter's, so a generated kernel must have ONE
meaning that a correct compiler reproduces. The rules that make it so:

1. **Memory.** Every load and store is masked by ``offsets < size`` or provably inside its
   tensor (``x + minimum(offsets, N - 1)``, ``out + program_id`` over a grid of the output's
   length). Programs store to disjoint elements (their own tile, row or reversed tile; a
   per-program partial result at ``out + program_id``), and every output element is written
   exactly once (split stores use complementary masks), so the pre-fill never shows.
2. **Integers.** Divisors are ``|v| + k`` with ``k >= 1`` (or its negation), never zero;
   ``cdiv`` takes a non-negative dividend and a positive divisor; magnitudes stay below 2**30,
   so nothing overflows or wraps.
3. **Exactness.** Every value carries a bound on ``|GPU - interpreter|``. Exact values (bound
   0, bit-identical on both sides) are loads, literals, integer and boolean arithmetic, f32
   ``add``/``sub`` of exact values, and ``neg``, ``abs``, ``maximum``, ``minimum``, ``clamp``,
   ``where``, ``join``, ``floor``, ``ceil``, ``round``, ``finfo`` eps, float ``rem`` (C
   ``fmod``), ``max``/``min`` reductions and casts of exact values (rounding to nearest even is
   deterministic). Float ``mul`` (a GPU may fuse it into an FMA), ``div``, ``fma``, ``pow``,
   every math function, ``sum`` of floats and ``dot`` are approximate. Discrete operations
   (comparisons, ``where`` conditions, masks, ``argmax``/``argmin``, ``floor``/``ceil``/``round``,
   float ``rem``, casts to integers or bool) take
   exact operands only, so a 1-ulp difference can never flip an outcome.
4. **Domains.** ``log``, ``log2``, ``sqrt``, ``rsqrt`` and ``pow`` take ``|x| + c`` with
   ``c >= 0.5``; ``log1p`` takes ``|x|``; float divisors (``div``, ``rem``) are
   ``±(|x| + c)``; ``exp``, ``exp2``, ``sin`` and ``cos`` take arguments clamped to [-8, 8];
   ``pow`` exponents lie in [-2, 3]. No NaN or infinity is ever produced (``-inf`` appears
   only as the neutral element of a running maximum and as the ``other`` of the loads it
   reduces).
5. **Magnitudes.** Every number carries a bound on its absolute value, from the input ranges
   of :meth:`GeneratedKernel.arguments` (floats in [-8, 8], integers in [-64, 64)); a float
   above 1e4, or whose error bound exceeds 1% of its magnitude, is replaced by a simpler
   operand while generating, so nothing overflows on one side only and cancellation never
   amplifies rounding beyond a sane tolerance.
6. **Tolerance.** Each approximate operation adds a few ulps of its dtype times its magnitude
   bound to the error bound, and propagates its operands' bounds through its Lipschitz
   constant (``mul``: ``ea*|b| + eb*|a|``; ``div``: through ``1/lo``; ``exp``: times its value;
   sums: ``sqrt(n)`` ulps of the summed magnitude; ``tf32``: 2**-10 relative per operand). An
   output's :class:`Tolerance` is that bound times a safety factor, on top of
   :func:`comparison_tolerance` of its dtype; exact outputs must match bit for bit.

7. **Atomics.** Only atomics whose outputs do not depend on the order: in the tile template
   up to two atomics combine every row of every row block into ``col_acc0[col]`` (integer
   add/max/min/and/or/xor and float max/min exact; a float add's tolerance covers any
   summation order); in the elementwise ones each lane exchanges (``xchg``, or ``cas`` with
   lanes past the end compared with a value no element holds) its own element of an output
   with an ``init`` fill, and the old values, the fill where the lane is active, feed later
   lets. No old value of a contended atomic, nor of a masked-off lane, is ever used.

The kernel shapes ("templates"): 1-D elementwise (direct grid, or a grid-stride loop with
per-program trip counts and carried partial results), 2-D tiles (reductions inside the tile,
transposed outputs, row outputs), rows (loops over column chunks carrying partial sums,
running maxima, counts, argmax and a pointer; ragged per-program trip counts), tiled ``dot``
(f16/bf16/f32, ieee/tf32, with or without ``acc``, f32 or f16 accumulation), a 3-D grid, and
tiles whose outputs are each an operation across the tile (``blocks``).
Inside each, random ``let`` chains use every unary and binary operation, ``where``, ``fma``,
``clamp``, casts among all dtypes, reductions (with ``keepdims``), ``expand_dims``,
``reshape``, ``broadcast`` and ``trans``, and ifs on per-program scalar conditions (program ids,
comparisons of exact scalars) whose results join the values drawn from, with lets (and ifs) of
their own in each branch; 1-D stores are sometimes split by an if, the full block unmasked and
the tail masked; and operations across a block: scans (either direction), sort, top-k
(values of any operand; argsort/argtopk of exact ones), gather (indices ``rem(|i|, n)``) and 1-D
histograms (values in range, sometimes masked). Block offsets ``start + arange(B)`` with ``start`` a multiple of ``B``
often carry the (true) contiguity and alignment hint; loads and stores sometimes a cache or
eviction modifier (``cache``); the rows and dot templates draw the kernel's ``num_stages`` and loops
sometimes their own.
"""

from __future__ import annotations

from hypothesis import strategies as st

# The generator's parts, each in its own module (this module is its entry point and re-exports
# what callers import from it): the generated kernel and its tolerances, the random expressions,
# and the templates.
from kernelgen.draw.kernel import GeneratedKernel, Tolerance, comparison_tolerance  # noqa: F401
from kernelgen.draw.templates import (DOT_VARIANTS, TEMPLATES, block_op_kernels, dot_kernels,  # noqa: F401
                                      elementwise_kernels, grid3d_kernels, row_kernels, tile_kernels)


def kernels() -> st.SearchStrategy[GeneratedKernel]:
    """Random well-typed kernels of every template (see the module docstring for the rules)."""
    return st.sampled_from(sorted(TEMPLATES)).flatmap(lambda name: TEMPLATES[name]())
