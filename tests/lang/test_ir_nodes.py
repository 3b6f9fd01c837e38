"""The IR nodes: immutability, identity, replace, invariants checked when built."""

import attrs
import numpy as np
import pytest
from relay.lang import (
    ANY,
    Call,
    Constant,
    Function,
    FuncType,
    GlobalTypeVar,
    IRModule,
    Let,
    ShapeVar,
    TensorType,
    Tuple,
    TupleType,
    TypeCall,
    TypeVar,
    Var,
    const,
    get_op,
)
from relay.lang.adt import Constructor, TypeData
from relay.lang.attrs import FuncAttrs


def test_nodes_are_frozen():
    x = Var("x")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        x.name_hint = "y"  # type: ignore[misc]


def test_vars_compare_by_identity_not_name():
    a, b = Var("x"), Var("x")
    assert a != b
    assert a == a
    assert len({a, b}) == 2


def test_types_compare_structurally():
    assert TensorType((1, 2), "float") == TensorType([1, 2], "float32")
    assert hash(TensorType((1, 2), "float32")) == hash(TensorType((1, 2), "float32"))
    assert TensorType((ANY,), "int8") == TensorType((ANY,), "int8")
    assert TupleType([TensorType((), "bool")]) != TupleType([])
    # type variables and shape variables are binders: identity
    assert TypeVar("A") != TypeVar("A")
    n = ShapeVar("n")
    assert TensorType((n,), "float32") == TensorType((n,), "float32")
    assert TensorType((n,), "float32") != TensorType((ShapeVar("n"),), "float32")


def test_type_invariants_checked_when_built():
    with pytest.raises(ValueError, match="dtype"):
        TensorType((1,), "float31")
    with pytest.raises(ValueError, match="non-negative"):
        TensorType((-1,), "float32")
    with pytest.raises(TypeError, match="dimension"):
        TensorType((1.5,), "float32")


def test_replace_returns_self_when_unchanged():
    x = Var("x")
    call = Call(get_op("add"), [x, x])
    assert call.replace(args=call.args) is call
    assert call.replace(op=call.op) is call
    y = Var("y")
    changed = call.replace(args=(y, y))
    assert changed is not call and changed.args == (y, y) and changed.op is call.op


def test_constant_is_a_readonly_copy():
    data = np.arange(4, dtype="float32")
    c = Constant(data)
    data[0] = 100
    assert c.data[0] == 0
    with pytest.raises(ValueError):
        c.data[1] = 5
    assert c.dtype == "float32" and not c.is_scalar


def test_const_helper_dtypes():
    assert const(1).dtype == "int32"
    assert const(2**40).dtype == "int64"
    assert const(1.5).dtype == "float32"
    assert const(True).dtype == "bool"
    assert const(3, "int8").dtype == "int8"


def test_function_attrs_sorted_and_queryable():
    x = Var("x")
    fn = Function([x], x, attrs=FuncAttrs({"Primitive": 1, "Composite": "a"}))
    assert fn.is_primitive
    assert fn.attrs.items[0][0] == "Composite"
    assert fn.attrs.with_attr("Inline", 1).get("Inline") == 1
    assert "Inline" not in fn.attrs


def test_module_lookup_and_functional_update():
    x = Var("x", TensorType((2,), "float32"))
    main = Function([x], x)
    mod = IRModule.from_expr(main)
    assert mod["main"] is main and "main" in mod
    a = GlobalTypeVar("List")
    tv = TypeVar("A")
    cons = Constructor("Cons", [tv, TypeCall(a, [tv])], a, 0)
    nil = Constructor("Nil", [], a, 1)
    mod2 = mod.with_type_definition(TypeData(a, [tv], [cons, nil]))
    assert mod2.get_constructor("Nil") is nil
    assert "List" not in [g.name_hint for g in mod.type_definitions]
    with pytest.raises(KeyError):
        mod2.get_global_var("nope")
    mod3 = mod2.with_function("main", Function([x], Tuple([x, x])))
    assert mod3["main"] is not main and mod2["main"] is main


def test_from_expr_wraps_free_vars():
    x, y = Var("x"), Var("y")
    mod = IRModule.from_expr(Call(get_op("add"), [x, y]))
    assert mod["main"].params == (x, y)


def test_let_keeps_binder_identity():
    v = Var("v")
    let = Let(v, const(1), v)
    assert let.var is let.body


def test_functype_fields_are_tuples():
    t = FuncType([TensorType((), "int32")], TensorType((), "int32"))
    assert isinstance(t.arg_types, tuple)


def test_function_and_call_take_none_for_their_optional_parts():
    """As TVM's constructors do: `Function(params, body, None, None, None)`."""
    x = Var("x", TensorType((2,), "float32"))
    fn = Function([x], x, None, None, None)
    assert fn.type_params == () and fn.attrs == FuncAttrs()
    assert Call(fn, [x], None, None).type_args == ()


def test_constant_keeps_an_array_nobody_can_write_and_copies_the_others():
    frozen = np.arange(6, dtype="float32")
    frozen.setflags(write=False)
    assert Constant(frozen).data is frozen
    view = frozen.reshape(2, 3)  # a read-only view of read-only memory: kept
    assert Constant(view).data is view
    writable = np.arange(6, dtype="float32")
    masked = writable.reshape(2, 3)
    masked.setflags(write=False)  # read-only, but its memory is still writable
    c = Constant(masked)
    writable[0] = 100
    assert c.data is not masked and c.data[0, 0] == 0
    strided = frozen[::2]  # not contiguous: copied
    assert Constant(strided).data.flags.c_contiguous
    again = Constant(c.data)  # a constant's array is shared, not copied
    assert again.data is c.data
