"""`Sequential`, pipeline text (`fold-constant,fuse-ops{max-depth=8},dce`), the standard
pipelines, extra passes at a named point of a pipeline, the bisector, and the built-in
`infer-type` and `identity` passes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
from attrs import field, frozen

from ..lang.diagnostics import Error
from ..lang.gcpause import fewer_collections
from ..lang.module import IRModule
from ..lang.span import SourceFile, Span
from .context import PassContext
from .pass_base import NoOptions, Pass, PassError, get_pass, module_pass


@frozen
class PlannedPass:
    """One entry of a `Sequential`'s plan: the pass, whether it runs, and why."""

    pass_: Pass
    runs: bool
    reason: str


def _flatten(passes: Iterable[Pass | Sequential] | None) -> tuple[Pass, ...]:
    out: list[Pass] = []
    for p in passes or ():
        if isinstance(p, Sequential):
            out.extend(p.gated_passes())
        elif isinstance(p, Pass):
            out.append(p)
        else:
            raise PassError(f"a Sequential holds passes, not {type(p).__name__}")
    return tuple(out)


def _names(items: Iterable[str] | str | None) -> tuple[str, ...]:
    if items is None:
        return ()
    return (items,) if isinstance(items, str) else tuple(items)


@frozen
class Sequential:
    """Passes run in order under a `PassContext`, following TVM's rules:
    `Sequential(passes=None, opt_level=0, required=None, name="sequential")`.

    A pass runs iff it is not disabled and (it is required or `ctx.opt_level >=
    pass.opt_level`); before an enabled pass, the passes named in its `required` run (they
    are looked up in the registry). Nothing is skipped silently: `plan`/`describe` say
    what will run and why, and instruments get `skipped_pass` for every skip.
    `str(seq)` is pipeline text that `parse_pipeline` reads back.

    A `Sequential` inside another is flattened into it. As in TVM, its own `opt_level`
    and `required` matter only there: its passes then run only at that opt level or
    above, after the passes named in its `required` (`gated_passes`).
    """

    passes: tuple[Pass, ...] = field(default=(), converter=_flatten)
    opt_level: int = 0
    required: tuple[str, ...] = field(default=(), converter=_names)
    name: str = "sequential"

    def gated_passes(self) -> tuple[Pass, ...]:
        """This Sequential's passes as they run inside another: its `required` passes
        first, and every pass's opt level raised to at least this one's."""
        passes = (*(get_pass(name) for name in self.required), *self.passes)
        if self.opt_level <= 0:
            return passes
        return tuple(
            p if p.opt_level >= self.opt_level else attrs.evolve(p, opt_level=self.opt_level)
            for p in passes
        )

    def __str__(self) -> str:
        return ",".join(str(p) for p in self.passes)

    def plan(self, ctx: PassContext | None = None) -> list[PlannedPass]:
        """The passes a run under `ctx` considers, in order, required passes included."""
        context = ctx if ctx is not None else PassContext.current()
        planned: list[PlannedPass] = []
        for p in self.passes:
            runs, reason = context.decide(p)
            if runs:
                for name in _requirements(p):
                    planned.append(PlannedPass(get_pass(name), True, f"required by {p.name}"))
            planned.append(PlannedPass(p, runs, reason))
        return planned

    def describe(self, ctx: PassContext | None = None) -> str:
        """One line per planned pass: `run` or `skip`, the pass, and the reason."""
        context = ctx if ctx is not None else PassContext.current()
        lines = [f"pipeline at opt_level={context.opt_level}:"]
        for planned in self.plan(context):
            verb = "run " if planned.runs else "skip"
            lines.append(f"  {verb} {planned.pass_!s:<30} ({planned.reason})")
        return "\n".join(lines)

    def __call__(self, mod: IRModule, ctx: PassContext | None = None) -> IRModule:
        """Run the pipeline on `mod` under `ctx` (default: the current context)."""
        context = ctx if ctx is not None else PassContext.current()
        instruments = context.all_instruments
        with fewer_collections():  # also for the instruments between passes
            for inst in instruments:
                inst.enter_pipeline(mod, context)
            for planned in self.plan(context):
                if planned.runs:
                    mod = context.run_pass(planned.pass_, mod)
                else:
                    context.report_skipped(planned.pass_, planned.reason)
            for inst in instruments:
                inst.exit_pipeline(mod, context)
        return mod


