"""Reference implementations of `nn.*` operators other than convolution and pooling.

TVM semantics (relay `src/relay/op/nn/`, topi), computed exactly or in float64 and cast
back to TVM's result dtype:

* `dense`/`matmul`/`batch_matmul`: inputs cast to `out_dtype` (null: the input's), then
  multiplied and summed exactly (int8 x int8 into int32 is exact, wrapping at 2**32).
  `dense` weights are `(units, k)`; `contrib_dense_pack` unpacks a `weight_layout` such as
  `NC8n` first; `batch_matmul` broadcasts a batch of 1.
* `softmax`, `fast_softmax`, `log_softmax` subtract the maximum first.
* Normalizations use the biased variance; `center`/`scale` switch beta/gamma off (as
  TVM's SimplifyInference does). `batch_norm` returns `(out, moving_mean, moving_var)`;
  `group_norm` and `instance_norm` reduce over every axis but the batch axis 0 and the
  channel (group) axis.
* `l2_normalize` is `x / sqrt(max(sum(x**2), eps))` with TVM's `max(a, b) = a > b ? a : b`
  (a NaN sum gives `eps`, as the `simplify-inference` expansion with `maximum` does).
* `dropout` is inference dropout: `(data, ones)`.
* `lrn`: `x / (bias + alpha / size * sum of x**2 over a window of `size` channels)**beta`;
  the window is `[c - size // 2, c - size // 2 + size)`.
* `upsampling` resizes to `round(H * scale_h)` x `round(W * scale_w)` with "align_corners"
  or "asymmetric" coordinates (TVM's topi `upsampling`), `upsampling3d` with
  `coordinate_transformation_mode`.
* `depth_to_space` "DCR" takes channel `(by * b + bx) * C' + c`, "CRD" `c * b * b + by * b
  + bx`; `space_to_depth` is the inverse of the same mode (TVM itself only has "DCR").
* `cross_entropy(x, y)` is `-sum(log(x) * y) / batch`, `cross_entropy_with_logits` is
  `-sum(x * y) / batch`.
"""

from __future__ import annotations

import math

import numpy as np

from ....lang.attrs import Attrs
from ....lang.opdefs import semantics
from ....lang.optable import OpTable
from ..values import EvalError, Value
from . import Impl
from .image import resize
from .transform import (
    as_tensor,
    convert_layout,
    dtype_or,
    need_attrs,
    normalize_axis,
    semantic_errors,
    spatial_axes,
    tensor_args,
    wide_dtype,
)

IMPLS: OpTable[Impl] = OpTable("reference implementation")
"""The reference implementations of this family (`op_impls.IMPLS` joins them)."""

Array = np.ndarray


def _exact(x: Array, dtype: np.dtype) -> Array:
    """`x` cast to `dtype` (TVM's cast to out_dtype), then widened for exact arithmetic."""
    return x.astype(dtype).astype(wide_dtype(dtype))


def _f64(x: Array) -> Array:
    return x.astype(np.float64)


# ------------------------------------------------------------------------ dense, matmul


def _dense(data: Array, weight: Array, out_dtype: np.dtype) -> Array:
    if weight.ndim != 2 or data.ndim < 1 or data.shape[-1] != weight.shape[1]:
        raise EvalError(f"dense: data {list(data.shape)} and weight {list(weight.shape)}")
    result = np.matmul(_exact(data, out_dtype), _exact(weight, out_dtype).T)
    return as_tensor(result, out_dtype)


@IMPLS.register("nn.dense")
def dense(args: list[Value], attrs: Attrs | None) -> Array:
    """`data @ weight.T` with weight `(units, k)`."""
    data, weight = tensor_args("nn.dense", args)
    a = need_attrs("nn.dense", attrs)
    return _dense(data, weight, dtype_or(a.out_dtype, data.dtype))


