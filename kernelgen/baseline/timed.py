"""The timed calls of a raw-Triton answer, in the sandbox's child, and the one of them checked.

An answer is Python running in the timer's own process: it can keep state between calls, count
them, and time the pauses between them. The checked calls come first and the timed ones after,
so an answer that kept its results (by its tensors' addresses, or by a few of their elements
compared in its kernel) and returned them in every timed repetition would be timed doing no
work, with every check passed. So, in the timed calls (:class:`TimedCalls`):

* before each one, outside its window, the inputs are set back to their values as drawn (an
  in-place answer would find its own results there otherwise), the floating ones (16 bits or
  more) scaled element by element by fresh factors in :data:`VARY_SCALE`: no two calls see
  the same values, nor values one scale apart. Integer inputs (indices, offsets, lengths) keep
  their values, whose preconditions must hold in every call; an answer whose inputs are all
  integers could still keep its results by sampled elements;
* :data:`CHECKED_REPETITIONS` of the timed repetitions, chosen at random, are made on the
  refill values instead (another draw, the parent's ``refill``), each one's outputs and its
  inputs after it kept, outside the window, for the parent to compare with the reference's on
  the refill. An answer cannot tell them from the others, not by their number nor by a pause
  before them (their preparation makes the same varied values and copies the same bytes): one that skipped its work in a fraction f of the repetitions is found with
  probability 1 - (1 - f)^3 or more, and one whose median time is of skipped work (f > 1/2),
  seven times in eight or more. Where the timer made fewer calls than chosen (a slow answer,
  whose repetitions fit a turn), each checked call it did not make is made after the timing,
  as the last of 1 to 8 more made as timed ones are.

Every torch function used after the answer's import is taken before it (:class:`Tools`): the
answer runs in this process and could replace torch's (the static rules refuse it; advisory).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

# The factors each element of a floating input is scaled by in a timed call: below 1 (a value
# in [0, 1] stays there), positive (signs stay), 1.6-3.1 % (more than a bf16 value's spacing,
# so most elements change). 8-bit floats are copied unscaled.
VARY_SCALE = (1 - 2 ** -5, 1 - 2 ** -6)
# How many timed repetitions are checked (on the refill values), and how many calls more, at
# most, are made after the timing before a checked call made there.
CHECKED_REPETITIONS = 3
MOST_CALLS_AFTER = 8


@dataclass(frozen=True)
class Tools:
    """The functions the timed calls use, taken before the answer is imported."""

    copy: Callable[..., Any]  # torch.Tensor.copy_
    mul: Callable[..., Any]  # torch.mul
    add: Callable[..., Any]  # torch.add
    rand: Callable[..., Any]  # torch.rand
    empty_like: Callable[..., Any]  # torch.empty_like
    no_grad: Callable[[], Any]  # torch.no_grad
    generator: Any  # a torch.Generator on the device, seeded from os.urandom
    chance: Any  # a random.Random seeded from os.urandom


def writable(tensor: Any) -> bool:
    """Whether every element of ``tensor`` is its own memory (an expanded tensor's are not: no
    call writes it in place, and it can be neither set back nor refilled: the parent expects
    it unchanged in the calls on the refill)."""
    return not any(stride == 0 and size > 1 for stride, size in zip(tensor.stride(), tensor.shape))


class TimedCalls:
    """The timer's ``prepare``, its ``series`` and the timed function for ``entry(*inputs)``
    (see the module docstring); ``refill``, where given, the values of the checked calls, some
    of the repetitions of each series :func:`~kernelgen.gpu.timing.timed_windows` queues (it
    returns the last series' times: the checks kept are that series')."""

    def __init__(self, entry: Callable[[], Any], inputs: Sequence[Any], refill: Sequence[Any] | None,
                 tools: Tools, returned: Callable[[Any], list[Any]]) -> None:
        import torch

        self.entry, self.inputs, self.refill, self.tools, self.returned = entry, list(inputs), refill, tools, returned
        self.tensors = [isinstance(x, torch.Tensor) for x in self.inputs]
        # Each input tensor: its values as drawn, where its varied values are made (floats of 16
        # bits or more) and its refill values.
        refills = list(refill) if refill is not None else [None] * len(self.inputs)
        self.kept = [(x, x.clone(), torch.empty_like(x) if x.is_floating_point() and x.element_size() >= 2 else None,
                      value) for x, value in zip(self.inputs, refills) if isinstance(x, torch.Tensor) and writable(x)]
        self.wanted = CHECKED_REPETITIONS if refill is not None else 0  # made after the timing where it made fewer
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
        with self.tools.no_grad():
            low, high = VARY_SCALE
            for tensor, drawn, varied, refill in self.kept:
                if varied is not None:
                    factors = self.tools.rand(tensor.shape, generator=self.tools.generator, device=tensor.device)
                    self.tools.mul(drawn, self.tools.add(self.tools.mul(factors, high - low), low), out=varied)
                self.tools.copy(tensor, refill if checked else drawn if varied is None else varied)

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
        a refill), those the timer did not make made now."""
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
