"""The integer-arithmetic engine shared by TE (bound inference, lowering) and TIR (the
simplifier, loop partitioning, vectorization, flattening).

* `constants`: dtype ranges, constants wrapped to their dtype (`make_const`), reading them
  back (`as_int`, `const_bool`).
* `canonical`: the canonical form of integer expressions, a sum of atoms with constant
  coefficients (`LinearSum`), applied bottom-up by `canonical(e)`; `linear_form`.
* `fold`: folding constructors (`add`, `mul`, `floordiv`, `minimum`, ...).
* `bounds`: interval analysis with variable ranges, constant (`const_int_bound`) and
  symbolic (`interval`).
* `rules`: the simplification rules, a table of patterns and callbacks.
* `simplifier`: `simplify(expr, ranges)`, the rules applied bottom-up.
"""

from .bounds import SymBound, VarRanges, const_bound, const_int_bound, interval
from .canonical import LinearSum, canonical, linear_form
from .constants import INF, Bound, as_int, const_bool, dtype_bound, make_const
from .fold import add, ceildiv, floordiv, floormod, maximum, minimum, mul, sub
from .rules import RULES, Rule
from .simplifier import Simplifier, simplify

__all__ = [
    "INF", "RULES", "Bound", "LinearSum", "Rule", "Simplifier", "SymBound", "VarRanges", "add",
    "as_int", "canonical", "ceildiv", "const_bool", "const_bound", "const_int_bound",
    "dtype_bound", "floordiv", "floormod", "interval", "linear_form", "make_const", "maximum",
    "minimum", "mul", "simplify", "sub",
]  # fmt: skip
