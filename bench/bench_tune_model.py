"""xgboost-guided search against random search on the dense 512x512x512 kernel.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_tune_model.py \\
        [--table dense512.json] [--remeasure] [--seeds 5] [--batch 8] [--plot curve.png]

Step 1 measures every config of the task's space once (`relay.backend.tune.measure`, in
a worker process, number=3 x repeat=3, the median) and keeps the table in `--table` (reused
when it exists, unless `--remeasure`). Step 2 replays searches against the table: random
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
from relay.backend.tune.measure import MeasureOptions, Measurer, measure
from relay.backend.tune.search import FeatureCache, propose, training_data
from relay.backend.tune.space import Config
from relay.tuning import extract_tasks

SOURCE = """#[version = "0.0.5"]
def @main(%x: Tensor[(512, 512), float32], %w: Tensor[(512, 512), float32])
    -> Tensor[(512, 512), float32] {
  nn.dense(%x, %w, units=512)
}
"""


def dense_task() -> Any:
    """The tuning task of `nn.dense` 512x512x512 (weights not bound: packed in the kernel)."""
    (task,) = extract_tasks(relay.parse(SOURCE), None)
    return task


def measure_table(task: Any, path: Path, seed: int = 0) -> dict[Config, float | None]:
    """Every config of `task` measured once (in random order), written to `path` as JSON."""
    space = task.space
    order = np.random.default_rng(seed).permutation(space.size)
    configs = [space.config_at(int(i)) for i in order]
    opts = MeasureOptions(number=3, repeat=3, check=True)
    table: dict[Config, float | None] = {}
    start = time.perf_counter()
    with Measurer() as worker:
        for n, c in enumerate(configs):
            (result,) = measure(task, [c], opts, worker)
            table[c] = result.cost
            if n % 50 == 0:
                print(f"  measured {n}/{len(configs)} in {time.perf_counter() - start:.0f} s")
    doc = {
        "task": task.key,
        "flops": task.flops(),
        "measured_seconds": time.perf_counter() - start,
        "records": [{"config": c.to_json(), "cost": v} for c, v in table.items()],
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


def guided_run(
    task: Any,
    table: dict[Config, float | None],
    model: CostModel,
    seed: int,
    trials: int,
    batch: int,
    cache: FeatureCache,
) -> list[float | None]:
    """Costs in the order model-guided search measures them, up to `trials`."""
    rng = np.random.default_rng(seed)
    measured: dict[Config, float | None] = {}
    order: list[float | None] = []
    caches = {task.key: cache}
    while len(measured) < min(trials, task.space.size):
        if measured:
            model.fit(*training_data([(task, measured)], caches))
        picks = propose(task, model, measured, batch, rng, cache=cache, trained=bool(measured))
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
    parser.add_argument("--table", type=Path, default=Path("dense512_table.json"))
    parser.add_argument("--remeasure", action="store_true")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--trials", type=int, default=0, help="guided trials (0: 1/3 of space)")
    parser.add_argument("--plot", type=Path)
    args = parser.parse_args(argv)

    task = dense_task()
    print(f"task {task.describe()}")
    if args.table.exists() and not args.remeasure:
        table = load_table(args.table)
    else:
        print(f"measuring all {task.space.size} configs ...")
        table = measure_table(task, args.table)
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
        guided = best_curve(
            guided_run(task, table, XGBoostModel(seed=seed), seed, trials, args.batch, cache)
        )
        took = time.perf_counter() - t0
        baseline = best_curve(
            guided_run(task, table, RandomModel(seed), seed, trials, args.batch, cache)
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
        plot(curves, flops, args.plot)


def plot(curves: dict[str, list[list[float]]], flops: float, path: Path) -> None:
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
    ax.set_title("dense 512x512x512")
    ax.set_xscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    print(f"plot: {path}")


if __name__ == "__main__":
    main()
