"""Call generators of the `nn.*` operators other than convolutions and pools (dense,
batch_matmul, activations, normalizations, padding, upsampling, ...).
"""

from __future__ import annotations

from ...lang.op import Op
from ...lang.optable import OpTable
from ...lang.types import TensorType
from .core import SCALES, Generator, OpCall, Tape, _axis, _call, _input, _shape

GENERATORS: OpTable[Generator] = OpTable("test generator")
"""The call generators of this family (`typed_ops.GENERATORS` joins the families)."""


@GENERATORS.register("nn.dense", "nn.matmul")
def _dense(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3), kinds="f")
    if x is None:
        return None
    shape = _shape(x)
    units = t.choose(1, 6)
    if op.name == "nn.dense":
        weight = TensorType((units, shape[-1]), x.dtype)
        return _call(op, [x, weight], units=t.pick((None, units)))
    ta = x.ndim >= 2 and t.maybe(3)
    k = shape[-2] if ta else shape[-1]
    tb = t.maybe(5)
    weight = TensorType((units, k) if tb else (k, units), x.dtype)
    return _call(op, [x, weight], units=t.pick((None, units)), transpose_a=ta, transpose_b=tb)


@GENERATORS.register("nn.contrib_dense_pack")
def _dense_pack(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2,), kinds="f")
    if x is None:
        return None
    block = t.choose(1, 4)
    weight = TensorType((t.choose(1, 3), _shape(x)[1], block), x.dtype)
    return _call(op, [x, weight], units=None, weight_layout=f"NC{block}n")


@GENERATORS.register("nn.batch_matmul")
def _batch_matmul(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(3,), kinds="f")
    if x is None:
        return None
    b, r, c = _shape(x)
    ta, tb = t.maybe(3), t.maybe(5)
    k, j = (r if ta else c), t.choose(1, 4)
    yb = 1 if t.maybe(2) else b
    y = TensorType((yb, j, k) if tb else (yb, k, j), x.dtype)
    return _call(op, [x, y], transpose_a=ta, transpose_b=tb)


def _channel(t: Tape, x: TensorType) -> tuple[int, TensorType]:
    """An axis of `x` and the (C,) type of a per-channel parameter along it."""
    axis = _axis(t, x.ndim)
    return axis, TensorType((_shape(x)[axis],), x.dtype)


@GENERATORS.register("nn.bias_add", "nn.prelu")
def _per_channel(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 4, 3, 1), kinds="f")
    if x is None:
        return None
    axis, c = _channel(t, x)
    return _call(op, [x, c], axis=axis)


@GENERATORS.register("nn.relu")
def _relu(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="f")
    return None if x is None else _call(op, [x])


@GENERATORS.register("nn.leaky_relu")
def _leaky_relu(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="f")
    return None if x is None else _call(op, [x], alpha=t.pick((0.01, 0.2, 0.5)))


@GENERATORS.register("nn.softmax", "nn.fast_softmax", "nn.log_softmax")
def _softmax(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4), kinds="f")
    return None if x is None else _call(op, [x], axis=_axis(t, x.ndim))


@GENERATORS.register("nn.batch_norm")
def _batch_norm(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(4, 2, 3, 1), kinds="f")
    if x is None:
        return None
    axis, c = _channel(t, x)
    return _call(
        op,
        [x, c, c, c, c],
        axis=axis,
        epsilon=t.pick((1e-5, 0.1)),
        center=not t.maybe(2),
        scale=not t.maybe(2),
    )


@GENERATORS.register("nn.layer_norm", "nn.instance_norm")
def _norm(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    ranks = (3, 4, 2) if op.name == "nn.instance_norm" else (2, 3, 4, 1)
    x = _input(t, x, ranks=ranks, kinds="f")
    if x is None:
        return None
    if op.name == "nn.instance_norm":
        axis = t.pick((1, -1))
        c = TensorType((_shape(x)[axis],), x.dtype)
    else:
        axis, c = _channel(t, x)
    return _call(op, [x, c, c], axis=axis, epsilon=t.pick((1e-5, 0.01)), center=not t.maybe(2))


@GENERATORS.register("nn.group_norm")
def _group_norm(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(3, 4, 2), kinds="f")
    if x is None:
        return None
    channels = _shape(x)[1]
    c = TensorType((channels,), x.dtype)
    groups = t.pick([g for g in range(1, channels + 1) if channels % g == 0])
    return _call(op, [x, c, c], num_groups=groups, axis=1, epsilon=1e-5)


@GENERATORS.register("nn.l2_normalize")
def _l2_normalize(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4), kinds="f")
    if x is None:
        return None
    axes = sorted({t.choose(0, x.ndim - 1) for _ in range(t.choose(1, x.ndim))})
    return _call(op, [x], eps=t.pick((1e-5, 1e-3)), axis=None if t.maybe(2) else axes)


