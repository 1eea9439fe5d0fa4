"""The timed calls of a raw-Triton answer, in the sandbox's child, and the ones of them checked.

An answer is Python running in the timer's own process: it can keep state between calls, count
them, and time the pauses between them. The checked calls come first and the timed ones after,
so an answer that kept its results (by its tensors' addresses, or by a few of their elements
compared in its kernel) and returned them in every timed repetition would be timed doing no
work, with every check passed. So, in the timed calls (:class:`TimedCalls`):

* before each one, outside its window, the inputs are set back to their values as drawn (an
  in-place answer would find its own results there otherwise) and the floating ones (16 bits
  or more) varied (:func:`vary`): each element taken from the drawn values or, one in
  :data:`MIXED`, from another draw (the parent's ``refill``), then scaled by a fresh factor
  whose logarithm's magnitude is in :data:`VARY_LOG`, its sign at random, and kept within the
  range of both draws' finite values (:func:`span`: a value in (0, 1) stays there, a large f16
  stays finite). No two calls see the same values, nor values one scale apart, and a result
  kept from another call is off by the other draw's values. The other inputs (integers,
  booleans, 8-bit floats) that the parent names ``mixed`` (their task's domain holds element by
  element: integers in a range, not sorted segment starts) take each element from the drawn
  values or, one in :data:`MIXED`, from the other draw, unscaled (:func:`mix`), at the same
  places in every such input of one shape, so that a precondition on a pair of elements (a
  divisor for its dividend) holds as it did in either draw; the rest keep their values as
  drawn. Without a float or a mixed input, an answer could still keep its results by sampled
  elements;
* :data:`CHECKED_REPETITIONS` of the repetitions of each series, chosen at random, are made on
  values the parent varied the same way (:func:`checked_values`: another call of the same
  family, which no sample of its elements tells apart), each one's outputs and its inputs
  after it kept, outside the window, for the parent to compare with the reference's on those
  values. Nor can their number or a pause before them tell them (their preparation does the
  same work): one that skipped its work in a fraction f of the repetitions is found with
  probability 1 - (1 - f)^3 or more, and one whose median time is of skipped work (f > 1/2),
  seven times in eight or more. Where the timer made fewer repetitions than there are checks
  (a slow answer, whose repetitions fit a turn), the rest are made after the timing, each as
  the last of 1 to 8 more calls made as timed ones are.

Every torch function used after the answer's import is taken before it (:class:`Tools`): the
answer runs in this process and could replace torch's (the static rules refuse it; advisory).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from kernelgen.gpu.timing import has_own_memory

# The factors each element of a floating input is scaled by in a timed call: exp(+-s), s in
# VARY_LOG, the sign at random: positive (signs stay), 1.6-3.2 % away from 1 (more than a
# bf16 value's spacing, so most elements change), and as often up as down, so that a long
# product of varied values drifts no more than one of drawn values (factors all below 1 took
# a 32768-long running product to 0 after its first 4000 terms, and its checks with it). The
# range clamped to (span) cuts as much off the top as off the bottom, so it adds no drift.
# 8-bit floats are copied unscaled. And the share of its elements taken from the other draw
# (valid values of the same domain).
VARY_LOG = (2 ** -6, 2 ** -5)
MIXED = 1 / 8
# How many timed repetitions are checked (on checked_values), and how many calls more, at
# most, are made after the timing before a checked call made there.
CHECKED_REPETITIONS = 3
MOST_CALLS_AFTER = 8


@dataclass(frozen=True)
class Tools:
    """The functions the timed calls use, taken before the answer is imported."""

    copy: Callable[..., Any]  # torch.Tensor.copy_
    mul: Callable[..., Any]  # torch.mul
    add: Callable[..., Any]  # torch.add
    exp: Callable[..., Any]  # torch.exp
    clamp: Callable[..., Any]  # torch.clamp
    isfinite: Callable[..., Any]  # torch.isfinite
    amin: Callable[..., Any]  # torch.amin
    amax: Callable[..., Any]  # torch.amax
    rand: Callable[..., Any]  # torch.rand
    where: Callable[..., Any]  # torch.where
    lt: Callable[..., Any]  # torch.lt
    empty_like: Callable[..., Any]  # torch.empty_like
    view: Callable[..., Any]  # torch.Tensor.view
    no_grad: Callable[[], Any]  # torch.no_grad
    generator: Any  # a torch.Generator on the device, seeded from os.urandom
    chance: Any  # a random.Random seeded from os.urandom

    @classmethod
    def taken(cls, generator: Any, chance: Any) -> Tools:
        """PyTorch's functions as they are now (before the answer's import), with this randomness."""
        import torch

        return cls(torch.Tensor.copy_, torch.mul, torch.add, torch.exp, torch.clamp, torch.isfinite, torch.amin, torch.amax,
                   torch.rand, torch.where, torch.lt, torch.empty_like,
                   torch.Tensor.view, torch.no_grad, generator, chance)


def varied(tensor: Any) -> bool:
    """Whether a timed call's input is varied: a float of 16 bits or more."""
    return tensor.is_floating_point() and tensor.element_size() >= 2


