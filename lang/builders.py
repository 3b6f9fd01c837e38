"""IR builders: `relay.var`, `relay.const` and one Python function per operator.

The operator builders are made from the operator table, so they cannot drift from it:
`relay.nn.conv2d(x, w, padding=(1, 1))` is `Call(get_op("nn.conv2d"), [x, w], attrs)` with
the attributes checked by the operator's schema exactly as the parser checks `key=value`
text (one code path: `Op.make_attrs`), and the same messages for an unknown attribute or a
value of the wrong kind.

Each builder has a real `__signature__`: the operator's inputs, then its attributes with the
schema's defaults (the C++ defaults of TVM's attribute structs, which the text format uses).
Attributes may be given positionally in the order TVM's Python API takes them
(`relay.reshape(x, (1, -1))`, `relay.split(x, 2, axis=1)`); `_PYTHON_ORDER` lists the
operators where that order is not "inputs, then the schema's fields". An input may be an
expression, a list of expressions (a `Tuple`, as `concatenate` takes), a Python number or a
numpy array (a constant, with `const`'s dtypes).

Operators that return a tuple (`nn.batch_norm`, `split`, `topk` with `ret_type="both"`)
give a `TupleWrapper`, which indexes to `TupleGetItem` nodes as TVM's does; `nn.dropout`
gives the output alone (`nn.dropout_raw` the pair).

`namespace_builders(prefix)` is every builder of one namespace (`""` for the top level,
`"nn"`, `"image"`, ...); the package root's modules (`relay.op`, `relay.nn`, ...) are filled
from it, and `relay.lang.builder_stubs` writes their `.pyi` stubs from the same signatures.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeAlias

import numpy as np

from .attrs import AttrField, Kind
from .diagnostics import AttrsError, Diagnostic
from .expr import Call, Constant, Expr, Tuple, TupleGetItem, Var
from .op import Op, all_ops, get_op
from .types import AnyDim, ShapeVar, TensorType, Type

ExprLike: TypeAlias = "Expr | TupleWrapper | Sequence[Expr] | np.ndarray | bool | int | float"
"""What an operator builder takes as an input: an expression, a tuple result, a list of
expressions (made a `Tuple`), or a number or numpy array (made a constant)."""

_EMPTY = inspect.Parameter.empty
_POSITIONAL_OR_KEYWORD = inspect.Parameter.POSITIONAL_OR_KEYWORD
_KEYWORD_ONLY = inspect.Parameter.KEYWORD_ONLY

_PYTHON_ORDER: dict[str, tuple[str, ...]] = {
    "argmax": ("data", "axis", "keepdims", "exclude", "select_last_index"),
    "argmin": ("data", "axis", "keepdims", "exclude", "select_last_index"),
    "take": ("data", "indices", "axis", "batch_dims", "mode"),
    "gather": ("data", "axis", "indices"),
    "sparse_to_dense": ("sparse_indices", "output_shape", "sparse_values", "default_value"),
    "strided_slice": ("data", "begin", "end", "strides", "axes", "slice_mode"),
    "matrix_set_diag": ("input", "diagonal"),
    "nn.pad": ("data", "pad_width", "pad_value", "pad_mode"),
    "nn.mirror_pad": ("data", "pad_width", "mode"),
    "nn.contrib_dense_pack": ("data", "weight", "weight_layout", "units", "out_dtype"),
    **{
        f"nn.conv{d}d_transpose": (
            "data",
            "weight",
            "strides",
            "padding",
            "dilation",
            "groups",
            "channels",
            "kernel_size",
            "data_layout",
            "kernel_layout",
            "out_layout",
            "output_padding",
            "out_dtype",
        )
        for d in (1, 2, 3)
    },
}
"""Positional parameters where TVM's Python function orders them differently from "inputs,
then the schema's fields"; the other attributes are keyword-only."""

_ANNOTATIONS: dict[Kind, str] = {
    Kind.INT: "int",
    Kind.FLOAT: "float",
    Kind.BOOL: "bool",
    Kind.STR: "str",
    Kind.DTYPE: "str",
    Kind.INTS: "int | Sequence[int]",
    Kind.INTS_NESTED: "Sequence[Sequence[int]]",
    Kind.FLOATS: "Sequence[float]",
    Kind.INT_OR_INTS: "int | Sequence[int]",
    Kind.ANY: "object",
}


