"""Elementwise relations (numpy broadcasting) and the relation registry API."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from relay.lang import ANY, Call, Function, ShapeVar, TensorType, TypeCheckError, Var, get_op
from relay.lang.diagnostics import AttrsError
from relay.lang.op import Op, OpPattern, all_ops
from relay.lang.optable import MissingFacetError
from relay.typecheck import RELATIONS, RelationError, infer_expr, relation_for
from relay.typecheck.relations import elementwise, missing_relations
from relay.typecheck.relations.elementwise import (
    ARITHMETIC,
    BITWISE,
    COMPARISON,
    PREDICATES,
    UNARY,
    broadcast_shapes,
)

shapes = st.lists(st.integers(1, 4), max_size=4).map(tuple)


def _stretch(shape, data):
    """A shape that broadcasts with `shape`: some dims replaced by 1, some leading dropped."""
    out = [1 if data.draw(st.booleans()) else d for d in shape]
    drop = data.draw(st.integers(0, len(out)))
    return tuple(out[drop:])


def call_type(op_name, *arg_types, **attrs):
    params = [Var(f"p{i}", t) for i, t in enumerate(arg_types)]
    op = get_op(op_name)
    call = Call(op, params, op.make_attrs(**attrs))
    return infer_expr(Function(params, call)).type_of(call)


@given(st.data())
def test_broadcast_matches_numpy(data):
    base = data.draw(shapes)
    a, b = _stretch(base, data), _stretch(base, data)
    assert broadcast_shapes(a, b) == np.broadcast_shapes(a, b)
    assert call_type("add", TensorType(a, "float32"), TensorType(b, "float32")) == TensorType(
        np.broadcast_shapes(a, b), "float32"
    )


@given(shapes, shapes)
def test_broadcast_agrees_with_numpy_on_errors(a, b):
    try:
        expected = np.broadcast_shapes(a, b)
    except ValueError:
        with pytest.raises(RelationError, match="do not broadcast"):
            broadcast_shapes(a, b)
    else:
        assert broadcast_shapes(a, b) == expected


def test_broadcast_with_any_and_shape_variables():
    n = ShapeVar("n")
    assert broadcast_shapes((ANY, 3), (4, 1)) == (4, 3)
    assert broadcast_shapes((ANY,), (ANY,)) == (ANY,)
    assert broadcast_shapes((n, 3), (1, 3)) == (n, 3)
    assert broadcast_shapes((n, 3), (n, 1)) == (n, 3)
    assert broadcast_shapes((n,), (4,), final=False) is None  # may still become 4
    with pytest.raises(RelationError, match="not known to be equal"):
        broadcast_shapes((n,), (4,), final=True)


def test_comparisons_give_bool_and_arithmetic_keeps_dtype():
    a, b = TensorType((2, 1), "int32"), TensorType((3,), "int32")
    for name in COMPARISON:
        assert call_type(name, a, b) == TensorType((2, 3), "bool")
    for name in ARITHMETIC:
        assert call_type(name, a, b) == TensorType((2, 3), "int32")
    for name in BITWISE:
        assert call_type(name, a, b) == TensorType((2, 3), "int32")


def test_unary_and_predicates():
    t = TensorType((2, 3), "float32")
    for name in UNARY:
        assert call_type(name, t) == t
    for name in PREDICATES:
        assert call_type(name, t) == TensorType((2, 3), "bool")
    assert call_type("clip", t, a_min=0.0, a_max=6.0) == t
    assert call_type("cast", t, dtype="int8") == TensorType((2, 3), "int8")
    assert call_type("cast_like", t, TensorType((), "int64")) == TensorType((2, 3), "int64")
    assert call_type("full_like", t, TensorType((), "float32")) == t
    assert call_type("zeros", shape=(4, 2), dtype="int32") == TensorType((4, 2), "int32")
    assert call_type("full", TensorType((), "int8"), shape=(3,)) == TensorType((3,), "int8")


def test_where_broadcasts_three_ways():
    cond = TensorType((4, 1, 1), "bool")
    x = TensorType((3, 1), "float32")
    y = TensorType((2,), "float32")
    assert call_type("where", cond, x, y) == TensorType((4, 3, 2), "float32")


@pytest.mark.parametrize(
    ("op_name", "args", "message"),
    [
        ("add", ("float32", "int32"), "different dtypes"),
        ("bitwise_and", ("float32", "float32"), "needs integer operands"),
        ("bitwise_not", ("float32",), "needs an integer input"),
        ("full_like", ("float32", "float32"), None),
    ],
)
def test_dtype_errors(op_name, args, message):
    types = [TensorType((2,), dtype) for dtype in args]
    if message is None:
        with pytest.raises(TypeCheckError, match="fill value must be a scalar"):
            call_type(op_name, *types)
        return
    with pytest.raises(TypeCheckError, match=message) as info:
        call_type(op_name, *types)
    assert info.value.message.startswith(f"{op_name}: ")


def test_relation_errors_name_the_shapes():
    with pytest.raises(TypeCheckError) as info:
        call_type("multiply", TensorType((2, 3), "float32"), TensorType((4,), "float32"))
    assert info.value.message == (
        "multiply: shapes (2, 3) and (4) do not broadcast: cannot broadcast dimension 3 with 4"
    )


def test_registry_is_keyed_by_op_objects():
    add = get_op("add")
    assert relation_for(add) is RELATIONS[add]
    assert all(op in all_ops() for op in RELATIONS)


def test_missing_relation_names_the_op_and_facet():
    fake = Op("test.no_relation", 1, None, OpPattern.OPAQUE)  # declared nowhere: no relation
    with pytest.raises(
        MissingFacetError, match=r"operator `test.no_relation` has no type relation"
    ):
        relation_for(fake)
    x = Var("x", TensorType((2,), "float32"))
    with pytest.raises(TypeCheckError, match="has no type relation"):
        infer_expr(Function([x], Call(fake, [x])))
    assert all(op not in RELATIONS for op in missing_relations())


def test_family_tables_reject_undeclared_ops_and_duplicates():
    def rel(args, attrs, ctx):
        return None

    with pytest.raises(AttrsError, match=r"unknown operator `no\.such\.operator`"):
        elementwise.RELATIONS.register("no.such.operator")(rel)
    with pytest.raises(ValueError, match="already has a type relation"):
        elementwise.RELATIONS.register("add")(rel)
    assert RELATIONS[get_op("add")] is elementwise.broadcast_rel  # the family's entry is kept


def test_every_elementwise_op_declared_has_a_relation():
    names = (*ARITHMETIC, *BITWISE, *COMPARISON, *UNARY, *PREDICATES, "clip", "cast", "where")
    for name in names:
        assert get_op(name) in RELATIONS, name
