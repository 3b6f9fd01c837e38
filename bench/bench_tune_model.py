"""xgboost-guided search against random search on one kernel: dense 512x512x512 or one of
ResNet-18's 3x3 convolutions as its build runs them.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_tune_model.py \\
        [--kernel dense512] [--table dense512.json] [--remeasure] [--seeds 5] [--batch 8] \\
        [--max-lowerings N] [--plot curve.png]

`--kernel`: `dense512` (`nn.dense` 512x512x512, weights not bound), or a task of ResNet-18
built with its weights bound (seed-0 weights of examples/make_weights.py, what
`relay tune --params` sees): `r18-nchwc56` (the 64->64 3x3 @56 conv2d_NCHWc + bias + relu,
96 points), `r18-wino14` (256->256 @14 Winograd F(4x4, 3x3), 144 points) or `r18-wino28`
(128->128 @28 Winograd, 1152 points).

Step 1 measures every config of the task's space once (`relay.backend.tune.measure`, in
`--workers` worker processes, number=3 x `--repeat` rounds, the fastest) and keeps the
table in `--table` (reused when it exists, unless `--remeasure`). Step 2 replays searches against the table: random
search (configs in random order) and model-guided search (`search.propose` with an
`XGBoostModel` refit after every batch; the first batch is random), one run per seed.
Printed: for each seed the trials each search needs to come within 5% of the best cost
of the random run (a run of the whole space, so the best measured config), and the
medians; `--plot` draws best-so-far GFLOP/s against trials for both (median over seeds).

Replaying a measured table makes the comparison cheap and repeatable with several seeds;
the times in it are as noisy as the machine was while measuring (one measurement per
config). The issue's "1,000 random trials" does not apply to a space this small: the
random run here covers the whole space.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import relay
from relay.backend.tune.cost_model import CostModel, RandomModel, XGBoostModel
from relay.backend.tune.executors import LocalExecutor
from relay.backend.tune.measure import MeasureOptions
from relay.backend.tune.search import FeatureCache, propose, training_data
from relay.backend.tune.space import Config
from relay.tuning import extract_tasks

SOURCE = """#[version = "0.0.5"]
def @main(%x: Tensor[(512, 512), float32], %w: Tensor[(512, 512), float32])
    -> Tensor[(512, 512), float32] {
  nn.dense(%x, %w, units=512)
}
"""


def dense_task(target: str | None = None) -> Any:
    """The tuning task of `nn.dense` 512x512x512 (weights not bound: packed in the kernel)."""
    (task,) = extract_tasks(relay.parse(SOURCE), None, target)
    return task


RESNET_KERNELS = {
    "r18-nchwc56": "nn.contrib_conv2d_NCHWc[1x8x56x56x8]",
    "r18-wino14": "nn.contrib_conv2d_winograd_without_weight_transform[1x256x14x14]",
    "r18-wino28": "nn.contrib_conv2d_winograd_without_weight_transform[1x128x28x28]",
}
"""Kernels of ResNet-18 by the start of their task key (the heaviest task of that shape)."""


def kernel_task(name: str, target: str | None = None) -> Any:
    """The tuning task `--kernel` names (module docstring) for `target` (None: the host)."""
    if name == "dense512":
        return dense_task(target)
    import peers

    make_weights = peers.load_make_weights()
    module = relay.parse(Path(make_weights.model_path("resnet18")).read_text())
    weights = make_weights.make_weights(make_weights.main_parameters(module), seed=0)
    params = {k: v for k, v in weights.items() if k != "data"}
    prefix = RESNET_KERNELS[name]
    tasks = [t for t in extract_tasks(module, params, target) if t.key.startswith(prefix)]
    return max(tasks, key=lambda t: (t.weight, t.space.size))


def measure_table(
    task: Any, path: Path, seed: int = 0, workers: int = 1, repeat: int = 3, clock: str = "wall"
) -> dict[Config, float | None]:
    """Every config of `task` measured once (in random order; number=3 x `repeat` rounds,
    the fastest round: `MeasureResult.cost`) by `workers` local workers (they build side by
    side and time in turn), written to `path` as JSON with every round's time."""
    space = task.space
    order = np.random.default_rng(seed).permutation(space.size)
    configs = [space.config_at(int(i)) for i in order]
    opts = MeasureOptions(number=3, repeat=repeat, check=True, clock=clock)
    table: dict[Config, float | None] = {}
    rounds: dict[Config, list[float]] = {}
    start = time.perf_counter()
    with LocalExecutor(workers) as executor:
        for first in range(0, len(configs), 50):
            for result in executor.submit(task, configs[first : first + 50], opts):
                table[result.config] = result.cost
                rounds[result.config] = list(result.costs)
            print(f"  measured {len(table)}/{len(configs)} in {time.perf_counter() - start:.0f} s")
    doc = {
        "task": task.key,
        "flops": task.flops(),
        "measured_seconds": time.perf_counter() - start,
        "workers": workers,
        "clock": clock,
        "records": [{"config": c.to_json(), "cost": table[c], "costs": rounds[c]} for c in configs],
    }
    path.write_text(json.dumps(doc, indent=1))
    return table


