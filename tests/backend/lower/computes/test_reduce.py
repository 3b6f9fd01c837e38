"""Compute definitions of the reduce family (lang/opdefs/reduce.py) against the reference
implementations, evaluated with the vectorized TE evaluator (NaN cases also compiled)."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import relay.lang.opdefs.reduce as family_module
from relay.backend.lower.computes import has_compute
from relay.backend.runtime.op_impls import implementation_for
from relay.backend.te.tensor import placeholder
from relay.lang.op import get_op
from relay.testing.compute_check import (
    RandomArrays,
    apply_compute,
    check_compute,
    declared_op_names,
    op_names_called_in,
    run_default_schedule,
)

ARRAYS = RandomArrays(5)
randf, randi = ARRAYS.uniform, ARRAYS.ints


verify = partial(check_compute, atol=1e-6)
"""`check_compute`, to an absolute 1e-6 for floats (the coverage test looks for its calls)."""


# ------------------------------------------------------------------------------ reductions

AXES = [
    dict(axis=None),
    dict(axis=[1]),
    dict(axis=[0, 2], keepdims=True),
    dict(axis=[-1]),
    dict(axis=[1], exclude=True),
    dict(axis=[0, 1, 2], exclude=True),
    dict(axis=[2, 0]),
    dict(axis=None, keepdims=True),
]


@pytest.mark.parametrize("kw", AXES)
def test_sum_prod_max_min_mean(kw: dict) -> None:  # type: ignore[type-arg]
    x = randf(2, 3, 4)
    i = randi(2, 3, 4, lo=-3, hi=4)
    for args in ([x], [i], [i.astype("int8") * 40]):
        verify("sum", args, **kw)
        verify("max", args, **kw)
        verify("min", args, **kw)
        verify("mean", args, **kw)
    verify("prod", [randf(2, 3, 4, lo=0.5, hi=1.5)], **kw)
    verify("prod", [i], **kw)


@pytest.mark.parametrize("kw", AXES)
def test_all_any(kw: dict) -> None:  # type: ignore[type-arg]
    b = ARRAYS.rng.random((2, 3, 4)) < 0.7
    for args in ([b], [randi(2, 3, 4, lo=0, hi=2)], [randi(2, 3, 4, lo=0, hi=3).astype("float32")]):
        verify("all", args, **kw)
        verify("any", args, **kw)
    verify("all", [np.ones((2, 3, 4), bool)], **kw)
    verify("any", [np.zeros((2, 3, 4), bool)], **kw)


def test_reductions_of_scalars_and_vectors() -> None:
    for name in ("sum", "max", "min", "mean", "prod", "all", "any"):
        verify(name, [np.array(1.5, "float32")])
        verify(name, [randf(5)], axis=[0])
        verify(name, [randf(5)], axis=[0], keepdims=True)


def test_max_with_infinities_and_empty_reductions() -> None:
    x = np.array([[-np.inf, -np.inf], [1.0, np.inf]], "float32")
    verify("max", [x], axis=[1])
    verify("min", [x], axis=[1])
    verify("max", [np.zeros((3, 0), "float32")], axis=[1])
    verify("min", [np.zeros((3, 0), "int32")], axis=[1])
    verify("sum", [np.zeros((3, 0), "float32")], axis=[1])


def test_integer_mean_divides_toward_zero() -> None:
    verify("mean", [np.array([[-7, 2], [7, 0], [-1, 0]], "int32")], axis=[1])
    verify("mean", [np.full((2, 200), 3, "int8")], axis=[1])  # count 200 wraps in int8


@pytest.mark.parametrize("kw", AXES[:7])
@pytest.mark.parametrize("unbiased", [False, True])
def test_variance(kw: dict, unbiased: bool) -> None:  # type: ignore[type-arg]
    arrays = [randf(2, 3, 4), randi(2, 3, 4, lo=-5, hi=6)]
    if unbiased and kw.get("exclude") and len(kw["axis"]) == 3:
        arrays = arrays[:1]  # an integer division by count - 1 = 0 is an error
    for x in arrays:
        axes = kw["axis"]
        keep_axes = tuple(range(3)) if axes is None else tuple(a % 3 for a in axes)
        if kw.get("exclude"):
            keep_axes = tuple(a for a in range(3) if a not in keep_axes)
        m = np.mean(x, axis=keep_axes, keepdims=True).astype(x.dtype)
        verify("variance", [x, m], unbiased=unbiased, **kw)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("last", [False, True])
@pytest.mark.parametrize("kw", AXES[:7])
def test_argmax_argmin(name: str, last: bool, kw: dict) -> None:  # type: ignore[type-arg]
    verify(name, [randf(2, 3, 4)], select_last_index=last, **kw)
    ties = randi(2, 3, 4, lo=0, hi=3)  # many ties
    verify(name, [ties], select_last_index=last, **kw)
    verify(name, [ties.astype("int8")], select_last_index=last, **kw)


def test_argmax_at_the_extremes_of_the_dtype() -> None:
    x = np.array([[-128, -128, -128], [127, 127, -128]], "int8")
    for name in ("argmax", "argmin"):
        for last in (False, True):
            verify(name, [x], axis=[1], select_last_index=last)
    f = np.array([[-np.inf, -np.inf], [np.inf, np.inf]], "float32")
    for name in ("argmax", "argmin"):
        verify(name, [f], axis=[1])
        verify(name, [f], axis=[1], select_last_index=True)


# ------------------------------------------------------------------------------------ NaN


def nan_arrays() -> list[np.ndarray]:
    """(2, 3, 4) float32 arrays with NaNs: all NaN, NaNs among numbers (with infinities and
    ties), one NaN late in a row."""
    some = randf(2, 3, 4)
    some[ARRAYS.rng.random((2, 3, 4)) < 0.35] = np.nan
    some[0, 1, :2] = [np.inf, -np.inf]
    one = np.round(randf(2, 3, 4))
    one[1, 2, 3] = np.nan
    return [np.full((2, 3, 4), np.nan, "float32"), some, one]


def verify_compiled(name: str, x: np.ndarray, **kw: object) -> None:
    """The compute of `name` on `x`, scheduled, compiled and run, equals the reference
    (NaN where the reference has NaN)."""
    p = placeholder(x.shape, str(x.dtype), "p0")
    out, attrs = apply_compute(name, [p], **kw)
    (got,), _ = run_default_schedule([p], [out], [x])
    want = implementation_for(get_op(name))([x], attrs)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want, err_msg=f"{name} {kw}")


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("last", [False, True])
def test_arg_reductions_follow_numpys_nan_rule(name: str, last: bool) -> None:
    """A NaN is the extreme and the first one wins (the last with `select_last_index`)."""
    for x in nan_arrays():
        for kw in AXES:
            verify(name, [x], select_last_index=last, **kw)
        for kw in AXES[:5]:  # compiled: the forms that read the data
            verify_compiled(name, x, select_last_index=last, **kw)
    x = np.array([[1.0, np.nan, 3.0, np.nan], [np.nan, 2.0, 2.0, 0.0]], "float64")
    verify(name, [x], axis=[1], select_last_index=last)
    verify_compiled(name, x, axis=[1], select_last_index=last)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_propagate_nan(name: str) -> None:
    """Like the reference (numpy's max/min), evaluated and compiled."""
    for x in nan_arrays():
        for kw in AXES[:5]:
            verify(name, [x], **kw)
            verify_compiled(name, x, **kw)
    wide = ARRAYS.uniform(3, 67)
    wide[1, 40] = np.nan  # a row long enough to be vectorized
    verify_compiled(name, wide, axis=[1])


def test_argmax_without_reduced_axes_is_zero() -> None:
    verify("argmax", [randf(2, 3)], axis=[1, 0], exclude=True)
    verify("argmin", [randf(2, 3)], axis=[0, 1], exclude=True)


# ------------------------------------------------------------------------------- coverage


def test_every_reduce_op_has_a_compute_and_a_test() -> None:
    names = declared_op_names(family_module)
    assert len(names) == 10
    assert sorted(n for n in names if not has_compute(get_op(n))) == []
    assert names - op_names_called_in(__file__, "verify") == set()
