"""Tuning figures: xgboost-guided search against random search on one kernel, and a model's
tuned latency against its default build.

    .venv/bin/python bench/bench_tune.py --kernel dense512 --trials 60 --random-trials 200
    .venv/bin/python bench/bench_tune.py --model mlp --trials 16

`--kernel` tunes one task (`dense512`: dense 512x512x512; `conv56`: ResNet-18's 64>64 3x3
@56 as conv2d_NCHWc; `wino56`: the same layer as ResNet-18's build runs it, a Winograd
F(4x4, 3x3) convolution + bias + relu on the transformed weight) with xgboost for `--trials` and with random search for
`--random-trials` (separate logs under `--out`), prints the best GFLOP/s of each and the
trials xgboost needed to come within 5% of random search's best, and plots both curves
(`--plot`, needs matplotlib). `--model` extracts the tasks of an example model, tunes them
and compares the build with the log against the default build (median of `--repeat` runs,
alternating). Timings on a shared machine are noisy. Trials count measured kernels: configs
with the same loop IR as a measured one are logged as duplicates, not measured.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import relay
from relay.backend.target import Target
from relay.backend.tune.measure import MeasureOptions
from relay.backend.tune.tuner import plot_log, tune
from relay.tuning import extract_tasks

KERNELS = {
    "dense512": """#[version = "0.0.5"]
def @main(%x: Tensor[(512, 512), float32], %w: Tensor[(512, 512), float32]) {
  nn.dense(%x, %w, units=512)
}""",
    "conv56": """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 8, 56, 56, 8), float32], %w: Tensor[(8, 8, 3, 3, 8, 8), float32]) {
  nn.relu(nn.contrib_conv2d_NCHWc(%x, %w, padding=[1, 1, 1, 1], channels=64,
    kernel_size=[3, 3], data_layout="NCHW8c", kernel_layout="OIHW8i8o", out_layout="NCHW8c"))
}""",
    "wino56": """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 64, 56, 56), float32], %u: Tensor[(6, 6, 64, 64), float32],
          %b: Tensor[(64), float32]) {
  nn.relu(nn.bias_add(nn.contrib_conv2d_winograd_without_weight_transform(%x, %u,
    tile_size=4, padding=[1, 1, 1, 1], channels=64, kernel_size=[3, 3]), %b))
}""",
}


def _weights(mod: relay.IRModule, skip: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    out = {}
    for p in mod["main"].params[skip:]:
        shape = [int(d) for d in p.type_annotation.shape]
        out[p.name_hint] = (rng.standard_normal(shape) * 0.1).astype("float32")
    return out


def bench_kernel(args: argparse.Namespace) -> None:
    mod = relay.parse(KERNELS[args.kernel])
    params = _weights(mod)
    target = Target.host()
    (task,) = [t for t in extract_tasks(mod, params, target) if t.space.size > 1]
    print(f"{task.describe()}: {task.space}")
    opts = MeasureOptions(number=args.number, repeat=3, min_repeat_ms=args.min_repeat_ms)
    best = {}
    curves = {}
    for model, trials in (("xgb", args.trials), ("random", args.random_trials)):
        log = Path(args.out) / f"{args.kernel}_{model}.jsonl"
        log.unlink(missing_ok=True)
        start = time.perf_counter()
        summary = tune([task], log, trials, model=model, options=opts, seed=args.seed,
                       progress=True)  # fmt: skip
        p = summary.tasks[task.key]
        best[model] = p.best()
        curves[model] = p.curve
        skipped = len(p.measured) - p.new_trials
        print(f"{model}: {p.new_trials} trials ({skipped} duplicate configs not measured) in "
              f"{time.perf_counter() - start:.0f} s, "
              f"best {p.gflops():.1f} GFLOP/s [{best[model][0]}], {p.errors} errors")  # fmt: skip
    target_cost = best["random"][1] * 1.05
    reached = next((i + 1 for i, c in enumerate(curves["xgb"]) if c <= target_cost), None)
    print(f"xgboost within 5% of random search's best after {reached} trials "
          f"(random search: {len(curves['random'])})")  # fmt: skip
    if args.plot:
        combined = Path(args.out) / f"{args.kernel}_both.jsonl"
        combined.write_text(
            "".join((Path(args.out) / f"{args.kernel}_{m}.jsonl").read_text()
                    for m in ("xgb", "random"))
        )  # fmt: skip
        plot_log(combined, args.plot)
        print(f"wrote {args.plot}")


def bench_model(args: argparse.Namespace) -> None:
    root = Path(__file__).resolve().parent.parent
    mod = relay.parse((root / "examples" / f"{args.model}.relay").read_text())
    params = _weights(mod)
    target = Target.host()
    tasks = extract_tasks(mod, params, target)
    log = Path(args.out) / f"{args.model}.jsonl"
    start = time.perf_counter()
    summary = tune(tasks, log, args.trials, options=MeasureOptions(number=args.number),
                   seed=args.seed, progress=True)  # fmt: skip
    print(f"tuned {len(summary.tasks)} tasks in {time.perf_counter() - start:.0f} s")
    default = relay.build(mod, target=target, params=params)
    tuned = relay.build(mod, target=target, params=params, tuning_log=log)
    x = {p.name_hint: np.random.default_rng(1).standard_normal(
        [int(d) for d in p.type_annotation.shape]).astype("float32")
        for p in mod["main"].params[:1]}  # fmt: skip
    times: dict[str, list[float]] = {"default": [], "tuned": []}
    for _ in range(args.repeat):
        for name, model in (("default", default), ("tuned", tuned)):
            t = time.perf_counter()
            model.run(**x)
            times[name].append(time.perf_counter() - t)
    d, t = statistics.median(times["default"]), statistics.median(times["tuned"])
    print(f"{args.model}: default {d * 1e3:.3f} ms, tuned {t * 1e3:.3f} ms ({d / t:.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", choices=sorted(KERNELS))
    parser.add_argument("--model", help="an example model (examples/NAME.relay)")
    parser.add_argument("--trials", type=int, default=60)
    parser.add_argument("--random-trials", type=int, default=200)
    parser.add_argument("--number", type=int, default=3)
    parser.add_argument("--min-repeat-ms", type=float, default=0.0)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", help="curves image (matplotlib)")
    parser.add_argument("--out", default="/tmp/relay_bench_tune")
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    if args.kernel:
        bench_kernel(args)
    if args.model:
        bench_model(args)
    if not args.kernel and not args.model:
        parser.error("give --kernel or --model")


if __name__ == "__main__":
    main()