def _requirements(p: Pass) -> list[str]:
    """Names of the passes required (transitively) by `p`, dependencies first."""
    order: list[str] = []
    seen: set[str] = {p.name}
    stack: list[tuple[str, bool]] = [(name, False) for name in reversed(p.required)]
    while stack:
        name, done = stack.pop()
        if done:
            order.append(name)
            continue
        if name in seen:
            continue
        seen.add(name)
        stack.append((name, True))
        stack.extend((r, False) for r in reversed(get_pass(name).required))
    return order


# ------------------------------------------------------------------------ pipeline text

_PIPELINE_SOURCE = "<pipeline>"


def _error(source: SourceFile, start: int, end: int, message: str) -> PassError:
    line, col = source.position(start)
    end_line, end_col = source.position(max(start, end))
    return PassError.at(Span(source, line, col, end_line, end_col), message)  # type: ignore[return-value]


def _options_text(source: SourceFile, start: int, end: int) -> list[tuple[str, str, int]]:
    """`key=value` items of the text between braces (value may be "quoted")."""
    text = source.text
    items: list[tuple[str, str, int]] = []
    i = start
    while i < end:
        j = i
        quoted = False
        while j < end and (quoted or text[j] != ","):
            if text[j] == '"':
                quoted = not quoted
            j += 1
        item = text[i:j]
        if "=" not in item:
            raise _error(source, i, j, f"expected key=value in pass options, got '{item.strip()}'")
        key, value = item.split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        items.append((key.strip(), value, i))
        i = j + 1
    return items


def _closing_brace(text: str, start: int) -> int:
    quoted = False
    for k in range(start, len(text)):
        if text[k] == '"':
            quoted = not quoted
        elif text[k] == "}" and not quoted:
            return k
    return -1


def parse_pipeline(text: str) -> Sequential:
    """The `Sequential` that pipeline text describes: `name` or `name{key=value,...}` items
    separated by commas. Unknown passes and unknown or ill-typed options are `PassError`s
    naming them (with the place in the text)."""
    source = SourceFile(_PIPELINE_SOURCE, text)
    passes: list[Pass] = []
    i, n = 0, len(text)
    while i < n:
        j = i
        while j < n and text[j] not in ",{}":
            j += 1
        name = text[i:j].strip()
        if not name:
            raise _error(source, i, j + 1, "expected a pass name")
        try:
            p = get_pass(name)
        except PassError as err:
            raise _error(source, i, j, err.message) from None
        if j < n and text[j] == "{":
            close = _closing_brace(text, j)
            if close < 0:
                raise _error(source, j, n, f"unclosed '{{' in the options of pass '{name}'")
            values: dict[str, str] = {}
            for key, value, at in _options_text(source, j + 1, close):
                if key in values:
                    raise _error(source, at, at + len(key), f"option '{key}' given twice")
                try:
                    p = p.with_options(**{key: value})
                except PassError as err:
                    raise _error(source, at, at + len(key), err.message) from None
                values[key] = value
            j = close + 1
        if j < n and text[j] == "}":
            raise _error(source, j, j + 1, "unexpected '}'")
        if j < n and text[j] != ",":
            raise _error(source, j, j + 1, f"expected ',' after pass '{name}'")
        passes.append(p)
        i = j + 1
        if j < n and i >= n:
            raise _error(source, j, j + 1, "expected a pass name after ','")
    return Sequential(passes)


# ---------------------------------------------------------------------- standard pipelines

STANDARD_PIPELINES: Mapping[int, str] = {
    0: "simplify-inference,simplify-expr,infer-type,fuse-ops",
    1: (
        "remove-unused-functions,to-graph-normal-form,simplify-inference,simplify-expr,"
        "infer-type,fuse-ops"
    ),
    2: (
        "remove-unused-functions,to-graph-normal-form,simplify-inference,fold-constant,"
        "simplify-expr,fold-constant,infer-type,fuse-ops"
    ),
    3: (
        "remove-unused-functions,to-graph-normal-form,simplify-inference,cse,fold-constant,"
        "fold-scale-axis,simplify-expr,fold-constant,winograd-conv2d,merge-dense,alter-op-layout,"
        "dce,infer-type,fuse-ops"
    ),
}
"""The standard pipeline of each opt level, by planned pass name (after TVM's `relay.build`
order, tvm-facts.md §3.2):

| level | passes |
|---|---|
| 0 | simplify-inference, simplify-expr, infer-type, fuse-ops (singleton groups) |
| 1 | + remove-unused-functions, then to-graph-normal-form, first; fuse-ops really fuses |
| 2 | + fold-constant (after simplify-inference and again after simplify-expr) |
| 3 | + cse, fold-scale-axis, winograd-conv2d (folded weights), merge-dense, alter-op-layout, dce |

`alter-op-layout` runs the remaining NCHW convolutions on `NCHW{b}c` with the target's
block (`relay.build` sets it), packing constant weights there.

`to-graph-normal-form` runs early (where TVM puts its normal-form conversion): a `let`
binding is a fusion boundary and hides a value from the pattern rules, and the example
models are written with `let`. Like TVM's conversion it has opt level 1, so level 0
leaves the lets in place (its fusion makes one group per operator anyway).

Run a level's pipeline under `PassContext(opt_level=level)`."""


