"""Partially static values: what the partial evaluator knows about a value.

A `PValue` has a *static* part (what is known at compile time) and an *atom* (a residual
expression that computes the value at run time). Either may be missing but not both:

* a static tensor is an `np.ndarray`; its atom is a `Constant` made on demand;
* `STuple`, `SCtor`: a tuple or an ADT value whose fields are `PValue`s (each field may
  itself be static or dynamic);
* `SClosure`: a function literal with the environment it was created in, or a global
  function (`global_var` set);
* `SRef`: a reference cell, known by an id; its contents live in the `Store`;
* an `Op` or a `Constructor` used as a value.

A value with no static part is *dynamic*: only its atom is known. Atoms are bound in a
residual scope (`residual.Scope`) and are valid only there and in the scopes nested in it;
`scope` records where (None: valid everywhere, as constants and globals are).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from attrs import define, field

from ...lang.adt import Constructor
from ...lang.expr import Expr, Function, GlobalVar, Var
from ...lang.op import Op
from ...lang.types import (
    FuncType,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
)


@define(eq=False, slots=True)
class STuple:
    """A tuple whose fields are known as `PValue`s."""

    fields: tuple[PValue, ...]


@define(eq=False, slots=True)
class SCtor:
    """An ADT value: a known constructor and its fields."""

    constructor: Constructor
    fields: tuple[PValue, ...]


@define(eq=False, slots=True)
class SClosure:
    """A known function: a literal with its environment, or a global (`global_var`)."""

    function: Function
    env: Env | None
    global_var: GlobalVar | None = None


@define(eq=False, slots=True)
class SRef:
    """A reference cell known by its id; its contents are in the `Store`."""

    ref_id: int


Static = Any
"""`np.ndarray | STuple | SCtor | SClosure | SRef | Op | Constructor`."""


@define(eq=False, slots=True)
class PValue:
    """A partially static value (see the module docstring)."""

    static: Static = None
    atom: Expr | None = None
    scope: Any = None
    """The `residual.Scope` the atom is bound in; None if the atom is valid everywhere."""
    type: Type | None = field(default=None)
    """The value's type when known and closed (no type variables or holes)."""

    @property
    def is_static(self) -> bool:
        """Whether something is known about the value at compile time."""
        return self.static is not None


def dynamic(atom: Expr, scope: Any, type_: Type | None = None) -> PValue:
    """A value known only by the residual atom that computes it."""
    return PValue(None, atom, scope, type_)


def static_tensor(array: np.ndarray) -> PValue:
    """A value known to be `array`."""
    return PValue(array)


UNIT = TupleType(())


def unit() -> PValue:
    """The unit value `()`."""
    return PValue(STuple(()), type=UNIT)


class Env:
    """The bindings of one activation (original `Var` → `PValue`), chained to the scope a
    closure captured. Lookups walk the chain iteratively (its length is the nesting depth
    of function literals, not the depth of the program)."""

    __slots__ = ("parent", "vars")

    def __init__(self, bindings: dict[Var, PValue] | None = None, parent: Env | None = None):
        self.vars: dict[Var, PValue] = {} if bindings is None else bindings
        self.parent = parent

    def lookup(self, var: Var) -> PValue | None:
        """The value bound to `var`, or None if it is unbound (a free variable)."""
        env: Env | None = self
        while env is not None:
            found = env.vars.get(var)
            if found is not None:
                return found
            env = env.parent
        return None


def closed_type(t: Type | None) -> Type | None:
    """`t` if it mentions no type variable and no hole (so it can annotate residual code
    anywhere), else None."""
    if t is None:
        return None
    stack: list[Type] = [t]
    while stack:
        item = stack.pop()
        if isinstance(item, TypeVar | IncompleteType):
            return None
        if isinstance(item, TupleType):
            stack.extend(item.fields)
        elif isinstance(item, FuncType):
            if item.type_params:
                return None
            stack.extend(item.arg_types)
            stack.append(item.ret_type)
        elif isinstance(item, TypeCall):
            stack.extend(item.args)
        elif isinstance(item, RefType):
            stack.append(item.value)
        elif isinstance(item, TensorType) and not all(isinstance(d, int) for d in item.shape):
            return None
    return t


def needs_annotation(t: Type | None) -> bool:
    """Whether a residual binding of type `t` should carry it: instances of polymorphic
    ADTs (a constructor call alone may leave holes in them) and functions (a residual
    function's parameters have no other source of type)."""
    if t is None:
        return False
    stack: list[Type] = [t]
    while stack:
        item = stack.pop()
        if isinstance(item, TypeCall) and item.args:
            return True
        if isinstance(item, FuncType):
            return True
        if isinstance(item, TupleType):
            stack.extend(item.fields)
        elif isinstance(item, RefType):
            stack.append(item.value)
    return False


def size_measure(value: PValue) -> int | None:
    """A measure that recursion over static data makes smaller: the number of static
    constructor nodes of an ADT value, or |n| for a static integer scalar; None when the
    value carries no such static data."""
    static = value.static
    if isinstance(static, np.ndarray):
        if static.ndim == 0 and static.dtype.kind in "iu":
            return abs(int(static))
        return None
    if not isinstance(static, SCtor):
        return None
    count = 0
    stack: list[PValue] = [value]
    while stack:
        item = stack.pop().static
        if isinstance(item, SCtor):
            count += 1
            stack.extend(item.fields)
        elif isinstance(item, STuple):
            stack.extend(item.fields)
    return count


def value_type(value: PValue) -> Type | None:
    """The closed type of `value` if known (a static tensor's from its array)."""
    if value.type is None and isinstance(value.static, np.ndarray):
        from ...lang.dtype import dtype_of_array

        return TensorType(value.static.shape, dtype_of_array(value.static))
    return value.type


def closed_skeleton(
    values: list[PValue], opaque: set[int] | frozenset[int] = frozenset()
) -> tuple[tuple[object, ...], list[PValue]] | None:
    """The memo key of arguments: their static data (tensors, tuples, ADT values, globals,
    operators, constructors) with a hole `"D"` for each dynamic part (and for each whole
    argument whose position is in `opaque`), and the holes in order; None when nothing
    static and closed is known (a specialization would be the function itself)."""
    key: list[object] = []
    holes: list[PValue] = []
    known = False
    stack: list[PValue] = list(reversed(values))
    top = {id(v) for i, v in enumerate(values) if i in opaque}
    while stack:
        item = stack.pop()
        static = item.static
        if id(item) in top:
            key.append("D")
            holes.append(item)
        elif isinstance(static, np.ndarray):
            key.append(("T", static.dtype.str, static.shape, static.tobytes()))
            known = True
        elif isinstance(static, STuple):
            key.append(("U", len(static.fields)))
            stack.extend(reversed(static.fields))
        elif isinstance(static, SCtor):
            key.append(("C", id(static.constructor), len(static.fields)))
            stack.extend(reversed(static.fields))
            known = True
        elif isinstance(static, SClosure) and static.global_var is not None:
            key.append(("G", id(static.global_var)))
            known = True
        elif isinstance(static, Op | Constructor):
            key.append(("O", id(static)))
            known = True
        else:
            key.append("D")
            holes.append(item)
    return (tuple(key), holes) if known else None
