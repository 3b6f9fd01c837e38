"""Opaque metadata objects as attribute values: `on_device(%x, virtual_device=meta[...])`.

TVM prints virtual devices (and their targets) into the `#[metadata]` section and refers
to them from operator and function attributes. They are kept as opaque values that print
back as equal objects; `on_device` and `device_copy` are identities on one CPU target.
"""

from __future__ import annotations

import json

import numpy as np
import relay
from relay.grammar import parse, parse_expr
from relay.lang.expr import Call, Function
from relay.lang.metadata import MetaObject, read_metadata
from relay.lang.printer import print_expr, print_module
from relay.lang.structural import structural_equal, structural_hash
from relay.lang.types import TensorType
from relay.typecheck import check_module

# The JSON TVM (0.9 and later) writes for two CPU virtual devices sharing an llvm target.
DEVICES = {
    "root": 1,
    "nodes": [
        {"type_key": ""},
        {"type_key": "Map", "keys": ["VirtualDevice"], "data": [2]},
        {"type_key": "Array", "data": [3, 12]},
        {
            "type_key": "VirtualDevice",
            "attrs": {
                "device_type_int": "1",
                "memory_scope": "11",
                "target": "4",
                "virtual_device_id": "0",
            },
        },
        {
            "type_key": "Target",
            "attrs": {
                "attrs": "9",
                "features": "10",
                "host": "0",
                "keys": "7",
                "kind": "5",
                "tag": "6",
            },
        },
        {"type_key": "TargetKind", "repr_str": "llvm"},
        {"type_key": "runtime.String"},
        {"type_key": "Array", "data": [8]},
        {"type_key": "runtime.String", "repr_str": "cpu"},
        {"type_key": "Map", "data": []},
        {"type_key": "Map", "data": []},
        {"type_key": "runtime.String"},
        {
            "type_key": "VirtualDevice",
            "attrs": {
                "device_type_int": "1",
                "memory_scope": "13",
                "target": "4",
                "virtual_device_id": "1",
            },
        },
        {"type_key": "runtime.String", "repr_str": "global"},
    ],
    "b64ndarrays": [],
    "attrs": {"tvm_version": "0.9.0"},
}

T = "Tensor[(2, 3), float32]"
PROGRAM = f"""\
#[version = "0.0.5"]
def @main(%x {{virtual_device=meta[VirtualDevice][0]}}: {T}, %y: {T}, virtual_device=meta[VirtualDevice][0]) -> {T} {{
  %0 = on_device(%x, virtual_device=meta[VirtualDevice][0], constrain_result=True) /* ty={T} */;
  %1 = add(%0, %y) /* ty={T} */;
  %2 = device_copy(%1, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]) /* ty={T} */;
  on_device(%2, virtual_device=meta[VirtualDevice][1], constrain_body=False) /* ty={T} */
}}

#[metadata]
{json.dumps(DEVICES, indent=2)}
"""


def _devices() -> list[object]:
    return read_metadata(json.dumps(DEVICES))["VirtualDevice"]


def test_tvm_program_with_virtual_devices_parses() -> None:
    cpu0, cpu1 = _devices()
    fn = parse(PROGRAM)["main"]
    assert fn.attrs.get("virtual_device") == cpu0  # kept, not dropped
    last = fn.body
    copy = last.args[0]
    placed = copy.args[0].args[0]
    assert isinstance(last, Call) and last.op.name == "on_device"
    assert last.attrs.virtual_device == cpu1 and last.attrs.constrain_body is False
    assert copy.op.name == "device_copy"
    assert (copy.attrs.src_virtual_device, copy.attrs.dst_virtual_device) == (cpu0, cpu1)
    assert placed.op.name == "on_device" and placed.attrs.virtual_device == cpu0
    assert placed.attrs.constrain_result is True and placed.attrs.constrain_body is True
    assert isinstance(cpu0, MetaObject) and cpu0 != cpu1


def test_printing_writes_the_objects_back() -> None:
    mod = parse(PROGRAM)
    text = print_module(mod)
    assert "on_device(%x, virtual_device=meta[VirtualDevice][0], constrain_result=True)" in text
    assert "virtual_device=meta[VirtualDevice][1], constrain_body=False" in text
    assert ", virtual_device=meta[VirtualDevice][0])" in text.splitlines()[1]
    again = parse(text)
    assert structural_equal(mod, again)
    assert structural_hash(mod) == structural_hash(again)
    assert print_module(again) == text  # idempotent
    # The section written holds the same objects (TVM reads the same graph).
    written = read_metadata(text.split("#[metadata]\n", 1)[1])
    assert written["VirtualDevice"] == _devices()


def test_distinct_objects_are_not_equal_programs() -> None:
    swapped = PROGRAM.replace(
        "on_device(%2, virtual_device=meta[VirtualDevice][1]",
        "on_device(%2, virtual_device=meta[VirtualDevice][0]",
    )
    assert not structural_equal(parse(PROGRAM), parse(swapped))


def test_on_device_and_device_copy_are_identities() -> None:
    mod = parse(PROGRAM)
    types = check_module(mod)
    t = TensorType((2, 3), "float32")
    assert types.global_types["main"].ret_type == t
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.full((2, 3), 0.5, np.float32)
    np.testing.assert_array_equal(relay.interpret(mod, x=x, y=y), x + y)


def test_print_expr_with_meta_attributes() -> None:
    text = PROGRAM.split("#[metadata]", 1)[1]
    expr = parse_expr(
        "free_var %x: Tensor[(2), float32]; on_device(%x, virtual_device=meta[VirtualDevice][1])"
        "\n#[metadata]" + text
    )
    printed = print_expr(expr)
    assert "virtual_device=meta[VirtualDevice][0]" in printed  # renumbered: the only one
    again = parse_expr(printed)
    assert again.attrs.virtual_device == _devices()[1]


def test_function_literal_attributes_keep_meta_values() -> None:
    text = PROGRAM.split("#[metadata]", 1)[1]
    fn = parse_expr("fn (%a, virtual_device=meta[VirtualDevice][1], Primitive=1) { %a }"
                    "\n#[metadata]" + text)  # fmt: skip
    assert isinstance(fn, Function) and fn.attrs.get("virtual_device") == _devices()[1]
    assert fn.attrs.get("Primitive") == 1
    again = parse_expr(print_expr(fn))
    assert structural_equal(fn, again)