def span(drawn: Any, other: Any, tools: Tools) -> tuple[float, float] | None:
    """The range of both draws' finite values, where :func:`vary` keeps a varied value: None
    where it is a single value or none (a constant input is scaled unclamped, as before)."""
    if not drawn.numel():
        return None
    lows, highs = [], []
    for t in (drawn, other):
        finite = tools.isfinite(t)
        lows.append(float(tools.amin(tools.where(finite, t, float("inf")))))
        highs.append(float(tools.amax(tools.where(finite, t, float("-inf")))))
    low, high = min(lows), max(highs)
    return (low, high) if low < high else None


def vary(drawn: Any, other: Any, out: Any, tools: Tools, within: tuple[float, float] | None = None) -> None:
    """``out`` = each element of ``drawn`` (one in :data:`MIXED`: of ``other``) times a fresh
    factor exp(+-s), s in :data:`VARY_LOG`, rounded to ``out``'s dtype; a finite value clamped
    to ``within`` (:func:`span`, taken once: it waits for the GPU)."""
    low, high = VARY_LOG
    coins, sizes, signs = (tools.rand(drawn.shape, generator=tools.generator, device=drawn.device) for _ in range(3))
    source = tools.where(tools.lt(coins, MIXED), other, drawn)
    logs = tools.add(tools.mul(sizes, high - low), low)
    logs = tools.where(tools.lt(signs, 0.5), logs, tools.mul(logs, -1.0))
    tools.mul(source, tools.exp(logs), out=out)
    if within is not None:
        # where the value was finite: a product past the dtype's range is clamped too
        tools.where(tools.isfinite(source), tools.clamp(out, *within), out, out=out)


def heads_for(x: Any, heads: dict[tuple[int, ...], Any], tools: Tools) -> Any:
    """Where a mixed input of ``x``'s shape takes the other draw's element in this call (one in
    :data:`MIXED`): drawn once per shape into ``heads``, so every such input agrees."""
    shape = tuple(x.shape)
    if shape not in heads:
        heads[shape] = tools.lt(tools.rand(shape, generator=tools.generator, device=x.device), MIXED)
    return heads[shape]


def mix(drawn: Any, other: Any, heads: Any, out: Any, tools: Tools) -> None:
    """``out`` = ``other``'s element where ``heads`` holds, else ``drawn``'s, bit for bit (a
    boolean or an 8-bit float as its byte)."""
    import torch

    if drawn.dtype == torch.bool or drawn.is_floating_point():
        drawn, other, out = (tools.view(t, torch.uint8) for t in (drawn, other, out))
    tools.where(heads, other, drawn, out=out)


