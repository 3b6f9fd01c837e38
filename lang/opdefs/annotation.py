"""Annotations, device placement and debugging hooks that appear in printed programs.

All are identities on their value at run time (`debug` also calls its hook). Virtual
devices are opaque values here (TVM prints them as `meta[VirtualDevice][i]`); None stands
for TVM's fully unconstrained device.
"""

from __future__ import annotations

from ..attrs import Kind
from ._decl import OPAQUE, attr, declare, nullable, required, schema

ON_DEVICE_ATTRS = schema(
    "OnDeviceAttrs",
    nullable("virtual_device", Kind.ANY),
    attr("constrain_result", False),
    attr("constrain_body", True),
)
DEVICE_COPY_ATTRS = schema(
    "DeviceCopyAttrs",
    required("src_virtual_device", Kind.ANY),
    required("dst_virtual_device", Kind.ANY),
)
DEBUG_ATTRS = schema("DebugAttrs", required("debug_func", Kind.ANY, nullable=True))

declare(
    [
        (
            "annotation.stop_fusion",
            "data",
            OPAQUE,
            None,
            "Identity that fusion does not cross.",
        ),
        (
            "annotation.checkpoint",
            "data",
            OPAQUE,
            None,
            "Identity marking a value to recompute instead of storing (for gradients).",
        ),
        ("on_device", "data", OPAQUE, ON_DEVICE_ATTRS, "Identity placing its value on a device."),
        (
            "device_copy",
            "data",
            OPAQUE,
            DEVICE_COPY_ATTRS,
            "Copy a value from one device to another.",
        ),
        ("debug", "program", OPAQUE, DEBUG_ATTRS, "Identity that calls a debugging hook."),
    ]
)