def standard_pipeline(opt_level: int) -> Sequential:
    """The standard pipeline for `opt_level` (0-3); `PassError` naming any pass that is
    not registered yet."""
    if opt_level not in STANDARD_PIPELINES:
        raise PassError(f"no standard pipeline for opt level {opt_level} (levels 0-3)")
    return parse_pipeline(STANDARD_PIPELINES[opt_level])


# ------------------------------------------------------------- extra passes at a point

ExtraPasses = Sequence[tuple[str, Any]] | Mapping[str, Any]
"""Extra passes for a pipeline: `(point, passes)` pairs, or a mapping point → passes,
where `passes` is a `Pass`, a `Sequential`, pipeline text, or a list of those."""


def insertion_points(seq: Sequential) -> list[str]:
    """The points of `seq` where extra passes can go: `start`, `end`, and `before:NAME` /
    `after:NAME` for each pass NAME of `seq`."""
    names = list(dict.fromkeys(p.name for p in seq.passes))
    return ["start", "end", *(f"before:{n}" for n in names), *(f"after:{n}" for n in names)]


def _point_index(seq: Sequential, point: str) -> int:
    names = [p.name for p in seq.passes]
    where, _, name = point.partition(":")
    if point == "start":
        return 0
    if point == "end":
        return len(names)
    if where == "before" and name in names:
        return names.index(name)
    if where == "after" and name in names:
        return len(names) - names[::-1].index(name)
    raise PassError(
        f"unknown point '{point}' for extra passes in the pipeline '{seq}'; "
        f"the points are: {', '.join(insertion_points(seq))}"
    )


def _extra_passes(what: Any, point: str) -> list[Pass]:
    items = what if isinstance(what, (list, tuple)) else [what]
    out: list[Pass] = []
    for item in items:
        if isinstance(item, str):
            out.extend(parse_pipeline(item).passes)
        elif isinstance(item, (Pass, Sequential)):
            out.extend(_flatten([item]))
        else:
            raise PassError(
                f"extra passes at '{point}' must be passes, Sequentials or pipeline text, "
                f"not {type(item).__name__}"
            )
    return out


def insert_passes(seq: Sequential, extra: ExtraPasses | None) -> Sequential:
    """`seq` with `extra` passes added at named points: `before:NAME` runs them before the
    first `NAME` of `seq`, `after:NAME` after its last one, `start` / `end` before or after
    everything; passes given for the same point keep their order. An unknown point is a
    `PassError` listing the points. The extra passes follow the opt-level rules like any
    other pass of the pipeline."""
    if not extra:
        return seq
    pairs = list(extra.items()) if isinstance(extra, Mapping) else list(extra)
    slots: dict[int, list[Pass]] = {}
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)):
            raise PassError(
                "extra passes are (point, passes) pairs such as "
                f"('after:fold-constant', my_pass), not {pair!r}"
            )
        point, what = pair
        slots.setdefault(_point_index(seq, point), []).extend(_extra_passes(what, point))
    out: list[Pass] = []
    for index in range(len(seq.passes) + 1):
        out.extend(slots.get(index, ()))
        if index < len(seq.passes):
            out.append(seq.passes[index])
    return attrs.evolve(seq, passes=out)


# ------------------------------------------------------------------------------ bisector


