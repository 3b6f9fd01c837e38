"""How long the example models take to compile, stage by stage.

    python bench/bench_build_time.py [--models resnet18,mobilenet_v2] [--repeat 3] [--warm]

Each model is built as bench/bench_vs_ort.py builds it (`relay.build(module, params=weights)`
at opt level 3, seed-0 weights of examples/make_weights.py: packing and Winograd weight
transforms folded at build time), without a compile cache. Every build is cold, as in a
fresh `relay build`: the compile workers are stopped before it, so their start-up counts
(`--warm` keeps them between builds, as a long-lived process that builds again would).
Printed per model: the median wall time of the builds, then the median seconds of each stage
(`model.stats.seconds`, `relay build --timings` prints the same table), the slowest passes
and the machine's load average, since figures taken while other jobs run are not
comparable. Nothing here is a pass/fail test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import relay
from peers import load_make_weights
from relay.backend.codegen import compile_jobs
from relay.driver import stage_report
from relay.passes import PassContext
from relay.passes.instruments import TimingInstrument

DEFAULT_MODELS = ("resnet18", "mobilenet_v2")
INPUT = "data"


def load(name: str) -> tuple[Any, dict[str, Any]]:
    """The example model `name` and its weights (the input left out)."""
    make_weights = load_make_weights()
    module = make_weights.load_model(make_weights.model_path(name))
    weights = make_weights.make_weights(make_weights.main_parameters(module), seed=0)
    weights.pop(INPUT, None)
    return module, weights


def build_once(module: Any, weights: dict[str, Any], warm: bool) -> tuple[float, dict, list]:
    """One build: its wall seconds, its stage seconds and the seconds of each pass."""
    if not warm:
        compile_jobs.stop_workers()
    timing = TimingInstrument()
    start = time.perf_counter()
    with PassContext(opt_level=3, instruments=[timing]):
        model = relay.build(module, params=weights)
    took = time.perf_counter() - start
    return took, dict(model.stats.seconds), timing.times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--warm", action="store_true", help="keep the compile workers")
    parser.add_argument("--passes", type=int, default=5, help="how many slowest passes to show")
    args = parser.parse_args()
    if os.environ.get("RELAY_CACHE_DIR"):
        print("note: $RELAY_CACHE_DIR is set; unset it to time real compilations")
    for name in args.models.split(","):
        module, weights = load(name)
        walls: list[float] = []
        stages: dict[str, list[float]] = {}
        passes: dict[str, list[float]] = {}
        for _ in range(max(1, args.repeat)):
            took, seconds, pass_times = build_once(module, weights, args.warm)
            walls.append(took)
            for key, value in seconds.items():
                stages.setdefault(key, []).append(value)
            per_pass: dict[str, float] = {}
            for pass_name, value in pass_times:
                per_pass[pass_name] = per_pass.get(pass_name, 0.0) + value
            for pass_name, value in per_pass.items():
                passes.setdefault(pass_name, []).append(value)
        load_avg = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        wall = statistics.median(walls)
        print(f"\n{name}: build {wall:.2f} s (median of {len(walls)}; load average {load_avg})")
        print(stage_report({k: statistics.median(v) for k, v in stages.items()}, wall))
        slowest = sorted(((statistics.median(v), k) for k, v in passes.items()), reverse=True)
        shown = ", ".join(f"{k} {v:.3f}" for v, k in slowest[: args.passes])
        print(f"slowest passes (s): {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
