"""`alter-op-layout`: convolutions on channel-packed layouts, activations kept packed.

`AlterOpLayout()` (pipeline text `alter-op-layout{block=8}`) does what TVM's AlterOpLayout
does for x86: every `nn.conv2d` with NCHW data and an OIHW weight becomes

    nn.contrib_conv2d_NCHWc(layout_transform(%x, "NCHW", "NCHW{ib}c"), <W: OIHW{ib}i{ob}o>,
                            data_layout="NCHW{ib}c", kernel_layout="OIHW{ib}i{ob}o",
                            out_layout="NCHW{ob}c", ...)

and a depthwise one (groups = channels = output channels) becomes
`nn.contrib_depthwise_conv2d_NCHWc` with data `NCHW{b}c` and weight `OIHW1i{b}o`. The
block `ob` is `block` (the target's fp32 vector lanes: `relay.build` sets it, 8 with AVX2,
16 with AVX-512; 8 when the pass runs without a target) when it divides the output
channels, else the largest divisor of the channels below it; `ib` is chosen the same way
from the input channels (3 for an RGB input), so a chain of convolutions agrees on its
blocks and needs no transform between them. `block=0` turns the pass off.

The operators between convolutions follow the packed layout through their layout rules
(passes/layout_rules.py): bias adds, activations, elementwise and residual adds, pools and
global pools, channel concatenations whose parts divide by the block, ...; the data is
unpacked only at barriers (reshape, flatten, dense, an operator without a layout rule,
other grouped convolutions, Winograd convolutions, function boundaries). The walk is
`convert-layout`'s (`convert_function`): transforms only where a layout changes, inverse
pairs cancelled, constant weights packed here at compile time. What stayed unpacked for
lack of a layout rule is logged (logger `relay.passes.alter_op_layout`, level INFO;
`relay opt --debug` prints it).

Dense layers with a constant weight and more rows than the GEMV form takes become
`nn.contrib_dense_pack` on the weight packed `NC{b}n` by the dense micro-kernel's column
block, at compile time (passes/dense_pack.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from attrs import field, frozen

from ..lang.expr import Call, Constant, Expr, Function
from ..lang.module import IRModule
from ..lang.op import Op, get_op
from ..lang.traversal import post_order
from ..lang.types import TensorType, Type
from .context import PassContext
from .convert_layout import LayoutReport, convert_function
from .dense_pack import dense_layouts, packed_dense
from .layout_rules import packed_convolution
from .pass_base import PassError, function_pass

LOG = logging.getLogger(__name__)

DEFAULT_BLOCK = 8
"""The channel block without a target (AVX2's fp32 lanes)."""

_CONV2D = get_op("nn.conv2d")
_DENSE = get_op("nn.dense")


def _check_block(instance: object, attribute: object, value: int) -> None:
    if value < 0:
        raise PassError(f"alter-op-layout: block must be 0 (off) or a positive size, not {value}")


@frozen
class AlterOpLayoutOptions:
    """`block`: the channel block (the target's fp32 vector lanes); 0 turns the pass off."""

    block: int = field(default=DEFAULT_BLOCK, validator=_check_block)


def channel_block(channels: int, block: int) -> int:
    """`block` when it divides `channels`, else the largest divisor of `channels` below it
    (`channel_block(3, 8) == 3`, `channel_block(12, 8) == 6`)."""
    return next(b for b in range(min(block, channels), 0, -1) if channels % b == 0)


def _static_tensor(t: Type, rank: int) -> tuple[int, ...] | None:
    if not isinstance(t, TensorType) or t.ndim != rank or t.dtype != "float32":
        return None
    sizes = tuple(d for d in t.shape if isinstance(d, int))
    return sizes if len(sizes) == rank else None


def conv2d_layouts(call: Call, type_of: Callable[[Expr], Type], block: int) -> tuple[str, ...]:
    """The (data, kernel, out) layouts `call` gets (module docstring), or () when it
    stays as it is: not an NCHW/OIHW float32 `nn.conv2d` with static shapes, or grouped
    without being depthwise."""
    a = call.attrs
    if call.op is not _CONV2D or a is None or block <= 0:
        return ()
    if (str(a.data_layout), str(a.kernel_layout)) != ("NCHW", "OIHW"):
        return ()
    if str(a.out_layout) not in ("", "NCHW") or str(a.out_dtype or "float32") != "float32":
        return ()
    data = _static_tensor(type_of(call.args[0]), 4)
    weight = _static_tensor(type_of(call.args[1]), 4)
    if data is None or weight is None:
        return ()
    channels, out_channels, groups = data[1], weight[0], int(a.groups)
    if groups == 1:
        ib, ob = channel_block(channels, block), channel_block(out_channels, block)
        return (f"NCHW{ib}c", f"OIHW{ib}i{ob}o", f"NCHW{ob}c")
    if groups == channels == out_channels and weight[1] == 1:
        b = channel_block(channels, block)
        return (f"NCHW{b}c", f"OIHW1i{b}o", f"NCHW{b}c")
    return ()


def _may_alter(node: Expr) -> bool:
    """Whether `node` is a call this pass may rewrite: a conv2d, or a dense whose weight is
    a constant (the only ones passes/dense_pack.py packs)."""
    if not isinstance(node, Call):
        return False
    return node.op is _CONV2D or (node.op is _DENSE and isinstance(node.args[1], Constant))


def alter_op_layout_function(
    fn: Function, mod: IRModule | None, block: int
) -> tuple[Function, LayoutReport]:
    """`fn` with its convolutions packed by `block` (module docstring), and what stayed
    unpacked for lack of a layout rule."""
    if block <= 0 or not any(_may_alter(n) for n in post_order(fn)):
        return fn, LayoutReport()

    def desire(call: Call, type_of: Callable[[Expr], Type]) -> tuple[str, ...]:
        if call.op is _DENSE:
            return dense_layouts(call, type_of, block)
        return conv2d_layouts(call, type_of, block)

    rules: dict[Op, Callable] = {_CONV2D: packed_convolution, _DENSE: packed_dense}
    return convert_function(fn, mod, desire, rules)


@function_pass(
    name="alter-op-layout", opt_level=3, options=AlterOpLayoutOptions, tvm_name="AlterOpLayout"
)
def alter_op_layout_pass(
    fn: Function, mod: IRModule, ctx: PassContext, options: AlterOpLayoutOptions
) -> Function:
    """Run convolutions on channel-packed layouts (`NCHW{b}c`) and keep the activations
    between them packed (module docstring)."""
    out, report = alter_op_layout_function(fn, mod, options.block)
    for line in report.lines("NCHW"):
        LOG.info("alter-op-layout: %s", line)
    return out


__all__ = [
    "DEFAULT_BLOCK",
    "AlterOpLayoutOptions",
    "alter_op_layout_function",
    "alter_op_layout_pass",
    "channel_block",
    "conv2d_layouts",
]
