"""Pooling (TVM `src/relay/op/nn/pooling.cc`): windowed, global and adaptive.

`padding` holds what was given, as for convolutions. Adaptive pools take an
`output_size` (empty or None: the input's spatial size, as in TVM; a single value applies
to every axis).
"""

from __future__ import annotations

from ..attrs import AttrField, AttrsSchema, Kind
from ._decl import OUT_ELEMWISE_FUSABLE, attr, declare, nullable, required, schema

_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
_OUT_LAYOUT = attr("out_layout", "")


def _window_schema(name: str, ndim: int, *extra: AttrField) -> AttrsSchema:
    return schema(
        name,
        required("pool_size", Kind.INTS),
        attr("strides", (1,) * ndim),
        attr("dilation", (1,) * ndim),
        attr("padding", (0,) * ndim),
        attr("layout", _LAYOUTS[ndim]),
        _OUT_LAYOUT,
        attr("ceil_mode", False),
        *extra,
    )


def _adaptive_schema(ndim: int) -> AttrsSchema:
    return schema(
        f"AdaptivePool{ndim}DAttrs",
        nullable("output_size", Kind.INTS, ()),
        attr("layout", _LAYOUTS[ndim]),
        _OUT_LAYOUT,
    )


_COUNT_INCLUDE_PAD = attr("count_include_pad", False)

MAX_POOL_ATTRS = {n: _window_schema(f"MaxPool{n}DAttrs", n) for n in (1, 2, 3)}
AVG_POOL_ATTRS = {n: _window_schema(f"AvgPool{n}DAttrs", n, _COUNT_INCLUDE_PAD) for n in (1, 2, 3)}
ADAPTIVE_POOL_ATTRS = {n: _adaptive_schema(n) for n in (1, 2, 3)}
GLOBAL_POOL2D_ATTRS = schema("GlobalPool2DAttrs", attr("layout", "NCHW"), _OUT_LAYOUT)

_WHAT = {"max": "maximum", "avg": "average"}

declare(
    [
        (
            f"nn.{kind}_pool{n}d",
            "data",
            OUT_ELEMWISE_FUSABLE,
            (MAX_POOL_ATTRS if kind == "max" else AVG_POOL_ATTRS)[n],
            f"{n}-D {_WHAT[kind]} pooling over `pool_size` windows.",
        )
        for kind in ("max", "avg")
        for n in (1, 2, 3)
    ]
)
declare(
    [
        (
            f"nn.adaptive_{kind}_pool{n}d",
            "data",
            OUT_ELEMWISE_FUSABLE,
            ADAPTIVE_POOL_ATTRS[n],
            f"{n}-D adaptive {_WHAT[kind]} pooling to `output_size`.",
        )
        for kind in ("max", "avg")
        for n in (1, 2, 3)
    ]
)
declare(
    [
        (
            f"nn.global_{kind}_pool2d",
            "data",
            OUT_ELEMWISE_FUSABLE,
            GLOBAL_POOL2D_ATTRS,
            f"{_WHAT[kind].capitalize()} over all spatial positions (output H = W = 1).",
        )
        for kind in ("max", "avg")
    ]
)
