"""Relations of sorting, top-k, scans and einsum against numpy."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from relay.lang import (
    ANY,
    IncompleteType,
    ShapeVar,
    TensorType,
    TupleType,
    get_op,
)
from relay.testing.relations import StandaloneContext, f32
from relay.testing.relations import op_call_type as call_type
from relay.testing.relations import op_type_error as type_error
from relay.typecheck import relation_for
from relay.typecheck.relations.algorithm import einsum_shape


def Ctx(final=True):
    """A context that expects no unification."""
    return StandaloneContext(final, strict=True)


shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


@given(shapes, st.data())
def test_sorting_matches_numpy(shape, data):
    x = np.zeros(shape, dtype="float32")
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    assert call_type("sort", f32(*shape), axis=axis) == f32(*np.sort(x, axis).shape)
    expected = np.argsort(x, axis).shape
    assert call_type("argsort", f32(*shape), axis=axis) == TensorType(expected, "int32")
    got = call_type("argsort", f32(*shape), axis=axis, dtype="int64")
    assert got == TensorType(expected, "int64")


@given(shapes, st.data())
def test_topk_matches_numpy(shape, data):
    x = np.zeros(shape, dtype="float32")
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    k = data.draw(st.integers(-1, shape[axis]))
    kept = shape[axis] if k < 1 else k
    values = np.take(np.sort(x, axis), np.arange(kept), axis=axis)
    indices = np.take(np.argsort(x, axis), np.arange(kept), axis=axis)
    both = call_type("topk", f32(*shape), k=k, axis=axis)
    assert both == TupleType([f32(*values.shape), TensorType(indices.shape, "int32")])
    got = call_type("topk", f32(*shape), k=k, axis=axis, ret_type="values")
    assert got == f32(*values.shape)
    got = call_type("topk", f32(*shape), k=k, axis=axis, ret_type="indices", dtype="int64")
    assert got == TensorType(indices.shape, "int64")


@given(st.lists(st.integers(1, 4), max_size=3).map(tuple), st.data())
def test_scans_match_numpy(shape, data):
    x = np.zeros(shape, dtype="float32")
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1)) if shape else None
    dtype = data.draw(st.sampled_from([None, "float64", "int32"]))
    expected = np.cumsum(x, axis=axis, dtype=dtype)
    for name in ("cumsum", "cumprod"):
        got = call_type(name, f32(*shape), axis=axis, dtype=dtype)
        assert got == TensorType(expected.shape, str(expected.dtype))


@st.composite
def einsum_case(draw):
    letters = "abcdeXY"
    sizes = {c: draw(st.integers(1, 3)) for c in letters}
    count = draw(st.integers(1, 3))
    dots = draw(st.booleans())
    ell = tuple(draw(st.lists(st.integers(1, 3), max_size=2))) if dots else ()
    terms, shapes_ = [], []
    for _ in range(count):
        term = "".join(draw(st.lists(st.sampled_from(letters), max_size=3)))
        shape = [sizes[c] for c in term]
        if dots and draw(st.booleans()):
            cut = draw(st.integers(0, len(term)))
            stretch = ell[draw(st.integers(0, len(ell))) :]
            stretch = tuple(1 if draw(st.booleans()) else d for d in stretch)
            term = term[:cut] + "..." + term[cut:]
            shape = shape[:cut] + list(stretch) + shape[cut:]
        terms.append(term)
        shapes_.append(tuple(shape))
    equation = ",".join(terms)
    if draw(st.booleans()):
        used = sorted(set("".join(terms).replace(".", "")))
        out = "".join(draw(st.permutations(used))[: draw(st.integers(0, len(used)))])
        if "..." in equation and draw(st.booleans()):
            out = "..." + out
        equation += "->" + out
    return equation, shapes_


@given(einsum_case())
def test_einsum_matches_numpy(case):
    equation, shapes_ = case
    expected = np.einsum(equation, *[np.zeros(s, dtype="float32") for s in shapes_]).shape
    assert einsum_shape(equation, shapes_, True) == expected
    got = call_type("einsum", *[f32(*s) for s in shapes_], tuple_arg=True, equation=equation)
    assert got == f32(*expected)


def test_algorithm_errors():
    assert "k=5 is larger than axis 1" in type_error("topk", f32(2, 4), k=5)
    assert '`ret_type` must be one of "both", "values", "indices"' in type_error(
        "topk", f32(2, 4), k=1, ret_type="all"
    )
    assert "axis 2 is out of range" in type_error("cumsum", f32(2, 4), axis=2)
    message = type_error("einsum", f32(2, 3), f32(4, 5), tuple_arg=True, equation="ij,jk->ik")
    assert 'equation "ij,jk->ik": label j has size 3 and 4' in message
    assert "has 2 input terms, but there are 1 tensors" in type_error(
        "einsum", f32(2, 3), tuple_arg=True, equation="ij,jk"
    )
    assert "output label z is not an input" in type_error(
        "einsum", f32(2, 3), tuple_arg=True, equation="ij->z"
    )
    assert 'term "ij" names 2 axes, but tensor 0 has shape (2, 3, 4)' in type_error(
        "einsum", f32(2, 3, 4), tuple_arg=True, equation="ij"
    )
    assert "same dtype" in type_error(
        "einsum", f32(2), TensorType((2,), "int32"), tuple_arg=True, equation="i,i"
    )


def test_unknown_dims_and_inputs():
    n = ShapeVar("n")
    assert call_type("topk", f32(n, 4), k=2, ret_type="values") == f32(n, 2)
    assert call_type("cumsum", f32(ANY, 4)) == f32(ANY)
    assert einsum_shape("ij,jk->ik", [(n, 3), (3, ANY)], True) == (n, ANY)
    for name in ("argsort", "sort", "topk", "cumsum", "cumprod"):
        op = get_op(name)
        attrs = op.make_attrs(k=1) if name == "topk" else op.make_attrs()
        assert relation_for(op)([IncompleteType()], attrs, Ctx()) is None
    op = get_op("einsum")
    partly = TupleType([f32(2), IncompleteType()])
    assert relation_for(op)([partly], op.make_attrs(equation="i,i"), Ctx()) is None
