"""Reference implementations of argsort, sort, topk, cumsum, cumprod and einsum."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend.runtime.op_impls import IMPLS
from relay.lang import get_op


def call(name, *args, **attrs):
    op = get_op(name)
    return IMPLS[op](list(args), op.make_attrs(**attrs))


def stable_order(values, ascending):
    """Indices of a stable sort, by Python's own (stable) `sorted`."""
    key = (lambda i: values[i]) if ascending else (lambda i: -values[i])
    return sorted(range(len(values)), key=key)


@settings(max_examples=50)
@given(st.lists(st.integers(-3, 3), min_size=1, max_size=12), st.booleans())
def test_argsort_is_stable_in_both_directions(values, ascending):
    x = np.array(values, "int32")
    out = call("argsort", x, is_ascend=ascending)
    assert out.dtype == np.int32
    assert out.tolist() == stable_order(values, ascending)
    srt = call("sort", x, is_ascend=ascending)
    assert srt.tolist() == sorted(values, reverse=not ascending)


def test_argsort_along_an_axis_and_dtype():
    x = np.array([[3, 1, 2], [0, 0, -1]], "float32")
    assert call("argsort", x, axis=0, dtype="int64").tolist() == [[1, 1, 1], [0, 0, 0]]
    assert call("argsort", x, axis=0, dtype="int64").dtype == np.int64
    assert call("sort", x, axis=-1, is_ascend=False).tolist() == [[3, 2, 1], [0, 0, -1]]


def test_topk_return_types_and_k():
    x = np.array([[1, 5, 5, 2], [4, 4, 0, 7]], "int32")
    values, indices = call("topk", x, k=2)
    assert values.tolist() == [[5, 5], [7, 4]] and indices.tolist() == [[1, 2], [3, 0]]
    assert indices.dtype == np.int32
    low = call("topk", x, k=1, is_ascend=True, ret_type="values")
    assert low.tolist() == [[1], [0]]
    assert call("topk", x, k=0, ret_type="indices").shape == (2, 4)  # k < 1: everything
    along0 = call("topk", x, k=1, axis=0, ret_type="indices", dtype="int64")
    assert along0.dtype == np.int64 and along0.tolist() == [[1, 0, 0, 1]]


@pytest.mark.parametrize(
    "name, ufunc, identity", [("cumsum", "add", 0), ("cumprod", "multiply", 1)]
)
def test_scans_match_loops(name, ufunc, identity):
    x = np.array([[1, 2, 3], [4, 5, 6]], "int32")
    for axis in (0, 1, -1, None):
        flat = x.ravel() if axis is None else np.moveaxis(x, axis or 0, -1)
        inclusive = np.zeros_like(flat)
        exclusive = np.zeros_like(flat)
        for pos in np.ndindex(flat.shape[:-1]):
            acc = identity
            for i in range(flat.shape[-1]):
                exclusive[(*pos, i)] = acc
                acc = getattr(np, ufunc)(acc, flat[(*pos, i)])
                inclusive[(*pos, i)] = acc
        if axis is not None:
            inclusive = np.moveaxis(inclusive, -1, axis)
            exclusive = np.moveaxis(exclusive, -1, axis)
        assert call(name, x, axis=axis).tolist() == inclusive.tolist()
        assert call(name, x, axis=axis, exclusive=True).tolist() == exclusive.tolist()


def test_scans_accumulate_in_the_requested_dtype():
    x = np.array([100, 100, 100], "int8")
    wrapped = call("cumsum", x)
    assert wrapped.dtype == np.int8 and wrapped.tolist() == [100, -56, 44]
    wide = call("cumsum", x, dtype="int32")
    assert wide.dtype == np.int32 and wide.tolist() == [100, 200, 300]
    h = call("cumsum", np.full(3000, 1, "float16"))
    assert h.dtype == np.float16 and h[-1] == 2048  # float16 stops counting at 2048


def test_einsum():
    a = np.arange(6, dtype="float32").reshape(2, 3)
    b = np.arange(12, dtype="float32").reshape(3, 4)
    out = call("einsum", (a, b), equation="ij,jk->ik")
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, a @ b)
    assert call("einsum", (a,), equation="ij->").tolist() == 15
    trace = call("einsum", (np.eye(3, dtype="int8") * 50,), equation="ii")
    assert trace.dtype == np.int8 and trace.tolist() == 150 - 256
