"""Where the fuzzers' random choices come from: a seeded `random.Random` (long runs,
reproducible from the seed) or hypothesis draws (tests, which then shrink failures)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from hypothesis import strategies as st

_T = TypeVar("_T")


class Chooser(Protocol):
    """A source of choices: `below(n)` is an integer in `[0, n)` (n >= 1)."""

    def below(self, n: int) -> int:
        """A choice among `n` alternatives; 0 is the simplest."""
        ...


class RandomChooser:
    """Choices from a `random.Random` (seeded: the same seed gives the same choices)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def below(self, n: int) -> int:
        """A uniformly random integer in `[0, n)`."""
        return self.rng.randrange(n) if n > 1 else 0


class DrawChooser:
    """Choices drawn by hypothesis (inside `st.composite` or from `st.data()`)."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any]) -> None:
        self.draw = draw

    def below(self, n: int) -> int:
        """An integer in `[0, n)` that hypothesis shrinks towards 0."""
        return int(self.draw(st.integers(0, n - 1))) if n > 1 else 0


def pick(chooser: Chooser, items: Sequence[_T]) -> _T:
    """One of `items` (not empty)."""
    return items[chooser.below(len(items))]


def chance(chooser: Chooser, percent: int) -> bool:
    """True with probability `percent`/100 (for a random chooser)."""
    return chooser.below(100) < percent
