"""Matching dataflow patterns against expressions.

The matcher recurses over the *pattern* (a handful of nodes), never over the program;
the dominator pattern's walk along the program uses an explicit stack.
"""

from __future__ import annotations

from collections.abc import Callable

from attrs import define, field

from ...lang.adt import Constructor
from ...lang.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    Tuple,
    TupleGetItem,
    Var,
)
from ...lang.op import Op
from ...lang.structural import structural_equal
from ...lang.traversal import children, post_order
from ...lang.types import TensorType, Type
from ...typecheck import ModuleTypes, infer_expr
from .patterns import (
    AltPattern,
    AttrPattern,
    CallPattern,
    CapturePattern,
    ConstantPattern,
    DFPattern,
    DominatorPattern,
    DTypePattern,
    ExprPattern,
    OpNamePattern,
    ShapePattern,
    TupleGetItemPattern,
    TuplePattern,
    TypePattern,
    VarPattern,
    WildcardPattern,
)

# patterns whose matched node is computed inside a match (its region); the nodes matched
# only by other patterns (leaves, or wrappers such as a capture around a leaf) are inputs
_STRUCTURAL = (CallPattern, TuplePattern, TupleGetItemPattern, DominatorPattern)
# nodes that are never inputs: they are global, so a region may refer to them as they are
_GLOBAL = (Op, GlobalVar, Constructor)


@define(frozen=True, eq=False, repr=False)
class Match:
    """A successful match: the matched `expr`, its named `captures`, its `region` (the
    nodes matched by call, tuple, projection and dominator patterns, `expr` included: what
    the match computes) and its `inputs` (every other node the region uses, in order of
    first appearance: the nodes matched by wildcard, variable, constant and expression
    patterns, named or not). Operators, globals and constructors are in neither, so a
    function of the region with the inputs as parameters is closed."""

    expr: Expr
    captures: dict[str, Expr] = field(factory=dict)
    inputs: tuple[Expr, ...] = ()
    region: tuple[Expr, ...] = ()

    def __getitem__(self, name: str) -> Expr:
        return self.captures[name]

    def __repr__(self) -> str:
        from .show import expr_summary

        captures = ", ".join(f"{k}={expr_summary(v)}" for k, v in self.captures.items())
        inputs = ", ".join(expr_summary(e) for e in self.inputs)
        return (
            f"Match({expr_summary(self.expr)}, captures {{{captures}}}, inputs [{inputs}], "
            f"{len(self.region)} region nodes)"
        )


def _inputs_and_region(
    pairs: list[tuple[DFPattern, Expr]],
) -> tuple[tuple[Expr, ...], tuple[Expr, ...]]:
    """The inputs and region of a match from its (pattern, node) pairs, each in order of
    first appearance. Every non-global child of a region node is in the region or an input
    (a dominator's path node may call a closure that no pattern matched), so a function
    made of the region with the inputs as parameters is closed."""
    interior = {id(e) for pat, e in pairs if isinstance(pat, _STRUCTURAL)}
    inputs: list[Expr] = []
    region: list[Expr] = []
    seen: set[int] = set()
    for _, e in pairs:
        if id(e) in seen or isinstance(e, _GLOBAL):
            continue
        seen.add(id(e))
        (region if id(e) in interior else inputs).append(e)
    for node in region:
        for child in children(node):
            if id(child) not in seen and not isinstance(child, _GLOBAL):
                seen.add(id(child))
                inputs.append(child)
    return tuple(inputs), tuple(region)


def dataflow_inputs(e: Expr) -> tuple[Expr, ...]:
    """The dataflow inputs of `e`: call arguments, tuple fields, the projected tuple."""
    if isinstance(e, Call):
        return e.args
    if isinstance(e, Tuple):
        return e.fields
    if isinstance(e, TupleGetItem):
        return (e.tuple_value,)
    return ()


