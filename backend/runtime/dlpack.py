"""Arrays in and out of a model through DLPack, and output buffers given by the caller.

Inputs: an `np.ndarray` is used as is; any other object with `__dlpack__` (a PyTorch
tensor, a JAX or CuPy array, ...) is imported with `np.from_dlpack`, which shares its memory
(no copy) when it lives in CPU memory. A tensor on another device is an `InputError`
saying where it is; nothing is moved between devices behind the caller's back.

Outputs: results are numpy arrays, which export `__dlpack__` themselves
(`torch.from_dlpack(result)` shares their memory). `run(..., out=buffers)` writes the
result into the caller's buffers instead: `out_buffers` checks them (structure, shape,
dtype, writeable) against what the model returns, naming the offending buffer (`out`,
`out[1]`, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from attrs import frozen

from ...lang.diagnostics import InputError
from ...lang.dtype import dtype_of_array
from ...lang.tuples import tuple_leaves

DLPACK_CPU = 1
"""`kDLCPU`, the device type of memory this process can read directly."""

DEVICE_NAMES = {
    1: "cpu",
    2: "cuda",
    3: "cuda_host",
    4: "opencl",
    7: "vulkan",
    8: "metal",
    9: "vpi",
    10: "rocm",
    11: "rocm_host",
    12: "ext_dev",
    13: "cuda_managed",
    14: "oneapi",
    15: "webgpu",
    16: "hexagon",
    17: "maia",
}
"""DLPack device types by number (`DLDeviceType`), for messages."""


@frozen
class TensorSpec:
    """The static shape and numpy dtype of one tensor of a result."""

    shape: tuple[int, ...]
    dtype: np.dtype


def is_dlpack(value: Any) -> bool:
    """Whether `value` is a foreign array to import: not an `np.ndarray`, has `__dlpack__`."""
    return not isinstance(value, np.ndarray) and hasattr(value, "__dlpack__")


def from_dlpack(value: Any, where: str) -> np.ndarray:
    """`value`'s memory as a numpy array, without a copy; `InputError` naming `where` when
    the tensor is not in CPU memory or cannot be imported (a dtype numpy lacks, a tensor
    that refuses export)."""
    device = _device_of(value, where)
    if device[0] != DLPACK_CPU:
        name = DEVICE_NAMES.get(device[0], f"device type {device[0]}")
        raise InputError(
            f"{where}: the tensor is on {name}:{device[1]}; models run on the CPU "
            "(move it to CPU memory first, e.g. `.cpu()`)"
        )
    try:
        return np.from_dlpack(value)
    except (BufferError, TypeError, ValueError, RuntimeError) as exc:
        raise InputError(
            f"{where}: cannot import the {type(value).__name__} through DLPack: {exc}"
        ) from None


def _device_of(value: Any, where: str) -> tuple[int, int]:
    try:
        device = value.__dlpack_device__()
        return int(device[0]), int(device[1])
    except (AttributeError, TypeError, ValueError, IndexError, RuntimeError) as exc:
        raise InputError(
            f"{where}: the {type(value).__name__} has `__dlpack__` but no usable "
            f"`__dlpack_device__` ({exc})"
        ) from None


def import_value(value: Any, where: str) -> Any:
    """`value` with every foreign array in it imported (`from_dlpack`), looking inside
    tuples; anything else is returned as is. `where` names the argument in errors."""
    if isinstance(value, tuple):
        return map_leaves(value, lambda v: from_dlpack(v, where) if is_dlpack(v) else v)
    return from_dlpack(value, where) if is_dlpack(value) else value


def map_leaves(value: Any, fn: Callable[[Any], Any]) -> Any:
    """`value` with `fn` applied to each non-tuple leaf, depth first, left to right; nested
    tuples are rebuilt (without recursion), and a tuple that appears twice is mapped twice."""
    root: list[Any] = [value]
    made: list[tuple[list[Any], int, list[Any]]] = []
    stack: list[tuple[list[Any], int]] = [(root, 0)]
    while stack:
        container, index = stack.pop()
        item = container[index]
        if isinstance(item, tuple):
            items = list(item)
            made.append((container, index, items))
            stack.extend((items, k) for k in reversed(range(len(items))))
        else:
            container[index] = fn(item)
    for container, index, items in reversed(made):
        container[index] = tuple(items)
    return root[0]


def describe_spec(shape: tuple[int, ...], dtype: np.dtype) -> str:
    """A tensor type as the text format writes it: `Tensor[(2, 3), float32]`."""
    name = dtype_of_array(np.empty(0, dtype))
    dims = ", ".join(str(d) for d in shape)
    return f"Tensor[({dims}), {name}]" if shape else name


def output_array(value: Any, where: str) -> np.ndarray:
    """A caller's output buffer as a writeable numpy array sharing its memory."""
    array = from_dlpack(value, where) if is_dlpack(value) else value
    if not isinstance(array, np.ndarray):
        raise InputError(
            f"{where}: an output buffer is an array (or has `__dlpack__`), not {_kind(value)}"
        )
    if not array.flags.writeable:
        legacy = " (imported through unversioned DLPack, which numpy reads as read-only)"
        raise InputError(
            f"{where}: the output buffer is read-only{legacy if array is not value else ''}"
        )
    return array


