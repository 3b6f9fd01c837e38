"""Call generators of the shape transforms (`reshape`, `transpose`, `concatenate`, `split`,
`strided_slice`, `broadcast_to`, `layout_transform`, ...).
"""

from __future__ import annotations

import numpy as np

from ...lang.op import Op
from ...lang.optable import OpTable
from ...lang.types import TensorType
from .core import ArgSpec, Generator, OpCall, Tape, _axis, _call, _input, _shape

GENERATORS: OpTable[Generator] = OpTable("test generator")
"""The call generators of this family (`typed_ops.GENERATORS` joins the families)."""


def factorization(t: Tape, size: int, max_rank: int = 4) -> list[int]:
    """Sizes whose product is `size`."""
    dims: list[int] = []
    rest = size
    while rest > 1 and len(dims) < max_rank - 1 and t.maybe(6):
        d = t.pick([k for k in range(2, rest + 1) if rest % k == 0])
        dims.append(d)
        rest //= d
    dims.append(rest)
    return dims


@GENERATORS.register("reshape")
def _reshape(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4))
    if x is None:
        return None
    shape = _shape(x)
    if t.maybe(4):  # plain sizes, one of them -1
        dims = factorization(t, int(np.prod(shape)))
        if t.maybe(5):
            dims[t.choose(0, len(dims) - 1)] = -1
        return _call(op, [x], newshape=dims)
    newshape: list[int] = []  # TVM's special values, consuming the input left to right
    i, inferred = 0, False
    while i < len(shape):
        d = shape[i]
        step = t.choose(0, 5)
        if step == 1 and not inferred:
            newshape.append(-1)
            inferred = True
            i += 1
        elif step == 2:
            newshape.append(0)
            i += 1
        elif step == 3 and i + 1 < len(shape):
            newshape.append(-3)
            i += 2
        elif step == 4 and len(newshape) < 4:
            a = t.pick([k for k in range(1, d + 1) if d % k == 0])
            form = t.choose(0, 2)
            newshape += [-4, -1 if form == 1 else a, -1 if form == 2 else d // a]
            i += 1
        elif step == 5:
            newshape.append(-2)
            i = len(shape)
        else:
            newshape.append(d)
            i += 1
    return _call(op, [x], newshape=newshape)


@GENERATORS.register("reshape_like")
def _reshape_like(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4))
    if x is None:
        return None
    shape = _shape(x)
    if len(shape) >= 2 and t.maybe(3):  # keep the first axis, replace the rest
        like = (t.choose(1, 3), *factorization(t, int(np.prod(shape[1:]))))
        return _call(op, [x, TensorType(like, x.dtype)], lhs_begin=1, rhs_begin=1)
    like_shape = factorization(t, int(np.prod(shape)))
    return _call(op, [x, TensorType(tuple(like_shape), t.pick(t.dtypes))])


@GENERATORS.register("transpose")
def _transpose(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4))
    if x is None:
        return None
    if t.maybe(2):
        return _call(op, [x], axes=None)
    left = list(range(x.ndim))
    perm = [left.pop(t.choose(0, len(left) - 1)) for _ in range(x.ndim)]
    return _call(op, [x], axes=[a - x.ndim if t.maybe(3) else a for a in perm])


@GENERATORS.register("squeeze")
def _squeeze(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(3, 2, 4, 1), lo=1, hi=3)
    if x is None:
        return None
    ones = [i for i, d in enumerate(_shape(x)) if d == 1]
    if t.maybe(3):
        return _call(op, [x], axis=None)
    return _call(op, [x], axis=[a for a in ones if t.maybe(6)])


@GENERATORS.register("expand_dims")
def _expand_dims(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 0, 3))
    if x is None or x.ndim > 4:
        return None
    return _call(op, [x], axis=_axis(t, x.ndim, extra=1), num_newaxis=t.choose(1, 2))


@GENERATORS.register("concatenate")
def _concatenate(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4))
    if x is None:
        return None
    axis = _axis(t, x.ndim)
    parts: list[ArgSpec] = [x]
    for _ in range(t.choose(1, 2)):
        shape = list(_shape(x))
        if t.maybe(6):
            shape[axis] = t.choose(1, 3)
        parts.append(TensorType(tuple(shape), x.dtype))
    return _call(op, parts, tuple_arg=True, axis=axis)


@GENERATORS.register("stack")
def _stack(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 0, 3))
    if x is None or x.ndim > 4:
        return None
    return _call(op, [x] * t.choose(1, 3), tuple_arg=True, axis=_axis(t, x.ndim, extra=1))


@GENERATORS.register("split")
def _split(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4), hi=6)
    if x is None:
        return None
    axis = _axis(t, x.ndim)
    size = _shape(x)[axis]
    spec: int | list[int]
    if t.maybe(5) or size == 1:
        spec = t.pick([k for k in range(1, size + 1) if size % k == 0])
    else:
        spec = sorted({t.choose(1, size - 1) for _ in range(t.choose(1, 3))})
    return _call(op, [x], indices_or_sections=spec, axis=axis)


