"""Unification: symmetry, holes, Any, shape variables, type parameters, occurs check, messages."""

from __future__ import annotations

import itertools

import pytest
from relay.lang import (
    ANY,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    ShapeVar,
    TensorType,
    TupleType,
    TypeCall,
    TypeVar,
)
from relay.typecheck import Constraint, TypeSolver, UnifyError, type_text


def tensor(*shape, dtype="float32"):
    return TensorType(shape, dtype)


F32 = tensor()
I32 = tensor(dtype="int32")
LIST = GlobalTypeVar("List")


def unify_both_ways(a, b):
    """Unify in both argument orders in fresh solvers; return the two outcomes."""
    outcomes = []
    for lhs, rhs in ((a, b), (b, a)):
        solver = TypeSolver()
        try:
            solver.unify(lhs, rhs)
        except UnifyError as exc:
            outcomes.append(("error", exc.reason))
        else:
            outcomes.append(("ok", solver.resolve(lhs), solver.resolve(rhs)))
    return outcomes


CASES = [
    (tensor(2, 3), tensor(2, 3), True),
    (tensor(2, 3), tensor(2, 4), False),
    (tensor(2, 3), tensor(2, 3, dtype="int32"), False),
    (tensor(2, 3), tensor(2, 3, 1), False),
    (tensor(ANY, 3), tensor(5, 3), True),
    (TupleType([F32, I32]), TupleType([F32, I32]), True),
    (TupleType([F32, I32]), TupleType([F32]), False),
    (FuncType([F32], I32), FuncType([F32], I32), True),
    (FuncType([F32], I32), FuncType([F32, F32], I32), False),
    (RefType(F32), RefType(F32), True),
    (RefType(F32), F32, False),
    (TypeCall(LIST, [F32]), TypeCall(LIST, [F32]), True),
    (TypeCall(LIST, [F32]), TypeCall(LIST, [I32]), False),
    (TypeCall(LIST, [F32]), TupleType([F32]), False),
]


@pytest.mark.parametrize(("a", "b", "ok"), CASES)
def test_unification_is_symmetric(a, b, ok):
    first, second = unify_both_ways(a, b)
    assert first[0] == second[0] == ("ok" if ok else "error")


def test_unification_is_idempotent():
    solver = TypeSolver()
    hole = IncompleteType()
    target = TupleType([tensor(2, ANY), I32])
    solver.unify(hole, target)
    solver.unify(hole, target)
    solver.unify(target, hole)
    assert solver.resolve(hole) == target


def test_hole_binds_and_chains_resolve():
    solver = TypeSolver()
    holes = [IncompleteType() for _ in range(5)]
    for a, b in itertools.pairwise(holes):
        solver.unify(a, b)
    solver.unify(holes[-1], F32)
    assert all(solver.resolve(h) == F32 for h in holes)


def test_long_union_find_chain_needs_no_recursion():
    solver = TypeSolver()
    holes = [IncompleteType() for _ in range(50_000)]
    for a, b in itertools.pairwise(holes):
        solver.unify(b, a)  # each new hole points at the previous one: a long chain
    solver.unify(holes[0], I32)
    assert solver.resolve(holes[-1]) == I32
    assert solver.find(holes[-1]) == I32


def test_structural_unification_fills_holes_inside():
    solver = TypeSolver()
    a, b = IncompleteType(), IncompleteType()
    solver.unify(FuncType([a, F32], TupleType([b])), FuncType([I32, F32], TupleType([RefType(a)])))
    assert solver.resolve(a) == I32
    assert solver.resolve(b) == RefType(I32)


def test_any_dimension_unifies_with_everything_and_stays_any():
    solver = TypeSolver()
    n = ShapeVar("n")
    solver.unify(tensor(ANY, 3), tensor(5, 3))
    solver.unify(tensor(ANY), tensor(n))
    assert solver.resolve(tensor(n)) == tensor(n)  # `?` binds nothing
    assert solver.resolve(tensor(ANY, 3)) == tensor(ANY, 3)


def test_shape_variable_binds_through_dim_union_find():
    solver = TypeSolver()
    n, m = ShapeVar("n"), ShapeVar("m")
    solver.unify(tensor(n, 3), tensor(m, 3))
    assert solver.resolve(tensor(n)) in (tensor(m), tensor(n))
    solver.unify(tensor(m), tensor(7))
    assert solver.resolve(tensor(n, 3)) == tensor(7, 3)
    with pytest.raises(UnifyError, match="dimension 0 conflicts: 7 does not match 8"):
        solver.unify(tensor(n), tensor(8))


def test_type_variables_are_rigid():
    a, b = TypeVar("A"), TypeVar("B")
    solver = TypeSolver()
    solver.unify(a, a)
    with pytest.raises(UnifyError, match="type parameter"):
        solver.unify(a, F32)
    with pytest.raises(UnifyError):
        solver.unify(a, b)
    hole = IncompleteType()
    solver.unify(hole, a)
    assert solver.resolve(hole) is a