# ----------------------------------------------------------------------------- results


class TupleWrapper:
    """The result of an operator that returns a tuple: `result[i]` is `TupleGetItem`.

    `astuple()` is the call itself; `len()` and iteration give the fields. Passed to a
    builder or to `relay.Tuple`-taking code, use `astuple()` (builders do it themselves).
    """

    __slots__ = ("size", "tuple_value")

    def __init__(self, tuple_value: Expr, size: int) -> None:
        self.tuple_value = tuple_value
        self.size = size

    def astuple(self) -> Expr:
        """The tuple-valued expression."""
        return self.tuple_value

    def __getitem__(self, index: int) -> TupleGetItem:
        if not -self.size <= index < self.size:
            raise IndexError(f"index {index} out of range for a tuple of {self.size}")
        return TupleGetItem(self.tuple_value, index % self.size)

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[TupleGetItem]:
        return (self[i] for i in range(self.size))

    def __repr__(self) -> str:
        return f"TupleWrapper({self.tuple_value!r}, {self.size})"


def _split_size(call: Call) -> int | None:
    assert call.attrs is not None
    sections = call.attrs.indices_or_sections
    return sections if isinstance(sections, int) else len(sections) + 1


def _topk_size(call: Call) -> int | None:
    assert call.attrs is not None
    return 2 if call.attrs.ret_type == "both" else None


_TUPLE_RESULTS: dict[str, tuple[str, Callable[[Call], int | None]]] = {
    "nn.batch_norm": ("TupleWrapper", lambda call: 3),
    "split": ("TupleWrapper", _split_size),
    "topk": ("TupleWrapper | Call", _topk_size),
}
"""Operators whose builders wrap the call: the stub's return type and the tuple size."""


# ----------------------------------------------------------------------------- values


def const(value: object, dtype: str | None = None) -> Constant:
    """A constant tensor from a Python value or a numpy array.

    With `dtype`, the value is converted to it. Without, TVM's defaults: a Python float (or
    a list of them) is float32, an int int32 (int64 if it does not fit), a bool bool; a numpy
    array or scalar keeps its dtype.
    """
    if isinstance(value, Constant):
        value = value.data
    if dtype is not None:
        from .dtype import numpy_dtype

        return Constant(np.asarray(value, dtype=numpy_dtype(dtype)))
    if isinstance(value, np.ndarray | np.generic):
        return Constant(np.asarray(value))
    array = np.asarray(value)
    if array.dtype == np.float64:
        array = array.astype(np.float32)
    elif array.dtype == np.int64 and (
        array.size == 0 or (array.min() >= -(2**31) and array.max() < 2**31)
    ):
        array = array.astype(np.int32)
    elif array.dtype.kind not in "biuf":
        raise TypeError(f"const: cannot make a constant from {value!r}")
    return Constant(array)


def _dim(value: object) -> int | ShapeVar | AnyDim:
    if isinstance(value, np.integer):
        return int(value)
    return value  # type: ignore[return-value]  # TensorType checks the dimension


def var(
    name_hint: str,
    type_annotation: Type | str | None = None,
    shape: int | Sequence[int | ShapeVar | AnyDim] | None = None,
    dtype: str | None = None,
) -> Var:
    """A new variable: `relay.var("x", shape=(1, 3), dtype="float32")`.

    `shape` (an int is a 1-D shape) makes the annotation `Tensor[shape, dtype]`, dtype
    float32 unless given; a string annotation is a scalar of that dtype (`var("n", "int32")`);
    `type_annotation` may also be any type. A dtype without a shape is an error (TVM
    silently drops it): give `shape=()` for a scalar.
    """
    if type_annotation is not None and shape is not None:
        raise ValueError("relay.var: give either type_annotation or shape, not both")
    if shape is not None:
        dims = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
        type_annotation = TensorType(tuple(_dim(d) for d in dims), dtype or "float32")
    elif dtype is not None:
        if type_annotation is not None:
            raise ValueError("relay.var: give either type_annotation or dtype, not both")
        raise ValueError(f"relay.var: dtype {dtype!r} needs a shape (shape=() for a scalar)")
    elif isinstance(type_annotation, str):
        type_annotation = TensorType((), type_annotation)
    elif type_annotation is not None and not isinstance(type_annotation, Type):
        raise TypeError(f"relay.var: type_annotation must be a type, got {type_annotation!r}")
    return Var(name_hint, type_annotation)


