"""Compute definitions of the elementwise family (lang/opdefs/tensor.py) against the reference
implementations, evaluated with the vectorized TE evaluator."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import relay.lang.opdefs.tensor as family_module
from relay.backend.lower.computes import has_compute
from relay.backend.runtime.op_impls import implementation_for
from relay.lang.op import get_op
from relay.lang.types import TensorType
from relay.testing.compute_check import RandomArrays, check_compute, declared_op_names

ARRAYS = RandomArrays(5)
RNG = ARRAYS.rng
randf, randi = ARRAYS.uniform, ARRAYS.ints
check = partial(check_compute, atol=1e-6)
"""`check_compute` to an absolute 1e-6 for floats."""


# ---------------------------------------------------------------------------------- unary

FLOAT_DOMAINS = {
    "exp": (-3, 3),
    "fast_exp": (-3, 3),
    "log": (0.1, 5),
    "log2": (0.1, 5),
    "log10": (0.1, 5),
    "sqrt": (0, 5),
    "rsqrt": (0.1, 5),
    "sigmoid": (-5, 5),
    "tanh": (-3, 3),
    "fast_tanh": (-3, 3),
    "erf": (-2, 2),
    "fast_erf": (-2, 2),
    "sin": (-3, 3),
    "cos": (-3, 3),
    "tan": (-1.2, 1.2),
    "asin": (-1, 1),
    "acos": (-1, 1),
    "atan": (-3, 3),
    "sinh": (-3, 3),
    "cosh": (-3, 3),
    "asinh": (-3, 3),
    "acosh": (1, 4),
    "atanh": (-0.9, 0.9),
    "floor": (-3, 3),
    "ceil": (-3, 3),
    "round": (-3, 3),
    "trunc": (-3, 3),
    "sign": (-3, 3),
    "negative": (-3, 3),
    "abs": (-3, 3),
    "copy": (-3, 3),
    "zeros_like": (-3, 3),
    "ones_like": (-3, 3),
    "isnan": (-3, 3),
    "isinf": (-3, 3),
    "isfinite": (-3, 3),
}
INT_UNARY = [
    "exp", "log", "sqrt", "tanh", "sigmoid", "sin", "floor", "ceil", "round", "trunc", "sign",
    "negative", "abs", "logical_not", "bitwise_not", "copy", "zeros_like", "ones_like",
    "isnan", "isinf", "isfinite",
]  # fmt: skip
BOOL_UNARY = ["logical_not", "bitwise_not", "copy", "zeros_like", "ones_like"]
UNARY_TESTED = set(FLOAT_DOMAINS) | set(INT_UNARY) | set(BOOL_UNARY)


@pytest.mark.parametrize("name", sorted(FLOAT_DOMAINS))
@pytest.mark.parametrize("shape", [(2, 3), (), (5,)])
def test_unary_float32(name: str, shape: tuple[int, ...]) -> None:
    lo, hi = FLOAT_DOMAINS[name]
    x = randf(*shape, lo=lo, hi=hi)
    check(name, [x])


def test_unary_float_specials() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 0.5, -0.5, 1.5, -2.5, 0.0, -0.0], "float32")
    for name in ["isnan", "isinf", "isfinite", "round", "floor", "ceil", "trunc", "abs"]:
        check(name, [x])
    check("sign", [np.array([-2.0, -0.0, 0.0, 3.0, np.nan], "float32")])


@pytest.mark.parametrize("name", INT_UNARY)
def test_unary_int32(name: str) -> None:
    lo, hi = (0, 4) if name in ("exp", "log", "sqrt") else (-5, 6)
    if name == "log":
        lo = 1
    check(name, [randi(3, 4, lo=lo, hi=hi)])


@pytest.mark.parametrize("name", ["abs", "sign", "negative", "bitwise_not", "logical_not"])
def test_unary_other_integer_dtypes(name: str) -> None:
    check(name, [randi(7, lo=-128, hi=128, dtype="int8")])
    check(name, [randi(7, lo=0, hi=256, dtype="uint8")])


@pytest.mark.parametrize("name", BOOL_UNARY)
def test_unary_bool(name: str) -> None:
    check(name, [RNG.integers(0, 2, (4, 3)).astype(bool)])


def test_unary_float64() -> None:
    for name in ["exp", "tanh", "erf", "sigmoid", "round"]:
        check(name, [randf(6, dtype="float64")])


# --------------------------------------------------------------------------------- binary

BROADCAST_SHAPES = [((2, 3, 4), (3, 1)), ((1, 4), (3, 1)), ((), (2, 3)), ((4,), (4,))]
ARITH = ["add", "subtract", "multiply", "maximum", "minimum"]
DIVISIONS = ["divide", "floor_divide", "floor_mod", "mod", "trunc_divide", "trunc_mod"]
COMPARISONS = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
LOGICAL = ["logical_and", "logical_or", "logical_xor"]
BITWISE = ["bitwise_and", "bitwise_or", "bitwise_xor"]
SHIFTS = ["left_shift", "right_shift"]
BINARY_TESTED = set(ARITH + DIVISIONS + COMPARISONS + LOGICAL + BITWISE + SHIFTS + ["power"])


@pytest.mark.parametrize("shapes", BROADCAST_SHAPES)
@pytest.mark.parametrize("name", ARITH + COMPARISONS)
def test_binary_arith_and_compare(name: str, shapes: tuple) -> None:  # type: ignore[type-arg]
    a, b = shapes
    check(name, [randf(*a), randf(*b)])
    check(name, [randi(*a), randi(*b)])
    # equal values exercise the tie-breaking of maximum/minimum and the comparisons
    check(name, [randi(*a, lo=0, hi=2).astype("float32"), randi(*b, lo=0, hi=2).astype("float32")])


@pytest.mark.parametrize("name", DIVISIONS)
def test_binary_divisions(name: str) -> None:
    a = randi(3, 4, lo=-20, hi=21)
    b = randi(4, lo=1, hi=6) * np.array([1, -1, 1, -1], "int32")
    check(name, [a, b])
    check(name, [a.astype("int8"), b.astype("int8")])
    af = randf(3, 4, lo=-10, hi=10)
    bf = randf(4, lo=0.5, hi=3) * np.array([1, -1, 1, -1], "float32")
    check(name, [af, bf])


def test_power() -> None:
    check("power", [randf(3, 4, lo=0.1, hi=3), randf(4, lo=-2, hi=2)])
    check("power", [randi(3, 4, lo=-4, hi=5), randi(1, 4, lo=0, hi=4)])


@pytest.mark.parametrize("name", LOGICAL + BITWISE)
def test_logical_and_bitwise(name: str) -> None:
    check(name, [RNG.integers(0, 2, (3, 4)).astype(bool), RNG.integers(0, 2, (4,)).astype(bool)])
    check(name, [randi(3, 4, lo=-3, hi=4), randi(3, 1, lo=-3, hi=4)])
    check(name, [randi(5, lo=0, hi=255, dtype="uint8"), randi(5, lo=0, hi=255, dtype="uint8")])


@pytest.mark.parametrize("name", SHIFTS)
def test_shifts(name: str) -> None:
    check(name, [randi(3, 4, lo=-100, hi=100), randi(4, lo=0, hi=8)])
    check(name, [randi(6, lo=0, hi=256, dtype="uint8"), randi(6, lo=0, hi=8, dtype="uint8")])


def test_bool_add_and_multiply() -> None:
    a = RNG.integers(0, 2, (4, 3)).astype(bool)
    b = RNG.integers(0, 2, (3,)).astype(bool)
    check("add", [a, b])
    check("multiply", [a, b])


def test_integer_wraparound() -> None:
    a = np.array([120, -120, 100], "int8")
    b = np.array([10, -10, 3], "int8")
    check("add", [a, b])
    check("multiply", [a, b])
    check("subtract", [b, a])


# ---------------------------------------------------------------- with attributes or 3 args

OTHER_TESTED = {"clip", "cast", "reinterpret", "cast_like", "where", "full_like", "zeros",
                "ones", "full", "arange"}  # fmt: skip


@pytest.mark.parametrize(("lo", "hi"), [(-1.0, 1.0), (-0.5, 2.7), (0.0, 0.0)])
def test_clip(lo: float, hi: float) -> None:
    check("clip", [randf(3, 4)], a_min=lo, a_max=hi)
    check("clip", [randi(3, 4)], a_min=lo, a_max=hi)
    check("clip", [randi(6, lo=-128, hi=128, dtype="int8")], a_min=-1000.0, a_max=1000.0)


@pytest.mark.parametrize(
    ("src", "dst"),
    [("float32", "int32"), ("int32", "float32"), ("float32", "bool"), ("int32", "int8"),
     ("bool", "float32"), ("uint8", "int32"), ("float32", "float64"), ("int64", "int32")],
)  # fmt: skip
def test_cast(src: str, dst: str) -> None:
    if src == "bool":
        x = RNG.integers(0, 2, (3, 4)).astype(bool)
    elif src.startswith("float"):
        x = randf(3, 4, lo=-100, hi=100, dtype=src)
    else:
        x = randi(3, 4, lo=0 if src.startswith("u") else -300, hi=255, dtype=src)
    check("cast", [x], dtype=dst)
    check("cast_like", [x, np.zeros((2,), dst)])


def test_reinterpret() -> None:
    check("reinterpret", [randf(3, 4)], dtype="int32")
    check("reinterpret", [randi(5, lo=0, hi=2**20)], dtype="float32")
    check("reinterpret", [randi(5, lo=-128, hi=128, dtype="int8")], dtype="uint8")


@pytest.mark.parametrize(
    "shapes", [((3, 4), (3, 4), (3, 4)), ((4,), (3, 1), (1, 4)), ((), (2, 3), (3,))]
)
def test_where(shapes: tuple) -> None:  # type: ignore[type-arg]
    c, x, y = shapes
    check("where", [RNG.integers(0, 2, c).astype(bool), randf(*x), randf(*y)])
    check("where", [randi(*c, lo=-1, hi=2), randi(*x), randi(*y)])


def test_full_like_and_constructors() -> None:
    check("full_like", [randf(2, 3), np.array(2.5, "float32")])
    check("full_like", [randi(2, 3), np.array(-4, "int32")])
    for name in ("zeros", "ones"):
        check(name, [], shape=[2, 3], dtype="float32")
        check(name, [], shape=[4], dtype="int8")
        check(name, [], shape=[], dtype="bool")
    check("full", [np.array(3.5, "float32")], shape=[2, 2], dtype="int32")
    check("full", [np.array(7, "int32")], shape=[3], dtype="")


@pytest.mark.parametrize(
    ("start", "stop", "step", "dtype"),
    [(0, 5, 1, "int32"), (3, -4, -2, "int32"), (0.5, 3.0, 0.25, "float32"),
     (-1.0, 2.0, 0.7, "float32"), (1, 10, 3, "float32")],
)  # fmt: skip
def test_arange(start: float, stop: float, step: float, dtype: str) -> None:
    in_dtype = dtype if isinstance(start, float) else "int32"
    args = [np.array(v, in_dtype) for v in (start, stop, step)]
    expected = implementation_for(get_op("arange"))(
        args,  # type: ignore[arg-type]
        get_op("arange").make_attrs(start=None, stop=None, step=None, dtype=dtype),
    )
    out_type = TensorType(expected.shape, dtype)  # type: ignore[union-attr]
    check("arange", args, out_type=out_type, start=None, stop=None, step=None, dtype=dtype)


# ------------------------------------------------------------------------------- coverage


def test_every_elementwise_op_has_a_compute_and_a_test() -> None:
    names = declared_op_names(family_module)
    assert len(names) == 74
    missing = sorted(n for n in names if not has_compute(get_op(n)))
    assert missing == []
    untested = names - UNARY_TESTED - BINARY_TESTED - OTHER_TESTED
    assert untested == set()
