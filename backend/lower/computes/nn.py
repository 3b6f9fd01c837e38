"""Compute definitions of the `nn.*` operators other than convolution and pooling.

Also home of the helpers the conv, pool and image families share: the call's output type,
padding (`pad`, a separate `if_then_else` stage the schedule may inline) and indexing in
TVM layouts (`NCHW8c`: reading a tensor at primal indices, and back). What axis, padding
and layout attributes mean is read with `lang/opdefs/semantics`.

Reductions are the whole body of their compute; normalizations and softmax are several
computes (statistics, then an elementwise stage). Float math runs in the input dtype, as
TVM's topi does; integer products accumulate in `out_dtype` (int8 x int8 into int32).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ....lang.attrs import Attrs
from ....lang.dtype import numpy_dtype
from ....lang.opdefs.semantics import layout_letters, listed_axes, normalize_axis
from ....lang.optable import OpTable
from ....lang.types import AnyDim, TensorType, TupleType, Type
from ...te.limits import min_value
from ...te.tensor import Tensor, comm_reducer, compute, max_reduce, reduce_axis, sum_
from ...tir.dtypes import is_float
from ...tir.expr import (
    ExprLike,
    IntImm,
    IterVar,
    PrimExpr,
    Var,
    all_of,
    cast,
    const,
    max_,
    min_,
    select,
)
from ...tir.op import exp, if_then_else, log, pow_, sqrt
from ..symbolic import dim_expr
from . import ComputeFn

COMPUTES: OpTable[ComputeFn] = OpTable("compute definition")
"""The compute definitions of this family (`computes.COMPUTES` joins the families)."""

Index = tuple[PrimExpr, ...]

# -------------------------------------------------------------------------- shared helpers


def tensor_type(out_type: Type, index: int | None = None) -> tuple[tuple[int, ...], str]:
    """The static shape and dtype of the call's result (field `index` of a tuple type)."""
    t = (
        out_type.fields[index]
        if index is not None and isinstance(out_type, TupleType)
        else out_type
    )
    if not isinstance(t, TensorType) or any(isinstance(d, AnyDim) for d in t.shape):
        raise ValueError(f"compute definitions need a static tensor type, got {t}")
    # a dynamic-shape kernel's symbolic dimensions come through as loop-IR variables
    return tuple(dim_expr(d) for d in t.shape), t.dtype  # type: ignore[misc]


def int_shape(t: Tensor) -> tuple[int, ...]:
    """The static shape of a tensor as Python ints (in a dynamic-shape kernel, a symbolic
    dimension stays its loop-IR variable)."""
    dims: list[Any] = []
    for d in t.shape:
        if isinstance(d, IntImm):
            dims.append(d.value)
        elif isinstance(d, Var):
            dims.append(d)
        else:
            raise ValueError(f"tensor {t.name} has a computed symbolic dimension")
    return tuple(dims)


def per_axis(values: Sequence[int], ndim: int) -> list[int]:
    """An attribute with one value per spatial axis (a single value applies to all)."""
    vals = [int(v) for v in values]
    return vals * ndim if len(vals) == 1 else vals


def in_range(index: PrimExpr, extent: int) -> PrimExpr:
    """`0 <= index < extent`."""
    return all_of(index >= 0, index < extent)


def pad(
    x: Tensor,
    before: Sequence[int],
    after: Sequence[int],
    value: ExprLike = 0,
    name: str = "pad",
) -> Tensor:
    """`x` with `before[i]`/`after[i]` elements of `value` around axis `i` (`x` itself when
    nothing is padded); a separate injective stage tagged `injective,pad`."""
    if not any(before) and not any(after):
        return x
    shape = int_shape(x)
    fill = value if isinstance(value, PrimExpr) else const(value, x.dtype)

    def body(*idx: PrimExpr) -> PrimExpr:
        conds = [in_range(i - b, n) for i, b, n, a in zip(idx, before, shape, after) if b or a]
        src = tuple(i - b if b else i for i, b in zip(idx, before))
        return if_then_else(all_of(*conds), x[src], fill)

    out_shape = [n + b + a if b or a else n for n, b, a in zip(shape, before, after)]
    return compute(out_shape, body, name=name, tag="injective,pad")  # type: ignore[no-any-return]