@IMPLS.register("nn.contrib_dense_pack")
def dense_pack(args: list[Value], attrs: Attrs | None) -> Array:
    """Dense with a packed weight: `weight_layout` `NC8n` is `(units / 8, k, 8)`."""
    data, weight = tensor_args("nn.contrib_dense_pack", args)
    a = need_attrs("nn.contrib_dense_pack", attrs)
    unpacked = convert_layout(weight, a.weight_layout, "NC")
    return _dense(data, unpacked, dtype_or(a.out_dtype, data.dtype))


@IMPLS.register("nn.matmul")
def matmul(args: list[Value], attrs: Attrs | None) -> Array:
    """`op(a) @ op(b)`, op a transpose of the last two axes when asked; b is 2-D."""
    ta, tb = tensor_args("nn.matmul", args)
    a = need_attrs("nn.matmul", attrs)
    out_dtype = dtype_or(a.out_dtype, ta.dtype)
    if tb.ndim != 2 or ta.ndim < (2 if a.transpose_a else 1):
        raise EvalError("nn.matmul expects a 2-D tensor_b")
    lhs = np.swapaxes(ta, -1, -2) if a.transpose_a else ta
    rhs = tb.T if a.transpose_b else tb
    if lhs.shape[-1] != rhs.shape[0]:
        raise EvalError(f"nn.matmul: shapes {list(ta.shape)} and {list(tb.shape)} do not fit")
    return as_tensor(np.matmul(_exact(lhs, out_dtype), _exact(rhs, out_dtype)), out_dtype)


@IMPLS.register("nn.batch_matmul")
def batch_matmul(args: list[Value], attrs: Attrs | None) -> Array:
    """Batched `op(a) @ op(b)` of 3-D tensors; a batch of 1 broadcasts."""
    ta, tb = tensor_args("nn.batch_matmul", args)
    a = need_attrs("nn.batch_matmul", attrs)
    if ta.ndim != 3 or tb.ndim != 3:
        raise EvalError("nn.batch_matmul expects 3-D tensors")
    out_dtype = dtype_or(a.out_dtype, ta.dtype)
    lhs = np.swapaxes(ta, 1, 2) if a.transpose_a else ta
    rhs = np.swapaxes(tb, 1, 2) if a.transpose_b else tb
    if lhs.shape[2] != rhs.shape[1] or (
        lhs.shape[0] != rhs.shape[0] and 1 not in (lhs.shape[0], rhs.shape[0])
    ):
        raise EvalError(f"nn.batch_matmul: shapes {list(ta.shape)} and {list(tb.shape)} do not fit")
    return as_tensor(np.matmul(_exact(lhs, out_dtype), _exact(rhs, out_dtype)), out_dtype)


# ------------------------------------------------------------------------- activations


def _along(vector: Array, axis: int, ndim: int) -> Array:
    """A 1-D tensor shaped to broadcast along `axis` of a rank-`ndim` tensor."""
    return vector.reshape([-1 if i == axis else 1 for i in range(ndim)])


def _channel_vector(name: str, v: Array, x: Array, axis: int) -> Array:
    if v.ndim != 1 or v.shape[0] != x.shape[axis]:
        raise EvalError(f"operator `{name}` expects a 1-D tensor of {x.shape[axis]} elements")
    return _along(v, axis, x.ndim)


@IMPLS.register("nn.bias_add")
def bias_add(args: list[Value], attrs: Attrs | None) -> Array:
    """Add a 1-D bias along `axis`."""
    x, bias = tensor_args("nn.bias_add", args)
    axis = normalize_axis("nn.bias_add", need_attrs("nn.bias_add", attrs).axis, x.ndim)
    if bias.dtype != x.dtype:
        raise EvalError("nn.bias_add: the bias must have the data's dtype")
    return as_tensor(x + _channel_vector("nn.bias_add", bias, x, axis), x.dtype)


@IMPLS.register("nn.prelu")
def prelu(args: list[Value], attrs: Attrs | None) -> Array:
    """`x > 0 ? x : alpha[c] * x` with a per-channel alpha along `axis`."""
    x, alpha = tensor_args("nn.prelu", args)
    axis = normalize_axis("nn.prelu", need_attrs("nn.prelu", attrs).axis, x.ndim)
    slope = _channel_vector("nn.prelu", alpha.astype(x.dtype), x, axis)
    return as_tensor(np.where(x > 0, x, x * slope), x.dtype)


