"""The dataflow pattern language: patterns, `match`, rewrite rules, the rewrite driver
and `partition`.

conv = is_op("nn.conv2d")(wildcard().named("x"), is_constant().named("w"))
found = match(conv, expr)          # Match with .captures["x"], or None
mod = rewrite(Rule(conv, lambda x, w: ...) + other_rule, mod)
fn = apply_rules(rules, fn, mod, settle=True)   # the driver the passes use

`patterns` builds patterns, `matcher` matches them, `rules` holds `Rule` / `RuleSet`,
`rewrite` is the one rewrite driver (order, settling, fixpoint, budget, trace, types
carried through `retype`), `partition` outlines matches into functions.
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
from .rewrite import (
    RewriteBudgetError,
    RewriteContext,
    RewriteRecord,
    apply_rules,
    rewrite,
)
from .rules import Rule, RuleSet, rule

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
    "RewriteContext",
    "RewriteRecord",
    "Rule",
    "RuleSet",
    "ShapePattern",
    "TupleGetItemPattern",
    "TuplePattern",
    "TypePattern",
    "VarPattern",
    "WildcardPattern",
    "apply_rules",
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
