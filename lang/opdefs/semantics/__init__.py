"""What operator attributes mean, written once for every facet of an operator.

The type relations (`typecheck/relations`), the reference interpreter
(`backend/runtime/op_impls`) and the compute definitions (`backend/lower/computes`) all
read attributes through these rules. The functions take plain Python values (ints,
tuples, strings: the checked attribute values) and return plain values, and raise one
error type, `SemanticsError` (a `ValueError`), whose message each facet reports in its own
way. One module per topic:

* `axes`: axis normalization (negative axes, out-of-range errors), reduce axes (`exclude`),
  optional axis lists (None: every axis);
* `reshape`: reshape's special values 0, -1, -2, -3, -4;
* `layouts`: layout strings (`NCHW16c`, `OIHW8i8o`), spatial axis positions;
* `slicing`: padding pairs, strided-slice canonicalization and clamping;
* `dtypes`: the lowest and highest finite value of each dtype;
* `resize`: resize method names and the coordinate-transformation table;
* `winograd`: the Winograd matrices (G of the weight transform, A and B of the tiles).
"""

from __future__ import annotations

from .axes import listed_axes, normalize_axes, normalize_axis, reduce_axes
from .dtypes import highest, lowest
from .error import SemanticsError
from .layouts import LayoutAxes, layout_letters, parse_layout, spatial_positions
from .reshape import (
    Copy,
    Infer,
    Merge,
    Part,
    ReshapeError,
    ReshapePlan,
    Rest,
    reshape_plan,
    reshape_shape,
)
from .resize import RESIZE_METHODS, resize_method, source_coordinate
from .slicing import (
    MAX_INDEX,
    pad_pairs,
    slice_range,
    strided_slice_axes,
    strided_slice_ranges,
)
from .winograd import pack_weight as pack_winograd_weight
from .winograd import unpack_weight as unpack_winograd_weight
from .winograd import winograd_g, winograd_matrices

__all__ = [
    "MAX_INDEX",
    "RESIZE_METHODS",
    "Copy",
    "Infer",
    "LayoutAxes",
    "Merge",
    "Part",
    "ReshapeError",
    "ReshapePlan",
    "Rest",
    "SemanticsError",
    "highest",
    "layout_letters",
    "listed_axes",
    "lowest",
    "normalize_axes",
    "normalize_axis",
    "pack_winograd_weight",
    "pad_pairs",
    "parse_layout",
    "reduce_axes",
    "reshape_plan",
    "reshape_shape",
    "resize_method",
    "slice_range",
    "source_coordinate",
    "spatial_positions",
    "strided_slice_axes",
    "strided_slice_ranges",
    "unpack_winograd_weight",
    "winograd_g",
    "winograd_matrices",
]
