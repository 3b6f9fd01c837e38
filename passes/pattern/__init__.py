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

A pattern prints as the Python that builds it (`show`), which
`relay.pattern_text.parse_pattern` reads back; `explain` (or `conv.explain(expr)`) says
where and why a match fails, and `explain_report(pattern, module)` does it at every node.
"""

from .explain import (
    ExplainingMatcher,
    Explanation,
    Failure,
    explain,
    explain_all,
    explain_report,
)
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
    RuleMiss,
    apply_rules,
    rewrite,
)
from .rules import CaptureTypes, Rule, RuleSet, RuleSignatureError, rule
from .show import expr_summary, pattern_text

__all__ = [
    "AltPattern",
    "AttrPattern",
    "CallPattern",
    "CapturePattern",
    "CaptureTypes",
    "ConstantPattern",
    "DFPattern",
    "DTypePattern",
    "DominatorPattern",
    "ExplainingMatcher",
    "Explanation",
    "ExprPattern",
    "Failure",
    "Match",
    "Matcher",
    "OpNamePattern",
    "RewriteBudgetError",
    "RewriteContext",
    "RewriteRecord",
    "Rule",
    "RuleMiss",
    "RuleSet",
    "RuleSignatureError",
    "ShapePattern",
    "TupleGetItemPattern",
    "TuplePattern",
    "TypePattern",
    "VarPattern",
    "WildcardPattern",
    "apply_rules",
    "capture",
    "dominates",
    "explain",
    "explain_all",
    "explain_report",
    "expr_summary",
    "is_constant",
    "is_expr",
    "is_op",
    "is_tuple",
    "is_tuple_get_item",
    "is_var",
    "match",
    "partition",
    "pattern_text",
    "rewrite",
    "rule",
    "wildcard",
]
