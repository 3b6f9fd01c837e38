"""Typed attributes of operator calls and functions.

An operator declares an `AttrsSchema` (TVM's `Conv2DAttrs`): named fields, each with a
kind, a default (or none: the field is required) and whether `None` is allowed.
`schema.make(**values)` checks and normalizes the values into an immutable `Attrs` value
(lists become tuples); an unknown key, a missing required field or a value of the wrong
kind raises `AttrsError` naming the field.

Function attributes (`Primitive=1`, `Composite="..."`) are free-form: `FuncAttrs`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from attrs import field, frozen

from .diagnostics import AttrsError
from .dtype import normalize_dtype
from .metadata import MetaObject


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


class Kind(enum.Enum):
    """What values a field accepts."""

    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    STR = "str"
    DTYPE = "dtype"
    INTS = "list of int"
    INTS_NESTED = "list of lists of int"
    FLOATS = "list of float"
    INT_OR_INTS = "int or list of int"
    ANY = "value"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _freeze(value: object) -> object:
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


def _coerce(kind: Kind, value: object) -> object:
    """Normalize `value` for `kind`, or raise ValueError with what was expected."""
    if kind is Kind.INT:
        if _is_int(value) or isinstance(value, bool):
            return int(value)  # type: ignore[call-overload]
    elif kind is Kind.FLOAT:
        if isinstance(value, int | float):
            return float(value)
    elif kind is Kind.BOOL:
        if isinstance(value, bool):
            return value
        if _is_int(value) and value in (0, 1):
            return bool(value)
    elif kind is Kind.STR:
        if isinstance(value, str):
            return value
    elif kind is Kind.DTYPE:
        if isinstance(value, str):
            return "" if value == "" else normalize_dtype(value)
    elif kind is Kind.INTS:
        if isinstance(value, list | tuple) and all(_is_int(v) for v in value):
            return tuple(int(v) for v in value)
        if _is_int(value):
            return (int(value),)  # type: ignore[call-overload]
    elif kind is Kind.INTS_NESTED:
        if isinstance(value, list | tuple) and all(
            isinstance(v, list | tuple) and all(_is_int(x) for x in v) for v in value
        ):
            return tuple(tuple(int(x) for x in v) for v in value)
    elif kind is Kind.FLOATS:
        if isinstance(value, list | tuple) and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value
        ):
            return tuple(float(v) for v in value)
    elif kind is Kind.INT_OR_INTS:
        if _is_int(value):
            return int(value)  # type: ignore[call-overload]
        if isinstance(value, list | tuple) and all(_is_int(v) for v in value):
            return tuple(int(v) for v in value)
    elif kind is Kind.ANY:
        return _freeze(value)
    raise ValueError(f"expected {kind.value}, got {value!r}")


@frozen
class AttrField:
    """One field of an attribute schema."""

    name: str
    kind: Kind
    default: Any = REQUIRED
    optional: bool = False
    doc: str = ""

    @property
    def required(self) -> bool:
        """Whether the field has no default and must be given."""
        return self.default is REQUIRED

    def coerce(self, value: object) -> object:
        """The normalized value, or ValueError."""
        if value is None:
            if self.kind is Kind.DTYPE and self.default == "":
                return ""  # a null DataType means "same as the input", spelled ""
            if self.optional:
                return None
            raise ValueError(f"expected {self.kind.value}, got None")
        return _coerce(self.kind, value)


def _attr_fields(items: Iterable[AttrField]) -> tuple[AttrField, ...]:
    return tuple(items)


@frozen
class AttrsSchema:
    """The attribute type of an operator (e.g. `Conv2DAttrs`)."""

    name: str
    fields: tuple[AttrField, ...] = field(converter=_attr_fields)

    def field_named(self, name: str) -> AttrField | None:
        """The field called `name`, if any."""
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def no_attribute_message(self, name: str) -> str:
        """The error for an unknown attribute `name`, listing the fields in order."""
        known = ", ".join(f.name for f in self.fields) or "none"
        return f"{self.name} has no attribute `{name}` (its attributes: {known})"

    def make(self, **values: object) -> Attrs:
        """Check and normalize `values` (missing ones take their defaults)."""
        names = {f.name for f in self.fields}
        unknown = [k for k in values if k not in names]
        if unknown:
            raise AttrsError(self.no_attribute_message(unknown[0]))
        normalized: list[object] = []
        for f in self.fields:
            if f.name in values:
                try:
                    normalized.append(f.coerce(values[f.name]))
                except ValueError as exc:
                    raise AttrsError(f"{self.name}.{f.name}: {exc}") from None
            elif f.required and f.optional:
                normalized.append(None)  # TVM prints these as `units=None`; omitting is the same
            elif f.required:
                raise AttrsError(f"{self.name}: missing required attribute `{f.name}`")
            else:
                normalized.append(_freeze(f.default))
        return Attrs(self, tuple(normalized))


@frozen
class Attrs:
    """An immutable set of values for an `AttrsSchema`; fields read as attributes."""

    schema: AttrsSchema
    values: tuple[object, ...]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        for f, v in zip(self.schema.fields, self.values):
            if f.name == name:
                return v
        raise AttributeError(f"{self.schema.name} has no attribute `{name}`")

    def items(self) -> Iterator[tuple[str, object]]:
        """(name, value) for every field, in declaration order."""
        return zip((f.name for f in self.schema.fields), self.values)

    def non_default_items(self) -> Iterator[tuple[str, object]]:
        """The fields a printer must write: required ones and those not at their default."""
        for f, v in zip(self.schema.fields, self.values):
            if f.required or v != _freeze(f.default):
                yield f.name, v

    def as_dict(self) -> dict[str, object]:
        """The fields as a plain dict."""
        return dict(self.items())

    def __repr__(self) -> str:
        # only what differs from the schema's defaults: `Conv2DAttrs(strides=(2, 2))`
        shown = ", ".join(f"{k}={v!r}" for k, v in self.non_default_items())
        return f"{self.schema.name}({shown})"

    def replace(self, **changes: object) -> Attrs:
        """A copy with some fields changed (checked like `make`)."""
        merged = self.as_dict()
        merged.update(changes)
        new = self.schema.make(**merged)
        return self if new == self else new


def _check_func_attr_value(value: object) -> object:
    value = _freeze(value)
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, tuple):
            stack.extend(v)
        elif v is not None and not isinstance(v, bool | int | float | str | MetaObject):
            raise AttrsError(f"a function attribute must be a literal value, not {v!r}")
    return value


def _to_items(
    items: Mapping[str, object] | Iterable[tuple[str, object]],
) -> tuple[tuple[str, object], ...]:
    pairs = items.items() if isinstance(items, Mapping) else items
    return tuple(sorted((str(k), _check_func_attr_value(v)) for k, v in pairs))


@frozen
class FuncAttrs:
    """Attributes of a function (`Primitive=1`, `global_symbol="f"`), sorted by key."""

    items: tuple[tuple[str, object], ...] = field(default=(), converter=_to_items)

    def get(self, key: str, default: object = None) -> object:
        """The value of `key`, or `default`."""
        for k, v in self.items:
            if k == key:
                return v
        return default

    def __contains__(self, key: object) -> bool:
        return any(k == key for k, _ in self.items)

    def __len__(self) -> int:
        return len(self.items)

    def with_attr(self, key: str, value: object) -> FuncAttrs:
        """A copy with `key` set to `value`."""
        merged = dict(self.items)
        merged[key] = value
        return FuncAttrs(merged)

    def without(self, key: str) -> FuncAttrs:
        """A copy without `key`."""
        return FuncAttrs({k: v for k, v in self.items if k != key})


NO_ATTRS = FuncAttrs()