def as_expr(value: object, what: str = "value") -> Expr:
    """`value` as an expression: tuple results and lists of expressions become tuples,
    numbers and numpy arrays constants; TypeError naming `what` for anything else."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, TupleWrapper):
        return value.astuple()
    if isinstance(value, list | tuple) and all(isinstance(v, Expr | TupleWrapper) for v in value):
        return Tuple([as_expr(v, what) for v in value])
    if isinstance(value, bool | int | float | np.ndarray | np.generic):
        return const(value)
    raise TypeError(
        f"{what} must be an expression (or a list of expressions, a number or a numpy "
        f"array), got {type(value).__name__} {value!r}"
    )


# ----------------------------------------------------------------------------- signatures


def _attr_default(f: AttrField) -> object:
    if f.required:
        return None if f.optional else _EMPTY
    default = f.default
    return tuple(default) if isinstance(default, list) else default


def _attr_annotation(f: AttrField) -> str:
    text = _ANNOTATIONS[f.kind]
    if f.optional or _attr_default(f) is None:
        text += " | None"
    return text


def _builder_parameters(op: Op) -> list[inspect.Parameter]:
    inputs = list(op.arg_names)
    fields = {f.name: f for f in op.attrs_schema.fields} if op.attrs_schema else {}
    everything = inputs + list(fields)
    order = _PYTHON_ORDER.get(op.name, tuple(everything))
    unknown = set(order) - set(everything)
    if unknown:
        raise ValueError(f"builder order of `{op.name}` names unknown parameters {unknown}")
    # in TVM's order an attribute may sit between inputs (`gather(data, axis, indices)`):
    # it is then required, as it is in TVM
    last_input = max((order.index(n) for n in inputs if n in order), default=-1)
    params: list[inspect.Parameter] = []
    positional = True
    seen_default = False
    for name in [*order, *(n for n in everything if n not in order)]:
        if name in fields:
            default, annotation = _attr_default(fields[name]), _attr_annotation(fields[name])
            if name in order and order.index(name) < last_input:
                default = _EMPTY
        else:
            default, annotation = _EMPTY, "ExprLike"
        if name not in order or (default is _EMPTY and seen_default):
            positional = False
        seen_default = seen_default or default is not _EMPTY
        kind = _POSITIONAL_OR_KEYWORD if positional else _KEYWORD_ONLY
        params.append(inspect.Parameter(name, kind, default=default, annotation=annotation))
    return params


def _return_annotation(op: Op) -> str:
    return _TUPLE_RESULTS[op.name][0] if op.name in _TUPLE_RESULTS else "Call"


def builder_signature(op: Op) -> inspect.Signature:
    """The Python signature of `op`'s builder (annotations are strings, as in the stubs)."""
    return inspect.Signature(_builder_parameters(op), return_annotation=_return_annotation(op))


def _unknown_key_error(op: Op, key: str) -> AttrsError:
    """The parser's error for an unknown attribute, with its "did you mean" note."""
    if op.attrs_schema is None:
        return AttrsError(f"operator `{op.name}` takes no attributes, got `{key}`")
    known = [f.name for f in op.attrs_schema.fields]
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    notes = (f"did you mean `{close[0]}`?",) if close else ()
    return AttrsError(Diagnostic("error", op.attrs_schema.no_attribute_message(key), None, notes))


def _docstring(op: Op, signature: inspect.Signature) -> str:
    lines = [op.description or f"The `{op.name}` operator.", ""]
    lines.append(f"Builds a call of the `{op.name}` operator.")
    if op.arg_names:
        lines.append(f"Inputs: {', '.join(op.arg_names)}.")
    schema = op.attrs_schema
    if schema is not None:
        lines.append(f"Attributes ({schema.name}):")
        for f in schema.fields:
            default = "required" if f.required and not f.optional else repr(_attr_default(f))
            kind = f.kind.value + (" or None" if f.optional else "")
            lines.append(f"    {f.name}: {kind} = {default}")
    return "\n".join(lines)


def _module_of(prefix: str) -> str:
    return f"relay.{prefix}" if prefix else "relay.op"