def identity_like(x: Tensor, name: str, tag: str = "elemwise") -> Tensor:
    """A copy of `x` (a compute that reads each element)."""
    return compute(x.shape, lambda *i: x[i], name=name, tag=tag)  # type: ignore[no-any-return]


def _replace(index: Index, axis: int, value: PrimExpr) -> Index:
    return (*index[:axis], value, *index[axis + 1 :])


def _insert(index: Index, axis: int, value: PrimExpr) -> Index:
    return (*index[:axis], value, *index[axis:])


def _transposed(index: Index, ndim: int, k: PrimExpr) -> Index:
    """The index of `a[..., k, m]` for output index `(..., m, n)` (a transposed operand)."""
    return (*index[: ndim - 2], k, index[-2])


def _drop(index: Index, axis: int) -> Index:
    return (*index[:axis], *index[axis + 1 :])


# ----------------------------------------------------------------------------------- layouts


def primal_sizes(layout: str, shape: Sequence[int]) -> dict[str, int]:
    """The size of each primal (upper-case) axis: outer size times its sub-axis size."""
    letters = layout_letters(layout)
    if len(letters) != len(shape):
        raise ValueError(f"a tensor of rank {len(shape)} does not have layout `{layout}`")
    sizes = {a: n for a, n in zip(letters, shape) if a.isupper()}
    for a, n in zip(letters, shape):
        if a.islower():
            sizes[a.upper()] *= n
    return sizes


