"""The `#[metadata]` section: TVM's JSON object graph of constants and shape variables.

The text after `#[metadata]` is TVM's `SaveJSON` serialization of a
`Map<String, Array<Object>>` keyed by type key:

    {"root": 1,
     "nodes": [{"type_key": ""},
               {"type_key": "Map", "keys": ["relay.Constant"], "data": [2]},
               {"type_key": "Array", "data": [3]},
               {"type_key": "relay.Constant", "attrs": {"data": "0", "span": "0", ...}}],
     "b64ndarrays": ["P6G0lvBAXt0..."],
     "attrs": {"tvm_version": "0.8.0"}}

Node 0 is the null object. An object field is a node index written as a string; a
`relay.Constant`'s `data` is an index into `b64ndarrays`, each entry the base64 of TVM's
NDArray binary format (see `encode_ndarray`). A `tir.SizeVar` / `tir.Var` has a `dtype`
and a `name`, either inline (old TVM) or the index of a `runtime.String` node.

`read_metadata` turns the JSON into `{type_key: [objects]}` with numpy arrays for
constants, `ShapeVar`s for size variables and `UnsupportedMeta` placeholders for anything
else; `write_metadata` is its inverse for constants and shape variables.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from typing import Any

import numpy as np
from attrs import frozen

from .types import ShapeVar

NDARRAY_MAGIC = 0xDD5E40F096B4A13F
TVM_VERSION = "0.8.0"

_HEADER = struct.Struct("<QQiii")  # magic, reserved, device type, device id, ndim
_DTYPE = struct.Struct("<BBH")  # code, bits, lanes
_CODE_INT, _CODE_UINT, _CODE_FLOAT, _CODE_BFLOAT = 0, 1, 2, 4
_CODE_NAMES = {_CODE_INT: "int", _CODE_UINT: "uint", _CODE_FLOAT: "float", _CODE_BFLOAT: "bfloat"}
_SIZE_VAR_KEYS = ("tir.SizeVar", "tir.Var", "SizeVar", "Variable")
_MAP_KEYS = ("Map", "StrMap")


@frozen
class UnsupportedMeta:
    """A metadata object of a kind this project does not model (e.g. `VirtualDevice`)."""

    type_key: str


# ------------------------------------------------------------------------- NDArray blobs


def _dl_dtype(dtype: np.dtype) -> tuple[int, int]:
    """(DLPack type code, bits) of a numpy dtype; ValueError if relay has no such dtype."""
    if dtype == np.bool_:
        return _CODE_UINT, 1
    kinds = {"i": _CODE_INT, "u": _CODE_UINT, "f": _CODE_FLOAT}
    if dtype.kind not in kinds or dtype.itemsize not in (1, 2, 4, 8):
        raise ValueError(f"cannot store an array of dtype {dtype} in the metadata section")
    if dtype.kind == "f" and dtype.itemsize == 1:
        raise ValueError(f"cannot store an array of dtype {dtype} in the metadata section")
    return kinds[dtype.kind], dtype.itemsize * 8


def _np_dtype(code: int, bits: int, lanes: int) -> np.dtype:
    """The numpy dtype of a DLPack dtype; ValueError if unsupported."""
    name = f"{_CODE_NAMES.get(code, f'code {code}')}{bits}" + (f"x{lanes}" if lanes != 1 else "")
    if lanes != 1:
        raise ValueError(f"vector dtype {name} is not supported in constants")
    if code == _CODE_UINT and bits == 1:
        return np.dtype(np.bool_)
    valid = {
        _CODE_INT: (8, 16, 32, 64),
        _CODE_UINT: (8, 16, 32, 64),
        _CODE_FLOAT: (16, 32, 64),
    }
    if code not in valid or bits not in valid[code]:
        raise ValueError(f"unsupported constant dtype {name}")
    return np.dtype(f"<{'iuf'[code]}{bits // 8}")


def encode_ndarray(array: np.ndarray) -> str:
    """Base64 of TVM's NDArray binary format (little-endian, CPU device)."""
    array = np.asarray(array)
    code, bits = _dl_dtype(array.dtype)
    if array.dtype == np.bool_:
        payload = np.ascontiguousarray(array).astype(np.uint8).tobytes()
    else:
        payload = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
    parts = [
        _HEADER.pack(NDARRAY_MAGIC, 0, 1, 0, array.ndim),
        _DTYPE.pack(code, bits, 1),
        struct.pack(f"<{array.ndim}q", *array.shape),
        struct.pack("<q", len(payload)),
        payload,
    ]
    return base64.b64encode(b"".join(parts)).decode("ascii")


