"""Compute definitions of argsort, sort, topk (extern merge sort), cumsum, cumprod
(extern scans) and einsum against the reference implementations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend.lower.computes import compute_for
from relay.backend.runtime.op_impls import implementation_for
from relay.backend.te import ComputeOp, ExternOp, placeholder
from relay.backend.te.evaluate import evaluate
from relay.lang import get_op
from relay.lang.types import TensorType
from relay.testing.relations import op_call_type

RNG = np.random.default_rng(7)


def run_both(name, *arrays, tuple_arg=False, **attrs):
    """(compute results, reference results) of one call, each a list of arrays."""
    op = get_op(name)
    types = [TensorType(a.shape, str(a.dtype)) for a in arrays]
    out_type = op_call_type(name, *types, tuple_arg=tuple_arg, **attrs)
    op_attrs = op.make_attrs(**attrs) if op.attrs_schema is not None else None
    holders = [placeholder(a.shape, str(a.dtype), f"in{i}") for i, a in enumerate(arrays)]
    outs = compute_for(op)(op_attrs, holders, out_type)
    got = evaluate(outs, dict(zip(holders, arrays)), strict_select=True)
    args = [tuple(arrays)] if tuple_arg else list(arrays)
    want = implementation_for(op)(args, op_attrs)
    return got, list(want) if isinstance(want, tuple) else [want], outs


def check(name, *arrays, tuple_arg=False, **attrs):
    """The compute of `name` equals the reference: exactly for integers, within 1e-5
    relative (plus 1e-5 of the largest magnitude, for cancellation) for floats."""
    got, want, outs = run_both(name, *arrays, tuple_arg=tuple_arg, **attrs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        if w.dtype.kind == "f":
            scale = float(np.max(np.abs(w[np.isfinite(w)]), initial=1.0))
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * scale)
        else:
            np.testing.assert_array_equal(g, w)
    return outs


def normal(*shape, dtype="float32"):
    return RNG.normal(size=shape).astype(dtype)


def ints(*shape, dtype="int32", lo=-5, hi=6):
    return RNG.integers(lo, hi, shape).astype(dtype)


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
    (out,) = check("argsort", x, axis=axis, is_ascend=ascending)
    assert isinstance(out.op, ExternOp) and out.op.tag == "argsort"
    check("sort", x, axis=axis, is_ascend=ascending)


def test_argsort_dtypes_and_nans():
    x = normal(4, 6)
    x[0, 2] = x[1, 0] = x[1, 5] = x[3, 3] = np.nan
    x[2, 1] = x[2, 4]
    for ascending in (True, False):
        check("argsort", x, axis=1, is_ascend=ascending)
        check("argsort", x, axis=0, is_ascend=ascending, dtype="int64")
        check("sort", x, axis=1, is_ascend=ascending)
    check("argsort", ties(2, 3, 5), axis=1, dtype="float32")


@pytest.mark.parametrize("ret_type", ["both", "values", "indices"])
@pytest.mark.parametrize("k", [1, 3, 0, None, 6])
@pytest.mark.parametrize("ascending", [False, True])
def test_topk(ret_type, k, ascending):
    x = ties(2, 6, 3)
    outs = check("topk", x, k=k, axis=1, ret_type=ret_type, is_ascend=ascending)
    assert len(outs) == (2 if ret_type == "both" else 1)
    check("topk", normal(7, 4), k=k, axis=0, ret_type=ret_type, is_ascend=ascending, dtype="int64")


# ---------------------------------------------------------------------------------- scans


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("exclusive", [False, True])
def test_scans(name, axis, exclusive):
    (out,) = check(name, normal(3, 4, 2), axis=axis, exclusive=exclusive)
    assert isinstance(out.op, ExternOp) and out.op.tag == name
    check(name, ints(3, 5, dtype="int8", lo=-128, hi=128), axis=axis, exclusive=exclusive)
    check(name, ints(3, 5, dtype="int8"), axis=axis, exclusive=exclusive, dtype="int32")
    check(name, ints(4, 3), axis=axis, exclusive=exclusive, dtype="float32")


def test_scans_of_small_shapes():
    check("cumsum", normal(1), axis=0)
    check("cumprod", normal(5), axis=None, exclusive=True)
    check("cumsum", np.asarray(3.0, "float32"), axis=None)


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
    (out,) = check("einsum", *arrays, tuple_arg=True, equation=equation)
    assert isinstance(out.op, ComputeOp)
    int_arrays = [ints(*s, dtype="int8", lo=-128, hi=128) for s in shapes]
    check("einsum", *int_arrays, tuple_arg=True, equation=equation)
