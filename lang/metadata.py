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
constants, `ShapeVar`s for size variables and opaque `MetaObject`s for anything else (a
`VirtualDevice`, a `Target`: the object's subgraph of nodes, kept so that it can be written
back); `write_metadata` is its inverse.

Node references and numbers look alike in the JSON (both are digit strings), so a
`MetaObject` reads a digit string as a reference except in fields TVM writes as numbers
(`device_type_int`, `value`, `line`, ...).
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


# Fields that TVM serializes as numbers (digit strings, like node indices): never references.
_PLAIN_FIELDS = frozenset(
    {
        *("device_type_int", "virtual_device_id", "device_type", "value", "dtype", "ndim"),
        *("line", "column", "end_line", "end_column", "lanes", "bits", "code"),
    }
)


@frozen
class MetaNode:
    """One node of an opaque object's subgraph, with its references made explicit.

    In `refs` and `data`, 0 is TVM's null object and k > 0 names the k-th node of the
    `MetaObject`'s `nodes` (1 is the object itself); `arrays` index its `arrays`.
    """

    type_key: str
    reprs: tuple[tuple[str, str], ...] = ()  # ("repr_str" | "repr_b64", text)
    plain: tuple[tuple[str, str], ...] = ()  # attrs fields that are values, JSON-encoded
    refs: tuple[tuple[str, int], ...] = ()  # attrs fields that name a node
    arrays: tuple[tuple[str, int], ...] = ()  # attrs fields that name an ndarray blob
    keys: tuple[str, ...] | None = None
    data: tuple[int, ...] | None = None


@frozen(repr=False)
class MetaObject:
    """An object of the metadata section that this project does not model, such as a
    `VirtualDevice` or a `Target`: an opaque attribute value.

    It keeps the object's subgraph of the JSON node graph (`nodes[0]` is the object), so
    that the printer writes it back unchanged (under a possibly different index). Two are
    equal when their subgraphs are.
    """

    type_key: str
    nodes: tuple[MetaNode, ...]
    arrays: tuple[str, ...] = ()  # base64 NDArray blobs the subgraph refers to

    def __repr__(self) -> str:
        return f"<{self.type_key} from the metadata>"


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
        blob = _strict_b64decode(text)
    except (binascii.Error, ValueError) as exc:
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
    if len(blob) - offset != nbytes:
        raise ValueError(f"NDArray blob holds {len(blob) - offset} data bytes, expected {nbytes}")
    if dtype == np.bool_:
        return np.frombuffer(blob, dtype=np.uint8, offset=offset).reshape(shape) != 0
    data = np.frombuffer(blob, dtype=dtype, offset=offset, count=count).reshape(shape)
    return data.astype(dtype.newbyteorder("="))  # a writable copy in native byte order


def _strict_b64decode(text: str) -> bytes:
    """The bytes of base64 `text`; binascii.Error (or ValueError) unless it is well-formed."""
    try:
        return binascii.a2b_base64(text, strict_mode=True)  # type: ignore[call-arg]  # 3.11+
    except TypeError:
        return base64.b64decode(text.encode("ascii"), validate=True)


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
                return ""  # TVM writes an empty string without a repr
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
        try:
            return decode_ndarray(self.arrays[index])  # type: ignore[arg-type]
        except ValueError as exc:
            raise ValueError(f"metadata: b64ndarrays[{index}]: {exc}") from None

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
            result = self.opaque(index)
        self.objects[index] = result
        return result

    def opaque(self, index: int) -> MetaObject:
        """The subgraph reachable from node `index`, numbered in breadth-first order."""
        order = [index]
        number = {index: 1}  # original node index -> reference in the subgraph
        array_order: list[int] = []
        array_number: dict[int, int] = {}

        def ref(target: int) -> int:
            if target == 0:
                return 0
            if target not in number:
                number[target] = len(order) + 1
                order.append(target)
            return number[target]

        nodes: list[MetaNode] = []
        for original in order:  # grows while it is walked
            node = self.nodes[original]
            what = f"node {original} (in the {self.nodes[index].get('type_key')} of node {index})"
            type_key = node.get("type_key")
            attrs = node.get("attrs", {})
            reprs = tuple((k, node[k]) for k in ("repr_str", "repr_b64") if k in node)
            if not isinstance(type_key, str) or not isinstance(attrs, dict):
                raise ValueError(f"metadata: {what} has no type_key or malformed attrs")
            if not all(isinstance(text, str) for _, text in reprs):
                raise ValueError(f"metadata: {what} has a repr that is not a string")
            plain: list[tuple[str, str]] = []
            refs: list[tuple[str, int]] = []
            arrays: list[tuple[str, int]] = []
            for key, value in sorted(attrs.items()):
                # SaveJSON writes references as digit strings; JSON numbers are values.
                target = _index_below(value, len(self.nodes)) if isinstance(value, str) else None
                if type_key == "relay.Constant" and key == "data":
                    blob = _index_below(value, len(self.arrays))
                    if blob is not None:
                        if blob not in array_number:
                            array_number[blob] = len(array_order)
                            array_order.append(blob)
                        arrays.append((key, array_number[blob]))
                        continue
                if target is not None and key not in _PLAIN_FIELDS:
                    refs.append((key, ref(target)))
                else:
                    plain.append((key, json.dumps(value)))
            data = None
            if "data" in node:
                items = _index_list(node, what)
                for item in items:
                    self.node(item, f"an element of {what}")  # checks the range
                data = tuple(ref(item) for item in items)
            keys = node.get("keys")
            if keys is not None and not (
                isinstance(keys, list) and all(isinstance(k, str) for k in keys)
            ):
                raise ValueError(f"metadata: the keys of {what} must be a list of strings")
            nodes.append(
                MetaNode(
                    type_key,
                    reprs,
                    tuple(plain),
                    tuple(refs),
                    tuple(arrays),
                    None if keys is None else tuple(keys),
                    data,
                )
            )
        blobs = tuple(str(self.arrays[i]) for i in array_order)
        return MetaObject(nodes[0].type_key, tuple(nodes), blobs)