def decode_ndarray(text: str) -> np.ndarray:
    """The array of a base64 NDArray blob; ValueError describing what is malformed."""
    if not isinstance(text, str):
        raise ValueError(f"an NDArray blob must be a base64 string, not {type(text).__name__}")
    try:
        blob = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise ValueError(f"NDArray blob is not valid base64: {exc}") from None
    fixed = _HEADER.size + _DTYPE.size
    if len(blob) < fixed:
        raise ValueError(f"NDArray blob is truncated: {len(blob)} bytes, header needs {fixed}")
    magic, _reserved, _device_type, _device_id, ndim = _HEADER.unpack_from(blob, 0)
    if magic != NDARRAY_MAGIC:
        raise ValueError(f"NDArray blob has bad magic number {magic:#018x}")
    if ndim < 0:
        raise ValueError(f"NDArray blob has negative rank {ndim}")
    code, bits, lanes = _DTYPE.unpack_from(blob, _HEADER.size)
    dtype = _np_dtype(code, bits, lanes)
    if len(blob) < fixed + 8 * ndim + 8:
        raise ValueError(f"NDArray blob is truncated: shape of rank {ndim} does not fit")
    shape = struct.unpack_from(f"<{ndim}q", blob, fixed)
    if any(d < 0 for d in shape):
        raise ValueError(f"NDArray blob has a negative dimension in shape {shape}")
    offset = fixed + 8 * ndim
    (nbytes,) = struct.unpack_from("<q", blob, offset)
    offset += 8
    count = 1
    for d in shape:
        count *= d
    expected = count * dtype.itemsize
    if nbytes != expected:
        raise ValueError(
            f"NDArray blob declares {nbytes} data bytes but shape {shape} of "
            f"{dtype} needs {expected}"
        )
    data = blob[offset:]
    if len(data) != nbytes:
        raise ValueError(f"NDArray blob holds {len(data)} data bytes, expected {nbytes}")
    if dtype == np.bool_:
        array = np.frombuffer(data, dtype=np.uint8).reshape(shape) != 0
    else:
        array = np.frombuffer(data, dtype=dtype).reshape(shape)
        array = array.astype(dtype.newbyteorder("="))
    return np.array(array, copy=True)


# ------------------------------------------------------------------------------ reading