def consumers(root: Expr) -> dict[int, list[Expr]]:
    """For each node reachable from `root` (by id), the nodes that use it as an input."""
    uses: dict[int, list[Expr]] = {}
    for node in post_order(root):
        for child in dataflow_inputs(node):
            uses.setdefault(id(child), []).append(node)
    return uses


def root_classes(pattern: DFPattern) -> frozenset[type] | None:
    """The node classes `pattern` can match at its root (None: any), to skip hopeless
    match attempts quickly."""
    if isinstance(pattern, CallPattern):
        return frozenset({Call})
    if isinstance(pattern, TuplePattern):
        return frozenset({Tuple})
    if isinstance(pattern, TupleGetItemPattern):
        return frozenset({TupleGetItem})
    if isinstance(pattern, ConstantPattern):
        return frozenset({Constant})
    if isinstance(pattern, VarPattern):
        return frozenset({Var})
    if isinstance(pattern, OpNamePattern):
        return frozenset({Op})
    if isinstance(pattern, AltPattern):
        left, right = root_classes(pattern.left), root_classes(pattern.right)
        return None if left is None or right is None else left | right
    if isinstance(pattern, DominatorPattern):
        return root_classes(pattern.child)
    if isinstance(pattern, AttrPattern | TypePattern | DTypePattern | ShapePattern):
        return root_classes(pattern.pattern)
    if isinstance(pattern, CapturePattern):
        return root_classes(pattern.pattern)
    return None


def _op_names(pattern: DFPattern) -> frozenset[str] | None:
    """The operator names `pattern` can match (None: it may match anything else too)."""
    if isinstance(pattern, OpNamePattern):
        return frozenset({pattern.name})
    if isinstance(pattern, AltPattern):
        left, right = _op_names(pattern.left), _op_names(pattern.right)
        return None if left is None or right is None else left | right
    if isinstance(pattern, AttrPattern | CapturePattern):
        return _op_names(pattern.pattern)
    return None


def root_op_names(pattern: DFPattern) -> frozenset[str] | None:
    """The names of the operators whose calls `pattern` can match at its root, or None when
    it may match other nodes too (drivers use it to try only the rules that can fire)."""
    if isinstance(pattern, CallPattern):
        return _op_names(pattern.op)
    if isinstance(pattern, AltPattern):
        left, right = root_op_names(pattern.left), root_op_names(pattern.right)
        return None if left is None or right is None else left | right
    if isinstance(pattern, DominatorPattern):
        return root_op_names(pattern.child)
    if isinstance(pattern, AttrPattern | TypePattern | DTypePattern | ShapePattern):
        return root_op_names(pattern.pattern)
    if isinstance(pattern, CapturePattern):
        return root_op_names(pattern.pattern)
    return None


def _freeze(value: object) -> object:
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


