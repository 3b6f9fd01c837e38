"""The `#[metadata]` section: NDArray blobs and TVM's SaveJSON object graph."""

import base64
import json
import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from relay.lang.metadata import (
    NDARRAY_MAGIC,
    MetaObject,
    decode_ndarray,
    encode_ndarray,
    read_metadata,
    write_metadata,
)
from relay.lang.types import ShapeVar

DTYPES = [
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
]


def blob(code, bits, shape, payload, lanes=1, magic=NDARRAY_MAGIC, nbytes=None):
    """An NDArray blob built by hand from the format description."""
    parts = [
        struct.pack("<QQiii", magic, 0, 1, 0, len(shape)),
        struct.pack("<BBH", code, bits, lanes),
        struct.pack(f"<{len(shape)}q", *shape),
        struct.pack("<q", len(payload) if nbytes is None else nbytes),
        payload,
    ]
    return base64.b64encode(b"".join(parts)).decode()


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# ---------------------------------------------------------------------------- ndarrays


def test_encode_layout_matches_the_format():
    array = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    raw = base64.b64decode(encode_ndarray(array))
    magic, reserved, dev_type, dev_id, ndim = struct.unpack_from("<QQiii", raw, 0)
    assert (magic, reserved, dev_type, dev_id, ndim) == (NDARRAY_MAGIC, 0, 1, 0, 2)
    assert struct.unpack_from("<BBH", raw, 28) == (2, 32, 1)
    assert struct.unpack_from("<qqq", raw, 32) == (2, 3, 24)
    assert raw[56:] == array.tobytes()
    # byte for byte what TVM writes for this array
    assert encode_ndarray(array) == (
        "P6G0lvBAXt0AAAAAAAAAAAEAAAAAAAAAAgAAAAIgAQACAAAAAAAAAAMAAAAAAAAAGAAAAAAAAAAAAIA/"
        "AAAAQAAAQEAAAIBAAACgQAAAwEA="
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_every_dtype(dtype):
    values = np.arange(-3, 9).reshape(3, 4) % 2 if dtype == "bool" else np.arange(-3, 9)
    array = np.asarray(values, dtype=dtype).reshape(3, 4)
    assert same(decode_ndarray(encode_ndarray(array)), array)


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_rank_zero(dtype):
    array = np.asarray(1, dtype=dtype)
    back = decode_ndarray(encode_ndarray(array))
    assert back.shape == () and same(back, array)


def test_bool_is_uint1_one_byte_per_element():
    raw = base64.b64decode(encode_ndarray(np.array([True, False, True])))
    assert struct.unpack_from("<BBH", raw, 28) == (1, 1, 1)
    assert raw[-3:] == b"\x01\x00\x01"


def test_empty_and_non_contiguous_arrays():
    empty = np.zeros((0, 3), dtype=np.int16)
    assert same(decode_ndarray(encode_ndarray(empty)), empty)
    strided = np.arange(20, dtype=np.int32).reshape(4, 5)[:, ::2]
    assert same(decode_ndarray(encode_ndarray(strided)), np.ascontiguousarray(strided))


def test_big_endian_input_is_stored_little_endian():
    array = np.arange(4, dtype=">i4")
    back = decode_ndarray(encode_ndarray(array))
    assert back.dtype == np.int32 and list(back) == [0, 1, 2, 3]


def test_nan_payload_is_kept():
    array = np.array([0x7FC00001, 0xFFC00000], dtype=np.uint32).view(np.float32)
    assert same(decode_ndarray(encode_ndarray(array)), array)


def test_decode_hand_made_blob():
    payload = struct.pack("<3h", -1, 0, 7)
    array = decode_ndarray(blob(0, 16, (3,), payload))
    assert array.dtype == np.int16 and list(array) == [-1, 0, 7]
    flags = decode_ndarray(blob(1, 1, (2, 2), b"\x01\x00\x00\x01"))
    assert flags.dtype == np.bool_ and flags.tolist() == [[True, False], [False, True]]


@given(
    hnp.arrays(
        dtype=st.sampled_from([np.dtype(d) for d in DTYPES]),
        shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
    )
)
def test_round_trip_property(array):
    assert same(decode_ndarray(encode_ndarray(array)), array)


@pytest.mark.parametrize(
    "text, message",
    [
        ("not base64!", "base64"),
        (base64.b64encode(b"short").decode(), "truncated"),
        (blob(2, 32, (1,), b"\0\0\0\0", magic=1), "magic"),
        (blob(2, 32, (2,), b"\0\0\0\0"), "needs 8"),
        (blob(2, 32, (1,), b"\0\0\0\0", nbytes=8), "needs 4"),
        (blob(2, 32, (1,), b"\0\0\0\0\0"), "needs 4"),
        (blob(2, 32, (1,), b"\0\0\0\0", lanes=4), "vector"),
        (blob(2, 8, (1,), b"\0"), "unsupported"),
        (blob(4, 16, (1,), b"\0\0"), "unsupported"),
        (blob(9, 32, (1,), b"\0\0\0\0"), "unsupported"),
        (blob(2, 32, (-1,), b""), "negative"),
        (base64.b64encode(struct.pack("<QQiii", NDARRAY_MAGIC, 0, 1, 0, 5)).decode(), "trunc"),
        (
            base64.b64encode(
                struct.pack("<QQiiiBBH", NDARRAY_MAGIC, 0, 1, 0, -2, 2, 32, 1)
            ).decode(),
            "negative rank",
        ),
    ],
)
def test_malformed_blobs(text, message):
    with pytest.raises(ValueError, match=message):
        decode_ndarray(text)


def test_trailing_bytes_are_rejected():
    text = blob(0, 32, (1,), b"\1\0\0\0", nbytes=4)
    raw = base64.b64decode(text) + b"junk"
    with pytest.raises(ValueError, match="data bytes"):
        decode_ndarray(base64.b64encode(raw).decode())


def test_unencodable_arrays():
    with pytest.raises(ValueError, match="complex"):
        encode_ndarray(np.zeros(2, dtype=np.complex64))
    with pytest.raises(ValueError):
        encode_ndarray(np.array(["a"]))


# ------------------------------------------------------------------------ SaveJSON graph

# Written the way TVM 0.8's astext() writes it (", \n" separators, string indices).
TVM_TEXT = """{
  "root": 1, \n  "nodes": [
    {
      "type_key": ""
    }, \n    {
      "type_key": "Map", \n      "keys": [
        "relay.Constant", \n        "tir.SizeVar", \n        "VirtualDevice"
      ], \n      "data": [2, 5, 10]
    }, \n    {
      "type_key": "Array", \n      "data": [3, 4]
    }, \n    {
      "type_key": "relay.Constant", \n      "attrs": {
        "_checked_type_": "0", \n        "data": "0", \n        "span": "0"
      }
    }, \n    {
      "type_key": "relay.Constant", \n      "attrs": {
        "_checked_type_": "0", \n        "data": "1", \n        "span": "0"
      }
    }, \n    {
      "type_key": "Array", \n      "data": [6, 6, 9]
    }, \n    {
      "type_key": "tir.SizeVar", \n      "attrs": {
        "dtype": "int32", \n        "name": "7", \n        "span": "0", \n        "type_annotation": "8"
      }
    }, \n    {
      "type_key": "runtime.String", \n      "repr_str": "n"
    }, \n    {
      "type_key": "PrimType", \n      "attrs": {"dtype": "int32"}
    }, \n    {
      "type_key": "tir.Var", \n      "attrs": {"dtype": "int64", "name": "m", "span": "0"}
    }, \n    {
      "type_key": "Array", \n      "data": [11]
    }, \n    {
      "type_key": "VirtualDevice", \n      "attrs": {"device_type_int": "1"}
    }
  ], \n  "b64ndarrays": [
    "P6G0lvBAXt0AAAAAAAAAAAEAAAAAAAAAAgAAAAIgAQACAAAAAAAAAAMAAAAAAAAAGAAAAAAAAAAAAIA/AAAAQAAAQEAAAIBAAACgQAAAwEA=", \n    "@BLOB@"
  ], \n  "attrs": {"tvm_version": "0.8.0"}
}""".replace("@BLOB@", blob(0, 8, (), b"\xfe"))


def test_read_tvm_printed_metadata():
    table = read_metadata(TVM_TEXT)
    assert list(table) == ["relay.Constant", "tir.SizeVar", "VirtualDevice"]
    weights, scalar = table["relay.Constant"]
    assert same(weights, np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32))
    assert same(scalar, np.array(-2, dtype=np.int8))
    n, n_again, m = table["tir.SizeVar"]
    assert isinstance(n, ShapeVar) and n.name_hint == "n" and n.dtype == "int32"
    assert n is n_again  # one node, one variable
    assert m.name_hint == "m" and m.dtype == "int64"  # older inline-name form
    (device,) = table["VirtualDevice"]
    assert isinstance(device, MetaObject) and device.type_key == "VirtualDevice"
    assert device.nodes[0].plain == (("device_type_int", '"1"'),)


