"""Why a pattern does not match: the path to the first failure, what was expected and
what was found.

    >>> print(explain(is_op("multiply")(wildcard(), is_constant()), expr))
    no match at multiply(%x, %y): arg 1: expected a constant, found %y: Tensor[(2, 3), float32]

`ExplainingMatcher` is the matcher itself (same rules, same backtracking) with a record
of each failure's reason, so an explanation never disagrees with `match`. Paths are
steps from the pattern's root: `arg i` (0-based, as `args[i]`), `callee`, `field i`,
`tuple` (the value a projection reads); a failed alternative lists the reason of each
side. The driver uses it to say why a rule did not fire (`apply_rules(misses=...)`),
and only then: plain matching pays one no-op call per failure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from attrs import define, field, frozen

from ...lang.expr import Call, Expr, Function, Tuple
from ...lang.module import IRModule
from ...lang.op import Op
from ...lang.printer import attr_value_text
from ...lang.traversal import post_order
from ...lang.types import Type
from ...typecheck import ModuleTypes, infer_expr, infer_module
from ...typecheck.show import plural, shape_text, type_text
from .matcher import MISSING, Match, Matcher, consumers, root_classes, root_op_names
from .patterns import (
    AttrPattern,
    CallPattern,
    CapturePattern,
    DFPattern,
    DTypePattern,
    ExprPattern,
    OpNamePattern,
    ShapePattern,
    TupleGetItemPattern,
    TuplePattern,
    TypePattern,
    VarPattern,
)
from .show import expr_head, expr_summary, pattern_text, value_text

_T = TypeVar("_T")

REASONS = {
    "bound": "a pattern used twice matched another node the first time",
    "var": "a variable was expected",
    "var_name": "a variable of another name was expected",
    "constant": "a constant was expected",
    "expr": "exactly some other expression was expected",
    "op": "another operator was expected",
    "call": "a call was expected",
    "arity": "a call with another number of arguments was expected",
    "tuple": "a tuple was expected",
    "tuple_arity": "a tuple with another number of fields was expected",
    "projection": "a tuple projection was expected",
    "index": "a projection of another index was expected",
    "capture": "a capture name used twice matched another node the first time",
    "attr": "an attribute is missing or has another value",
    "untyped": "a type constraint was checked on a node of unknown type",
    "type": "the type differs",
    "not_tensor": "a tensor was expected (dtype or shape constraint)",
    "dtype": "the dtype differs",
    "shape": "the shape differs",
    "path": "a dominator's path node does not match the path pattern",
    "path_leaf": "a dominator's path reaches a leaf without passing the parent",
    "no_parent": "no dominator parent was found",
    "unknown_uses": "the consumers of a dominator's path node are not known",
    "escapes": "a dominator's path node is used outside the region",
}
"""Every failure kind the matcher reports, with what it means."""


@frozen
class Failure:
    """Why a (sub)pattern did not match: `path` from the root pattern, a `message` saying
    what was expected and what was found, and `causes` (both sides of an alternative, or
    the failure of a dominator's path pattern)."""

    path: tuple[str, ...]
    message: str
    kind: str
    causes: tuple[Failure, ...] = ()

    def under(self, step: str) -> Failure:
        """This failure seen from one step up."""
        return Failure((step, *self.path), self.message, self.kind, self.causes)

    def lines(self, indent: str = "") -> list[str]:
        """This failure as lines of text, causes indented below it."""
        head = " > ".join(self.path)
        out = [indent + (f"{head}: {self.message}" if head else self.message)]
        for cause in self.causes:
            sub = cause.lines(indent + "    ")
            sub[0] = indent + "  - " + sub[0].lstrip()
            out.extend(sub)
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


@frozen(repr=False)
class Explanation:
    """Whether `pattern` matches `expr`: the `match` if it does, else the `failure`."""

    pattern: DFPattern
    expr: Expr
    match: Match | None
    failure: Failure | None
    summary: str = field(eq=False)
    """`expr` in one line."""

    @property
    def matched(self) -> bool:
        """Whether the pattern matches."""
        return self.match is not None

    def __str__(self) -> str:
        if self.failure is None:
            return f"matched {self.summary}"
        lines = self.failure.lines("  ")
        if len(lines) == 1:
            return f"no match at {self.summary}: {lines[0].strip()}"
        return f"no match at {self.summary}:\n" + "\n".join(lines)

    def __repr__(self) -> str:
        return f"Explanation({str(self)!r})"


@define
class _Frame:
    pattern: DFPattern
    expr: Expr
    step: str
    reason: tuple[str, object] | None = None
    failures: list[Failure] = field(factory=list)


def _step(parent: _Frame | None, p: DFPattern, e: Expr) -> str:
    """The path step from `parent`'s pattern and node to sub-pattern `p` at node `e`."""
    if parent is None:
        return ""
    pp, pe = parent.pattern, parent.expr
    if isinstance(pp, CallPattern) and isinstance(pe, Call):
        if p is pp.op and e is pe.op:
            return "callee"
        for i, (a, x) in enumerate(zip(pp.args, pe.args)):
            if a is p and x is e:
                return f"arg {i}"
    if isinstance(pp, TuplePattern) and isinstance(pe, Tuple):
        for i, (a, x) in enumerate(zip(pp.fields, pe.fields)):
            if a is p and x is e:
                return f"field {i}"
    if isinstance(pp, TupleGetItemPattern) and p is pp.tuple_value:
        return "tuple"
    return ""


class ExplainingMatcher(Matcher):
    """A `Matcher` that records why its last `match` failed (`failure`)."""

    def __init__(
        self,
        types: Callable[[], ModuleTypes | None] | None = None,
        uses: Callable[[], dict[int, list[Expr]] | None] | None = None,
    ) -> None:
        super().__init__(types, uses)
        self._frames: list[_Frame] = []
        self.failure: Failure | None = None

    def explain(self, pattern: DFPattern, expr: Expr) -> Explanation:
        """Whether `pattern` matches `expr`, and why not."""
        self._frames, self.failure = [], None
        found = self.match(pattern, expr)
        failure = None if found is not None else self.failure
        if found is None and failure is None:  # not expected: every failure has a reason
            failure = Failure((), "did not match", "")
        return Explanation(pattern, expr, found, failure, expr_head(expr))

    def describe(self, e: Expr) -> str:
        """`e` in one line, with its type if the types were computed."""
        return expr_summary(e, self._known_type)

    def _known_type(self, e: Expr) -> Type | None:
        if not self._types_done:  # only failures are described: types are worth it then
            self._types_done = True
            self._types = self._types_fn() if self._types_fn is not None else None
        types = self._types
        return types.type_of(e) if types is not None and e in types else None

    def _fail(self, p: DFPattern, e: Expr, kind: str, detail: object = None) -> bool:
        self._frames[-1].reason = (kind, detail)
        return False

    def _visit(self, p: DFPattern, e: Expr) -> bool:
        parent = self._frames[-1] if self._frames else None
        frame = _Frame(p, e, _step(parent, p, e))
        self._frames.append(frame)
        ok = super()._visit(p, e)
        self._frames.pop()
        if not ok:
            failure = self._frame_failure(frame)
            if parent is not None:
                parent.failures.append(failure)
            else:
                self.failure = failure
        return ok

    def _frame_failure(self, frame: _Frame) -> Failure:
        if frame.reason is not None:
            kind, detail = frame.reason
            causes = tuple(frame.failures[-1:]) if kind == "path" else ()
            failure = Failure((), self._message(frame, kind, detail), kind, causes)
        elif len(frame.failures) == 1:
            failure = frame.failures[0]
        elif frame.failures:
            failure = Failure((), "no alternative matched", "alternatives", tuple(frame.failures))
        else:
            failure = Failure((), f"did not match {self.describe(frame.expr)}", "")
        return failure.under(frame.step) if frame.step else failure

    def _message(self, frame: _Frame, kind: str, detail: object) -> str:
        p, e = frame.pattern, frame.expr
        found = self.describe(e)
        if kind == "bound":
            assert isinstance(detail, Expr)
            return (
                f"expected the node this pattern matched before, {self.describe(detail)}, "
                f"found {found}"
            )
        if kind == "var":
            return f"expected a variable, found {found}"
        if kind == "var_name":
            assert isinstance(p, VarPattern)
            return f"expected variable %{p.name}, found {found}"
        if kind == "constant":
            return f"expected a constant, found {found}"
        if kind == "expr":
            assert isinstance(p, ExprPattern)
            return f"expected exactly {expr_summary(p.expr)}, found {found}"
        if kind == "op":
            assert isinstance(p, OpNamePattern)
            return f"expected operator {p.name}, found {found}"
        if kind == "call":
            return f"expected a call, found {found}"
        if kind == "arity":
            assert isinstance(p, CallPattern) and isinstance(e, Call)
            wanted = plural(len(p.args), "argument")
            return f"expected a call with {wanted}, found {found} with {len(e.args)}"
        if kind == "tuple":
            return f"expected a tuple, found {found}"
        if kind == "tuple_arity":
            assert isinstance(p, TuplePattern) and isinstance(e, Tuple)
            wanted = plural(len(p.fields), "field")
            return f"expected a tuple of {wanted}, found {found} with {len(e.fields)}"
        if kind == "projection":
            return f"expected a tuple projection, found {found}"
        if kind == "index":
            assert isinstance(p, TupleGetItemPattern)
            return f"expected projection .{p.index}, found {found}"
        if kind == "capture":
            assert isinstance(p, CapturePattern) and isinstance(detail, Expr)
            return (
                f'expected "{p.name}" to be the node it captured before, '
                f"{self.describe(detail)}, found {found}"
            )
        if kind == "attr":
            assert isinstance(p, AttrPattern) and isinstance(detail, tuple)
            key, actual = detail
            wanted = f"{key}={_attr_text(p.attrs[key])}"
            if actual is MISSING:
                return f"expected attribute {wanted}, found {found} without {key}"
            return f"expected attribute {wanted}, found {key}={_attr_text(actual)} on {found}"
        if kind == "untyped":
            return f"expected {_constraint(p)}, but the type of {found} is not known"
        if kind in ("type", "not_tensor", "dtype", "shape"):
            assert isinstance(detail, Type)
            typed = f"{expr_head(e)}: {type_text(detail)}"
            if kind == "not_tensor":
                return f"expected a tensor ({_constraint(p)}), found {typed}"
            return f"expected {_constraint(p)}, found {typed}"
        if kind in ("path", "path_leaf", "unknown_uses"):
            assert isinstance(detail, Expr)
            node = self.describe(detail)
            if kind == "path":
                return f"{node}, between the parent and {found}, does not match the path"
            if kind == "path_leaf":
                return f"{node} leads to {found} without passing through a parent match"
            return f"the consumers of {node} are not known"
        if kind == "no_parent":
            return f"no input of {found} leads to a node matching the parent pattern"
        if kind == "escapes":
            assert isinstance(detail, tuple)
            node, user = detail
            return (
                f"{self.describe(node)}, between the parent and {found}, is also used by "
                f"{self.describe(user)}, outside the region"
            )
        return f"did not match {found} ({kind})"


def _attr_text(value: object) -> str:
    """An attribute value as the text format writes it (`[1, 2]`, `"NCHW"`)."""
    try:
        return attr_value_text(value)
    except TypeError:
        return value_text(value)


def _constraint(p: DFPattern) -> str:
    if isinstance(p, TypePattern):
        return f"type {type_text(p.type)}"
    if isinstance(p, DTypePattern):
        return f"dtype {p.dtype}"
    if isinstance(p, ShapePattern):
        return f"shape {shape_text(p.shape)}"
    return "a type"


def explain(pattern: DFPattern, expr: Expr, types: ModuleTypes | None = None) -> Explanation:
    """Whether `pattern` matches `expr` and, if not, the path to the first failure and
    what was expected there versus what was found. Type constraints use `types` (inferred
    from `expr` on demand when None); `str()` of the result reads as a sentence."""

    def get_types() -> ModuleTypes | None:
        return types if types is not None else infer_expr(expr, raise_errors=False)

    return ExplainingMatcher(get_types, lambda: consumers(expr)).explain(pattern, expr)


def can_match_at(pattern: DFPattern, node: Expr) -> bool:
    """Whether `pattern`'s root allows it to match `node` at all (its root operator and
    node class), as the rewrite driver decides which rules to try."""
    classes = root_classes(pattern)
    if classes is not None and type(node) not in classes:
        return False
    names = root_op_names(pattern)
    if names is None:
        return True
    return isinstance(node, Call) and isinstance(node.op, Op) and node.op.name in names


def _constant(value: _T) -> Callable[[], _T]:
    return lambda: value


def explain_all(pattern: DFPattern, program: Expr | IRModule) -> list[tuple[str, Explanation]]:
    """An explanation at every node of `program` (every function of a module) where the
    pattern's root can match, in evaluation order, each with the name of its function
    (`""` for an expression)."""
    out: list[tuple[str, Explanation]] = []
    if isinstance(program, IRModule):
        types = infer_module(program, raise_errors=False)
        roots: list[tuple[str, Expr]] = [(gv.name_hint, fn) for gv, fn in program.functions.items()]
    else:
        types = infer_expr(program, raise_errors=False)
        roots = [("", program)]
    for name, root in roots:
        uses = consumers(root)
        matcher = ExplainingMatcher(_constant(types), _constant(uses))
        for node in post_order(root):
            if isinstance(node, Function | Op) or not can_match_at(pattern, node):
                continue
            out.append((name, matcher.explain(pattern, node)))
    return out


def explain_report(pattern: DFPattern, program: Expr | IRModule) -> str:
    """What `relay opt --explain-pattern PATTERN` prints: the pattern, then for every node
    where its root can match, whether it matches and why not (pattern text is read by
    `relay.pattern_text.parse_pattern`)."""
    found = explain_all(pattern, program)
    lines = [f"pattern: {pattern_text(pattern)}"]
    if not found:
        lines.append("no node can match: no node has the operator or kind the pattern's root needs")
    matched = sum(1 for _, e in found if e.matched)
    lines.append(f"{plural(len(found), 'candidate node')}, {matched} matched")
    for name, explanation in found:
        prefix = f"@{name}: " if name else ""
        lines.append(prefix + str(explanation))
    return "\n".join(lines)
