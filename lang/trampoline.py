"""Run recursive algorithms without Python recursion.

Write the algorithm as a generator that *yields* a sub-generator wherever it would make a
recursive call; the value of the `yield` is that call's result. `run` drives the generators
with an explicit stack, so the depth of the program being processed never touches Python's
recursion limit:

    def depth(e):
        if isinstance(e, Let):
            inner = yield depth(e.body)
            return inner + 1
        return 0

    run(depth(expr))
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, TypeVar

T = TypeVar("T")

Step = Generator[Any, Any, T]


def run(task: Step[T]) -> T:
    """Drive `task` (and the tasks it yields) to completion; return its value."""
    stack: list[Generator[Any, Any, Any]] = [task]
    value: Any = None
    error: BaseException | None = None
    while stack:
        top = stack[-1]
        try:
            if error is not None:
                pending, error = error, None
                child = top.throw(pending)
            else:
                child = top.send(value)
        except StopIteration as stop:
            stack.pop()
            value = stop.value
            continue
        except BaseException as exc:  # propagate to the caller generator
            stack.pop()
            if not stack:
                raise
            error = exc
            continue
        if isinstance(child, Generator):
            stack.append(child)
            value = None
        else:
            value = child
    return value