def test_read_newer_map_with_key_nodes_and_b64_string():
    doc = {
        "root": 1,
        "nodes": [
            {"type_key": ""},
            {"type_key": "Map", "data": [2, 3]},
            {"type_key": "runtime.String", "repr_b64": base64.b64encode(b"tir.Var").decode()},
            {"type_key": "Array", "data": [4]},
            {"type_key": "tir.Var", "attrs": {"dtype": "int64", "name": "5"}},
            {"type_key": "runtime.String", "repr_str": "batch"},
        ],
        "b64ndarrays": [],
        "attrs": {"tvm_version": "0.15.0"},
    }
    table = read_metadata(json.dumps(doc))
    (var,) = table["tir.Var"]
    assert var.name_hint == "batch" and var.dtype == "int64"


def test_write_then_read_every_dtype():
    arrays = [np.arange(6).reshape(2, 3).astype(d) for d in DTYPES]
    arrays += [np.asarray(7, dtype=d) for d in DTYPES]
    n = ShapeVar("n")
    table = {"relay.Constant": arrays, "tir.SizeVar": [n, ShapeVar("m", "int64"), n]}
    back = read_metadata(write_metadata(table))
    assert list(back) == ["relay.Constant", "tir.SizeVar"]
    assert all(same(a, b) for a, b in zip(arrays, back["relay.Constant"], strict=True))
    n1, m1, n2 = back["tir.SizeVar"]
    assert n1 is n2 and n1.name_hint == "n" and (m1.name_hint, m1.dtype) == ("m", "int64")


