"""Elementwise and broadcasting tensor operators, casts, and tensor constructors.

TVM's `src/relay/op/tensor/{unary,binary}.cc` and the init/cast operators of
`tensor/transform.cc`. Unary math takes one input `data`; binary operators take `lhs`
and `rhs` and broadcast like numpy.
"""

from __future__ import annotations

from ..attrs import Kind
from ._decl import (
    BROADCAST,
    ELEMWISE,
    OPAQUE,
    declare,
    declare_family,
    dtype_field,
    required,
    schema,
)

CLIP_ATTRS = schema("ClipAttrs", required("a_min", Kind.FLOAT), required("a_max", Kind.FLOAT))
CAST_ATTRS = schema("CastAttrs", required("dtype", Kind.DTYPE))
INIT_OP_ATTRS = schema(
    "InitOpAttrs", required("shape", Kind.INTS, nullable=True), dtype_field("dtype")
)
ARANGE_ATTRS = schema(
    "ArangeAttrs",
    required("start", Kind.ANY, nullable=True),
    required("stop", Kind.ANY, nullable=True),
    required("step", Kind.ANY, nullable=True),
    required("dtype", Kind.DTYPE),
)

_UNARY = {
    "negative": "Elementwise negation, -x.",
    "abs": "Elementwise absolute value.",
    "exp": "Elementwise e**x.",
    "fast_exp": "Elementwise e**x by a fast approximation.",
    "log": "Elementwise natural logarithm.",
    "log2": "Elementwise base-2 logarithm.",
    "log10": "Elementwise base-10 logarithm.",
    "sqrt": "Elementwise square root.",
    "rsqrt": "Elementwise reciprocal square root, 1/sqrt(x).",
    "sigmoid": "Elementwise logistic function, 1/(1+e**-x).",
    "tanh": "Elementwise hyperbolic tangent.",
    "fast_tanh": "Elementwise hyperbolic tangent by a fast approximation.",
    "erf": "Elementwise Gauss error function.",
    "fast_erf": "Elementwise Gauss error function by a fast approximation.",
    "floor": "Elementwise round toward minus infinity.",
    "ceil": "Elementwise round toward plus infinity.",
    "round": "Elementwise round to the nearest integer.",
    "trunc": "Elementwise round toward zero.",
    "sign": "Elementwise sign: -1, 0 or 1.",
    "sin": "Elementwise sine.",
    "cos": "Elementwise cosine.",
    "tan": "Elementwise tangent.",
    "asin": "Elementwise arc sine.",
    "acos": "Elementwise arc cosine.",
    "atan": "Elementwise arc tangent.",
    "sinh": "Elementwise hyperbolic sine.",
    "cosh": "Elementwise hyperbolic cosine.",
    "asinh": "Elementwise inverse hyperbolic sine.",
    "acosh": "Elementwise inverse hyperbolic cosine.",
    "atanh": "Elementwise inverse hyperbolic tangent.",
    "logical_not": "Elementwise boolean not.",
    "bitwise_not": "Elementwise bitwise complement of an integer tensor.",
    "isnan": "Elementwise test for NaN (bool result).",
    "isinf": "Elementwise test for an infinity (bool result).",
    "isfinite": "Elementwise test for a finite value (bool result).",
    "copy": "A copy of the input.",
    "zeros_like": "Zeros of the input's shape and dtype.",
    "ones_like": "Ones of the input's shape and dtype.",
}

_BINARY = {
    "add": "Broadcasting addition.",
    "subtract": "Broadcasting subtraction.",
    "multiply": "Broadcasting multiplication.",
    "divide": "Broadcasting division (integers round toward zero).",
    "power": "Broadcasting power, lhs**rhs.",
    "maximum": "Broadcasting elementwise maximum.",
    "minimum": "Broadcasting elementwise minimum.",
    "floor_divide": "Broadcasting division rounded toward minus infinity.",
    "floor_mod": "Broadcasting remainder with the sign of the divisor.",
    "mod": "Broadcasting remainder with the sign of the dividend (C fmod).",
    "trunc_divide": "Broadcasting division rounded toward zero.",
    "trunc_mod": "Broadcasting remainder of the division rounded toward zero.",
    "equal": "Broadcasting ==, bool result.",
    "not_equal": "Broadcasting !=, bool result.",
    "less": "Broadcasting <, bool result.",
    "less_equal": "Broadcasting <=, bool result.",
    "greater": "Broadcasting >, bool result.",
    "greater_equal": "Broadcasting >=, bool result.",
    "logical_and": "Broadcasting boolean and.",
    "logical_or": "Broadcasting boolean or.",
    "logical_xor": "Broadcasting boolean exclusive or.",
    "bitwise_and": "Broadcasting bitwise and of integer tensors.",
    "bitwise_or": "Broadcasting bitwise or of integer tensors.",
    "bitwise_xor": "Broadcasting bitwise exclusive or of integer tensors.",
    "left_shift": "Broadcasting left shift of integer tensors.",
    "right_shift": "Broadcasting right shift of integer tensors.",
}

declare_family("data", ELEMWISE, None, _UNARY)
declare_family("lhs rhs", BROADCAST, None, _BINARY)

declare(
    [
        ("clip", "data", ELEMWISE, CLIP_ATTRS, "Clamp every element into [a_min, a_max]."),
        ("cast", "data", ELEMWISE, CAST_ATTRS, "Convert every element to `dtype`."),
        ("reinterpret", "data", ELEMWISE, CAST_ATTRS, "Reinterpret the bits as `dtype`."),
        ("cast_like", "data dtype_like", ELEMWISE, None, "Cast to the dtype of `dtype_like`."),
        ("where", "condition x y", BROADCAST, None, "Select from x where condition, else y."),
        ("full_like", "data fill_value", ELEMWISE, None, "The input's shape, all fill_value."),
        ("zeros", "", ELEMWISE, INIT_OP_ATTRS, "A tensor of zeros of `shape` and `dtype`."),
        ("ones", "", ELEMWISE, INIT_OP_ATTRS, "A tensor of ones of `shape` and `dtype`."),
        ("full", "fill_value", ELEMWISE, INIT_OP_ATTRS, "A `shape` tensor, all fill_value."),
        ("arange", "start stop step", OPAQUE, ARANGE_ATTRS, "Evenly spaced values."),
    ]
)