def make_builder(op: Op) -> Callable[..., Any]:
    """The builder function of `op`, named after it (`conv2d` for `nn.conv2d`)."""
    signature = builder_signature(op)
    names = set(signature.parameters)
    inputs = op.arg_names
    prefix, _, short = op.name.rpartition(".")
    display = f"{prefix}.{short}" if prefix else short
    tuple_result = _TUPLE_RESULTS.get(op.name)

    def builder(*args: Any, **kwargs: Any) -> Any:
        for key in kwargs:
            if key not in names:
                raise _unknown_key_error(op, key)
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{display}(): {exc}") from None
        values = bound.arguments
        args_ = [as_expr(values[n], f"argument `{n}` of {display}") for n in inputs]
        attrs = op.make_attrs(**{k: v for k, v in values.items() if k not in inputs})
        call = Call(op, args_, attrs)
        if tuple_result is not None:
            size = tuple_result[1](call)
            if size is not None:
                return TupleWrapper(call, size)
        return call

    builder.__name__ = short
    builder.__qualname__ = short
    builder.__module__ = _module_of(prefix)
    builder.__doc__ = _docstring(op, signature)
    builder.__signature__ = signature  # type: ignore[attr-defined]
    return builder


# ----------------------------------------------------------------------------- special builders


def _scalar_of(value: Expr) -> object:
    if isinstance(value, Constant) and value.is_scalar:
        return value.data.item()
    return None


def arange(
    start: ExprLike,
    stop: ExprLike | None = None,
    step: ExprLike | None = None,
    dtype: str = "float32",
) -> Call:
    """Evenly spaced values in [start, stop) by step, as numpy's `arange`.

    With one argument it is `stop` (start 0); numbers become scalar constants of `dtype`,
    and constant bounds are also kept as the attributes the type relation reads.
    """
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    exprs: list[Expr] = []
    scalars: list[object] = []
    for name, value in (("start", start), ("stop", stop), ("step", step)):
        if isinstance(value, bool | int | float | np.number):
            value = const(value, dtype)
        expr = as_expr(value, f"argument `{name}` of arange")
        exprs.append(expr)
        scalars.append(_scalar_of(expr))
    op = get_op("arange")
    attrs = op.make_attrs(start=scalars[0], stop=scalars[1], step=scalars[2], dtype=dtype)
    return Call(op, exprs, attrs)


def _dropout_raw(data: ExprLike, rate: float = 0.5) -> TupleWrapper:
    """Dropout that also returns the mask: `(output, mask)`."""
    op = get_op("nn.dropout")
    return TupleWrapper(
        Call(op, [as_expr(data, "argument `data` of nn.dropout")], op.make_attrs(rate=rate)), 2
    )


def _dropout(data: ExprLike, rate: float = 0.5) -> TupleGetItem:
    """Dropout (an identity at inference): the output of `nn.dropout`, without the mask."""
    return _dropout_raw(data, rate)[0]


def _special(fn: Callable[..., Any], name: str, prefix: str) -> Callable[..., Any]:
    fn.__name__ = name
    fn.__qualname__ = name
    fn.__module__ = _module_of(prefix)
    return fn


def _special_builders() -> dict[str, dict[str, Callable[..., Any]]]:
    return {
        "": {"arange": _special(arange, "arange", "")},
        "nn": {
            "dropout": _special(_dropout, "dropout", "nn"),
            "dropout_raw": _special(_dropout_raw, "dropout_raw", "nn"),
        },
    }


# ----------------------------------------------------------------------------- namespaces


def namespaces() -> list[str]:
    """Every operator name prefix (`""` for the top level, `"nn"`, `"image"`, ...)."""
    return sorted({op.name.rpartition(".")[0] for op in all_ops()})


@functools.cache
def _namespace_builders(prefix: str) -> dict[str, Callable[..., Any]]:
    special = _special_builders().get(prefix, {})
    found = {
        op.name.rpartition(".")[2]: make_builder(op)
        for op in all_ops()
        if op.name.rpartition(".")[0] == prefix and op.name.rpartition(".")[2] not in special
    }
    found.update(special)
    return dict(sorted(found.items()))


def namespace_builders(prefix: str) -> dict[str, Callable[..., Any]]:
    """The builders of the operators named `prefix.name`, by `name` (sorted)."""
    if prefix not in namespaces():
        raise ValueError(f"no operator is named `{prefix}.*`")
    return dict(_namespace_builders(prefix))
