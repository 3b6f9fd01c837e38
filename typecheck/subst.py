"""Plain functions over types: substitution of type parameters and shape variables, and
queries (which shape variables or holes a type mentions).

Types are small, so these recurse on type structure (never on program structure).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from ..lang.types import (
    Dim,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    ShapeVar,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
)


def tuple_type(fields: Iterable[Type]) -> TupleType:
    """`TupleType` of `fields` (typed wrapper around the attrs converter)."""
    return TupleType(tuple(fields))  # type: ignore[arg-type]


def func_type(
    args: Iterable[Type],
    ret: Type,
    type_params: Iterable[TypeVar] = (),
    type_constraints: Iterable[Type] = (),
) -> FuncType:
    """`FuncType` (typed wrapper around the attrs converters)."""
    return FuncType(tuple(args), ret, tuple(type_params), tuple(type_constraints))  # type: ignore[arg-type]


def type_call(func: GlobalTypeVar, args: Iterable[Type]) -> TypeCall:
    """`TypeCall` (typed wrapper around the attrs converter)."""
    return TypeCall(func, tuple(args))  # type: ignore[arg-type]


def substitute(
    t: Type,
    types: Mapping[TypeVar, Type],
    dims: Mapping[ShapeVar, Dim] | None = None,
) -> Type:
    """`t` with type parameters replaced by `types` and shape variables by `dims`.

    Type parameters bound by a `FuncType` inside `t` shadow the mapping.
    """
    if not types and not dims:
        return t
    if isinstance(t, TypeVar):
        return types.get(t, t)
    if isinstance(t, TensorType):
        if not dims:
            return t
        shape = tuple(dims.get(d, d) if isinstance(d, ShapeVar) else d for d in t.shape)
        return t if shape == t.shape else TensorType(shape, t.dtype)
    if isinstance(t, TupleType):
        return tuple_type(substitute(f, types, dims) for f in t.fields)
    if isinstance(t, FuncType):
        inner = types
        if t.type_params:
            inner = {k: v for k, v in types.items() if k not in t.type_params}
        return func_type(
            (substitute(a, inner, dims) for a in t.arg_types),
            substitute(t.ret_type, inner, dims),
            t.type_params,
            t.type_constraints,
        )
    if isinstance(t, RefType):
        return RefType(substitute(t.value, types, dims))
    if isinstance(t, TypeCall):
        return type_call(t.func, (substitute(a, types, dims) for a in t.args))
    return t


def _walk(t: Type) -> Iterator[Type]:
    stack = [t]
    while stack:
        cur = stack.pop()
        yield cur
        if isinstance(cur, TupleType):
            stack.extend(cur.fields)
        elif isinstance(cur, FuncType):
            stack.extend(cur.arg_types)
            stack.append(cur.ret_type)
        elif isinstance(cur, RefType):
            stack.append(cur.value)
        elif isinstance(cur, TypeCall):
            stack.extend(cur.args)


def shape_vars(t: Type) -> list[ShapeVar]:
    """The distinct shape variables `t` mentions, in order of appearance."""
    found: dict[ShapeVar, None] = {}
    for sub in _walk(t):
        if isinstance(sub, TensorType):
            for d in sub.shape:
                if isinstance(d, ShapeVar):
                    found[d] = None
    return list(found)


def has_holes(t: Type) -> bool:
    """Whether `t` mentions an `IncompleteType` (written `_`)."""
    return any(isinstance(sub, IncompleteType) for sub in _walk(t))


def replace_holes(t: Type, make: Mapping[IncompleteType, Type]) -> Type:
    """`t` with the holes in `make` replaced (used to re-home a foreign signature)."""
    if not make:
        return t
    if isinstance(t, IncompleteType):
        return make.get(t, t)
    if isinstance(t, TupleType):
        return tuple_type(replace_holes(f, make) for f in t.fields)
    if isinstance(t, FuncType):
        return func_type(
            (replace_holes(a, make) for a in t.arg_types),
            replace_holes(t.ret_type, make),
            t.type_params,
            t.type_constraints,
        )
    if isinstance(t, RefType):
        return RefType(replace_holes(t.value, make))
    if isinstance(t, TypeCall):
        return type_call(t.func, (replace_holes(a, make) for a in t.args))
    return t


def holes_of(t: Type) -> list[IncompleteType]:
    """The distinct holes `t` mentions."""
    found: dict[IncompleteType, None] = {}
    for sub in _walk(t):
        if isinstance(sub, IncompleteType):
            found[sub] = None
    return list(found)