def change(x: Any, mixed: bool) -> str | None:
    """How a timed call changes input ``x`` (a tensor): "vary" (a float of 16 bits or more),
    "mix" (another input the parent named ``mixed``) or None (as drawn)."""
    return "vary" if varied(x) else "mix" if mixed else None


def remake(how: str, drawn: Any, other: Any, out: Any, heads: dict[tuple[int, ...], Any], tools: Tools,
           within: tuple[float, float] | None = None) -> None:
    """``out`` = one call's values of an input changed ``how`` (:func:`change`), ``heads`` this
    call's places of mixed elements by shape (:func:`heads_for`), ``within`` a varied one's
    range (:func:`span`)."""
    if how == "vary":
        vary(drawn, other, out, tools, within)
    else:
        mix(drawn, other, heads_for(drawn, heads, tools), out, tools)


def checked_values(drawn: Sequence[Any], other: Sequence[Any], tools: Tools,
                   mixed: Sequence[bool] | None = None) -> list[Any]:
    """The values of a checked call, made by the parent as every timed call's are: the floating
    inputs varied (:func:`vary`), those ``mixed`` names mixed (:func:`mix`), the others as
    drawn; where no input is either, the other draw's (a result kept from another call is then
    stale there, if not in the calls that repeat one set of values)."""
    import torch

    mixed = list(mixed) if mixed is not None else [False] * len(drawn)
    hows = [change(x, m) if isinstance(x, torch.Tensor) else None for x, m in zip(drawn, mixed)]
    heads: dict[tuple[int, ...], Any] = {}
    values = []
    for x, y, how in zip(drawn, other, hows):
        if not isinstance(x, torch.Tensor):
            values.append(x)
        elif how is not None:
            out = torch.empty_like(x)
            remake(how, x, y, out, heads, tools, span(x, y, tools) if how == "vary" else None)
            values.append(out)
        else:
            values.append(x.clone() if any(hows) else y.clone())
    return values


