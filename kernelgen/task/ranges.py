"""What a task's sizes, inputs and scalars are drawn from: size ranges, input domains and scalar
ranges, as a task file states them (:mod:`kernelgen.task.spec`); how the harness draws from them
lives in :mod:`kernelgen.task.verify` and :mod:`kernelgen.task.draws`."""

from __future__ import annotations

import json
import math
import random
from typing import Literal, Mapping, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kernelgen.lang import nodes as L


class StrictModel(BaseModel):
    """A task file's parts: unknown keys are errors, values immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class SizeRange(StrictModel):
    """The values a size name is drawn from. ``cpu_max`` caps it where kernels run in the CPU
    interpreter (no GPU), which is orders of magnitude slower."""

    min: int = Field(1, ge=0)
    max: int = Field(ge=1)
    cpu_max: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> SizeRange:
        if self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        return self


class Domain(StrictModel):
    """How an input's values are drawn: normal (both signs, the default) scaled by ``scale``,
    uniform in [low, high], integers in [low, high], ``starts``: the starts of segments of a 1-D
    integer input (embedding_bag's offsets; the last segment ends at the size ``total``, a task's
    size name), sorted in [0, total], the first 0, so ragged inputs are well formed (the cuts are
    uniform, so lengths vary and equal neighbours make empty ones), or ``ends``: integers
    nondecreasing along the last axis from low up to a last element equal to high (the ends of
    ragged groups, as torch's grouped matmul takes them). For integers and ends, ``low`` and
    ``high`` may be integer host expressions of the sizes (``{op: sub, lhs: P, rhs: 1}``): index
    tables that must point inside a tensor whose extent is a size (pages of a KV cache, rows);
    and of the call's choice inputs (an index along the chosen dim: ``{op: where, cond: {op: eq,
    lhs: dim, rhs: 0}, x: M, y: N}``, so each call's indices reach its own extent, not the
    smaller of the two);
    in an extreme draw both bounds are among an integers domain's values (the last row's id).
    ``zeros``: a float input drawn from a normal domain has exact zeros (+0.0 and -0.0) in the
    extreme draws (:func:`kernelgen.task.extreme_values.with_zeros`); false where the prompt promises none.

    What a PyTorch user may pass beyond ordinary values (issue 32), mostly in a task's
    ``extreme_domains``: ``full``, every value of the dtype: integers over its whole range, both
    extremes among them, floats by uniform bits (tiny, subnormal and huge magnitudes, a value
    past f32's precision in f64; a non-finite pattern is redrawn normal); ``specials``, values
    placed among the drawn ones, each at least once where the tensor has room (``nan``, ``inf``,
    ``-inf``, integers, host expressions of the sizes: an ignore index, targets past C, i64
    targets that an i32 truncation would turn into a class; those its dtype cannot hold are
    left out); ``zero_rows``, some rows along the last axis all zero (a block whose scale needs
    the stated floor; a tensor of one row keeps it); ``ties``, normal values rounded to quarters of
    the scale (equal values in every row, for tasks that judge how ties are broken); ``same_as``,
    another input of the same shape and dtype drawn before this one: some rows along the last axis
    are copies of its rows (a vector's distance to itself, duplicates in a batch)."""

    kind: Literal["normal", "uniform", "integers", "starts", "ends", "full"] = "normal"
    scale: float = 1.0
    zeros: bool = True
    low: Union[float, L.Expr] = -1.0
    high: Union[float, L.Expr] = 1.0
    total: str | None = None
    specials: list[L.Expr] = []
    zero_rows: bool = False
    ties: bool = False
    same_as: str | None = None
    # An input whose offset draws (kernelgen.task.offset) add the offset this input takes: a
    # per-channel mean of that input (batch norm's saved or running mean), so the pair cancels as
    # real statistics do.
    offset_with: str | None = None
    # Whether the offset draws move this input: None as kernelgen.task.offset decides (a normal
    # domain of the largest rank); true for a uniform range the prompt does not promise (row_var's
    # [50, 54] stands for any rows with a large mean).
    offset_draws: bool | None = None

    @model_validator(mode="after")
    def _total_for_starts(self) -> Domain:
        if (self.kind == "starts") != (self.total is not None):
            raise ValueError("total (a size name) is given for, and only for, kind starts")
        return self

    @property
    def by_element(self) -> bool:
        """Whether each element is of the domain on its own: an element replaced by another
        draw's at its place leaves a tensor of the domain (not sorted segment starts or ends,
        rows all zero or copied from another input)."""
        return self.kind not in ("starts", "ends") and self.same_as is None and not self.zero_rows

    def describe(self) -> str:
        if self.kind == "normal":
            text = f"normal of scale {self.scale:g}" + (", rounded to quarters (ties)" if self.ties else "")
        elif self.kind == "starts":
            text = f"sorted segment starts from 0 to {self.total}"
        elif self.kind == "full":
            text = "integers over the dtype's whole range, its extremes included"
        else:
            what = {"integers": "integers", "uniform": "uniform",
                    "ends": "nondecreasing integers ending at the high bound"}[self.kind]
            text = f"{what} in [{_show_bound(self.low)}, {_show_bound(self.high)}]"
        if self.specials:
            text += ", with " + ", ".join(_show_bound(v) for v in self.specials) + " among them"
        if self.zero_rows:
            text += ", some rows all zero"
        if self.same_as is not None:
            text += f", some rows equal to {self.same_as}'s"
        return text

    def special_values(self, sizes: Mapping[str, int]) -> list[Union[int, float]]:
        """``specials`` at these sizes (host expressions evaluated)."""
        from kernelgen.host.plan import HostEnv, eval_host

        env = HostEnv(dict(sizes), {}, {})
        return [eval_host(v, env) for v in self.specials]

    def bounds(self, sizes: Mapping[str, int]) -> tuple[float, float]:
        """``low`` and ``high`` at these sizes (host expressions evaluated)."""
        from kernelgen.host.plan import HostEnv, eval_host

        env = HostEnv(dict(sizes), {}, {})
        return tuple(b if isinstance(b, (int, float)) else eval_host(b, env) for b in (self.low, self.high))


def _show_bound(bound: Union[float, L.Expr]) -> str:
    if isinstance(bound, int) and not isinstance(bound, bool):
        return str(bound)
    if isinstance(bound, float):
        return f"{bound:g}"
    if isinstance(bound, str):
        return bound
    return json.dumps(bound.model_dump(exclude_defaults=True) if isinstance(bound, BaseModel) else bound)


class ScalarRange(StrictModel):
    """The values a scalar input is drawn from, per size assignment: uniform in [min, max]
    (log-uniform with ``log``, for eps-like scalars spanning decades; integers for an integer
    scalar), or one of ``values``. A kernel that hard-codes the bench value, or ignores the
    scalar, then fails; the range must make the scalar matter beyond the tolerance."""

    min: float | None = None
    max: float | None = None
    log: bool = False
    values: list[Union[float, int, bool]] | None = Field(None, min_length=1)
    # The value the extreme draws take (the most demanding end: a softmax temperature at its
    # smallest, where x / temperature overflows exp first); None: one of the range's bounds, at
    # random (a boundary the prompt allows, softshrink's lambd = 0, which uniform draws never hit).
    extreme: Union[float, int, bool, None] = None
    # Another scalar this one is at least (a pair of bounds whose prompt promises lo <= hi): both
    # are drawn from the same range and the pair is sorted, so every ordered pair the prompt
    # allows is drawn (both bounds on one side of 0 too), not only those of two disjoint ranges.
    at_least: str | None = None
    # The integer scalar that seeds the language's ``rand`` this one is compared with (dropout's p
    # against rand(seed, offset) at each element's flat offset): it takes the random number of
    # one element (an offset below the first output's element count, its number within the
    # range), and in an extreme draw the f32 number just below one. A comparison made loose
    # (u >= p) or moved (1 - u < 1 - p, rounded more coarsely) differs at that element and
    # nowhere else, so a uniform draw of p never shows it (round 15).
    at_rand: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> ScalarRange:
        bounded = self.min is not None and self.max is not None
        if bounded == (self.values is not None) or (self.values is not None and (self.min, self.max) != (None, None)):
            raise ValueError("give either min and max, or values")
        if bounded and self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        if self.log and not (bounded and self.min > 0):
            raise ValueError("log needs min and max above 0")
        return self

    def describe(self) -> str:
        above = f", at least {self.at_least}" if self.at_least is not None else ""
        if self.values is not None:
            return f"one of {self.values}{above}"
        return f"any value in [{self.min:g}, {self.max:g}]{above}"

    def holds(self, value: Union[float, int, bool]) -> bool:
        """Whether ``value`` is one this range draws."""
        if self.values is not None:
            return value in self.values
        return self.min <= value <= self.max

    def bound(self, rng: random.Random, drawn: Union[float, int, bool]) -> Union[float, int, bool]:
        """min or max at random, in ``drawn``'s type (``drawn`` itself for a list of values)."""
        return drawn if self.values is not None else type(drawn)(rng.choice((self.min, self.max)))

    def draw(self, rng: random.Random, integer: bool) -> Union[float, int, bool]:
        if self.values is not None:
            return rng.choice(self.values)
        if integer:
            return rng.randint(int(self.min), int(self.max))
        if self.log:
            return math.exp(rng.uniform(math.log(self.min), math.log(self.max)))
        return rng.uniform(self.min, self.max)