def test_write_uses_tvm_layout():
    doc = json.loads(write_metadata({"relay.Constant": [np.zeros(2, np.float32)]}))
    assert doc["root"] == 1 and doc["nodes"][0] == {"type_key": ""}
    root = doc["nodes"][1]
    assert root["type_key"] == "Map" and root["keys"] == ["relay.Constant"]
    array = doc["nodes"][root["data"][0]]
    assert array["type_key"] == "Array"
    constant = doc["nodes"][array["data"][0]]
    assert constant["type_key"] == "relay.Constant" and constant["attrs"]["data"] == "0"
    assert "tvm_version" in doc["attrs"] and len(doc["b64ndarrays"]) == 1


def test_write_rejects_other_objects():
    with pytest.raises(ValueError, match="cannot write a dict"):
        write_metadata({"VirtualDevice": [{"device_type_int": 1}]})


def test_empty_table_round_trips():
    assert read_metadata(write_metadata({})) == {}


def _doc(nodes, root=1, arrays=()):
    return json.dumps({"root": root, "nodes": nodes, "b64ndarrays": list(arrays)})


NULL = {"type_key": ""}


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"root": 1}', "JSON object"),
        (_doc([NULL], root=3), "refers to node 3"),
        (_doc([NULL, {"type_key": "Array", "data": []}]), "must be a Map"),
        (_doc([NULL, {"type_key": "Map", "keys": ["a", "b"], "data": [0]}]), "2 keys but 1"),
        (_doc([NULL, {"type_key": "Map", "keys": [1], "data": [0]}]), "list of strings"),
        (_doc([NULL, {"type_key": "Map", "keys": ["k"], "data": [0]}]), "must be an Array"),
        (
            _doc(
                [
                    NULL,
                    {"type_key": "Map", "keys": ["k"], "data": [2]},
                    {"type_key": "Array", "data": [9]},
                ]
            ),
            "refers to node 9",
        ),
        (_doc([NULL, {"type_key": "Map", "keys": ["k"], "data": ["x"]}]), "node indices"),
        (
            _doc(
                [
                    NULL,
                    {"type_key": "Map", "keys": ["k"], "data": [2]},
                    {"type_key": "Array", "data": [3]},
                    {"type_key": "relay.Constant", "attrs": {}},
                ]
            ),
            "no `data`",
        ),
        (
            _doc(
                [
                    NULL,
                    {"type_key": "Map", "keys": ["k"], "data": [2]},
                    {"type_key": "Array", "data": [3]},
                    {"type_key": "relay.Constant", "attrs": {"data": "4"}},
                ]
            ),
            "ndarray 4",
        ),
        (
            _doc(
                [
                    NULL,
                    {"type_key": "Map", "keys": ["k"], "data": [2]},
                    {"type_key": "Array", "data": [3]},
                    {"type_key": "relay.Constant", "attrs": {"data": "0"}},
                ],
                arrays=["@@"],
            ),
            "b64ndarrays\\[0\\]",
        ),
        (
            _doc(
                [
                    NULL,
                    {"type_key": "Map", "keys": ["k"], "data": [2]},
                    {"type_key": "Array", "data": [3]},
                    {"type_key": "tir.SizeVar", "attrs": {"dtype": "int32"}},
                ]
            ),
            "no name",
        ),
        (_doc([NULL, {"type_key": "Map", "data": [2]}]), "key/value pairs"),
        (_doc([NULL, {"type_key": "Map", "data": [0, 0]}]), "runtime.String"),
        (_doc("nodes"), "list of objects"),
        ("[" * 100_000 + "]" * 100_000, "not valid JSON"),
    ],
)
def test_malformed_metadata(text, message):
    with pytest.raises(ValueError, match=message):
        read_metadata(text)