class _Graph:
    """The node list of a SaveJSON document, with checked access."""

    def __init__(self, doc: dict[str, Any]) -> None:
        nodes = doc.get("nodes")
        if not isinstance(nodes, list) or not all(isinstance(n, dict) for n in nodes):
            raise ValueError("metadata: `nodes` must be a list of objects")
        arrays = doc.get("b64ndarrays", [])
        if not isinstance(arrays, list):
            raise ValueError("metadata: `b64ndarrays` must be a list")
        self.nodes: list[dict[str, Any]] = nodes
        self.arrays: list[object] = arrays
        self.decoded: dict[int, np.ndarray] = {}
        self.objects: dict[int, object] = {}

    def node(self, index: object, what: str) -> dict[str, Any]:
        if isinstance(index, str) and index.isdigit():
            index = int(index)
        if isinstance(index, bool) or not isinstance(index, int):
            raise ValueError(f"metadata: {what} must be a node index, got {index!r}")
        if not 0 <= index < len(self.nodes):
            raise ValueError(
                f"metadata: {what} refers to node {index}, but there are {len(self.nodes)} nodes"
            )
        return self.nodes[index]

    def string(self, value: object, what: str) -> str:
        """A string field: a `runtime.String` node index, or the string inline."""
        if isinstance(value, str) and value.isdigit() and int(value) < len(self.nodes):
            node = self.nodes[int(value)]
            if node.get("type_key") == "runtime.String":
                if "repr_str" in node and isinstance(node["repr_str"], str):
                    return node["repr_str"]
                if "repr_b64" in node and isinstance(node["repr_b64"], str):
                    try:
                        return base64.b64decode(node["repr_b64"], validate=True).decode("utf-8")
                    except (binascii.Error, UnicodeDecodeError) as exc:
                        raise ValueError(f"metadata: {what} has a bad repr_b64: {exc}") from None
                raise ValueError(f"metadata: {what} is a runtime.String node without a value")
        if not isinstance(value, str):
            raise ValueError(f"metadata: {what} must be a string, got {value!r}")
        return value

    def array(self, index: object, what: str) -> np.ndarray:
        if isinstance(index, str) and index.isdigit():
            index = int(index)
        if isinstance(index, bool) or not isinstance(index, int):
            raise ValueError(f"metadata: {what} must be an index into b64ndarrays, got {index!r}")
        if not 0 <= index < len(self.arrays):
            raise ValueError(
                f"metadata: {what} refers to ndarray {index}, but b64ndarrays has "
                f"{len(self.arrays)} entries"
            )
        if index not in self.decoded:
            try:
                self.decoded[index] = decode_ndarray(self.arrays[index])  # type: ignore[arg-type]
            except ValueError as exc:
                raise ValueError(f"metadata: b64ndarrays[{index}]: {exc}") from None
        return self.decoded[index].copy()

    def object(self, index: int, what: str) -> object:
        """The Python value of node `index` (the same object for the same node)."""
        if index in self.objects:
            return self.objects[index]
        node = self.node(index, what)
        type_key = node.get("type_key")
        if not isinstance(type_key, str):
            raise ValueError(f"metadata: {what} (node {index}) has no type_key")
        attrs = node.get("attrs", {})
        if not isinstance(attrs, dict):
            raise ValueError(f"metadata: {what} (node {index}) has malformed attrs")
        result: object
        if type_key == "relay.Constant":
            if "data" not in attrs:
                raise ValueError(f"metadata: constant {what} (node {index}) has no `data`")
            result = self.array(attrs["data"], f"the data of {what}")
        elif type_key in _SIZE_VAR_KEYS:
            if "name" not in attrs:
                raise ValueError(f"metadata: shape variable {what} (node {index}) has no name")
            name = self.string(attrs["name"], f"the name of {what}")
            dtype = attrs.get("dtype", "int32")
            if not isinstance(dtype, str) or not dtype:
                raise ValueError(f"metadata: {what} has a bad dtype {dtype!r}")
            result = ShapeVar(name, dtype)
        else:
            result = UnsupportedMeta(type_key)
        self.objects[index] = result
        return result


def _index_list(node: dict[str, Any], what: str) -> list[int]:
    data = node.get("data", [])
    if not isinstance(data, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in data
    ):
        raise ValueError(f"metadata: {what} must have a list of node indices as `data`")
    return data


