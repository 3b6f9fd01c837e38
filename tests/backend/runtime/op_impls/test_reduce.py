"""Reference implementations of reductions: axes, exclude, keepdims, TVM dtypes."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend.runtime import EvalError
from relay.backend.runtime.op_impls import IMPLS
from relay.lang import get_op


def call(name, *args, **attrs):
    op = get_op(name)
    return IMPLS[op](list(args), op.make_attrs(**attrs))


def reduced_axes(ndim, axis, exclude):
    """The axes TVM reduces, worked out independently of the implementation."""
    if not axis:
        return list(range(ndim))
    listed = {a % ndim for a in axis}
    return [i for i in range(ndim) if (i in listed) != exclude]


@st.composite
def reduction_cases(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    ndim = len(shape)
    axis = draw(
        st.none()
        | st.lists(
            st.integers(-ndim, ndim - 1), min_size=1, max_size=ndim, unique_by=lambda a: a % ndim
        )
    )
    return shape, axis, draw(st.booleans()), draw(st.booleans())


@settings(max_examples=40)
@given(reduction_cases(), st.integers(0, 2**31))
def test_sum_max_min_prod_over_any_axes(case, seed):
    shape, axis, keepdims, exclude = case
    x = np.random.default_rng(seed).uniform(-2, 2, shape).astype("float32")
    axes = reduced_axes(len(shape), axis, exclude)
    for name, ref in [("sum", np.sum), ("max", np.max), ("min", np.min), ("prod", np.prod)]:
        out = call(name, x, axis=axis, keepdims=keepdims, exclude=exclude)
        assert out.dtype == np.float32
        if not axes:  # exclude listed every axis: TVM returns the input
            np.testing.assert_array_equal(out, x)
            continue
        want = ref(x.astype("float64"), axis=tuple(axes), keepdims=keepdims)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
        assert out.shape == np.shape(want)


def test_keepdims_and_negative_axes_by_hand():
    x = np.arange(24, dtype="int32").reshape(2, 3, 4)
    assert call("sum", x, axis=[-1]).tolist() == [[6, 22, 38], [54, 70, 86]]
    assert call("sum", x, axis=[0, -1], keepdims=True).shape == (1, 3, 1)
    assert call("sum", x, axis=[1], exclude=True).tolist() == [60, 92, 124]
    assert call("sum", x).shape == () and int(call("sum", x)) == 276
    assert call("sum", x, axis=[]).shape == ()  # an empty list means every axis
    with pytest.raises(EvalError):
        call("sum", x, axis=[3])


def test_integer_sum_and_prod_wrap_in_the_input_dtype():
    x = np.array([100, 100, 100], "int8")
    out = call("sum", x)
    assert out.dtype == np.int8 and int(out) == 300 - 256
    assert int(call("prod", np.array([16, 16], "int8"))) == 0
    assert call("prod", np.array([3, 5], "uint8")).dtype == np.uint8


def test_mean_keeps_the_dtype_and_integers_round_toward_zero():
    assert call("mean", np.array([1, 2], "int32")).tolist() == 1
    assert call("mean", np.array([-3, -2], "int32")).tolist() == -2
    out = call("mean", np.array([[1, 2], [3, 5]], "int8"), axis=[1])
    assert out.dtype == np.int8 and out.tolist() == [1, 4]
    half = call("mean", np.array([0.5, 1.0, 2.0], "float16"))
    assert half.dtype == np.float16 and float(half) == pytest.approx(3.5 / 3, rel=1e-3)
    np.testing.assert_allclose(
        call("mean", np.arange(12.0, dtype="float32").reshape(3, 4), axis=[0]), [4, 5, 6, 7]
    )


def test_max_and_min_of_an_empty_reduction_are_the_identities():
    empty = np.zeros((2, 0), "float32")
    assert call("max", empty, axis=[1]).tolist() == [np.finfo("float32").min] * 2
    assert call("min", np.zeros((0,), "int8")).tolist() == 127


def test_all_and_any():
    x = np.array([[True, False, True], [True, True, True]])
    assert call("all", x, axis=[1]).tolist() == [False, True]
    assert call("any", x, axis=[0]).tolist() == [True, True, True]
    assert call("all", x).dtype == np.bool_
    assert call("any", np.array([0, 0, 3], "int32")).tolist() == 1


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reductions_pick_the_first_occurrence_or_the_last(name):
    x = np.array([1, 3, 3, 0, 0, 2], "float32")
    first = {"argmax": 1, "argmin": 3}[name]
    last = {"argmax": 2, "argmin": 4}[name]
    out = call(name, x, axis=[0])
    assert out.dtype == np.int32 and int(out) == first
    assert int(call(name, x, axis=[0], select_last_index=True)) == last


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reductions_treat_nan_as_the_extreme(name):
    """numpy's rule, which the compiled kernels follow: the first NaN wins (the last with
    `select_last_index`), whatever the numbers around it."""
    x = np.array([[1.0, np.nan, np.inf, np.nan, -np.inf], [np.nan] * 5], "float32")
    assert call(name, x, axis=[1]).tolist() == [1, 0]
    assert call(name, x, axis=[1], select_last_index=True).tolist() == [3, 4]
    assert int(call(name, x)) == 1 and int(call(name, x, select_last_index=True)) == 9


def test_max_and_min_propagate_nan():
    x = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0]], "float32")
    for name, ok in (("max", 3.0), ("min", 1.0)):
        out = call(name, x, axis=[1])
        assert np.isnan(out[0]) and out[1] == ok
        assert np.isnan(call(name, x))


def test_argmax_over_several_axes_indexes_the_flattened_reduced_axes():
    x = np.random.default_rng(0).integers(0, 5, (2, 3, 4)).astype("int32")
    out = call("argmax", x, axis=[0, 2])
    for j in range(3):
        best, where = None, None
        for flat, (i, k) in enumerate(itertools.product(range(2), range(4))):
            if best is None or x[i, j, k] > best:
                best, where = x[i, j, k], flat
        assert out[j] == where
    kept = call("argmin", x, axis=[1], keepdims=True, exclude=True)
    assert kept.shape == (1, 3, 1)
    assert kept.ravel().tolist() == [int(np.argmin(x[:, j, :])) for j in range(3)]
    assert call("argmax", x).shape == () and int(call("argmax", x)) == np.argmax(x)


def test_variance_with_a_given_mean_and_unbiased():
    x = np.random.default_rng(1).normal(size=(3, 5)).astype("float32")
    m = call("mean", x, axis=[1], keepdims=True)
    np.testing.assert_allclose(call("variance", x, m, axis=[1]), np.var(x, axis=1), rtol=1e-5)
    np.testing.assert_allclose(
        call("variance", x, m, axis=[1], unbiased=True), np.var(x, axis=1, ddof=1), rtol=1e-5
    )
    whole = call("variance", x, call("mean", x, keepdims=True), keepdims=True)
    assert whole.shape == (1, 1) and whole.dtype == np.float32


def test_a_scalar_is_returned_unchanged():
    s = np.array(3.5, "float32")
    assert call("sum", s).tolist() == 3.5 and call("sum", s).shape == ()
    index = call("argmax", s)  # the index of the only element, as the type says
    assert index.dtype == np.int32 and index.tolist() == 0