def test_polymorphic_function_types_unify_up_to_renaming():
    a, b = TypeVar("A"), TypeVar("B")
    solver = TypeSolver()
    solver.unify(FuncType([a], a, [a]), FuncType([b], b, [b]))
    with pytest.raises(UnifyError, match="type parameter"):
        solver.unify(FuncType([a], a, [a]), FuncType([b], F32, [b]))
    with pytest.raises(UnifyError, match="type parameters"):
        solver.unify(FuncType([a], a, [a]), FuncType([F32], F32))


def test_bare_adt_equals_adt_applied_to_nothing():
    nat = GlobalTypeVar("nat")
    TypeSolver().unify(nat, TypeCall(nat, []))


def test_occurs_check():
    solver = TypeSolver()
    hole = IncompleteType()
    with pytest.raises(UnifyError, match="contain itself") as info:
        solver.unify(hole, TupleType([hole, F32]))
    assert "(_, float32)" in str(info.value)


def test_mismatch_messages_name_both_types_and_the_difference():
    solver = TypeSolver()
    with pytest.raises(UnifyError) as info:
        solver.unify(tensor(2, 3), tensor(2, 3, dtype="int32"))
    assert info.value.reason == "dtype `float32` does not match `int32`"
    assert "Tensor[(2, 3), float32]" in str(info.value)
    assert "Tensor[(2, 3), int32]" in str(info.value)
    with pytest.raises(UnifyError) as info:
        solver.unify(tensor(2, 3), tensor(2, 3, 4))
    assert info.value.reason == "a tensor of rank 2 does not match a tensor of rank 3"
    with pytest.raises(UnifyError) as info:
        solver.unify(TupleType([F32, tensor(2, 3)]), TupleType([F32, tensor(2, 4)]))
    assert info.value.reason == "field 1: dimension 1 conflicts: 3 does not match 4"
    with pytest.raises(UnifyError) as info:
        solver.unify(F32, TupleType([]))
    assert "tensor type `float32` does not match tuple type `()`" in info.value.reason


def test_type_text_spelling():
    a = TypeVar("A")
    t = FuncType([tensor(1, ANY), TupleType([F32]), RefType(I32)], TypeCall(LIST, [a]), [a])
    assert type_text(t) == "fn [A](Tensor[(1, ?), float32], (float32,), ref(int32)) -> List[A]"
    assert type_text(tensor(ShapeVar("n"), 2)) == "Tensor[(n, 2), float32]"
    assert type_text(IncompleteType()) == "_"


class _Boxed(Constraint):
    """Test constraint: the result is `(t,)` once `t` is known."""

    def __init__(self, t):
        super().__init__()
        self.t = t
        self.runs = []

    def inputs(self):
        return (self.t,)

    def run(self, solver, final):
        self.runs.append(final)
        known = solver.resolve(self.t)
        if isinstance(known, IncompleteType):
            return False
        solver.deliver(self, TupleType([known]))
        return True


def test_constraint_decided_at_once_when_possible():
    solver = TypeSolver()
    c = _Boxed(F32)
    assert solver.add(c) == TupleType([F32])
    assert c.runs == [False]
    assert solver.pending == 0


def test_constraint_is_requeued_when_a_watched_hole_is_bound():
    solver = TypeSolver()
    hole = IncompleteType()
    c = _Boxed(hole)
    out = solver.add(c)
    assert isinstance(out, IncompleteType)
    assert solver.pending == 1
    solver.unify(hole, I32)
    solver.solve()
    assert solver.resolve(out) == TupleType([I32])
    assert c.runs == [False, False]
    assert solver.pending == 0


def test_constraint_waiting_on_a_shape_variable():
    solver = TypeSolver()
    n = ShapeVar("n")

    class NeedsSize(_Boxed):
        def run(self, solver, final):
            self.runs.append(final)
            size = solver.find_dim(n)
            if isinstance(size, ShapeVar):
                return False
            solver.deliver(self, tensor(size))
            return True

    c = NeedsSize(tensor(n))
    out = solver.add(c)
    solver.unify(tensor(n), tensor(6))
    solver.solve()
    assert solver.resolve(out) == tensor(6)


def test_undecided_constraint_gives_up_in_final_mode_without_an_error():
    solver = TypeSolver()
    c = _Boxed(IncompleteType())
    out = solver.add(c)
    solver.solve()
    assert c.runs == [False, True]
    assert solver.errors == []
    assert out in solver.poisoned


def test_result_conflicting_with_its_context_is_reported_at_the_constraint():
    solver = TypeSolver()
    hole = IncompleteType()
    c = _Boxed(hole)
    out = solver.add(c)
    solver.unify(out, TupleType([F32]))
    solver.unify(hole, I32)
    solver.solve()
    (diag,) = solver.errors
    assert diag.message == "this expression has type `(int32,)`, but `(float32,)` is expected here"
