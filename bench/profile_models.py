"""Where the example models spend their time: each model's top kernels with their share of
the machine's fp32 peak and memory bandwidth, per operator kind, and outside the kernels.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/profile_models.py \\
        [--models resnet18,mobilenet_v2,transformer_layer] [--repeat 20] [--top 10] \\
        [--threads N] [--json OUT.json] [--trace-dir DIR]

Each model is built for this host with its weights bound as constants (`params=`, as
`relay build --params` does; weights of examples/make_weights.py, seed 0). Blocks of plain
runs and profiled runs alternate, so both see the same machine; then, after the report
(`relay run --profile` prints the same), the checks of issue 17:

  kernels + outside   the sum of the per-kernel medians plus the median time outside
                      the kernels, as a ratio to the plain model's median (within 10%)
  profiled run        the profiled runs' median wall time over the plain median (what
                      profiling itself costs: two clock reads per kernel and per task)

The machine's peaks are probed once and cached (`relay.backend.profile.machine`); the
header says where they came from. Nothing here is a pass/fail test: it prints figures for
the notes of later performance work.
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
from peers import load_make_weights
from relay.backend.codegen import threadpool
from relay.backend.profile.run import Profile, profile_model

DEFAULT_MODELS = ("resnet18", "mobilenet_v2", "transformer_layer")
INPUT = "data"


def build(name: str, threads: int | None) -> tuple[Any, dict[str, np.ndarray]]:
    """The example model `name` compiled with its weights bound, and its input."""
    make_weights = load_make_weights()
    module = make_weights.load_model(make_weights.model_path(name))
    weights = make_weights.make_weights(make_weights.main_parameters(module), seed=0)
    data = {INPUT: weights.pop(INPUT)}
    target = "llvm" if threads is None else f"llvm -num-threads={threads}"
    start = time.perf_counter()
    model = relay.build(module, target=target, params=weights)
    print(f"{name}: built in {time.perf_counter() - start:.1f} s")
    return model, data


def measure(
    model: Any, data: dict[str, np.ndarray], name: str, repeat: int
) -> tuple[Profile, list[int], list[int]]:
    """Alternating blocks of plain and profiled runs: the last profile (all profiled runs
    merged into it), the plain run times and the profiled wall times (ns)."""
    plain: list[int] = []
    profiles: list[Profile] = []
    block = max(1, repeat // 4)
    for _ in range(4):
        model.run(**data)
        for _ in range(block):
            start = time.monotonic_ns()
            model.run(**data)
            plain.append(time.monotonic_ns() - start)
        profiles.append(profile_model(model, (), data, repeat=block, warmup=1, name=name))
    merged = _merge(profiles)
    return merged, plain, list(merged.data.wall_ns)


def _merge(profiles: list[Profile]) -> Profile:
    """One profile holding the runs of all `profiles` (same model, same steps)."""
    import attrs

    first = profiles[0].data
    steps = tuple(
        attrs.evolve(
            step,
            times_ns=tuple(t for p in profiles for t in p.data.steps[k].times_ns),
            loads=tuple(load for p in profiles for load in p.data.steps[k].loads),
        )
        for k, step in enumerate(first.steps)
    )
    walls = tuple(w for p in profiles for w in p.data.wall_ns)
    last = profiles[-1].data
    data = attrs.evolve(last, steps=steps, wall_ns=walls, repeat=len(walls), machine=last.machine)
    return Profile(data)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--repeat", type=int, default=20, help="plain and profiled runs each")
    parser.add_argument("--top", type=int, default=10, help="kernels shown per model")
    parser.add_argument("--threads", type=int, help="thread count (default: all CPUs)")
    parser.add_argument("--json", metavar="OUT.json", help="write every report as JSON")
    parser.add_argument("--trace-dir", metavar="DIR", help="write a Chrome trace per model")
    args = parser.parse_args()
    reports: dict[str, Any] = {}
    for name in args.models.split(","):
        model, data = build(name, args.threads)
        profile, plain, walls = measure(model, data, name, args.repeat)
        print()
        print(profile.table(top=args.top))
        plain_ms = statistics.median(plain) / 1e6
        summary = profile.json()
        added = summary["kernels_plus_outside_us"] / 1e3
        profiled = statistics.median(walls) / 1e6
        print(
            f"\n{name}: kernels + outside {added:.2f} ms = {added / plain_ms:.3f} x the plain "
            f"median {plain_ms:.2f} ms; profiled runs {profiled:.2f} ms = "
            f"{profiled / plain_ms:.3f} x plain ({threadpool.get_num_threads()} threads)\n"
        )
        summary["plain_median_us"] = plain_ms * 1e3
        reports[name] = summary
        if args.trace_dir:
            Path(args.trace_dir).mkdir(parents=True, exist_ok=True)
            profile.write_trace(str(Path(args.trace_dir) / f"{name}.json"))
    if args.json:
        Path(args.json).write_text(json.dumps(reports, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
