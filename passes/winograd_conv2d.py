"""`winograd-conv2d`: 3x3 stride-1 convolutions become Winograd convolutions (TVM's
AlterOpLayout does the same at opt level 3).

    %0 = nn.conv2d(%x, meta[relay.Constant][0], padding=[1, 1, 1, 1], channels=128,
                   kernel_size=[3, 3]);

becomes, for the shapes where `winograd_tile` says so,

    %0 = nn.contrib_conv2d_winograd_without_weight_transform(%x, meta[relay.Constant][1],
           tile_size=4, padding=[1, 1, 1, 1], channels=128, kernel_size=[3, 3]);

with the weight transformed here, once, at build time when it is a constant (the result of
`nn.contrib_conv2d_winograd_weight_transform`, `(alpha, alpha, CO, CI)`; too large for
`fold-constant`'s element limit in the late layers), or a weight-transform call when it is
not (`constant-weights-only=false`; it then runs as a kernel on every call).

A call is eligible when it is a float32 `nn.conv2d` with NCHW data and output, an OIHW 3x3
weight, stride 1, dilation 1, one group and a static shape. Which tile it gets is the rule
`winograd_tile` (option `rule`: `auto`, or `f2`/`f4` to force one tile on every eligible
call, or `never`). The results differ from the direct convolution by the rounding of the
transforms: within 1e-5 (F(2,3)) and 1e-4 (F(4,3)) of the output's largest magnitude.
A constant weight is transformed in float32 (`transform_weight`, one matrix product): it
differs from the interpreter's float64 transform by float32 rounding (~2e-7 of the
largest transformed value), far inside those bounds.

A transformed constant weight is also packed by blocks of `b` output channels, `(alpha,
alpha, ceil(CO / b), CI, b)` (`semantics.pack_winograd_weight`; option `weight_block`, 6:
the rows of the batched GEMM's default register block), so that a block of rows of U is
one contiguous stream instead of `b` (ResNet-18's 256@14 and 512@7 layers, AVX2, 2
threads: 14% faster; the model 3%). A GEMM that takes other rows reads it as correctly,
and as fast (measured with the one-row GEMM of the 28x28 layers).
"""

from __future__ import annotations

import numpy as np
from attrs import frozen

from ..backend.runtime.op_impls.conv import winograd_g
from ..lang.expr import Call, Constant, Expr, Function
from ..lang.module import IRModule
from ..lang.op import get_op
from ..lang.opdefs.semantics import pack_winograd_weight
from ..lang.types import TensorType
from .context import PassContext
from .pass_base import PassError, function_pass
from .pattern import RewriteContext, Rule, apply_rules, is_op, wildcard

RULES = ("auto", "never", "f2", "f4")


@frozen
class WinogradOptions:
    """Options of the `winograd-conv2d` pass."""

    rule: str = "auto"
    """`auto` (`winograd_tile`), `never`, or `f2`/`f4`: that tile for every eligible call."""

    constant_weights_only: bool = True
    """Rewrite only convolutions whose weight is a constant (transformed here, once)."""

    weight_block: int = 6
    """Output channels per block of a packed transformed constant weight (module
    docstring); 0 leaves it unpacked."""


def winograd_tile(channels: int, out_channels: int, height: int, width: int) -> int:
    """The Winograd tile for a stride-1 3x3 convolution of this shape (batch 1), or 0 for
    the direct convolution. Measured on ResNet-18's layers (2-core AVX2, 2 threads,
    alternating runs in one process, under load): F(4,3) beats the direct convolution on
    28x28 and 14x14 with 128 and 256 channels, F(2,3) on 7x7 with 512 channels; on 56x56
    with 64 channels the input and output transforms (scalar gathers) eat the gain. Below
    32 channels the transforms dominate the product: direct."""
    if min(channels, out_channels) < 32:
        return 0
    if height <= 8 and width <= 8:
        return 2
    if height <= 32 and width <= 32:
        return 4
    return 0


def _eligible(call: Call, data: TensorType, weight: TensorType) -> bool:
    a = call.attrs
    if a is None or data.dtype != "float32" or weight.dtype != "float32":
        return False
    shapes = (*data.shape, *weight.shape)
    if data.ndim != 4 or weight.ndim != 4 or not all(isinstance(d, int) for d in shapes):
        return False
    return (
        str(a.data_layout) == "NCHW"
        and str(a.kernel_layout) == "OIHW"
        and str(a.out_layout or "NCHW") == "NCHW"
        and int(a.groups) == 1
        and [int(s) for s in a.strides] == [1, 1]
        and [int(d) for d in a.dilation] == [1, 1]
        and tuple(weight.shape[2:]) == (3, 3)
        and str(a.out_dtype or "float32") == "float32"
    )


