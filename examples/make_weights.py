"""Make seeded random weights (and inputs) for the example models, as `.npz` files.

    python examples/make_weights.py                    # every example, next to its .relay
    python examples/make_weights.py mlp lenet          # some of them
    python examples/make_weights.py --out /tmp/w       # into another folder
    python examples/make_weights.py --dry-run resnet18 # only list names, shapes and dtypes
    python examples/make_weights.py --calibrated-bn resnet18   # batch norms fitted to data
    python examples/make_weights.py --calibrated-bn --bn-shift 2 resnet18

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

With `--calibrated-bn` (`calibrate_batch_norm`), a data-dependent initialisation follows:
random batch-norm statistics do not normalize, so through a deep network the activations
drift and the outputs barely depend on the input (a seed-0 MobileNet-v2 picks 2 classes
over 64 images). `calibrate_batch_norm` runs `CALIBRATION_IMAGES` seeded standard-normal
images (`np.random.default_rng([seed, 1])`) through the float network and sets each
batch norm's moving mean and variance, in dataflow order, to the per-channel statistics of
its input as the already-calibrated layers before it produce it (LSUV-style "data-dependent
init"): every normalized output has mean `beta` and standard deviation `gamma`. The bias of
a final `nn.bias_add` after a `nn.dense` (the classifier) is then set so that each class's
logit has mean zero over those images: which class wins depends on the image, not on a
class every image favours. Gammas, betas and weights keep their random values.
`--bn-shift S` moves each normalized output's mean to `beta + S * gamma`: with S = 0 the
relus cut half of every channel and a deep random network amplifies small perturbations
(quantization noise) layer after layer far more than a trained one; S = 2 keeps the relus
mostly linear (see `calibrate_batch_norm`).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping, Sequence
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
CALIBRATION_IMAGES = 16
"""How many seeded images `--calibrated-bn` fits the batch norms to."""


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


def calibration_images(
    spec: ParamSpec, count: int = CALIBRATION_IMAGES, seed: int = DEFAULT_SEED
) -> np.ndarray:
    """`count` standard-normal images of the input `spec`, stacked on axis 0, from
    `np.random.default_rng([seed, 1])` (a generator of its own: the weights do not move)."""
    rng = np.random.default_rng([seed, 1])
    images = [rng.standard_normal(size=spec.shape) for _ in range(count)]
    return np.concatenate(images, axis=0).astype(numpy_dtype(spec.dtype))


def calibrate_batch_norm(
    module: IRModule,
    weights: Mapping[str, np.ndarray],
    inputs: Mapping[str, np.ndarray],
    shift: float = 0.0,
) -> dict[str, np.ndarray]:
    """`weights` with every batch norm's moving mean and variance set from data, and the
    classifier's bias centring the logits (see the module docstring).

    `inputs` maps each input of `@main` to a batch of images stacked on axis 0 (any batch
    size: the operators run batched). `@main` and the globals it calls are inlined and the
    dataflow graph is evaluated once with the reference operator implementations, in
    post-order: when a batch norm is reached its input is already computed with the
    calibrated statistics of every earlier layer. A batch norm whose mean or variance is
    not a parameter of `@main` (or is shared with another batch norm) is an `InputError`.

    `shift` moves every normalized output's mean to `beta + shift * gamma` (the moving
    mean is set `shift` standard deviations below the data's mean). With 0 a following
    relu cuts half of each channel, and through the next conv and batch norm a small
    perturbation grows by ~1.2x relative to the signal, layer after layer: a deep random
    network is then far more sensitive to noise (quantization noise included) than a
    trained one. With 2 to 3 the relus pass almost everything and the perturbation keeps
    its relative size.
    """
    from relay.backend.runtime.op_impls import implementation_for
    from relay.driver import inline_into_main
    from relay.lang.expr import Call, Constant, Tuple, TupleGetItem, Var
    from relay.lang.op import Op, get_op
    from relay.lang.traversal import children, post_order
    from relay.passes import get_pass

    flat = get_pass("to-graph-normal-form")(inline_into_main(module))["main"]
    batch_norm, dense, bias_add = (get_op(n) for n in ("nn.batch_norm", "nn.dense", "nn.bias_add"))
    result = {name: np.asarray(value) for name, value in weights.items()}
    env: dict[str, Any] = {**result, **{k: np.asarray(v) for k, v in inputs.items()}}
    order = list(post_order(flat.body))
    readers: dict[int, int] = {}
    for node in order:
        for kid in children(node):
            readers[id(kid)] = readers.get(id(kid), 0) + 1
    classifier = _classifier(flat.body, dense, bias_add)
    keep = {id(flat.body), id(classifier)}
    values: dict[int, Any] = {}
    fitted: set[str] = set()
    with np.errstate(all="ignore"):
        for node in order:
            if isinstance(node, Var):
                values[id(node)] = env[node.name_hint]
            elif isinstance(node, Constant):
                values[id(node)] = node.data
            elif isinstance(node, Tuple):
                values[id(node)] = tuple(values[id(f)] for f in node.fields)
            elif isinstance(node, TupleGetItem):
                values[id(node)] = values[id(node.tuple_value)][node.index]
            elif isinstance(node, Call) and isinstance(node.op, Op):
                args = [values[id(a)] for a in node.args]
                if node.op == batch_norm:
                    args[3:5] = _fit_batch_norm(node, args[0], result, env, fitted, shift)
                values[id(node)] = implementation_for(node.op)(args, node.attrs)
            elif isinstance(node, Op):
                continue
            else:
                raise InputError.at(
                    node.span,
                    f"--calibrated-bn needs a dataflow @main, found {type(node).__name__}",
                )
            for kid in children(node):
                readers[id(kid)] -= 1
                if readers[id(kid)] == 0 and id(kid) not in keep:
                    values.pop(id(kid), None)
    if classifier is not None:
        bias = classifier.args[1]
        logits = np.asarray(values[id(classifier)], dtype=np.float64)
        old = result[bias.name_hint]
        result[bias.name_hint] = (old - logits.mean(axis=0)).astype(old.dtype)
    return result


def _fit_batch_norm(
    node: Any,
    data: np.ndarray,
    result: dict[str, np.ndarray],
    env: dict[str, Any],
    fitted: set[str],
    shift: float,
) -> tuple[np.ndarray, np.ndarray]:
    from relay.lang.expr import Var

    mean_var, var_var = node.args[3], node.args[4]
    for arg in (mean_var, var_var):
        if not isinstance(arg, Var) or arg.name_hint not in result:
            raise InputError.at(
                node.span,
                "--calibrated-bn: this batch norm's mean and variance must be parameters of @main",
            )
        if arg.name_hint in fitted:
            raise InputError.at(
                node.span, f"--calibrated-bn: %{arg.name_hint} is shared by two batch norms"
            )
        fitted.add(arg.name_hint)
    axis = node.attrs.axis % data.ndim
    others = tuple(a for a in range(data.ndim) if a != axis)
    wide = data.astype(np.float64)
    spread = wide.var(axis=others)
    centre = wide.mean(axis=others) - shift * np.sqrt(spread + node.attrs.epsilon)
    mean = centre.astype(result[mean_var.name_hint].dtype)
    var = spread.astype(result[var_var.name_hint].dtype)
    for var_node, value in ((mean_var, mean), (var_var, var)):
        result[var_node.name_hint] = value
        env[var_node.name_hint] = value
    return mean, var


def _classifier(body: Any, dense: Any, bias_add: Any) -> Any:
    """The classifier `bias_add(dense(x, w), %bias)` that `body` is, or reaches through
    one-argument calls (softmax); None if there is none."""
    from relay.lang.expr import Call, Var

    node = body
    while isinstance(node, Call) and node.op != bias_add and len(node.args) == 1:
        node = node.args[0]
    if not (isinstance(node, Call) and node.op == bias_add):
        return None
    product, bias = node.args
    if isinstance(product, Call) and product.op == dense and isinstance(bias, Var):
        return node
    return None


def write_weights(
    name_or_path: str | Path,
    out_dir: Path | None = None,
    seed: int = DEFAULT_SEED,
    calibrated_bn: bool = False,
    bn_shift: float = 0.0,
) -> Path:
    """Write `<model>.npz` next to the model (or into `out_dir`); returns the file's path.
    With `calibrated_bn`, the batch norms are fitted to seeded images
    (`calibrate_batch_norm` over `calibration_images`, with `bn_shift` as its `shift`)."""
    path = model_path(name_or_path)
    specs = parameter_specs(path)
    arrays = make_weights(specs, seed)
    if calibrated_bn:
        arrays = calibrated_weights(load_model(path), specs, arrays, seed, shift=bn_shift)
    folder = path.parent if out_dir is None else out_dir
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{path.stem}.npz"
    savez: Any = np.savez  # numpy's stub types **kwds as its keyword-only options
    savez(target, **arrays)
    return target


def calibrated_weights(
    module: IRModule,
    specs: Sequence[ParamSpec],
    weights: Mapping[str, np.ndarray],
    seed: int = DEFAULT_SEED,
    count: int = CALIBRATION_IMAGES,
    shift: float = 0.0,
) -> dict[str, np.ndarray]:
    """`calibrate_batch_norm` of `weights` over `count` seeded images of every input
    (`calibration_images`); the inputs' own arrays in `weights` stay as they are."""
    inputs = {
        s.name: calibration_images(s, count, seed)
        for s in specs
        if role(s.name, s.shape) == "input" and np.issubdtype(numpy_dtype(s.dtype), np.floating)
    }
    return calibrate_batch_norm(module, weights, inputs, shift)


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
    parser.add_argument(
        "--calibrated-bn",
        action="store_true",
        help="fit batch-norm statistics (and centre the classifier bias) to seeded images",
    )
    parser.add_argument(
        "--bn-shift",
        type=float,
        default=0.0,
        help="with --calibrated-bn: normalized outputs have mean beta + SHIFT * gamma",
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
                print(write_weights(path, args.out, args.seed, args.calibrated_bn, args.bn_shift))
    except Error as error:
        print(error.render(), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
