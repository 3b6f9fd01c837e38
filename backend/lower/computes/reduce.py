"""Compute definitions of the reductions (`lang/opdefs/reduce.py`).

A reduction is one compute whose whole body is a `Reduce` over the reduced axes (tag
"comm_reduce"); `mean` and `variance` add an elementwise division stage after it, `all` and
`any` of non-bool data reduce `x != 0` as 0/1 in the data's dtype. `argmax`/`argmin` reduce
(index, value) pairs with one tuple combiner: the first index wins ties (the last one with
`select_last_index`), and a NaN beats every number (numpy's rule). Semantics follow
`backend/runtime/op_impls/reduce.py`: with no axis to reduce the data is copied
(argmax/argmin give zeros), max/min of nothing is the dtype's lowest/highest finite value
and max/min propagate NaN (`Max`/`Min` do); the reduced axes and the limits come from
`lang/opdefs/semantics`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ....lang.attrs import Attrs
from ....lang.dtype import numpy_dtype
from ....lang.opdefs.semantics import highest, lowest, reduce_axes
from ....lang.optable import OpTable
from ....lang.types import Type
from ...te.limits import max_value, min_value
from ...te.tensor import ReduceFn, Tensor, comm_reducer, compute, reduce_axis, sum_
from ...tir.dtypes import INDEX_DTYPE, is_bool, is_float
from ...tir.expr import (
    And,
    CommReducer,
    IterVar,
    Or,
    PrimExpr,
    Reduce,
    Var,
    cast,
    const,
    eq,
    max_,
    min_,
    select,
    truncdiv,
)
from ...tir.op import call
from . import ComputeFn
from .elementwise import (
    COMM_REDUCE,
    ELEMWISE,
    as_bool,
    broadcast_load,
    elementwise,
    flat_inputs,
    static_dims,
)
from .transform import ravel

COMPUTES: OpTable[ComputeFn] = OpTable("compute definition")
"""The compute definitions of this family (`computes.COMPUTES` joins the families)."""

max_finite = comm_reducer(max_, lambda t: const(lowest(t), t), "max")
"""Maximum with TVM's identity, the lowest finite value of the dtype."""
min_finite = comm_reducer(min_, lambda t: const(highest(t), t), "min")
"""Minimum with TVM's identity, the highest finite value of the dtype."""
prod_ = comm_reducer(lambda x, y: x * y, lambda t: const(1, t), "prod")
all_bool = comm_reducer(And, lambda t: const(True, t), "all")
"""Logical and of bools."""
any_bool = comm_reducer(Or, lambda t: const(False, t), "any")
"""Logical or of bools."""
all_01 = comm_reducer(min_, lambda t: const(1, t), "all")
"""Logical and of 0/1 values (of a numeric dtype)."""
any_01 = comm_reducer(max_, lambda t: const(0, t), "any")
"""Logical or of 0/1 values (of a numeric dtype)."""


class Plan:
    """Which axes of the data a reduction reduces, and how output indices map to data
    indices (`keepdims` keeps reduced axes as size 1)."""

    def __init__(self, x: Tensor, attrs: Attrs, name: str) -> None:
        self.x = x
        self.dims = static_dims(x)
        self.keepdims = bool(attrs.keepdims)
        axis = attrs.axis
        self.axes = reduce_axes(x.ndim, axis, bool(attrs.exclude)) if x.ndim else ()
        self.raxes = [reduce_axis(self.dims[a], f"r{a}") for a in self.axes]

    @property
    def out_shape(self) -> tuple[int, ...]:
        """The shape of the result."""
        if self.keepdims:
            return tuple(1 if k in self.axes else d for k, d in enumerate(self.dims))
        return tuple(d for k, d in enumerate(self.dims) if k not in self.axes)

    @property
    def count(self) -> int:
        """How many elements each output reduces."""
        return math.prod(self.dims[a] for a in self.axes)

    def data_indices(self, out_idx: Sequence[PrimExpr]) -> list[PrimExpr]:
        """The data indices read for output `out_idx` (reduced axes use the reduce vars)."""
        it = iter(out_idx)
        red = dict(zip(self.axes, self.raxes))
        idx: list[PrimExpr] = []
        for k in range(len(self.dims)):
            if k in red:
                if self.keepdims:
                    next(it)
                idx.append(red[k].var)
            else:
                idx.append(next(it))
        return idx

    def flat_reduce_index(self) -> PrimExpr:
        """The row-major flat index of the reduce vars over the reduced axes."""
        return ravel([r.var for r in self.raxes], [self.dims[a] for a in self.axes])


def _copy(x: Tensor, name: str) -> list[Tensor]:
    return [elementwise(static_dims(x), lambda i: x[tuple(i)], name, ELEMWISE)]


def _reduction(
    plan: Plan, reducer: ReduceFn, value: Callable[[PrimExpr], PrimExpr], name: str
) -> Tensor:
    def body(*i: PrimExpr) -> PrimExpr:
        return reducer(value(plan.x[tuple(plan.data_indices(i))]), axis=plan.raxes)

    return compute(plan.out_shape, body, name=f"{name}_red", tag=COMM_REDUCE)  # type: ignore[no-any-return]