def transform_weight(weight: np.ndarray, tile: int, block: int = 0) -> np.ndarray:
    """`nn.contrib_conv2d_winograd_weight_transform` of a float32 OIHW 3x3 `weight`
    (`U[e, n, co, ci] = sum G[e, h] G[n, w] weight[co, ci, h, w]`) as one float32 matrix
    product with `kron(G, G)`, read-only; packed by `block` output channels when that is
    not 0 (`semantics.pack_winograd_weight`: the weight's channels are put in the packed
    order before the product, so packing costs no pass over U). ~3x cheaper than the
    interpreter's float64 transform (ResNet-18's weights: 0.11 -> 0.04 s); it differs from
    it by a few float32 roundings of the weights (relative ~1e-7), far inside Winograd's
    tolerance."""
    co, ci, k, _ = weight.shape
    g = np.asarray(winograd_g(tile, k), dtype=np.float32).astype(np.float64)
    kron = np.kron(g, g).astype(np.float32)
    alpha = g.shape[0]
    columns = weight.reshape(co, ci, k * k)
    if block:
        columns = pack_winograd_weight(columns, block, axis=0)
    out = np.empty((alpha, alpha, *columns.shape[:-1]), dtype=np.float32)
    np.matmul(kron, columns.reshape(-1, k * k).T, out=out.reshape(alpha * alpha, -1))
    out.setflags(write=False)
    return out


def winograd_call(call: Call, tile: int, weight: Expr, out_channels: int, block: int = 0) -> Call:
    """`call` (an `nn.conv2d`) as a Winograd convolution with `tile`, reading the
    transformed weight (transformed here when `weight` is a constant, and packed by `block`
    output channels when that is not 0)."""
    a = call.attrs
    assert a is not None
    transform = get_op("nn.contrib_conv2d_winograd_weight_transform")
    t_attrs = transform.make_attrs(tile_size=tile)
    if isinstance(weight, Constant):  # float32: `_eligible`
        transformed: Expr = Constant(transform_weight(weight.data, tile, block))
    else:
        transformed = Call(transform, [weight], t_attrs)
    op = get_op("nn.contrib_conv2d_winograd_without_weight_transform")
    attrs = op.make_attrs(
        tile_size=tile,
        strides=a.strides,
        padding=a.padding,
        dilation=a.dilation,
        groups=a.groups,
        channels=out_channels,
        kernel_size=[3, 3],
        data_layout="NCHW",
        kernel_layout="OIHW",
        out_layout=a.out_layout,
        out_dtype=a.out_dtype,
    )
    return Call(op, [call.args[0], transformed], attrs, span=call.span)


def winograd_rule(options: WinogradOptions) -> Rule:
    """The rewrite of one eligible `nn.conv2d` call (module docstring)."""
    forced = {"f2": 2, "f4": 4, "never": 0}.get(options.rule)

    def rewrite(call: Call, ctx: RewriteContext) -> Expr | None:
        original = ctx.original
        assert isinstance(original, Call)
        data, weight = (ctx.type_of(arg) for arg in original.args)
        if not isinstance(data, TensorType) or not isinstance(weight, TensorType):
            return None
        if not _eligible(call, data, weight):
            return None
        if options.constant_weights_only and not isinstance(call.args[1], Constant):
            return None
        _, c, h, w = (int(d) for d in data.shape)  # type: ignore[arg-type]
        k = int(weight.shape[0])  # type: ignore[arg-type]
        tile = forced if forced is not None else winograd_tile(c, k, h, w)
        if not tile:
            return None
        return winograd_call(call, tile, call.args[1], k, options.weight_block)

    return Rule(is_op("nn.conv2d")(wildcard(), wildcard()).named("call"), rewrite, "winograd")


def winograd_function(
    fn: Function, options: WinogradOptions, mod: IRModule | None = None
) -> Function:
    """`fn` with its eligible convolutions made Winograd convolutions."""
    if options.rule not in RULES:
        raise PassError(
            f"winograd-conv2d: rule must be one of {', '.join(RULES)}, not {options.rule!r}"
        )
    if options.weight_block < 0:
        raise PassError(
            f"winograd-conv2d: weight_block must be 0 (unpacked) or a block of output "
            f"channels, not {options.weight_block}"
        )
    out = apply_rules(winograd_rule(options), fn, mod, retype=False, fixpoint=False)
    assert isinstance(out, Function)
    return out


@function_pass(name="winograd-conv2d", opt_level=3, options=WinogradOptions)
def winograd_conv2d_pass(
    fn: Function, mod: IRModule, ctx: PassContext, options: WinogradOptions
) -> Function:
    """Rewrite 3x3 stride-1 convolutions into Winograd convolutions (module docstring)."""
    return winograd_function(fn, options, mod)
