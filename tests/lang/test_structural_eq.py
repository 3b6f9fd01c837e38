"""Structural equality and hashing up to renaming of bound variables."""

import sys

import numpy as np
import pytest
from relay.lang import (
    Call,
    Clause,
    Constant,
    Function,
    GlobalTypeVar,
    GlobalVar,
    If,
    IncompleteType,
    IRModule,
    Let,
    Match,
    PatternConstructor,
    PatternVar,
    PatternWildcard,
    TensorType,
    Tuple,
    TupleGetItem,
    TypeCall,
    TypeVar,
    Var,
    assert_structural_equal,
    const,
    get_op,
    let_chain,
    structural_diff,
    structural_equal,
    structural_hash,
)
from relay.lang.adt import Constructor, TypeData

ADD = get_op("add")
F32 = TensorType((3,), "float32")


def double_fn(name):
    x = Var(name, F32)
    return Function([x], Call(ADD, [x, x]))


def test_alpha_equivalent_functions_are_equal_and_hash_equal():
    a, b = double_fn("x"), double_fn("y")
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)


def test_binding_structure_matters():
    x, y = Var("x", F32), Var("y", F32)
    f = Function([x, y], Call(ADD, [x, x]))
    x2, y2 = Var("x", F32), Var("y", F32)
    g = Function([x2, y2], Call(ADD, [y2, y2]))
    mismatch = structural_diff(f, g)
    assert mismatch is not None and mismatch.path == "body.args[0]"
    assert not structural_equal(f, g)


def test_free_vars_by_identity_unless_mapped():
    x, y = Var("x"), Var("y")
    assert not structural_equal(Call(ADD, [x, x]), Call(ADD, [y, y]))
    assert structural_equal(Call(ADD, [x, x]), Call(ADD, [y, y]), map_free_vars=True)
    assert not structural_equal(Call(ADD, [x, y]), Call(ADD, [y, y]), map_free_vars=True)


def test_annotations_compared():
    a = Function([Var("x", F32)], const(1))
    b = Function([Var("x", TensorType((4,), "float32"))], const(1))
    mismatch = structural_diff(a, b)
    assert mismatch is not None and "params[0].type" in mismatch.path


def test_constants_compared_by_value_dtype_shape():
    assert structural_equal(Constant(np.ones(3, "float32")), Constant(np.ones(3, "float32")))
    assert not structural_equal(Constant(np.ones(3, "float32")), Constant(np.ones(3, "float64")))
    assert not structural_equal(Constant(np.ones(3, "float32")), Constant(np.ones(4, "float32")))
    assert not structural_equal(const(1.0), const(2.0))
    # NaN payloads compare bitwise, so a NaN constant equals itself
    assert structural_equal(const(float("nan")), const(float("nan")))


def test_dag_equals_its_tree_and_hashes_agree():
    x = Var("x", F32)
    shared = Call(ADD, [x, x])
    dag = Function([x], Call(ADD, [shared, shared]))
    y = Var("y", F32)
    tree = Function([y], Call(ADD, [Call(ADD, [y, y]), Call(ADD, [y, y])]))
    assert structural_equal(dag, tree)
    assert structural_hash(dag) == structural_hash(tree)


def test_let_and_if_and_tuples():
    def build(n):
        v = Var(n)
        c = Var("c", TensorType((), "bool"))
        return Function(
            [c], Let(v, Tuple([const(1), const(2)]), If(c, TupleGetItem(v, 0), TupleGetItem(v, 1)))
        )

    assert structural_equal(build("a"), build("b"))
    f = build("a")
    changed = f.replace(
        body=f.body.replace(body=f.body.body.replace(false_branch=TupleGetItem(f.body.var, 0)))
    )
    mismatch = structural_diff(f, changed)
    assert mismatch is not None
    assert mismatch.path == "body.body.else" and "projection" in mismatch.reason


def list_adt():
    gtv = GlobalTypeVar("List")
    a = TypeVar("A")
    cons = Constructor("Cons", [a, TypeCall(gtv, [a])], gtv, 0)
    nil = Constructor("Nil", [], gtv, 1)
    return TypeData(gtv, [a], [cons, nil])


def test_modules_with_adts_and_match():
    def build():
        data = list_adt()
        cons, _nil = data.constructors
        xs = Var("xs", TypeCall(data.header, [F32]))
        h, t = Var("h"), Var("t")
        body = Match(
            xs,
            [
                Clause(PatternConstructor(cons, [PatternVar(h), PatternVar(t)]), h),
                Clause(PatternWildcard(), const(0.0)),
            ],
        )
        fn = Function([xs], body)
        return IRModule({GlobalVar("head"): fn}, {data.header: data})

    a, b = build(), build()
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)
    assert_structural_equal(a, b)


def test_type_params_are_binders():
    a, b = TypeVar("A"), TypeVar("B")
    f = Function([Var("x", a)], const(1), type_params=[a])
    g = Function([Var("x", b)], const(1), type_params=[b])
    assert structural_equal(f, g)
    assert structural_hash(f) == structural_hash(g)


def test_incomplete_types_are_interchangeable():
    assert structural_equal(
        Function([Var("x", IncompleteType())], const(1)),
        Function([Var("x", IncompleteType())], const(1)),
    )


def test_globals_compared_by_name():
    assert structural_equal(Call(GlobalVar("f"), []), Call(GlobalVar("f"), []))
    assert not structural_equal(Call(GlobalVar("f"), []), Call(GlobalVar("g"), []))


def test_assert_structural_equal_message_names_path():
    with pytest.raises(AssertionError, match=r"body\.args"):
        assert_structural_equal(
            double_fn("x"), Function([Var("x", F32)], Call(ADD, [const(1), const(1)]))
        )


def deep_chain(n, name):
    x = Var(name, F32)
    binds, cur = [], x
    for i in range(n):
        v = Var(f"{name}{i}")
        binds.append((v, Call(ADD, [cur, cur])))
        cur = v
    return Function([x], let_chain(binds, cur))


def test_deep_let_chain_compare_and_hash_default_recursion_limit():
    assert sys.getrecursionlimit() == 1000  # the default: nothing raised it
    a, b = deep_chain(100_000, "a"), deep_chain(100_000, "b")
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)


def test_deep_nested_call_compare_and_hash():
    def nested(n, name):
        x = Var(name, F32)
        e = x
        for _ in range(10_000):
            e = Call(ADD, [e, const(1.0)])
        return Function([x], e)

    a, b = nested(10_000, "p"), nested(10_000, "q")
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)