def _simple(
    name: str, pick: Callable[[str], tuple[ReduceFn, Callable[[PrimExpr], PrimExpr]]]
) -> None:
    def fn(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
        x = flat_inputs(inputs)[0]
        assert attrs is not None
        plan = Plan(x, attrs, name)
        if not plan.axes:
            return _copy(x, name)
        reducer, value = pick(x.dtype)
        red = _reduction(plan, reducer, value, name)
        if red.dtype == x.dtype:
            return [red]
        return [elementwise(plan.out_shape, lambda i: cast(x.dtype, red[tuple(i)]), name, ELEMWISE)]

    fn.__name__ = name
    fn.__doc__ = f"The compute of `{name}` over the reduced axes."
    COMPUTES.register(name)(fn)


def _identity(e: PrimExpr) -> PrimExpr:
    return e


def _zero_one(x: PrimExpr) -> PrimExpr:
    return select(as_bool(x), const(1, x.dtype), const(0, x.dtype))


_simple("sum", lambda t: (sum_, _identity))
_simple("prod", lambda t: (prod_, _identity))
_simple("max", lambda t: (max_finite, _identity))
_simple("min", lambda t: (min_finite, _identity))
_simple("all", lambda t: (all_bool, _identity) if is_bool(t) else (all_01, _zero_one))
_simple("any", lambda t: (any_bool, _identity) if is_bool(t) else (any_01, _zero_one))


def divide_by_count(total: PrimExpr, count: int, dtype: str) -> PrimExpr:
    """`total / count` in `dtype`; integers divide toward zero by the count cast to the
    dtype (TVM's `divide(sum, cast(dtype, count))`)."""
    if is_float(dtype):
        return total / const(float(count), dtype)
    divisor = int(np.asarray(count).astype(numpy_dtype(dtype)))
    return truncdiv(total, const(divisor, dtype))


@COMPUTES.register("mean")
def mean(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """The sum over the reduced axes (one stage), divided by their count (a second)."""
    (x,) = flat_inputs(inputs)
    assert attrs is not None
    plan = Plan(x, attrs, "mean")
    if not plan.axes:
        return _copy(x, "mean")
    total = _reduction(plan, sum_, _identity, "mean")
    count = plan.count
    return [
        elementwise(
            plan.out_shape,
            lambda i: divide_by_count(total[tuple(i)], count, x.dtype),
            "mean",
            ELEMWISE,
        )
    ]


@COMPUTES.register("variance")
def variance(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`sum((data - mean)**2) / (count - unbiased)` (the mean broadcast numpy-style)."""
    x, m = flat_inputs(inputs)
    assert attrs is not None
    plan = Plan(x, attrs, "variance")
    if x.ndim == 0:
        return _copy(x, "variance")

    def square(idx: Sequence[PrimExpr]) -> PrimExpr:
        diff = x[tuple(idx)] - broadcast_load(m, idx)
        return diff * diff

    if plan.axes:
        total = compute(
            plan.out_shape,
            lambda *i: sum_(square(plan.data_indices(i)), axis=plan.raxes),
            name="variance_red",
            tag=COMM_REDUCE,
        )
    else:  # nothing to reduce: each element is its own sum of one square
        total = elementwise(plan.out_shape, square, "variance_sq", ELEMWISE)
    count = plan.count - (1 if attrs.unbiased else 0)

    def divide(i: Sequence[PrimExpr]) -> PrimExpr:
        t = total[tuple(i)]
        if is_float(x.dtype):
            return t / const(float(count), x.dtype)
        return cast(x.dtype, truncdiv(cast(INDEX_DTYPE, t), const(count)))

    return [elementwise(plan.out_shape, divide, "variance", ELEMWISE)]


def arg_reducer(dtype: str, largest: bool, last_wins: bool) -> CommReducer:
    """The (index: int32, value: dtype) combiner of argmax (`largest`) or argmin: the
    better value wins, ties go to the smaller index (the larger with `last_wins`). The
    identity's index loses every tie and its value every comparison. For floats NaN is
    better than every number and NaNs tie with each other (numpy: the first NaN wins)."""
    li, lv = Var("li", "int32"), Var("lv", dtype)
    ri, rv = Var("ri", "int32"), Var("rv", dtype)
    better = (lv > rv) if largest else (lv < rv)
    tie_to_lhs = (li > ri) if last_wins else (li < ri)
    keep = better | (eq(lv, rv) & tie_to_lhs)  # false when either value is NaN
    if is_float(dtype):  # a NaN lhs beats a number and ties with a NaN
        keep = select(call("isnan", lv), ~call("isnan", rv) | tie_to_lhs, keep)
    worst = min_value(dtype) if largest else max_value(dtype)
    identity_index = -1 if last_wins else int(np.iinfo(np.int32).max)
    return CommReducer(
        (li, lv),
        (ri, rv),
        (select(keep, li, ri), select(keep, lv, rv)),
        (const(identity_index, "int32"), worst),
        "argmax" if largest else "argmin",
    )


def _arg_reduce(name: str, largest: bool) -> None:
    def fn(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
        (x,) = flat_inputs(inputs)
        assert attrs is not None
        plan = Plan(x, attrs, name)
        if not plan.axes:
            return [elementwise(static_dims(x), lambda i: const(0, "int32"), name, ELEMWISE)]
        combiner = arg_reducer(x.dtype, largest, bool(attrs.select_last_index))
        axes: tuple[IterVar, ...] = tuple(plan.raxes)

        def body(*i: PrimExpr) -> list[PrimExpr]:
            source = (
                cast("int32", plan.flat_reduce_index()),
                plan.x[tuple(plan.data_indices(i))],
            )
            cond = const(True, "bool")
            return [Reduce(combiner, source, axes, cond, k) for k in range(2)]

        index, _value = compute(plan.out_shape, body, name=name, tag=COMM_REDUCE)
        return [index]

    fn.__name__ = name
    fn.__doc__ = f"The compute of `{name}`: int32 index into the flattened reduced axes."
    COMPUTES.register(name)(fn)


_arg_reduce("argmax", largest=True)
_arg_reduce("argmin", largest=False)
