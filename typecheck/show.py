"""Types as text for diagnostics: `Tensor[(1, 3), float32]`, `(A, B)`, `fn (A) -> B`.

This follows the text format's spelling (rank 0 prints as the bare dtype, `?` for an Any
dimension, `_` for a hole, `ref(T)` for a reference) but writes a shape variable by its
name rather than as a metadata reference, so a message reads on its own.
"""

from __future__ import annotations

from ..lang.types import (
    AnyDim,
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


def dim_text(dim: Dim) -> str:
    """One dimension: an integer, a shape variable's name, or `?`."""
    if isinstance(dim, AnyDim):
        return "?"
    if isinstance(dim, ShapeVar):
        return dim.name_hint or "n"
    return str(dim)


def shape_text(shape: tuple[Dim, ...]) -> str:
    """A shape as the text format writes it: `(1, 3)`, `(10)`, `()`."""
    return "(" + ", ".join(dim_text(d) for d in shape) + ")"


def type_text(t: Type) -> str:
    """`t` in the text format's notation (types are small: this recurses on structure)."""
    if isinstance(t, TensorType):
        if not t.shape:
            return t.dtype
        return f"Tensor[{shape_text(t.shape)}, {t.dtype}]"
    if isinstance(t, TupleType):
        if len(t.fields) == 1:
            return f"({type_text(t.fields[0])},)"
        return "(" + ", ".join(type_text(f) for f in t.fields) + ")"
    if isinstance(t, FuncType):
        params = ""
        if t.type_params:
            params = "[" + ", ".join(v.name_hint for v in t.type_params) + "]"
        args = ", ".join(type_text(a) for a in t.arg_types)
        return f"fn {params}({args}) -> {type_text(t.ret_type)}"
    if isinstance(t, TypeCall):
        if not t.args:
            return t.func.name_hint
        return f"{t.func.name_hint}[" + ", ".join(type_text(a) for a in t.args) + "]"
    if isinstance(t, RefType):
        return f"ref({type_text(t.value)})"
    if isinstance(t, TypeVar | GlobalTypeVar):
        return t.name_hint
    if isinstance(t, IncompleteType):
        return "_"
    return repr(t)


def plural(n: int, word: str) -> str:
    """`1 field`, `2 fields`."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
