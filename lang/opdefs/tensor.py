"""Elementwise and broadcasting tensor operators (placeholder set; see issue 2 brief)."""

from ..op import OpPattern, register_op

for _name in ("add", "subtract", "multiply", "divide", "less", "less_equal", "greater",
              "greater_equal", "equal", "not_equal"):
    register_op(_name, 2, OpPattern.BROADCAST, arg_names=("lhs", "rhs"))
