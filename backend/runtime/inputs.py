"""Checking the inputs of a program against its parameters' annotations.

Shared by every executor (the interpreter now, compiled modules later): a missing,
unexpected or ill-shaped input is an `InputError` naming the argument, what was expected
and what was given, before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...lang.adt import Constructor
from ...lang.diagnostics import InputError
from ...lang.dtype import dtype_of_array, numpy_dtype
from ...lang.expr import Function, Var
from ...lang.op import Op
from ...lang.types import (
    AnyDim,
    FuncType,
    RefType,
    ShapeVar,
    TensorType,
    TupleType,
    Type,
    TypeCall,
)
from .values import Closure, ConstructorValue, RefValue, Value, format_value


def bind_inputs(
    function: Function, args: tuple[Value, ...], inputs: Mapping[str, Value], where: str
) -> list[Value]:
    """The argument list for `function` from positional `args` and named `inputs`, checked
    against the parameters' annotations (`InputError` naming the argument otherwise)."""
    params = function.params
    names = [p.name_hint for p in params]
    if len(args) > len(params):
        raise InputError.at(
            function.span, f"{where} takes {len(params)} arguments, got {len(args)}"
        )
    given: dict[int, Value] = dict(enumerate(args))
    for key, value in inputs.items():
        if key not in names:
            known = ", ".join(names) or "none"
            raise InputError.at(
                function.span, f"unexpected argument `{key}` (parameters of {where}: {known})"
            )
        index = names.index(key)
        if index in given:
            raise InputError.at(params[index].span, f"argument `{key}` is given twice")
        given[index] = value
    shape_vars: dict[ShapeVar, int] = {}
    values = []
    for index, param in enumerate(params):
        annotation = param.type_annotation
        if index not in given:
            expected = f" ({describe_type(annotation)})" if annotation is not None else ""
            raise InputError.at(param.span, f"missing argument `{param.name_hint}`{expected}")
        value = given[index]
        if annotation is not None:
            value = check_input(param, annotation, value, shape_vars)
        values.append(value)
    return values


def check_input(
    param: Var, annotation: Type, value: Value, shape_vars: dict[ShapeVar, int]
) -> Value:
    """`value` converted (Python numbers to arrays) and checked against `annotation`."""
    name = param.name_hint
    if isinstance(annotation, TensorType) and isinstance(
        value, bool | int | float | list | np.generic
    ):
        value = _to_array(value, annotation)
    stack: list[tuple[Type, Value, str]] = [(annotation, value, "")]
    while stack:
        ty, v, path = stack.pop()
        where = f"argument `{name}`{path}"
        if isinstance(ty, TensorType):
            if not isinstance(v, np.ndarray):
                raise InputError.at(
                    param.span,
                    f"{where}: expected {describe_type(ty)}, got {format_value(v)}",
                )
            problem = _tensor_mismatch(ty, v, shape_vars)
            if problem:
                raise InputError.at(
                    param.span,
                    f"{where}: expected {describe_type(ty)}, got {describe_array(v)}{problem}",
                )
        elif isinstance(ty, TupleType):
            if not isinstance(v, tuple) or len(v) != len(ty.fields):
                raise InputError.at(
                    param.span,
                    f"{where}: expected a tuple {describe_type(ty)}, got {format_value(v)}",
                )
            stack.extend((t, f, f"{path}.{i}") for i, (t, f) in enumerate(zip(ty.fields, v)))
        elif isinstance(ty, TypeCall):
            if not isinstance(v, ConstructorValue) or v.constructor.belong_to is not ty.func:
                raise InputError.at(
                    param.span,
                    f"{where}: expected a value of type {ty.func.name_hint}, got {format_value(v)}",
                )
        elif isinstance(ty, FuncType):
            if not isinstance(v, Closure | Op | Constructor):
                raise InputError.at(
                    param.span, f"{where}: expected a function, got {format_value(v)}"
                )
        elif isinstance(ty, RefType) and not isinstance(v, RefValue):
            raise InputError.at(param.span, f"{where}: expected a reference, got {format_value(v)}")
    return value


def _to_array(value: Value, ty: TensorType) -> np.ndarray:
    """A Python number or list as an array of the annotated dtype when that loses nothing of
    its kind (ints to ints or floats, floats to floats, bools to bools); otherwise as numpy
    reads it, so that the dtype check reports the mismatch. Numpy scalars keep their dtype."""
    raw = np.asarray(value)
    if isinstance(value, np.generic):
        return raw
    target = numpy_dtype(ty.dtype)
    source, goal = raw.dtype.kind, target.kind
    if source == goal or (source in "iu" and goal in "iuf"):
        try:
            return np.asarray(value, dtype=target)
        except (OverflowError, ValueError, TypeError):
            return raw
    return raw


def _tensor_mismatch(ty: TensorType, array: np.ndarray, shape_vars: dict[ShapeVar, int]) -> str:
    """Why `array` does not fit `ty` ('' if it does); binds shape variables consistently."""
    try:
        if array.dtype != numpy_dtype(ty.dtype):
            return " (wrong dtype)"
    except ValueError:
        return " (unsupported dtype)"
    if array.ndim != len(ty.shape):
        return " (wrong rank)"
    for axis, (dim, size) in enumerate(zip(ty.shape, array.shape)):
        if isinstance(dim, AnyDim):
            continue
        if isinstance(dim, ShapeVar):
            bound = shape_vars.setdefault(dim, size)
            if bound != size:
                return f" (dimension {axis} is {dim.name_hint} = {bound} from an earlier axis)"
        elif dim != size:
            return f" (wrong size of dimension {axis})"
    return ""


def describe_type(ty: Type | None) -> str:
    """A short text form of a type for messages, as the text format writes it:
    `Tensor[(1, 3), float32]`, `int32` for a scalar, `(A, B)` for a tuple."""
    out: list[str] = []
    stack: list[Type | str | None] = [ty]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, TensorType):
            dims = ", ".join(_describe_dim(d) for d in item.shape)
            out.append(f"Tensor[({dims}), {item.dtype}]" if item.shape else item.dtype)
        elif isinstance(item, TupleType):
            parts: list[Type | str | None] = ["("]
            for i, f in enumerate(item.fields):
                parts.extend([", ", f] if i else [f])
            parts.append(")")
            stack.extend(reversed(parts))
        elif isinstance(item, TypeCall):
            out.append(item.func.name_hint)
        else:
            out.append(repr(item))
    return "".join(out)


def _describe_dim(dim: object) -> str:
    if isinstance(dim, AnyDim):
        return "?"
    if isinstance(dim, ShapeVar):
        return dim.name_hint
    return str(dim)


def describe_array(array: np.ndarray) -> str:
    """The tensor type of an array, as `describe_type` writes it."""
    try:
        dtype = dtype_of_array(array)
    except ValueError:
        dtype = str(array.dtype)
    dims = ", ".join(str(d) for d in array.shape)
    return f"Tensor[({dims}), {dtype}]" if array.ndim else dtype