def test_non_text_input():
    with pytest.raises(ValueError, match="text"):
        read_metadata(None)  # type: ignore[arg-type]


# ------------------------------------------------------------- opaque objects (MetaObject)

# A VirtualDevice and its Target as TVM (0.9 and later) writes them; the Target is shared.
DEVICES = {
    "root": 1,
    "nodes": [
        {"type_key": ""},
        {"type_key": "Map", "keys": ["VirtualDevice"], "data": [2]},
        {"type_key": "Array", "data": [3, 12, 3]},
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
                "device_type_int": "2",
                "memory_scope": "13",
                "target": "4",
                "virtual_device_id": "3",
            },
        },
        {"type_key": "runtime.String", "repr_str": "global"},
    ],
    "b64ndarrays": [],
    "attrs": {"tvm_version": "0.9.0"},
}


def _reachable(doc, index):
    """The node of `index` with its references replaced by the nodes they name, as a
    nested tree (the subgraph a reader sees, independent of the numbering)."""
    nodes = doc["nodes"]
    node = dict(nodes[index])
    attrs = dict(node.get("attrs", {}))
    for key, value in attrs.items():
        if key in ("device_type_int", "virtual_device_id") or not value.isdigit():
            continue
        attrs[key] = None if value == "0" else _reachable(doc, int(value))
    if attrs:
        node["attrs"] = attrs
    if "data" in node:
        node["data"] = [_reachable(doc, i) for i in node["data"]]
    return node


def test_opaque_objects_keep_their_subgraph():
    table = read_metadata(json.dumps(DEVICES))
    first, second, first_again = table["VirtualDevice"]
    assert first is first_again  # one node, one object
    assert first != second and first == read_metadata(json.dumps(DEVICES))["VirtualDevice"][0]
    assert [n.type_key for n in first.nodes][:2] == ["VirtualDevice", "runtime.String"]
    assert "Target" in [n.type_key for n in first.nodes]
    assert repr(first) == "<VirtualDevice from the metadata>"


