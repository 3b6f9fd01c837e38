"""Helpers for testing operator type relations, one call at a time.

    from relay.testing.relations import f32, op_call_type, op_type_error

    assert op_call_type("nn.dense", f32(1, 784), f32(10, 784)) == f32(1, 10)
    assert "784 features" in op_type_error("nn.dense", f32(1, 784), f32(10, 512))

`op_call_type` goes through the real type checker (a function whose parameters have the
given types and whose body is the call); `StandaloneContext` lets a test call a relation
function directly, without a solver.
"""

from __future__ import annotations

from ..lang.diagnostics import TypeCheckError
from ..lang.expr import Call, Function, Tuple, Var
from ..lang.op import get_op
from ..lang.types import ANY, IncompleteType, TensorType, Type
from ..typecheck import RelationContext, RelationError, infer_expr


def f32(*shape: int) -> TensorType:
    """`Tensor[shape, float32]`."""
    return TensorType(shape, "float32")


def op_call_type(op_name: str, *arg_types: Type, tuple_arg: bool = False, **attrs: object) -> Type:
    """The inferred type of `op_name(args..., attrs)` for arguments of `arg_types`.

    With `tuple_arg`, the arguments are passed as one tuple (`concatenate`, `stack`).
    Raises `TypeCheckError` when the call is ill-typed.
    """
    params = [Var(f"p{i}", t) for i, t in enumerate(arg_types)]
    op = get_op(op_name)
    args = [Tuple(params)] if tuple_arg else params
    call = Call(op, args, op.make_attrs(**attrs) if op.attrs_schema is not None else None)
    return infer_expr(Function(params, call)).type_of(call)


def op_type_error(op_name: str, *arg_types: Type, tuple_arg: bool = False, **attrs: object) -> str:
    """The rendered type error of an ill-typed call (AssertionError if it type-checks)."""
    try:
        result = op_call_type(op_name, *arg_types, tuple_arg=tuple_arg, **attrs)
    except TypeCheckError as error:
        return str(error)
    raise AssertionError(f"{op_name} type-checked to {result}; expected a type error")


def _compatible(a: Type, b: Type) -> bool:
    if not (isinstance(a, TensorType) and isinstance(b, TensorType)):
        return a == b
    return (
        a.dtype == b.dtype
        and a.ndim == b.ndim
        and all(x == y or ANY in (x, y) for x, y in zip(a.shape, b.shape))
    )


class StandaloneContext(RelationContext):
    """A relation context without a solver: holes are bound in a dict.

    `strict=True` makes any unification an error, for relations that should not unify.
    """

    def __init__(self, final: bool = True, strict: bool = False) -> None:
        self.final = final
        self.strict = strict
        self.bound: dict[Type, Type] = {}

    def unify(self, lhs: Type, rhs: Type) -> None:
        """Bind a hole, or check that two known types agree (`?` matches any size)."""
        if self.strict:
            raise RelationError("unexpected unification")
        if isinstance(lhs, IncompleteType):
            self.bound[lhs] = rhs
        elif not _compatible(lhs, rhs):
            raise RelationError(f"{lhs} != {rhs}")

    def fresh(self) -> IncompleteType:
        """A new hole."""
        return IncompleteType()

    def resolve(self, t: Type) -> Type:
        """What a hole was bound to (the type itself otherwise)."""
        return self.bound.get(t, t)
