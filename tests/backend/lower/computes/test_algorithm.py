"""Compute definitions of argsort, sort, topk (extern merge sort), cumsum, cumprod
(extern scans) and einsum against the reference implementations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend.te import ComputeOp, ExternOp
from relay.testing.compute_check import RandomArrays, check_compute

ARRAYS = RandomArrays(7, int_range=(-5, 6))
RNG = ARRAYS.rng
normal, ints = ARRAYS.normal, ARRAYS.ints


def ties(*shape, dtype="float32"):
    """Data with many equal elements (stability matters)."""
    return RNG.integers(-3, 4, shape).astype(dtype)


# -------------------------------------------------------------------------------- sorting


@settings(max_examples=30)
@given(
    n=st.integers(1, 17),
    axis=st.sampled_from([0, 1, -1]),
    ascending=st.booleans(),
    dtype=st.sampled_from(["float32", "int32", "int8", "float64"]),
    seed=st.integers(0, 2**16),
)
def test_argsort_and_sort_are_stable(n, axis, ascending, dtype, seed):
    rng = np.random.default_rng(seed)
    shape = [3, n]
    x = rng.integers(-3, 4, shape).astype(dtype)
    (out,) = check_compute("argsort", [x], axis=axis, is_ascend=ascending)
    assert isinstance(out.op, ExternOp) and out.op.tag == "argsort"
    check_compute("sort", [x], axis=axis, is_ascend=ascending)


def test_argsort_dtypes_and_nans():
    x = normal(4, 6)
    x[0, 2] = x[1, 0] = x[1, 5] = x[3, 3] = np.nan
    x[2, 1] = x[2, 4]
    for ascending in (True, False):
        check_compute("argsort", [x], axis=1, is_ascend=ascending)
        check_compute("argsort", [x], axis=0, is_ascend=ascending, dtype="int64")
        check_compute("sort", [x], axis=1, is_ascend=ascending)
    check_compute("argsort", [ties(2, 3, 5)], axis=1, dtype="float32")


@pytest.mark.parametrize("ret_type", ["both", "values", "indices"])
@pytest.mark.parametrize("k", [1, 3, 0, None, 6])
@pytest.mark.parametrize("ascending", [False, True])
def test_topk(ret_type, k, ascending):
    x = ties(2, 6, 3)
    outs = check_compute("topk", [x], k=k, axis=1, ret_type=ret_type, is_ascend=ascending)
    assert len(outs) == (2 if ret_type == "both" else 1)
    check_compute(
        "topk", [normal(7, 4)], k=k, axis=0, ret_type=ret_type, is_ascend=ascending, dtype="int64"
    )


# ---------------------------------------------------------------------------------- scans


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("exclusive", [False, True])
def test_scans(name, axis, exclusive):
    (out,) = check_compute(name, [normal(3, 4, 2)], axis=axis, exclusive=exclusive)
    assert isinstance(out.op, ExternOp) and out.op.tag == name
    check_compute(name, [ints(3, 5, dtype="int8", lo=-128, hi=128)], axis=axis, exclusive=exclusive)
    check_compute(name, [ints(3, 5, dtype="int8")], axis=axis, exclusive=exclusive, dtype="int32")
    check_compute(name, [ints(4, 3)], axis=axis, exclusive=exclusive, dtype="float32")


def test_scans_of_small_shapes():
    check_compute("cumsum", [normal(1)], axis=0)
    check_compute("cumprod", [normal(5)], axis=None, exclusive=True)
    check_compute("cumsum", [np.asarray(3.0, "float32")], axis=None)


# --------------------------------------------------------------------------------- einsum


@pytest.mark.parametrize(
    ("equation", "shapes"),
    [
        ("ij,jk->ik", [(3, 4), (4, 5)]),
        ("ij,jk", [(3, 4), (4, 5)]),
        ("ij->ji", [(3, 4)]),
        ("ij->", [(3, 4)]),
        ("ii", [(4, 4)]),
        ("ii->i", [(4, 4)]),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
        ("i,j->ij", [(3,), (4,)]),
        ("i,i->", [(5,), (5,)]),
        ("...ij,...jk->...ik", [(2, 1, 3, 4), (3, 4, 2)]),
        ("...i,i", [(2, 3, 4), (4,)]),
        ("i...->...", [(3, 2, 2)]),
        ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 2)]),
        ("iij->j", [(3, 3, 2)]),
    ],
)
def test_einsum_forms(equation, shapes):
    arrays = [normal(*s) for s in shapes]
    (out,) = check_compute("einsum", arrays, tuple_arg=True, equation=equation)
    assert isinstance(out.op, ComputeOp)
    int_arrays = [ints(*s, dtype="int8", lo=-128, hi=128) for s in shapes]
    check_compute("einsum", int_arrays, tuple_arg=True, equation=equation)
