"""Tensor expressions: tensors defined by what each element is.

    A = placeholder((n, k), "float32", "A")
    B = placeholder((k, m), "float32", "B")
    r = reduce_axis(k, "r")
    C = compute((n, m), lambda i, j: sum_(A[i, r] * B[r, j], axis=r), name="C")

`compute` builds a `ComputeOp` whose `axis` are data-parallel `IterVar`s named after the
lambda's parameters and whose `body` is a loop-IR expression in them; `A[i, r]` is a
`ProducerLoad`. A body that is a `Reduce` (only at the top of a body) reduces over its
reduce axes. `extern` defines a tensor by a loop-IR statement instead (sorting, NMS, ...).
Tensors and operations are compared by identity.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Union

from attrs import field, frozen

from ..tir.buffer import Buffer, decl_buffer
from ..tir.dtypes import INDEX_DTYPE
from ..tir.expr import (
    CommReducer,
    ExprLike,
    IterKind,
    IterVar,
    PrimExpr,
    Range,
    Reduce,
    Var,
    as_tuple,
    cast,
    const,
    convert,
    max_,
    min_,
)
from ..tir.stmt import Stmt

Shape = Sequence[Union[int, PrimExpr]]  # noqa: UP007


def _dims(shape: Shape) -> tuple[PrimExpr, ...]:
    return tuple(convert(d) if not isinstance(d, PrimExpr) else d for d in shape)


class Operation:
    """Base of the operations that produce tensors."""

    __slots__ = ()
    name: str

    @property
    def num_outputs(self) -> int:
        """How many tensors the operation produces."""
        raise NotImplementedError

    def output(self, index: int = 0) -> Tensor:
        """The `index`-th output tensor (the same object every time)."""
        return self.outputs[index]  # type: ignore[attr-defined,no-any-return]

    @property
    def input_tensors(self) -> tuple[Tensor, ...]:
        """The tensors this operation reads."""
        raise NotImplementedError


@frozen(eq=False)
class Tensor:
    """Output `value_index` of `op`, with its shape and element dtype.
    `T[i, j]` reads one element (a `ProducerLoad`)."""

    op: Operation
    value_index: int
    shape: tuple[PrimExpr, ...] = field(converter=_dims)
    dtype: str

    @property
    def name(self) -> str:
        """The producing operation's name (with `.k` for outputs after the first)."""
        return self.op.name if self.value_index == 0 else f"{self.op.name}.{self.value_index}"

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    def __getitem__(self, indices: Any) -> PrimExpr:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != len(self.shape):
            raise IndexError(
                f"{self.name} has {len(self.shape)} dimensions, indexed with {len(indices)}"
            )
        converted = tuple(
            i.var if isinstance(i, IterVar) else cast(INDEX_DTYPE, convert(i)) for i in indices
        )
        return ProducerLoad(self, converted)

    def __repr__(self) -> str:
        return f"Tensor({self.name}, shape={len(self.shape)}d, {self.dtype})"


@frozen(eq=False)
class ProducerLoad(PrimExpr):
    """One element of a tensor (`tensor[indices]`), inside a compute body."""

    producer: Tensor
    indices: tuple[PrimExpr, ...] = field(converter=as_tuple)

    @property
    def dtype(self) -> str:  # type: ignore[override]
        """The tensor's element dtype."""
        return self.producer.dtype


@frozen(eq=False)
class PlaceholderOp(Operation):
    """An input tensor."""

    name: str
    shape: tuple[PrimExpr, ...] = field(converter=_dims)
    dtype: str
    outputs: tuple[Tensor, ...] = field(init=False, factory=tuple)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "outputs", (Tensor(self, 0, self.shape, self.dtype),))

    @property
    def num_outputs(self) -> int:
        """One."""
        return 1

    @property
    def input_tensors(self) -> tuple[Tensor, ...]:
        """None."""
        return ()


@frozen(eq=False)
class ComputeOp(Operation):
    """Tensors defined elementwise: output `k` at `axis` is `body[k]`. Several bodies share
    the axes (and, when they are `Reduce`s, one reduction with a tuple combiner)."""

    name: str
    tag: str
    attrs: Mapping[str, Any]
    axis: tuple[IterVar, ...] = field(converter=as_tuple)
    body: tuple[PrimExpr, ...] = field(converter=as_tuple)
    outputs: tuple[Tensor, ...] = field(init=False, factory=tuple)

    def __attrs_post_init__(self) -> None:
        shape = tuple(iv.dom.extent for iv in self.axis)
        outs = tuple(Tensor(self, k, shape, b.dtype) for k, b in enumerate(self.body))
        object.__setattr__(self, "outputs", outs)

    @property
    def reduce_axis(self) -> tuple[IterVar, ...]:
        """The reduction axes (of the body's `Reduce`, empty when it has none)."""
        first = self.body[0]
        return first.axis if isinstance(first, Reduce) else ()

    @property
    def num_outputs(self) -> int:
        """The number of bodies."""
        return len(self.body)

    @property
    def input_tensors(self) -> tuple[Tensor, ...]:
        """Tensors read by the bodies, in first-use order (found once per operation: the
        bodies never change, and schedules ask often)."""
        found = _INPUTS.get(self)
        if found is None:
            from .analysis import tensors_read

            found = _INPUTS[self] = tensors_read(self.body)
        return found


_INPUTS: weakref.WeakKeyDictionary[ComputeOp, tuple[Tensor, ...]] = weakref.WeakKeyDictionary()
"""`ComputeOp.input_tensors` of each live operation."""


