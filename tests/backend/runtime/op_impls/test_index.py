"""Reference implementations of take, gather, scatter, one_hot and friends."""

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


X = np.arange(24, dtype="float32").reshape(2, 3, 4)


def test_take_modes_by_hand():
    v = np.array([10, 11, 12, 13], "int32")
    idx = np.array([-1, 0, 3, 4, 9], "int32")
    assert call("take", v, idx, axis=0, mode="clip").tolist() == [10, 10, 13, 13, 13]
    assert call("take", v, idx, axis=0, mode="wrap").tolist() == [13, 10, 13, 10, 11]
    assert call("take", v, np.array([2, 1]), axis=0, mode="fast").tolist() == [12, 11]
    with pytest.raises(EvalError):
        call("take", v, idx, axis=0, mode="fast")
    flat = call("take", X, np.array([[0, 23], [30, 5]]), axis=None)
    assert flat.tolist() == [[0, 23], [23, 5]]


@settings(max_examples=30)
@given(st.integers(-3, 2), st.integers(0, 2**31))
def test_take_along_an_axis_matches_loops(axis, seed):
    rng = np.random.default_rng(seed)
    idx = rng.integers(-2, 6, (2, 3))
    out = call("take", X, idx, axis=axis, mode="clip")
    ax = axis % 3
    n = X.shape[ax]
    assert out.shape == X.shape[:ax] + idx.shape + X.shape[ax + 1 :]
    for pos in itertools.product(*map(range, out.shape)):
        before, picked, after = pos[:ax], pos[ax : ax + 2], pos[ax + 2 :]
        src = min(max(idx[picked], 0), n - 1)
        assert out[pos] == X[(*before, src, *after)]


def test_take_with_batch_dims_pairs_the_leading_axes():
    idx = np.array([[2, 0], [1, 1]], "int64")  # batch 2 (axis 0 of data), 2 picks each
    out = call("take", X, idx, axis=2, batch_dims=1)
    assert out.shape == (2, 3, 2)
    for b, j, k in itertools.product(range(2), range(3), range(2)):
        assert out[b, j, k] == X[b, j, idx[b, k]]
    with pytest.raises(EvalError):
        call("take", X, np.zeros((3, 1), "int32"), axis=2, batch_dims=1)


def test_gather_matches_loops_and_checks_range():
    idx = np.array([[[3, 0], [1, 1]], [[2, 2], [0, 3]]])  # smaller than X off the axis
    out = call("gather", X, idx, axis=2)
    for i, j, k in itertools.product(range(2), range(2), range(2)):
        assert out[i, j, k] == X[i, j, idx[i, j, k]]
    out0 = call("gather", X, np.array([[[1], [0]]]), axis=-3)
    assert out0.tolist() == [[[X[1, 0, 0]], [X[0, 1, 0]]]]
    with pytest.raises(EvalError):
        call("gather", X, np.full((2, 3, 4), 4), axis=2)


def test_gather_nd_with_and_without_batch_dims():
    idx = np.array([[1, 0, 1], [2, 0, 0]])  # M=2 leading coordinates, 3 lookups
    out = call("gather_nd", X, idx)
    assert out.shape == (3, 4)
    for j in range(3):
        np.testing.assert_array_equal(out[j], X[idx[0, j], idx[1, j]])
    bidx = np.array([[[2, 0], [1, 1]]])  # M=1, batch (2,), 2 lookups per batch
    bout = call("gather_nd", X, bidx, batch_dims=1)
    assert bout.shape == (2, 2, 4)
    for b, j in itertools.product(range(2), range(2)):
        np.testing.assert_array_equal(bout[b, j], X[b, bidx[0, b, j]])
    with pytest.raises(EvalError):
        call("gather_nd", X, np.array([[2]]))


def _scatter_loop(data, idx, upd, axis, reduction):
    out = data.copy()
    for pos in itertools.product(*map(range, idx.shape)):  # row-major: along the axis in order
        target = list(pos)
        target[axis] = idx[pos] % data.shape[axis]
        target = tuple(target)
        u = upd[pos]
        if reduction == "update":
            out[target] = u
        elif reduction == "add":
            out[target] += u
        elif reduction == "mul":
            out[target] *= u
        elif reduction == "min":
            out[target] = min(out[target], u)
        elif reduction == "max":
            out[target] = max(out[target], u)
        else:
            out[target] = (out[target] + u) / 2
    return out


@pytest.mark.parametrize("reduction", ["update", "add", "mul", "min", "max", "mean"])
@pytest.mark.parametrize("axis", [0, -1])
def test_scatter_elements_applies_updates_in_order(reduction, axis):
    rng = np.random.default_rng(3)
    data = rng.normal(size=(3, 4)).astype("float64")
    idx = rng.integers(-3, 3, (2, 3))  # duplicates along the axis, negative indices
    upd = rng.normal(size=(2, 3))
    out = call("scatter_elements", data, idx, upd, axis=axis, reduction=reduction)
    np.testing.assert_allclose(out, _scatter_loop(data, idx, upd, axis % 2, reduction))
    assert out is not data


