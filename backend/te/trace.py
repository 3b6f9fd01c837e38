"""Schedule traces: the primitives applied to a schedule, as data.

Each primitive appends a `ScheduleStep` to `schedule.trace`, naming stages and loops by their
stable names. A trace prints one step per line and parses back:

    split("C", "i", factor=4)
    reorder("C", "i.outer", "k", "i.inner")
    compute_at("B", "C", "i.outer")
    cache_read("A", "local", ["C"])
    tensorize("C", "n.inner", "avx2_i16")
    replace_compute("dense", "dense.gemm", nb=16)
    make_input("w_packed", "w_packed_folded")

It also serializes to JSON (`{"version": 1, "steps": [{"primitive": ..., "args": [...],
"kwargs": {...}}]}`), and `replay(trace, schedule)` applies it to a fresh schedule of the same
computation: what the tuner stores in its logs and learns from. `replace_compute` names a
registered compute rewrite (`te.rewrite`) and its parameters (booleans, integers, strings or
lists of them), so that a schedule which replaces a stage's computation (the packed product
of dense, conv2d's channel-blocked forms, ...) replays too.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from attrs import field, frozen

from .errors import ScheduleError
from .rewrite import Param, is_param

if TYPE_CHECKING:
    from .schedule import Schedule

Arg = str | int | tuple[str, ...]

# primitive -> (kinds of the positional arguments, allowed keyword arguments: integers; None
# for any keyword with a rewrite parameter). A kind is "name" (a string), "names" (a list of
# strings), or "*name" (any number of strings, at least one, last position only).
_SIGNATURES: dict[str, tuple[tuple[str, ...], frozenset[str] | None]] = {
    "split": (("name", "name"), frozenset({"factor", "nparts"})),
    "fuse": (("name", "*name"), frozenset()),
    "reorder": (("name", "*name"), frozenset()),
    "vectorize": (("name", "name"), frozenset()),
    "unroll": (("name", "name"), frozenset()),
    "parallel": (("name", "name"), frozenset()),
    "pragma": (("name", "name", "name"), frozenset()),
    "compute_at": (("name", "name", "name"), frozenset()),
    "compute_inline": (("name",), frozenset()),
    "compute_root": (("name",), frozenset()),
    "cache_read": (("name", "name", "names"), frozenset({"output"})),
    "cache_write": (("name", "name"), frozenset({"output"})),
    "tensorize": (("name", "name", "name"), frozenset()),
    "replace_compute": (("name", "name"), None),
    "make_input": (("name", "name"), frozenset()),
}

VERSION = 1


def _check_step(primitive: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    sig = _SIGNATURES.get(primitive)
    if sig is None:
        raise ScheduleError(f"unknown schedule primitive `{primitive}`")
    kinds, allowed = sig
    variadic = kinds[-1] == "*name"
    fixed = kinds[:-1] if variadic else kinds
    if len(args) < len(fixed) + (1 if variadic else 0) or (
        not variadic and len(args) != len(fixed)
    ):
        raise ScheduleError(f"{primitive}: wrong number of arguments ({len(args)})")
    for pos, arg in enumerate(args):
        kind = fixed[pos] if pos < len(fixed) else "name"
        ok = (
            isinstance(arg, tuple) and all(isinstance(a, str) for a in arg)
            if kind == "names"
            else isinstance(arg, str)
        )
        if not ok:
            raise ScheduleError(f"{primitive}: argument {pos + 1} must be a {kind}, got {arg!r}")
    if allowed is None:
        for key, value in kwargs.items():
            if not is_param(value):
                raise ScheduleError(
                    f"{primitive}: `{key}` must be a boolean, an integer, a string or a list"
                    f" of them, got {value!r}"
                )
        return
    for key, value in kwargs.items():
        if key not in allowed:
            raise ScheduleError(f"{primitive}: unknown keyword argument `{key}`")
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScheduleError(f"{primitive}: `{key}` must be an integer, got {value!r}")
    if primitive == "split" and len(kwargs) != 1:
        raise ScheduleError("split: give exactly one of `factor` and `nparts`")


def _freeze(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _show_param(value: Param) -> str:
    """A keyword value as a Python literal (`True`, `16`, `"avx2"`, `[8, 8]`)."""
    if isinstance(value, tuple):
        return "[" + ", ".join(_show_param(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


@frozen
class ScheduleStep:
    """One primitive: its name, positional arguments (the stage's name first) and keyword
    arguments (sorted by key). Compared by value."""

    primitive: str
    args: tuple[Arg, ...]
    kwargs: tuple[tuple[str, Param], ...] = field(factory=tuple)

    @staticmethod
    def make(primitive: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> ScheduleStep:
        """A checked step (lists become tuples)."""
        frozen_args = tuple(_freeze(a) for a in args)
        frozen_kwargs = {k: _freeze(v) for k, v in kwargs.items()}
        _check_step(primitive, frozen_args, frozen_kwargs)
        return ScheduleStep(primitive, frozen_args, tuple(sorted(frozen_kwargs.items())))

    @property
    def stage(self) -> str:
        """The name of the stage the primitive applies to."""
        return self.args[0]  # type: ignore[return-value]

    def to_text(self) -> str:
        """`primitive("stage", "iv", ..., key=value)`."""

        def show(a: Arg) -> str:
            if isinstance(a, tuple):
                return "[" + ", ".join(json.dumps(x) for x in a) + "]"
            return json.dumps(a)

        parts = [show(a) for a in self.args] + [f"{k}={_show_param(v)}" for k, v in self.kwargs]
        return f"{self.primitive}({', '.join(parts)})"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return {
            "primitive": self.primitive,
            "args": [list(a) if isinstance(a, tuple) else a for a in self.args],
            "kwargs": {k: list(v) if isinstance(v, tuple) else v for k, v in self.kwargs},
        }

    @staticmethod
    def from_json(data: Any) -> ScheduleStep:
        """The step of a `to_json` dictionary."""
        if not isinstance(data, dict) or not isinstance(data.get("primitive"), str):
            raise ScheduleError(f"a trace step must be an object with a primitive, got {data!r}")
        args, kwargs = data.get("args", []), data.get("kwargs", {})
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise ScheduleError(f"malformed trace step {data!r}")
        return ScheduleStep.make(data["primitive"], args, kwargs)

    def __str__(self) -> str:
        return self.to_text()


@frozen
class Trace:
    """A sequence of schedule steps. `str(trace)` prints one per line; `Trace.parse` reads
    that text back; `to_json`/`from_json` serialize."""

    steps: tuple[ScheduleStep, ...] = field(factory=tuple)

    def __iter__(self) -> Iterator[ScheduleStep]:
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    def to_text(self) -> str:
        """One step per line."""
        return "\n".join(s.to_text() for s in self.steps)

    def __str__(self) -> str:
        return self.to_text()

    @staticmethod
    def parse(text: str) -> Trace:
        """The trace of `to_text` output (blank lines and `#` comment lines are skipped).
        Only literals are read; nothing is evaluated."""
        steps = []
        for lineno, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            try:
                steps.append(_parse_step(line))
            except ScheduleError as err:
                raise ScheduleError(f"trace line {lineno}: {err.message}") from None
        return Trace(tuple(steps))

    def to_json(self) -> str:
        """`{"version": 1, "steps": [...]}` as a JSON string."""
        return json.dumps({"version": VERSION, "steps": [s.to_json() for s in self.steps]})

    @staticmethod
    def from_json(text: str | Mapping[str, Any]) -> Trace:
        """The trace of a `to_json` string (or its decoded object)."""
        try:
            data = json.loads(text) if isinstance(text, str) else text
        except json.JSONDecodeError as err:
            raise ScheduleError(f"a trace is not valid JSON: {err}") from None
        if not isinstance(data, Mapping) or data.get("version") != VERSION:
            raise ScheduleError(f"expected a trace object with version {VERSION}")
        steps = data.get("steps")
        if not isinstance(steps, list):
            raise ScheduleError("a trace object needs a list of steps")
        return Trace(tuple(ScheduleStep.from_json(s) for s in steps))


def _literal(node: ast.expr, line: str) -> Any:
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        raise ScheduleError(f"`{ast.get_source_segment(line, node)}` is not a literal") from None
    if isinstance(value, list):
        return tuple(value)
    return value


def _parse_step(line: str) -> ScheduleStep:
    try:
        tree = ast.parse(line, mode="eval")
    except SyntaxError:
        raise ScheduleError(f"cannot read `{line}` as a schedule step") from None
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise ScheduleError(f"`{line}` is not of the form primitive(arguments)")
    args = [_literal(a, line) for a in call.args]
    kwargs: dict[str, Any] = {}
    for kw in call.keywords:
        if kw.arg is None:
            raise ScheduleError(f"`{line}`: ** arguments are not allowed")
        kwargs[kw.arg] = _literal(kw.value, line)
    return ScheduleStep.make(call.func.id, args, kwargs)


def apply_step(step: ScheduleStep, schedule: Schedule) -> None:
    """Apply one step to `schedule` (stages and loops looked up by name)."""
    _check_step(step.primitive, step.args, dict(step.kwargs))
    stage = schedule[step.stage]
    p, rest, kw = step.primitive, step.args[1:], dict(step.kwargs)
    if p == "split":
        stage.split(stage.iv(rest[0]), **kw)  # type: ignore[arg-type]
    elif p == "fuse":
        stage.fuse(*(stage.iv(n) for n in rest))  # type: ignore[arg-type]
    elif p == "reorder":
        stage.reorder(*(stage.iv(n) for n in rest))  # type: ignore[arg-type]
    elif p in ("vectorize", "unroll", "parallel"):
        getattr(stage, p)(stage.iv(rest[0]))  # type: ignore[arg-type]
    elif p == "pragma":
        stage.pragma(stage.iv(rest[0]), rest[1])  # type: ignore[arg-type]
    elif p == "compute_at":
        target = schedule[rest[0]]  # type: ignore[index]
        stage.compute_at(target, target.iv(rest[1]))  # type: ignore[arg-type]
    elif p == "compute_inline":
        stage.compute_inline()
    elif p == "compute_root":
        stage.compute_root()
    elif p == "cache_read":
        tensor = stage.op.output(kw.get("output", 0))  # type: ignore[arg-type]
        readers = [schedule[r] for r in rest[1]]  # type: ignore[union-attr]
        schedule.cache_read(tensor, rest[0], readers)  # type: ignore[arg-type]
    elif p == "tensorize":
        stage.tensorize(stage.iv(rest[0]), rest[1])  # type: ignore[arg-type]
    elif p == "cache_write":
        schedule.cache_write(stage.op.output(kw.get("output", 0)), rest[0])  # type: ignore[arg-type]
    elif p == "replace_compute":
        schedule.replace_compute(stage, rest[0], **kw)  # type: ignore[arg-type]
    elif p == "make_input":
        schedule.make_input(stage, rest[0])  # type: ignore[arg-type]


def replay(trace: Trace | str, schedule: Schedule) -> Schedule:
    """Apply every step of `trace` (a `Trace` or its text) to `schedule`, a fresh schedule of
    the same computation; returns `schedule`."""
    if isinstance(trace, str):
        trace = Trace.parse(trace)
    for index, step in enumerate(trace, 1):
        try:
            apply_step(step, schedule)
        except ScheduleError as err:
            raise ScheduleError(f"replaying step {index} `{step}`: {err.message}") from None
    return schedule


__all__ = ["VERSION", "ScheduleStep", "Trace", "apply_step", "replay"]
