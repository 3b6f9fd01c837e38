"""Quick timing of the compute-heavy default schedules (dense, conv2d, depthwise,
batch_matmul) against numpy and PyTorch, in GFLOP/s, with 1 and 2 threads.

    python bench/bench_kernels_schedules.py            # everything
    python bench/bench_kernels_schedules.py dense      # only kernels whose name matches
    python bench/bench_kernels_schedules.py --repeat 20 --no-torch

numpy's BLAS is timed without the `OPENBLAS_CORETYPE`/`OPENBLAS_L2_SIZE` overrides (the
script re-executes itself without them). Each kernel is scheduled by the default schedule
table (`lower_func.schedule_outputs`), lowered, compiled and timed (median of `--repeat`
calls after a warm-up); the conv2d layers are ResNet-18's (batch 1, 224x224), each with the
bias + relu tail the model fuses, and the table ends with the layers' total weighted by how
often ResNet-18 runs each one.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

_BLAS_OVERRIDES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")

# (name, N, IC, H, OC, K, stride, pad, groups, count in ResNet-18 / MobileNet)
CONV_LAYERS = [
    ("conv1 3>64 7x7/2 @224", 1, 3, 224, 64, 7, 2, 3, 1, 1),
    ("l1 64>64 3x3 @56", 1, 64, 56, 64, 3, 1, 1, 1, 4),
    ("l2 64>128 3x3/2 @56", 1, 64, 56, 128, 3, 2, 1, 1, 1),
    ("l2 128>128 3x3 @28", 1, 128, 28, 128, 3, 1, 1, 1, 3),
    ("l2 ds 64>128 1x1/2", 1, 64, 56, 128, 1, 2, 0, 1, 1),
    ("l3 128>256 3x3/2 @28", 1, 128, 28, 256, 3, 2, 1, 1, 1),
    ("l3 256>256 3x3 @14", 1, 256, 14, 256, 3, 1, 1, 1, 3),
    ("l3 ds 128>256 1x1/2", 1, 128, 28, 256, 1, 2, 0, 1, 1),
    ("l4 256>512 3x3/2 @14", 1, 256, 14, 512, 3, 2, 1, 1, 1),
    ("l4 512>512 3x3 @7", 1, 512, 7, 512, 3, 1, 1, 1, 3),
    ("l4 ds 256>512 1x1/2", 1, 256, 14, 512, 1, 2, 0, 1, 1),
]
DEPTHWISE = ("dw 32 3x3 @112", 1, 32, 112, 32, 3, 1, 1, 32, 1)


def _reexec_without_blas_overrides() -> None:
    if any(k in os.environ for k in _BLAS_OVERRIDES):
        env = {k: v for k, v in os.environ.items() if k not in _BLAS_OVERRIDES}
        os.execve(sys.executable, [sys.executable, *sys.argv], env)


def _median_time(fn: Callable[[], Any], repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _apply(name: str, inputs: list[Any], **attrs: Any) -> Any:
    from relay.backend.lower.computes import apply_compute
    from relay.lang import get_op
    from relay.lang.types import TensorType
    from relay.testing.relations import op_call_type

    op = get_op(name)
    op_attrs = op.make_attrs(**attrs) if op.attrs_schema is not None else None
    types = [TensorType(tuple(int(d.value) for d in t.shape), t.dtype) for t in inputs]
    (out,) = apply_compute(op, op_attrs, inputs, op_call_type(name, *types, **attrs))
    return out


class Kernel:
    """A compiled kernel with its argument arrays (64-byte aligned)."""

    def __init__(self, inputs: list[Any], outputs: list[Any], arrays: list[np.ndarray]) -> None:
        from relay.backend.codegen import compile_module
        from relay.backend.lower.lower_func import schedule_outputs
        from relay.backend.runtime.native import aligned_copy
        from relay.backend.te import lower
        from relay.backend.tir.transform import lower_pipeline

        t = time.perf_counter()
        s, _ = schedule_outputs(outputs)
        func = lower_pipeline(lower(s, inputs + outputs, "kernel"))
        self.library = compile_module([func])
        self.compile_seconds = time.perf_counter() - t
        fn = self.library.get("kernel")
        self.arrays = [aligned_copy(a) for a in arrays]
        self.outputs = [
            aligned_copy(np.zeros([int(d.value) for d in o.shape], o.dtype)) for o in outputs
        ]
        ptrs = [ctypes.c_void_p(a.ctypes.data) for a in self.arrays + self.outputs]
        self.run = lambda: fn(*ptrs)


def _threads(n: int) -> None:
    from relay.backend.codegen import set_num_threads

    set_num_threads(n)


def _row(name: str, flops: float, ours: dict[int, float], ref: dict[str, float]) -> str:
    g1, g2 = flops / ours[1] / 1e9, flops / ours[2] / 1e9
    parts = [
        f"{name:24s}",
        f"{ours[2] * 1e3:8.3f} ms",
        f"{g2:7.1f} GF/s",
        f"1t {g1:6.1f}",
        f"2t/1t {ours[1] / ours[2]:4.2f}",
    ]
    for label, seconds in ref.items():
        parts.append(
            f"{label} {seconds * 1e3:7.3f} ms ({flops / seconds / 1e9:6.1f}, x{seconds / ours[2]:4.2f})"
        )
    return "  ".join(parts)


def bench_dense(m: int, n: int, k: int, repeat: int, use_torch: bool) -> tuple[str, float]:
    """(table row, seconds on 2 threads) of dense `m x n x k` against numpy and PyTorch."""
    from relay.backend.te import placeholder

    x = placeholder((m, k), "float32", "x")
    w = placeholder((n, k), "float32", "w")
    out = _apply("nn.dense", [x, w], units=n)
    rng = np.random.default_rng(0)
    xa, wa = rng.normal(size=(m, k)).astype("f4"), rng.normal(size=(n, k)).astype("f4")
    kern = Kernel([x, w], [out], [xa, wa])
    kern.run()
    err = np.abs(kern.outputs[0] - xa @ wa.T).max() / np.abs(xa @ wa.T).max()
    assert err < 1e-4, err
    ours = {}
    for t in (1, 2):
        _threads(t)
        ours[t] = _median_time(kern.run, repeat)
    wt = np.ascontiguousarray(wa.T)
    ref = {"numpy": _median_time(lambda: xa @ wt, repeat)}
    if use_torch:
        import torch

        tx, tw = torch.from_numpy(xa), torch.from_numpy(wa)
        ref["torch"] = _median_time(lambda: torch.nn.functional.linear(tx, tw), repeat)
    return _row(f"dense {m}x{n}x{k}", 2.0 * m * n * k, ours, ref), ours[2]


def bench_conv(layer: tuple[Any, ...], repeat: int, use_torch: bool) -> tuple[str, float, int]:
    """(table row, seconds on 2 threads, uses in the model) of one conv2d + bias + relu
    layer against PyTorch (checking the result)."""
    from relay.backend.te import placeholder

    name, n, ic, h, oc, k, stride, pad, groups, count = layer
    x = placeholder((n, ic, h, h), "float32", "x")
    w = placeholder((oc, ic // groups, k, k), "float32", "w")
    b = placeholder((oc,), "float32", "b")
    conv = _apply(
        "nn.conv2d", [x, w], strides=(stride, stride), padding=(pad, pad), groups=groups,
        channels=oc, kernel_size=(k, k),
    )  # fmt: skip
    out = _apply("nn.relu", [_apply("nn.bias_add", [conv, b], axis=1)])
    rng = np.random.default_rng(0)
    arrays = [
        rng.normal(size=(n, ic, h, h)).astype("f4"),
        rng.normal(size=(oc, ic // groups, k, k)).astype("f4"),
        rng.normal(size=(oc,)).astype("f4"),
    ]
    kern = Kernel([x, w, b], [out], arrays)
    oh = int(out.shape[2].value)
    flops = 2.0 * n * oc * (ic // groups) * k * k * oh * oh
    ours = {}
    for t in (1, 2):
        _threads(t)
        ours[t] = _median_time(kern.run, repeat)
    ref: dict[str, float] = {}
    if use_torch:
        import torch

        tx, tw, tb = (torch.from_numpy(a) for a in arrays)
        want = torch.relu(torch.nn.functional.conv2d(tx, tw, tb, stride, pad, 1, groups))
        got = kern.outputs[0]
        err = np.abs(got - want.numpy()).max() / max(1.0, float(want.abs().max()))
        assert err < 1e-4, (name, err)
        ref["torch"] = _median_time(
            lambda: torch.relu(torch.nn.functional.conv2d(tx, tw, tb, stride, pad, 1, groups)),
            repeat,
        )
    return _row(name, flops, ours, ref), ours[2], count


def main() -> None:
    """Run the benchmarks named on the command line (all by default)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("filters", nargs="*", help="only kernels whose name contains one of these")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--no-torch", action="store_true")
    args = parser.parse_args()
    _reexec_without_blas_overrides()
    use_torch = not args.no_torch
    if use_torch:
        import torch

        torch.set_num_threads(2)

    def wanted(name: str) -> bool:
        return not args.filters or any(f in name for f in args.filters)

    print(f"{'kernel':24s}  ours (2 threads)  GFLOP/s  1 thread  speed-up  references")
    if wanted("dense 1024"):
        row, _ = bench_dense(1024, 1024, 1024, args.repeat, use_torch)
        print(row, flush=True)
    if wanted("dense 1x"):
        row, _ = bench_dense(1, 1000, 512, args.repeat, use_torch)
        print(row, flush=True)
    total = 0.0
    measured_all = True
    for layer in CONV_LAYERS:
        if not wanted(layer[0]):
            measured_all = False
            continue
        row, seconds, count = bench_conv(layer, args.repeat, use_torch)
        total += seconds * count
        print(row, flush=True)
    if measured_all:
        print(f"ResNet-18 conv layers, weighted by use: {total * 1e3:.2f} ms (2 threads)")
    if wanted(DEPTHWISE[0]):
        row, _, _ = bench_conv(DEPTHWISE, args.repeat, use_torch)
        print(row, flush=True)


if __name__ == "__main__":
    main()
