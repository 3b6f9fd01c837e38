"""Elementwise reference implementations: TVM semantics, dtype preservation."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from relay.backend.runtime import EvalError, evaluate
from relay.backend.runtime.op_impls import IMPLS, elementwise
from relay.lang import Call, OpPattern, all_ops, const, get_op

UNARY = [
    "negative", "abs", "exp", "fast_exp", "log", "log2", "log10", "sqrt", "rsqrt", "sigmoid",
    "tanh", "fast_tanh", "erf", "fast_erf", "floor", "ceil", "round", "trunc", "sign", "sin",
    "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
    "logical_not", "bitwise_not", "isnan", "isinf", "isfinite", "copy", "zeros_like",
    "ones_like", "nn.relu",
]  # fmt: skip
BINARY = [
    "add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "floor_divide",
    "floor_mod", "mod", "trunc_divide", "trunc_mod", "equal", "not_equal", "less",
    "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_xor",
    "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
]  # fmt: skip
COMPARISONS = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


def run(name, *arrays, **attrs):
    """Evaluate `name(arrays...)` through the interpreter (inputs become constants)."""
    o = get_op(name)
    return evaluate(Call(o, [const(np.asarray(a)) for a in arrays], o.make_attrs(**attrs)))


def test_every_declared_elementwise_operator_of_this_family_is_implemented():
    names = UNARY + BINARY + ["clip", "cast", "cast_like", "where", "reinterpret"]
    names += ["nn.leaky_relu"]
    for name in names:
        assert get_op(name) in IMPLS, name
    # every declared unary/binary elementwise operator without attributes is covered
    skipped = ("broadcast_to_like", "full_like")  # shape operators, implemented elsewhere
    for o in all_ops():
        family = o.pattern in (OpPattern.ELEMWISE, OpPattern.BROADCAST)
        plain = o.attrs_schema is None and o.num_inputs in (1, 2)
        if family and plain and not o.name.startswith(("test.", "nn.")) and o.name not in skipped:
            assert o in IMPLS, o.name


@pytest.mark.parametrize("dtype", ["int8", "int32", "float16", "float32"])
def test_binary_results_keep_the_dtype_and_stay_arrays(dtype):
    a = np.asarray(3, dtype)
    b = np.asarray(2, dtype)
    for name in ["add", "subtract", "multiply", "divide", "maximum", "minimum", "mod"]:
        result = run(name, a, b)
        assert isinstance(result, np.ndarray) and result.shape == (), name
        assert result.dtype == np.dtype(dtype), name
    for name in COMPARISONS:
        result = run(name, a, b)
        assert isinstance(result, np.ndarray) and result.dtype == np.bool_, name


def test_int8_arithmetic_wraps_in_int8():
    result = run("add", np.asarray([127, -128], np.int8), np.asarray([1, -1], np.int8))
    assert result.dtype == np.int8 and result.tolist() == [-128, 127]
    assert run("multiply", np.asarray(16, np.int8), np.asarray(16, np.int8)) == 0


def test_float16_and_float32_are_not_promoted():
    h = run("divide", np.asarray([1, 2], np.float16), np.asarray([3, 3], np.float16))
    assert h.dtype == np.float16
    assert h.tolist() == [np.float16(1) / np.float16(3), np.float16(2) / np.float16(3)]
    for name in ["exp", "sqrt", "sigmoid", "tanh", "erf", "round", "rsqrt"]:
        assert run(name, np.asarray([0.5, 1.5], np.float16)).dtype == np.float16, name
        assert run(name, np.asarray(0.5, np.float32)).dtype == np.float32, name


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_integer_division_follows_c(dtype):
    a = np.asarray([-7, 7, -7, 7, 6, -6], dtype)
    b = np.asarray([2, 2, -2, -2, 3, 3], dtype)
    assert run("divide", a, b).tolist() == [-3, 3, 3, -3, 2, -2]
    assert run("trunc_divide", a, b).tolist() == [-3, 3, 3, -3, 2, -2]
    assert run("mod", a, b).tolist() == [-1, 1, -1, 1, 0, 0]
    assert run("trunc_mod", a, b).tolist() == [-1, 1, -1, 1, 0, 0]
    assert run("floor_divide", a, b).tolist() == [-4, 3, 3, -4, 2, -2]
    assert run("floor_mod", a, b).tolist() == [1, 1, -1, -1, 0, 0]
    for name in ["divide", "mod", "floor_divide", "floor_mod", "trunc_divide", "trunc_mod"]:
        assert run(name, a, b).dtype == np.dtype(dtype)


def test_integer_division_by_zero_is_an_error_float_division_is_not():
    for name in ["divide", "mod", "floor_divide", "floor_mod"]:
        with pytest.raises(EvalError, match="division by zero"):
            run(name, np.asarray([1, 2], np.int32), np.asarray([1, 0], np.int32))
    result = run("divide", np.asarray([1, -1], np.float32), np.asarray([0, 0], np.float32))
    assert result.tolist() == [math.inf, -math.inf]


def test_float_remainders_follow_tvm():
    a = np.asarray([-7.5, 7.5, -7.5], np.float32)
    b = np.asarray([2, 2, -2], np.float32)
    assert run("mod", a, b).tolist() == [-1.5, 1.5, -1.5]  # C fmod
    assert run("floor_mod", a, b).tolist() == [0.5, 1.5, -1.5]
    assert run("trunc_mod", a, b).tolist() == [-1.5, 1.5, -1.5]
    assert run("floor_divide", a, b).tolist() == [-4, 3, 3]
    assert run("trunc_divide", a, b).tolist() == [-3, 3, 3]
    assert run("divide", a, b).tolist() == [-3.75, 3.75, 3.75]


@given(
    st.integers(-(2**31) + 1, 2**31 - 1),
    st.integers(-(2**31) + 1, 2**31 - 1).filter(lambda v: v != 0),
)
def test_int32_division_identities(x, y):
    a, b = np.asarray(x, np.int32), np.asarray(y, np.int32)
    q, r = int(run("divide", a, b)), int(run("mod", a, b))
    assert q == abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
    assert q * y + r == x and abs(r) < abs(y) and (r == 0 or (r < 0) == (x < 0))
    fq, fr = int(run("floor_divide", a, b)), int(run("floor_mod", a, b))
    assert fq == x // y and fr == x % y


def test_round_is_half_away_from_zero():
    x = np.asarray([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, -1.2, 3.0], np.float32)
    assert run("round", x).tolist() == [1, 2, 3, -1, -3, 0, -1, 3]
    assert run("round", x.astype(np.float16)).tolist()[:5] == [1, 2, 3, -1, -3]
    ints = np.asarray([-3, 4], np.int32)
    assert run("round", ints).tolist() == [-3, 4] and run("floor", ints).dtype == np.int32


def test_maximum_minimum_clip_relu_select_like_tvm():
    nan = math.nan
    a = np.asarray([nan, 1.0, 3.0], np.float32)
    b = np.asarray([1.0, nan, 2.0], np.float32)
    mx = run("maximum", a, b).tolist()
    assert mx[0] == 1.0 and math.isnan(mx[1]) and mx[2] == 3.0
    mn = run("minimum", a, b).tolist()
    assert mn[0] == 1.0 and math.isnan(mn[1]) and mn[2] == 2.0
    x = np.asarray([-2.0, 0.5, 9.0, nan], np.float32)
    assert run("clip", x, a_min=0.0, a_max=6.0).tolist() == [0.0, 0.5, 6.0, 6.0]
    ints = np.asarray([-5, 3, 120], np.int8)
    clipped = run("clip", ints, a_min=-1.5, a_max=1000.0)
    assert clipped.dtype == np.int8 and clipped.tolist() == [-1, 3, 120]
    assert run("nn.relu", x).tolist() == [0.0, 0.5, 9.0, 0.0]
    leaky = run("nn.leaky_relu", np.asarray([-2.0, 3.0], np.float32), alpha=0.5)
    assert leaky.tolist() == [-1.0, 3.0] and leaky.dtype == np.float32


def test_unary_semantics():
    x = np.asarray([-2.0, 0.0, 2.0, math.nan], np.float32)
    sign = run("sign", x).tolist()
    assert sign[:3] == [-1, 0, 1] and sign[3] == 0
    assert run("sign", np.asarray([-4, 0, 9], np.int8)).tolist() == [-1, 0, 1]
    assert run("isnan", x).tolist() == [False, False, False, True]
    assert run("isfinite", x).dtype == np.bool_
    e = run("erf", np.asarray([0.0, 1.0], np.float32))
    assert e.dtype == np.float32 and abs(float(e[1]) - math.erf(1.0)) < 1e-6
    s = run("sigmoid", np.asarray([0.0], np.float32))
    assert s.tolist() == [0.5]
    assert run("rsqrt", np.asarray([4.0], np.float32)).tolist() == [0.5]
    assert run("logical_not", np.asarray([True, False])).tolist() == [False, True]
    assert run("bitwise_not", np.asarray([0], np.int8)).tolist() == [-1]
    assert run("negative", np.asarray(5, np.uint8)) == 251
    assert run("ones_like", np.zeros((2, 2), np.int8)).tolist() == [[1, 1], [1, 1]]
    assert run("exp", np.asarray([1], np.int32)).tolist() == [2]  # computed, cast back


def test_cast_where_reinterpret():
    x = np.asarray([-1.7, 1.7, 0.0], np.float32)
    assert run("cast", x, dtype="int32").tolist() == [-1, 1, 0]
    assert run("cast", x, dtype="bool").tolist() == [True, True, False]
    assert run("cast", x, dtype="float16").dtype == np.float16
    like = run("cast_like", x, np.asarray(0, np.int8))
    assert like.dtype == np.int8 and like.tolist() == [-1, 1, 0]
    cond = np.asarray([[True], [False]])
    picked = run("where", cond, np.asarray([1, 2], np.int16), np.asarray(0, np.int16))
    assert picked.dtype == np.int16 and picked.tolist() == [[1, 2], [0, 0]]
    bits = run("reinterpret", np.asarray([1.0], np.float32), dtype="int32")
    assert bits.tolist() == [0x3F800000]
    with pytest.raises(EvalError, match="bit width"):
        run("reinterpret", np.asarray([1.0], np.float32), dtype="int8")


def test_logical_and_shift_operators():
    t, f = np.asarray([True, True, False]), np.asarray([True, False, False])
    assert run("logical_and", t, f).tolist() == [True, False, False]
    assert run("logical_xor", t, f).dtype == np.bool_
    assert run("left_shift", np.asarray([1], np.int8), np.asarray([3], np.int8)).tolist() == [8]
    assert run("right_shift", np.asarray([-8], np.int32), np.asarray([1], np.int32)) == -4


def test_broadcasting_and_operand_checks():
    row = np.arange(3, dtype=np.float32)
    col = np.arange(2, dtype=np.float32).reshape(2, 1)
    assert run("add", row, col).shape == (2, 3)
    with pytest.raises(EvalError, match="one dtype"):
        run("add", np.asarray(1, np.int8), np.asarray(1, np.int32))


def test_fixed_point_multiply_rounds_like_q_multiply_shift():
    attrs = type("A", (), {"multiplier": 2**30, "shift": 0})()  # 0.5 in Q31
    x = np.asarray([10, -10, 3, -3], np.int32)
    result = elementwise.fixed_point_multiply([x], attrs)
    assert result.dtype == np.int32 and result.tolist() == [5, -5, 2, -1]
    attrs = type("A", (), {"multiplier": 2**30, "shift": 2})()  # 0.5 * 4
    assert elementwise.fixed_point_multiply([x], attrs).tolist() == [20, -20, 6, -6]
