"""Interpreter time against the same network written directly in numpy.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_interpreter.py \
        [--repeat 5] [--models resnet18 transformer_layer mlp] [--profile]

For each model, `relay.backend.runtime.interpret` runs the example's `@main` on the weights
of examples/make_weights.py (seed 0), and bench/numpy_models.py computes the same network in
float32 numpy (im2col convolution). Prints the median wall time of `--repeat` runs of each,
their ratio and the largest difference between the two results. `--profile` adds the
interpreter's ten most expensive functions (cProfile, one run per model).

Unset the two OPENBLAS_ variables when comparing speed: they select a slower OpenBLAS kernel
on this machine, and both sides of the comparison spend most of their time in BLAS.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import os
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from relay.backend.runtime import interpret
from relay.grammar import parse

ROOT = Path(__file__).resolve().parents[1]


def load(name: str, path: Path) -> ModuleType:
    """Import a file that is not in a package (examples/, bench/)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def median_time(
    repeat: int, fn: Callable[..., Any], *args: Any, **kwargs: Any
) -> tuple[float, Any]:
    """Median wall time of `repeat` calls `fn(*args, **kwargs)`, and the last result."""
    times = []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn(*args, **kwargs)
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    """Run the benchmark and print one line per model."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--models", nargs="+", default=["resnet18", "transformer_layer", "mlp"])
    parser.add_argument("--profile", action="store_true", help="profile the interpreter")
    args = parser.parse_args()
    weights_mod = load("make_weights", ROOT / "examples" / "make_weights.py")
    numpy_models = load("numpy_models", ROOT / "bench" / "numpy_models.py")
    blas = {k: v for k, v in os.environ.items() if k.startswith("OPENBLAS")}
    print(f"numpy {np.__version__}, OPENBLAS settings: {blas or 'none'}, repeat {args.repeat}")
    print(f"{'model':<18} {'interpreter':>12} {'numpy':>10} {'ratio':>7} {'max |diff|':>11}")
    for name in args.models:
        path = ROOT / "examples" / f"{name}.relay"
        module = parse(path.read_text(encoding="utf-8"), str(path))
        weights = weights_mod.make_weights(weights_mod.parameter_specs(path))
        forward = numpy_models.MODELS[name]
        interpret(module, **weights)  # warm up (first-call imports, caches)
        forward(weights)
        relay_s, out = median_time(args.repeat, interpret, module, **weights)
        numpy_s, ref = median_time(args.repeat, forward, weights)
        diff = float(np.abs(np.asarray(out, np.float64) - ref).max())
        print(
            f"{name:<18} {relay_s * 1e3:10.1f}ms {numpy_s * 1e3:8.1f}ms "
            f"{relay_s / numpy_s:6.2f}x {diff:11.2e}"
        )
        if args.profile:
            profiler = cProfile.Profile()
            profiler.runcall(interpret, module, **weights)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(10)


if __name__ == "__main__":
    main()
