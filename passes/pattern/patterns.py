"""Dataflow patterns: the values that `match`, `rewrite` and `partition` look for.

The surface is Relay's: `is_op("nn.conv2d")(wildcard(), is_constant())`, `p1 | p2`,
`p.optional(f)`, `p.has_attr(...)`, `p.has_type(t)`, `p.has_dtype(d)`, `p.has_shape(s)`,
`dominates(parent, path, child)`, plus named captures `p.named("x")`.

Patterns are compared by identity: one pattern object used twice in a pattern must match
the same expression both times (`x = wildcard(); is_op("add")(x, x)`). A pattern prints
as the Python that builds it (`show.pattern_text`); `p.explain(expr)` says why it does
not match.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from ...lang.expr import Expr
from ...lang.types import Type

if TYPE_CHECKING:
    from ...typecheck import ModuleTypes
    from .explain import Explanation


class DFPattern:
    """Base of dataflow patterns; builds compound patterns with methods and operators."""

    __slots__ = ()

    def __call__(self, *args: DFPattern) -> CallPattern:
        """A call of whatever this pattern matches, with arguments matching `args`."""
        return CallPattern(self, tuple(args))

    def __or__(self, other: DFPattern) -> AltPattern:
        return AltPattern(self, other)

    def optional(self, option: Callable[[DFPattern], DFPattern]) -> AltPattern:
        """This pattern, or `option(this pattern)` (e.g. an optional trailing relu)."""
        return AltPattern(option(self), self)

    def has_attr(self, attrs: Mapping[str, object]) -> AttrPattern:
        """This pattern, where the call's (or function's) attributes have these values."""
        return AttrPattern(self, dict(attrs))

    def has_type(self, ty: Type) -> TypePattern:
        """This pattern, where the expression's inferred type is structurally `ty`."""
        return TypePattern(self, ty)

    def has_dtype(self, dtype: str) -> DTypePattern:
        """This pattern, where the expression is a tensor of `dtype`."""
        return DTypePattern(self, dtype)

    def has_shape(self, shape: Sequence[int]) -> ShapePattern:
        """This pattern, where the expression is a tensor of static `shape`."""
        return ShapePattern(self, tuple(int(d) for d in shape))

    def named(self, name: str) -> CapturePattern:
        """This pattern, capturing the matched expression as `name`."""
        return CapturePattern(self, name)

    def explain(self, expr: Expr, types: ModuleTypes | None = None) -> Explanation:
        """Whether this pattern matches `expr` and, if not, where and why it fails
        (`explain.explain`)."""
        from .explain import explain

        return explain(self, expr, types)

    def __repr__(self) -> str:
        from .show import pattern_text

        return pattern_text(self)


class WildcardPattern(DFPattern):
    """Matches any expression."""

    __slots__ = ()


class VarPattern(DFPattern):
    """Matches a variable, optionally only one whose name hint is `name`."""

    __slots__ = ("name",)

    def __init__(self, name: str | None = None) -> None:
        self.name = name


class ConstantPattern(DFPattern):
    """Matches any tensor constant."""

    __slots__ = ()


class ExprPattern(DFPattern):
    """Matches exactly the expression `expr` (by identity, or an operator by name)."""

    __slots__ = ("expr",)

    def __init__(self, expr: Expr) -> None:
        self.expr = expr


