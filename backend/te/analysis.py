"""Questions about compute bodies: which tensors they read."""

from __future__ import annotations

from collections.abc import Iterable

from ..tir.expr import PrimExpr
from ..tir.visitor import sub_expressions


def tensors_read(bodies: Iterable[PrimExpr]) -> tuple:  # type: ignore[type-arg]
    """The tensors read by `bodies` (`ProducerLoad`s), each once, in first-use order."""
    from .tensor import ProducerLoad

    seen: dict[int, object] = {}
    for body in bodies:
        for node in sub_expressions(body):
            if isinstance(node, ProducerLoad) and id(node.producer) not in seen:
                seen[id(node.producer)] = node.producer
    return tuple(seen.values())