def out_buffers(out: Any, template: Any, where: str = "out") -> list[np.ndarray]:
    """The caller's output buffers, depth first, checked against `template`: the result's
    structure, a tuple (nested as the result is) whose leaves have `.shape` and `.dtype`
    (`TensorSpec`s or arrays). `out` is shaped alike: a buffer for a tensor, a tuple or
    list of buffers for a tuple. `InputError` naming the buffer (`out[1]`) otherwise."""
    flat: list[np.ndarray] = []
    stack: list[tuple[Any, Any, str]] = [(out, template, where)]
    while stack:
        given, expected, path = stack.pop()
        if isinstance(expected, tuple):
            if not isinstance(given, tuple | list) or len(given) != len(expected):
                raise InputError(
                    f"`{path}`: the result is a tuple of {len(expected)}, so `{path}` is a "
                    f"tuple of {len(expected)} output buffers; got {_kind(given)}"
                )
            items = [(g, e, f"{path}[{i}]") for i, (g, e) in enumerate(zip(given, expected))]
            stack.extend(reversed(items))
            continue
        if not hasattr(expected, "shape") or not hasattr(expected, "dtype"):
            raise InputError(
                f"`{path}`: output buffers hold tensors, and this part of the result is a "
                f"{type(expected).__name__}"
            )
        array = output_array(given, f"`{path}`")
        shape, dtype = tuple(expected.shape), np.dtype(expected.dtype)
        if array.dtype != dtype or array.shape != shape:
            raise InputError(
                f"`{path}`: expected an output buffer of {describe_spec(shape, dtype)}, "
                f"got {describe_spec(array.shape, array.dtype)}"
            )
        flat.append(array)
    return flat


def fill(buffers: list[np.ndarray], values: list[Any]) -> None:
    """Copy each value into its buffer (overlapping memory is handled by numpy)."""
    for buffer, value in zip(buffers, values):
        np.copyto(buffer, value, casting="no")


def import_arguments(
    names: tuple[str, ...], args: tuple[Any, ...], inputs: dict[str, Any], out: Any
) -> tuple[tuple[Any, ...], dict[str, Any], Any]:
    """A run's positional and named arguments with every foreign tensor imported
    (`import_value`, named after the parameter it is for), and its `out` buffers; when
    the program has a parameter named `out`, `out=` is that input (and there are no
    buffers)."""
    if out is not None and "out" in names:
        inputs = {**inputs, "out": out}
        out = None
    imported = tuple(
        import_value(a, f"argument `{names[k]}`" if k < len(names) else "argument")
        for k, a in enumerate(args)
    )
    named = {k: import_value(v, f"argument `{k}`") for k, v in inputs.items()}
    return imported, named, out


def owned_result(result: Any, inputs: list[np.ndarray]) -> Any:
    """`result` with each tensor at the top or in (nested) tuples copied when it is
    read-only (a constant) or may share memory with an input or an earlier tensor of the
    result, so that the caller owns every array it gets."""
    kept: list[np.ndarray] = []

    def owned(array: np.ndarray) -> np.ndarray:
        if not array.flags.writeable or any(
            np.may_share_memory(array, other) for other in (*inputs, *kept)
        ):
            array = array.copy()
        kept.append(array)
        return array

    return map_leaves(result, lambda v: owned(v) if isinstance(v, np.ndarray) else v)


def deliver(result: Any, out: Any) -> Any:
    """`result` itself when `out` is None, else `out` (buffers shaped like the result,
    checked against it) filled with it: the end of a `run(..., out=...)`."""
    if out is None:
        return result
    buffers = out_buffers(out, result)
    fill(buffers, tuple_leaves(result))
    return out


def _kind(value: Any) -> str:
    """What `value` is, for messages: `an array`, `a tuple of 2`, `a str`."""
    if isinstance(value, np.ndarray):
        return "an array"
    name = type(value).__name__
    if isinstance(value, tuple | list):
        return f"a {name} of {len(value)}"
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"