def _index_below(value: object, size: int) -> int | None:
    """`value` as an index below `size` (an int or a digit string), else None."""
    if isinstance(value, str) and value.isdigit() and len(value) < 19:
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < size:
        return value
    return None


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
    object wherever one node is listed twice), anything else a `MetaObject`. Malformed
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
    """The JSON for a table of constants (`np.ndarray`), shape variables (`ShapeVar`) and
    opaque objects (`MetaObject`).

    The layout is TVM's SaveJSON one (string-keyed root Map, one Array per key), so TVM
    and `read_metadata` both read it back.
    """
    nodes: list[dict[str, Any]] = [{"type_key": ""}, {}]
    arrays: list[str] = []  # as JSON strings (quoted)
    shape_vars: dict[int, int] = {}
    opaque: dict[MetaObject, int] = {}

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
                arrays.append(f'"{encode_ndarray(obj)}"')  # base64 needs no escapes
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
            elif isinstance(obj, MetaObject):
                if obj not in opaque:
                    opaque[obj] = _add_opaque(obj, nodes, arrays)
                indices.append(opaque[obj])
            else:
                raise ValueError(
                    f"metadata: cannot write a {type(obj).__name__} (key {key!r}); only "
                    "numpy arrays, ShapeVars and MetaObjects are supported"
                )
        nodes[array_index] = {"type_key": "Array", "data": indices}
        keys.append(key)
        values.append(array_index)
    nodes[1] = {"type_key": "Map", "keys": keys, "data": values}
    return _layout(nodes, arrays)


def _add_opaque(obj: MetaObject, nodes: list[dict[str, Any]], arrays: list[str]) -> int:
    """Append the nodes (and blobs) of `obj` to the output; the index of its first node."""
    base = len(nodes) - 1  # subgraph reference k > 0 becomes node base + k
    blob_base = len(arrays)
    arrays.extend(json.dumps(blob) for blob in obj.arrays)
    for meta in obj.nodes:
        node: dict[str, Any] = {"type_key": meta.type_key, **dict(meta.reprs)}
        attrs: dict[str, Any] = {key: json.loads(text) for key, text in meta.plain}
        attrs.update((key, str(base + k if k else 0)) for key, k in meta.refs)
        attrs.update((key, str(blob_base + k)) for key, k in meta.arrays)
        if attrs:
            node["attrs"] = dict(sorted(attrs.items()))
        if meta.keys is not None:
            node["keys"] = list(meta.keys)
        if meta.data is not None:
            node["data"] = [base + k if k else 0 for k in meta.data]
        nodes.append(node)
    return base + 1


def _layout(nodes: list[dict[str, Any]], array_lines: list[str]) -> str:
    """Pretty JSON with one node (or one ndarray, given as JSON) per line."""

    def listing(items: list[str]) -> list[str]:
        return ["[\n    ", ",\n    ".join(items), "\n  ]"] if items else ["[]"]

    node_lines = [json.dumps(n, separators=(", ", ": ")) for n in nodes]
    version = json.dumps({"tvm_version": TVM_VERSION})
    parts = ['{\n  "root": 1,\n  "nodes": ', *listing(node_lines), ',\n  "b64ndarrays": ']
    parts += [*listing(array_lines), f',\n  "attrs": {version}\n}}']
    return "".join(parts)
