"""Weights packed at build time against packed in every call: build time and latency.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_fold_weights.py \\
        [--models resnet18,mobilenet_v2,transformer_layer,mlp] [--repeat 30] [--batch 64]

Each example model is built twice with its weights bound (`params=`, seed-0 weights of
examples/make_weights.py): with the build-time folding of weight-only stages (the default of
`compile_plan`) and without it. Both are checked against each other, then run alternating
(folded, unfolded, folded, ...) in this process; the medians, their ratio and the build
times (and the build's own time split) are printed. `mlp` is examples/mlp.relay's @main
with its input batch set to `--batch`. Figures only, never a pass/fail test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import relay
from peers import load_make_weights
from relay.backend.build import compile_plan, plan_graph
from relay.driver import bind_params, optimize, resolve_target

INPUT = "data"


def load(name: str, batch: int) -> tuple[Any, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The module, its weights and its input (`mlp` with the batch set to `batch`)."""
    make_weights = load_make_weights()
    path = make_weights.model_path(name)
    text = Path(path).read_text()
    if name == "mlp":
        text = text.replace("Tensor[(1, 784), float32]", f"Tensor[({batch}, 784), float32]")
        text = text.replace("Tensor[(1, 10), float32]", f"Tensor[({batch}, 10), float32]")
    module = relay.parse(text)
    weights = make_weights.make_weights(make_weights.main_parameters(module), seed=0)
    return module, weights, {INPUT: weights.pop(INPUT)}


def build(module: Any, weights: dict[str, np.ndarray], fold: bool) -> tuple[Any, float]:
    """The model compiled as `relay.build(module, params=weights)` does, folding or not,
    and the seconds it took."""
    start = time.perf_counter()
    target = resolve_target("llvm")
    optimized = optimize(bind_params(module, weights), None, None)
    plan = plan_graph(optimized.module["main"], optimized.types)
    model = compile_plan(plan, target, types=optimized.types, fold_weights=fold)
    return model, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet18,mobilenet_v2,transformer_layer,mlp")
    parser.add_argument("--repeat", type=int, default=30, help="runs of each variant")
    parser.add_argument("--batch", type=int, default=64, help="the MLP's batch")
    args = parser.parse_args()
    for name in args.models.split(","):
        module, weights, data = load(name, args.batch)
        folded, t_fold = build(module, weights, True)
        plain, t_plain = build(module, weights, False)
        a, b = folded.run(**data), plain.run(**data)
        err = float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
        times: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(3):
            folded.run(**data)
            plain.run(**data)
        for _ in range(args.repeat):
            for fold, model in ((True, folded), (False, plain)):
                start = time.perf_counter()
                model.run(**data)
                times[fold].append(time.perf_counter() - start)
        med_f = statistics.median(times[True]) * 1e3
        med_p = statistics.median(times[False]) * 1e3
        split = " ".join(f"{k}={v:.2f}" for k, v in folded.stats.seconds.items())
        print(
            f"{name}: folded {med_f:.2f} ms, in-kernel packing {med_p:.2f} ms "
            f"(ratio {med_f / med_p:.3f}); build {t_fold:.1f} s folded ({split}), "
            f"{t_plain:.1f} s unfolded; params {sum(p.nbytes for p in folded.params) / 1e6:.1f}"
            f" MB vs {sum(p.nbytes for p in plain.params) / 1e6:.1f} MB; max |diff| {err:.2e}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
