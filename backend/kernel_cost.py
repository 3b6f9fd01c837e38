"""What a compiled kernel does, for profiles and reports: a plain value the lowering makes
(from the compute definitions), compiled models keep and artifacts save."""

from __future__ import annotations

from attrs import frozen


@frozen
class KernelCost:
    """What a kernel does, for profiles: `name` as TVM would call the fused function
    (`fused_nn_conv2d_add_nn_relu`, made unique in the model), the operators fused into it
    in evaluation order, `kind` the operator that chose its schedule (the anchor, e.g.
    `nn.conv2d`; the first operator when nothing did), and per call the floating-point
    operations and the bytes of its arguments (inputs, lifted constants, outputs) as the
    compute definitions give them."""

    name: str
    ops: tuple[str, ...]
    kind: str
    flops: int
    bytes: int


__all__ = ["KernelCost"]