@frozen(eq=False)
class ExternOp(Operation):
    """Tensors defined by a loop-IR statement that reads `input_buffers` and writes
    `output_buffers` (sorting, NMS, scans: what is awkward elementwise)."""

    name: str
    tag: str
    inputs: tuple[Tensor, ...] = field(converter=as_tuple)
    input_buffers: tuple[Buffer, ...] = field(converter=as_tuple)
    output_buffers: tuple[Buffer, ...] = field(converter=as_tuple)
    body: Stmt
    outputs: tuple[Tensor, ...] = field(init=False, factory=tuple)

    def __attrs_post_init__(self) -> None:
        outs = tuple(Tensor(self, k, b.shape, b.dtype) for k, b in enumerate(self.output_buffers))
        object.__setattr__(self, "outputs", outs)

    @property
    def num_outputs(self) -> int:
        """The number of output buffers."""
        return len(self.output_buffers)

    @property
    def input_tensors(self) -> tuple[Tensor, ...]:
        """The declared inputs."""
        return self.inputs


# ------------------------------------------------------------------------------ constructors


def placeholder(shape: Shape, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor."""
    return PlaceholderOp(name, _dims(shape), dtype).outputs[0]


def _axis_var_names(fcompute: Callable[..., Any], ndim: int) -> list[str]:
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        params = []
    if len(params) == ndim and all(p.kind == p.POSITIONAL_OR_KEYWORD for p in params):
        return [p.name for p in params]
    return [f"ax{k}" for k in range(ndim)]


def compute(
    shape: Shape,
    fcompute: Callable[..., Any],
    name: str = "compute",
    tag: str = "",
    attrs: Mapping[str, Any] | None = None,
) -> Any:
    """The tensor (or tuple of tensors, when `fcompute` returns a list/tuple) whose element at
    index `(i, j, ...)` is `fcompute(i, j, ...)`. `fcompute` may take `*indices`."""
    dims = _dims(shape)
    names = _axis_var_names(fcompute, len(dims))
    axis = tuple(
        IterVar(Var(n, INDEX_DTYPE), Range(const(0), d), IterKind.DATA_PAR)
        for n, d in zip(names, dims)
    )
    result = fcompute(*[iv.var for iv in axis])
    many = isinstance(result, (list, tuple))
    bodies = tuple(convert(b) for b in (result if many else (result,)))
    op = ComputeOp(name, tag, dict(attrs or {}), axis, bodies)
    return op.outputs if many else op.outputs[0]


def extern(
    shapes: Sequence[Shape],
    inputs: Sequence[Tensor],
    fbuild: Callable[[list[Buffer], list[Buffer]], Stmt],
    dtypes: Sequence[str],
    name: str = "extern",
    tag: str = "",
) -> Any:
    """Tensors of `shapes`/`dtypes` written by the statement `fbuild(input_buffers,
    output_buffers)`; one tensor, or a tuple when several shapes are given."""
    in_bufs = [decl_buffer(t.shape, t.dtype, f"{name}_in{k}") for k, t in enumerate(inputs)]
    out_bufs = [
        decl_buffer(_dims(s), d, f"{name}_out{k}") for k, (s, d) in enumerate(zip(shapes, dtypes))
    ]
    op = ExternOp(
        name, tag, tuple(inputs), tuple(in_bufs), tuple(out_bufs), fbuild(in_bufs, out_bufs)
    )
    return op.outputs if len(shapes) > 1 else op.outputs[0]


def reduce_axis(dom: int | PrimExpr | tuple[ExprLike, ExprLike], name: str = "rv") -> IterVar:
    """A reduction axis over `[0, dom)` or `[lo, hi)`."""
    if isinstance(dom, tuple):
        lo, hi = convert(dom[0]), convert(dom[1])
        rng = Range(lo, hi - lo)
    else:
        rng = Range(const(0), convert(dom))
    return IterVar(Var(name, INDEX_DTYPE), rng, IterKind.REDUCE)


ReduceFn = Callable[..., PrimExpr]


def comm_reducer(
    fcombine: Callable[[Var, Var], PrimExpr],
    fidentity: Callable[[str], PrimExpr],
    name: str = "reducer",
) -> ReduceFn:
    """A single-value reducer: `r = comm_reducer(lambda x, y: x + y, lambda t: const(0, t))`,
    then `r(expr, axis=k)` or `r(expr, axis=[k1, k2], where=cond)`."""

    def reduce(
        expr: PrimExpr, axis: IterVar | Sequence[IterVar], where: PrimExpr | None = None
    ) -> PrimExpr:
        axes = (axis,) if isinstance(axis, IterVar) else tuple(axis)
        x, y = Var("x", expr.dtype), Var("y", expr.dtype)
        combiner = CommReducer((x,), (y,), (fcombine(x, y),), (fidentity(expr.dtype),), name)
        cond = where if where is not None else const(True, "bool")
        return Reduce(combiner, (expr,), axes, cond, 0)

    reduce.__name__ = name
    reduce.__doc__ = f"The `{name}` reduction of an expression over reduce axes."
    return reduce


def _min_value(dtype: str) -> PrimExpr:
    from .limits import min_value

    return min_value(dtype)


def _max_value(dtype: str) -> PrimExpr:
    from .limits import max_value

    return max_value(dtype)


sum_ = comm_reducer(lambda x, y: x + y, lambda t: const(0, t), "sum")
prod = comm_reducer(lambda x, y: x * y, lambda t: const(1, t), "prod")
max_reduce = comm_reducer(max_, _min_value, "max")
min_reduce = comm_reducer(min_, _max_value, "min")
