"""Extreme draws of an integer-valued domain holding 0 (reductions.with_zero_extremum_lines): some
reduced lines have zero as their minimum, +0.0 before -0.0, and some as their maximum, -0.0
before +0.0, so a kernel ordering floats by their bits picks the wrong zero."""

from __future__ import annotations

import torch

from kernelgen.task.reductions import with_zero_extremum_lines


def _first_zero_sign(line: torch.Tensor, extremum: torch.Tensor) -> list[bool]:
    zeros = (line == extremum).nonzero().flatten()
    return [bool(torch.signbit(line[i])) for i in zeros]


def test_lines_get_a_zero_extremum_with_both_signs_in_order() -> None:
    values = torch.randint(-10, 11, (40, 64)).float()
    drawn = with_zero_extremum_lines(values, 1, 7)
    minima = [line for line in drawn if float(line.min()) == 0]
    maxima = [line for line in drawn if float(line.max()) == 0]
    assert len(minima) >= 10 and len(maxima) >= 10
    for line in minima:
        signs = _first_zero_sign(line, line.min())
        assert signs[0] is False and True in signs  # +0.0 first, a -0.0 later
    for line in maxima:
        signs = _first_zero_sign(line, line.max())
        assert signs[0] is True and False in signs  # -0.0 first, a +0.0 later
    # along the first axis (columns) too, and the other lines keep their values
    columns = with_zero_extremum_lines(values, 0, 7)
    assert sum(float(c.min()) == 0 for c in columns.T) >= 16
    assert int((columns == values).all(dim=0).sum()) >= 64 // 2 - 1
