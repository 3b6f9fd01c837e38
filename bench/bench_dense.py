"""The dense kernels of the transformer layer and the MLP, alone, with their weights bound.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_dense.py \\
        [--cases ffn1,ffn2] [--repeat 40] [--threads 2] [--peak GFLOPS] [--ort]

Each case is one fused kernel as the example models make it: a dense layer with its bias
and its tail (GELU by erf, a residual add of a bound array, ReLU), built with
`relay.build(params=...)` so the weight is packed at build time. Calls are timed in
alternating blocks; printed are the median and the fastest call in milliseconds (on a
shared machine the fastest is the kernel's own speed, the median what a run sees), GFLOP/s
of the fastest (2·M·N·K FLOPs) and its share of the fp32 FMA peak (`--peak`, else the
machine's probed peak for the thread count, `relay.backend.profile.machine`), and with
`--ort` ONNX Runtime's median and fastest for the same layer (MatMul, Add and the tail,
exported from PyTorch) with the ratios relay / ORT.
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
from relay.backend.profile.machine import machine_peak

# name: (rows, units, reduction, tail)
CASES: dict[str, tuple[int, int, int, str]] = {
    "proj": (128, 512, 512, "bias"),
    "proj_res": (128, 512, 512, "residual"),
    "ffn1": (128, 2048, 512, "gelu"),
    "ffn1_nogelu": (128, 2048, 512, "bias"),
    "ffn2": (128, 512, 2048, "residual"),
    "mlp1": (64, 512, 784, "relu"),
    "mlp2": (64, 256, 512, "relu"),
    "mlp3": (64, 10, 256, "bias"),
}

_TAILS = {
    "bias": "%d",
    "relu": "nn.relu(%d)",
    "gelu": "0.5f * %d * (1f + erf(%d * 0.70710678f))",
    "residual": "add(%d, %r)",
}


def source(m: int, n: int, k: int, tail: str) -> str:
    """The Relay text of one dense layer `x (m, k) -> (m, n)` with `tail` after its bias."""
    return f"""#[version = "0.0.5"]
def @main(%x: Tensor[({m}, {k}), float32], %w: Tensor[({n}, {k}), float32],
          %b: Tensor[({n}), float32], %r: Tensor[({m}, {n}), float32])
    -> Tensor[({m}, {n}), float32] {{
  let %d = nn.bias_add(nn.dense(%x, %w, units={n}), %b);
  {_TAILS[tail]}
}}
"""


def torch_layer(torch: Any, w: np.ndarray, b: np.ndarray, r: np.ndarray, tail: str) -> Any:
    """The same layer as a PyTorch module (for the ONNX export)."""
    weight, bias, residual = torch.from_numpy(w), torch.from_numpy(b), torch.from_numpy(r)

    class Layer(torch.nn.Module):  # type: ignore[misc]
        def forward(self, x: Any) -> Any:
            d = torch.nn.functional.linear(x, weight, bias)
            if tail == "relu":
                return torch.relu(d)
            if tail == "gelu":
                return 0.5 * d * (1.0 + torch.erf(d * 0.70710678))
            if tail == "residual":
                return d + residual
            return d

    return Layer().eval()


def alternate(runs: dict[str, Callable[[], Any]], repeat: int) -> dict[str, tuple[float, float]]:
    """(median, fastest) seconds per call of each callable, timed in alternating blocks of
    5 calls (on a shared machine the fastest call is the kernel's own speed, the median
    what a run sees)."""
    times: dict[str, list[float]] = {key: [] for key in runs}
    for _ in range(max(1, repeat // 5)):
        for key, fn in runs.items():
            for _ in range(3):
                fn()
            for _ in range(5):
                start = time.perf_counter()
                fn()
                times[key].append(time.perf_counter() - start)
    return {key: (statistics.median(v), min(v)) for key, v in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--repeat", type=int, default=40)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--peak", type=float, help="the fp32 peak in GFLOP/s (else probed)")
    parser.add_argument("--ort", action="store_true", help="also time ONNX Runtime")
    args = parser.parse_args()
    torch = ort = None
    if args.ort:
        torch, ort = peers.import_torch(), peers.import_onnxruntime()
        if torch is None or ort is None:
            return 0
    peak = args.peak or machine_peak(args.threads).fp32_gflops
    print(f"threads {args.threads}; fp32 peak {peak:.1f} GFLOP/s")
    print(f"{'case':<12} {'shape':<14} {'tail':<9} {'med ms':>7} {'best ms':>7} {'GFLOP/s':>8} "
          f"{'%peak':>6}" + (" ORT med ORT best ratio best" if args.ort else ""))  # fmt: skip
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.cases.split(","):
            m, n, k, tail = CASES[name]
            x = rng.normal(size=(m, k)).astype("float32")
            w = (rng.normal(size=(n, k)) / np.sqrt(k)).astype("float32")
            b = rng.normal(size=(n,)).astype("float32")
            r = rng.normal(size=(m, n)).astype("float32")
            model = relay.build(
                relay.parse(source(m, n, k, tail)),
                target=f"llvm -num-threads={args.threads}",
                params={"w": w, "b": b, "r": r},
            )
            runs: dict[str, Callable[[], Any]] = {"relay": lambda m_=model, x_=x: m_.run(x=x_)}
            if torch is not None and ort is not None:
                path = peers.export_onnx(
                    torch, torch_layer(torch, w, b, r, tail), torch.from_numpy(x),
                    Path(tmp) / f"{name}.onnx",
                )  # fmt: skip
                session = peers.onnxruntime_session(ort, path)
                runs["ort"] = lambda s=session, x_=x: peers.run_onnxruntime(s, x_)
            timed = alternate(runs, args.repeat)
            (median, best), flops = timed["relay"], 2.0 * m * n * k
            line = (
                f"{name:<12} {f'{m}x{n}x{k}':<14} {tail:<9} {median * 1e3:7.3f} {best * 1e3:7.3f} "
                f"{flops / best / 1e9:8.1f} {100 * flops / best / 1e9 / peak:5.1f}%"
            )
            if "ort" in timed:
                (ort_median, ort_best) = timed["ort"]
                line += (
                    f" {ort_median * 1e3:7.3f} {ort_best * 1e3:7.3f}"
                    f" {median / ort_median:5.2f} {best / ort_best:5.2f}"
                )
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