def load_table(path: Path) -> dict[Config, float | None]:
    """The table `measure_table` wrote."""
    doc = json.loads(path.read_text())
    return {Config.from_json(r["config"]): r["cost"] for r in doc["records"]}


def best_curve(costs: list[float | None]) -> list[float]:
    """Best-so-far cost after each trial (inf before a working one)."""
    out, best = [], float("inf")
    for c in costs:
        if c is not None and c < best:
            best = c
        out.append(best)
    return out


def random_run(space: Any, table: dict[Config, float | None], seed: int) -> list[float | None]:
    """Costs in the order random search measures them (the whole space, no repeats)."""
    order = np.random.default_rng(seed).permutation(space.size)
    return [table[space.config_at(int(i))] for i in order]


class RunCache(FeatureCache):
    """One search's view of a shared `FeatureCache`: rows come from `shared` (lowered
    once for all runs), but a config counts as lowered only once this run asked for it, so
    a lowering budget limits each run as it limits the tuner."""

    def __init__(self, shared: FeatureCache) -> None:
        super().__init__(shared.task)
        self.shared = shared

    def _lower(self, config: Any) -> None:
        self.lowered += 1
        self._rows[config] = self.shared.row(config)
        self._digests[config] = self.shared.digest(config)


def guided_run(
    task: Any,
    table: dict[Config, float | None],
    model: CostModel,
    seed: int,
    trials: int,
    batch: int,
    cache: FeatureCache,
    max_lowerings: int | None = None,
) -> list[float | None]:
    """Costs in the order model-guided search measures them, up to `trials` (`propose`
    lowering at most `max_lowerings` new configs per batch, as the tuner does)."""
    rng = np.random.default_rng(seed)
    cache = RunCache(cache)
    measured: dict[Config, float | None] = {}
    order: list[float | None] = []
    caches = {task.key: cache}
    while len(measured) < min(trials, task.space.size):
        if measured:
            model.fit(*training_data([(task, measured)], caches))
        picks = propose(task, model, measured, batch, rng, cache=cache, trained=bool(measured),
                        max_lowerings=max_lowerings)  # fmt: skip
        if not picks:
            break
        for c in picks:
            measured[c] = table[c]
            order.append(table[c])
    return order[:trials]


def trials_to_reach(curve: list[float], target: float) -> int:
    """1-based trial at which `curve` first comes within `target` (len+1 if never)."""
    for i, v in enumerate(curve):
        if v <= target:
            return i + 1
    return len(curve) + 1


