"""The dataflow pattern language: patterns, `match`, `rewrite` rules and `partition`.

conv = is_op("nn.conv2d")(wildcard().named("x"), is_constant().named("w"))
found = match(conv, expr)          # Match with .captures["x"], or None
mod = rewrite(Rule(conv, lambda x, w: ...) + other_rule, mod)
grouped = partition(conv.optional(lambda p: is_op("nn.relu")(p)), expr,
                    {"Composite": "conv_relu"})
"""

from .matcher import Match, Matcher, match
from .partition import partition
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
    capture,
    dominates,
    is_constant,
    is_expr,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    wildcard,
)
from .rewrite import RewriteBudgetError, RewriteRecord, Rule, RuleSet, rewrite, rule

__all__ = [
    "AltPattern",
    "AttrPattern",
    "CallPattern",
    "CapturePattern",
    "ConstantPattern",
    "DFPattern",
    "DTypePattern",
    "DominatorPattern",
    "ExprPattern",
    "Match",
    "Matcher",
    "OpNamePattern",
    "RewriteBudgetError",
    "RewriteRecord",
    "Rule",
    "RuleSet",
    "ShapePattern",
    "TupleGetItemPattern",
    "TuplePattern",
    "TypePattern",
    "VarPattern",
    "WildcardPattern",
    "capture",
    "dominates",
    "is_constant",
    "is_expr",
    "is_op",
    "is_tuple",
    "is_tuple_get_item",
    "is_var",
    "match",
    "partition",
    "rewrite",
    "rule",
    "wildcard",
]