def _shifted(name: str, args: list[Value], attrs: Attrs | None) -> tuple[Array, Array, int]:
    (x,) = tensor_args(name, args)
    axis = normalize_axis(name, need_attrs(name, attrs).axis, x.ndim)
    v = _f64(x)
    return x, v - np.max(v, axis=axis, keepdims=True), axis


@IMPLS.register("nn.softmax", "nn.fast_softmax")
def softmax(args: list[Value], attrs: Attrs | None) -> Array:
    """`exp(x - max) / sum(exp(x - max))` along `axis`."""
    x, shifted, axis = _shifted("nn.softmax", args, attrs)
    e = np.exp(shifted)
    return as_tensor(e / np.sum(e, axis=axis, keepdims=True), x.dtype)


@IMPLS.register("nn.log_softmax")
def log_softmax(args: list[Value], attrs: Attrs | None) -> Array:
    """`x - max - log(sum(exp(x - max)))` along `axis`."""
    x, shifted, axis = _shifted("nn.log_softmax", args, attrs)
    total = np.sum(np.exp(shifted), axis=axis, keepdims=True)
    return as_tensor(shifted - np.log(total), x.dtype)


# ----------------------------------------------------------------------- normalization


def _affine(out: Array, gamma: Array, beta: Array, a: Attrs, axis: int, name: str) -> Array:
    if a.scale:
        out = out * _channel_vector(name, _f64(gamma), out, axis)
    if a.center:
        out = out + _channel_vector(name, _f64(beta), out, axis)
    return out


def _normalize(v: Array, axes: tuple[int, ...], epsilon: float) -> Array:
    mean = np.mean(v, axis=axes, keepdims=True)
    var = np.mean((v - mean) ** 2, axis=axes, keepdims=True)
    return (v - mean) / np.sqrt(var + epsilon)


@IMPLS.register("nn.batch_norm")
def batch_norm(args: list[Value], attrs: Attrs | None) -> tuple:
    """Inference batch norm with the moving statistics: `(out, moving_mean, moving_var)`."""
    x, gamma, beta, mean, var = tensor_args("nn.batch_norm", args)
    a = need_attrs("nn.batch_norm", attrs)
    axis = normalize_axis("nn.batch_norm", a.axis, x.ndim)
    m = _channel_vector("nn.batch_norm", _f64(mean), x, axis)
    v = _channel_vector("nn.batch_norm", _f64(var), x, axis)
    out = (_f64(x) - m) / np.sqrt(v + a.epsilon)
    out = _affine(out, gamma, beta, a, axis, "nn.batch_norm")
    return (as_tensor(out, x.dtype), mean.copy(), var.copy())


@IMPLS.register("nn.layer_norm")
def layer_norm(args: list[Value], attrs: Attrs | None) -> Array:
    """Normalize over `axis`, then scale by gamma and shift by beta (along `axis`)."""
    x, gamma, beta = tensor_args("nn.layer_norm", args)
    a = need_attrs("nn.layer_norm", attrs)
    axis = normalize_axis("nn.layer_norm", a.axis, x.ndim)
    out = _normalize(_f64(x), (axis,), a.epsilon)
    return as_tensor(_affine(out, gamma, beta, a, axis, "nn.layer_norm"), x.dtype)


@IMPLS.register("nn.instance_norm")
def instance_norm(args: list[Value], attrs: Attrs | None) -> Array:
    """Normalize each (batch, channel) over the other axes, then scale and shift."""
    x, gamma, beta = tensor_args("nn.instance_norm", args)
    a = need_attrs("nn.instance_norm", attrs)
    axis = normalize_axis("nn.instance_norm", a.axis, x.ndim)
    axes = tuple(i for i in range(1, x.ndim) if i != axis)
    out = _normalize(_f64(x), axes, a.epsilon)
    return as_tensor(_affine(out, gamma, beta, a, axis, "nn.instance_norm"), x.dtype)