class Matcher:
    """Matches patterns at nodes of one graph.

    `types` returns the types of the graph's nodes (called at most once, when a type
    constraint is first checked); `uses` returns its consumer map (for dominator patterns).
    A node whose type or consumers are unknown (a node built after they were computed)
    does not match, and `unknown` is set so that a driver can try again later.
    """

    def __init__(
        self,
        types: Callable[[], ModuleTypes | None] | None = None,
        uses: Callable[[], dict[int, list[Expr]] | None] | None = None,
    ) -> None:
        self._types_fn = types
        self._uses_fn = uses
        self._types: ModuleTypes | None = None
        self._types_done = False
        self._uses: dict[int, list[Expr]] | None = None
        self._uses_done = False
        self.unknown = False
        self._bound: dict[int, Expr] = {}
        self._captures: dict[str, Expr] = {}
        self._pairs: list[tuple[DFPattern, Expr]] = []
        # keys added to _bound (int) and _captures (str), undone on backtracking
        self._trail: list[int | str] = []

    # ---------------------------------------------------------------- public
    def match(self, pattern: DFPattern, expr: Expr) -> Match | None:
        """The match of `pattern` at `expr`, or None."""
        self._bound, self._captures, self._pairs, self._trail = {}, {}, [], []
        if not self._visit(pattern, expr):
            return None
        inputs, region = _inputs_and_region(self._pairs)
        return Match(expr, dict(self._captures), inputs, region)

    # ---------------------------------------------------------------- lazies
    def _type_of(self, e: Expr) -> Type | None:
        if not self._types_done:
            self._types_done = True
            self._types = self._types_fn() if self._types_fn is not None else None
        if self._types is None or e not in self._types:
            self.unknown = True
            return None
        return self._types.type_of(e)

    def _consumers(self) -> dict[int, list[Expr]] | None:
        if not self._uses_done:
            self._uses_done = True
            self._uses = self._uses_fn() if self._uses_fn is not None else None
        return self._uses

    # ---------------------------------------------------------------- state
    def _save(self) -> tuple[int, int]:
        return len(self._trail), len(self._pairs)

    def _restore(self, state: tuple[int, int]) -> None:
        trail = self._trail
        while len(trail) > state[0]:
            key = trail.pop()
            if isinstance(key, str):
                del self._captures[key]
            else:
                del self._bound[key]
        del self._pairs[state[1] :]

    def _fail(self, p: DFPattern, e: Expr, kind: str, detail: object = None) -> bool:
        """`p` does not match `e` for the reason `kind` (see `explain.REASONS`); returns
        False. A hook for `explain.ExplainingMatcher`, which records the reason."""
        return False

    def _visit(self, p: DFPattern, e: Expr) -> bool:
        previous = self._bound.get(id(p))
        if previous is not None:
            return previous is e or self._fail(p, e, "bound", previous)
        state = self._save()
        if self._visit_new(p, e):
            self._bound[id(p)] = e
            self._trail.append(id(p))
            self._pairs.append((p, e))
            return True
        self._restore(state)
        return False

    def _visit_new(self, p: DFPattern, e: Expr) -> bool:
        if isinstance(p, WildcardPattern):
            return True
        if isinstance(p, VarPattern):
            if not isinstance(e, Var):
                return self._fail(p, e, "var")
            return p.name is None or e.name_hint == p.name or self._fail(p, e, "var_name")
        if isinstance(p, ConstantPattern):
            return isinstance(e, Constant) or self._fail(p, e, "constant")
        if isinstance(p, ExprPattern):
            if e is p.expr:
                return True
            if not isinstance(p.expr, Var) and structural_equal(e, p.expr):
                return True
            return self._fail(p, e, "expr")
        if isinstance(p, OpNamePattern):
            return (isinstance(e, Op) and e.name == p.name) or self._fail(p, e, "op")
        if isinstance(p, CallPattern):
            if not isinstance(e, Call):
                return self._fail(p, e, "call")
            if len(e.args) != len(p.args):
                return self._fail(p, e, "arity")
            if not self._visit(p.op, e.op):
                return False
            return all(self._visit(a, x) for a, x in zip(p.args, e.args))
        if isinstance(p, TuplePattern):
            if not isinstance(e, Tuple):
                return self._fail(p, e, "tuple")
            if len(e.fields) != len(p.fields):
                return self._fail(p, e, "tuple_arity")
            return all(self._visit(a, x) for a, x in zip(p.fields, e.fields))
        if isinstance(p, TupleGetItemPattern):
            if not isinstance(e, TupleGetItem):
                return self._fail(p, e, "projection")
            if p.index is not None and e.index != p.index:
                return self._fail(p, e, "index")
            return self._visit(p.tuple_value, e.tuple_value)
        if isinstance(p, AltPattern):
            state = self._save()
            if self._visit(p.left, e):
                return True
            self._restore(state)
            return self._visit(p.right, e)
        if isinstance(p, CapturePattern):
            if not self._visit(p.pattern, e):
                return False
            old = self._captures.get(p.name)
            if old is not None:
                return old is e or self._fail(p, e, "capture", old)
            self._captures[p.name] = e
            self._trail.append(p.name)
            return True
        if isinstance(p, AttrPattern):
            if not self._visit(p.pattern, e):
                return False
            wrong = _wrong_attr(e, p.attrs)
            return wrong is None or self._fail(p, e, "attr", wrong)
        if isinstance(p, TypePattern | DTypePattern | ShapePattern):
            if not self._visit(p.pattern, e):
                return False
            ty = self._type_of(e)
            if ty is None:
                return self._fail(p, e, "untyped")
            if isinstance(p, TypePattern):
                return structural_equal(ty, p.type) or self._fail(p, e, "type", ty)
            if not isinstance(ty, TensorType):
                return self._fail(p, e, "not_tensor", ty)
            if isinstance(p, DTypePattern):
                return ty.dtype == p.dtype or self._fail(p, e, "dtype", ty)
            return ty.shape == p.shape or self._fail(p, e, "shape", ty)
        if isinstance(p, DominatorPattern):
            return self._dominator(p, e)
        raise TypeError(f"unknown pattern class {type(p).__name__}")

    def _probe(self, p: DFPattern, e: Expr) -> bool:
        """Whether `p` matches `e`, leaving no bindings or captures behind."""
        state = self._save()
        ok = self._visit(p, e)
        self._restore(state)
        return ok

    def _dominator(self, p: DominatorPattern, e: Expr) -> bool:
        if not self._visit(p.child, e):
            return False
        parent: Expr | None = None
        path: list[Expr] = []
        seen: set[int] = set()
        stack = list(dataflow_inputs(e))
        while stack:
            x = stack.pop()
            if id(x) in seen or x is parent:
                continue
            seen.add(id(x))
            if parent is None and self._visit(p.parent, x):
                parent = x
                continue
            if not self._probe(p.path, x):
                return self._fail(p, e, "path", x)
            if not dataflow_inputs(x):
                return self._fail(p, e, "path_leaf", x)
            path.append(x)
            stack.extend(dataflow_inputs(x))
        if parent is None:
            return self._fail(p, e, "no_parent")
        uses = self._consumers()
        if uses is None:
            return True
        region = {id(n) for n in path} | {id(e)}
        for node in path:
            users = uses.get(id(node))
            if users is None:
                self.unknown = True
                return self._fail(p, e, "unknown_uses", node)
            escaping = [u for u in users if id(u) not in region]
            if escaping:
                return self._fail(p, e, "escapes", (node, escaping[0]))
        for node in path:
            self._pairs.append((p, node))  # path nodes belong to the region
        return True