class TimedCalls:
    """The timer's ``prepare``, its ``series`` and the timed function for ``entry(*inputs)``
    (see the module docstring); ``other``, where given, another draw of the inputs, and
    ``checks`` the values of the checked calls (:func:`checked_values`), some of the
    repetitions of each series :func:`~kernelgen.gpu.timing.timed_windows` queues (it returns
    the last series' times: the checks kept are that series')."""

    def __init__(self, entry: Callable[[], Any], inputs: Sequence[Any], other: Sequence[Any] | None,
                 checks: Sequence[Any] | None, tools: Tools, returned: Callable[[Any], list[Any]],
                 mixed: Sequence[bool] | None = None) -> None:
        import torch

        self.entry, self.inputs, self.tools, self.returned = entry, list(inputs), tools, returned
        self.tensors = [isinstance(x, torch.Tensor) for x in self.inputs]
        # Each input tensor: its values as drawn, where its varied or mixed values are made
        # (floats of 16 bits or more; the others mixed ones, with the other draw), how
        # ("vary", "mix" or None: as drawn), the other draw's values, the checked calls' and
        # the range a varied one's values are kept in (taken now: it waits for the GPU).
        others = list(other) if other is not None else [None] * len(self.inputs)
        checked = list(checks) if checks is not None else [None] * len(self.inputs)
        mixing = list(mixed) if mixed is not None and other is not None else [False] * len(self.inputs)
        self.kept = []
        for x, y, z, m in zip(self.inputs, others, checked, mixing):
            if isinstance(x, torch.Tensor) and has_own_memory(x):
                drawn, how = x.clone(), change(x, m)
                other = drawn if y is None else y
                self.kept.append((x, drawn, torch.empty_like(x) if how else None, how, other,
                                  drawn if z is None else z, span(drawn, other, tools) if how == "vary" else None))
        self.wanted = CHECKED_REPETITIONS if checks is not None else 0  # made after the timing where it made fewer
        self.chosen: set[int] = set()  # the numbers of the checked calls
        self.count = 0  # the calls prepared so far
        self.last: Any = None  # the last call's result
        self.checked: list[tuple[list[Any], list[Any]]] = []  # each checked call's outputs and inputs after it
        # Where, in a series, each call's outputs and inputs after it are copied before the next
        # call: a slot per check, and a spare for the other calls. Made before the series, so
        # that a checked call's copy allocates nothing and does no other work than any call's
        # (an answer would see its next output's address move, or a longer gap on the GPU, and
        # know a check had passed).
        self.slots: list[tuple[list[Any], list[Any]]] = []
        self.spare: tuple[list[Any], list[Any]] | None = None

    def series(self, repetitions: int) -> None:
        """Before the timer queues ``repetitions`` calls: some of them are checked (those of an
        earlier series are dropped, its times too)."""
        following = range(self.count + 1, self.count + repetitions + 1)
        self.chosen = set(self.tools.chance.sample(following, min(self.wanted, repetitions)))
        self.checked, self.slots, self.spare = [], [], None
        if self.wanted and self.last is not None:
            self.slots = [self._slot() for _ in range(self.wanted)]
            self.spare = self._slot()

    def prepare(self) -> None:
        """Before each call, outside its window: the previous call's results kept if it was a
        checked one, then this call's inputs."""
        self._keep()
        self.count += 1
        checked = self.count in self.chosen
        # A checked call's preparation makes the same varied values as any other's and copies
        # the same bytes: neither the host's time nor the GPU's before it tells it apart.
        heads: dict[tuple[int, ...], Any] = {}  # where this call's mixed inputs take the other draw, by shape
        with self.tools.no_grad():
            for tensor, drawn, made, how, other, check, within in self.kept:
                if how is not None:
                    remake(how, drawn, other, made, heads, self.tools, within)
                self.tools.copy(tensor, check if checked else drawn if made is None else made)

    def __call__(self) -> None:
        self.last = None  # the previous result's memory is free for this call, as a user's would be
        self.last = self.entry()

    def _made(self) -> int:
        """How many of the checked calls have been made."""
        return sum(1 for number in self.chosen if number <= self.count)

    def _slot(self) -> tuple[list[Any], list[Any]]:
        """Memory for the last call's outputs and inputs after it."""
        with self.tools.no_grad():
            return ([self.tools.empty_like(t) for t in self.returned(self.last)],
                    [self.tools.empty_like(x) if tensor else x for x, tensor in zip(self.inputs, self.tensors)])

    def _keep(self) -> None:
        """The last call's outputs and inputs after it: kept where it was a checked call not yet
        kept, else copied to the spare slot (in a series)."""
        checked = self.count in self.chosen and len(self.checked) < self._made()
        if self.last is None or not (checked or self.spare):
            return
        if checked:
            slot = self.slots[len(self.checked)] if len(self.slots) > len(self.checked) else self._slot()
        else:
            slot = self.spare
        with self.tools.no_grad():
            for kept, tensor in zip(slot[0], self.returned(self.last), strict=True):
                self.tools.copy(kept, tensor)
            for kept, value, tensor in zip(slot[1], self.inputs, self.tensors):
                if tensor:
                    self.tools.copy(kept, value)
        if checked:
            self.checked.append(slot)

    def finish(self) -> list[tuple[list[Any], list[Any]]]:
        """After the timing: each checked call's outputs and its inputs after it (none without
        ``checks``), those the timer did not make made now."""
        self._keep()
        missing = self.wanted - len(self.checked)
        self.chosen = {number for number in self.chosen if number <= self.count}
        self.spare = None  # the calls after the timing copy nothing but their checks
        for _ in range(missing):
            for _ in range(self.tools.chance.randint(1, MOST_CALLS_AFTER)):
                self.prepare()
                self()
            self.chosen.add(self.count + 1)
            self.prepare()
            self()
            self._keep()
        return self.checked