def read_metadata(text: str) -> dict[str, list[object]]:
    """Decode the JSON after `#[metadata]` into `{type_key: [objects]}`.

    Constants become numpy arrays, `tir.SizeVar` / `tir.Var` become `ShapeVar`s (the same
    object wherever one node is listed twice), anything else `UnsupportedMeta`. Malformed
    input raises ValueError saying what is wrong.
    """
    if not isinstance(text, str):
        raise ValueError(f"metadata must be text, not {type(text).__name__}")
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"metadata is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ValueError("metadata must be a JSON object with `root` and `nodes`")
    if "root" not in doc or "nodes" not in doc:
        raise ValueError("metadata must be a JSON object with `root` and `nodes`")
    graph = _Graph(doc)
    root = graph.node(doc["root"], "`root`")
    if root.get("type_key") not in _MAP_KEYS:
        raise ValueError(f"metadata: the root must be a Map, not {root.get('type_key')!r}")
    values = _index_list(root, "the root Map")
    if "keys" in root:
        keys = root["keys"]
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise ValueError("metadata: the root Map's `keys` must be a list of strings")
        if len(keys) != len(values):
            raise ValueError(
                f"metadata: the root Map has {len(keys)} keys but {len(values)} values"
            )
        pairs = list(zip(keys, values))
    else:  # newer TVM: data = [key node, value node, key node, value node, ...]
        if len(values) % 2:
            raise ValueError("metadata: the root Map's `data` must hold key/value pairs")
        pairs = []
        for i in range(0, len(values), 2):
            key_node = graph.node(values[i], "a Map key")
            if key_node.get("type_key") != "runtime.String":
                raise ValueError("metadata: a key of the root Map must be a runtime.String")
            pairs.append((graph.string(str(values[i]), "a Map key"), values[i + 1]))
    table: dict[str, list[object]] = {}
    for key, index in pairs:
        array_node = graph.node(index, f"the value of key {key!r}")
        if array_node.get("type_key") != "Array":
            raise ValueError(f"metadata: the value of key {key!r} must be an Array")
        items = _index_list(array_node, f"the Array of key {key!r}")
        table[key] = [graph.object(i, f"{key}[{n}]") for n, i in enumerate(items)]
    return table


# ------------------------------------------------------------------------------ writing


def write_metadata(table: dict[str, list[object]]) -> str:
    """The JSON for a table of constants (`np.ndarray`) and shape variables (`ShapeVar`).

    The layout is TVM's SaveJSON one (string-keyed root Map, one Array per key), so TVM
    and `read_metadata` both read it back.
    """
    nodes: list[dict[str, Any]] = [{"type_key": ""}, {}]
    arrays: list[str] = []
    shape_vars: dict[int, int] = {}

    def add(node: dict[str, Any]) -> int:
        nodes.append(node)
        return len(nodes) - 1

    keys: list[str] = []
    values: list[int] = []
    for key, objects in table.items():
        array_index = add({})
        indices: list[int] = []
        for obj in objects:
            if isinstance(obj, np.ndarray):
                arrays.append(encode_ndarray(obj))
                attrs = {"_checked_type_": "0", "data": str(len(arrays) - 1), "span": "0"}
                indices.append(add({"type_key": "relay.Constant", "attrs": attrs}))
            elif isinstance(obj, ShapeVar):
                if id(obj) not in shape_vars:
                    var_index = add({})
                    name = add({"type_key": "runtime.String", "repr_str": obj.name_hint})
                    prim = add({"type_key": "PrimType", "attrs": {"dtype": obj.dtype}})
                    nodes[var_index] = {
                        "type_key": "tir.SizeVar",
                        "attrs": {
                            "dtype": obj.dtype,
                            "name": str(name),
                            "span": "0",
                            "type_annotation": str(prim),
                        },
                    }
                    shape_vars[id(obj)] = var_index
                indices.append(shape_vars[id(obj)])
            else:
                raise ValueError(
                    f"metadata: cannot write a {type(obj).__name__} (key {key!r}); only "
                    "numpy arrays and ShapeVars are supported"
                )
        nodes[array_index] = {"type_key": "Array", "data": indices}
        keys.append(key)
        values.append(array_index)
    nodes[1] = {"type_key": "Map", "keys": keys, "data": values}
    return _layout(nodes, arrays)


def _layout(nodes: list[dict[str, Any]], arrays: list[str]) -> str:
    """Pretty JSON with one node (or one ndarray) per line."""

    def listing(items: list[str]) -> str:
        return "[\n" + ",\n".join("    " + item for item in items) + "\n  ]" if items else "[]"

    node_lines = [json.dumps(n, separators=(", ", ": ")) for n in nodes]
    array_lines = [json.dumps(a) for a in arrays]
    version = json.dumps({"tvm_version": TVM_VERSION})
    return (
        "{\n"
        '  "root": 1,\n'
        f'  "nodes": {listing(node_lines)},\n'
        f'  "b64ndarrays": {listing(array_lines)},\n'
        f'  "attrs": {version}\n'
        "}"
    )
