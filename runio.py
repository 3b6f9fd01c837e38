"""Inputs and outputs of `relay run`: `.npz` files, seeded random inputs, flattened results.

Contract (DESIGN.md): inputs come from `--inputs x.npz` keyed by `@main`'s parameter names
without `%`; missing ones are filled with seeded random data of the annotated type (refused,
with the byte count, before allocating when the tensor cannot fit in memory); the result
goes to `--output y.npz` as `out` for a tensor or `out0`, `out1`, ... for a tuple
(nested tuples flattened depth first).
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from .backend.runtime.native import check_fits
from .backend.runtime.plan import tensor_nbytes
from .backend.runtime.values import Closure, ConstructorValue, RefValue
from .lang.diagnostics import Diagnostic, Error, InputError
from .lang.dtype import dtype_of_array, numpy_dtype
from .lang.expr import Function
from .lang.printer import format_float, print_type
from .lang.span import Span
from .lang.types import TensorType, Type


def load_inputs(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """The arrays of an `.npz` file, by name (Error if it cannot be read)."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except FileNotFoundError:
        raise Error(f"{path}: no such inputs file") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise Error(f"{path}: not a readable .npz file ({exc})") from None


def random_input(name: str, annotation: object, rng: np.random.Generator) -> np.ndarray:
    """Seeded random data for a parameter of a static tensor type."""
    if not isinstance(annotation, TensorType):
        shown = f"a {print_type(annotation)}" if isinstance(annotation, Type) else "no type"
        raise InputError(
            f"input `{name}` is not a tensor ({shown}); random data can only fill tensors: "
            "pass it in --inputs"
        )
    if not annotation.is_static():
        raise InputError(
            f"input `{name}` ({print_type(annotation)}) has a dynamic shape; random data "
            "needs a static shape: pass it in --inputs"
        )
    shape = tuple(d for d in annotation.shape if isinstance(d, int))
    dtype = numpy_dtype(annotation.dtype)
    check_fits(
        tensor_nbytes(shape, annotation.dtype),
        "the model",
        f"for input `{name}`, a {print_type(annotation)}, alone",
    )
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    info = np.iinfo(dtype)
    low, high = max(info.min, -8), min(info.max, 8)
    return rng.integers(low, high, size=shape, endpoint=True).astype(dtype)


def array_type_text(array: np.ndarray) -> str:
    """The type of a numpy array in the text format: `Tensor[(2, 3), float32]`, `int64`."""
    try:
        dtype = dtype_of_array(array)
    except ValueError:  # a dtype relay has no name for (complex, strings, objects)
        dtype = f"{array.dtype} (not a relay dtype)"
    if array.ndim == 0:
        return dtype
    return f"Tensor[({', '.join(map(str, array.shape))}), {dtype}]"


def _matches(array: np.ndarray, expected: TensorType) -> bool:
    """Whether `array` has `expected`'s dtype and shape (`?` and shape variables match any
    extent)."""
    try:
        if dtype_of_array(array) != expected.dtype:
            return False
    except ValueError:
        return False
    if array.ndim != len(expected.shape):
        return False
    return all(not isinstance(d, int) or d == n for d, n in zip(expected.shape, array.shape))


Warn = Callable[[Diagnostic], None]


def _complete(
    params: Sequence[tuple[str, object, Span | None]],
    given: Mapping[str, np.ndarray],
    seed: int,
    owner: str,
    strict: bool,
    warn: Warn | None,
) -> dict[str, np.ndarray]:
    """`given` (checked against the types of `params`) plus seeded random data for each
    `(name, type, span)` of `params` it lacks; each filled one is a warning for `warn`, or
    with `strict` an error."""
    names = [name for name, _, _ in params]
    for key in given:
        if key not in names:
            raise InputError(
                f"unexpected input `{key}` in the inputs file "
                f"({owner}: {', '.join(names) or 'none'})"
            )
    for name, expected, span in params:
        value = given.get(name)
        if value is not None and isinstance(expected, TensorType) and not _matches(value, expected):
            raise InputError.at(
                span,
                f"input `{name}` in the inputs file: expected {print_type(expected)}, "
                f"got {array_type_text(value)}",
            )
    missing = [(name, expected) for name, expected, _ in params if name not in given]
    if strict and missing:
        raise InputError(
            Diagnostic(
                "error",
                f"input `{name}` ({_type_text(expected)}) is missing from the inputs "
                "(--strict-inputs refuses to fill it with random data)",
            )
            for name, expected in missing
        )
    rng = np.random.default_rng(seed)
    result = dict(given)
    for name, expected in missing:
        result[name] = random_input(name, expected, rng)
        if warn is not None:
            message = (
                f"input `{name}` ({_type_text(expected)}) is not in the inputs: filled with "
                f"random data (seed {seed})"
            )
            warn(Diagnostic("warning", message))
    return result


def _type_text(t: object) -> str:
    return print_type(t) if isinstance(t, Type) else "no type"