MISSING = object()
"""The value `attr_of` returns for an attribute a node does not have."""


def attr_of(e: Expr, key: str) -> object:
    """The attribute `key` of a call, function or operator (`MISSING` if it has none)."""
    if isinstance(e, Call):
        if e.attrs is None:
            return MISSING
        return getattr(e.attrs, key, MISSING)
    if isinstance(e, Function):
        return e.attrs.get(key) if key in e.attrs else MISSING
    if isinstance(e, Op):
        return int(e.pattern) if key == "TOpPattern" else getattr(e, key, None)
    return MISSING


def _wrong_attr(e: Expr, wanted: dict[str, object]) -> tuple[str, object] | None:
    """The first attribute of `wanted` that `e` lacks or has with another value, with the
    value `e` has (`MISSING` if none); None when all match."""
    for key, value in wanted.items():
        actual = attr_of(e, key)
        if actual is MISSING or _freeze(actual) != _freeze(value):
            return key, actual
    return None


def match(pattern: DFPattern, expr: Expr, types: ModuleTypes | None = None) -> Match | None:
    """Match `pattern` at `expr`; type constraints use `types` (inferred from `expr` on
    demand when None). Returns the `Match` (captures by name) or None."""

    def get_types() -> ModuleTypes | None:
        return types if types is not None else infer_expr(expr)

    return Matcher(get_types, lambda: consumers(expr)).match(pattern, expr)