def _slice_axis(t: Tape, d: int) -> tuple[int, int, int]:
    """A begin, end and stride selecting at least one element of an axis of size `d`."""
    if t.maybe(2):  # backwards
        stride = -t.choose(1, 2)
        begin = t.choose(0, d - 1)
        end = t.choose(-1, begin - 1)
        return begin - d if t.maybe(3) else begin, end if end >= 0 else -d - 1, stride
    stride = t.choose(1, 3)
    begin = t.choose(0, d - 1)
    end = t.choose(begin + 1, d + 2)
    return begin - d if t.maybe(3) else begin, end, stride


@GENERATORS.register("strided_slice")
def _strided_slice(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4), hi=6)
    if x is None:
        return None
    shape = _shape(x)
    if t.maybe(3):  # size mode on some axes
        axes = [a for a in range(x.ndim) if t.maybe(6)] or [0]
        begin = [t.choose(0, shape[a] - 1) for a in axes]
        sizes = [t.choose(1, shape[a] - b) if t.maybe(7) else -1 for a, b in zip(axes, begin)]
        return _call(
            op,
            [x],
            begin=begin,
            end=sizes,
            strides=[1] * len(axes),
            axes=axes,
            slice_mode="size",
        )
    count = x.ndim if t.maybe(7) else t.choose(1, x.ndim)
    picked = [_slice_axis(t, d) for d in shape[:count]]
    begin, end, given = ([p[i] for p in picked] for i in range(3))
    strides = None if min(given) > 0 and t.maybe(5) else given  # None: 1 on every sliced axis
    if t.maybe(3):
        return _call(op, [x], begin=begin, end=end, strides=strides, axes=list(range(count)))
    return _call(op, [x], begin=begin, end=end, strides=strides, axes=None)


@GENERATORS.register("slice_like")
def _slice_like(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4), hi=5)
    if x is None:
        return None
    shape = _shape(x)
    rank = t.choose(1, x.ndim)
    like = tuple(t.choose(1, d) for d in shape[:rank])
    axes = None if t.maybe(6) else [a for a in range(rank) if t.maybe(5)] or [0]
    return _call(op, [x, TensorType(like, t.pick(t.dtypes))], axes=axes)


@GENERATORS.register("tile")
def _tile(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 0, 3))
    if x is None:
        return None
    return _call(op, [x], reps=[t.choose(1, 2) for _ in range(t.choose(1, 4))])


@GENERATORS.register("repeat")
def _repeat(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4))
    return None if x is None else _call(op, [x], repeats=t.choose(1, 3), axis=_axis(t, x.ndim))


@GENERATORS.register("reverse")
def _reverse(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4))
    return None if x is None else _call(op, [x], axis=_axis(t, x.ndim))


def _stretched(t: Tape, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape `shape` broadcasts to: its 1s stretched, leading dimensions added."""
    lead = t.dims(t.choose(0, 2), 1, 3) if len(shape) < 4 else ()
    return (*lead, *(t.choose(1, 3) if d == 1 else d for d in shape))


@GENERATORS.register("broadcast_to")
def _broadcast_to(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 0, 3), lo=1, hi=3)
    if x is None:
        return None
    return _call(op, [x], shape=_stretched(t, _shape(x)))


@GENERATORS.register("broadcast_to_like")
def _broadcast_to_like(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 0, 3), lo=1, hi=3)
    if x is None:
        return None
    return _call(op, [x, TensorType(_stretched(t, _shape(x)), t.pick(t.dtypes))])


@GENERATORS.register("collapse_sum_like")
def _collapse_sum_like(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="fi")
    if x is None:
        return None
    shape = _shape(x)
    target = tuple(1 if t.maybe(4) else d for d in shape[t.choose(0, len(shape)) :])
    return _call(op, [x, TensorType(target, x.dtype)])


@GENERATORS.register("layout_transform")
def _layout_transform(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(4, 3))
    if x is None:
        return None
    if x.ndim == 3:
        src, dst = t.pick((("NCW", "NWC"), ("NWC", "NCW"), ("NCW", "WNC")))
        return _call(op, [x], src_layout=src, dst_layout=dst)
    c = _shape(x)[1]
    blocks = [b for b in (2, 4) if c % b == 0]
    choices = ["NHWC", "HWCN", "NCHW"] + [f"NCHW{b}c" for b in blocks]
    return _call(op, [x], src_layout="NCHW", dst_layout=t.pick(choices))


@GENERATORS.register("shape_of", "ndarray_size")
def _shape_of(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x)
    return None if x is None else _call(op, [x], dtype=t.pick(("int32", "int64")))


@GENERATORS.register("meshgrid")
def _meshgrid(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(1, 0))
    if x is None:
        return None
    parts: list[ArgSpec] = [x]
    for _ in range(t.choose(0, 2)):
        parts.append(TensorType(t.dims(t.choose(0, 1)), x.dtype))
    return _call(op, parts, tuple_arg=True, indexing=t.pick(("ij", "xy")))