@IMPLS.register("nn.group_norm")
def group_norm(args: list[Value], attrs: Attrs | None) -> Array:
    """Normalize over groups of `num_groups` channels (and the other non-batch axes)."""
    x, gamma, beta = tensor_args("nn.group_norm", args)
    a = need_attrs("nn.group_norm", attrs)
    axis = normalize_axis("nn.group_norm", a.axis, x.ndim)
    groups, channels = int(a.num_groups), x.shape[axis]
    if groups < 1 or channels % groups:
        raise EvalError(f"nn.group_norm: {groups} groups do not divide {channels} channels")
    grouped = _f64(x).reshape((*x.shape[:axis], groups, channels // groups, *x.shape[axis + 1 :]))
    axes = tuple(i for i in range(1, grouped.ndim) if i != axis)
    out = _normalize(grouped, axes, a.epsilon).reshape(x.shape)
    return as_tensor(_affine(out, gamma, beta, a, axis, "nn.group_norm"), x.dtype)


@IMPLS.register("nn.l2_normalize")
def l2_normalize(args: list[Value], attrs: Attrs | None) -> Array:
    """`x / sqrt(max(sum(x**2 over axis), eps))` (axis None: over every axis), where
    `max(s, eps)` is `s > eps ? s : eps` (TVM's `max`: a NaN sum gives `eps`)."""
    (x,) = tensor_args("nn.l2_normalize", args)
    a = need_attrs("nn.l2_normalize", attrs)
    with semantic_errors("nn.l2_normalize"):
        axes = semantics.listed_axes(a.axis, x.ndim)
    v = _f64(x)
    total = np.sum(v * v, axis=axes, keepdims=True)
    eps = float(np.asarray(a.eps).astype(x.dtype))  # the constant TVM compares in x's dtype
    return as_tensor(v / np.sqrt(np.where(total > eps, total, eps)), x.dtype)


@IMPLS.register("nn.dropout")
def dropout(args: list[Value], attrs: Attrs | None) -> tuple:
    """Inference dropout: `(data, mask of ones)`."""
    (x,) = tensor_args("nn.dropout", args)
    return (x.copy(), np.ones_like(x))


@IMPLS.register("nn.lrn")
def lrn(args: list[Value], attrs: Attrs | None) -> Array:
    """Local response normalization across `size` neighbours along `axis`."""
    (x,) = tensor_args("nn.lrn", args)
    a = need_attrs("nn.lrn", attrs)
    axis = normalize_axis("nn.lrn", a.axis, x.ndim)
    size = int(a.size)
    if size < 1:
        raise EvalError("nn.lrn: size must be positive")
    sq = _f64(x) ** 2
    half = size // 2
    pad = [(0, 0)] * x.ndim
    pad[axis] = (half, half)
    padded = np.pad(sq, pad)
    n = x.shape[axis]
    total = sum(np.take(padded, np.arange(n) + t, axis=axis) for t in range(size))
    scale = (a.bias + a.alpha / size * total) ** a.beta
    return as_tensor(_f64(x) / scale, x.dtype)


@IMPLS.register("nn.batch_flatten")
def batch_flatten(args: list[Value], attrs: Attrs | None) -> Array:
    """Flatten all but the first axis."""
    (x,) = tensor_args("nn.batch_flatten", args)
    if x.ndim < 1:
        raise EvalError("nn.batch_flatten of a scalar")
    return x.reshape(x.shape[0], math.prod(x.shape[1:])).copy()


def _cross_entropy(name: str, args: list[Value], log: bool) -> Array:
    x, y = tensor_args(name, args)
    if x.shape != y.shape or x.ndim != 2:
        raise EvalError(f"operator `{name}` expects two (batch, classes) tensors")
    v = np.log(_f64(x)) if log else _f64(x)
    return as_tensor(-np.sum(v * _f64(y)) / x.shape[0], x.dtype)


@IMPLS.register("nn.cross_entropy")
def cross_entropy(args: list[Value], attrs: Attrs | None) -> Array:
    """`-sum(log(x) * y) / batch`."""
    return _cross_entropy("nn.cross_entropy", args, log=True)


@IMPLS.register("nn.cross_entropy_with_logits")
def cross_entropy_with_logits(args: list[Value], attrs: Attrs | None) -> Array:
    """`-sum(x * y) / batch` (x holds log-probabilities)."""
    return _cross_entropy("nn.cross_entropy_with_logits", args, log=False)


@IMPLS.register("nn.fifo_buffer")
def fifo_buffer(args: list[Value], attrs: Attrs | None) -> Array:
    """`concatenate(buffer, data)` along `axis`, keeping the last `buffer.shape[axis]`."""
    data, buffer = tensor_args("nn.fifo_buffer", args)
    axis = normalize_axis("nn.fifo_buffer", need_attrs("nn.fifo_buffer", attrs).axis, data.ndim)
    if buffer.ndim != data.ndim or data.dtype != buffer.dtype:
        raise EvalError("nn.fifo_buffer: data and buffer must have one rank and dtype")
    joined = np.concatenate([buffer, data], axis=axis)
    keep = buffer.shape[axis]
    return np.take(joined, np.arange(joined.shape[axis] - keep, joined.shape[axis]), axis=axis)


# ----------------------------------------------------------------------------- padding


def _pad_width(name: str, pad_width: object, ndim: int) -> list[tuple[int, int]]:
    pairs = [tuple(int(v) for v in p) for p in pad_width]  # type: ignore[attr-defined]
    if len(pairs) != ndim or any(len(p) != 2 for p in pairs):
        raise EvalError(f"operator `{name}`: pad_width needs {ndim} [before, after] pairs")
    if any(v < 0 for p in pairs for v in p):
        raise EvalError(f"operator `{name}`: negative padding")
    return [(p[0], p[1]) for p in pairs]


@IMPLS.register("nn.pad")
def pad(args: list[Value], attrs: Attrs | None) -> Array:
    """Pad each axis by [before, after]: with pad_value, the edge, or a reflection."""
    x, value = tensor_args("nn.pad", args)
    a = need_attrs("nn.pad", attrs)
    width = _pad_width("nn.pad", a.pad_width, x.ndim)
    if a.pad_mode == "constant":
        if value.ndim != 0:
            raise EvalError("nn.pad: pad_value must be a scalar")
        return np.pad(x, width, constant_values=value.astype(x.dtype))
    if a.pad_mode in ("edge", "reflect"):
        if a.pad_mode == "reflect" and any(
            max(p) >= n for p, n in zip(width, x.shape) if max(p) > 0
        ):
            raise EvalError("nn.pad: reflect padding must be smaller than the axis")
        return np.pad(x, width, mode=a.pad_mode)  # type: ignore[call-overload]
    raise EvalError(f"nn.pad: unknown pad_mode `{a.pad_mode}`")


@IMPLS.register("nn.mirror_pad")
def mirror_pad(args: list[Value], attrs: Attrs | None) -> Array:
    """Pad by reflection: SYMMETRIC repeats the edge, REFLECT does not."""
    (x,) = tensor_args("nn.mirror_pad", args)
    a = need_attrs("nn.mirror_pad", attrs)
    width = _pad_width("nn.mirror_pad", a.pad_width, x.ndim)
    modes = {"SYMMETRIC": "symmetric", "REFLECT": "reflect"}
    if a.mode not in modes:
        raise EvalError(f"nn.mirror_pad: unknown mode `{a.mode}`")
    limit = 0 if a.mode == "SYMMETRIC" else 1
    if any(max(p) > n - limit for p, n in zip(width, x.shape)):
        raise EvalError("nn.mirror_pad: padding larger than the axis")
    return np.pad(x, width, mode=modes[a.mode])  # type: ignore[call-overload]


# -------------------------------------------------------------------------- resampling


def _scaled_size(size: int, scale: float) -> int:
    """TVM's `round(size * scale)`: it folds `round` of a constant with `std::nearbyint`
    (half to even), as the type relation does."""
    return round(size * scale)


@IMPLS.register("nn.upsampling")
def upsampling(args: list[Value], attrs: Attrs | None) -> Array:
    """Resize H and W by `scale_h`, `scale_w` (TVM's topi `upsampling`)."""
    (x,) = tensor_args("nn.upsampling", args)
    a = need_attrs("nn.upsampling", attrs)
    axes = spatial_axes(a.layout, "HW")
    if len(axes) != 2:
        raise EvalError(f"nn.upsampling: layout `{a.layout}` needs H and W")
    sizes = [
        _scaled_size(x.shape[axes[0]], a.scale_h),
        _scaled_size(x.shape[axes[1]], a.scale_w),
    ]
    mode = "align_corners" if a.align_corners else "asymmetric"
    return resize(x, axes, sizes, method=a.method, mode=mode, int_div=True)


@IMPLS.register("nn.upsampling3d")
def upsampling3d(args: list[Value], attrs: Attrs | None) -> Array:
    """Resize D, H and W by `scale_d`, `scale_h`, `scale_w`."""
    (x,) = tensor_args("nn.upsampling3d", args)
    a = need_attrs("nn.upsampling3d", attrs)
    axes = spatial_axes(a.layout, "DHW")
    if len(axes) != 3:
        raise EvalError(f"nn.upsampling3d: layout `{a.layout}` needs D, H and W")
    scales = (a.scale_d, a.scale_h, a.scale_w)
    sizes = [_scaled_size(x.shape[ax], s) for ax, s in zip(axes, scales)]
    mode = a.coordinate_transformation_mode
    return resize(x, axes, sizes, method=a.method, mode=mode)


def _to_nchw(name: str, x: Array, layout: str) -> Array:
    if x.ndim != 4 or layout not in ("NCHW", "NHWC"):
        raise EvalError(f"operator `{name}` expects 4-D NCHW or NHWC data")
    return x if layout == "NCHW" else x.transpose(0, 3, 1, 2)


def _from_nchw(x: Array, layout: str) -> Array:
    return np.ascontiguousarray(x if layout == "NCHW" else x.transpose(0, 2, 3, 1))


@IMPLS.register("nn.depth_to_space")
def depth_to_space(args: list[Value], attrs: Attrs | None) -> Array:
    """Move channel blocks into `block_size` x `block_size` spatial blocks (DCR or CRD)."""
    (data,) = tensor_args("nn.depth_to_space", args)
    a = need_attrs("nn.depth_to_space", attrs)
    x = _to_nchw("nn.depth_to_space", data, a.layout)
    n, c, h, w = x.shape
    b = int(a.block_size)
    if b < 1 or c % (b * b):
        raise EvalError(f"nn.depth_to_space: {c} channels are not a multiple of {b}*{b}")
    if a.mode == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    elif a.mode == "CRD":
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    else:
        raise EvalError(f"nn.depth_to_space: unknown mode `{a.mode}`")
    return _from_nchw(y.reshape(n, c // (b * b), h * b, w * b), a.layout)


@IMPLS.register("nn.space_to_depth")
def space_to_depth(args: list[Value], attrs: Attrs | None) -> Array:
    """Move `block_size` x `block_size` spatial blocks into channels (DCR or CRD)."""
    (data,) = tensor_args("nn.space_to_depth", args)
    a = need_attrs("nn.space_to_depth", attrs)
    x = _to_nchw("nn.space_to_depth", data, a.layout)
    n, c, h, w = x.shape
    b = int(a.block_size)
    if b < 1 or h % b or w % b:
        raise EvalError(f"nn.space_to_depth: {h}x{w} is not a multiple of the block {b}")
    blocks = x.reshape(n, c, h // b, b, w // b, b)
    if a.mode == "DCR":
        y = blocks.transpose(0, 3, 5, 1, 2, 4)
    elif a.mode == "CRD":
        y = blocks.transpose(0, 1, 3, 5, 2, 4)
    else:
        raise EvalError(f"nn.space_to_depth: unknown mode `{a.mode}`")
    return _from_nchw(y.reshape(n, c * b * b, h // b, w // b), a.layout)
