"""Reduction callbacks for types, type definitions, patterns and attribute values.

Each method is named after a rule or alias of `relay.lark` and receives the list of the
rule's children (tokens are kept, so positions are fixed per alternative).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from lark import Token

from ..lang.adt import Constructor, TypeData
from ..lang.dtype import looks_like_scalar_dtype, normalize_dtype
from ..lang.expr import (
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    Var,
    pattern_vars,
)
from ..lang.types import (
    ANY,
    FuncType,
    IncompleteType,
    RefType,
    ShapeVar,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
    scalar_type,
)
from .errors import COMMON_DTYPES, constructor_names, did_you_mean
from .literals import LiteralError, parse_dim, parse_number, unescape
from .state import MetaAttr, ParseState

MAX_ATTR_NESTING = 32


class AttrList(list):  # type: ignore[type-arg]
    """An attribute list value, with its nesting depth."""

    depth = 1


class TypeActions(ParseState):
    """Callbacks that build types, ADT definitions, patterns and attribute values."""

    # ------------------------------------------------------------------ type parameters
    def names(self, c: list[Any]) -> list[Token]:
        """`A, B, ...`"""
        if len(c) == 1:
            return [c[0]]
        c[0].append(c[2])
        return c[0]

    def type_params(self, c: list[Any]) -> list[Token]:
        """`[A, B]`: the names, checked for duplicates."""
        names: list[Token] = c[1] if len(c) > 2 else []
        seen: set[str] = set()
        for token in names:
            if token in seen:
                self.error(token, f"duplicate type parameter `{token}`")
            seen.add(str(token))
        return names

    def bind_type_params(self, names: list[Token]) -> tuple[TypeVar, ...]:
        """Open a type scope binding a fresh TypeVar for each name."""
        self.type_vars.push()
        tvars = []
        for token in names:
            tvar = TypeVar(str(token))
            self.type_vars.bind(str(token), tvar)
            tvars.append(tvar)
        return tuple(tvars)

    # ------------------------------------------------------------------ types
    def types(self, c: list[Any]) -> list[Type]:
        """`T, T, ...`"""
        if len(c) == 1:
            return [c[0]]
        c[0].append(c[2])
        return c[0]

    def unit_type(self, c: list[Any]) -> Type:
        """`()`"""
        return TupleType(())

    def tuple_type(self, c: list[Any]) -> Type:
        """`(T, ...)`; `(T)` is a 1-tuple, as in TVM."""
        return TupleType(c[1])

    def fn_type_head(self, c: list[Any]) -> tuple[TypeVar, ...]:
        """`fn` or `fn [A, B]` of a function type: opens a type scope."""
        return self.bind_type_params(c[1] if len(c) > 1 else [])

    def func_type(self, c: list[Any]) -> Type:
        """`fn [A](T, ...) -> R`"""
        self.type_vars.pop()
        args = c[2] if isinstance(c[2], list) else []
        return FuncType(args, c[-1], c[0])

    def tensor_type(self, c: list[Any]) -> Type:
        """`Tensor[(d, ...), dtype]`"""
        return TensorType(c[2], self.dtype(c[4]))

    def dtype(self, token: Token) -> str:
        """The canonical dtype named by a token."""
        try:
            return normalize_dtype(str(token))
        except ValueError as exc:
            self.error(token, str(exc), *did_you_mean(token, COMMON_DTYPES))

    def shape(self, c: list[Any]) -> tuple[object, ...]:
        """`(d, ...)`"""
        return tuple(c[1]) if len(c) > 2 else ()

    def dims(self, c: list[Any]) -> list[object]:
        """Dimensions: integers, `?` or `meta[tir.SizeVar][i]`."""
        if len(c) == 1:
            return [self.dim(c[0])]
        c[0].append(self.dim(c[2]))
        return c[0]

    def dim(self, token: Token) -> object:
        """One dimension."""
        if token.type == "QMARK":
            return ANY
        if token.type == "META":
            obj = self.meta_object(token)
            if not isinstance(obj, ShapeVar):
                self.error(token, f"`{token}` is not a shape variable")
            return obj
        try:
            return parse_dim(token)
        except LiteralError as exc:
            self.error(token, str(exc))

    def named_type(self, c: list[Any]) -> Type:
        """A type variable in scope, a scalar dtype, or an ADT applied to nothing."""
        token = c[0]
        name = str(token)
        tvar = self.type_vars.names.get(name)
        if tvar is not None:
            return tvar  # type: ignore[no-any-return]
        if looks_like_scalar_dtype(name):
            return scalar_type(name)
        return TypeCall(self.adt(token, use=True), ())

    def applied_type(self, c: list[Any]) -> Type:
        """`List[A]`, `Storage[]`"""
        token = c[0]
        name = str(token)
        if name in self.type_vars.names:
            self.error(token, f"type variable `{name}` cannot be applied to type arguments")
        if looks_like_scalar_dtype(name):
            self.error(token, f"dtype `{name}` cannot be applied to type arguments")
        args = c[2] if isinstance(c[2], list) else []
        return TypeCall(self.adt(token, use=True), args)

    def incomplete_type(self, c: list[Any]) -> Type:
        """`_`: a hole for type inference."""
        return IncompleteType()

    def ref_type(self, c: list[Any]) -> Type:
        """`ref(T)`"""
        return RefType(c[2])

    # ------------------------------------------------------------------ type definitions
    def type_head(self, c: list[Any]) -> tuple[Any, ...]:
        """`type Name[A, ...]`: checks the name and binds the type parameters."""
        name_token = c[1]
        self.check_new_type(name_token)
        gtv = self.adt(name_token, use=False)
        tvars = self.bind_type_params(c[2] if len(c) > 2 else [])
        return c[0], name_token, gtv, tvars

    def check_new_type(self, token: Token) -> None:
        """A type name may be defined once."""
        previous = self.type_defs.get(str(token))
        if previous is not None:
            message = f"duplicate definition of type `{token}`"
            self.error(token, message, f"first defined at {previous[1]}")
        if looks_like_scalar_dtype(str(token)):
            self.error(token, f"`{token}` is a dtype and cannot name a type")

    def type_def(self, c: list[Any]) -> None:
        """`type Name[A] { Ctor(T, ...), ... }`"""
        keyword, name_token, gtv, tvars = c[0]
        self.type_vars.pop()
        ctors: list[tuple[Token, list[Type], Token]] = c[2] if len(c) > 3 else []
        constructors = []
        for tag, (token, inputs, last) in enumerate(ctors):
            name = str(token)
            if name in self.constructors:
                self.error(token, f"duplicate constructor `{name}`")
            if self.prelude is not None and self.prelude.missed_constructor(name):
                self._missed_declaration(token, f"constructor `{name}`")
            ctor = Constructor(name, inputs, gtv, tag, span=self.span(token, last))
            self.constructors[name] = ctor
            constructors.append(ctor)
        span = self.span(keyword, c[-1] if len(c) > 1 else name_token)
        self.type_defs[str(name_token)] = (TypeData(gtv, tvars, constructors, span=span), span)

    def extern_type(self, c: list[Any]) -> None:
        """`extern type Name[A]`: an ADT without constructors."""
        name_token = c[2]
        self.check_new_type(name_token)
        names: list[Token] = c[3] if len(c) > 3 else []
        tvars = [TypeVar(str(t)) for t in names]
        span = self.span(c[0], name_token)
        data = TypeData(self.adt(name_token, use=False), tvars, (), span=span)
        self.type_defs[str(name_token)] = (data, span)

    def ctors(self, c: list[Any]) -> list[Any]:
        """Constructors of a type definition."""
        if len(c) == 1:
            return [c[0]]
        c[0].append(c[2])
        return c[0]

    def ctor(self, c: list[Any]) -> tuple[Token, list[Type], Token]:
        """`Name` or `Name(T, ...)`"""
        inputs = c[2] if len(c) > 3 else []
        return c[0], inputs, c[-1]

    # ------------------------------------------------------------------ patterns
    def patterns(self, c: list[Any]) -> list[Pattern]:
        """Sub-patterns."""
        if len(c) == 1:
            return [c[0]]
        c[0].append(c[2])
        return c[0]

    def pattern_wildcard(self, c: list[Any]) -> Pattern:
        """`_`"""
        return PatternWildcard()

    def pattern_var(self, c: list[Any]) -> Pattern:
        """`%x` or `%x: T`"""
        token = c[0]
        annotation = c[2] if len(c) > 1 else None
        return PatternVar(Var(token[1:], annotation, span=self.token_span(token)))

    def pattern_ctor(self, c: list[Any]) -> Pattern:
        """`Nil`, `Nil()`, `Cons(p, q)`"""
        token = c[0]
        ctor = self.constructor(token)
        if ctor is None:
            self.error(
                token,
                f"unknown constructor `{token}`",
                *did_you_mean(token, constructor_names(self)),
            )
        subs: list[Pattern] = c[2] if len(c) > 3 else []
        if len(subs) != len(ctor.inputs):
            self.error(
                token,
                f"constructor `{token}` has {len(ctor.inputs)} field(s), "
                f"but the pattern has {len(subs)}",
            )
        return PatternConstructor(ctor, subs)

    def pattern_tuple(self, c: list[Any]) -> Pattern:
        """`(p, ...)`; `(p)` is a 1-tuple pattern."""
        return PatternTuple(c[1] if len(c) > 2 else [])

    def arm_head(self, c: list[Any]) -> Pattern:
        """`pattern =>`: opens the arm's scope and binds the pattern's variables."""
        pattern = c[0]
        self.vars.push()
        seen: set[str] = set()
        for var in pattern_vars(pattern):
            if var.name_hint in seen:
                self.error(var.span, f"variable %{var.name_hint} is bound twice in one pattern")
            seen.add(var.name_hint)
            self.vars.bind("%" + var.name_hint, var)
        return pattern  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ attribute values
    def attr(self, c: list[Any]) -> tuple[Token, object]:
        """`key=value`"""
        return c[0], c[2]

    def attrs(self, c: list[Any]) -> list[Any]:
        """`key=value, ...`"""
        if len(c) == 1:
            return [c[0]]
        c[0].append(c[2])
        return c[0]

    def attr_number(self, c: list[Any]) -> object:
        """An int or float attribute value (`3`, `3i64`, `1e-05f`, `-inff`)."""
        try:
            value, _ = parse_number(c[0])
        except LiteralError as exc:
            self.error(c[0], str(exc))
        return value

    def attr_string(self, c: list[Any]) -> object:
        """A string attribute value."""
        return unescape(c[0])

    def attr_true(self, c: list[Any]) -> object:
        """`True`"""
        return True

    def attr_false(self, c: list[Any]) -> object:
        """`False`"""
        return False

    def attr_none(self, c: list[Any]) -> object:
        """`None` / `nullptr`"""
        return None

    def attr_meta(self, c: list[Any]) -> object:
        """`meta[...][i]` as an attribute value (resolved only where it is used)."""
        return MetaAttr(c[0])

    def attr_list(self, c: list[Any]) -> object:
        """`[v, ...]` (nested at most `MAX_ATTR_NESTING` deep)."""
        values = AttrList(c[1] if len(c) > 2 else ())
        values.depth = 1 + max((v.depth for v in values if type(v) is AttrList), default=0)
        if values.depth > MAX_ATTR_NESTING:
            self.error(c[0], f"attribute lists nest more than {MAX_ATTR_NESTING} deep")
        return values

    def attr_paren(self, c: list[Any]) -> object:
        """`(v)`"""
        return c[1]

    def attr_values(self, c: list[Any]) -> list[object]:
        """`v, ...`"""
        if len(c) == 1:
            return [c[0]]
        c[0].append(c[2])
        return c[0]

    def constant_of(self, token: Token) -> np.ndarray:
        """The rank-0 array of a numeric literal token."""
        try:
            value, dtype = parse_number(token)
        except LiteralError as exc:
            self.error(token, str(exc))
        return np.array(value, dtype=dtype)