def complete_inputs(
    main: Function,
    given: Mapping[str, np.ndarray],
    seed: int = 0,
    *,
    types: Sequence[Type | None] | None = None,
    strict: bool = False,
    warn: Warn | None = None,
) -> dict[str, np.ndarray]:
    """`given` plus seeded random data for every parameter of `main` it lacks.

    `types` are the parameters' inferred types, used where they are not annotated. An input
    whose name is not a parameter, or whose shape or dtype differs from the parameter's
    type, is an `InputError`; so is a missing one with `strict`. Each parameter filled
    with random data is reported to `warn` as a warning diagnostic.
    """
    params: list[tuple[str, object, Span | None]] = []
    for i, p in enumerate(main.params):
        annotation = p.type_annotation
        inferred = types[i] if types is not None and i < len(types) else None
        if inferred is not None and (annotation is None or not _is_static_tensor(annotation)):
            annotation = inferred
        params.append((p.name_hint, annotation, p.span))
    return _complete(params, given, seed, "parameters of @main", strict, warn)


def _is_static_tensor(t: object) -> bool:
    return isinstance(t, TensorType) and t.is_static()


def random_inputs_for_slots(
    model: object,
    given: Mapping[str, np.ndarray],
    seed: int = 0,
    *,
    strict: bool = False,
    warn: Warn | None = None,
) -> dict[str, np.ndarray]:
    """Like `complete_inputs`, for a loaded compiled model (inputs named by its plan); the
    same seed gives the same data as for the `.relay` file it was built from."""
    plan = model.plan  # type: ignore[attr-defined]
    params: list[tuple[str, object, Span | None]] = []
    for name, slot_index in zip(plan.input_names, plan.input_slots):
        slot = plan.slots[slot_index]
        params.append((name, TensorType(slot.shape, slot.dtype), None))
    return _complete(params, given, seed, "inputs of the model", strict, warn)


def flatten_outputs(value: object) -> dict[str, np.ndarray]:
    """`{"out": t}` for a tensor, `{"out0": ..., "out1": ...}` for a (nested) tuple."""
    if isinstance(value, np.ndarray):
        return {"out": value}
    leaves: list[np.ndarray] = []
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):
            stack.extend(reversed(item))
        elif isinstance(item, np.ndarray):
            leaves.append(item)
        else:
            raise Error(
                f"the result contains {_value_words(item)}, which cannot be saved to .npz "
                "(only tensors and tuples of tensors can)"
            )
    return {f"out{i}": leaf for i, leaf in enumerate(leaves)}


def _value_words(value: object) -> str:
    """What a non-tensor value is, in words."""
    if isinstance(value, ConstructorValue):
        ctor = value.constructor
        return f"a value of type {ctor.belong_to.name_hint} (`{ctor.name_hint}`)"
    if isinstance(value, RefValue):
        return "a reference"
    if isinstance(value, Closure) or callable(value):
        return "a function"
    return f"a {type(value).__name__}"


def summarize(array: np.ndarray) -> str | None:
    """A line of statistics about a result tensor for the terminal, or None for a scalar
    (its value says it all).

    Floats: min, max, mean and argmax over the finite values, and how many are NaN or
    infinite; integers: the same with integer min and max; booleans: how many are True.
    """
    if array.ndim == 0:
        return None
    text = array_type_text(array)
    flat = array.reshape(-1)
    if flat.size == 0:
        return f"{text}, empty"
    kind = array.dtype.kind
    if kind == "b":
        return f"{text}, {int(np.count_nonzero(flat))} of {flat.size} True"
    if kind in "iu":
        return (
            f"{text}, min {int(flat.min())}, max {int(flat.max())}, "
            f"mean {float(flat.mean(dtype=np.float64)):.6g}, argmax {int(np.argmax(flat))}"
        )
    if kind != "f":
        return text
    finite = np.isfinite(flat)
    bad = []
    nans = int(np.count_nonzero(np.isnan(flat)))
    if nans:
        bad.append(f"{nans} NaN")
    infs = flat.size - int(np.count_nonzero(finite)) - nans
    if infs:
        bad.append(f"{infs} infinite")
    if not bad:
        values = flat
        stats = "min {:.6g}, max {:.6g}, mean {:.6g}, argmax {}"
    else:
        values = flat[finite]
        stats = "finite values: min {:.6g}, max {:.6g}, mean {:.6g}, argmax {}"
    if values.size == 0:
        return f"{text}, {', '.join(bad)}"
    argmax = int(np.argmax(np.where(finite, flat, -np.inf))) if bad else int(np.argmax(flat))
    line = stats.format(
        float(values.min()), float(values.max()), float(values.mean(dtype=np.float64)), argmax
    )
    return f"{text}, {line}" + (f"; {', '.join(bad)}" if bad else "")


def scalar_text(array: np.ndarray) -> str:
    """A rank-0 result as the terminal shows it: `0.5648738 (float32)`, `42 (int32)`."""
    dtype = array_type_text(array)
    value = array.item()
    if array.dtype.kind == "f" and array.dtype.name in ("float16", "float32", "float64"):
        return f"{format_float(value, array.dtype.name)} ({dtype})"
    return f"{value} ({dtype})"