@GENERATORS.register("nn.dropout")
def _dropout(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="f")
    return None if x is None else _call(op, [x], rate=t.pick((0.5, 0.1, 0.0)))


@GENERATORS.register("nn.lrn")
def _lrn(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(4, 3), kinds="f")
    if x is None:
        return None
    return _call(
        op, [x], size=t.pick((1, 3, 5, 2)), axis=t.pick((1, -1)), bias=2.0, alpha=1e-4, beta=0.75
    )


@GENERATORS.register("nn.batch_flatten")
def _batch_flatten(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(3, 2, 4, 1))
    return None if x is None else _call(op, [x])


@GENERATORS.register("nn.cross_entropy", "nn.cross_entropy_with_logits")
def _cross_entropy(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2,), kinds="f")
    return None if x is None else _call(op, [x, x])


@GENERATORS.register("nn.fifo_buffer")
def _fifo_buffer(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3), kinds="f")
    if x is None:
        return None
    axis = _axis(t, x.ndim)
    buffer = list(_shape(x))
    buffer[axis] += t.choose(1, 3)
    return _call(op, [x, TensorType(tuple(buffer), x.dtype)], axis=axis)


@GENERATORS.register("nn.pad")
def _pad(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4))
    if x is None:
        return None
    mode = t.pick(("constant", "edge", "reflect"))
    limit = 2 if mode != "reflect" else 0
    widths = [
        [t.choose(0, min(limit, d - 1) if mode == "reflect" else limit) for _ in range(2)]
        for d in _shape(x)
    ]
    return _call(op, [x, TensorType((), x.dtype)], pad_width=widths, pad_mode=mode)


@GENERATORS.register("nn.mirror_pad")
def _mirror_pad(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4))
    if x is None:
        return None
    mode = t.pick(("SYMMETRIC", "REFLECT"))
    cut = 0 if mode == "SYMMETRIC" else 1
    widths = [[t.choose(0, min(2, d - cut)) for _ in range(2)] for d in _shape(x)]
    return _call(op, [x], pad_width=widths, mode=mode)


@GENERATORS.register("nn.upsampling", "nn.upsampling3d")
def _upsampling(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    three = op.name == "nn.upsampling3d"
    x = _input(t, x, ranks=(5,) if three else (4,), kinds="f")
    if x is None:
        return None
    layout = t.pick(("NCDHW", "NDHWC") if three else ("NCHW", "NHWC"))
    spatial = _shape(x)[1:-1] if layout.endswith("C") else _shape(x)[2:]
    names = ("scale_d", "scale_h", "scale_w")[-len(spatial) :]
    # a scaled size rounding to 0 is an empty tensor (which the interpreter refuses)
    scales = {k: t.pick([s for s in SCALES if d * s >= 1]) for k, d in zip(names, spatial)}
    if three:
        method = t.pick(("nearest_neighbor", "trilinear"))
        mode = t.pick(("half_pixel", "align_corners", "asymmetric"))
        return _call(
            op, [x], layout=layout, method=method, coordinate_transformation_mode=mode, **scales
        )
    method = t.pick(("nearest_neighbor", "bilinear", "bicubic"))
    return _call(op, [x], layout=layout, method=method, align_corners=t.maybe(3), **scales)


@GENERATORS.register("nn.depth_to_space", "nn.space_to_depth")
def _depth_space(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(4,), hi=6)
    if x is None:
        return None
    _, c, h, w = _shape(x)
    if op.name == "nn.depth_to_space":
        blocks = [b for b in (1, 2, 3) if c % (b * b) == 0]
    else:
        blocks = [b for b in (1, 2, 3) if h % b == 0 and w % b == 0]
    return _call(op, [x], block_size=t.pick(blocks), mode=t.pick(("DCR", "CRD")))
