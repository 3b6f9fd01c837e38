"""Make seeded random weights (and inputs) for the example models, as `.npz` files.

    python examples/make_weights.py                    # every example, next to its .relay
    python examples/make_weights.py mlp lenet          # some of them
    python examples/make_weights.py --out /tmp/w       # into another folder
    python examples/make_weights.py --dry-run resnet18 # only list names, shapes and dtypes

The shapes are not in a table here: each model is parsed with `relay.grammar.parse` and the
type annotations of `@main`'s parameters give every array's shape and dtype. The `.npz` keys
are the parameter names without `%`, inputs (`data`, `x0`, ...) included, so the file can be
passed to `relay run --inputs`.

Values are drawn from `np.random.default_rng(seed)` (seed 0 by default), one generator per
model, in parameter order. A parameter's role is read from its name: the last of its
`_`-separated parts that is a role word below decides (`layer1_0_bn1_var` is a variance,
`weight_ih` a weight), and He-style scaling keeps activations finite in deep models:

| role word                      | values                                                |
| ------------------------------ | ----------------------------------------------------- |
| `weight` (2-D or more)         | He initialisation: normal(0, sqrt(2 / fan_in)), where |
|                                | fan_in is the product of every axis but the first     |
| `var`, `variance`              | uniform(0.5, 1.5): batch-norm variances stay positive |
| `gamma`, `scale`, 1-D `weight` | uniform(0.8, 1.2)                                     |
| `beta`, `mean`, `bias`         | normal(0, 0.05)                                       |
| none of them (inputs)          | standard normal                                       |

Integer parameters get integers in [0, 10), bool parameters random booleans.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from relay.grammar import parse
from relay.lang.diagnostics import Error, InputError
from relay.lang.dtype import numpy_dtype
from relay.lang.module import IRModule
from relay.lang.types import TensorType

EXAMPLES_DIR = Path(__file__).resolve().parent
"""The folder holding the example models."""

DEFAULT_SEED = 0


class ParamSpec(NamedTuple):
    """One parameter of `@main`: its name (without `%`), static shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str


def example_names() -> list[str]:
    """The names of the example models (the `.relay` files of this folder, sorted)."""
    return sorted(path.stem for path in EXAMPLES_DIR.glob("*.relay"))


def model_path(name_or_path: str | Path) -> Path:
    """The `.relay` file of an example given by name (`mlp`) or by path."""
    path = Path(name_or_path)
    if path.suffix == ".relay" or path.exists():
        return path
    return EXAMPLES_DIR / f"{name_or_path}.relay"


def load_model(path: Path) -> IRModule:
    """Parse a model file (diagnostics name the file as given)."""
    return parse(path.read_text(encoding="utf-8"), str(path))


def main_parameters(module: IRModule) -> list[ParamSpec]:
    """Name, shape and dtype of every parameter of `@main`, from its type annotations.

    Raises `InputError` (at the parameter) for a parameter that is not annotated with a
    tensor type of static shape: no array can be made for it.
    """
    try:
        main = module["main"]
    except KeyError:
        raise InputError("the model has no @main function") from None
    specs = []
    for param in main.params:
        ty = param.type_annotation
        if not isinstance(ty, TensorType):
            raise InputError.at(
                param.span,
                f"parameter %{param.name_hint} of @main needs a tensor type annotation "
                "to make an array for it",
            )
        if not ty.is_static():
            raise InputError.at(
                param.span,
                f"parameter %{param.name_hint} of @main has a dynamic or symbolic shape",
            )
        shape = tuple(dim for dim in ty.shape if isinstance(dim, int))
        specs.append(ParamSpec(param.name_hint, shape, ty.dtype))
    return specs


def parameter_specs(name_or_path: str | Path) -> list[ParamSpec]:
    """The `@main` parameters of an example, by name (`resnet18`) or path."""
    return main_parameters(load_model(model_path(name_or_path)))


_ROLE_WORDS = {
    "weight": "weight",
    "var": "variance",
    "variance": "variance",
    "gamma": "scale",
    "scale": "scale",
    "beta": "shift",
    "mean": "shift",
    "bias": "shift",
}


def role(name: str, shape: tuple[int, ...]) -> str:
    """How values for a parameter are drawn: weight, variance, scale, shift or input.

    The last `_`-separated part of the name that is a role word decides (`bn1_var`,
    `weight_ih`); a name without one is an input.
    """
    for word in reversed(name.lower().split("_")):
        kind = _ROLE_WORDS.get(word)
        if kind == "weight" and len(shape) < 2:
            return "scale"
        if kind is not None:
            return kind
    return "input"


def make_array(spec: ParamSpec, rng: np.random.Generator) -> np.ndarray:
    """Random values for one parameter (see the module docstring for the rules)."""
    dtype = numpy_dtype(spec.dtype)
    shape = spec.shape
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, 10, size=shape).astype(dtype)
    kind = role(spec.name, shape)
    if kind == "weight":
        fan_in = math.prod(shape[1:])
        values = rng.normal(0.0, math.sqrt(2.0 / max(fan_in, 1)), size=shape)
    elif kind == "variance":
        values = rng.uniform(0.5, 1.5, size=shape)
    elif kind == "scale":
        values = rng.uniform(0.8, 1.2, size=shape)
    elif kind == "shift":
        values = rng.normal(0.0, 0.05, size=shape)
    else:
        values = rng.standard_normal(size=shape)
    return np.asarray(values, dtype=dtype)


def make_weights(specs: Sequence[ParamSpec], seed: int = DEFAULT_SEED) -> dict[str, np.ndarray]:
    """Arrays for `specs`, keyed by parameter name, from one generator seeded with `seed`."""
    rng = np.random.default_rng(seed)
    return {spec.name: make_array(spec, rng) for spec in specs}


def write_weights(
    name_or_path: str | Path, out_dir: Path | None = None, seed: int = DEFAULT_SEED
) -> Path:
    """Write `<model>.npz` next to the model (or into `out_dir`); returns the file's path."""
    path = model_path(name_or_path)
    arrays = make_weights(parameter_specs(path), seed)
    folder = path.parent if out_dir is None else out_dir
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{path.stem}.npz"
    savez: Any = np.savez  # numpy's stub types **kwds as its keyword-only options
    savez(target, **arrays)
    return target


def _describe(specs: Sequence[ParamSpec]) -> str:
    lines = [f"  {s.name}: {s.shape} {s.dtype} ({role(s.name, s.shape)})" for s in specs]
    total = sum(math.prod(s.shape) for s in specs)
    lines.append(f"  {len(specs)} arrays, {total:,} values")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status (1 after a diagnosed error)."""
    parser = argparse.ArgumentParser(
        description="Make seeded random weights and inputs for the example models (.npz)."
    )
    parser.add_argument(
        "models", nargs="*", help="example names or .relay paths (default: every example)"
    )
    parser.add_argument("--out", type=Path, help="folder for the .npz files")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="generator seed")
    parser.add_argument(
        "--dry-run", action="store_true", help="print the arrays that would be made"
    )
    args = parser.parse_args(argv)
    models = args.models or example_names()
    try:
        for model in models:
            path = model_path(model)
            if not path.is_file():
                print(f"error: no model `{model}` ({path} does not exist)", file=sys.stderr)
                return 1
            if args.dry_run:
                print(f"{path}:\n{_describe(parameter_specs(path))}")
            else:
                print(write_weights(path, args.out, args.seed))
    except Error as error:
        print(error.render(), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