def main(argv: list[str] | None = None) -> None:
    """Measure (or load) the table, replay the searches, print (and plot) the result."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernel", default="dense512", choices=["dense512", *RESNET_KERNELS])
    parser.add_argument("--table", type=Path, help="default: KERNEL_table.json")
    parser.add_argument("--remeasure", action="store_true")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--trials", type=int, default=0, help="guided trials (0: 1/3 of space)")
    parser.add_argument(
        "--max-lowerings", type=int, help="new configs a search may lower per batch (no cap)"
    )
    parser.add_argument("--workers", type=int, default=1, help="local measurement workers")
    parser.add_argument("--repeat", type=int, default=3, help="timing rounds (fastest kept)")
    parser.add_argument("--threads", type=int, help="the target's threads (default: all)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: the worker's CPU time (load-immune at --threads 1)")  # fmt: skip
    parser.add_argument("--plot", type=Path)
    args = parser.parse_args(argv)
    args.table = args.table or Path(f"{args.kernel}_table.json")

    target = f"llvm -num-threads={args.threads}" if args.threads else None
    task = kernel_task(args.kernel, target)
    print(f"task {task.describe()} (space {task.space.size}, weight {task.weight})")
    if args.table.exists() and not args.remeasure:
        table = load_table(args.table)
    else:
        print(f"measuring all {task.space.size} configs ...")
        table = measure_table(task, args.table, workers=args.workers, repeat=args.repeat,
                              clock=args.clock)  # fmt: skip
    errors = sum(v is None for v in table.values())
    ok = [v for v in table.values() if v is not None]
    flops = task.flops()
    print(f"{len(table)} configs, {errors} errors, best {flops / min(ok) / 1e9:.1f} GFLOP/s, "
          f"median {flops / statistics.median(ok) / 1e9:.1f}, worst {flops / max(ok) / 1e9:.1f}")  # fmt: skip
    default = table.get(task.space.default())
    if default is not None:
        print(f"default config: {flops / default / 1e9:.1f} GFLOP/s")

    trials = args.trials or task.space.size // 3
    cache = FeatureCache(task)
    t0 = time.perf_counter()
    for i in range(task.space.size):
        cache.row(task.space.config_at(i))
    print(f"features of the whole space: {time.perf_counter() - t0:.1f} s")
    rows = []
    curves: dict[str, list[list[float]]] = {"random": [], "xgboost": [], "random-model": []}
    for seed in range(args.seeds):
        rand = best_curve(random_run(task.space, table, seed))
        target = rand[-1] * 1.05
        t0 = time.perf_counter()
        cap = args.max_lowerings
        guided = best_curve(
            guided_run(task, table, XGBoostModel(seed=seed), seed, trials, args.batch, cache, cap)
        )
        took = time.perf_counter() - t0
        baseline = best_curve(
            guided_run(task, table, RandomModel(seed), seed, trials, args.batch, cache, cap)
        )
        curves["random"].append(rand)
        curves["xgboost"].append(guided)
        curves["random-model"].append(baseline)
        rows.append((trials_to_reach(rand, target), trials_to_reach(guided, target),
                     trials_to_reach(baseline, target)))  # fmt: skip
        print(f"seed {seed}: trials to within 5% of the best: random {rows[-1][0]}, "
              f"xgboost {rows[-1][1]} (search {took:.1f} s), propose+random model {rows[-1][2]}")  # fmt: skip
    med = [statistics.median(r[k] for r in rows) for k in range(3)]
    print(f"median: random {med[0]}, xgboost {med[1]}, propose+random model {med[2]} "
          f"(space {task.space.size}, guided budget {trials}, batch {args.batch})")  # fmt: skip
    if args.plot:
        plot(curves, flops, args.plot, task.key.split("-")[0])


def plot(curves: dict[str, list[list[float]]], flops: float, path: Path, title: str) -> None:
    """Median best-so-far GFLOP/s against trials for each search."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, runs in curves.items():
        n = min(len(r) for r in runs)
        med = np.median(np.array([r[:n] for r in runs]), axis=0)
        ax.plot(np.arange(1, n + 1), flops / med / 1e9, label=name)
    ax.set_xlabel("trials")
    ax.set_ylabel("best GFLOP/s so far (median over seeds)")
    ax.set_title(title[:60], fontsize=8)
    ax.set_xscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    print(f"plot: {path}")


if __name__ == "__main__":
    main()
