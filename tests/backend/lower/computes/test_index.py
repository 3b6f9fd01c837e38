"""Compute definitions of the index family (lang/opdefs/index.py) against the reference
implementations, evaluated with the vectorized TE evaluator."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pytest
import relay.lang.opdefs.index as family_module
from relay.backend.lower.computes import has_compute
from relay.lang.op import get_op
from relay.testing.compute_check import (
    RandomArrays,
    check_compute,
    declared_op_names,
    op_names_called_in,
)

ARRAYS = RandomArrays(5)
randf, randi = ARRAYS.uniform, ARRAYS.ints


verify = partial(check_compute, atol=1e-6)
"""`check_compute`, to an absolute 1e-6 for floats (the coverage test looks for its calls)."""


# ---------------------------------------------------------------------------------- gathers


@pytest.mark.parametrize("mode", ["clip", "wrap", "fast"])
@pytest.mark.parametrize(
    ("shape", "ishape", "axis", "batch_dims"),
    [((4, 5), (3,), 0, 0), ((4, 5), (2, 3), 1, 0), ((4, 5, 6), (), 1, 0), ((3, 5), (3, 2), 1, 1),
     ((3, 5, 2), (3, 4), -2, -1), ((4, 5), (2, 3), None, 0), ((6,), (), None, 0)],
)  # fmt: skip
def test_take(mode: str, shape: tuple, ishape: tuple, axis: int | None, batch_dims: int) -> None:  # type: ignore[type-arg]
    n = math.prod(shape) if axis is None else shape[axis]
    lo, hi = (0, n) if mode == "fast" else (-n - 2, n + 3)
    idx = randi(*ishape, lo=lo, hi=hi)
    verify("take", [randf(*shape), idx], axis=axis, mode=mode, batch_dims=batch_dims)
    verify(
        "take", [randi(*shape), idx.astype("int64")], axis=axis, mode=mode, batch_dims=batch_dims
    )


@pytest.mark.parametrize(("shape", "ishape", "axis"), [((4, 5), (4, 3), 1), ((4, 5), (2, 5), 0),
                                                      ((3, 4, 2), (3, 2, 2), -2), ((5,), (7,), 0)])  # fmt: skip
def test_gather(shape: tuple, ishape: tuple, axis: int) -> None:  # type: ignore[type-arg]
    idx = randi(*ishape, lo=0, hi=shape[axis])
    verify("gather", [randf(*shape), idx], axis=axis)
    verify("gather", [randi(*shape), idx.astype("int64")], axis=axis)


@pytest.mark.parametrize(
    ("shape", "ishape", "batch_dims"),
    [((4, 5), (2, 3), 0), ((4, 5, 6), (1, 7), 0), ((4, 5), (2,), 0), ((3, 4, 5), (1, 3), 1),
     ((3, 4, 5), (2, 3, 2), 1), ((4, 5, 2), (3, 2, 2), 0)],
)  # fmt: skip
def test_gather_nd(shape: tuple, ishape: tuple, batch_dims: int) -> None:  # type: ignore[type-arg]
    m = ishape[0]
    idx = np.stack([randi(*ishape[1:], lo=0, hi=shape[batch_dims + j]) for j in range(m)])
    if batch_dims:
        idx = idx.reshape(ishape)
    verify("gather_nd", [randf(*shape), idx.astype("int32")], batch_dims=batch_dims)
    verify("gather_nd", [randi(*shape), idx.astype("int64")], batch_dims=batch_dims)


@pytest.mark.parametrize(
    ("shape", "ishapes"), [((4, 5, 6), [(3,)]), ((4, 5, 6), [(2, 3), (3,)]),
                           ((4, 5), [(2, 1), (1, 3)]), ((4, 5), [(), (2,)])],
)  # fmt: skip
def test_adv_index(shape: tuple, ishapes: list) -> None:  # type: ignore[type-arg]
    idx = [randi(*s, lo=0, hi=shape[j]) for j, s in enumerate(ishapes)]
    verify("adv_index", [randf(*shape), *idx], tuple_arg=True)
    verify("adv_index", [randi(*shape), *[i.astype("int64") for i in idx]], tuple_arg=True)


# ------------------------------------------------------------------------- scatter, dense


@pytest.mark.parametrize("reduction", ["update", "add", "mul", "min", "max", "mean"])
@pytest.mark.parametrize(("shape", "ishape", "axis"), [((4, 5), (3, 5), 0), ((4, 5), (2, 3), 1),
                                                      ((6,), (8,), 0), ((2, 3, 4), (2, 2, 4), -2)])  # fmt: skip
def test_scatter_elements(reduction: str, shape: tuple, ishape: tuple, axis: int) -> None:  # type: ignore[type-arg]
    n = shape[axis]
    idx = randi(*ishape, lo=-n, hi=n)  # duplicates and negative indices
    verify("scatter_elements", [randf(*shape), idx, randf(*ishape)], axis=axis, reduction=reduction)
    data = randi(*shape, lo=-20, hi=20, dtype="int8")
    upd = randi(*ishape, lo=-100, hi=100, dtype="int8")
    verify("scatter_elements", [data, idx.astype("int64"), upd], axis=axis, reduction=reduction)


@pytest.mark.parametrize("depth", [1, 4])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot(depth: int, axis: int) -> None:
    idx = randi(2, 3, lo=-1, hi=depth + 1)
    on, off = np.array(1.5, "float32"), np.array(-0.5, "float32")
    verify("one_hot", [idx, on, off], depth=depth, axis=axis, dtype="float32")
    verify("one_hot", [idx, on, off], depth=depth, axis=axis, dtype="int32")
    verify(
        "one_hot",
        [idx.astype("int64"), np.array(7, "int8"), np.array(0, "int8")],
        depth=depth,
        axis=axis,
        dtype="",
    )


@pytest.mark.parametrize(
    ("ishape", "vshape", "out"),
    [((4, 2), (4,), [3, 4]), ((5,), (5,), [6]), ((), (), [3]), ((3, 1), (), [3, 2]),
     ((4, 2), (1,), [3, 3]), ((0, 2), (0,), [2, 2])],
)  # fmt: skip
def test_sparse_to_dense(ishape: tuple, vshape: tuple, out: list) -> None:  # type: ignore[type-arg]
    hi = max(out) + 1  # some indices fall outside the output and are ignored
    idx = randi(*ishape, lo=0, hi=hi)
    verify("sparse_to_dense", [idx, randf(*vshape), np.array(-1.0, "float32")], output_shape=out)
    verify(
        "sparse_to_dense",
        [idx.astype("int64"), randi(*vshape), np.array(9, "int32")],
        output_shape=out,
    )


def test_sparse_to_dense_later_duplicates_win() -> None:
    idx = np.array([[0, 1], [2, 2], [0, 1]], "int32")
    verify(
        "sparse_to_dense",
        [idx, np.array([1, 2, 3], "int32"), np.array(0, "int32")],
        output_shape=[3, 3],
    )


@pytest.mark.parametrize(("ishape", "shape"), [((5,), (3, 4)), ((), (2, 3, 4)), ((4,), (7,))])
def test_unravel_index(ishape: tuple, shape: tuple) -> None:  # type: ignore[type-arg]
    idx = randi(*ishape, lo=0, hi=2 * math.prod(shape))
    verify("unravel_index", [idx, np.array(shape, "int32")])
    verify("unravel_index", [idx.astype("int64"), np.array(shape, "int64")])


@pytest.mark.parametrize(
    ("k1", "k2", "super_right", "sub_right"),
    [(0, 0, True, False), (1, 1, True, False), (-2, -2, True, False), (-1, 2, True, False),
     (-1, 2, False, True), (0, 1, False, False), (-2, 0, True, True)],
)  # fmt: skip
@pytest.mark.parametrize(("rows", "cols"), [(3, 4), (4, 3)])
def test_matrix_set_diag(
    k1: int, k2: int, super_right: bool, sub_right: bool, rows: int, cols: int
) -> None:
    batch = (2,)
    max_len = (
        min(rows, cols)
        if k1 == k2
        else max(min(cols - k, rows) if k >= 0 else min(cols, rows + k) for k in range(k1, k2 + 1))
    )
    diag_shape = (*batch, max_len) if k1 == k2 else (*batch, k2 - k1 + 1, max_len)
    if k1 == k2:
        diag_shape = (*batch, min(cols - k1, rows) if k1 >= 0 else min(cols, rows + k1))
    attrs = dict(k1=k1, k2=k2, super_diag_right_align=super_right, sub_diag_right_align=sub_right)
    verify("matrix_set_diag", [randf(*batch, rows, cols), randf(*diag_shape)], **attrs)
    verify("matrix_set_diag", [randi(*batch, rows, cols), randi(*diag_shape)], **attrs)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("mask_value", [0.0, -7.5])
def test_sequence_mask(axis: int, mask_value: float) -> None:
    shape = (5, 3, 2) if axis == 0 else (3, 5, 2)
    lengths = np.array([0, 2, 5], "int32")
    verify("sequence_mask", [randf(*shape), lengths], axis=axis, mask_value=mask_value)
    verify(
        "sequence_mask", [randi(*shape), lengths.astype("int64")], axis=axis, mask_value=mask_value
    )
    verify(
        "sequence_mask",
        [randf(*shape), lengths.astype("float32") - 0.5],
        axis=axis,
        mask_value=mask_value,
    )


# ------------------------------------------------------------------------------- coverage


def test_every_index_op_has_a_compute_and_a_test() -> None:
    names = declared_op_names(family_module)
    assert len(names) == 10
    assert sorted(n for n in names if not has_compute(get_op(n))) == []
    assert names - op_names_called_in(__file__, "verify") == set()