def test_opaque_objects_write_back_the_same_graph():
    table = read_metadata(json.dumps(DEVICES))
    text = write_metadata({"VirtualDevice": [table["VirtualDevice"][1], table["VirtualDevice"][0]]})
    doc = json.loads(text)
    root = doc["nodes"][doc["root"]]
    second, first = doc["nodes"][root["data"][0]]["data"]
    # Numbers stay numbers, references are renumbered to the same nodes.
    assert _reachable(doc, first) == _reachable(DEVICES, 3)
    assert _reachable(doc, second) == _reachable(DEVICES, 12)
    assert doc["nodes"][second]["attrs"]["device_type_int"] == "2"
    assert doc["nodes"][second]["attrs"]["virtual_device_id"] == "3"
    back = read_metadata(text)["VirtualDevice"]
    assert back == [table["VirtualDevice"][1], table["VirtualDevice"][0]]


def test_opaque_object_written_twice_is_one_node():
    (device, *_) = read_metadata(json.dumps(DEVICES))["VirtualDevice"]
    doc = json.loads(write_metadata({"VirtualDevice": [device, device]}))
    root = doc["nodes"][doc["root"]]
    first, again = doc["nodes"][root["data"][0]]["data"]
    assert first == again


def test_opaque_object_keeps_the_constants_it_refers_to():
    payload = encode_ndarray(np.arange(3, dtype=np.int32))
    doc = {
        "root": 1,
        "nodes": [
            NULL,
            {"type_key": "Map", "keys": ["relay.Constant", "Holder"], "data": [2, 4]},
            {"type_key": "Array", "data": [3]},
            {"type_key": "relay.Constant", "attrs": {"data": "0", "span": "0"}},
            {"type_key": "Array", "data": [5]},
            {"type_key": "Holder", "attrs": {"value": "7", "weight": "6"}},
            {"type_key": "relay.Constant", "attrs": {"data": "1", "span": "0"}},
        ],
        "b64ndarrays": [encode_ndarray(np.zeros(2, np.float32)), payload],
    }
    (holder,) = read_metadata(json.dumps(doc))["Holder"]
    assert holder.arrays == (payload,)
    text = write_metadata({"relay.Constant": [np.ones(4, np.int8)], "Holder": [holder]})
    out = json.loads(text)
    assert out["b64ndarrays"][1] == payload
    assert read_metadata(text)["Holder"] == [holder]
    holder_node = out["nodes"][out["nodes"][out["nodes"][1]["data"][1]]["data"][0]]
    assert holder_node["attrs"]["value"] == "7"  # a number, not node 7


def test_empty_runtime_string_is_the_empty_name():
    doc = _doc(
        [
            NULL,
            {"type_key": "Map", "keys": ["tir.SizeVar"], "data": [2]},
            {"type_key": "Array", "data": [3]},
            {"type_key": "tir.SizeVar", "attrs": {"dtype": "int32", "name": "4"}},
            {"type_key": "runtime.String"},
        ]
    )
    (var,) = read_metadata(doc)["tir.SizeVar"]
    assert var.name_hint == ""


@pytest.mark.parametrize(
    "node, message",
    [
        ({"type_key": "Thing", "data": [7]}, "refers to node 7"),
        ({"type_key": "Thing", "attrs": []}, "malformed attrs"),
        ({"type_key": "Thing", "repr_str": 3}, "not a string"),
        ({"type_key": "Thing", "keys": [1]}, "list of strings"),
    ],
)
def test_malformed_opaque_objects(node, message):
    doc = _doc(
        [
            NULL,
            {"type_key": "Map", "keys": ["k"], "data": [2]},
            {"type_key": "Array", "data": [3]},
            node,
        ]
    )
    with pytest.raises(ValueError, match=message):
        read_metadata(doc)
