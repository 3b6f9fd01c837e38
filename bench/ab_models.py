"""A/B of two versions of relay on the example models, timed in one process.

On a machine whose speed drifts (a shared VM can run 2x slower for minutes), two benchmark
runs made minutes apart do not compare; this script builds each version's models into
saved artifacts (`CompiledModel.save`), then loads all of them into one process and times
them in alternating blocks, so every version sees the same machine:

    PYTHONPATH=/tmp/old python bench/ab_models.py build --tag old --dir /tmp/ab   # old tree
    python bench/ab_models.py build --tag new --dir /tmp/ab                       # this tree
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/ab_models.py time \\
        --tags old,new --dir /tmp/ab [--repeat 30]

(`git archive REV --prefix=relay/ | tar -x -C /tmp/old` makes an old tree.) Options of
both steps: `--models resnet18,mobilenet_v2,...` (examples/NAME.relay, make_weights seed 0,
weights bound) and `--int8` (the models quantized by `relay.quantize`, global_scale over 4
seeded images, as bench/bench_int8.py does). `time` prints each version's median and
whether the outputs are identical (else their largest difference). An artifact holds native
code and the plan, so the loading process needs no compiler of the old version.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import relay
from bench_vs_ort import alternate_samples

MODELS = "resnet18,mobilenet_v2,transformer_layer"
SETTLE = 0.02
"""Seconds of untimed calls before each timed block."""


def _artifact(directory: Path, tag: str, name: str, int8: bool) -> Path:
    return directory / f"{tag}_{name}{'_int8' if int8 else ''}.relaymod"


def build(directory: Path, tag: str, names: list[str], int8: bool, threads: int) -> None:
    """Build each model with the relay this process imports and save it under `tag`."""
    import bench_int8

    directory.mkdir(parents=True, exist_ok=True)
    target = f"llvm -num-threads={threads}"
    for name in names:
        module, data, params = bench_int8.load_model(name)
        if int8:
            calib = bench_int8.images(data.shape, 4, 7)
            model = relay.build(bench_int8.quantize_model(module, params, calib, "global_scale"),
                                target=target)  # fmt: skip
        else:
            model = relay.build(module, target=target, params=params)
        model.save(str(_artifact(directory, tag, name, int8)))
        np.save(directory / f"input_{name}.npy", data)
        print(f"{name}: saved {_artifact(directory, tag, name, int8).name} ({relay.__file__})")


def time_versions(directory: Path, tags: list[str], names: list[str], int8: bool,
                  repeat: int) -> None:  # fmt: skip
    """Median seconds of each tag's artifact of each model, `repeat` alternating blocks of
    5 calls each (`bench_vs_ort.alternate_samples`, with `SETTLE` seconds of untimed calls
    before each block)."""
    for name in names:
        data = np.load(directory / f"input_{name}.npy")
        models = {t: relay.load(str(_artifact(directory, t, name, int8))) for t in tags}
        outputs = [np.asarray(m.run(data=data)) for m in models.values()]
        diff = max(float(np.max(np.abs(outputs[0].astype(np.float64) - o))) for o in outputs)
        runs = {t: (lambda m=m, x=data: m.run(data=x)) for t, m in models.items()}
        samples = alternate_samples(runs, 5 * repeat, settle_s=SETTLE)
        medians = "  ".join(f"{t} {statistics.median(v) * 1e3:8.3f} ms" for t, v in samples.items())
        same = "identical outputs" if diff == 0 else f"max |diff| {diff:.3g}"
        print(f"{name}{' int8' if int8 else ''}: {medians}  ({same})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["build", "time"])
    parser.add_argument("--dir", required=True, type=Path, help="where the artifacts go")
    parser.add_argument("--tag", help="build: the name of this version")
    parser.add_argument("--tags", help="time: the versions to compare, comma-separated")
    parser.add_argument("--models", default=MODELS)
    parser.add_argument("--int8", action="store_true", help="the models quantized to int8")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=30, help="time: blocks per version")
    args = parser.parse_args()
    names = args.models.split(",")
    if args.step == "build":
        if not args.tag:
            parser.error("build needs --tag")
        build(args.dir, args.tag, names, args.int8, args.threads)
    else:
        if not args.tags:
            parser.error("time needs --tags")
        time_versions(args.dir, args.tags.split(","), names, args.int8, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
