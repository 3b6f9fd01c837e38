"""Fewer garbage collections while a large program is built or rewritten.

CPython's cyclic collector runs a young collection every 700 net allocations of
container objects, and a full one whenever the long-lived objects grew by a quarter. A
pass over a 100,000-binding program allocates millions of IR nodes, tuples and dicts
(none of them garbage: IR nodes form no cycles), so the collector keeps scanning them and
costs a fifth of the time of the standard pipeline. `fewer_collections()` raises the
young-generation threshold while it is active (nested uses share one raise; the first
threshold is put back when the outermost one exits), so collections are rarer but still
happen: cyclic garbage made meanwhile is freed, just in larger batches.

    with fewer_collections():
        out = pipeline(mod)
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 50_000
"""The young-generation threshold while `fewer_collections` is active (CPython's
default is 700)."""

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, ...] = ()


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Raise the collector's young-generation threshold for the duration (see the module
    docstring); a threshold already higher, or a collector disabled, is left alone."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            if 0 < _saved[0] < YOUNG_THRESHOLD:
                gc.set_threshold(YOUNG_THRESHOLD, *_saved[1:])
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and gc.get_threshold()[0] == YOUNG_THRESHOLD != _saved[0]:
                gc.set_threshold(*_saved)
