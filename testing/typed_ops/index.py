"""Call generators of the indexing operators (`take`, `gather`, `scatter_elements`,
`one_hot`, `sparse_to_dense`, `adv_index`, ...), with index constants in range.
"""

from __future__ import annotations

import numpy as np

from ...lang.op import Op
from ...lang.optable import OpTable
from ...lang.types import TensorType
from .core import ArgSpec, Generator, OpCall, Tape, _axis, _call, _index_array, _input, _shape

GENERATORS: OpTable[Generator] = OpTable("test generator")
"""The call generators of this family (`typed_ops.GENERATORS` joins the families)."""


@GENERATORS.register("take")
def _take(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3))
    if x is None:
        return None
    shape = _shape(x)
    mode = t.pick(("clip", "wrap", "fast"))
    if x.ndim >= 2 and t.maybe(2):  # one batch dimension
        axis = t.choose(1, x.ndim - 1)
        idx = _index_array(t, (shape[0], *t.dims(t.choose(0, 1), 1, 3)), shape[axis])
        return _call(op, [x, idx], axis=axis, batch_dims=1, mode=mode)
    flat: int | None = None if t.maybe(2) else _axis(t, x.ndim)
    bound = int(np.prod(shape)) if flat is None else shape[flat]
    idx = _index_array(t, t.dims(t.choose(0, 2), 1, 3), bound, negative=mode != "fast")
    return _call(op, [x, idx], axis=flat, mode=mode)


@GENERATORS.register("gather")
def _gather(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3))
    if x is None:
        return None
    shape = _shape(x)
    axis = _axis(t, x.ndim)
    ishape = [t.choose(1, d) for d in shape]
    ishape[axis] = t.choose(1, 4)
    return _call(op, [x, _index_array(t, ishape, shape[axis])], axis=axis)


@GENERATORS.register("gather_nd")
def _gather_nd(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3))
    if x is None:
        return None
    shape = _shape(x)
    depth = t.choose(1, x.ndim)
    rest = t.dims(t.choose(0, 2), 1, 3)
    rows = [_index_array(t, rest, shape[i]) for i in range(depth)]
    return _call(op, [x, np.stack(rows) if rows else np.zeros((0,), "int32")])


@GENERATORS.register("scatter_elements")
def _scatter_elements(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3), kinds="fi")
    if x is None:
        return None
    shape = _shape(x)
    axis = _axis(t, x.ndim)
    ishape = [t.choose(1, d) for d in shape]
    idx = _index_array(t, ishape, shape[axis])
    reduction = t.pick(("update", "add", "mul", "mean", "min", "max"))
    return _call(op, [x, idx, TensorType(tuple(ishape), x.dtype)], axis=axis, reduction=reduction)


@GENERATORS.register("one_hot")
def _one_hot(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(0,), kinds="fi")  # the on value
    if x is None:
        return None
    depth = t.choose(1, 4)
    rank = t.choose(0, 2)
    idx = _index_array(t, t.dims(rank, 1, 3), depth + 1)  # `depth` itself: an all-off row
    dtype = t.pick(("", x.dtype))
    return _call(op, [idx, x, x], primary=1, depth=depth, axis=_axis(t, rank, 1), dtype=dtype)


@GENERATORS.register("sparse_to_dense")
def _sparse_to_dense(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(1,), fits=lambda v: _shape(v)[0] <= 4)  # the values
    if x is None:
        return None
    n = _shape(x)[0]
    out = (t.choose(n, n + 2), *t.dims(t.choose(0, 1), 1, 3))
    cells = list(np.ndindex(*out))
    picked = [cells.pop(t.choose(0, len(cells) - 1)) for _ in range(n)]
    idx: np.ndarray = np.asarray(picked, dtype="int32").reshape(n, len(out))
    if len(out) == 1 and t.maybe(5):
        idx = idx.reshape(n)
    default = TensorType((), x.dtype)
    return _call(op, [idx, x, default], primary=1, output_shape=list(out))


@GENERATORS.register("adv_index")
def _adv_index(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3))
    if x is None:
        return None
    shape = _shape(x)
    base = t.dims(t.choose(1, 2), 1, 3)
    parts: list[ArgSpec] = [x]
    for i in range(t.choose(1, x.ndim)):
        ishape = tuple(1 if t.maybe(3) else d for d in base)
        parts.append(_index_array(t, ishape, shape[i]))
    return _call(op, parts, tuple_arg=True)


@GENERATORS.register("unravel_index")
def _unravel_index(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    dims = t.dims(t.choose(1, 3), 1, 4)
    count = t.choose(0, 4)
    idx = _index_array(t, (count,) if count else (), int(np.prod(dims)))
    return _call(op, [idx, np.asarray(dims, dtype="int32")], primary=None)


@GENERATORS.register("matrix_set_diag")
def _matrix_set_diag(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 3))
    if x is None:
        return None
    *lead, m, n = _shape(x)
    k1 = t.choose(-(m - 1), n - 1)
    k2 = t.choose(k1, n - 1) if t.maybe(5) else k1
    length = min(m + min(k2, 0), n - max(k1, 0))
    dshape = (*lead, length) if k1 == k2 else (*lead, k2 - k1 + 1, length)
    return _call(
        op,
        [x, TensorType(dshape, x.dtype)],
        k1=k1,
        k2=k2,
        super_diag_right_align=t.maybe(5),
        sub_diag_right_align=t.maybe(5),
    )


@GENERATORS.register("sequence_mask")
def _sequence_mask(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 3), kinds="f")
    if x is None:
        return None
    shape = _shape(x)
    axis = t.choose(0, 1)
    lengths = _index_array(t, (shape[1 - axis],), shape[axis] + 1)
    return _call(op, [x, lengths], axis=axis, mask_value=float(t.pick((0.0, -1.0, 2.5))))
