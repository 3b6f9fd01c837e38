"""Compute rewrites: named builders of a replacement computation, so that replacing a
stage's computation (`Schedule.replace_compute`) is a trace step described by data.

    @register_rewrite("dense.gemm")
    def gemm(op: Operation, nb: int) -> dict[str, Tensor]:
        main, packed = ...                       # new computes reading what `op` reads
        view = compute(op.output(0).shape, lambda *i: main[i], name=op.name)
        return {"view": view, "main": main, "packed": packed}

A rewrite takes the operation the stage computes now and keyword parameters (booleans,
integers, strings, or flat tuples of them: what a trace prints and parses), and returns
its tensors by name; `"view"` is the one the stage computes from then on (the shape and
dtype of the stage's output). It must be deterministic: the same operation and parameters
build the same computes (names included), which is what lets a trace replay. The default
schedules register theirs when `relay.backend.lower.schedules` is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .errors import ScheduleError
from .tensor import Operation, Tensor

RewriteFn = Callable[..., Mapping[str, Tensor]]
"""A rewrite: `(operation, **params) -> {name: tensor}` with at least `"view"`."""

Param = bool | int | str | tuple[bool | int | str, ...]
"""A rewrite parameter as a trace holds it."""

_REWRITES: dict[str, RewriteFn] = {}


def register_rewrite(name: str) -> Callable[[RewriteFn], RewriteFn]:
    """Register the decorated function as the rewrite `name` (a name is registered once)."""

    def add(fn: RewriteFn) -> RewriteFn:
        if name in _REWRITES and _REWRITES[name] is not fn:
            raise ValueError(f"compute rewrite `{name}` is already registered")
        _REWRITES[name] = fn
        return fn

    return add


def lookup_rewrite(name: str) -> RewriteFn:
    """The rewrite registered as `name`."""
    fn = _REWRITES.get(name)
    if fn is None:
        raise ScheduleError(
            f"unknown compute rewrite `{name}` (the default schedules' rewrites are"
            " registered by importing relay.backend.lower.schedules)"
        )
    return fn


def is_param(value: Any) -> bool:
    """Whether `value` can be a rewrite parameter (see `Param`)."""
    if isinstance(value, tuple):
        return all(isinstance(v, bool | int | str) for v in value)
    return isinstance(value, bool | int | str)


def check_params(params: Mapping[str, Any]) -> dict[str, Param]:
    """`params` with lists made tuples; a `ScheduleError` for a value a trace cannot hold."""
    out: dict[str, Param] = {}
    for key, value in params.items():
        value = tuple(value) if isinstance(value, list) else value
        if not is_param(value):
            raise ScheduleError(
                f"replace_compute: parameter `{key}` must be a boolean, an integer, a string"
                f" or a tuple of them, got {value!r}"
            )
        out[key] = value
    return out


def build_rewrite(name: str, op: Operation, params: Mapping[str, Param]) -> dict[str, Tensor]:
    """Run rewrite `name` on `op`; checks that it returned tensors and a `"view"`."""
    parts = dict(lookup_rewrite(name)(op, **params))
    if not isinstance(parts.get("view"), Tensor):
        raise ScheduleError(f"compute rewrite `{name}` returned no `view` tensor")
    for key, value in parts.items():
        if not isinstance(value, Tensor):
            raise ScheduleError(f"compute rewrite `{name}` returned a non-tensor `{key}`")
    return parts


__all__ = [
    "Param",
    "RewriteFn",
    "build_rewrite",
    "check_params",
    "is_param",
    "lookup_rewrite",
    "register_rewrite",
]