def test_one_hot_by_hand_and_on_another_axis():
    idx = np.array([0, 2, 5, -1], "int32")
    on, off = np.array(7, "int8"), np.array(1, "int8")
    out = call("one_hot", idx, on, off, depth=3)
    assert out.dtype == np.int8
    assert out.tolist() == [[7, 1, 1], [1, 1, 7], [1, 1, 1], [1, 1, 1]]
    first = call("one_hot", idx, on, off, depth=3, axis=0, dtype="float32")
    assert first.dtype == np.float32 and first.shape == (3, 4)
    np.testing.assert_array_equal(first, out.T)


def test_sparse_to_dense():
    out = call(
        "sparse_to_dense",
        np.array([[0, 1], [2, 3], [0, 1], [5, 0]]),
        np.array([1.5, 2.5, 3.5, 9.0], "float32"),
        np.array(-1.0, "float32"),
        output_shape=[3, 4],
    )
    want = np.full((3, 4), -1.0, "float32")
    want[0, 1], want[2, 3] = 3.5, 2.5  # the later duplicate wins; out of range is ignored
    np.testing.assert_array_equal(out, want)
    vec = call(
        "sparse_to_dense",
        np.array([1, 3]),
        np.array(4, "int32"),
        np.array(0, "int32"),
        output_shape=[5],
    )
    assert vec.tolist() == [0, 4, 0, 4, 0]


def test_adv_index_is_numpy_advanced_indexing():
    i0 = np.array([[1], [0]])
    i1 = np.array([2, 0, 1])
    out = call("adv_index", (X, i0, i1))
    np.testing.assert_array_equal(out, X[i0, i1])
    assert out.shape == (2, 3, 4)
    np.testing.assert_array_equal(call("adv_index", (X, np.array([1, 1]))), X[[1, 1]])
    with pytest.raises(EvalError):
        call("adv_index", (X, np.array([2])))


def test_unravel_index():
    out = call("unravel_index", np.array([7, 19, 0], "int64"), np.array([4, 5], "int64"))
    assert out.dtype == np.int64
    assert out.tolist() == [list(c) for c in np.unravel_index([7, 19, 0], (4, 5))]
    # past the end every coordinate wraps: 23 = 4 * 5 + 3 -> (4 % 4, 3)
    assert call("unravel_index", np.array(23, "int32"), np.array([4, 5])).tolist() == [0, 3]


def _set_diag_loop(x, diag, k1, k2, super_right, sub_right):
    out = x.copy()
    m, n = x.shape[-2:]
    max_len = diag.shape[-1]
    for k in range(k1, k2 + 1):
        length = min(m + min(0, k), n - max(0, k))
        right = super_right if k >= 0 else sub_right
        offset = max_len - length if right else 0
        for t in range(length):
            i, j = (t, t + k) if k >= 0 else (t - k, t)
            row = diag[..., t + offset] if k1 == k2 else diag[..., k2 - k, t + offset]
            out[..., i, j] = row
    return out


@pytest.mark.parametrize("k1, k2", [(0, 0), (-1, 1), (1, 2), (-2, 0), (2, 2)])
@pytest.mark.parametrize("super_right, sub_right", [(True, False), (False, True)])
def test_matrix_set_diag_matches_the_definition(k1, k2, super_right, sub_right):
    x = np.zeros((2, 3, 4), "float32")
    max_len = max(min(3 + min(0, k), 4 - max(0, k)) for k in range(k1, k2 + 1))
    rows = () if k1 == k2 else (k2 - k1 + 1,)
    diag = np.arange(np.prod((2, *rows, max_len)), dtype="float32").reshape(2, *rows, max_len) + 1
    out = call(
        "matrix_set_diag",
        x,
        diag,
        k1=k1,
        k2=k2,
        super_diag_right_align=super_right,
        sub_diag_right_align=sub_right,
    )
    np.testing.assert_array_equal(out, _set_diag_loop(x, diag, k1, k2, super_right, sub_right))


def test_sequence_mask_on_either_time_axis():
    x = np.ones((4, 3, 2), "float32")
    lengths = np.array([1, 4, 0], "int32")
    out = call("sequence_mask", x, lengths, mask_value=-5.0, axis=0)
    for t, b in itertools.product(range(4), range(3)):
        assert (out[t, b] == (-5 if t >= lengths[b] else 1)).all()
    outb = call("sequence_mask", np.ones((3, 4)), lengths, axis=1)
    for b, t in itertools.product(range(3), range(4)):
        assert outb[b, t] == (0 if t >= lengths[b] else 1)