@frozen
class BisectResult:
    """The first pass whose result computes different values, with the evidence."""

    pass_: Pass
    index: int
    before: IRModule
    after: IRModule
    expected: Any
    actual: Any
    error: Error | None = None

    def __repr__(self) -> str:
        # one line: which pass, and how the values went wrong (not the modules or arrays)
        head = f"BisectResult(pass #{self.index} '{self.pass_}'"
        if self.error is not None:
            first = str(self.error.message).splitlines()[0] if self.error.message else ""
            return f"{head}: its result fails to run: {first})"
        return f"{head}: the values differ: {_value_difference(self.expected, self.actual)})"


def _value_difference(expected: Any, actual: Any) -> str:
    """A short account of how two interpreter values differ (the first differing tensor)."""
    stack = [(expected, actual, "")]
    while stack:
        x, y, where = stack.pop()
        at = f" at {where}" if where else ""
        if isinstance(x, tuple) and isinstance(y, tuple) and len(x) == len(y):
            stack.extend(
                (a, b, f"{where}.{i}") for i, (a, b) in reversed(list(enumerate(zip(x, y))))
            )
            continue
        if isinstance(x, np.ndarray) and isinstance(y, np.ndarray):
            if x.shape != y.shape or x.dtype != y.dtype:
                return f"expected {x.dtype}{list(x.shape)}, got {y.dtype}{list(y.shape)}{at}"
            if x.dtype.kind in "fciu" and x.size:
                gap = np.abs(x.astype("float64") - y.astype("float64"))
                if np.any(np.isnan(gap)) or float(np.nanmax(gap)) > 0:
                    return f"max abs difference {float(np.nanmax(gap)):g}{at}"
                continue
            if not np.array_equal(x, y):
                return f"the tensors differ{at}"
            continue
        if x is not y and type(x) is not type(y):
            return f"expected a {type(x).__name__}, got a {type(y).__name__}{at}"
    return "within tolerance elsewhere; see .expected and .actual"


def values_close(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-6) -> bool:
    """Whether two interpreter values agree: float tensors within tolerance (NaN equals
    NaN), other tensors exactly, tuples and ADT values field by field."""
    from ..backend.runtime import ConstructorValue

    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)):
                return False
            if x.dtype != y.dtype or x.shape != y.shape:
                return False
            if x.dtype.kind in "fc":
                if not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
                    return False
            elif not np.array_equal(x, y):
                return False
        elif isinstance(x, tuple):
            if not isinstance(y, tuple) or len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif isinstance(x, ConstructorValue):
            if not isinstance(y, ConstructorValue) or x.constructor.tag != y.constructor.tag:
                return False
            stack.extend(zip(x.fields, y.fields))
        elif x is not y and x != y:
            return False
    return True


def bisect(
    mod: IRModule,
    pipeline: Sequential | str,
    inputs: Mapping[str, Any],
    ctx: PassContext | None = None,
    *,
    rtol: float = 1e-5,
    atol: float = 1e-6,
) -> BisectResult | None:
    """Run `pipeline` pass by pass, evaluating `@main` on `inputs` with the interpreter
    after each; the first pass whose result differs from the original's (or fails to
    evaluate), or None if every pass preserves the values."""
    from ..backend.runtime import interpret

    seq = parse_pipeline(pipeline) if isinstance(pipeline, str) else pipeline
    context = ctx if ctx is not None else PassContext.current()
    expected = interpret(mod, **inputs)
    for index, planned in enumerate(seq.plan(context)):
        if not planned.runs:
            context.report_skipped(planned.pass_, planned.reason)
            continue
        after = context.run_pass(planned.pass_, mod)
        try:
            actual = interpret(after, **inputs)
        except Error as err:
            return BisectResult(planned.pass_, index, mod, after, expected, None, err)
        if not values_close(expected, actual, rtol, atol):
            return BisectResult(planned.pass_, index, mod, after, expected, actual)
        mod = after
    return None


# ----------------------------------------------------------------------- built-in passes


@module_pass(name="infer-type", opt_level=0)
def infer_type_pass(mod: IRModule, ctx: PassContext, options: NoOptions) -> IRModule:
    """Type-check the module (raising `TypeCheckError`) and return it unchanged. Types
    are never stored in nodes: later passes of the pipeline get the same result from
    `ctx.module_types(mod)`, which infers nothing when the context already knows them."""
    ctx.module_types(mod)
    return mod


@module_pass(name="identity", opt_level=0)
def identity_pass(mod: IRModule, ctx: PassContext, options: NoOptions) -> IRModule:
    """Return the module unchanged (for testing the pass manager)."""
    return mod