class OpNamePattern(DFPattern):
    """Matches the operator called `name` (built by `is_op`)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class CallPattern(DFPattern):
    """Matches a call whose callee matches `op` and whose arguments match `args`."""

    __slots__ = ("args", "op")

    def __init__(self, op: DFPattern, args: tuple[DFPattern, ...]) -> None:
        self.op = op
        self.args = args


class TuplePattern(DFPattern):
    """Matches a tuple whose fields match `fields`."""

    __slots__ = ("fields",)

    def __init__(self, fields: tuple[DFPattern, ...]) -> None:
        self.fields = fields


class TupleGetItemPattern(DFPattern):
    """Matches a projection `t.i` of a tuple matching `tuple_value` (any `i` if None)."""

    __slots__ = ("index", "tuple_value")

    def __init__(self, tuple_value: DFPattern, index: int | None) -> None:
        self.tuple_value = tuple_value
        self.index = index


class AltPattern(DFPattern):
    """Matches what `left` matches, else what `right` matches."""

    __slots__ = ("left", "right")

    def __init__(self, left: DFPattern, right: DFPattern) -> None:
        self.left = left
        self.right = right


class AttrPattern(DFPattern):
    """`pattern`, with attribute constraints on the matched call or function."""

    __slots__ = ("attrs", "pattern")

    def __init__(self, pattern: DFPattern, attrs: dict[str, object]) -> None:
        self.pattern = pattern
        self.attrs = attrs


class TypePattern(DFPattern):
    """`pattern`, with the matched expression's type structurally equal to `type`."""

    __slots__ = ("pattern", "type")

    def __init__(self, pattern: DFPattern, ty: Type) -> None:
        self.pattern = pattern
        self.type = ty


class DTypePattern(DFPattern):
    """`pattern`, with the matched expression a tensor of `dtype`."""

    __slots__ = ("dtype", "pattern")

    def __init__(self, pattern: DFPattern, dtype: str) -> None:
        self.pattern = pattern
        self.dtype = dtype


class ShapePattern(DFPattern):
    """`pattern`, with the matched expression a tensor of static `shape`."""

    __slots__ = ("pattern", "shape")

    def __init__(self, pattern: DFPattern, shape: tuple[int, ...]) -> None:
        self.pattern = pattern
        self.shape = shape


class CapturePattern(DFPattern):
    """`pattern`, whose match is captured under `name` (passed to rewrite callbacks)."""

    __slots__ = ("name", "pattern")

    def __init__(self, pattern: DFPattern, name: str) -> None:
        self.pattern = pattern
        self.name = name


class DominatorPattern(DFPattern):
    """TVM's dominator pattern: matches a `child` node all of whose inputs lead, through
    nodes matching `path` only, to one node matching `parent`, which the path nodes do not
    escape (every consumer of a path node is in the region)."""

    __slots__ = ("child", "parent", "path")

    def __init__(self, parent: DFPattern, path: DFPattern, child: DFPattern) -> None:
        self.parent = parent
        self.path = path
        self.child = child


def wildcard() -> WildcardPattern:
    """A pattern matching any expression."""
    return WildcardPattern()


def is_var(name: str | None = None) -> VarPattern:
    """A pattern matching a variable (named `name`, if given)."""
    return VarPattern(name)


def is_constant() -> ConstantPattern:
    """A pattern matching a tensor constant."""
    return ConstantPattern()


def is_expr(expr: Expr) -> ExprPattern:
    """A pattern matching exactly `expr`."""
    return ExprPattern(expr)


def is_op(name: str) -> OpNamePattern:
    """A pattern matching the operator `name`; call it to match calls: `is_op("add")(a, b)`."""
    return OpNamePattern(name)


def is_tuple(fields: Sequence[DFPattern]) -> TuplePattern:
    """A pattern matching a tuple whose fields match `fields`."""
    return TuplePattern(tuple(fields))


def is_tuple_get_item(tuple_value: DFPattern, index: int | None = None) -> TupleGetItemPattern:
    """A pattern matching `t.index` (any index if None) with `t` matching `tuple_value`."""
    return TupleGetItemPattern(tuple_value, index)


def dominates(parent: DFPattern, path: DFPattern, child: DFPattern) -> DominatorPattern:
    """TVM's dominator pattern (a diamond from `parent` to `child` through `path` nodes)."""
    return DominatorPattern(parent, path, child)


def capture(name: str, pattern: DFPattern | None = None) -> CapturePattern:
    """`pattern` (a wildcard by default) captured as `name`."""
    return CapturePattern(pattern if pattern is not None else WildcardPattern(), name)