def layout_index(layout: str, shape: Sequence[int], primal: dict[str, PrimExpr]) -> Index:
    """The index into a tensor of `layout`/`shape` of the element at primal indices."""
    letters = layout_letters(layout)
    factors = {a.upper(): n for a, n in zip(letters, shape) if a.islower()}
    index = []
    for a in letters:
        if a.isupper():
            f = factors.get(a)
            index.append(primal[a] // f if f else primal[a])
        else:
            index.append(primal[a.upper()] % factors[a.upper()])
    return tuple(index)


def primal_index(layout: str, shape: Sequence[int], index: Sequence[PrimExpr]) -> dict[str, Any]:
    """The primal indices of the element at `index` of a tensor of `layout`/`shape`."""
    letters = layout_letters(layout)
    factors = {a.upper(): n for a, n in zip(letters, shape) if a.islower()}
    inner = {a.upper(): i for a, i in zip(letters, index) if a.islower()}
    result: dict[str, Any] = {}
    for a, i in zip(letters, index):
        if a.isupper():
            result[a] = i * factors[a] + inner[a] if a in factors else i
    return result


# -------------------------------------------------------------------------- dense, matmul


def _matmul_attrs(kind: str, a: Tensor, b: Tensor, out_dtype: str) -> dict[str, object]:
    return {"workload": (kind, int_shape(a), int_shape(b), out_dtype), "out_dtype": out_dtype}


@COMPUTES.register("nn.dense")
def dense(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`out[..., j] = sum_k data[..., k] * weight[j, k]` in `out_dtype`."""
    assert attrs is not None
    data, weight = inputs
    shape, od = tensor_type(out_type)
    k = reduce_axis(int_shape(data)[-1], "k")

    def body(*i: PrimExpr) -> PrimExpr:
        return sum_(
            cast(od, data[_replace(i, len(i) - 1, k.var)]) * cast(od, weight[i[-1], k]), axis=k
        )

    out = compute(shape, body, "dense", "dense", _matmul_attrs("dense", data, weight, od))
    return [out]


@COMPUTES.register("nn.contrib_dense_pack")
def dense_pack(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Dense whose weight has `weight_layout` (e.g. `NC8n`: `(units / 8, k, 8)`)."""
    assert attrs is not None
    data, weight = inputs
    shape, od = tensor_type(out_type)
    wl, ws = str(attrs.weight_layout), int_shape(weight)
    k = reduce_axis(int_shape(data)[-1], "k")

    def body(*i: PrimExpr) -> PrimExpr:
        w = weight[layout_index(wl, ws, {"N": i[-1], "C": k.var})]
        return sum_(cast(od, data[_replace(i, len(i) - 1, k.var)]) * cast(od, w), axis=k)

    info = _matmul_attrs("dense_pack", data, weight, od) | {"weight_layout": wl}
    return [compute(shape, body, "dense_pack", "dense", info)]


@COMPUTES.register("nn.matmul")
def matmul(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`op(a) @ op(b)` with op a transpose of the last two axes when asked; b is 2-D."""
    assert attrs is not None
    a, b = inputs
    shape, od = tensor_type(out_type)
    ta, tb = bool(attrs.transpose_a), bool(attrs.transpose_b)
    a_shape = int_shape(a)
    k = reduce_axis(a_shape[-2] if ta else a_shape[-1], "k")

    def body(*i: PrimExpr) -> PrimExpr:
        if a.ndim == 1:
            lhs = a[k]
        elif ta:
            lhs = a[_transposed(i, a.ndim, k.var)]
        else:
            lhs = a[_replace(i, a.ndim - 1, k.var)]
        rhs = b[i[-1], k] if tb else b[k, i[-1]]
        return sum_(cast(od, lhs) * cast(od, rhs), axis=k)

    return [compute(shape, body, "matmul", "dense", _matmul_attrs("matmul", a, b, od))]


@COMPUTES.register("nn.batch_matmul")
def batch_matmul(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Batched `op(a) @ op(b)` of 3-D tensors; a batch of 1 broadcasts."""
    assert attrs is not None
    a, b = inputs
    shape, od = tensor_type(out_type)
    ta, tb = bool(attrs.transpose_a), bool(attrs.transpose_b)
    a_shape, b_shape = int_shape(a), int_shape(b)
    k = reduce_axis(a_shape[1] if ta else a_shape[2], "k")

    def body(n: PrimExpr, i: PrimExpr, j: PrimExpr) -> PrimExpr:
        na = const(0) if a_shape[0] == 1 else n
        nb = const(0) if b_shape[0] == 1 else n
        lhs = a[na, k, i] if ta else a[na, i, k]
        rhs = b[nb, j, k] if tb else b[nb, k, j]
        return sum_(cast(od, lhs) * cast(od, rhs), axis=k)

    info = _matmul_attrs("batch_matmul", a, b, od)
    return [compute(shape, body, "batch_matmul", "batch_matmul", info)]


# ------------------------------------------------------------------------------ activations


@COMPUTES.register("nn.bias_add")
def bias_add(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`x + bias[c]` with c the index along `axis`."""
    assert attrs is not None
    x, bias = inputs
    axis = normalize_axis(int(attrs.axis), x.ndim)
    return [compute(x.shape, lambda *i: x[i] + bias[i[axis]], "bias_add", "broadcast")]


@COMPUTES.register("nn.relu")
def relu(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`x > 0 ? x : 0` (a NaN gives 0)."""
    (x,) = inputs
    zero = const(0, x.dtype)
    return [compute(x.shape, lambda *i: select(x[i] > zero, x[i], zero), "relu", "elemwise")]


def scalar_const(value: float, dtype: str) -> PrimExpr:
    """A Python number as a constant of `dtype` (truncated and saturated for integers, as
    TVM's cast of a constant)."""
    if is_float(dtype):
        return const(float(value), dtype)
    if dtype == "bool":
        return const(value != 0, dtype)
    info = np.iinfo(numpy_dtype(dtype))
    return const(int(min(max(math.trunc(value), info.min), info.max)), dtype)


@COMPUTES.register("nn.leaky_relu")
def leaky_relu(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`x > 0 ? x : x * alpha` (alpha converted to the dtype of x)."""
    assert attrs is not None
    (x,) = inputs
    alpha, zero = scalar_const(float(attrs.alpha), x.dtype), const(0, x.dtype)
    return [
        compute(
            x.shape, lambda *i: select(x[i] > zero, x[i], x[i] * alpha), "leaky_relu", "elemwise"
        )
    ]


@COMPUTES.register("nn.prelu")
def prelu(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`x > 0 ? x : x * alpha[c]` with c the index along `axis`."""
    assert attrs is not None
    x, alpha = inputs
    axis = normalize_axis(int(attrs.axis), x.ndim)
    zero = const(0, x.dtype)

    def body(*i: PrimExpr) -> PrimExpr:
        return select(x[i] > zero, x[i], x[i] * cast(x.dtype, alpha[i[axis]]))

    return [compute(x.shape, body, "prelu", "broadcast")]


# ---------------------------------------------------------------------------------- softmax


SOFTMAX_MAX_LANES = 8
"""Lanes of the per-lane partial maxima of a softmax row (`_softmax_max`)."""


def _plain_max(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return select(a > b, a, b)


plain_max_reduce = comm_reducer(_plain_max, min_value, "max")
"""`max` by `a > b` (one vector max instruction; may skip a NaN, see `_softmax_max`)."""


def _softmax_max(x: Tensor, axis: int, name: str) -> Tensor:
    """The maximum of `x` along `axis` (a tensor without `axis`).

    Over a last axis that is a multiple of `SOFTMAX_MAX_LANES` (at least two of them) it is
    taken per lane first (`{name}_maxpart[..., lane]` over `k = ko * lanes + lane`), then
    across the lanes, with a plain `a > b` maximum: the lane stage vectorizes to one max
    instruction per vector, where the NaN-propagating maximum costs five. A plain maximum may
    skip a NaN, but the row maximum only feeds `x - max`: a NaN element still makes its row
    all NaN (through the sum of exponentials), as with the NaN-propagating maximum, and
    ±inf/±0 maxima are the same values."""
    shape = int_shape(x)
    red_shape = _drop(x.shape, axis)
    n, lanes = shape[axis], SOFTMAX_MAX_LANES
    if axis != len(shape) - 1 or not isinstance(n, int) or n % lanes or n < 2 * lanes:
        k = reduce_axis(n, "k")
        return compute(  # type: ignore[no-any-return]
            red_shape,
            lambda *i: max_reduce(x[_insert(i, axis, k.var)], axis=k),
            f"{name}_maxelem",
            "comm_reduce",
        )
    ko = reduce_axis(n // lanes, "ko")
    part = compute(
        [*red_shape, lanes],
        lambda *i: plain_max_reduce(x[_insert(i[:-1], axis, ko.var * lanes + i[-1])], axis=ko),
        f"{name}_maxpart",
        "comm_reduce",
    )
    lane = reduce_axis(lanes, "lane")
    return compute(  # type: ignore[no-any-return]
        red_shape,
        lambda *i: plain_max_reduce(part[_insert(i, axis, lane.var)], axis=lane),
        f"{name}_maxelem",
        "comm_reduce",
    )


def _sum_along(x: Tensor, axis: int, name: str, term: Callable[[Index], PrimExpr]) -> Tensor:
    """The sum of `term(index)` over `axis` of `x`'s shape (a tensor without `axis`)."""
    shape = int_shape(x)
    red_shape = _drop(x.shape, axis)
    k = reduce_axis(shape[axis], "k")
    return compute(  # type: ignore[no-any-return]
        red_shape, lambda *i: sum_(term(_insert(i, axis, k.var)), axis=k), name, "comm_reduce"
    )


def _softmax(attrs: Attrs | None, inputs: list[Tensor], name: str, log_form: bool) -> Tensor:
    """Softmax: the row maximum, the exponentials `exp(x - max)` (a stage of their own, so
    each is computed once), their sum, then `exp * (1 / sum)` (one division per row).
    Log-softmax: the maximum, the sum of `exp(x - max)`, then `x - max - log(sum)`."""
    assert attrs is not None
    (x,) = inputs
    axis = normalize_axis(int(attrs.axis), x.ndim)
    xmax = _softmax_max(x, axis, name)
    info = {"axis": axis}
    if log_form:
        total = _sum_along(x, axis, f"{name}_expsum", lambda i: exp(x[i] - xmax[_drop(i, axis)]))
        return compute(  # type: ignore[no-any-return]
            x.shape,
            lambda *i: x[i] - xmax[_drop(i, axis)] - log(total[_drop(i, axis)]),
            name,
            "log_softmax",
            info,
        )
    shifted = compute(
        x.shape, lambda *i: exp(x[i] - xmax[_drop(i, axis)]), f"{name}_exp", "softmax_exp", info
    )
    total = _sum_along(x, axis, f"{name}_expsum", lambda i: shifted[i])
    return compute(  # type: ignore[no-any-return]
        x.shape,
        lambda *i: shifted[i] * (const(1, x.dtype) / total[_drop(i, axis)]),
        name,
        "softmax",
        info,
    )


@COMPUTES.register("nn.softmax", "nn.fast_softmax")
def softmax(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`exp(x - max) / sum(exp(x - max))` along `axis`: max, exp-sum, normalize."""
    return [_softmax(attrs, inputs, "softmax", log_form=False)]


@COMPUTES.register("nn.log_softmax")
def log_softmax(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`x - max - log(sum(exp(x - max)))` along `axis`."""
    return [_softmax(attrs, inputs, "log_softmax", log_form=True)]


# ---------------------------------------------------------------------------- normalization


def _affine(
    value: PrimExpr, i: Index, attrs: Attrs, axis: int, gamma: Tensor, beta: Tensor
) -> PrimExpr:
    if attrs.scale:
        value = value * cast(value.dtype, gamma[i[axis]])
    if attrs.center:
        value = value + cast(value.dtype, beta[i[axis]])
    return value


def _moments(
    x: Tensor,
    stat_shape: Sequence[int],
    reduce_extents: Sequence[int],
    source: Callable[[Index, Index], Index],
    name: str,
) -> tuple[Tensor, Tensor]:
    """Mean and biased variance over groups of elements: statistic `s` averages
    `x[source(s, r)]` over the reduction indices `r` (of `reduce_extents`)."""
    count = math.prod(reduce_extents)
    dt = x.dtype

    def axes() -> list[IterVar]:
        return [reduce_axis(n, f"r{k}") for k, n in enumerate(reduce_extents)]

    r1 = axes()
    total = compute(
        stat_shape,
        lambda *s: sum_(x[source(s, tuple(r.var for r in r1))], axis=r1),
        f"{name}_sum",
        "comm_reduce",
    )
    mean = compute(stat_shape, lambda *s: total[s] / const(count, dt), f"{name}_mean", "elemwise")
    r2 = axes()

    def sq(*s: PrimExpr) -> PrimExpr:
        d = x[source(s, tuple(r.var for r in r2))] - mean[s]
        return sum_(d * d, axis=r2)

    sqsum = compute(stat_shape, sq, f"{name}_sqsum", "comm_reduce")
    var = compute(stat_shape, lambda *s: sqsum[s] / const(count, dt), f"{name}_var", "elemwise")
    return mean, var


def _normalized(
    x: Tensor,
    mean: Tensor,
    var: Tensor,
    stat_of: Callable[[Index], Index],
    attrs: Attrs,
    axis: int,
    gamma: Tensor,
    beta: Tensor,
    name: str,
) -> Tensor:
    eps = const(float(attrs.epsilon), x.dtype)

    def body(*i: PrimExpr) -> PrimExpr:
        s = stat_of(i)
        out = (x[i] - mean[s]) / sqrt(var[s] + eps)
        return _affine(out, i, attrs, axis, gamma, beta)

    return compute(x.shape, body, name, "injective", {"axis": axis})  # type: ignore[no-any-return]


@COMPUTES.register("nn.batch_norm")
def batch_norm(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Inference batch norm with the moving statistics: `(out, moving_mean, moving_var)`."""
    assert attrs is not None
    x, gamma, beta, mean, var = inputs
    axis = normalize_axis(int(attrs.axis), x.ndim)
    eps = const(float(attrs.epsilon), x.dtype)

    def body(*i: PrimExpr) -> PrimExpr:
        c = i[axis]
        m, v = cast(x.dtype, mean[c]), cast(x.dtype, var[c])
        return _affine((x[i] - m) / sqrt(v + eps), i, attrs, axis, gamma, beta)

    out = compute(x.shape, body, "batch_norm", "broadcast", {"axis": axis})
    return [
        out,
        identity_like(mean, "batch_norm_mean"),
        identity_like(var, "batch_norm_var"),
    ]


@COMPUTES.register("nn.layer_norm")
def layer_norm(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Normalize over `axis`, then scale by gamma and shift by beta (along `axis`)."""
    assert attrs is not None
    x, gamma, beta = inputs
    shape = int_shape(x)
    axis = normalize_axis(int(attrs.axis), x.ndim)
    mean, var = _moments(
        x,
        _drop(shape, axis),  # type: ignore[arg-type]
        [shape[axis]],
        lambda s, r: (*s[:axis], r[0], *s[axis:]),
        "layer_norm",
    )
    norm = _normalized(
        x, mean, var, lambda i: _drop(i, axis), attrs, axis, gamma, beta, "layer_norm"
    )
    return [norm]


@COMPUTES.register("nn.instance_norm")
def instance_norm(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Normalize each (batch, channel) over the other axes, then scale and shift."""
    assert attrs is not None
    x, gamma, beta = inputs
    shape = int_shape(x)
    axis = normalize_axis(int(attrs.axis), x.ndim)
    others = [d for d in range(1, x.ndim) if d != axis]

    def source(s: Index, r: Index) -> Index:
        idx: list[PrimExpr] = [s[0]] * x.ndim
        idx[axis] = s[1]
        for d, rv in zip(others, r):
            idx[d] = rv
        return tuple(idx)

    mean, var = _moments(
        x, [shape[0], shape[axis]], [shape[d] for d in others], source, "instance_norm"
    )
    norm = _normalized(
        x, mean, var, lambda i: (i[0], i[axis]), attrs, axis, gamma, beta, "instance_norm"
    )
    return [norm]


@COMPUTES.register("nn.group_norm")
def group_norm(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Normalize over groups of `num_groups` channels (and the other non-batch axes)."""
    assert attrs is not None
    x, gamma, beta = inputs
    shape = int_shape(x)
    axis = normalize_axis(int(attrs.axis), x.ndim)
    groups = int(attrs.num_groups)
    per_group = shape[axis] // groups
    others = [d for d in range(1, x.ndim) if d != axis]

    def source(s: Index, r: Index) -> Index:
        idx: list[PrimExpr] = [s[0]] * x.ndim
        idx[axis] = s[1] * per_group + r[0]
        for d, rv in zip(others, r[1:]):
            idx[d] = rv
        return tuple(idx)

    extents = [per_group, *(shape[d] for d in others)]
    mean, var = _moments(x, [shape[0], groups], extents, source, "group_norm")
    norm = _normalized(
        x,
        mean,
        var,
        lambda i: (i[0], i[axis] // per_group),
        attrs,
        axis,
        gamma,
        beta,
        "group_norm",
    )
    return [norm]


@COMPUTES.register("nn.l2_normalize")
def l2_normalize(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`x / sqrt(max(sum(x**2 over axis), eps))` (axis None: over every axis), where
    `max(s, eps)` is `s > eps ? s : eps` (TVM's: a NaN sum gives `eps`, as the relay
    `maximum` of the `simplify-inference` expansion does)."""
    assert attrs is not None
    (x,) = inputs
    shape = int_shape(x)
    axes = listed_axes(attrs.axis, x.ndim)
    kept = [d for d in range(x.ndim) if d not in axes]
    rv = [reduce_axis(shape[d], f"r{d}") for d in axes]

    def full(s: Index, r: Sequence[PrimExpr]) -> Index:
        idx: list[PrimExpr] = [const(0)] * x.ndim
        for d, v in zip(kept, s):
            idx[d] = v
        for d, v in zip(axes, r):
            idx[d] = v
        return tuple(idx)

    def sq(*s: PrimExpr) -> PrimExpr:
        v = x[full(s, [r.var for r in rv])]
        return sum_(v * v, axis=rv)

    total = compute([shape[d] for d in kept], sq, "l2_normalize_sum", "comm_reduce")
    eps = const(float(attrs.eps), x.dtype)

    def body(*i: PrimExpr) -> PrimExpr:
        t = total[tuple(i[d] for d in kept)]
        return x[i] / sqrt(select(t > eps, t, eps))

    return [compute(x.shape, body, "l2_normalize", "injective")]


@COMPUTES.register("nn.dropout")
def dropout(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Inference dropout: `(data, mask of ones)`."""
    (x,) = inputs
    _, mask_dtype = tensor_type(out_type, 1)
    one = const(1, mask_dtype)
    mask = compute(x.shape, lambda *i: one, "dropout_mask", "elemwise")
    return [identity_like(x, "dropout"), mask]


@COMPUTES.register("nn.lrn")
def lrn(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`x / (bias + alpha / size * sum of x**2 over the window)**beta`; the window along
    `axis` is `[c - size // 2, c - size // 2 + size)` (zero outside)."""
    assert attrs is not None
    (x,) = inputs
    axis = normalize_axis(int(attrs.axis), x.ndim)
    size = int(attrs.size)
    half = size // 2
    before = [half if d == axis else 0 for d in range(x.ndim)]
    after = [size - 1 - half if d == axis else 0 for d in range(x.ndim)]
    padded = pad(x, before, after, 0, "lrn_pad")
    r = reduce_axis(size, "r")

    def sq(*i: PrimExpr) -> PrimExpr:
        v = padded[_replace(i, axis, i[axis] + r.var)]
        return sum_(v * v, axis=r)

    sqsum = compute(x.shape, sq, "lrn_sqsum", "comm_reduce")
    dt = x.dtype
    bias, beta = const(float(attrs.bias), dt), const(float(attrs.beta), dt)
    scale = const(float(attrs.alpha) / size, dt)
    out = compute(
        x.shape, lambda *i: x[i] / pow_(bias + scale * sqsum[i], beta), "lrn", "injective"
    )
    return [out]


@COMPUTES.register("nn.batch_flatten")
def batch_flatten(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Flatten all but the first axis (row-major)."""
    (x,) = inputs
    shape = int_shape(x)
    inner = math.prod(shape[1:])

    def body(n: PrimExpr, j: PrimExpr) -> PrimExpr:
        idx: list[PrimExpr] = []
        rest = j
        for d in reversed(shape[1:]):
            idx.append(rest % d)
            rest = rest // d
        src = (n, *reversed(idx))
        return x[src]

    return [compute((shape[0], inner), body, "batch_flatten", "injective")]


def _cross_entropy(inputs: list[Tensor], use_log: bool, name: str) -> Tensor:
    x, y = inputs
    rows, cols = int_shape(x)
    i, j = reduce_axis(rows, "i"), reduce_axis(cols, "j")
    term = (log(x[i, j]) if use_log else x[i, j]) * y[i, j]
    total = compute((), lambda: sum_(term, axis=[i, j]), f"{name}_sum", "comm_reduce")
    return compute(  # type: ignore[no-any-return]
        (), lambda: -total[()] / const(rows, x.dtype), name, "elemwise"
    )


@COMPUTES.register("nn.cross_entropy")
def cross_entropy(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`-sum(log(x) * y) / batch`."""
    return [_cross_entropy(inputs, True, "cross_entropy")]


@COMPUTES.register("nn.cross_entropy_with_logits")
def cross_entropy_with_logits(
    attrs: Attrs | None, inputs: list[Tensor], out_type: Type
) -> list[Tensor]:
    """`-sum(x * y) / batch` (x holds log-probabilities)."""
    return [_cross_entropy(inputs, False, "cross_entropy_with_logits")]


@COMPUTES.register("nn.fifo_buffer")
def fifo_buffer(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """The last `buffer.shape[axis]` entries of `concatenate(buffer, data)` along `axis`."""
    assert attrs is not None
    data, buffer = inputs
    axis = normalize_axis(int(attrs.axis), data.ndim)
    keep, shift = int_shape(buffer)[axis], int_shape(data)[axis]

    def body(*i: PrimExpr) -> PrimExpr:
        t = i[axis] + shift
        return if_then_else(
            t < keep, buffer[_replace(i, axis, t)], data[_replace(i, axis, t - keep)]
        )

    return [compute(buffer.shape, body, "fifo_buffer", "injective")]


# ---------------------------------------------------------------------------------- padding


def _reflect(i: PrimExpr, n: int, symmetric: bool) -> PrimExpr:
    """The source index of padded position `i` (already shifted by the before-padding)
    under a single reflection at each edge (the padding is at most the axis length)."""
    if symmetric:
        return select(i < 0, -i - 1, select(i >= n, 2 * n - 1 - i, i))
    return select(i < 0, -i, select(i >= n, 2 * n - 2 - i, i))


def _pad_width(pad_width: Sequence[Sequence[int]]) -> tuple[list[int], list[int]]:
    return [int(p[0]) for p in pad_width], [int(p[1]) for p in pad_width]


@COMPUTES.register("nn.pad")
def nn_pad(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Pad each axis by [before, after]: with pad_value (`constant`), the edge, or a
    reflection (`reflect`)."""
    assert attrs is not None
    x, value = inputs
    before, after = _pad_width(attrs.pad_width)
    mode = str(attrs.pad_mode)
    if mode == "constant":
        fill = cast(x.dtype, value[()])
        return [
            pad(x, before, after, fill, "pad")
            if any(before) or any(after)
            else identity_like(x, "pad", "injective")
        ]
    shape = int_shape(x)

    def body(*i: PrimExpr) -> PrimExpr:
        src = []
        for k, n, b in zip(i, shape, before):
            s = k - b
            src.append(min_(max_(s, const(0)), const(n - 1)) if mode == "edge" else s)
        if mode == "reflect":
            src = [_reflect(s, n, False) for s, n in zip(src, shape)]
        return x[tuple(src)]

    out_shape = [n + b + a for n, b, a in zip(shape, before, after)]
    return [compute(out_shape, body, "pad", "injective,pad")]


@COMPUTES.register("nn.mirror_pad")
def mirror_pad(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Pad by reflection: SYMMETRIC repeats the edge element, REFLECT does not."""
    assert attrs is not None
    (x,) = inputs
    before, after = _pad_width(attrs.pad_width)
    symmetric = str(attrs.mode) == "SYMMETRIC"
    shape = int_shape(x)

    def body(*i: PrimExpr) -> PrimExpr:
        return x[tuple(_reflect(k - b, n, symmetric) for k, n, b in zip(i, shape, before))]

    out_shape = [n + b + a for n, b, a in zip(shape, before, after)]
    return [compute(out_shape, body, "mirror_pad", "injective,pad")]


# ----------------------------------------------------------------------- depth <-> space


def _nchw(layout: str, index: Sequence[Any]) -> tuple[Any, ...]:
    """The NCHW-ordered components of an index (or shape) of an NCHW or NHWC tensor."""
    return tuple(index) if layout == "NCHW" else (index[0], index[3], index[1], index[2])


def _from_nchw(layout: str, index: Index) -> Index:
    return index if layout == "NCHW" else (index[0], index[2], index[3], index[1])


@COMPUTES.register("nn.depth_to_space")
def depth_to_space(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Move channel blocks into `block_size` x `block_size` spatial blocks (DCR or CRD)."""
    assert attrs is not None
    (x,) = inputs
    shape, _ = tensor_type(out_type)
    layout, b = str(attrs.layout), int(attrs.block_size)
    out_c = int(_nchw(layout, shape)[1])
    dcr = str(attrs.mode) == "DCR"

    def body(*i: PrimExpr) -> PrimExpr:
        n, c, h, w = _nchw(layout, i)
        by, bx = h % b, w % b
        src_c = (by * b + bx) * out_c + c if dcr else c * (b * b) + by * b + bx
        return x[_from_nchw(layout, (n, src_c, h // b, w // b))]

    return [compute(shape, body, "depth_to_space", "injective")]


@COMPUTES.register("nn.space_to_depth")
def space_to_depth(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Move `block_size` x `block_size` spatial blocks into channels (DCR or CRD)."""
    assert attrs is not None
    (x,) = inputs
    shape, _ = tensor_type(out_type)
    layout, b = str(attrs.layout), int(attrs.block_size)
    in_c = int(_nchw(layout, int_shape(x))[1])
    dcr = str(attrs.mode) == "DCR"

    def body(*i: PrimExpr) -> PrimExpr:
        n, c, h, w = _nchw(layout, i)
        if dcr:
            block, src_c = c // in_c, c % in_c
        else:
            block, src_c = c % (b * b), c // (b * b)
        return x[_from_nchw(layout, (n, src_c, h * b + block // b, w * b + block % b))]

    return [compute(shape, body, "space_to_depth", "injective")]
