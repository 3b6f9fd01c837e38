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
from collections.abc import Mapping, Sequence

import numpy as np

from .backend.runtime.native import check_fits
from .backend.runtime.plan import tensor_nbytes
from .lang.diagnostics import Error, InputError
from .lang.dtype import numpy_dtype
from .lang.expr import Function
from .lang.printer import print_type
from .lang.types import TensorType


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
        raise InputError(
            f"input `{name}` is not a tensor ({annotation if annotation else 'no type'}); "
            "random data can only fill tensors: pass it in --inputs"
        )
    if not annotation.is_static():
        raise InputError(
            f"input `{name}` has a dynamic shape; random data needs a static shape: "
            "pass it in --inputs"
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


def _complete(
    params: Sequence[tuple[str, object]], given: Mapping[str, np.ndarray], seed: int, owner: str
) -> dict[str, np.ndarray]:
    """`given` plus seeded random data for each `(name, type)` of `params` it lacks."""
    names = [name for name, _ in params]
    for key in given:
        if key not in names:
            raise InputError(
                f"unexpected input `{key}` in the inputs file "
                f"({owner}: {', '.join(names) or 'none'})"
            )
    rng = np.random.default_rng(seed)
    result = dict(given)
    for name, annotation in params:
        if name not in result:
            result[name] = random_input(name, annotation, rng)
    return result


def complete_inputs(
    main: Function, given: Mapping[str, np.ndarray], seed: int = 0
) -> dict[str, np.ndarray]:
    """`given` plus seeded random data for every parameter of `main` it lacks.

    An input whose name is not a parameter is an `InputError` naming it and the parameters.
    """
    params = [(p.name_hint, p.type_annotation) for p in main.params]
    return _complete(params, given, seed, "parameters of @main")


def random_inputs_for_slots(
    model: object, given: Mapping[str, np.ndarray], seed: int = 0
) -> dict[str, np.ndarray]:
    """Like `complete_inputs`, for a loaded compiled model (inputs named by its plan); the
    same seed gives the same data as for the `.relay` file it was built from."""
    plan = model.plan  # type: ignore[attr-defined]
    params: list[tuple[str, object]] = []
    for name, slot_index in zip(plan.input_names, plan.input_slots):
        slot = plan.slots[slot_index]
        params.append((name, TensorType(slot.shape, slot.dtype)))
    return _complete(params, given, seed, "inputs of the model")


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
                f"the result contains a {type(item).__name__}, which cannot be saved to .npz "
                "(only tensors and tuples of tensors can)"
            )
    return {f"out{i}": leaf for i, leaf in enumerate(leaves)}
