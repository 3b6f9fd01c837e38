"""Call generators of the pools (window, adaptive and global)."""

from __future__ import annotations

from typing import Any

from ...lang.op import Op
from ...lang.optable import OpTable
from ...lang.types import TensorType
from .conv import DATA_LAYOUT, LAST_LAYOUT
from .core import Generator, OpCall, Tape, _call, _input, _shape, _window, kind

GENERATORS: OpTable[Generator] = OpTable("test generator")
"""The call generators of this family (`typed_ops.GENERATORS` joins the families)."""


POOL_N = {
    **{f"nn.{k}_pool{n}d": n for k in ("max", "avg") for n in (1, 2, 3)},
}


@GENERATORS.register(*POOL_N)
def _pool(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    n = POOL_N[op.name]
    x = _input(t, x, ranks=(n + 2,), hi=4 if n == 3 else 6, kinds="fi")
    if x is None:
        return None
    shape = _shape(x)
    last = t.maybe(3)
    spatial = shape[1:-1] if last else shape[2:]
    win = _window(t, spatial)
    attrs: dict[str, Any] = {
        "pool_size": win.sizes,
        "strides": win.strides,
        "dilation": win.dilation,
        "padding": win.padding,
        "layout": LAST_LAYOUT[n] if last else DATA_LAYOUT[n],
        "ceil_mode": t.maybe(3),
    }
    if op.name.startswith("nn.avg"):
        attrs["count_include_pad"] = t.maybe(5)
        if kind(x.dtype) == "i" and attrs["ceil_mode"] and attrs["count_include_pad"]:
            attrs["ceil_mode"] = False  # a last window past the padding divides ints by 0
    return _call(op, [x], **attrs)


ADAPTIVE_N = {f"nn.adaptive_{k}_pool{n}d": n for k in ("max", "avg") for n in (1, 2, 3)}


@GENERATORS.register(*ADAPTIVE_N)
def _adaptive_pool(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    n = ADAPTIVE_N[op.name]
    x = _input(t, x, ranks=(n + 2,), hi=4 if n == 3 else 6, kinds="fi")
    if x is None:
        return None
    form = t.choose(0, 2)
    sizes = [] if form == 0 else [t.choose(1, 4) for _ in range(1 if form == 1 else n)]
    layout = LAST_LAYOUT[n] if t.maybe(3) else DATA_LAYOUT[n]
    return _call(op, [x], output_size=sizes, layout=layout)


@GENERATORS.register("nn.global_max_pool2d", "nn.global_avg_pool2d")
def _global_pool(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(4,), kinds="fi")
    return None if x is None else _call(op, [x], layout=t.pick(("NCHW", "NHWC")))
