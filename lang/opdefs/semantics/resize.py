"""Resizing: method names and TVM's coordinate transformations (topi `image/resize.h`).

Each output index `x` maps to a source coordinate in float32 (this decides which pixel
nearest neighbour picks): "half_pixel" `(x + 0.5) * in / out - 0.5`, "align_corners"
`(in - 1) / (out - 1) * x`, "asymmetric" `in / out * x`, "pytorch_half_pixel" (half_pixel,
but 0 for an output of size 1), "tf_half_pixel_for_nn" `(x + 0.5) * in / out` and
"tf_crop_and_resize" (from the region `[start, end]` of the image, normalized).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .error import SemanticsError

F32 = np.float32

RESIZE_METHODS = {
    "nearest_neighbor": "nearest_neighbor",
    "nearest": "nearest_neighbor",
    "linear": "linear",
    "bilinear": "linear",
    "trilinear": "linear",
    "cubic": "cubic",
    "bicubic": "cubic",
}
"""Each accepted `method` (TVM's names and the upsampling aliases) to its canonical name."""


def resize_method(method: str, mode: str, rounding: str) -> tuple[str, str]:
    """The canonical method and the rounding method nearest neighbour uses.

    An empty `rounding` means "round" with "align_corners" and "floor" otherwise (TVM).
    """
    if method not in RESIZE_METHODS:
        raise SemanticsError(f"resize: unknown method `{method}`")
    method = RESIZE_METHODS[method]
    if method == "nearest_neighbor" and not rounding:
        rounding = "round" if mode == "align_corners" else "floor"
    return method, rounding


def source_coordinate(
    x: Any,
    n_in: int,
    n_out: int,
    mode: str,
    lift: Callable[[np.float32], Any],
    start: float = 0.0,
    end: float = 0.0,
) -> Any:
    """TVM's `get_inx`: the float32 source coordinate of output index `x` (already float32).

    The formulas are written once for any float32 arithmetic: `x` is a float32 numpy
    array (the interpreter) or a float32 TE expression (the compute), and `lift` turns a
    float32 constant into that world. Constants are folded in float32 exactly as TVM
    folds them; an output of size 1 may give a constant, `lift(0.0)`.
    """
    scale = lift(F32(n_in) / F32(n_out))
    half = lift(F32(0.5))
    if mode == "half_pixel" or (mode == "pytorch_half_pixel" and n_out > 1):
        result = (x + half) * scale - half
    elif mode == "pytorch_half_pixel" or (mode == "align_corners" and n_out == 1):
        result = lift(F32(0.0))
    elif mode == "align_corners":
        result = lift(F32(n_in - 1) / F32(n_out - 1)) * x
    elif mode == "asymmetric":
        result = scale * x
    elif mode == "tf_half_pixel_for_nn":
        result = (x + half) * scale
    elif mode == "tf_crop_and_resize":
        s, e = F32(start), F32(end)
        if n_out > 1:
            result = lift(s * F32(n_in - 1)) + x * lift(e - s) * lift(F32(n_in - 1)) / lift(
                F32(n_out - 1)
            )
        else:
            result = lift(F32(0.5) * (s + e) * F32(n_in - 1))
    else:
        raise SemanticsError(f"resize: unknown coordinate_transformation_mode `{mode}`")
    return result
