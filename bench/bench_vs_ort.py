"""The example models with their weights bound, against ONNX Runtime in the same process.

    pip install -e '.[bench]'        # torch (to export ONNX) and onnxruntime
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_vs_ort.py \\
        [--models resnet18,mobilenet_v2,transformer_layer,mlp] [--repeat 30] [--batch 64] \\
        [--no-winograd] [--tuning-log tune.jsonl]

Each model is built with `relay.build(module, params=weights)` (seed-0 weights of
examples/make_weights.py: what `relay build --params` makes, so bound weights are folded,
packed and Winograd-transformed at build time) and exported from its PyTorch version
(bench/peers.py) to ONNX for ONNX Runtime's CPU provider with its default threads and graph
optimizations. Blocks of relay runs and ORT runs alternate; the medians, the ratio relay /
ORT (below 1: relay is faster), relay's build time and the largest difference of ORT's
output from relay's are printed. `mlp` is examples/mlp.relay with its batch set to
`--batch`. `--no-winograd` also times relay built without the winograd-conv2d pass. Without
torch or onnxruntime it says how to install them and exits with status 0. `--tuning-log LOG`
also times relay built with a `relay tune` log applied (`relay.build(..., tuning_log=LOG)`:
each kernel's best record for this host; kernels without one keep the default schedule;
one log may hold the records of several models); give the tuned model's weights to
`relay tune` without the input `data` (this script binds every other array).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers
import relay
from relay.backend.codegen import threadpool
from relay.transform import PassContext

INPUT = "data"
SETTLE = 0.1
"""Seconds of untimed calls before each timed block."""


def load(name: str, batch: int) -> tuple[Any, dict[str, np.ndarray]]:
    """The module and all its arrays (`mlp` with its batch set to `batch`)."""
    make_weights = peers.load_make_weights()
    text = Path(make_weights.model_path(name)).read_text()
    if name == "mlp":
        text = text.replace("Tensor[(1, 784), float32]", f"Tensor[({batch}, 784), float32]")
        text = text.replace("Tensor[(1, 10), float32]", f"Tensor[({batch}, 10), float32]")
    module = relay.parse(text)
    return module, make_weights.make_weights(make_weights.main_parameters(module), seed=0)


def build(
    module: Any, weights: dict[str, np.ndarray], disabled: list[str], tuning_log: str | None = None
) -> tuple[Any, float]:
    """`relay.build` with the weights bound (and `disabled` passes off, `tuning_log`
    applied), and its seconds."""
    params = {k: v for k, v in weights.items() if k != INPUT}
    start = time.perf_counter()
    with PassContext(opt_level=3, disabled_pass=disabled):
        model = relay.build(module, params=params, tuning_log=tuning_log)
    return model, time.perf_counter() - start


def alternate(
    runs: dict[str, Callable[[], Any]], repeat: int, settle_s: float = SETTLE, idle_s: float = 0.0
) -> dict[str, float]:
    """Median seconds of each callable (`alternate_samples`)."""
    samples = alternate_samples(runs, repeat, settle_s, idle_s)
    return {k: statistics.median(v) for k, v in samples.items()}


def alternate_samples(
    runs: dict[str, Callable[[], Any]], repeat: int, settle_s: float = SETTLE, idle_s: float = 0.0
) -> dict[str, list[float]]:
    """Seconds of each call of each callable, timed in alternating blocks of 5 calls, each
    block after `idle_s` seconds of sleep and at least `settle_s` seconds of untimed calls
    (so neither runtime's threads, still spinning after its own calls, slow the other's
    timed calls). A sleep lets ONNX Runtime's spinning threads stop (untimed calls alone did
    not, for runs of a few ms: bench_conv_layers); for the whole models it made relay's
    next runs slower instead (ResNet-18 38.8 ms with 0.1 s, 36.5 without; 36.9 in a process
    without ORT), so it is off by default."""
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(max(1, repeat // 5)):
        for key, fn in runs.items():
            if idle_s:
                time.sleep(idle_s)
            settle = time.perf_counter() + settle_s
            while time.perf_counter() < settle:
                fn()
            for _ in range(5):
                start = time.perf_counter()
                fn()
                times[key].append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet18,mobilenet_v2,transformer_layer,mlp")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--batch", type=int, default=64, help="the MLP's batch")
    parser.add_argument("--no-winograd", action="store_true")
    parser.add_argument("--tuning-log", metavar="LOG", help="also time relay with this log applied")
    args = parser.parse_args()
    torch, ort = peers.import_torch(), peers.import_onnxruntime()
    if torch is None or ort is None:
        return 0
    print(f"relay threads {threadpool.get_num_threads()}; onnxruntime {ort.__version__}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            module, weights = load(name, args.batch)
            data = np.ascontiguousarray(weights[INPUT])
            model, seconds = build(module, weights, [])
            variants: dict[str, Callable[[], Any]] = {
                "relay": lambda m=model, x=data: m.run(data=x)
            }
            if args.tuning_log:
                tuned, _ = build(module, weights, [], args.tuning_log)
                variants["relay, tuned"] = lambda m=tuned, x=data: m.run(data=x)
                err = float(np.max(np.abs(tuned.run(data=data) - model.run(data=data))))
                print(f"{name}: tuned vs default max|diff| {err:.2e}")
            if args.no_winograd:
                plain, _ = build(module, weights, ["winograd-conv2d"])
                variants["relay, no winograd"] = lambda m=plain, x=data: m.run(data=x)
            torch_model = peers.torch_module(torch, name, weights)
            path = peers.export_onnx(
                torch, torch_model, torch.from_numpy(data), Path(tmp) / f"{name}.onnx"
            )
            session = peers.onnxruntime_session(ort, path)
            variants["onnxruntime"] = lambda s=session, x=data: peers.run_onnxruntime(s, x)
            err = float(np.max(np.abs(peers.run_onnxruntime(session, data) - model.run(data=data))))
            medians = alternate(variants, args.repeat)
            ort_s = medians["onnxruntime"]
            for key, value in medians.items():
                if key != "onnxruntime":
                    rows.append(
                        (
                            name if name != "mlp" else f"mlp b{args.batch}",
                            key,
                            value,
                            ort_s,
                            seconds,
                            err,
                        )
                    )
    print(
        f"{'model':<18} {'variant':<20} {'relay ms':>9} {'ORT ms':>8} {'ratio':>6} {'build s':>8} {'max|diff|':>10}"
    )
    for name, key, value, ort_s, seconds, err in rows:
        print(
            f"{name:<18} {key:<20} {value * 1e3:9.2f} {ort_s * 1e3:8.2f} {value / ort_s:6.2f} "
            f"{seconds:8.1f} {err:10.2e}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
